"""Adversary-aware DP bounds (Swanberg et al., arXiv:2507.08158; our choices: docs/bounds.md).

Per-target posterior success β(ε, p) = sigmoid(ε + logit p), high-probability bounds on how many
of n targets an attack can get right (ε-DP, (ε, δ)-DP, f-DP), the exact Poisson-binomial engine
underneath, prior encodings of common attacks, and prior-work baselines.

Modules: ``success`` (posterior success β, gain), ``poisson_binomial`` (engine), ``count_bound``
(tail and count bounds), ``fdp`` (trade-off functions, δ_f(ε)), ``priors`` (attack encodings),
``tradeoff`` (trade-off functions exact in their tails), ``single_target`` (the
least of the valid single-target routes), ``calibrate`` (noise or ε for a target risk),
``prior_work`` (the bounds of prior work: KGK+, Balle ReRo, Hayes, Steinke, MMC), ``inverse``
(the largest ε that keeps an attack below a target), ``summary``
(all of them side by side for one set of targets), ``registry`` (priors by name, for the
command line and the pipelines).

Exported here: the operations a user composes. Helpers stay importable from their module:
``success.gain_ratio``, ``success.max_gain_prior``, ``count_bound.fdp_epsilon_grid``,
``prior_work.balle_rero_pure``, ``prior_work.hayes_gaussian``, ``prior_work.steinke_p_value``,
``prior_work.mmc_reject``, ``registry.prior_by_name``, ``registry.PRIORS``,
``summary.PerTarget``, ``single_target.SingleTargetBound``, ``single_target.ROUTES``,
``calibrate.Calibration``.
"""

from jaxaudit.bounds import priors
from jaxaudit.bounds.calibrate import RiskTarget, calibrate
from jaxaudit.bounds.count_bound import (
    aggregate_gain,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.fdp import approx_dp_delta, approx_dp_tradeoff, gdp_delta, gdp_tradeoff
from jaxaudit.bounds.inverse import epsilon_for_count, epsilon_for_success
from jaxaudit.bounds.poisson_binomial import (
    poisson_binomial_isf,
    poisson_binomial_logpmf,
    poisson_binomial_tail,
)
from jaxaudit.bounds.prior_work import (
    balle_rero_rdp,
    balle_rero_zcdp,
    inverse_blowup_dp,
    inverse_blowup_gdp,
    kgk_bound_dp,
    kgk_bound_gdp,
    mmc_threshold,
    steinke_threshold,
)
from jaxaudit.bounds.priors import *  # noqa: F403  (the prior encodings: priors.__all__)
from jaxaudit.bounds.success import gain, max_gain, posterior_success
from jaxaudit.bounds.summary import (
    BoundsSummary,
    PrivacyModel,
    single_target_success,
    summarize_bounds,
)

__all__ = [
    # posterior success and gain
    "posterior_success",
    "gain",
    "max_gain",
    # Poisson-binomial engine
    "poisson_binomial_logpmf",
    "poisson_binomial_tail",
    "poisson_binomial_isf",
    # bounds on the success count
    "success_tail",
    "success_count_bound",
    "success_tail_fdp",
    "success_count_bound_fdp",
    "aggregate_gain",
    # the inverse: which ε protects a prior
    "epsilon_for_success",
    "epsilon_for_count",
    # f-DP
    "gdp_delta",
    "gdp_tradeoff",
    "approx_dp_tradeoff",
    "approx_dp_delta",
    # priors
    *priors.__all__,
    # everything side by side (what `jaxaudit bounds` prints)
    "PrivacyModel",
    "BoundsSummary",
    "summarize_bounds",
    # the tightest single-target number under f-DP
    "single_target_success",
    # calibration: the least noise that meets a target risk
    "RiskTarget",
    "calibrate",
    # prior work
    "kgk_bound_dp",
    "kgk_bound_gdp",
    "balle_rero_rdp",
    "balle_rero_zcdp",
    "steinke_threshold",
    "mmc_threshold",
    "inverse_blowup_dp",
    "inverse_blowup_gdp",
]
