"""A small vmapped driver for per-count-set samplers: one count set's function, run over a table
of count sets in one jit-compiled call of :func:`jaxaudit.sharding.vmap_chunked`.

The steps every per-node posterior shares: flatten the counts into a (rows, 4) table, keep the
distinct rows (identical counts have identical posteriors: sample once, share the draws), pad the
rows to a size bucket (calls with similar node counts reuse one compiled program), run, and undo
the padding and the deduplication. :func:`jaxaudit.bmp.posterior_nuts` is built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from jaxaudit.mia.types import ErrorCounts
from jaxaudit.sharding import vmap_chunked

__all__ = ["CountTable", "count_table", "pad_rows", "row_keys", "rows_as_counts", "run_rows",
           "size_bucket", "vmapped"]


class CountTable(NamedTuple):
    """Distinct (or all) count rows, padded to a size bucket.

    Attributes:
      rows: (padded rows, 4) float table of (fp, n0, fn, n1).
      num_rows: rows before padding.
      inverse: for every given count set, the index of its row (None without deduplication).
      shape: shape of the given counts' arrays (``()`` for scalars).
    """

    rows: np.ndarray
    num_rows: int
    inverse: np.ndarray | None
    shape: tuple[int, ...]

    def restore(self, out: Any) -> Any:
        """Per-row results (leading axis = padded rows) back to the given counts' shape."""
        out = jax.tree.map(lambda x: x[self.inverse] if self.inverse is not None
                           else x[:self.num_rows], out)
        if self.shape == ():
            return jax.tree.map(lambda x: x[0], out)
        return jax.tree.map(lambda x: x.reshape(self.shape + x.shape[1:]), out)


def size_bucket(num_rows: int, chunk_size: int | None) -> int:
    """Padded row count: a few sizes only, so that tables of similar sizes share one compiled
    program. Without chunks: powers of two up to 1024, then multiples of 256. With chunks of
    ``chunk_size``: a power-of-two number of chunks."""
    if chunk_size is None:
        if num_rows <= 1024:
            return 1 if num_rows <= 1 else 2 ** int(np.ceil(np.log2(num_rows)))
        return -(-num_rows // 256) * 256
    num_chunks = -(-num_rows // chunk_size)
    return chunk_size * 2 ** int(np.ceil(np.log2(num_chunks)))


def pad_rows(table: np.ndarray, size: int) -> np.ndarray:
    """Repeat the last row up to ``size`` rows (the padding lanes' results are dropped)."""
    return np.concatenate([table, np.repeat(table[-1:], size - table.shape[0], axis=0)])


def count_table(counts: ErrorCounts, *, deduplicate: bool = True,
                chunk_size: int | None = None) -> CountTable:
    """The (validated) counts as a padded :class:`CountTable`."""
    table = np.stack([np.atleast_1d(c).ravel() for c in counts], axis=1)
    inverse: np.ndarray | None = None
    if deduplicate:
        table, found = np.unique(table, axis=0, return_inverse=True)
        inverse = found.ravel()
    num_rows = table.shape[0]
    return CountTable(pad_rows(table, size_bucket(num_rows, chunk_size)), num_rows, inverse,
                      tuple(np.shape(counts.fp)))


def rows_as_counts(rows: np.ndarray, dtype: DTypeLike | None = None) -> ErrorCounts:
    """(rows, 4) table → ``ErrorCounts`` of (rows,) arrays in ``dtype`` (default float)."""
    dtype = jnp.result_type(float) if dtype is None else dtype
    return ErrorCounts(*(jnp.asarray(rows[:, j], dtype) for j in range(4)))


def vmapped(fn: Callable[..., Any], *, chunk_size: int | None = None,
            devices: Sequence[jax.Device] | None = None) -> Callable[[tuple[Any, ...]], Any]:
    """``g((keys, counts, *per_row))``: ``fn(key, counts, *per_row)`` of one count set, vmapped
    over rows in chunks of ``chunk_size`` and sharded over ``devices``
    (:func:`jaxaudit.sharding.vmap_chunked`)."""
    return vmap_chunked(lambda xs: fn(*xs), chunk_size=chunk_size, devices=devices)


def row_keys(key: jax.Array, num_rows: int) -> jax.Array:
    """The key of row i of a table: ``fold_in(key, i)``, the key rule of ``jaxaudit.runs.keys``
    (unit i of root ``key``). It depends on ``key`` and i only: not on the padded size of the
    table (hence not on ``chunk_size``), nor on the devices that run it, nor on JAX's
    ``jax_threefry_partitionable`` setting (under which ``split(key, n)[i]`` depends on n)."""
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, np.arange(num_rows, dtype=np.uint32))


def run_rows(runner: Callable[[tuple[Any, ...]], Any], key: jax.Array, rows: np.ndarray,
             *per_row: Any) -> Any:
    """Run a :func:`vmapped` ``runner`` on every row of ``rows`` with its own key
    (:func:`row_keys`)."""
    return runner((row_keys(key, rows.shape[0]), rows_as_counts(rows), *per_row))
