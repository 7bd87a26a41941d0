"""Leave-one-out LiRA over shadow models, online and offline (docs/gnn_mia.md).

Every model r in turn is the target; the other R − 1 models are its shadows. For node i, the
shadow scores split into IN (i was in the shadow's sample) and OUT; LiRA fits Gaussians
N(μ_in, σ_in²) and N(μ_out, σ_out²) to them and scores the target's observation s_ri by the
log-likelihood ratio ``Λ_ri = log N(s_ri; μ_in, σ_in²) − log N(s_ri; μ_out, σ_out²)``
(:func:`lira_loo`). Offline LiRA (:func:`lira_offline`) ranks by the OUT fit alone.

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

__all__ = ["lira_loo", "lira_offline"]

_VAR_FLOOR = 1e-6
# Scores are rescaled by a power of two (exact) so that max |s| < 2^40 before any moment is
# formed: the squares stay far below float32's 3.4e38 (Λ is invariant under s -> s / k, so only
# the round-off changes). Ordinary scores (|s| < 2^40) are not rescaled at all.
_MAX_EXPONENT = 40
# the variance floor in rescaled units never drops below 2^-38 (an sd of 2^-19: below float32's
# resolution of scores near 2^40), so (s - μ)/σ stays finite
_SCALED_VAR_FLOOR = 2.0 ** -38


def _checked(scores: ArrayLike, masks: ArrayLike, *, min_models: int) -> tuple[ArrayLike, ArrayLike]:
    """``scores`` and ``masks`` checked (matching (R, N) shapes, R >= ``min_models``, finite
    scores: one inf score would reach every node's column through the pooled variance), as
    arrays; traced inputs pass through."""
    check_scores_and_masks(scores, masks)
    if jnp.shape(scores)[0] < min_models:
        raise ValueError(f"scores needs at least {min_models} models (R >= {min_models}), "
                         f"got {jnp.shape(scores)[0]}")
    if is_traced(scores, masks):
        return scores, masks
    check_finite("scores", scores)
    return jnp.asarray(scores), jnp.asarray(masks, bool)


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
    scores, masks = _checked(scores, masks, min_models=2)
    return _lira_loo(scores, masks, bool(fix_variance))


# --------------------------------------------------------------------------------------------
# Offline LiRA and the calibration of a membership statistic to a log-likelihood-ratio scale
# (shared with jaxaudit.mia.rmia)


def _weighted_moments(x: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Count, mean and unbiased variance over axis 0 of the entries of ``x`` with weight 1."""
    n = jnp.sum(w, 0)
    mean = jnp.sum(w * x, 0) / jnp.maximum(n, 1.0)
    var = jnp.sum(w * (x - mean) ** 2, 0) / jnp.maximum(n - 1.0, 1.0)
    return n, mean, var


def _pooled_variance(n: jax.Array, var: jax.Array) -> jax.Array:
    dof = jnp.maximum(n - 1.0, 0.0)
    return jnp.sum(dof * var) / jnp.maximum(jnp.sum(dof), 1.0)


def _calibrate_row(target: jax.Array, ref: jax.Array, in_w: jax.Array, out_w: jax.Array,
                   calibration: str, fix_variance: bool) -> jax.Array:
    """Map a target model's statistic ``target`` (N,) to a log-likelihood ratio, fitted on the
    reference models' statistics ``ref`` (R, N) with IN / OUT weights ``in_w``, ``out_w`` (R, N)
    (zero on the target's own row).

    ``"node"``: per node, Gaussians fitted to the IN and OUT reference statistics, Λ = log N_in −
    log N_out (LiRA's fit, applied to the statistic; ``fix_variance`` pools the variances over
    nodes; nodes with < 2 IN (OUT) references borrow the pooled variance; no IN or no OUT
    reference: Λ = 0). ``"kde"``: per node, Gaussian kernel density estimates of the IN and OUT
    reference statistics (Silverman's bandwidth 1.06 σ n^(−1/5), σ as in ``"node"``, pooled over nodes with
    ``fix_variance``), Λ = log f̂_in − log f̂_out (no shape assumed; needs more references than
    the Gaussian fit). ``"global"``: one pair of Gaussians with a common variance, fitted to every
    node's IN and OUT references (linear discriminant analysis), so Λ = (μ₁ − μ₀)/σ² (t − (μ₀ +
    μ₁)/2) is increasing in t when μ₁ > μ₀: the statistic's ranking within the row is kept.
    """
    centre = jnp.sum((in_w + out_w) * ref, 0) / jnp.maximum(jnp.sum(in_w + out_w, 0), 1.0)
    x = ref - centre
    t = target - centre
    if calibration == "global":
        # the global fit needs no per-node centring; undo it so nodes share one scale
        x, t = ref, target
        n1, n0 = jnp.sum(in_w), jnp.sum(out_w)
        mu1 = jnp.sum(in_w * x) / jnp.maximum(n1, 1.0)
        mu0 = jnp.sum(out_w * x) / jnp.maximum(n0, 1.0)
        ss = jnp.sum(in_w * (x - mu1) ** 2) + jnp.sum(out_w * (x - mu0) ** 2)
        var = jnp.maximum(ss / jnp.maximum(n1 + n0 - 2.0, 1.0), _VAR_FLOOR)
        llr = (mu1 - mu0) / var * (t - 0.5 * (mu0 + mu1))
        return jnp.where((n1 >= 1) & (n0 >= 1), llr, 0.0)
    n_in, mu_in, var_in = _weighted_moments(x, in_w)
    n_out, mu_out, var_out = _weighted_moments(x, out_w)
    pool_in, pool_out = _pooled_variance(n_in, var_in), _pooled_variance(n_out, var_out)
    if calibration == "kde":
        def log_density(w: jax.Array, n: jax.Array, var: jax.Array, pool: jax.Array
                        ) -> jax.Array:
            # Gaussian kernels, Silverman's bandwidth h = 1.06 σ n^(-1/5) per node
            var = pool if fix_variance else jnp.where(n >= 2, var, pool)
            sd = jnp.sqrt(jnp.maximum(var, _VAR_FLOOR))
            h = 1.06 * sd * jnp.maximum(n, 1.0) ** -0.2
            log_k = jax.scipy.stats.norm.logpdf(t, x, h)  # (R, N): kernel at every reference
            log_k = jnp.where(w > 0, log_k, -jnp.inf)
            return jax.nn.logsumexp(log_k, axis=0) - jnp.log(jnp.maximum(n, 1.0))

        llr = (log_density(in_w, n_in, var_in, pool_in)
               - log_density(out_w, n_out, var_out, pool_out))
        return jnp.where((n_in >= 1) & (n_out >= 1), llr, 0.0)
    if fix_variance:
        var_in = jnp.broadcast_to(pool_in, t.shape)
        var_out = jnp.broadcast_to(pool_out, t.shape)
    else:
        var_in = jnp.where(n_in >= 2, var_in, pool_in)
        var_out = jnp.where(n_out >= 2, var_out, pool_out)
    var_in = jnp.maximum(var_in, _VAR_FLOOR)
    var_out = jnp.maximum(var_out, _VAR_FLOOR)
    llr = (distrax.Normal(mu_in, jnp.sqrt(var_in)).log_prob(t)
           - distrax.Normal(mu_out, jnp.sqrt(var_out)).log_prob(t))
    return jnp.where((n_in >= 1) & (n_out >= 1), llr, 0.0)


def _offline_z(x: jax.Array, out_w: jax.Array, fix_variance: bool) -> jax.Array:
    """Offline LiRA's statistic (s − μ_out)/σ_out for every row k of ``x`` (R, N), the OUT
    Gaussian fitted on the other rows' entries of weight ``out_w`` (R, N) (leave-one-out: row k
    never fits itself; a row of zero weight is left out of every fit)."""
    n, mu, var = _loo_moments(x, out_w)
    pool = jnp.sum(jnp.maximum(n - 1.0, 0.0) * var, axis=1, keepdims=True) / jnp.maximum(
        jnp.sum(jnp.maximum(n - 1.0, 0.0), axis=1, keepdims=True), 1.0)
    var = jnp.broadcast_to(pool, x.shape) if fix_variance else jnp.where(n >= 2, var, pool)
    z = (x - mu) / jnp.sqrt(jnp.maximum(var, _VAR_FLOOR))
    return jnp.where(n >= 1, z, 0.0)


@jax.jit(static_argnames=("fix_variance",))
def _lira_offline(scores: ArrayLike, masks: ArrayLike, fix_variance: bool = False) -> jax.Array:
    """Unvalidated, traceable core of :func:`lira_offline` ((R, N) scores, (R, N) bool masks)."""
    x = jnp.asarray(scores).astype(jnp.float32)
    masks = jnp.asarray(masks).astype(bool)
    x = x * _power_of_two_scale(x)
    x = x - jnp.mean(x, axis=0)
    m_in = masks.astype(jnp.float32)
    num_models = x.shape[0]

    def one_target(r: jax.Array) -> jax.Array:
        keep = (jnp.arange(num_models) != r).astype(jnp.float32)[:, None]  # (R, 1)
        out_w = keep * (1.0 - m_in)
        # z of every model with OUT fits that leave out both it and the target r; the target's
        # own row (keep = 0) is fitted on the other models only, as in lira_loo
        z = _offline_z(x, out_w, fix_variance)
        return _calibrate_row(z[r], z, keep * m_in, out_w, "global", False)

    return jax.lax.map(one_target, jnp.arange(num_models))


def lira_offline(scores: ArrayLike, masks: ArrayLike, *, fix_variance: bool = False) -> jax.Array:
    """Leave-one-out offline LiRA, on a log-likelihood-ratio scale, for every (model r, node i).

    Offline LiRA (Carlini et al., arXiv 2112.03570, Sec. VI-C) uses OUT shadows only: the
    statistic is the target's score standardised by the OUT Gaussian fitted on the other models,
    ``z_ri = (s_ri − μ_out,i) / σ_out,i`` (one-sided test: larger = member; ``fix_variance=True``
    pools σ_out over nodes). The ranking — hence the ROC curve, AUC and TPR at low FPR — uses no
    IN shadow. To make ``bayes_decision(Λ, η)`` meaningful, z is mapped to a log-likelihood
    ratio by a linear fit (our choice, docs/gnn_mia.md): Gaussians with a common variance fitted
    to the IN and OUT z-scores of the other models, pooled over nodes,
    ``Λ_ri = (μ₁ − μ₀)/σ² (z_ri − (μ₀ + μ₁)/2)``. Leave-one-out throughout: model r's membership
    enters neither its z-scores nor the fit (the references' z-scores are computed without model
    r as well), so row r of the result does not depend on row r of ``masks``.

    Traceable (jit/vmap/grad) like :func:`lira_loo`; R ≥ 3 (a reference model needs another OUT
    shadow besides itself and the target).

    Args:
      scores: (R, N) per-model per-node scores (e.g. the true-class logit).
      masks: (R, N) bool memberships.
      fix_variance: pool the OUT variance over nodes.

    Returns:
      (R, N) float32 log-likelihood ratios (higher = more likely a member).
    """
    scores, masks = _checked(scores, masks, min_models=3)
    return _lira_offline(scores, masks, bool(fix_variance))
