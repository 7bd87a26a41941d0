"""Exact (Clopper–Pearson) one-sided confidence limits of a binomial proportion: the one copy.

With k successes in n independent trials of probability p,

    p⁺ = B⁻¹(c; k + 1, n − k)   (1 when k = n),    Pr(p ≤ p⁺) ≥ c,
    p⁻ = B⁻¹(1 − c; k, n − k + 1)   (0 when k = 0),    Pr(p ≥ p⁻) ≥ c,

B⁻¹(·; a, b) the quantile of Beta(a, b) (Clopper & Pearson, Biometrika 1934), c the one-sided
``confidence``. Computed by a static-length bisection (64 steps) on the regularised incomplete beta function
(``jax.scipy.special.betainc``), so the same core runs eagerly, inside ``jax.jit``/``jax.vmap`` and
on any device; the end of the final bracket on the conservative side is returned (p⁺ never below,
p⁻ never above the exact limit, up to the accuracy of betainc).

float32 (the default dtype under a user's ``jax.jit``): the comparisons are made on the tail that
is small (Q = 1 − I_p(k + 1, n − k) = I_{1−p}(n − k, k + 1) for p⁺, I_p(k, n − k + 1) for p⁻)
inflated by 1 + r, r = 48 (a + b + 2) ε₃₂: a margin above the relative error of float32 betainc
(measured ≤ 33 (a + b) ε₃₂ for a + b ≤ 10, ≤ 21 (a + b) ε₃₂ up to a + b = 10⁵, against scipy,
levels 0.5 to 1 − 5·10⁻⁶), so the limits stay on the safe side. Up to n ≈ 10³ the float32
limit is within 10⁻⁴ of the exact one; beyond that it is looser (enable x64 there). float64
(eager calls run under x64): plain bisection, to the last bracket.

The host-side helpers :func:`cp_upper_host`/:func:`cp_lower_host` (scipy's ``beta.ppf`` in
float64) serve the data-dependent threshold searches of ``renyi``, whose candidate arrays change
size on every call (each new size would compile the core again).

References:
  Clopper, Pearson, "The use of confidence or fiducial limits illustrated in the case of the
  binomial", Biometrika 26(4), 1934.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc
from jax.typing import ArrayLike
from scipy import stats as sp_stats

from jaxaudit._validation import (
    check_broadcast,
    check_finite,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit.stats.numerics import bisect, float_arrays

__all__ = ["clopper_pearson_upper", "clopper_pearson_lower"]

#: Relative margin on float32 betainc, in units of (a + b + 2) float32 eps (module docstring).
F32_BETAINC_SLACK = 48.0

#: Bisection steps: [0, 1] halves 64 times, to 5.4e−20 absolute (below float64 resolution for
#: limits above 1e−4; the returned end is the conservative one either way). 128 steps, as for
#: the GDP inverse, cost twice as much for no change in the bmp audits' figures.
CP_BISECTION_STEPS = 64


def _margin(a: jax.Array, b: jax.Array) -> jax.Array:
    return 1.0 + F32_BETAINC_SLACK * (a + b + 2.0) * jnp.finfo(jnp.result_type(a)).eps


def _zeros(k: jax.Array, n: jax.Array, failure: jax.Array) -> jax.Array:
    shape = jnp.broadcast_shapes(jnp.shape(k), jnp.shape(n), jnp.shape(failure))
    return jnp.zeros(shape, jnp.result_type(k, n, failure))


def cp_upper_core(k: jax.Array, n: jax.Array, failure: jax.Array) -> jax.Array:
    """p⁺ = Beta(k + 1, n − k)'s (1 − failure)-quantile, 1 at k = n. Unvalidated, traceable
    (float counts, broadcasting); the upper end of the final bracket (module docstring)."""
    full = k >= n
    a = k + 1.0
    b = jnp.maximum(n - k, 1.0)  # placeholder where k = n (answer 1)
    zero = _zeros(k, n, failure)
    if jnp.result_type(zero) == jnp.float64:
        def above(p: jax.Array) -> jax.Array:
            return betainc(a, b, p) >= 1.0 - failure  # I_p increases in p
    else:
        margin = _margin(a, b)

        def above(p: jax.Array) -> jax.Array:
            # 1 − p rounded up, so that the tail is not underestimated by the subtraction
            q = jnp.minimum(jnp.nextafter(1.0 - p, jnp.asarray(2.0, p.dtype)), 1.0)
            return betainc(b, a, q) * margin <= failure  # Q = 1 − I_p(a, b) decreases in p

    _, hi = bisect(above, zero, jnp.ones_like(zero), CP_BISECTION_STEPS)
    return jnp.where(full, jnp.ones_like(hi), hi)


def cp_lower_core(k: jax.Array, n: jax.Array, failure: jax.Array) -> jax.Array:
    """p⁻ = Beta(k, n − k + 1)'s failure-quantile, 0 at k = 0. Unvalidated, traceable; the lower
    end of the final bracket (module docstring)."""
    empty = k <= 0
    a = jnp.maximum(k, 1.0)  # placeholder where k = 0 (answer 0)
    b = n - a + 1.0
    zero = _zeros(k, n, failure)
    scale = 1.0 if jnp.result_type(zero) == jnp.float64 else _margin(a, b)
    lo, _ = bisect(lambda p: betainc(a, b, p) * scale > failure, zero, jnp.ones_like(zero),
                   CP_BISECTION_STEPS)
    return jnp.where(empty, jnp.zeros_like(lo), lo)


_cp_upper_jit = jax.jit(cp_upper_core)
_cp_lower_jit = jax.jit(cp_lower_core)


def check_counts(k: ArrayLike, n: ArrayLike) -> None:
    """k successes of n trials: integers with 0 ≤ k ≤ n, n ≥ 1 (concrete values only)."""
    k_arr = check_finite("k", k)
    n_arr = check_finite("n", n)
    for name, arr in (("k", k_arr), ("n", n_arr)):
        bad = arr != np.round(arr)
        if bad.any():
            raise ValueError(f"{name} must be integer counts, got {plain(arr[bad].ravel()[0])}")
    if (n_arr < 1).any():
        raise ValueError(f"n must be >= 1, got {plain(n_arr[n_arr < 1].ravel()[0])}")
    check_broadcast(k=k, n=n)
    bad_k = (k_arr < 0) | (k_arr > n_arr)
    if bad_k.any():
        bad = np.broadcast_to(k_arr, bad_k.shape)[bad_k]
        raise ValueError(f"k must lie in [0, n], got {plain(bad.ravel()[0])}")


def round_down(value: float, dtype: jnp.dtype) -> jax.Array:
    """A concrete float in ``dtype``, rounded towards 0 (a smaller failure probability: a wider,
    safe limit)."""
    y = np.asarray(value, dtype)
    if y > value:
        y = np.nextafter(y, np.asarray(0, dtype))
    return jnp.asarray(y)


def _traced_failure(confidence: ArrayLike, dtype: jnp.dtype) -> jax.Array:
    """1 − confidence in ``dtype``: rounded down when ``confidence`` is concrete (computed in
    float64 first, so float32 does not lose the small tail), exact arithmetic otherwise."""
    if is_traced(confidence):
        return 1.0 - jnp.asarray(confidence, dtype)
    failure = 1.0 - np.asarray(confidence, np.float64)
    if failure.ndim == 0:
        return round_down(float(failure), dtype)
    y = failure.astype(dtype)
    return jnp.asarray(np.where(y > failure, np.nextafter(y, np.asarray(0, dtype)), y))


def _limit(core, k: ArrayLike, n: ArrayLike, confidence: ArrayLike) -> jax.Array | np.ndarray:
    if is_traced(k, n, confidence):
        k_f, n_f = float_arrays(k, n)
        return core(k_f, n_f, _traced_failure(confidence, k_f.dtype))
    conf = check_probability("confidence", confidence, open_low=True, open_high=True)
    check_counts(k, n)
    check_broadcast(k=k, n=n, confidence=confidence)
    jitted = _cp_upper_jit if core is cp_upper_core else _cp_lower_jit
    with jax.enable_x64(True):
        out = jitted(jnp.asarray(k, jnp.float64), jnp.asarray(n, jnp.float64),
                     jnp.asarray(1.0 - conf, jnp.float64))
        return np.asarray(jax.device_get(out), np.float64)


def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, *,
                          confidence: ArrayLike) -> jax.Array | np.ndarray:
    """One-sided exact upper limit of a binomial proportion: Pr(p ≤ p⁺) ≥ ``confidence``.

    p⁺ = B⁻¹(confidence; k + 1, n − k), the confidence-quantile of Beta(k + 1, n − k), and 1 when
    k = n (Clopper & Pearson, Biometrika 1934).

    Args:
      k: successes (integers in [0, n]).
      n: trials (integers ≥ 1; broadcasts with ``k``).
      confidence: one-sided coverage c ∈ (0, 1), e.g. 0.95.

    Returns:
      Concrete inputs: a float64 numpy array (bisection under x64, never below the exact
      quantile). Traced inputs (inside jit/vmap): a jax array in the inputs' float dtype, on the
      safe side in float32 too (module docstring). Not differentiable in the counts.

    Examples:
      >>> round(float(clopper_pearson_upper(0, 10, confidence=0.95)), 4)   # 1 − 0.05^(1/10)
      0.2589
    """
    return _limit(cp_upper_core, k, n, confidence)


def clopper_pearson_lower(k: ArrayLike, n: ArrayLike, *,
                          confidence: ArrayLike) -> jax.Array | np.ndarray:
    """One-sided exact lower limit of a binomial proportion: Pr(p ≥ p⁻) ≥ ``confidence``.

    p⁻ = B⁻¹(1 − confidence; k, n − k + 1), the (1 − c)-quantile of Beta(k, n − k + 1), and 0
    when k = 0 (Clopper & Pearson, Biometrika 1934).

    Args:
      k: successes (integers in [0, n]).
      n: trials (integers ≥ 1).
      confidence: one-sided coverage c ∈ (0, 1).

    Returns:
      As :func:`clopper_pearson_upper` (never above the exact quantile).

    Examples:
      >>> round(float(clopper_pearson_lower(10, 10, confidence=0.95)), 4)   # 0.05^(1/10)
      0.7411
    """
    return _limit(cp_lower_core, k, n, confidence)


def cp_upper_host(k: ArrayLike, n: ArrayLike, failure: ArrayLike) -> np.ndarray:
    """Host-side float64 p⁺ at failure probability ``failure`` (scipy; no validation)."""
    k_np, n_np = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    safe_k = np.minimum(k_np, n_np - 1)
    return np.where(k_np >= n_np, 1.0,
                    sp_stats.beta.ppf(1.0 - np.asarray(failure), safe_k + 1.0, n_np - safe_k))


def cp_lower_host(k: ArrayLike, n: ArrayLike, failure: ArrayLike) -> np.ndarray:
    """Host-side float64 p⁻ at failure probability ``failure`` (scipy; no validation)."""
    k_np, n_np = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    safe_k = np.maximum(k_np, 1)
    return np.where(k_np <= 0, 0.0,
                    sp_stats.beta.ppf(np.asarray(failure), safe_k, n_np - safe_k + 1.0))
