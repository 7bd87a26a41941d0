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
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc

from jaxaudit._validation import check_finite
from jaxaudit.mia.types import validate_counts

__all__ = ["CertifiedEpsilons", "certified_epsilons", "clopper_pearson_upper"]

_BISECTION_STEPS = 64  # the bracket [0, 1] halves 64 times: below float64 resolution


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


def _cp_upper(k, n, level):
    """Upper Clopper–Pearson limit: the p with I_p(k + 1, n − k) = level (1 when k = n)."""
    a = k + 1.0
    b = jnp.maximum(n - k, 1.0)  # placeholder where k = n (answer 1)

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        below = betainc(a, b, mid) < level  # I_p increases in p
        return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, _BISECTION_STEPS, body, (jnp.zeros_like(a), jnp.ones_like(a)))
    return jnp.where(k >= n, 1.0, hi)


@jax.jit
def _certified(fp, n0, fn, n1, level):
    a_hi = _cp_upper(fp, n0, level)
    b_hi = _cp_upper(fn, n1, level)
    # log((1 − β⁺)/α⁺) with log(0) = −inf where β⁺ = 1 (no certificate): clipped at 0 below
    eps_r = jnp.maximum(jnp.log1p(-b_hi) - jnp.log(a_hi), 0.0)
    eps_l = jnp.maximum(jnp.log1p(-a_hi) - jnp.log(b_hi), 0.0)
    return eps_l, eps_r, a_hi, b_hi


def clopper_pearson_upper(k, n, *, level: float = 0.95):
    """One-sided exact upper confidence limit of a binomial proportion: Pr(p ≤ p⁺) ≥ ``level``.

    p⁺ = B⁻¹(level; k + 1, n − k) (Clopper & Pearson 1934), 1 when k = n; float64 bisection on
    the regularised incomplete beta function (the returned value is ≥ the exact quantile).

    Example:
      >>> round(float(clopper_pearson_upper(0, 10, level=0.95)), 4)  # 1 − 0.05^(1/10)
      0.2589
    """
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
