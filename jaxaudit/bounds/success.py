"""Per-target posterior success under pure ε-DP: β(ε, p) and the gain over the prior.

For an ε-DP mechanism and a target whose guess succeeds with prior probability p (the prior mass
of the guess's success set), the probability that the guess succeeds after seeing the output is
at most

    β(ε, p) = e^ε p / (1 + (e^ε − 1) p) = e^ε / (e^ε − 1 + 1/p) = sigmoid(ε + logit p).

β is increasing in ε and in p, so any upper bound on p gives a valid β. All functions here are
pure ``jax.numpy`` code: they broadcast, jit and vmap, and compute in the promoted dtype of their
inputs (float32 by default; the sigmoid-of-logit form is stable there, with p = 0 ↦ 0 and
p = 1 ↦ 1 exactly). Arguments are validated when concrete (outside jit); concrete calls of
:func:`posterior_success` are evaluated in float64 and rounded *up* into the returned dtype, so a
float32 result is never below the exact bound. Subnormal priors keep their logarithm (XLA on CPU
flushes subnormals to 0; ``_numerics.safe_log`` reads them from their bits); inside ``jit`` with
x64 off everything is float32, where priors below ≈ 1.4e−45 underflow: enable x64 for such priors.

References:
  Swanberg, Annamalai, Hayes, Balle, Smith. "A Unified Framework for Adversary-Aware
  Differential Privacy Bounds." arXiv:2507.08158, 2025/2026.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit._rounding import upper_bound
from jaxaudit._validation import (
    check_nonnegative,
)
from jaxaudit.bounds._numerics import checked_upper_bound, safe_logit

__all__ = [
    "posterior_success",
    "gain",
    "gain_ratio",
    "max_gain",
    "max_gain_prior",
]


@checked_upper_bound(broadcast=True)
def posterior_success(prior: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """β(ε, p) = sigmoid(ε + logit p): the largest posterior success of a guess with prior p.

    Args:
      prior: baseline success probability p ∈ [0, 1] (array; broadcasts with ``epsilon``).
      epsilon: ε ≥ 0 (+inf allowed: β = 1 for p > 0).

    Returns:
      β with the broadcast shape; β(ε, 0) = 0 and β(ε, 1) = 1.

    Raises:
      ValueError: prior outside [0, 1] or NaN; ε < 0 or NaN.

    Examples:
      >>> round(float(posterior_success(0.5, 1.0)), 6)   # e/(1 + e)
      0.731059
    """
    # Concrete inputs are evaluated in float64 and rounded up into the promoted dtype: a float32
    # cast (or flush-to-zero of a subnormal) would turn p = 3e-39 into 0 and β(100, p) ≈ 1 into 0.
    return _beta(prior, epsilon)


@jax.custom_jvp
def _beta(p, eps):
    p, eps = jnp.broadcast_arrays(p, eps)
    logit_p = safe_logit(p)
    beta = jax.nn.sigmoid(eps + logit_p)
    # p = 0 read from the logit (−inf): ``p == 0`` holds for a subnormal p when XLA flushes it
    is_zero, is_one = logit_p == -jnp.inf, p == 1
    beta = jnp.where(is_zero, jnp.zeros_like(beta), jnp.where(is_one, jnp.ones_like(beta), beta))
    # out of the domain (reachable only traced: concrete calls are checked): NaN, as for p > 1,
    # not a β below the prior (ε < 0) or 0 (p < 0, whose logit is read as −inf)
    return jnp.where((p < 0) | (eps < 0), jnp.full_like(beta, jnp.nan), beta)


@_beta.defjvp
def _beta_jvp(primals, tangents):
    """β's exact derivatives, also at p = 0 and p = 1 (where the sigmoid-of-logit form gives
    0 and NaN): ∂β/∂p = e^ε/(1 + (e^ε − 1)p)² = e^{−ε}/(p + e^{−ε}(1 − p))² (e^ε at p = 0,
    e^{−ε} at p = 1) and ∂β/∂ε = β(1 − β)."""
    p, eps = primals
    # an integer ε (or p) has a float0 tangent: it is not differentiated
    dp, deps = (jnp.zeros(jnp.shape(x), jnp.result_type(float)) if t.dtype == jax.dtypes.float0
                else t for t, x in zip(tangents, primals, strict=True))
    beta = _beta(p, eps)
    w = jnp.exp(-eps)
    return beta, w / jnp.square(p + w * (1.0 - p)) * dp + beta * (1.0 - beta) * deps


_posterior_success = jax.jit(_beta)


@checked_upper_bound(broadcast=True)
def gain(prior: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Per-target gain β(ε, p) − p: how much the output can raise the success probability.

    Its maximum over p is tanh(ε/4) (see :func:`max_gain`).

    Examples:
      >>> round(float(gain(0.5, 1.0)), 6)
      0.231059
    """
    # an upper bound on the gain: evaluated in float64 and rounded up (β − p in float32 would
    # lose the rounding-up of β in the subtraction)
    return _posterior_success(prior, epsilon) - prior


@checked_upper_bound(broadcast=True)
def gain_ratio(prior: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """β(ε, p)/p = e^ε/(1 + (e^ε − 1)p), with the limit e^ε at p = 0.

    Examples:
      >>> round(float(gain_ratio(0.0, 1.0)), 6)
      2.718282
    """
    # 1/(p + e^{−ε}(1 − p)): no overflow for large ε, 1/p at ε = ∞, e^ε at p = 0.
    p, eps = jnp.asarray(prior), jnp.asarray(epsilon)
    return 1.0 / (p + jnp.exp(-eps) * (1.0 - p))


def max_gain(epsilon: ArrayLike) -> jax.Array:
    """max_p (β(ε, p) − p) = tanh(ε/4), attained at p* = sigmoid(−ε/2).

    Proof sketch: with x = logit p, β − p = sigmoid(x + ε) − sigmoid(x) is maximal where the two
    sigmoid densities agree, x = −ε/2, giving sigmoid(ε/2) − sigmoid(−ε/2) = tanh(ε/4).

    Examples:
      >>> round(float(max_gain(1.0)), 6)
      0.244919
    """
    check_nonnegative("epsilon", epsilon)
    # float64 then rounded up: tanh(1/4) in float32 rounds *down* to 0.2449186593
    return upper_bound(_max_gain, epsilon)


@jax.jit
def _max_gain(eps):
    return jnp.tanh(eps / 4.0)


def max_gain_prior(epsilon: ArrayLike) -> jax.Array:
    """The prior p* = sigmoid(−ε/2) at which the gain β − p is largest.

    Examples:
      >>> round(float(max_gain_prior(1.0)), 6)
      0.377541
    """
    check_nonnegative("epsilon", epsilon)
    eps = jnp.asarray(epsilon)
    return jax.nn.sigmoid(-eps.astype(jnp.result_type(eps, float)) / 2.0)
