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

from jaxaudit._validation import check_finite, check_scores_and_masks

__all__ = ["lira_loo"]

_VAR_FLOOR = 1e-6


def _loo_moments(x, w):
    """Leave-one-out count, mean and (unbiased) variance over axis 0 of the entries with w = 1."""
    n = jnp.sum(w, 0) - w
    s1 = jnp.sum(w * x, 0) - w * x
    s2 = jnp.sum(w * x * x, 0) - w * x * x
    mean = s1 / jnp.maximum(n, 1.0)
    var = (s2 - n * mean * mean) / jnp.maximum(n - 1.0, 1.0)
    return n, mean, jnp.maximum(var, 0.0)


@jax.jit(static_argnames=("fix_variance",))
def _lira_loo(scores, masks, fix_variance):
    x = scores.astype(jnp.float32)
    # centre per node for numerically stable moment sums
    x = x - jnp.mean(x, axis=0)
    m_in = masks.astype(jnp.float32)
    m_out = 1.0 - m_in
    n_in, mu_in, var_in = _loo_moments(x, m_in)
    n_out, mu_out, var_out = _loo_moments(x, m_out)
    if fix_variance:
        # one IN and one OUT variance pooled over nodes (per target model)
        def pooled(n, var):
            dof = jnp.maximum(n - 1.0, 0.0)
            return jnp.sum(dof * var, axis=1, keepdims=True) / jnp.maximum(
                jnp.sum(dof, axis=1, keepdims=True), 1.0)

        var_in = jnp.broadcast_to(pooled(n_in, var_in), x.shape)
        var_out = jnp.broadcast_to(pooled(n_out, var_out), x.shape)
    else:
        # nodes with < 2 IN (OUT) shadows borrow the pooled variance
        def fallback(n, var):
            dof = jnp.maximum(n - 1.0, 0.0)
            pool = jnp.sum(dof * var, axis=1, keepdims=True) / jnp.maximum(
                jnp.sum(dof, axis=1, keepdims=True), 1.0)
            return jnp.where(n >= 2, var, pool)

        var_in = fallback(n_in, var_in)
        var_out = fallback(n_out, var_out)
    var_in = jnp.maximum(var_in, _VAR_FLOOR)
    var_out = jnp.maximum(var_out, _VAR_FLOOR)
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
    # one inf score would reach every node's column through the pooled variance
    check_finite("scores", scores)
    if jnp.shape(scores)[0] < 2:
        raise ValueError(f"scores needs at least 2 models (R >= 2), got {jnp.shape(scores)[0]}")
    return _lira_loo(jnp.asarray(scores), jnp.asarray(masks, bool), bool(fix_variance))
