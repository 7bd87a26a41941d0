"""Rényi-DP auditing with a Donsker–Varadhan critic (Kim, Alabi, Varshney, arXiv 2605.21938; docs/renyi.md).

Everything is in RDP (Mironov) units: D_α = α × Birrell et al.'s R_α.

  * :func:`dv_objective` — the variational objective J_α(g) ≤ D_α.
  * :func:`ema_log_mean_exp`, :func:`dv_surrogate_loss` — MINE-style EMA gradients in log space.
  * :class:`CriticConfig`, :func:`train_critic` — bounded MLP critic, optax Adam;
    ``PAPER_CRITIC_CONFIG`` is Kim et al.'s critic (100×100, minibatches, EMA).
  * :func:`estimate_renyi`, :func:`renyi_estimator`, :class:`RenyiEstimate` — held-out estimate
    and lower confidence bound (Hoeffding, empirical Bernstein, or the class-restricted radius).
  * :func:`gaussian_renyi`, :func:`laplace_renyi`, :func:`binary_renyi` — closed forms.
  * :func:`gdp_epsilon_lower_bound`, :func:`clopper_pearson_epsilon_lower_bound`,
    :func:`threshold_renyi_lower_bound`, :func:`binned_renyi_lower_bound`,
    :func:`epsilon_lower_bounds` — score-based lower bounds (scores oriented "higher = member").
  * :func:`runs_needed`, :func:`reconcile_estimate` — planning and reading an estimate.

The statistics these build on (Clopper–Pearson, the Hoeffding and Bernstein radii, the GDP
conversions) are in :mod:`jaxaudit.stats`.
"""

from jaxaudit.renyi.binned import binned_renyi_lower_bound
from jaxaudit.renyi.closed_forms import gaussian_renyi, laplace_renyi
from jaxaudit.renyi.confidence import held_out_lower_bound, theory_radius
from jaxaudit.renyi.ema import EmaLogMeanExpState, dv_surrogate_loss, ema_log_mean_exp
from jaxaudit.renyi.estimate import RenyiEstimate, estimate_renyi, renyi_estimator
from jaxaudit.renyi.objective import dv_objective
from jaxaudit.renyi.planning import RunsNeeded, runs_needed
from jaxaudit.renyi.reconcile import ReconciledEstimate, reconcile_estimate
from jaxaudit.renyi.score_bounds import ScoreBounds, epsilon_lower_bounds
from jaxaudit.renyi.threshold_tests import (
    GdpLowerBound,
    binary_renyi,
    clopper_pearson_epsilon_lower_bound,
    gdp_epsilon_lower_bound,
    threshold_renyi_lower_bound,
)
from jaxaudit.renyi.training import (
    PAPER_CRITIC_CONFIG,
    CriticConfig,
    TrainHistory,
    train_critic,
)

__all__ = [
    "PAPER_CRITIC_CONFIG",
    "CriticConfig",
    "EmaLogMeanExpState",
    "GdpLowerBound",
    "ReconciledEstimate",
    "RenyiEstimate",
    "RunsNeeded",
    "ScoreBounds",
    "TrainHistory",
    "binary_renyi",
    "binned_renyi_lower_bound",
    "clopper_pearson_epsilon_lower_bound",
    "dv_objective",
    "dv_surrogate_loss",
    "ema_log_mean_exp",
    "epsilon_lower_bounds",
    "estimate_renyi",
    "gaussian_renyi",
    "gdp_epsilon_lower_bound",
    "held_out_lower_bound",
    "laplace_renyi",
    "reconcile_estimate",
    "renyi_estimator",
    "runs_needed",
    "theory_radius",
    "threshold_renyi_lower_bound",
    "train_critic",
]
