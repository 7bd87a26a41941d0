"""Closed-form Rényi divergences (Mironov units) of the Gaussian and Laplace mechanisms.

Each public function validates concrete arguments and calls a pure ``jnp`` core
(``_gaussian_renyi``, ``_laplace_renyi``), so it also works inside the caller's ``jax.jit``,
``jax.vmap`` and ``jax.grad`` (traced arguments are not checked). Both have the limits α = 1
(Kullback–Leibler) and α = ∞ (max-divergence, log ess sup dP/dQ), which are returned exactly
rather than as 0/0.

References:
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476), Propositions 3 and 6 and
  Table II.
  van Erven, Harremoës, "Rényi Divergence and Kullback–Leibler Divergence", IEEE Trans. Inf.
  Theory 2014 (arXiv 1206.2459), Theorems 5 and 6 (the limits α → 1 and α → ∞).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_broadcast,
    check_nonnegative,
    check_numeric,
    check_order_limits,
    check_positive,
    is_traced,
)
from jaxaudit.stats.numerics import float_arrays

__all__ = ["gaussian_renyi", "laplace_renyi"]


def _gaussian_renyi(shift, sigma, alpha):
    """α Δ²/(2σ²) (α = 1: KL; α = ∞: ∞ unless Δ = 0). Unvalidated, traceable."""
    value = alpha * shift**2 / (2.0 * sigma**2)
    return jnp.where(shift == 0, jnp.zeros_like(value), value)


def gaussian_renyi(shift: ArrayLike, scale: ArrayLike, order: ArrayLike) -> jax.Array:
    """D_α(N(Δ, σ² I) ‖ N(0, σ² I)) = α Δ² / (2σ²), Δ the Euclidean norm of the shift.

    The formula holds for every α ∈ [1, ∞]: α = 1 is KL = Δ²/(2σ²) and α = ∞ is ∞ for Δ > 0
    (the likelihood ratio of two Gaussians is unbounded), 0 for Δ = 0.

    Args:
      shift: Δ ≥ 0 (norm of the mean difference).
      scale: the standard deviation σ > 0 (the scale, as ``laplace_renyi``'s b).
      order: order α ∈ [1, ∞] (broadcasts with the others).

    Returns:
      D_α in the promoted float dtype of the inputs (float32 unless x64 is on).

    Examples:
      >>> float(gaussian_renyi(1.0, 1.0, 2.0))
      1.0
    """
    if not is_traced(shift, scale, order):
        check_nonnegative("shift", shift)
        check_positive("scale", scale)
        check_order_limits("order", order)
        check_broadcast(shift=shift, scale=scale, order=order)
    return _gaussian_renyi(*float_arrays(shift, scale, order))


def _laplace_renyi(shift, scale, alpha):
    """D_α of Lap(Δ, b) vs Lap(0, b), α ∈ [1, ∞]. Unvalidated, traceable.

    With t = |Δ|/b and a = α − 1 (in log space, accurate as a → 0):
    D_α = [log(e^{log1p(a) + a t} + e^{log a − (a+1) t}) − log1p(2a)] / a; at a = 0 the limit
    t + e^{−t} − 1 (KL) and at α = ∞ the limit t (max-divergence).
    """
    t = jnp.abs(shift) / scale
    a = alpha - 1.0
    general_order = jnp.isfinite(alpha) & (a > 0)
    a_safe = jnp.where(general_order, a, jnp.ones_like(a))
    log_sum = jnp.logaddexp(jnp.log1p(a_safe) + a_safe * t,
                            jnp.log(a_safe) - (a_safe + 1.0) * t) - jnp.log1p(2.0 * a_safe)
    general = log_sum / a_safe
    kl = t + jnp.expm1(-t)
    return jnp.where(general_order, general, jnp.where(a == 0, kl, t))


def laplace_renyi(shift: ArrayLike, scale: ArrayLike, order: ArrayLike) -> jax.Array:
    """D_α(Lap(Δ, b) ‖ Lap(0, b)) for the one-dimensional Laplace distribution.

    With t = |Δ|/b (Mironov 2017, Proposition 6 with sensitivity Δ and scale b):

        D_α = 1/(α−1) · log[ α/(2α−1) · e^{(α−1)t} + (α−1)/(2α−1) · e^{−α t} ],   α > 1,
        D_1 = KL = t + e^{−t} − 1,      D_∞ = t,

    symmetric in the two arguments. Computed in log space with log1p (no overflow for large
    (α−1)t, no 0/0 or cancellation as α → 1).

    Args:
      shift: Δ (location difference, any sign).
      scale: b > 0.
      order: order α ∈ [1, ∞] (broadcasts with the others).

    Returns:
      D_α in the promoted float dtype of the inputs (float32 unless x64 is on).

    Examples:
      >>> round(float(laplace_renyi(1.0, 1.0, 2.0)), 4)   # log(2/3 e + 1/3 e^{-2})
      0.6191
      >>> float(laplace_renyi(1.0, 1.0, float("inf")))
      1.0
    """
    if not is_traced(shift, scale, order):
        # Any sign; NaN refused (named as "shift").
        check_nonnegative("shift", np.abs(check_numeric("shift", shift)))
        check_positive("scale", scale)
        check_order_limits("order", order)
        check_broadcast(shift=shift, scale=scale, order=order)
    return _laplace_renyi(*float_arrays(shift, scale, order))
