"""Trade-off functions and their privacy profiles δ_f(ε) (f-DP, Dong–Roth–Su).

A mechanism is f-DP for a trade-off function f when every test between neighbouring datasets with
type-I error α has type-II error ≥ f(α). It is then (ε, δ_f(ε))-DP for every ε ≥ 0 with

    δ_f(ε) = 1 + f*(−e^ε) = sup_α (1 − f(α) − e^ε α).

Closed forms used here:

* μ-GDP: f(α) = Φ(Φ⁻¹(1 − α) − μ), δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
* (ε₀, δ₀)-DP: f(α) = max(0, 1 − δ₀ − e^{ε₀} α, e^{−ε₀}(1 − δ₀ − α)) and
  δ(ε) = δ₀ + (1 − δ₀) max(0, e^{ε₀} − e^ε)/(1 + e^{ε₀}) (the sup is at a kink of f).

All functions are pure ``jax.numpy`` (jit/vmap-able, broadcasting, in the inputs' dtype).

References:
  Dong, Roth, Su. "Gaussian Differential Privacy." JRSS-B 84(1), 2022. arXiv:1905.02383.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit._rounding import lower_bound, upper_bound
from jaxaudit._validation import (
    check_nonnegative,
    check_positive,
    check_probability,
)
from jaxaudit.bounds.tradeoff import gdp_f
from jaxaudit.stats.gdp import gdp_delta_core


def _float(*xs):
    dtype = jnp.result_type(*[jnp.asarray(x) for x in xs], float)
    return [jnp.asarray(x, dtype=dtype) for x in xs]


def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> jax.Array:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su, arXiv:1905.02383,
    Corollary 2.13).

    The library's one implementation: the f-DP count bounds use it as δ_f, and
    :func:`jaxaudit.stats.gdp_epsilon` inverts it (in float64) for the GDP auditing baseline.
    Computed as Φ(a)·(−expm1(ε + log Φ(b) − log Φ(a))) so that it keeps relative accuracy when
    the two terms nearly cancel (large ε).

    Args:
      epsilon: ε ≥ 0.
      mu: μ > 0.

    Returns:
      δ ∈ [0, 1], broadcast shape.

    Examples:
      >>> import jax
      >>> with jax.enable_x64(True):
      ...     print(round(float(gdp_delta(1.0, 1.0)), 6))
      0.126937
    """
    check_nonnegative("epsilon", epsilon)
    check_positive("mu", mu)
    # Concrete inputs: float64, rounded up into the promoted dtype (δ enters bounds additively).
    return upper_bound(_gdp_delta, epsilon, mu)


#: δ_μ(ε)'s one implementation is :func:`jaxaudit.stats.gdp.gdp_delta_core`.
_gdp_delta = gdp_delta_core


def gdp_tradeoff(alpha: ArrayLike, mu: ArrayLike) -> jax.Array:
    """μ-GDP trade-off f(α) = Φ(Φ⁻¹(1 − α) − μ) = Φ(−Φ⁻¹(α) − μ) (Dong, Roth, Su,
    arXiv:1905.02383, Eq. 6).

    Computed from Φ⁻¹(α) itself, never from 1 − α (which is 1 in float32 below α ≈ 6e−8 and
    gave f = 1, a TPR of 0, below the exact one); where f > 1/2 it is 1 − Φ(Φ⁻¹(α) + μ) rounded
    one float down, so f stays a lower bound on the type-II error down to the smallest normal
    α of the dtype (:mod:`jaxaudit.bounds.tradeoff`). Concrete inputs are evaluated in float64
    and rounded *down* into their dtype.

    Examples:
      >>> round(float(gdp_tradeoff(0.5, 0.0)), 6)
      0.5
    """
    check_probability("alpha", alpha)
    check_nonnegative("mu", mu)
    return lower_bound(gdp_f, alpha, mu)


def approx_dp_tradeoff(alpha: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> jax.Array:
    """(ε, δ)-DP trade-off f(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)).

    Examples:
      >>> round(float(approx_dp_tradeoff(0.1, 1.0, 0.0)), 6)
      0.728172
    """
    check_probability("alpha", alpha)
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    alpha, eps, delta = _float(alpha, epsilon, delta)
    scaled = jnp.where(alpha == 0, 0.0, jnp.exp(eps) * alpha)  # e^ε·0 = 0 also at ε = ∞
    return jnp.maximum(
        jnp.maximum(0.0, 1.0 - delta - scaled),
        jnp.exp(-eps) * (1.0 - delta - alpha),
    )


def approx_dp_delta(epsilon: ArrayLike, epsilon0: ArrayLike, delta0: ArrayLike) -> jax.Array:
    """δ_f(ε) of the (ε₀, δ₀)-DP trade-off: δ₀ + (1 − δ₀) max(0, e^{ε₀} − e^ε)/(1 + e^{ε₀}).

    Equals δ₀ for ε ≥ ε₀ and grows to (e^{ε₀} − 1 + 2δ₀)/(1 + e^{ε₀}) at ε = 0.

    Examples:
      >>> round(float(approx_dp_delta(2.0, 1.0, 1e-5)), 8)
      1e-05
    """
    check_nonnegative("epsilon", epsilon)
    check_nonnegative("epsilon0", epsilon0)
    check_probability("delta0", delta0, open_high=True)
    # δ enters the bounds additively: float64, rounded up into the promoted dtype
    return upper_bound(_approx_dp_delta, epsilon, epsilon0, delta0)


@jax.jit
def _approx_dp_delta(eps, eps0, delta0):
    # (e^{ε₀} − e^ε)/(1 + e^{ε₀}) written as (1 − e^{ε−ε₀})/(1 + e^{−ε₀}): no ∞/∞ at ε₀ = ∞.
    gap = jnp.maximum(0.0, -jnp.expm1(jnp.where(eps >= eps0, 0.0, eps - eps0)))
    return delta0 + (1.0 - delta0) * gap / (1.0 + jnp.exp(-eps0))
