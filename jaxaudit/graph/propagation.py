"""Sparse feature products and message passing used by the GNN layers (spec: bmp.md §4.2, §6).

Why this module exists (performance, spec §6): on Cora the first-layer product ``X W`` with the
dense 2708 x 1433 feature matrix dominates training, and 98.7% of its entries are zero. A sparse
product over the nonzeros is ~40x fewer flops, but vmapping a sparse product over R models
batches it badly. :func:`sparse_matmul` therefore carries a *custom batching rule*: under ``vmap``
over the weights (``W`` of shape (R, F, H)) it concatenates the models' weights along the output
axis, ``[W_1 ... W_R]`` of shape (F, R*H), and performs ONE sparse product over the nonzeros of
``X`` for all models; its gradient ``X^T G`` is batched the same way. Everything else in the
models is plain ``vmap``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

__all__ = [
    "SparseFeatures",
    "sparse_features",
    "sparse_matmul",
    "linear",
    "segment_softmax",
]


class SparseFeatures(NamedTuple):
    """A feature matrix X (N, F) stored by its nonzeros, sorted by row (COO).

    Attributes:
      rows, cols: (nnz,) int32 coordinates of the nonzeros.
      values: (nnz,) float32 values X[rows, cols].
      rows_count: (N,) int8 zeros whose length carries N statically through jit and vmap.
      cols_count: (F,) int8 zeros whose length carries F statically through jit and vmap.
    """

    rows: jax.Array
    cols: jax.Array
    values: jax.Array
    rows_count: jax.Array
    cols_count: jax.Array

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows_count.shape[0], self.cols_count.shape[0])


def sparse_features(features) -> SparseFeatures:
    """Store a dense (N, F) feature matrix by its nonzeros (host side, outside jit)."""
    x = np.asarray(features, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (N, F), got {x.shape}")
    rows, cols = np.nonzero(x)
    return SparseFeatures(
        rows=jnp.asarray(rows, jnp.int32),
        cols=jnp.asarray(cols, jnp.int32),
        values=jnp.asarray(x[rows, cols]),
        rows_count=jnp.zeros((x.shape[0],), jnp.int8),
        cols_count=jnp.zeros((x.shape[1],), jnp.int8),
    )


def _gather_scatter(index_in, index_out, values, dense, num_out):
    # out[index_out[k]] += values[k] * dense[index_in[k]]  (one pass over the nonzeros)
    return jax.ops.segment_sum(values[:, None] * dense[index_in], index_out, num_out)


def _make_batched(index_in_field: str, index_out_field: str, size_field: str):
    """X-side product (X W or X^T G) whose vmap over the dense operand concatenates the batch."""

    @custom_vmap
    def product(x: SparseFeatures, dense):
        num_out = getattr(x, size_field).shape[0]
        return _gather_scatter(
            getattr(x, index_in_field), getattr(x, index_out_field), x.values, dense, num_out
        )

    @product.def_vmap
    def _rule(axis_size, in_batched, x, dense):
        x_batched, dense_batched = in_batched
        if any(jax.tree.leaves(x_batched)):
            # Different feature matrices per item: fall back to a per-item loop over vmap.
            out = jax.vmap(lambda xi, di: product(xi, di), in_axes=(
                jax.tree.map(lambda b: 0 if b else None, x_batched), 0 if dense_batched else None,
            ))(x, dense)
            return out, True
        if not dense_batched:
            return product(x, dense), False
        r, k, h = dense.shape  # (R, K, H) -> (K, R*H): one product for all items
        wide = jnp.transpose(dense, (1, 0, 2)).reshape(k, r * h)
        out = product(x, wide)
        return jnp.transpose(out.reshape(out.shape[0], r, h), (1, 0, 2)), True

    return product


_xw = _make_batched("cols", "rows", "rows_count")
_xtg = _make_batched("rows", "cols", "cols_count")


@jax.custom_vjp
def _sparse_matmul(x: SparseFeatures, w):
    return _xw(x, w)


def _sparse_matmul_fwd(x, w):
    return _xw(x, w), x


def _sparse_matmul_bwd(x, g):
    zeros = jax.tree.map(jnp.zeros_like, x)
    return zeros, _xtg(x, g)


_sparse_matmul.defvjp(_sparse_matmul_fwd, _sparse_matmul_bwd)


def sparse_matmul(x: SparseFeatures, w: jax.Array) -> jax.Array:
    """``X @ W`` for sparse X (N, F) and dense W (F, H), differentiable in W.

    Under ``jax.vmap`` over ``w`` (shape (R, F, H)) with ``x`` shared, the R products are computed
    as one sparse product with the weights concatenated along the output axis (see module doc).
    The gradient with respect to ``x`` is not propagated (features are data).
    """
    return _sparse_matmul(x, w)


def linear(x, w: jax.Array) -> jax.Array:
    """``x @ w`` for dense or :class:`SparseFeatures` ``x``."""
    if isinstance(x, SparseFeatures):
        return sparse_matmul(x, w)
    return x @ w


def segment_softmax(logits: jax.Array, segment_ids: jax.Array, num_segments: int, mask=None):
    """Softmax of edge logits over the edges sharing a receiver (masked edges get weight 0)."""
    if mask is not None:
        logits = jnp.where(mask, logits, -jnp.inf)
    seg_max = jax.ops.segment_max(logits, segment_ids, num_segments)
    seg_max = jnp.where(jnp.isfinite(seg_max), seg_max, 0.0)
    ex = jnp.exp(logits - seg_max[segment_ids])
    if mask is not None:
        ex = jnp.where(mask, ex, 0.0)
    denom = jax.ops.segment_sum(ex, segment_ids, num_segments)
    return ex / jnp.where(denom > 0, denom, 1.0)[segment_ids]
