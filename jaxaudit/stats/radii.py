"""Concentration radii for the mean of bounded variables: Hoeffding and empirical Bernstein.

For n i.i.d. variables in an interval of length R and failure probability β = 1 − confidence,

    Hoeffding (JASA 1963, Theorem 2):    P(mean − E ≥ r) ≤ β for r = R sqrt(log(1/β)/(2n));
    empirical Bernstein (Maurer & Pontil, arXiv 0907.3740, Theorem 4):
        E ≤ mean + sqrt(2 V̂ log(2/β)/n) + 7 R log(2/β)/(3(n − 1)) with probability ≥ 1 − β,

V̂ the unbiased sample variance. The renyi estimators (``renyi.confidence``) and the run planner
(``renyi.planning``) use these cores.

References:
  Hoeffding, "Probability inequalities for sums of bounded random variables", JASA 1963.
  Maurer, Pontil, "Empirical Bernstein Bounds and Sample Variance Penalization", COLT 2009
  (arXiv 0907.3740).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_broadcast,
    check_finite,
    check_nonnegative_finite,
    check_positive,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit.stats.numerics import float_arrays

__all__ = ["hoeffding_radius", "bernstein_radius"]

# ``hoeffding_failure_radius`` and ``bernstein_failure_radius`` take the failure probability
# β itself (no 1 − confidence rounding): the traceable cores that ``renyi`` builds on.


def _failure(confidence: ArrayLike | None) -> ArrayLike:
    """β = 1 − confidence; a concrete confidence is checked to lie in [0, 1)."""
    if confidence is None:
        raise ValueError("confidence is required (e.g. confidence=0.95)")
    if not is_traced(confidence):
        confidence = check_probability("confidence", confidence, open_high=True)
    return 1.0 - confidence


def hoeffding_failure_radius(n: ArrayLike, value_range: ArrayLike, failure: ArrayLike
                             ) -> jax.Array:
    """range · sqrt(log(1/β)/(2n)), β = ``failure``. Unvalidated, traceable."""
    return jnp.asarray(value_range) * jnp.sqrt(-jnp.log(failure) / (2.0 * n))


def hoeffding_radius(n: ArrayLike, value_range: ArrayLike, *,
                     confidence: ArrayLike | None = None) -> jax.Array:
    """One-sided Hoeffding radius: P(mean − E ≥ r) ≤ β for r = range·sqrt(log(1/β)/(2n)),
    β = 1 − confidence.

    Hoeffding (JASA 1963), Theorem 2. Works inside jit/vmap/grad (traced arguments are not
    checked).

    Args:
      n: sample size > 0.
      value_range: b − a ≥ 0 for variables in [a, b].
      confidence: one-sided coverage 1 − β ∈ [0, 1) (β below ~1e−16 cannot be expressed this
        way in float64: :func:`hoeffding_failure_radius` takes β directly). Confidence 1
        would need an infinite radius and is refused. Required (keyword).

    Examples:
      >>> round(float(hoeffding_radius(100, 1.0, confidence=0.95)), 4)   # sqrt(log 20 / 200)
      0.1224
    """
    failure = _failure(confidence)
    if not is_traced(n, value_range, failure):
        check_positive("n", n)
        check_nonnegative_finite("value_range", value_range)
        check_broadcast(n=n, value_range=value_range, confidence=confidence)
    return hoeffding_failure_radius(*float_arrays(n, value_range, failure))


def bernstein_failure_radius(sample_variance: ArrayLike, n: ArrayLike, value_range: ArrayLike,
                             failure: ArrayLike) -> jax.Array:
    """sqrt(2 V̂ log(2/β)/n) + 7 R log(2/β)/(3(n − 1)), β = ``failure``. Unvalidated, traceable."""
    log_term = jnp.log(2.0) - jnp.log(failure)
    return jnp.sqrt(2.0 * sample_variance * log_term / n) + 7.0 * value_range * log_term / (
        3.0 * (n - 1.0)
    )


def bernstein_radius(sample_variance: ArrayLike, n: ArrayLike, value_range: ArrayLike, *,
                     confidence: ArrayLike | None = None) -> jax.Array:
    """One-sided empirical Bernstein radius of Maurer & Pontil (2009), Theorem 4.

    With probability ≥ 1 − β (β = 1 − confidence), E X ≤ mean + sqrt(2 V̂ log(2/β)/n)
    + 7 R log(2/β)/(3(n − 1)),
    V̂ the unbiased sample variance and R the range (the theorem for [0, 1], rescaled;
    arXiv 0907.3740). Works inside jit/vmap/grad.

    Args:
      sample_variance: V̂ ≥ 0 (denominator n − 1).
      n: sample size (> 1).
      value_range: R ≥ 0.
      confidence: one-sided coverage 1 − β ∈ [0, 1) (:func:`bernstein_failure_radius`
        takes β directly). Required (keyword).

    Examples:
      >>> round(float(bernstein_radius(0.0, 101, 1.0, confidence=0.9)), 4)   # 7 log 20 / 300
      0.0699
    """
    failure = _failure(confidence)
    if not is_traced(sample_variance, n, value_range, failure):
        check_nonnegative_finite("sample_variance", sample_variance)
        n_np = check_finite("n", n)
        if (n_np <= 1).any():
            raise ValueError(f"n must be > 1, got {plain(n_np[n_np <= 1].ravel()[0])}")
        check_nonnegative_finite("value_range", value_range)
        check_broadcast(sample_variance=sample_variance, n=n, value_range=value_range,
                        confidence=confidence)
    return bernstein_failure_radius(*float_arrays(sample_variance, n, value_range, failure))
