"""Gaussian differential privacy (μ-GDP) conversions: its (ε, δ) curve, the inverse, and RDP.

μ-GDP is the trade-off of testing N(0, 1) against N(μ, 1) (Dong, Roth, Su, arXiv 1905.02383):

    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)      (Corollary 2.13; every ε ≥ 0),
    ε_μ(δ) = the smallest ε ≥ 0 with δ_μ(ε) ≤ δ       (its inverse, by bisection),
    μ-GDP ⇒ (α, α μ²/2)-RDP for every order α ≥ 1    (the Rényi divergence of the two Gaussians;
                                                      Mironov, arXiv 1702.07476, Proposition 7).

The one implementation of each: ``bounds.gdp_delta`` is the validated, outward-rounded entry of
:func:`gdp_delta_core`; ``renyi``'s threshold tests call :func:`gdp_epsilon` and
:func:`gdp_to_rdp`.

References:
  Dong, Roth, Su, "Gaussian Differential Privacy", JRSS-B 2022, arXiv 1905.02383.
  Mironov, "Rényi Differential Privacy", CSF 2017, arXiv 1702.07476.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp_special
from jax.scipy.stats import norm
from jax.typing import ArrayLike
from scipy import special

from jaxaudit._validation import (
    check_broadcast,
    check_nonnegative,
    check_order_limits,
    check_probability,
    is_traced,
)
from jaxaudit.stats.numerics import BISECTION_STEPS, bisect, float_arrays

__all__ = ["gdp_epsilon", "gdp_to_rdp"]


@jax.jit
def gdp_delta_core(epsilon: jax.Array, mu: jax.Array) -> jax.Array:
    """δ_μ(ε) = Φ(a) − e^ε Φ(b), a = −ε/μ + μ/2, b = a − μ. Unvalidated, traceable.

    Computed as Φ(a)·(−expm1(ε + log Φ(b) − log Φ(a))) so that it keeps relative accuracy when
    the two terms nearly cancel (large ε).
    """
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_phi_a = norm.logcdf(a)
    delta = jnp.exp(log_phi_a) * -jnp.expm1(epsilon + norm.logcdf(b) - log_phi_a)
    # Φ(a) = 0 (ε = ∞, or ε/μ overflowing) makes both terms 0: δ = 0, not ∞ − ∞ = NaN.
    delta = jnp.where(log_phi_a == -jnp.inf, 0.0, delta)
    # μ = ∞ (no privacy): δ = 1 for every ε, also ε = ∞ where ε/μ is NaN (the safe choice).
    delta = jnp.where(mu == jnp.inf, 1.0, delta)
    return jnp.clip(delta, 0.0, 1.0)


@jax.custom_jvp
def gdp_epsilon_core(mu: jax.Array, delta: jax.Array) -> jax.Array:
    """Smallest ε ≥ 0 with δ_μ(ε) ≤ δ for μ-GDP. Unvalidated, traceable, differentiable.

    δ_μ(ε) decreases in ε and is below its first term, which equals δ at
    ε_hi = μ²/2 − μ Φ⁻¹(δ); so the root lies in [0, max(ε_hi, 0)], found by 128 bisection steps
    (static, so it jits and vmaps). The lower end of the final bracket is returned: δ_μ(ε) > δ
    there, so it is never above the exact ε (up to the rounding of δ_μ).
    Limits: 0 when μ = 0 or δ ≥ δ_μ(0); ∞ when δ = 0 < μ or μ = ∞ (with δ < 1).
    Gradient by the implicit function theorem (see the JVP below).
    """
    regular = (mu > 0) & jnp.isfinite(mu) & (delta > 0)
    mu_s = jnp.where(regular, mu, jnp.ones_like(mu))
    delta_s = jnp.where(regular, delta, jnp.full_like(delta, 0.5))
    eps_hi = jnp.maximum(mu_s * mu_s / 2.0 - mu_s * jsp_special.ndtri(delta_s), 0.0)
    lo, _ = bisect(lambda e: gdp_delta_core(e, mu_s) <= delta_s, jnp.zeros_like(eps_hi), eps_hi)
    infinite = (delta < 1) & ((mu == jnp.inf) | ((delta <= 0) & (mu > 0)))
    return jnp.where(regular, lo, jnp.where(infinite, jnp.inf, jnp.zeros_like(lo)))


@gdp_epsilon_core.defjvp
def _gdp_epsilon_jvp(primals: tuple, tangents: tuple) -> tuple[jax.Array, jax.Array]:
    """dε = (φ(a) dμ − dδ) / (e^ε Φ(b)), a = −ε/μ + μ/2, b = a − μ, from δ_μ(ε) = δ:
    ∂δ_μ/∂ε = −e^ε Φ(b) and ∂δ_μ/∂μ = φ(a) (Dong, Roth, Su, arXiv 1905.02383, using
    e^ε φ(b) = φ(a)). Zero where ε is 0 or ∞ (a constant piece)."""
    mu, delta = primals
    d_mu, d_delta = tangents
    eps = gdp_epsilon_core(mu, delta)
    interior = (eps > 0) & jnp.isfinite(eps)
    eps_s = jnp.where(interior, eps, jnp.ones_like(eps))
    mu_s = jnp.where(interior, mu, jnp.ones_like(mu))
    a = -eps_s / mu_s + mu_s / 2.0
    slope = jnp.exp(eps_s + norm.logcdf(a - mu_s))
    d_eps = (jnp.exp(norm.logpdf(a)) * d_mu - d_delta) / slope
    return eps, jnp.where(interior, d_eps, jnp.zeros_like(d_eps))


_gdp_epsilon_jit = jax.jit(gdp_epsilon_core)


def _check_mu_and(name: str, value: ArrayLike, check: Callable[[str, Any], np.ndarray],
                  mu: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """μ ≥ 0 and the argument ``name`` (checked by ``check``), broadcast-compatible."""
    mu_np = check_nonnegative("mu", mu)
    value_np = check(name, value)
    check_broadcast(**{"mu": mu, name: value})
    return mu_np, value_np


def gdp_epsilon(mu: ArrayLike, delta: ArrayLike) -> float | np.ndarray | jax.Array:
    """Smallest ε ≥ 0 with δ_μ(ε) ≤ δ for μ-GDP: the (ε, δ) curve of μ-GDP.

    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su, "Gaussian Differential Privacy",
    arXiv 1905.02383, Corollary 2.13; :func:`jaxaudit.bounds.gdp_delta`), inverted by bisection
    on [0, μ²/2 − μ Φ⁻¹(δ)] (128 steps; the lower end of the bracket, never above the exact ε).
    0 if μ = 0 or δ ≥ δ_μ(0); ∞ if δ = 0 < μ or μ = ∞.

    Args:
      mu: μ ≥ 0 (∞ allowed).
      delta: DP's δ ∈ [0, 1] (broadcasts with ``mu``).

    Returns:
      Concrete inputs: a Python float for scalars, a float64 numpy array otherwise (computed in
      float64). Traced inputs (inside jit/vmap/grad): a jax array in the inputs' dtype;
      differentiable in μ and δ (implicit function theorem).

    Examples:
      >>> round(gdp_epsilon(1.0, 1e-5), 3)   # ε = 4.38 at δ = 1e−5 is μ ≈ 1.0006
      4.377
    """
    if is_traced(mu, delta):
        return gdp_epsilon_core(*float_arrays(mu, delta))
    mu_np, delta_np = _check_mu_and("delta", delta, check_probability, mu)
    with jax.enable_x64(True):
        out = np.asarray(_gdp_epsilon_jit(jnp.asarray(mu_np), jnp.asarray(delta_np)))
    return float(out) if out.ndim == 0 else out


def gdp_epsilon_host(mu: float, delta: float) -> float:
    """:func:`gdp_epsilon_core` in float64 Python/scipy scalars for host-side drivers (no
    validation): the same δ_μ(ε) (scipy's ``log_ndtr``), bracket, 128 bisection steps and limits.

    The host-side threshold searches of ``renyi`` call it once per call on a concrete μ: the
    jitted core costs about 1 s of tracing and compilation on a process's first call, this about
    1 ms, and a first call should not cost more than a later one (as ``cp_upper_host`` beside the
    Clopper–Pearson core).
    """
    mu, delta = float(mu), float(delta)
    if not (mu > 0 and math.isfinite(mu) and delta > 0):
        infinite = delta < 1 and (mu == math.inf or (delta <= 0 and mu > 0))
        return math.inf if infinite else 0.0

    def delta_at(epsilon: float) -> float:
        a = -epsilon / mu + mu / 2.0
        log_phi_a = float(special.log_ndtr(a))
        if log_phi_a == -math.inf:
            return 0.0
        value = math.exp(log_phi_a) * -math.expm1(
            epsilon + float(special.log_ndtr(a - mu)) - log_phi_a)
        return min(max(value, 0.0), 1.0)

    lo, hi = 0.0, max(mu * mu / 2.0 - mu * float(special.ndtri(delta)), 0.0)
    for _ in range(BISECTION_STEPS):
        mid = lo + 0.5 * (hi - lo)
        if delta_at(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return lo


def gdp_to_rdp_core(mu: jax.Array, order: jax.Array) -> jax.Array:
    """α μ²/2 (0 at μ = 0 for every α, also α = ∞). Unvalidated, traceable."""
    value = order * mu**2 / 2.0
    return jnp.where(mu == 0, jnp.zeros_like(value), value)


def gdp_to_rdp(mu: ArrayLike, order: ArrayLike) -> np.ndarray | jax.Array:
    """μ-GDP implies (α, α μ²/2)-RDP for every order α ≥ 1 (the GDP → RDP conversion).

    μ-GDP is exactly the privacy profile of N(μ, 1) vs N(0, 1), whose Rényi divergence is
    α μ²/2 (Dong, Roth, Su, arXiv 1905.02383; Mironov, arXiv 1702.07476, Proposition 7).

    Args:
      mu: μ ≥ 0.
      order: Rényi order(s) α ∈ [1, ∞] (broadcasts with ``mu``).

    Returns:
      Concrete inputs: a float64 numpy array; traced inputs: a jax array in their dtype.

    Examples:
      >>> float(gdp_to_rdp(1.0, 4.0))
      2.0
    """
    if is_traced(mu, order):
        return gdp_to_rdp_core(*float_arrays(mu, order))
    mu_np, order_np = _check_mu_and("order", order, check_order_limits, mu)
    with np.errstate(invalid="ignore"):
        value = order_np * mu_np**2 / 2.0
    return np.asarray(np.where(mu_np == 0, 0.0, value), dtype=np.float64)
