"""Types shared by the membership-inference engine and the BMP posterior."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, check_nonnegative, check_positive, is_traced

__all__ = ["ErrorCounts", "validate_counts"]


class ErrorCounts(NamedTuple):
    """Attack error counts, per node (arrays) or pooled (scalars).

    Convention (docs/gnn_mia.md): H0 = "not a member"; a false positive is a "member" decision on
    a run where the node was OUT, a false negative a "non-member" decision on a run where it was IN.

    Attributes:
      fp: number of false positives among the ``n0`` OUT runs (X in the BMP likelihood).
      n0: number of OUT runs.
      fn: number of false negatives among the ``n1`` IN runs (Y in the BMP likelihood).
      n1: number of IN runs.
    """

    fp: jax.Array
    n0: jax.Array
    fn: jax.Array
    n1: jax.Array


def validate_counts(counts: ErrorCounts | Sequence[ArrayLike]) -> ErrorCounts:
    """Check an ``ErrorCounts`` (non-negative integers, fp ≤ n0, fn ≤ n1, n0, n1 ≥ 1, same shape)
    and return it as float arrays. Raises ``ValueError`` naming the field.

    Under ``jax.jit``/``jax.vmap`` (any field traced) only the structure and the shapes are
    checked, and the counts are returned as they are."""
    if not isinstance(counts, ErrorCounts):
        if isinstance(counts, tuple | list) and len(counts) == 4:
            counts = ErrorCounts(*counts)
        else:
            raise ValueError(f"counts must be an ErrorCounts(fp, n0, fn, n1), got {type(counts)}")
    if is_traced(*counts):
        traced_shapes = [np.shape(c) for c in counts]
        if len(set(traced_shapes)) != 1:
            raise ValueError(f"counts fields must share one shape, got {traced_shapes}")
        return counts
    # float64 numpy arrays: the fields are typed as the jax.Array that error_counts returns
    arrays: dict[str, Any] = {}
    for name in ErrorCounts._fields:
        arr = check_nonnegative(f"counts.{name}", check_finite(f"counts.{name}",
                                                               getattr(counts, name)))
        if np.any(arr != np.round(arr)):
            raise ValueError(f"counts.{name} must hold integers")
        arrays[name] = arr
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1:
        raise ValueError(f"counts fields must share one shape, got {[a.shape for a in arrays.values()]}")
    if arrays["fp"].size == 0:
        raise ValueError("counts must hold at least one node, got empty arrays")
    check_positive("counts.n0", arrays["n0"])
    check_positive("counts.n1", arrays["n1"])
    if np.any(arrays["fp"] > arrays["n0"]):
        raise ValueError("counts.fp must be <= counts.n0")
    if np.any(arrays["fn"] > arrays["n1"]):
        raise ValueError("counts.fn must be <= counts.n1")
    return ErrorCounts(**arrays)
