"""Leave-one-out LiRA over shadow models (docs/gnn_mia.md).

Every model r in turn is the target; the other R − 1 models are its shadows. For node i, the
shadow scores split into IN (i was in the shadow's sample) and OUT; LiRA fits Gaussians
N(μ_in, σ_in²) and N(μ_out, σ_out²) to them and scores the target's observation s_ri by the
log-likelihood ratio ``Λ_ri = log N(s_ri; μ_in, σ_in²) − log N(s_ri; μ_out, σ_out²)``.

References:
  Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022,
  arXiv 2112.03570.
"""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, check_scores_and_masks, is_traced

__all__ = ["lira_loo"]

_VAR_FLOOR = 1e-6
# Scores are rescaled by a power of two (exact) so that max |s| < 2^40 before any moment is
# formed: the squares stay far below float32's 3.4e38 (Λ is invariant under s -> s / k, so only
# the round-off changes). Ordinary scores (|s| < 2^40) are not rescaled at all.
_MAX_EXPONENT = 40
# the variance floor in rescaled units never drops below 2^-38 (an sd of 2^-19: below float32's
# resolution of scores near 2^40), so (s - μ)/σ stays finite
_SCALED_VAR_FLOOR = 2.0 ** -38


def _loo_moments(x: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Leave-one-out count, mean and (unbiased) variance over axis 0 of the entries with w = 1."""
    n = jnp.sum(w, 0) - w
    s1 = jnp.sum(w * x, 0) - w * x
    s2 = jnp.sum(w * x * x, 0) - w * x * x
    mean = s1 / jnp.maximum(n, 1.0)
    var = (s2 - n * mean * mean) / jnp.maximum(n - 1.0, 1.0)
    return n, mean, jnp.maximum(var, 0.0)


def _power_of_two_scale(x: jax.Array) -> jax.Array:
    """k = 2^-e with max |x| k < 2^_MAX_EXPONENT, and k = 1 when max |x| is already below it."""
    _, exponent = jnp.frexp(jnp.max(jnp.abs(x)))  # max |x| = m 2^exponent, m in [0.5, 1)
    shift = jnp.maximum(exponent - _MAX_EXPONENT, 0)
    return jax.lax.stop_gradient(jnp.ldexp(jnp.ones((), x.dtype), -shift))


@jax.jit(static_argnames=("fix_variance",))
def _lira_loo(scores: ArrayLike, masks: ArrayLike, fix_variance: bool = False) -> jax.Array:
    """Unvalidated, traceable core of :func:`lira_loo` ((R, N) scores, (R, N) bool masks)."""
    x = jnp.asarray(scores).astype(jnp.float32)
    masks = jnp.asarray(masks).astype(bool)
    scale = _power_of_two_scale(x)
    x = x * scale
    # centre per node for numerically stable moment sums
    x = x - jnp.mean(x, axis=0)
    m_in = masks.astype(jnp.float32)
    m_out = 1.0 - m_in
    n_in, mu_in, var_in = _loo_moments(x, m_in)
    n_out, mu_out, var_out = _loo_moments(x, m_out)
    if fix_variance:
        # one IN and one OUT variance pooled over nodes (per target model)
        def pooled(n: jax.Array, var: jax.Array) -> jax.Array:
            dof = jnp.maximum(n - 1.0, 0.0)
            return jnp.sum(dof * var, axis=1, keepdims=True) / jnp.maximum(
                jnp.sum(dof, axis=1, keepdims=True), 1.0)

        var_in = jnp.broadcast_to(pooled(n_in, var_in), x.shape)
        var_out = jnp.broadcast_to(pooled(n_out, var_out), x.shape)
    else:
        # nodes with < 2 IN (OUT) shadows borrow the pooled variance
        def fallback(n: jax.Array, var: jax.Array) -> jax.Array:
            dof = jnp.maximum(n - 1.0, 0.0)
            pool = jnp.sum(dof * var, axis=1, keepdims=True) / jnp.maximum(
                jnp.sum(dof, axis=1, keepdims=True), 1.0)
            return jnp.where(n >= 2, var, pool)

        var_in = fallback(n_in, var_in)
        var_out = fallback(n_out, var_out)
    floor = jnp.maximum(_VAR_FLOOR * scale * scale, _SCALED_VAR_FLOOR)  # 1e-6 when unscaled
    var_in = jnp.maximum(var_in, floor)
    var_out = jnp.maximum(var_out, floor)
    llr = (distrax.Normal(mu_in, jnp.sqrt(var_in)).log_prob(x)
           - distrax.Normal(mu_out, jnp.sqrt(var_out)).log_prob(x))
    # without IN or without OUT shadows there is no evidence: Λ = 0 (the prior decides)
    return jnp.where((n_in >= 1) & (n_out >= 1), llr, 0.0)


def lira_loo(scores: ArrayLike, masks: ArrayLike, *, fix_variance: bool = False) -> jax.Array:
    """Leave-one-out LiRA log-likelihood ratios Λ_ri for every (target model r, node i).

    For target r and node i the IN and OUT Gaussians are fitted on the other models only
    (unbiased variances); ``fix_variance=True`` replaces the per-node variances by one IN and one
    OUT variance pooled over all nodes (LiRA's fixed-variance variant, better with few shadows).
    Nodes with fewer than 2 IN (OUT) shadows use the pooled variance; nodes with no IN or no OUT
    shadow get Λ = 0 (no evidence).

    Λ does not change when every score is multiplied by one constant, so scores of any finite
    magnitude are rescaled by a power of two first (only when max |s| ≥ 2^40; exact, and it keeps
    the squared moments finite in float32); the variance floor (1e−6 in the scores' units) never
    falls below float32 resolution at that scale.

    Traceable: inside ``jax.jit``/``jax.vmap``/``jax.grad`` (e.g. Λ's gradient with respect to
    the scores) the checks below are skipped and the core just computes.

    Args:
      scores: (R, N) per-model per-node scores (e.g. the true-class logit).
      masks: (R, N) bool memberships.
      fix_variance: pool the variances over nodes.

    Returns:
      (R, N) float32 log-likelihood ratios.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> masks = jax.random.bernoulli(jax.random.key(0), 0.5, (16, 3))
      >>> scores = masks + 0.1 * jax.random.normal(jax.random.key(1), (16, 3))
      >>> bool((lira_loo(scores, masks) > 0)[masks].mean() > 0.9)
      True
    """
    check_scores_and_masks(scores, masks)
    if jnp.shape(scores)[0] < 2:
        raise ValueError(f"scores needs at least 2 models (R >= 2), got {jnp.shape(scores)[0]}")
    if not is_traced(scores, masks):
        # one inf score would reach every node's column through the pooled variance
        check_finite("scores", scores)
        scores, masks = jnp.asarray(scores), jnp.asarray(masks, bool)
    return _lira_loo(scores, masks, bool(fix_variance))
