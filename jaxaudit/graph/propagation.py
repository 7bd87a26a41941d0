"""Sparse feature products and message passing used by the GNN layers (docs/gnn_mia.md).

Why this module exists (performance): on Cora the first-layer product ``X W`` with the dense
2708 x 1433 feature matrix dominates training, and 98.7% of its entries are zero. The features
are therefore stored as CSR (and the CSR of X^T for the gradient ``X^T G``) and multiplied with
XLA's native CSR kernel (``jax.experimental.sparse.BCSR``), several times faster than a gather +
``segment_sum`` over the nonzeros or the dense product (timings: benchmarks/README.md).
Vmapping a sparse product over R models would batch it badly, so :func:`sparse_matmul` carries a
*custom batching rule*: under ``vmap`` over the weights (``W`` of shape (R, F, H)) it
concatenates the models' weights along the output axis, ``[W_1 ... W_R]`` of shape (F, R*H), and
performs ONE sparse product for all models; its gradient ``X^T G`` is batched the same way.
Everything else in the models is plain ``vmap``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jax.experimental import sparse as jsparse
from jax.typing import ArrayLike

__all__ = [
    "SparseFeatures",
    "sparse_features",
    "sparse_matmul",
    "linear",
    "segment_softmax",
]


class SparseFeatures(NamedTuple):
    """A feature matrix X (N, F) stored as CSR, together with the CSR of its transpose.

    The products ``X W`` (forward) and ``X^T G`` (gradient) are both CSR-times-dense products,
    which run on XLA's native sparse kernel (``jax.experimental.sparse.BCSR``; on CPU the
    ``cpu_csr_sparse_dense`` custom call), faster on Cora than a gather and ``segment_sum`` over
    the nonzeros, and far faster when the dense operand is wide (benchmarks/README.md).

    Attributes:
      data, indices, indptr: CSR of X: values (nnz,), column indices (nnz,) int32, row
        pointers (N + 1,) int32 (its length carries N statically through jit and vmap).
      t_data, t_indices, t_indptr: CSR of X^T: values (nnz,), row indices (nnz,) int32, column
        pointers (F + 1,) int32.
    """

    data: jax.Array
    indices: jax.Array
    indptr: jax.Array
    t_data: jax.Array
    t_indices: jax.Array
    t_indptr: jax.Array

    @property
    def shape(self) -> tuple[int, int]:
        return (self.indptr.shape[0] - 1, self.t_indptr.shape[0] - 1)


def _csr(x: np.ndarray) -> tuple[jax.Array, jax.Array, jax.Array]:
    rows, cols = np.nonzero(x)  # row-major order: sorted by row, then column
    indptr = np.zeros(x.shape[0] + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
    return (jnp.asarray(x[rows, cols], jnp.float32), jnp.asarray(cols, jnp.int32),
            jnp.asarray(indptr))


def sparse_features(features: ArrayLike) -> SparseFeatures:
    """Store a dense (N, F) feature matrix as CSR of X and of X^T (host side, outside jit)."""
    x = np.asarray(features, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (N, F), got {x.shape}")
    return SparseFeatures(*_csr(x), *_csr(np.ascontiguousarray(x.T)))


def _csr_product(data: jax.Array, indices: jax.Array, indptr: jax.Array, num_cols: int,
                 dense: jax.Array) -> jax.Array:
    # (num_rows, num_cols) CSR @ dense (num_cols, H) on XLA's native sparse kernel.
    shape = (indptr.shape[0] - 1, num_cols)
    return jsparse.BCSR((data, indices, indptr), shape=shape) @ dense


def _make_batched(transpose: bool) -> Callable[[SparseFeatures, jax.Array], jax.Array]:
    """X-side product (X W, or X^T G when ``transpose``) whose vmap over the dense operand
    concatenates the batch along the output axis: one sparse product for all items."""

    def fields(x: SparseFeatures) -> tuple[jax.Array, jax.Array, jax.Array, int]:
        if transpose:
            return x.t_data, x.t_indices, x.t_indptr, x.shape[0]
        return x.data, x.indices, x.indptr, x.shape[1]

    @custom_vmap
    def product(x: SparseFeatures, dense: jax.Array) -> jax.Array:
        return _csr_product(*fields(x), dense)

    @product.def_vmap
    def _rule(axis_size: int, in_batched: tuple[Any, bool], x: SparseFeatures, dense: jax.Array
              ) -> tuple[jax.Array, bool]:
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


_xw = _make_batched(transpose=False)
_xtg = _make_batched(transpose=True)


@jax.custom_vjp
def _sparse_matmul(x: SparseFeatures, w: jax.Array) -> jax.Array:
    return _xw(x, w)


def _sparse_matmul_fwd(x: SparseFeatures, w: jax.Array) -> tuple[jax.Array, SparseFeatures]:
    return _xw(x, w), x


def _sparse_matmul_bwd(x: SparseFeatures, g: jax.Array) -> tuple[SparseFeatures, jax.Array]:
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


def linear(x: ArrayLike | SparseFeatures, w: jax.Array) -> jax.Array:
    """``x @ w`` for dense or :class:`SparseFeatures` ``x``."""
    if isinstance(x, SparseFeatures):
        return sparse_matmul(x, w)
    return jnp.matmul(x, w)


def segment_softmax(logits: jax.Array, segment_ids: jax.Array, num_segments: int,
                    mask: ArrayLike | None = None) -> jax.Array:
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
