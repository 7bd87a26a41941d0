"""Replace-one accounting: the privacy profiles of the two mechanisms the attacks train, for the
substitution of one record.

The attack game changes *one target's value* (its secret, its hidden attributes), so the
guarantee the bound needs is DP under **replace-one** neighbours, not add/remove.

* DP-SGD (Poisson rate q, clip C, noise σC, T steps): the clipped sum moves by at most 2C when a
  record is replaced, and a replaced record is in the batch with probability q in both worlds.
  ``dp_accounting``'s privacy-loss distribution with ``NeighborRel.REPLACE_ONE`` composes exactly
  this pair, (1 − q)N(0, σ²) + qN(−1, σ²) vs (1 − q)N(0, σ²) + qN(+1, σ²), T times
  (pessimistic discretisation: δ(ε) is an upper bound). Its privacy profile δ(ε) is the f-DP
  curve the count bound is minimised over. Calibrating σ for an add/remove ε (as
  :func:`jaxaudit.accounting.noise_for_epsilon` does) would give roughly 2ε under substitution.
* Gaussian marginals (one record moves one cell of each of m tables by 1; a substitution moves
  two cells per table): L2 sensitivity Δ = √(2m); noise N(0, σ²) per cell with
  σ = Δ/√(2ρ) is ρ-zCDP, and — being a Gaussian mechanism — exactly μ-GDP with μ = Δ/σ = √(2ρ)
  (Dong–Roth–Su, Thm 2.7). We use the GDP profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2): it
  is the tight conversion for this mechanism (the generic zCDP → (ε, δ) conversion
  ε = ρ + 2√(ρ ln 1/δ) is looser).

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, arXiv 2507.08158 (f-DP form of the count bound).
  Dong, Roth, Su, "Gaussian Differential Privacy", arXiv 1905.02383.
  Bun, Steinke, "Concentrated Differential Privacy", arXiv 1605.02065 (ρ-zCDP).
  Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, "Connect the Dots", arXiv 2207.04380 (PLD).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike
from scipy.optimize import brentq

from jaxaudit._validation import check_integer, check_positive, check_probability
from jaxaudit.accounting.guarantees import PldProfile
from jaxaudit.stats.gdp import gdp_delta_core

__all__ = [
    "MAX_DPSGD_EPSILON",
    "dpsgd_delta_function",
    "dpsgd_privacy",
    "gaussian_marginals_privacy",
]

_PLD_INTERVAL = 1e-3

#: Largest finite target ε of :func:`dpsgd_privacy`. Above it the profile grid [0, 4ε + 4]
#: overflows exp(ε) in the PLD accountant (NaN δ from ε ≈ 176 on), calibration takes minutes
#: (77 s at ε = 1000 against 8 s at ε = 20), and every bound is vacuous anyway
#: (sigmoid(ε + logit p) = 1 in float64 for any prior p > e^−60); ε = inf is the no-noise run.
MAX_DPSGD_EPSILON = 100.0


def _replace_one_pld(noise_multiplier: float, sampling_rate: float, steps: int):
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    single = pld.from_gaussian_mechanism(
        noise_multiplier, sensitivity=1.0, sampling_prob=sampling_rate,
        value_discretization_interval=_PLD_INTERVAL,
        neighboring_relation=NeighboringRelation.REPLACE_ONE)
    return single.self_compose(steps)


def _dpsgd_pld(noise_multiplier: float, sampling_rate: float, steps: int, relation: str):
    """dp_accounting's PLD of T steps under either relation (pessimistic: δ(ε) an upper bound;
    add/remove: the larger of the two directions)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    rel = (NeighboringRelation.REPLACE_ONE if relation == "replace_one"
           else NeighboringRelation.ADD_OR_REMOVE_ONE)
    single = pld.from_gaussian_mechanism(
        noise_multiplier, sensitivity=1.0, sampling_prob=sampling_rate,
        value_discretization_interval=_PLD_INTERVAL, neighboring_relation=rel)
    return single.self_compose(steps)


def dpsgd_delta_function(*, sampling_rate: float, noise_multiplier: float, steps: int,
                         relation: str = "replace_one") -> Callable[[np.ndarray], np.ndarray]:
    """δ(ε) of T steps of Poisson-subsampled DP-SGD at noise multiplier σ under ``relation``:
    a vectorised numpy function ε ↦ δ(ε), upper bounds (dp_accounting's pessimistic PLD,
    value interval 1e−3; Doroshenko et al., arXiv 2207.04380). The whole privacy curve, from
    which the attack bounds take the trade-off function.

    Raises:
      ValueError: q outside (0, 1], σ ≤ 0, steps < 1, or an unknown relation.

    Examples:
      >>> d = dpsgd_delta_function(sampling_rate=0.01, noise_multiplier=1.0, steps=1000)
      >>> round(float(d(np.array([0.0]))[0]), 3)   # the largest advantage TPR − FPR
      0.264
    """
    from jaxaudit.accounting.guarantees import check_relation

    q = float(check_probability("sampling_rate", sampling_rate, open_low=True))
    sigma = float(check_positive("noise_multiplier", noise_multiplier))
    steps = check_integer("steps", steps, minimum=1)
    check_relation("relation", relation)
    composed = _dpsgd_pld(sigma, q, steps, relation)

    def delta_of_epsilon(epsilon: np.ndarray) -> np.ndarray:
        e = np.asarray(epsilon, dtype=np.float64)
        flat = composed.get_delta_for_epsilon(list(np.ravel(e)))
        return np.clip(np.asarray(flat, dtype=np.float64), 0.0, 1.0).reshape(e.shape)

    return delta_of_epsilon


def _grid(delta_fn: Callable, eps_max: float, num: int) -> tuple[np.ndarray, np.ndarray]:
    eps = np.linspace(0.0, eps_max, num)
    return eps, np.clip(np.asarray(delta_fn(eps), dtype=np.float64), 0.0, 1.0)


def dpsgd_privacy(*, epsilon: float, delta: float, steps: int, sampling_rate: float,
                  grid_size: int = 96) -> PldProfile:
    """Noise multiplier σ for which T steps of Poisson-subsampled DP-SGD are (ε, δ)-DP under
    replace-one neighbours, and the PLD privacy profile δ(ε) at that σ.

    σ is the smallest value (bisection on the PLD accountant, relative tolerance 1e−3, rounded
    up) with δ(ε) ≤ δ. ``epsilon = inf`` means no noise: σ = 0 and δ(ε) = 1 for every ε (the
    bound is then vacuous).

    Args:
      epsilon: target ε > 0 (inf allowed).
      delta: target δ ∈ (0, 1).
      steps: T ≥ 1.
      sampling_rate: Poisson rate q ∈ (0, 1].
      grid_size: number of ε grid points for the profile (on [0, 4ε + 4]).

    Returns:
      :class:`jaxaudit.accounting.PldProfile` (relation ``"replace_one"``).

    Raises:
      ValueError: ε ≤ 0 or finite above :data:`MAX_DPSGD_EPSILON`, δ outside (0, 1),
        steps < 1 or q outside (0, 1].

    Examples:
      >>> p = dpsgd_privacy(epsilon=2.0, delta=1e-5, steps=10, sampling_rate=1.0)
      >>> round(p.noise_multiplier, 2), round(2 * 10 ** 0.5 / p.noise_multiplier, 3)   # full batch: μ-GDP, μ = 2√T/σ
      (12.62, 0.501)
    """
    eps = float(check_positive("epsilon", epsilon))
    if math.isfinite(eps) and eps > MAX_DPSGD_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_DPSGD_EPSILON:g} when finite (use inf "
                         f"for no noise: the bound is vacuous either way), got {eps!r}")
    delta = float(check_probability("delta", delta, open_low=True, open_high=True))
    q = float(check_probability("sampling_rate", sampling_rate, open_low=True))
    steps = check_integer("steps", steps, minimum=1)
    if math.isinf(eps):
        grid = np.linspace(0.0, 1.0, 2)
        return PldProfile(math.inf, delta, 0.0, grid, np.ones_like(grid), "replace_one")
    noise, eps_grid, deltas = _calibrated(eps, delta, steps, q, int(grid_size))
    return PldProfile(eps, delta, noise, eps_grid.copy(), deltas.copy(), "replace_one")


@functools.lru_cache(maxsize=64)
def _calibrated(eps: float, delta: float, steps: int, q: float, grid_size: int):
    """σ and the profile of :func:`dpsgd_privacy`, cached: the command line calibrates every ε
    once to check it before any work, and the runs reuse the result."""

    def delta_at(sigma):
        return _replace_one_pld(sigma, q, steps).get_delta_for_epsilon(eps)

    lo, hi = 0.05, 1.0
    while delta_at(hi) > delta:
        lo, hi = hi, hi * 2.0
        if hi > 1e4:
            raise ValueError(f"epsilon={eps!r} is too small for delta={delta!r} (with these "
                             "steps and sampling rate): no noise multiplier below 1e4 reaches it")
    while hi / lo > 1.0 + 1e-3:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if delta_at(mid) <= delta else (mid, hi)
    pld = _replace_one_pld(hi, q, steps)
    eps_grid, deltas = _grid(lambda e: pld.get_delta_for_epsilon(list(e)), 4.0 * eps + 4.0,
                             grid_size)
    return hi, eps_grid, deltas


def _gdp_delta_np(eps: ArrayLike, mu: float) -> np.ndarray:
    """δ_μ(ε) in float64 (:func:`jaxaudit.stats.gdp.gdp_delta_core`, the one copy)."""
    with jax.enable_x64(True):
        e = jnp.asarray(np.asarray(eps, dtype=np.float64))
        return np.asarray(gdp_delta_core(e, jnp.float64(mu)), dtype=np.float64)


def gaussian_marginals_privacy(*, rho: float, num_tables: int, delta: float,
                               grid_size: int = 96) -> PldProfile:
    """Noise σ of ρ-zCDP Gaussian marginals (m tables, replace-one) and their μ-GDP profile.

    Δ = √(2m), σ = Δ/√(2ρ), μ = √(2ρ); δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); ε at δ by
    root finding. ``rho = inf``: no noise, δ(ε) = 1.

    Args:
      rho: ρ > 0 (inf allowed).
      num_tables: m ≥ 1 released marginal tables.
      delta: δ ∈ (0, 1) of the reported (ε, δ) point.
      grid_size: ε grid points for the profile (on [0, ε_max] with n-free ε_max = μ²/2 + 8μ).

    Returns:
      :class:`jaxaudit.accounting.PldProfile` (relation ``"replace_one"``) with ``noise`` = σ per cell.

    Examples:
      >>> p = gaussian_marginals_privacy(rho=0.5, num_tables=3, delta=1e-5)   # μ = 1
      >>> round(float(p.delta_of_epsilon(1.0)), 4) >= 0.1269
      True
    """
    rho = float(check_positive("rho", rho))
    delta = float(check_probability("delta", delta, open_low=True, open_high=True))
    num_tables = check_integer("num_tables", num_tables, minimum=1)
    if math.isinf(rho):
        grid = np.linspace(0.0, 1.0, 2)
        return PldProfile(math.inf, delta, 0.0, grid, np.ones_like(grid), "replace_one")
    mu = math.sqrt(2.0 * rho)
    sigma = math.sqrt(2.0 * num_tables) / mu
    hi = mu * mu / 2.0 + 8.0 * mu + 1.0
    eps_at_delta = 0.0 if _gdp_delta_np(0.0, mu) <= delta else brentq(
        lambda e: _gdp_delta_np(e, mu) - delta, 0.0, hi + 50.0)
    eps_grid, deltas = _grid(lambda e: _gdp_delta_np(e, mu), hi, grid_size)
    return PldProfile(float(eps_at_delta), delta, sigma, eps_grid, deltas, "replace_one")
