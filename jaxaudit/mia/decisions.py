"""Membership decisions from attack scores (docs/gnn_mia.md).

Convention: H0 = "not a member"; a decision ``True`` declares "member".

Each public function checks concrete arguments, then calls an unvalidated ``jax.numpy`` core;
inside ``jax.jit``/``jax.vmap``/``jax.grad`` the checks are skipped (values are not known) and the
core just computes, so e.g. ``jax.vmap(bayes_decision, in_axes=(None, 0))(llr, etas)`` gives the
decisions for a vector of priors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_finite,
    check_numeric,
    check_probability,
    check_scores_and_masks,
    is_traced,
)

__all__ = ["bayes_decision", "fixed_fpr_decision", "threshold_decision"]


def bayes_decision(llr: ArrayLike, eta: ArrayLike) -> jax.Array:
    """Prior-aware Bayes test: declare member iff ``Λ + logit η > 0``.

    With Λ = log p_1(w)/p_0(w) this is ``π(1|w) > 1/2``, the test of minimum error probability
    under the prior Pr(M_i = 1) = η_i (Bayes factor above (1 − η)/η).

    Args:
      llr: (..., N) log-likelihood ratios (±inf allowed).
      eta: prior inclusion probabilities, broadcastable to ``llr`` (typically (N,)), in [0, 1].

    Returns:
      bool array of ``llr``'s shape (η = 1: always member, η = 0: never).
    """
    check_probability("eta", eta)
    if not is_traced(llr) and np.isnan(check_numeric("llr", llr)).any():
        raise ValueError("llr must not contain NaN")
    return _bayes_decision(llr, eta)


def _bayes_decision(llr: ArrayLike, eta: ArrayLike) -> jax.Array:
    """Unvalidated, traceable core of :func:`bayes_decision`."""
    eta = jnp.asarray(eta, jnp.float32)
    logit_eta = jnp.log(eta) - jnp.log1p(-eta)
    # η ∈ {0, 1} decides alone (avoids ∓inf ± inf when the likelihood ratio is infinite too)
    return jnp.where(eta >= 1.0, True, jnp.where(eta <= 0.0, False, jnp.asarray(llr) + logit_eta > 0))


def threshold_decision(scores: ArrayLike, threshold: ArrayLike = 0.0) -> jax.Array:
    """Global threshold: declare member iff ``score > threshold`` (one threshold for all nodes)."""
    check_finite("threshold", threshold)
    if not is_traced(scores) and np.isnan(check_numeric("scores", scores)).any():
        raise ValueError("scores must not contain NaN")
    return _threshold_decision(scores, threshold)


def _threshold_decision(scores: ArrayLike, threshold: ArrayLike = 0.0) -> jax.Array:
    """Unvalidated, traceable core of :func:`threshold_decision`."""
    return jnp.asarray(scores) > threshold


def fixed_fpr_decision(
    llr: ArrayLike, masks: ArrayLike, fpr: float, *, per_node: bool = True,
) -> jax.Array:
    """Likelihood-ratio test with the threshold set for false-positive rate ``fpr``.

    The threshold t is the smallest value with ``#{OUT runs with Λ > t} ≤ fpr · #OUT runs``,
    taken over the OUT runs of each node (``per_node=True``) or over all nodes' OUT runs pooled
    (a global threshold). This uses the membership ground truth to calibrate, as an auditor with
    the shadow runs does.

    Args:
      llr: (R, N) attack scores.
      masks: (R, N) memberships.
      fpr: target false-positive rate in [0, 1].
      per_node: one threshold per node (True) or one global threshold.

    Returns:
      (R, N) bool decisions.
    """
    check_scores_and_masks(llr, masks, scores_name="llr")
    check_probability("fpr", fpr)
    return _fixed_fpr_decision(llr, masks, fpr, per_node=bool(per_node))


def _fixed_fpr_decision(llr: ArrayLike, masks: ArrayLike, fpr: ArrayLike, *,
                        per_node: bool = True) -> jax.Array:
    """Unvalidated, traceable core of :func:`fixed_fpr_decision` (``per_node`` static)."""
    llr = jnp.asarray(llr, jnp.float32)
    out = ~jnp.asarray(masks, bool)
    if per_node:
        thr = jax.vmap(lambda s, o: _threshold(s, o, fpr), in_axes=1)(llr, out)
    else:
        thr = _threshold(llr.ravel(), out.ravel(), fpr)
    return llr > thr


def _threshold(scores: jax.Array, negatives: jax.Array, fpr: ArrayLike) -> jax.Array:
    """Smallest observed negative score t with #{negatives > t} <= floor(fpr * #negatives)."""
    n0 = jnp.sum(negatives)
    neg_sorted = jnp.sort(jnp.where(negatives, scores, -jnp.inf))[::-1]  # descending
    k = jnp.floor(fpr * n0).astype(jnp.int32)
    # declaring scores > neg_sorted[k] yields at most k false positives
    thr = neg_sorted[jnp.clip(k, 0, scores.shape[0] - 1)]
    return jnp.where(k >= n0, -jnp.inf, thr)
