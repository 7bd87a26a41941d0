"""The optimal-attack Jeffreys estimator of (ε_L, ε_R) from attack error counts.

The attack is assumed to sit on the region's lower boundary (attack strength s = 1, the
optimal attack of Yıldırım et al., arXiv 2504.16683, applied to the BMP region of Yıldırım &
Khosla, arXiv 2606.04069). With Jeffreys Beta(½, ½) priors the error rates have independent
posteriors

    α ~ Beta(FP + ½, TN + ½),    β ~ Beta(FN + ½, TP + ½),

and each draw is pushed through the region's inverse map (ε_L, ε_R) = ε̂(α, β)
(:func:`jaxaudit.bmp.epsilons_from_errors`); the estimate is the quantiles of those draws. It is
an estimate, not a bound (the certified bound is :func:`jaxaudit.bmp.certified_epsilons`).

The public function checks concrete arguments, then calls an unvalidated ``jax.numpy`` core:
inside ``jax.jit``/``jax.vmap`` (``num_draws`` static) the checks are skipped and it computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import distrax
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, check_integer, check_key, is_traced
from jaxaudit.bmp.region import _epsilons_from_errors
from jaxaudit.mia.types import ErrorCounts, validate_counts

__all__ = ["JeffreysEstimate", "jeffreys_estimate"]


class JeffreysEstimate(NamedTuple):
    """Quantiles (rows: ``q``) of ε_L and ε_R under the Jeffreys posterior of (α, β)."""

    q: jax.Array
    epsilon_left: jax.Array
    epsilon_right: jax.Array


def _jeffreys_estimate(key, fp, n0, fn, n1, q, num_draws: int = 4000) -> JeffreysEstimate:
    """Unvalidated, traceable core of :func:`jeffreys_estimate` (``num_draws`` static)."""
    fp, n0, fn, n1 = (jnp.asarray(c, jnp.float32) for c in (fp, n0, fn, n1))
    k_alpha, k_beta = jax.random.split(key)
    alpha = distrax.Beta(fp + 0.5, n0 - fp + 0.5).sample(seed=k_alpha, sample_shape=num_draws)
    beta = distrax.Beta(fn + 0.5, n1 - fn + 0.5).sample(seed=k_beta, sample_shape=num_draws)
    eps_l, eps_r = _epsilons_from_errors(alpha, beta)
    qs = jnp.asarray(q)
    return JeffreysEstimate(qs, jnp.quantile(eps_l, qs, axis=0), jnp.quantile(eps_r, qs, axis=0))


def jeffreys_estimate(key: jax.Array, counts: ErrorCounts | Sequence[ArrayLike], *,
                      num_draws: int = 4000,
                      q: ArrayLike | Sequence[float] = (0.05, 0.5, 0.95)
                      ) -> JeffreysEstimate:
    """Optimal-attack estimator: α ~ Beta(FP + ½, TN + ½), β ~ Beta(FN + ½, TP + ½) independently
    (Jeffreys posteriors), pushed through the inverse map (ε_L, ε_R) = epsilons_from_errors(α, β)
    — the attack is assumed to sit on the region's boundary (s = 1). An estimate, not a bound.

    Args:
      key: a JAX PRNG key.
      counts: ``ErrorCounts(fp, n0, fn, n1)`` of scalars or per-node arrays.
      num_draws: posterior draws per node (a Python int: it sets a shape).
      q: quantile probabilities in [0, 1].

    Returns:
      :class:`JeffreysEstimate` with quantile arrays of shape (len(q), ...) over the nodes.
    """
    check_key("key", key)
    counts = validate_counts(counts)
    num_draws = check_integer("num_draws", num_draws, minimum=1)
    if not is_traced(q):
        q = np.asarray(check_finite("q", q), float)
        if np.any((q < 0) | (q > 1)):
            raise ValueError(f"q must lie in [0, 1], got {q}")
    return _jeffreys_estimate(key, counts.fp, counts.n0, counts.fn, counts.n1, q,
                              num_draws=num_draws)
