"""Rényi-DP auditing with a Donsker–Varadhan critic (Kim, Alabi, Varshney, arXiv 2605.21938; docs/renyi.md).

Everything is in RDP (Mironov) units: D_α = α × Birrell et al.'s R_α.

  * :func:`dv_objective`, :func:`log_mean_exp` — the variational objective J_α(g) ≤ D_α.
  * :func:`ema_log_mean_exp`, :func:`dv_surrogate_loss` — MINE-style EMA gradients in log space.
  * :class:`Critic`, :class:`CriticConfig`, :func:`train_critic` — bounded MLP critic, optax Adam;
    ``PAPER_CRITIC_CONFIG`` is Kim et al.'s critic (100×100, minibatches, EMA).
  * :func:`estimate_renyi`, :func:`renyi_estimator`, :class:`RenyiEstimate` — held-out estimate
    and lower confidence bound (Hoeffding, empirical Bernstein, or the class-restricted radius).
  * :func:`gaussian_renyi`, :func:`laplace_renyi` — closed forms.
  * :func:`gdp_epsilon_lower_bound`, :func:`clopper_pearson_epsilon_lower_bound`,
    :func:`threshold_renyi_lower_bound`, :func:`gdp_to_rdp` — threshold-test baselines.
"""

from jaxaudit.renyi.binned import binned_renyi_lower_bound
from jaxaudit.renyi.closed_forms import gaussian_renyi, laplace_renyi
from jaxaudit.renyi.confidence import (
    bernstein_radius,
    held_out_lower_bound,
    hoeffding_radius,
    rademacher_bound,
    theory_radius,
)
from jaxaudit.renyi.critic import Critic, fit_standardiser, init_critic
from jaxaudit.renyi.ema import (
    DvEmaState,
    EmaLogMeanExpState,
    dv_ema_init,
    dv_surrogate_loss,
    ema_log_mean_exp,
    ema_surrogate,
)
from jaxaudit.renyi.estimate import (
    DirectionEstimate,
    RenyiEstimate,
    estimate_renyi,
    renyi_estimator,
)
from jaxaudit.renyi.objective import dv_objective, log_mean_exp
from jaxaudit.renyi.planning import RunsNeeded, format_runs_needed, runs_needed
from jaxaudit.renyi.reconcile import (
    ReconciledEstimate,
    dp_to_rdp_gaussian,
    dp_to_rdp_lower_bound,
    gdp_mu_for_epsilon,
    reconcile_estimate,
)
from jaxaudit.renyi.score_bounds import ScoreBounds, epsilon_lower_bounds
from jaxaudit.renyi.threshold_tests import (
    GdpLowerBound,
    ThresholdTest,
    binary_renyi,
    clopper_pearson_epsilon_lower_bound,
    gdp_epsilon,
    gdp_epsilon_lower_bound,
    gdp_to_rdp,
    threshold_renyi_lower_bound,
)
from jaxaudit.renyi.training import (
    PAPER_BOUNDED_CRITIC_CONFIG,
    PAPER_CRITIC_CONFIG,
    CriticConfig,
    TrainHistory,
    train_critic,
)

__all__ = [
    "PAPER_BOUNDED_CRITIC_CONFIG",
    "PAPER_CRITIC_CONFIG",
    "Critic",
    "CriticConfig",
    "DirectionEstimate",
    "ReconciledEstimate",
    "DvEmaState",
    "EmaLogMeanExpState",
    "GdpLowerBound",
    "RenyiEstimate",
    "RunsNeeded",
    "ScoreBounds",
    "ThresholdTest",
    "TrainHistory",
    "bernstein_radius",
    "binary_renyi",
    "binned_renyi_lower_bound",
    "clopper_pearson_epsilon_lower_bound",
    "dv_ema_init",
    "dv_objective",
    "dv_surrogate_loss",
    "dp_to_rdp_gaussian",
    "dp_to_rdp_lower_bound",
    "ema_log_mean_exp",
    "ema_surrogate",
    "epsilon_lower_bounds",
    "estimate_renyi",
    "fit_standardiser",
    "format_runs_needed",
    "gaussian_renyi",
    "gdp_epsilon",
    "gdp_epsilon_lower_bound",
    "gdp_mu_for_epsilon",
    "gdp_to_rdp",
    "held_out_lower_bound",
    "hoeffding_radius",
    "init_critic",
    "laplace_renyi",
    "log_mean_exp",
    "rademacher_bound",
    "reconcile_estimate",
    "renyi_estimator",
    "runs_needed",
    "theory_radius",
    "threshold_renyi_lower_bound",
    "train_critic",
]
