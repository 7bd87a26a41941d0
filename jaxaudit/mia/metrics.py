"""Attack metrics: ROC AUC, TPR at low FPR, membership advantage (docs/gnn_mia.md).

``labels`` True = member (positive; booleans or 0/1, anything else is refused). Every metric is
computed over ``axis`` (None: all entries pooled — the global figure; ``axis=0`` on (R, N) arrays:
one figure per node).

Each public function checks concrete arguments (shapes always, as they are static), then calls an
unvalidated ``jax.numpy`` core, so it also runs inside ``jax.jit`` and ``jax.vmap`` (``axis`` and
``fpr``'s role are unchanged; ``axis`` must be a Python int or None).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_binary,
    check_mask,
    check_numeric,
    check_probability,
    is_traced,
)

__all__ = ["roc_auc", "tpr_at_fpr", "membership_advantage"]


def _check(scores: ArrayLike, labels: ArrayLike, *, scores_name: str = "scores") -> None:
    """Shapes (static, checked under a transform too); NaN scores and non-0/1 labels (concrete)."""
    s, lab = np.shape(scores), np.shape(labels)
    if s != lab:
        raise ValueError(f"labels must have the shape of {scores_name} {s}, got {lab}")
    if is_traced(labels):
        check_mask("labels", labels)  # a traced float label cannot be checked by value
    check_binary("labels", labels)
    if not is_traced(scores) and np.isnan(check_numeric(scores_name, scores)).any():
        raise ValueError(f"{scores_name} must not contain NaN")


def _prepare(scores: ArrayLike, labels: ArrayLike, axis: int | None
             ) -> tuple[jax.Array, jax.Array]:
    scores = jnp.asarray(scores, jnp.float32)
    labels = jnp.asarray(labels, bool)
    if axis is None:
        return scores.reshape(-1, 1), labels.reshape(-1, 1)
    return jnp.moveaxis(scores, axis, 0).reshape(scores.shape[axis], -1), jnp.moveaxis(
        labels, axis, 0).reshape(labels.shape[axis], -1)


def _finish(values: jax.Array, scores_shape: tuple[int, ...], axis: int | None) -> jax.Array:
    if axis is None:
        return values[0]
    rest = tuple(d for i, d in enumerate(scores_shape) if i != axis % len(scores_shape))
    return values.reshape(rest)


@jax.jit
def _auc_columns(scores: jax.Array, labels: jax.Array) -> jax.Array:
    def one(s: jax.Array, y: jax.Array) -> jax.Array:
        ranks = jax.scipy.stats.rankdata(s)  # average ranks for ties
        # counts as floats: n1 * n0 overflows int32 beyond ~46k per class
        n1 = jnp.sum(y, dtype=jnp.float32)
        n0 = y.shape[0] - n1
        u = jnp.sum(jnp.where(y, ranks - (n1 + 1) / 2.0, 0.0))
        return jnp.where((n1 > 0) & (n0 > 0), u / jnp.maximum(n1 * n0, 1), jnp.nan)

    return jax.vmap(one, in_axes=1)(scores, labels)


def roc_auc(scores: ArrayLike, labels: ArrayLike, axis: int | None = None) -> jax.Array:
    """Area under the ROC curve, ``Pr(s_1 > s_0) + ½ Pr(s_1 = s_0)`` (Mann–Whitney U / n1 n0).

    NaN where a column has no positive or no negative.
    """
    _check(scores, labels)
    return _roc_auc(scores, labels, axis)


def _roc_auc(scores: ArrayLike, labels: ArrayLike, axis: int | None = None) -> jax.Array:
    """Unvalidated, traceable core of :func:`roc_auc` (``axis`` static)."""
    s, y = _prepare(scores, labels, axis)
    return _finish(_auc_columns(s, y), np.shape(scores), axis)


@jax.jit
def _tpr_columns(scores: jax.Array, labels: jax.Array, fpr: ArrayLike) -> jax.Array:
    def one(s: jax.Array, y: jax.Array) -> jax.Array:
        neg = jnp.sort(jnp.where(y, -jnp.inf, s))[::-1]
        n0 = jnp.sum(~y)
        n1 = jnp.sum(y)
        k = jnp.floor(fpr * n0).astype(jnp.int32)
        thr = jnp.where(k >= n0, -jnp.inf, neg[jnp.clip(k, 0, s.shape[0] - 1)])
        tpr = jnp.sum(y & (s > thr)) / jnp.maximum(n1, 1)
        return jnp.where((n1 > 0) & (n0 > 0), tpr, jnp.nan)

    return jax.vmap(one, in_axes=1)(scores, labels)


def tpr_at_fpr(
    scores: ArrayLike, labels: ArrayLike, fpr: float = 1e-3, axis: int | None = None,
) -> jax.Array:
    """Largest TPR of a threshold test ``score > t`` whose empirical FPR is at most ``fpr``."""
    check_probability("fpr", fpr)
    _check(scores, labels)
    return _tpr_at_fpr(scores, labels, fpr if is_traced(fpr) else float(fpr), axis)


def _tpr_at_fpr(scores: ArrayLike, labels: ArrayLike, fpr: ArrayLike = 1e-3,
                axis: int | None = None) -> jax.Array:
    """Unvalidated, traceable core of :func:`tpr_at_fpr` (``axis`` static)."""
    s, y = _prepare(scores, labels, axis)
    return _finish(_tpr_columns(s, y, fpr), np.shape(scores), axis)


def membership_advantage(
    decisions: ArrayLike, labels: ArrayLike, axis: int | None = None,
) -> jax.Array:
    """Membership advantage ``TPR − FPR`` of hard decisions (Yeom et al., CSF 2018,
    arXiv 1709.01604).

    ``decisions`` must be booleans or 0/1 (scores are refused: threshold them first, e.g. with
    :func:`jaxaudit.mia.decisions.threshold_decision`). NaN where a column has no positive or no negative.
    """
    _check(decisions, labels, scores_name="decisions")
    check_binary("decisions", decisions)
    return _membership_advantage(decisions, labels, axis)


def _membership_advantage(decisions: ArrayLike, labels: ArrayLike, axis: int | None = None
                          ) -> jax.Array:
    """Unvalidated, traceable core of :func:`membership_advantage` (``axis`` static)."""
    d, y = _prepare(jnp.asarray(decisions) != 0, labels, axis)
    d = d > 0.5
    tpr = jnp.sum(d & y, 0) / jnp.maximum(jnp.sum(y, 0), 1)
    fpr = jnp.sum(d & ~y, 0) / jnp.maximum(jnp.sum(~y, 0), 1)
    valid = (jnp.sum(y, 0) > 0) & (jnp.sum(~y, 0) > 0)
    return _finish(jnp.where(valid, tpr - fpr, jnp.nan), np.shape(decisions), axis)
