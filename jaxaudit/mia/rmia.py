"""RMIA, leave-one-out over shadow models, calibrated to a log-likelihood ratio (docs/gnn_mia.md).

Every model r in turn is the target; the other R − 1 models are its reference models (as in
:func:`jaxaudit.mia.lira_loo`). With ``p_r(x)`` the target-class probability of model r at node
x (``sigmoid`` of the true-class-logit score the shadow pipeline stores), RMIA compares the
target's likelihood ratio at x with its ratio at population samples z:

    LR_r(x, z) = [p_r(x) / Pr(x)] / [p_r(z) / Pr(z)],
    Score_r(x) = Pr_z( LR_r(x, z) ≥ γ ),

where ``Pr(x)`` is the mean of ``p_{r'}(x)`` over the reference models r' ≠ r (online), or, with
the offline factor ``a``, ``Pr(x) = ½((1 + a) Pr_OUT(x) + 1 − a)`` from the OUT reference models
only (offline; the paper's linear approximation of the mean over IN and OUT models).

References:
  Zarifzadeh, Liu, Oo, Shokri, "Low-Cost High-Power Membership Inference Attacks", ICML 2024,
  arXiv 2312.03262 (Eq. 3-4: LR and Score_MIA; Sec. 3 / App. B: offline Pr(x) with a).
  Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022,
  arXiv 2112.03570 (the Gaussian IN / OUT fits reused for the calibration).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    check_bool,
    check_choice,
    check_finite,
    check_integer,
    check_key,
    check_positive_finite,
    check_probability,
    check_scores_and_masks,
    is_traced,
)
from jaxaudit.mia.lira import _calibrate_row

__all__ = ["CALIBRATIONS", "rmia", "rmia_score"]

CALIBRATIONS: tuple[str, ...] = ("node", "kde", "global")


def _log_mean_probability(p_sum: jax.Array, q_sum: jax.Array, n: jax.Array,
                          a: float | jax.Array | None) -> jax.Array:
    """log Pr(x) from the sums of p = p(x) and q = 1 − p(x) over n reference models.

    Online: Pr(x) = mean p; offline: Pr(x) = ½((1 + a) mean p + 1 − a) = 1 − ½(1 + a) mean q.
    Written through q where Pr(x) is close to 1 (log1p keeps the digits a member's p ≈ 1 - 1e-6
    loses in float32), through p elsewhere.
    """
    n = jnp.maximum(n, 1.0)
    p_bar, q_bar = p_sum / n, q_sum / n
    c = 1.0 if a is None else 0.5 * (1.0 + a)
    d = 0.0 if a is None else 0.5 * (1.0 - a)
    via_q = jnp.log1p(-c * jnp.minimum(q_bar, 0.5))
    via_p = jnp.log(jnp.maximum(c * p_bar + d, jnp.finfo(jnp.float32).tiny))
    return jnp.where(c * q_bar < 0.25, via_q, via_p)


def _rmia_counts(scores: jax.Array, masks: jax.Array, keep: jax.Array, gamma: ArrayLike,
                 a: float | jax.Array | None, population: jax.Array
                 ) -> tuple[jax.Array, jax.Array]:
    """RMIA's pairwise counts for every row k of ``scores`` (R, N).

    Row k's reference models are the rows r' ≠ k with ``keep[r'] = 1`` (R,) (offline: of those,
    the ones with node x OUT). Returns (count, total), both (R, N): count = #{z ∈ population,
    z ≠ x : LR_k(x, z) ≥ γ}, total = #{z ∈ population, z ≠ x}.
    """
    s = scores.astype(jnp.float32)
    log_p = jax.nn.log_sigmoid(s)
    p, q = jax.nn.sigmoid(s), jax.nn.sigmoid(-s)
    w = keep.astype(jnp.float32)[:, None] * jnp.ones_like(s)
    if a is not None:
        w = w * (1.0 - masks.astype(jnp.float32))  # offline: OUT reference models only
    n = jnp.sum(w, 0) - w  # leave row k itself out of its references
    p_sum = jnp.sum(w * p, 0) - w * p
    q_sum = jnp.sum(w * q, 0) - w * q
    log_pr = _log_mean_probability(p_sum, q_sum, n, a)
    if a is not None:
        # a node with no OUT reference model falls back to the online mean of the kept models
        w_all = keep.astype(jnp.float32)[:, None] * jnp.ones_like(s)
        n_all = jnp.sum(w_all, 0) - w_all
        online = _log_mean_probability(jnp.sum(w_all * p, 0) - w_all * p,
                                       jnp.sum(w_all * q, 0) - w_all * q, n_all, None)
        log_pr = jnp.where(n >= 1, log_pr, online)
    log_ratio = log_p - log_pr  # (R, N): log p_k(x) / Pr(x)
    log_gamma = jnp.log(jnp.asarray(gamma, jnp.float32))
    in_population = jnp.zeros(s.shape[1], bool).at[population].set(True)

    def one_row(lr: jax.Array) -> tuple[jax.Array, jax.Array]:
        pop = jnp.sort(lr[population])
        threshold = lr - log_gamma  # LR(x, z) ≥ γ  ⇔  log ratio(z) ≤ log ratio(x) − log γ
        count = jnp.searchsorted(pop, threshold, side="right").astype(jnp.float32)
        self_counted = in_population & (lr <= threshold)
        count = count - self_counted.astype(jnp.float32)
        total = population.shape[0] - in_population.astype(jnp.float32)
        return count, total

    return jax.vmap(one_row)(log_ratio)


def _probit(count: jax.Array, total: jax.Array) -> jax.Array:
    """Φ⁻¹((count + ½) / (total + 1)): the score fraction on an unbounded, smoothed scale."""
    return jax.scipy.special.ndtri((count + 0.5) / (total + 1.0))


@jax.jit(static_argnames=("offline",))
def _rmia_score(scores: ArrayLike, masks: ArrayLike, gamma: ArrayLike, a: ArrayLike,
                population: ArrayLike, offline: bool = False) -> jax.Array:
    """Unvalidated, traceable core of :func:`rmia_score` (``offline`` static; ``a`` ignored
    when online)."""
    s = jnp.asarray(scores)
    m = jnp.asarray(masks).astype(bool)
    count, total = _rmia_counts(s, m, jnp.ones(s.shape[0], bool), gamma,
                                jnp.asarray(a, jnp.float32) if offline else None,
                                jnp.asarray(population, jnp.int32))
    return jnp.where(total > 0, count / jnp.maximum(total, 1.0), 0.5)


@jax.jit(static_argnames=("offline", "calibration", "fix_variance"))
def _rmia(scores: ArrayLike, masks: ArrayLike, gamma: ArrayLike, a: ArrayLike,
          population: ArrayLike, offline: bool = False, calibration: str = "kde",
          fix_variance: bool = False) -> jax.Array:
    """Unvalidated, traceable core of :func:`rmia` (options after ``population`` static)."""
    s = jnp.asarray(scores)
    m = jnp.asarray(masks).astype(bool)
    pop = jnp.asarray(population, jnp.int32)
    a_value = jnp.asarray(a, jnp.float32) if offline else None
    m_in = m.astype(jnp.float32)
    num_models = s.shape[0]

    def one_target(r: jax.Array) -> jax.Array:
        keep = jnp.arange(num_models) != r
        # every row's RMIA score with model r removed from its references (row r: the target's
        # leave-one-out score; rows r' ≠ r: references whose scores never saw model r)
        stat = _probit(*_rmia_counts(s, m, keep, gamma, a_value, pop))
        k = keep.astype(jnp.float32)[:, None]
        return _calibrate_row(stat[r], stat, k * m_in, k * (1.0 - m_in), calibration,
                              fix_variance)

    return jax.lax.map(one_target, jnp.arange(num_models))


def _check_common(scores: ArrayLike, masks: ArrayLike, gamma: ArrayLike, a: ArrayLike | None,
                  population: object, population_key: jax.Array | None
                  ) -> tuple[ArrayLike, ArrayLike, ArrayLike, ArrayLike, jax.Array]:
    """Validate (concrete values only) and return scores, masks, γ, a and population indices."""
    check_scores_and_masks(scores, masks)
    num_models, num_nodes = np.shape(scores)
    if num_models < 3:
        raise ValueError(f"scores needs at least 3 models (R >= 3), got {num_models}")
    if not is_traced(gamma):
        check_positive_finite("gamma", gamma)
    a_value: ArrayLike = 0.0
    if a is not None:
        if not is_traced(a):
            check_probability("a", a)
            a_value = float(np.asarray(a))
        else:
            a_value = a
    if not is_traced(scores, masks):
        check_finite("scores", scores)
        scores, masks = jnp.asarray(scores), jnp.asarray(masks, bool)
    return scores, masks, gamma, a_value, _population(population, population_key, num_nodes)


def _population(population: object, population_key: jax.Array | None, num_nodes: int) -> jax.Array:
    """The population samples z as node indices: all nodes (None), a subset of that many nodes
    drawn without replacement with ``population_key`` (an int), or the given indices (a 1-D
    integer array)."""
    if population is None:
        return jnp.arange(num_nodes, dtype=jnp.int32)
    if isinstance(population, int | np.integer) and not isinstance(population, bool):
        size = check_integer("population", population, minimum=1)
        if size > num_nodes:
            raise ValueError(f"population must be at most the number of nodes {num_nodes}, "
                             f"got {size}")
        if population_key is None:
            population_key = jax.random.key(0)
        check_key("population_key", population_key)
        picked = jax.random.choice(population_key, num_nodes, (size,), replace=False)
        return jnp.sort(picked).astype(jnp.int32)
    if is_traced(population):
        return jnp.asarray(population, jnp.int32)
    if isinstance(population, str | bytes | bool | np.bool_):
        raise ArgumentTypeError(f"population must be None, an integer or node indices, got "
                                f"{population!r}")
    idx = np.asarray(population)
    if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
        raise ValueError(f"population must be a non-empty 1-D array of node indices, got "
                         f"dtype {idx.dtype} and shape {idx.shape}")
    if (idx < 0).any() or (idx >= num_nodes).any():
        raise ValueError(f"population indices must lie in [0, {num_nodes}), got {idx.min()} .. "
                         f"{idx.max()}")
    if np.unique(idx).size != idx.size:
        raise ValueError("population indices must be distinct")
    return jnp.asarray(idx, jnp.int32)


def rmia_score(scores: ArrayLike, masks: ArrayLike, *, gamma: float = 1.0,
               a: float | None = None, population: int | ArrayLike | None = None,
               population_key: jax.Array | None = None) -> jax.Array:
    """Leave-one-out RMIA scores ``Score_r(x) = Pr_z(LR_r(x, z) ≥ γ)`` in [0, 1] (module doc).

    Model r is the target, the other R − 1 models its reference models (online: all of them;
    offline, ``a`` given: the ones where x was OUT). The population z is every node but x
    (``population=None``), a fixed subset of ``population`` nodes drawn with
    ``population_key`` (None: ``jax.random.key(0)``), or the given node indices; x itself is never its own z.
    ``masks`` is read only offline, and only on the reference rows: row r of the result never
    depends on row r of ``masks``.

    Args:
      scores: (R, N) true-class logits ``log p − log(1 − p)`` per model and node (R ≥ 3).
      masks: (R, N) bool memberships.
      gamma: γ > 0, the pairwise likelihood-ratio threshold (paper default 1).
      a: offline factor in [0, 1] (None: online; the paper's offline experiments use a ≈ 0.3).
      population: None, a number of population nodes, or node indices.
      population_key: PRNG key of the population subset (None: ``jax.random.key(0)``).

    Returns:
      (R, N) float32 fractions (higher = more likely a member).

    Traceable: under ``jax.jit``/``jax.vmap`` the checks are skipped (``a`` None or not must be
    known; ``population`` a Python int is drawn at trace time).
    """
    s, m, g, a_value, pop = _check_common(scores, masks, gamma, a, population, population_key)
    return _rmia_score(s, m, g, a_value, pop, offline=a is not None)


def rmia(scores: ArrayLike, masks: ArrayLike, *, gamma: float = 1.0, a: float | None = None,
         population: int | ArrayLike | None = None, population_key: jax.Array | None = None,
         calibration: str = "kde", fix_variance: bool = False) -> jax.Array:
    """Leave-one-out RMIA on a log-likelihood-ratio scale, for every (target model r, node i).

    Design (ours; docs/gnn_mia.md): the RMIA score of :func:`rmia_score` (Zarifzadeh et al.,
    arXiv 2312.03262) is a fraction of population samples; it is put on a continuous scale
    ``t = Φ⁻¹((count + ½) / (n_z + 1))`` and mapped to a log-likelihood ratio by fitting the
    IN and OUT distributions of t on the reference models, as LiRA (arXiv 2112.03570) fits raw
    scores: ``calibration="node"`` fits Gaussians per node (Λ = log N(t; μ_in, σ²_in) − log N(t;
    μ_out, σ²_out); ``fix_variance`` pools the variances over nodes), ``"kde"`` per node by
    Gaussian kernel density estimates (Silverman's bandwidth; no shape assumed, for many
    reference models), ``"global"`` one pair of equal-variance Gaussians over all nodes (linear
    in t: RMIA's own ranking within a model is kept). For target r the reference models' t are recomputed with model r removed from their
    references, so neither model r's membership nor its score enters the fit: row r of the
    result does not depend on row r of ``masks``. Then ``bayes_decision(Λ, η)`` — member iff
    Λ + logit η > 0 — is the Bayes decision when the fit is right; whatever the fit, the BMP
    bounds built from its error counts stay valid (any decision rule's errors bound ε).

    Args:
      scores: (R, N) true-class logits per model and node (R ≥ 3).
      masks: (R, N) bool memberships.
      gamma, a, population, population_key: as in :func:`rmia_score`.
      calibration: ``"kde"`` (default: the strongest on Cora-GCN with 64 and 128 models,
        tuned on a separate seed, docs/gnn_mia.md), ``"node"`` (Gaussian; safer with few
        models, say R ≤ 32, where a density estimate from ~R/2 points is rough in the tails) or
        ``"global"``.
      fix_variance: pool the IN and OUT variances over nodes (``"node"``: the Gaussians'
        variances; ``"kde"``: the σ of the bandwidths; ``"global"``: no effect).

    Returns:
      (R, N) float32 log-likelihood ratios (higher = more likely a member).

    Example:
      >>> import jax
      >>> masks = jax.random.bernoulli(jax.random.key(0), 0.5, (8, 40))
      >>> scores = 2.0 * masks + jax.random.normal(jax.random.key(1), (8, 40))
      >>> bool((rmia(scores, masks) > 0)[masks].mean() > 0.6)
      True
    """
    check_choice("calibration", calibration, CALIBRATIONS)
    fix = check_bool("fix_variance", fix_variance)
    s, m, g, a_value, pop = _check_common(scores, masks, gamma, a, population, population_key)
    return _rmia(s, m, g, a_value, pop, offline=a is not None, calibration=calibration,
                 fix_variance=fix)
