"""Per-node attack error counts, the input of the BMP posterior (docs/gnn_mia.md).

:func:`error_counts` checks concrete decisions and masks, then calls a ``jax.numpy`` core; inside
``jax.jit``/``jax.vmap`` only the shapes are checked (they are static) and the core computes.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import ArgumentTypeError, check_scores_and_masks, is_traced
from jaxaudit.mia.types import ErrorCounts

__all__ = ["error_counts"]


def error_counts(decisions: ArrayLike, masks: ArrayLike) -> ErrorCounts:
    """Count, per node i, X_i = false positives among the N0_i OUT runs and Y_i = false
    negatives among the N1_i IN runs.

    Args:
      decisions: (R, N) bool, True = "member" declared for node i against model r.
      masks: (R, N) bool memberships.

    Returns:
      ``ErrorCounts(fp, n0, fn, n1)``, each an (N,) int32 array.
    """
    check_scores_and_masks(decisions, masks, scores_name="decisions")
    # dtypes are static: a float array is refused under a transform too
    dtype = decisions.dtype if hasattr(decisions, "dtype") else np.asarray(decisions).dtype
    kind = np.dtype(dtype).kind
    if kind not in "biu":
        raise ArgumentTypeError(
            f"decisions must be boolean member/non-member decisions, got dtype "
            f"{dtype} (scores? threshold them first, e.g. bayes_decision)")
    if kind in "iu" and not is_traced(decisions) and not np.isin(np.asarray(decisions),
                                                                  (0, 1)).all():
        raise ValueError("decisions must be boolean (0/1)")
    if np.shape(decisions)[0] < 1:
        raise ValueError("decisions must hold at least one model (R >= 1), got R = 0")
    return _error_counts(decisions, masks)


def _error_counts(decisions: ArrayLike, masks: ArrayLike) -> ErrorCounts:
    """Unvalidated, traceable core of :func:`error_counts`."""
    d = jnp.asarray(decisions, bool)
    m = jnp.asarray(masks, bool)
    return ErrorCounts(
        fp=jnp.sum(d & ~m, axis=0, dtype=jnp.int32),
        n0=jnp.sum(~m, axis=0, dtype=jnp.int32),
        fn=jnp.sum(~d & m, axis=0, dtype=jnp.int32),
        n1=jnp.sum(m, axis=0, dtype=jnp.int32),
    )
