"""Types shared by the membership-inference engine and the BMP posterior."""

from __future__ import annotations

from typing import NamedTuple

import jax


class ErrorCounts(NamedTuple):
    """Attack error counts, per node (arrays) or pooled (scalars).

    Convention (spec bmp.md §2): H0 = "not a member"; a false positive is a "member" decision on
    a run where the node was OUT, a false negative a "non-member" decision on a run where it was IN.

    Attributes:
      fp: number of false positives among the ``n0`` OUT runs (X in the spec).
      n0: number of OUT runs.
      fn: number of false negatives among the ``n1`` IN runs (Y in the spec).
      n1: number of IN runs.
    """

    fp: jax.Array
    n0: jax.Array
    fn: jax.Array
    n1: jax.Array
