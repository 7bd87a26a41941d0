"""Adversary-aware DP bounds (Swanberg et al., arXiv:2507.08158; our choices: docs/bounds.md).

Per-target posterior success β(ε, p) = sigmoid(ε + logit p), high-probability bounds on how many
of n targets an attack can get right (ε-DP, (ε, δ)-DP, f-DP), the exact Poisson-binomial engine
underneath, prior encodings of common attacks, and prior-work baselines.

Modules: ``success`` (posterior success β, gain), ``poisson_binomial`` (engine), ``count_bound``
(tail and count bounds), ``fdp`` (trade-off functions, δ_f(ε)), ``priors`` (attack encodings),
``prior_work`` (the bounds of prior work: KGK+, Balle ReRo, Hayes, Steinke, MMC), ``inverse``
(the largest ε that keeps an attack below a target), ``summary``
(all of them side by side for one set of targets).
"""

from jaxaudit.bounds.count_bound import (
    aggregate_gain,
    count_bound_exact,
    fdp_epsilon_grid,
    fdp_epsilon_grid_core,
    success_count_bound,
    success_count_bound_exact,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.fdp import approx_dp_delta, approx_dp_tradeoff, gdp_delta, gdp_tradeoff
from jaxaudit.bounds.inverse import epsilon_for_count, epsilon_for_success
from jaxaudit.bounds.poisson_binomial import (
    poisson_binomial_isf,
    poisson_binomial_logpmf,
    poisson_binomial_logpmf_exact,
    poisson_binomial_logsf_exact,
    poisson_binomial_tail,
)
from jaxaudit.bounds.prior_work import (
    balle_rero_pure,
    balle_rero_rdp,
    balle_rero_zcdp,
    hayes_gaussian,
    inverse_blowup_gdp,
    inverse_blowup_pure,
    kgk_bound_approx,
    kgk_bound_gdp,
    kgk_bound_pure,
    mmc_reject,
    mmc_threshold,
    steinke_p_value,
    steinke_threshold,
)
from jaxaudit.bounds.priors import (
    attribute_inference_prior,
    ball_mass,
    ball_mass_sup,
    columns_prior,
    membership_prior,
    reconstruction_prior,
    top_k_mass,
    uniform_prior,
    zipf_prior,
)
from jaxaudit.bounds.registry import PRIORS, NamedPrior, prior_by_name
from jaxaudit.bounds.success import gain, gain_ratio, max_gain, max_gain_prior, posterior_success
from jaxaudit.bounds.summary import BoundsSummary, PerTarget, PrivacyModel, summarize_bounds

__all__ = [
    # posterior success and gain
    "posterior_success",
    "gain",
    "gain_ratio",
    "max_gain",
    "max_gain_prior",
    # Poisson-binomial engine
    "poisson_binomial_logpmf",
    "poisson_binomial_tail",
    "poisson_binomial_isf",
    "poisson_binomial_logpmf_exact",
    "poisson_binomial_logsf_exact",
    "count_bound_exact",
    # bounds on the success count
    "success_tail",
    "aggregate_gain",
    "success_count_bound",
    "success_count_bound_exact",
    "success_tail_fdp",
    "success_count_bound_fdp",
    "fdp_epsilon_grid",
    "fdp_epsilon_grid_core",
    # the inverse: which ε protects a prior
    "epsilon_for_success",
    "epsilon_for_count",
    # f-DP
    "gdp_delta",
    "gdp_tradeoff",
    "approx_dp_tradeoff",
    "approx_dp_delta",
    # priors
    "membership_prior",
    "top_k_mass",
    "attribute_inference_prior",
    "reconstruction_prior",
    "ball_mass",
    "ball_mass_sup",
    "columns_prior",
    "zipf_prior",
    "uniform_prior",
    # priors by name (the registry the CLI and the pipelines share)
    "PRIORS",
    "NamedPrior",
    "prior_by_name",
    # everything side by side (what `jaxaudit bounds` prints)
    "PrivacyModel",
    "PerTarget",
    "BoundsSummary",
    "summarize_bounds",
    # baselines
    "kgk_bound_pure",
    "kgk_bound_gdp",
    "kgk_bound_approx",
    "balle_rero_rdp",
    "balle_rero_zcdp",
    "balle_rero_pure",
    "hayes_gaussian",
    "steinke_p_value",
    "steinke_threshold",
    "mmc_reject",
    "mmc_threshold",
    "inverse_blowup_pure",
    "inverse_blowup_gdp",
]
