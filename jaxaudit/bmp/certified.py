"""Certified lower bounds on (ε_L, ε_R) from attack error counts: exact Clopper–Pearson limits on
the false-positive and false-negative rates pushed through the inverse map of the BMP region.

If a learner is (ε_L, ε_R)-BMP for node i, every membership test's operating point (α, β) lies in
R(ε_L, ε_R), so (Yıldırım & Khosla, arXiv 2606.04069, the region's inverse; Kairouz, Oh &
Viswanath, arXiv 1311.0776, for the symmetric case)

    ε_R ≥ log((1 − β)/α) = log(TPR/FPR),    ε_L ≥ log((1 − α)/β) = log(TNR/FNR).

Both right-hand sides decrease in α and in β. With one-sided exact Clopper–Pearson upper limits
α⁺ (from X false positives among N0 non-member runs) and β⁺ (from Y false negatives among N1
member runs), each at level 1 − (1 − c)/2,

    ε_R ≥ ε_R⁻ = max(0, log((1 − β⁺)/α⁺)),    ε_L ≥ ε_L⁻ = max(0, log((1 − α⁺)/β⁺))

hold *jointly* with probability ≥ c whenever the counts are binomial, whatever the attack
(Bonferroni: Pr(α > α⁺ or β > β⁺) ≤ (1 − c)/2 + (1 − c)/2; no independence of X and Y is used).
Unlike the posterior this needs no model of the attack's strength; it is loose when the attack is
weak, and it certifies only what the attack shows.

Clopper–Pearson (Clopper & Pearson, Biometrika 1934): α⁺ = B⁻¹(1 − δ; X + 1, N0 − X), the
1 − δ quantile of Beta(X + 1, N0 − X), and α⁺ = 1 when X = N0. Computed here by bisection on the
regularised incomplete beta function in float64, returning the upper end of the final bracket, so
rounding errs on the conservative (larger α⁺) side.

Inside ``jax.jit``/``jax.vmap`` the checks are skipped and the same core runs in JAX's default
float dtype: with ``jax_enable_x64`` the figures equal the eager ones; in float32 (the default)
the bisection compares the upper tail Q = 1 − I_p(a, b) = I_{1−p}(b, a) with 1 − level, taking
Q·(1 + r), r = 48 (a + b + 2) ε₃₂, for Q: a margin above the relative error of float32
``betainc`` (measured ≤ 33 (a + b) ε₃₂ for a + b ≤ 10, ≤ 21 (a + b) ε₃₂ up to a + b = 10⁵,
against scipy, levels 0.5 to 1 − 5·10⁻⁶), so α⁺ stays ≥ the exact limit. The margin grows with
N: up to N ≈ 10³ the float32 limit is within 10⁻⁴ of the exact one, beyond that it is
looser (enable x64 there). The ε⁻ are lowered by a bound on the round-off of their logs.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc

from jaxaudit._validation import check_finite, is_traced
from jaxaudit.mia.types import validate_counts

__all__ = ["CertifiedEpsilons", "certified_epsilons", "clopper_pearson_upper"]

_BISECTION_STEPS = 64  # the bracket [0, 1] halves 64 times: below float64 resolution
_F32_BETAINC_SLACK = 48.0  # relative margin on float32 betainc, in (a + b + 2) float32 eps


class CertifiedEpsilons(NamedTuple):
    """Per-node certified lower bounds (node axis as in the counts).

    Attributes:
      eps_l, eps_r: lower bounds ε_L⁻, ε_R⁻ (≥ 0), jointly valid with probability ≥ ``confidence``.
      fpr_upper, fnr_upper: the Clopper–Pearson upper limits α⁺, β⁺ used.
      confidence: the joint confidence level c.
    """

    eps_l: jax.Array
    eps_r: jax.Array
    fpr_upper: jax.Array
    fnr_upper: jax.Array
    confidence: float


def _cp_upper(k, n, level, tail=None):
    """Upper Clopper–Pearson limit: the p with I_p(k + 1, n − k) = level (1 when k = n).

    Unvalidated, traceable core; in float64 exact to the last bracket; in float32 the test is on
    the upper tail ``tail`` = 1 − level (pass it when it is known more precisely than
    1 − level) with the margin of the module docstring, so the limit is never below the exact
    one."""
    a = k + 1.0
    b = jnp.maximum(n - k, 1.0)  # placeholder where k = n (answer 1)
    dtype = jnp.result_type(a)
    if dtype == jnp.float64:
        def below(p):
            return betainc(a, b, p) < level  # I_p increases in p
    else:
        tail = 1.0 - level if tail is None else tail
        margin = 1.0 + _F32_BETAINC_SLACK * (a + b + 2.0) * jnp.finfo(dtype).eps

        def below(p):
            # 1 − p rounded up, so that the tail is not underestimated by the subtraction
            q = jnp.minimum(jnp.nextafter(1.0 - p, jnp.asarray(2.0, dtype)), 1.0)
            return betainc(b, a, q) * margin > tail  # Q = 1 − I_p(a, b) decreases in p

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        is_below = below(mid)
        return jnp.where(is_below, mid, lo), jnp.where(is_below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, _BISECTION_STEPS, body, (jnp.zeros_like(a), jnp.ones_like(a)))
    return jnp.where(k >= n, 1.0, hi)


def _rounded_down(value: float, dtype):
    """A concrete float in ``dtype``, rounded towards 0 (a smaller tail: a larger, safe limit)."""
    y = np.asarray(value, dtype)
    if y > value:
        y = np.nextafter(y, np.asarray(0, dtype))
    return jnp.asarray(y)


@jax.jit
def _certified(fp, n0, fn, n1, level, tail=None):
    """Unvalidated, traceable core of :func:`certified_epsilons` (float counts, level
    1 − (1 − c)/2, optionally its tail (1 − c)/2)."""
    a_hi = _cp_upper(fp, n0, level, tail)
    b_hi = _cp_upper(fn, n1, level, tail)
    # log((1 − β⁺)/α⁺) with log(0) = −inf where β⁺ = 1 (no certificate): clipped at 0 below
    log_tnr, log_fpr = jnp.log1p(-a_hi), jnp.log(a_hi)
    log_tpr, log_fnr = jnp.log1p(-b_hi), jnp.log(b_hi)
    eps_r = log_tpr - log_fpr
    eps_l = log_tnr - log_fnr
    if jnp.result_type(a_hi) != jnp.float64:
        # float32: lower each bound by a bound on the round-off of its two logs and difference
        ulp = 4.0 * jnp.finfo(jnp.result_type(a_hi)).eps
        eps_r = eps_r - ulp * (jnp.abs(log_tpr) + jnp.abs(log_fpr))
        eps_l = eps_l - ulp * (jnp.abs(log_tnr) + jnp.abs(log_fnr))
    return jnp.maximum(eps_l, 0.0), jnp.maximum(eps_r, 0.0), a_hi, b_hi


def clopper_pearson_upper(k, n, *, level: float = 0.95):
    """One-sided exact upper confidence limit of a binomial proportion: Pr(p ≤ p⁺) ≥ ``level``.

    p⁺ = B⁻¹(level; k + 1, n − k) (Clopper & Pearson 1934), 1 when k = n; float64 bisection on
    the regularised incomplete beta function (the returned value is ≥ the exact quantile).

    Example:
      >>> round(float(clopper_pearson_upper(0, 10, level=0.95)), 4)  # 1 − 0.05^(1/10)
      0.2589
    """
    if is_traced(k, n, level):
        dtype = jnp.result_type(float)
        k, n = jnp.broadcast_arrays(jnp.asarray(k, dtype), jnp.asarray(n, dtype))
        tail = None if is_traced(level) else _rounded_down(1.0 - float(level), dtype)
        return _cp_upper(k, n, jnp.asarray(level, dtype), tail)
    level = float(check_finite("level", level))
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    k, n = np.broadcast_arrays(np.asarray(k, np.float64), np.asarray(n, np.float64))
    if np.any(~np.isfinite(k)) or np.any(k < 0) or np.any(k != np.round(k)) or np.any(k > n):
        raise ValueError(f"k must hold integers in [0, n], got {k}")
    if np.any(~np.isfinite(n)) or np.any(n < 1) or np.any(n != np.round(n)):
        raise ValueError(f"n must hold integers >= 1, got {n}")
    with jax.enable_x64(True):
        out = jax.device_get(_cp_upper(jnp.asarray(k), jnp.asarray(n), jnp.float64(level)))
    return _to_default_float(out, up=True)


def _to_default_float(x, *, up: bool):
    """float64 → the default float dtype, rounded up (``up``) or down so that bounds stay valid."""
    x = np.asarray(x, np.float64)
    dtype = jnp.result_type(float)
    y = x.astype(dtype)
    if dtype != np.float64:
        wrong = (y < x) if up else (y > x)
        y = np.where(wrong, np.nextafter(y, np.asarray(np.inf if up else -np.inf, dtype)), y)
    return jnp.asarray(y)


def certified_epsilons(counts, *, confidence: float = 0.95) -> CertifiedEpsilons:
    """Certified lower bounds on (ε_L, ε_R) per node, jointly valid with probability ≥ confidence.

    ε_R⁻ = max(0, log((1 − β⁺)/α⁺)), ε_L⁻ = max(0, log((1 − α⁺)/β⁺)), with α⁺, β⁺ the one-sided
    exact Clopper–Pearson upper limits of the false-positive rate X/N0 and false-negative rate
    Y/N1 at level 1 − (1 − confidence)/2 each (Bonferroni). Valid for any attack whose counts are
    binomial given the mechanism (module docstring); vectorised over nodes; float64 inside.
    Traceable: inside ``jax.jit``/``jax.vmap`` (e.g. over a vector of priors upstream) the checks
    are skipped and the core runs in the default float dtype (module docstring: float32 keeps
    the bound valid with a small margin; enable x64 for the eager figures).

    Args:
      counts: ``ErrorCounts(fp, n0, fn, n1)`` of scalars or per-node arrays (n0, n1 ≥ 1).
      confidence: joint confidence level c in (0, 1).

    Returns:
      :class:`CertifiedEpsilons` (arrays shaped like the counts, in the default float dtype,
      rounded towards the conservative side).

    Example:
      >>> from jaxaudit.mia.types import ErrorCounts
      >>> cert = certified_epsilons(ErrorCounts(5, 100, 40, 100))
      >>> bool(0 < cert.eps_r < 2.5), bool(cert.fpr_upper > 0.05)
      (True, True)
    """
    if is_traced(counts, confidence):
        counts = validate_counts(counts)  # shapes only
        dtype = jnp.result_type(float)
        if is_traced(confidence):
            tail = (1.0 - jnp.asarray(confidence, dtype)) / 2.0  # exact for c >= 0.5
        else:
            tail = _rounded_down((1.0 - float(confidence)) / 2.0, dtype)
        eps_l, eps_r, a_hi, b_hi = _certified(*(jnp.asarray(c, dtype) for c in counts),
                                              1.0 - tail, tail)
        return CertifiedEpsilons(eps_l, eps_r, a_hi, b_hi, confidence)
    confidence = float(check_finite("confidence", confidence))
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    counts = validate_counts(counts)
    level = 1.0 - (1.0 - confidence) / 2.0
    with jax.enable_x64(True):
        args = [jnp.asarray(c, jnp.float64) for c in counts]
        eps_l, eps_r, a_hi, b_hi = _certified(*args, jnp.float64(level))
        eps_l, eps_r, a_hi, b_hi = jax.device_get((eps_l, eps_r, a_hi, b_hi))
    return CertifiedEpsilons(_to_default_float(eps_l, up=False), _to_default_float(eps_r, up=False),
                             _to_default_float(a_hi, up=True), _to_default_float(b_hi, up=True),
                             confidence)
