"""Certified lower bounds on (ε_L, ε_R) from attack error counts: exact Clopper–Pearson limits on
the false-positive and false-negative rates pushed through the inverse map of the BMP region.

If a learner is (ε_L, ε_R)-BMP for node i, every membership test's operating point (α, β) lies in
R(ε_L, ε_R), so (Yıldırım & Khosla, arXiv 2606.04069, the region's inverse; Kairouz, Oh &
Viswanath, arXiv 1311.0776, for the symmetric case)

    ε_R ≥ log((1 − β)/α) = log(TPR/FPR),    ε_L ≥ log((1 − α)/β) = log(TNR/FNR).

Both right-hand sides decrease in α and in β. With one-sided exact Clopper–Pearson upper limits
α⁺ (from X false positives among N0 non-member runs) and β⁺ (from Y false negatives among N1
member runs), each at confidence 1 − (1 − c)/2,

    ε_R ≥ ε_R⁻ = max(0, log((1 − β⁺)/α⁺)),    ε_L ≥ ε_L⁻ = max(0, log((1 − α⁺)/β⁺))

hold *jointly* with probability ≥ c whenever the counts are binomial, whatever the attack
(Bonferroni: Pr(α > α⁺ or β > β⁺) ≤ (1 − c)/2 + (1 − c)/2; no independence of X and Y is used).
Unlike the posterior this needs no model of the attack's strength; it is loose when the attack is
weak, and it certifies only what the attack shows.

Clopper–Pearson (Clopper & Pearson, Biometrika 1934): α⁺ = B⁻¹(c'; X + 1, N0 − X), the c'
quantile of Beta(X + 1, N0 − X) at the one-sided confidence c' = 1 − (1 − c)/2, and α⁺ = 1
when X = N0. Computed here by bisection on the
regularised incomplete beta function in float64, returning the upper end of the final bracket, so
rounding errs on the conservative (larger α⁺) side.

Inside ``jax.jit``/``jax.vmap`` the checks are skipped and the same core runs in JAX's default
float dtype: with ``jax_enable_x64`` the figures equal the eager ones; in float32 (the default)
the bisection compares the upper tail Q = 1 − I_p(a, b) = I_{1−p}(b, a) with 1 − c', taking
Q·(1 + r), r = 48 (a + b + 2) ε₃₂, for Q: a margin above the relative error of float32
``betainc`` (measured ≤ 33 (a + b) ε₃₂ for a + b ≤ 10, ≤ 21 (a + b) ε₃₂ up to a + b = 10⁵,
against scipy, one-sided confidences 0.5 to 1 − 5·10⁻⁶), so α⁺ stays ≥ the exact limit. The margin grows with
N: up to N ≈ 10³ the float32 limit is within 10⁻⁴ of the exact one, beyond that it is
looser (enable x64 there). The ε⁻ are lowered by a bound on the round-off of their logs.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, is_traced
from jaxaudit.mia.types import ErrorCounts, validate_counts
from jaxaudit.stats.binomial import cp_upper_core, round_down

__all__ = ["CertifiedEpsilons", "certified_epsilons"]


class CertifiedEpsilons(NamedTuple):
    """Per-node certified lower bounds (node axis as in the counts).

    Attributes:
      epsilon_left, epsilon_right: lower bounds ε_L⁻, ε_R⁻ (≥ 0), jointly valid with probability
        ≥ ``confidence``.
      fpr_upper, fnr_upper: the Clopper–Pearson upper limits α⁺, β⁺ used.
      confidence: the joint confidence c (coverage of the pair).
    """

    epsilon_left: jax.Array
    epsilon_right: jax.Array
    fpr_upper: jax.Array
    fnr_upper: jax.Array
    confidence: float


@jax.jit
def _certified(fp, n0, fn, n1, side_confidence, tail=None):
    """Unvalidated, traceable core of :func:`certified_epsilons` (float counts, one-sided
    confidence
    1 − (1 − c)/2, optionally its tail (1 − c)/2)."""
    failure = 1.0 - side_confidence if tail is None else tail
    a_hi = cp_upper_core(fp, n0, failure)
    b_hi = cp_upper_core(fn, n1, failure)
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


def _to_default_float(x: ArrayLike, *, up: bool) -> jax.Array:
    """float64 → the default float dtype, rounded up (``up``) or down so that bounds stay valid."""
    x = np.asarray(x, np.float64)
    dtype = jnp.result_type(float)
    y = x.astype(dtype)
    if dtype != np.float64:
        wrong = (y < x) if up else (y > x)
        y = np.where(wrong, np.nextafter(y, np.asarray(np.inf if up else -np.inf, dtype)), y)
    return jnp.asarray(y)


def certified_epsilons(counts: ErrorCounts, *, confidence: float = 0.95) -> CertifiedEpsilons:
    """Certified lower bounds on (ε_L, ε_R) per node, jointly valid with probability ≥ confidence.

    ε_R⁻ = max(0, log((1 − β⁺)/α⁺)), ε_L⁻ = max(0, log((1 − α⁺)/β⁺)), with α⁺, β⁺ the one-sided
    exact Clopper–Pearson upper limits of the false-positive rate X/N0 and false-negative rate
    Y/N1 at confidence 1 − (1 − confidence)/2 each (Bonferroni). Valid for any attack whose counts are
    binomial given the mechanism (module docstring); vectorised over nodes; float64 inside.
    Traceable: inside ``jax.jit``/``jax.vmap`` (e.g. over a vector of priors upstream) the checks
    are skipped and the core runs in the default float dtype (module docstring: float32 keeps
    the bound valid with a small margin; enable x64 for the eager figures).

    Args:
      counts: ``ErrorCounts(fp, n0, fn, n1)`` of scalars or per-node arrays (n0, n1 ≥ 1).
      confidence: joint confidence c in (0, 1) (coverage of the pair).

    Returns:
      :class:`CertifiedEpsilons` (arrays shaped like the counts, in the default float dtype,
      rounded towards the conservative side).

    Example:
      >>> from jaxaudit.mia.types import ErrorCounts
      >>> cert = certified_epsilons(ErrorCounts(5, 100, 40, 100))
      >>> bool(0 < cert.epsilon_right < 2.5), bool(cert.fpr_upper > 0.05)
      (True, True)
    """
    if is_traced(counts, confidence):
        counts = validate_counts(counts)  # shapes only
        dtype = jnp.result_type(float)
        if is_traced(confidence):
            tail = (1.0 - jnp.asarray(confidence, dtype)) / 2.0  # exact for c >= 0.5
        else:
            tail = round_down((1.0 - float(confidence)) / 2.0, dtype)
        eps_l, eps_r, a_hi, b_hi = _certified(*(jnp.asarray(c, dtype) for c in counts),
                                              1.0 - tail, tail)
        return CertifiedEpsilons(eps_l, eps_r, a_hi, b_hi, confidence)
    confidence = float(np.asarray(check_finite("confidence", confidence)))
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    counts = validate_counts(counts)
    side_confidence = 1.0 - (1.0 - confidence) / 2.0
    with jax.enable_x64(True):
        args = [jnp.asarray(c, jnp.float64) for c in counts]
        eps_l, eps_r, a_hi, b_hi = _certified(*args, jnp.float64(side_confidence),
                                              jnp.float64((1.0 - confidence) / 2.0))
        eps_l, eps_r, a_hi, b_hi = jax.device_get((eps_l, eps_r, a_hi, b_hi))
    return CertifiedEpsilons(_to_default_float(eps_l, up=False), _to_default_float(eps_r, up=False),
                             _to_default_float(a_hi, up=True), _to_default_float(b_hi, up=True),
                             confidence)
