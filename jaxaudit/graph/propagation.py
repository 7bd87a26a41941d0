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

Message passing over the edges (:func:`propagate`, used by the GCN and GraphSAGE layers) runs on
the same kernel: the weighted adjacency as CSR sorted by receiver for ``A H``, and sorted by
sender for the gradient ``A^T G`` (custom VJP); R models' different edge weights on one graph
are one block-diagonal product under ``vmap``. Messages narrower than 32 features (a GCN's class
logits) stay a gather and ``segment_sum``, which is faster there (benchmarks/README.md).
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
    "propagate",
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


def _csr_matmul_unbatched(values: jax.Array, indices: jax.Array, indptr: jax.Array,
                          dense: jax.Array) -> jax.Array:
    # (num_rows, K) CSR with rows given by ``indptr`` @ dense (K, H).
    return _csr_product(values, indices, indptr, dense.shape[0], dense)


@custom_vmap
def _csr_matmul(values: jax.Array, indices: jax.Array, indptr: jax.Array, dense: jax.Array
                ) -> jax.Array:
    """CSR (values, indices, indptr) @ dense; under vmap one product for the whole batch."""
    return _csr_matmul_unbatched(values, indices, indptr, dense)


@_csr_matmul.def_vmap
def _csr_matmul_rule(axis_size: int, in_batched: tuple[bool, bool, bool, bool], values: jax.Array,
                     indices: jax.Array, indptr: jax.Array, dense: jax.Array
                     ) -> tuple[jax.Array, bool]:
    v_b, i_b, p_b, d_b = in_batched
    if i_b or p_b:
        # Different structures per item: a loop over the items.
        out = jax.lax.map(lambda a: _csr_matmul(*a), (
            values if v_b else jnp.broadcast_to(values, (axis_size, *values.shape)),
            indices if i_b else jnp.broadcast_to(indices, (axis_size, *indices.shape)),
            indptr if p_b else jnp.broadcast_to(indptr, (axis_size, *indptr.shape)),
            dense if d_b else jnp.broadcast_to(dense, (axis_size, *dense.shape))))
        return out, True
    if not v_b and not d_b:
        return _csr_matmul(values, indices, indptr, dense), False
    if axis_size == 1:  # chunks of one model (the CPU default): no batching at all
        out = _csr_matmul(values[0] if v_b else values, indices, indptr,
                          dense[0] if d_b else dense)
        return out[None], True
    if not v_b:
        # Shared matrix: the items' dense operands side by side, (K, R*H), one product.
        r, k, h = dense.shape
        wide = jnp.transpose(dense, (1, 0, 2)).reshape(k, r * h)
        out = _csr_matmul(values, indices, indptr, wide)
        return jnp.transpose(out.reshape(out.shape[0], r, h), (1, 0, 2)), True
    # Per-item values on the shared structure: one block-diagonal product diag(A_1..A_R) @
    # [D_1; ...; D_R] (exact: each output row sums the same terms as the item's own product).
    nnz, rows = indices.shape[0], indptr.shape[0] - 1
    if not d_b:
        dense = jnp.broadcast_to(dense, (axis_size, *dense.shape))
    k = dense.shape[1]
    item = jnp.arange(axis_size, dtype=indices.dtype)
    big_indices = (indices[None, :] + item[:, None] * k).reshape(-1)
    big_indptr = jnp.concatenate([(indptr[None, :-1] + item[:, None] * nnz).reshape(-1),
                                  jnp.asarray([axis_size * nnz], indptr.dtype)])
    out = _csr_matmul(values.reshape(-1), big_indices, big_indptr,
                      dense.reshape(axis_size * k, *dense.shape[2:]))
    return out.reshape(axis_size, rows, *out.shape[1:]), True


def _csr_of(rows: jax.Array, cols: jax.Array, num_rows: int
            ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(order, column indices, row pointers) of the CSR of the entries (rows[e], cols[e]):
    ``order`` sorts the entries by row (stable), so the values of the CSR are ``x[order]``."""
    order = jnp.argsort(rows, stable=True)
    indices = cols[order].astype(jnp.int32)
    indptr = jnp.searchsorted(rows[order], jnp.arange(num_rows + 1, dtype=rows.dtype),
                              side="left").astype(jnp.int32)
    return order, indices, indptr


#: narrowest messages (features per node) sent through the CSR kernel: its cost is mostly per
#: nonzero, so narrow messages (a GCN's class logits) are faster as a gather and ``segment_sum``
#: (timings: benchmarks/README.md, section "GCN shadow models")
_CSR_MIN_WIDTH = 32


@jax.custom_vjp
def _propagate(h: jax.Array, weight: jax.Array, senders: jax.Array, receivers: jax.Array
               ) -> jax.Array:
    order, indices, indptr = _csr_of(receivers, senders, h.shape[0])
    out = _csr_matmul(weight[order].astype(h.dtype), indices, indptr, h.reshape(h.shape[0], -1))
    return out.reshape(h.shape)


def _propagate_fwd(h: jax.Array, weight: jax.Array, senders: jax.Array, receivers: jax.Array
                   ) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    return _propagate(h, weight, senders, receivers), (h, weight, senders, receivers)


def _propagate_bwd(res: tuple[jax.Array, ...], g: jax.Array
                   ) -> tuple[jax.Array, jax.Array, None, None]:
    h, weight, senders, receivers = res
    # A^T g: the CSR of the transpose has the entries sorted by sender.
    order, indices, indptr = _csr_of(senders, receivers, h.shape[0])
    dh = _csr_matmul(weight[order].astype(g.dtype), indices, indptr,
                     g.reshape(g.shape[0], -1)).reshape(g.shape)
    # d weight_e = <g[r_e], h[s_e]> (dropped by XLA when the weights are not differentiated)
    dw = jnp.sum(g[receivers] * h[senders], axis=tuple(range(1, h.ndim))).astype(weight.dtype)
    return dh, dw, None, None


_propagate.defvjp(_propagate_fwd, _propagate_bwd)


def propagate(h: jax.Array, senders: jax.Array, receivers: jax.Array, weight: jax.Array
              ) -> jax.Array:
    """Message passing ``out_i = sum_{e: receivers[e] = i} weight[e] · h[senders[e]]``.

    Equals ``jax.ops.segment_sum(weight[:, None] * h[senders], receivers, N)`` (N = ``h.shape[0]``,
    up to float reassociation) but runs as a CSR-times-dense product on XLA's sparse kernel: the
    weighted adjacency A (A[r, s] = weight of the edge s -> r) is assembled as CSR (entries sorted
    by receiver), and the gradient ``A^T g`` is the CSR product with the entries sorted by sender.
    Under ``jax.vmap`` over ``h`` and ``weight`` (R models on one graph) the R products are one
    block-diagonal product. Differentiable in ``h`` and ``weight``; ``senders`` and ``receivers``
    are integer (E,) arrays. Sorting the edges is work that depends on the graph only: inside a
    training loop XLA computes it once (loop-invariant code motion). Messages narrower than
    ``_CSR_MIN_WIDTH`` features per node take the gather + ``segment_sum`` path (faster there).

    Args:
      h: node features (N, ...), e.g. (N, H) or (N, heads, H).
      senders, receivers: (E,) integer edge endpoints in [0, N).
      weight: (E,) edge weights.

    Returns:
      the aggregated messages, of ``h``'s shape.
    """
    width = int(np.prod(h.shape[1:], dtype=np.int64))
    if width < _CSR_MIN_WIDTH:
        return jax.ops.segment_sum(weight.reshape((-1,) + (1,) * (h.ndim - 1)) * h[senders],
                                   receivers, h.shape[0])
    return _propagate(h, weight, senders, receivers)


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
