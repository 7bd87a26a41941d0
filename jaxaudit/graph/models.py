"""Two-layer GNNs over a ``jraph.GraphsTuple``: GCN, GraphSAGE, GAT (docs/gnn_mia.md).

Conventions shared by the three modules:

* ``graph.nodes`` holds the node features, a dense (N, F) array or
  :class:`~jaxaudit.graph.propagation.SparseFeatures` (then the first layer is a sparse product,
  batched over models under ``vmap``; see :mod:`jaxaudit.graph.propagation`).
* ``graph.edges`` is ``None`` (all edges present) or an (E,) edge weight in {0, 1}: the edge mask
  of the access setting. Masked edges carry no message and do not count in degrees, so a model
  run on the full edge list with a mask equals the model run on the masked subgraph.
* Every layer first projects (``X W``) and then propagates, so the feature product is done once.
* ``__call__(graph, training=False)`` returns (N, C) logits; dropout (rate ``dropout``, drawn from
  packed random bits by :class:`~jaxaudit.graph.dropout.Dropout`) on the
  hidden layer when ``training`` (needs ``rngs={"dropout": key}``).

References:
  Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional Networks", ICLR 2017.
  Hamilton et al., "Inductive Representation Learning on Large Graphs", NeurIPS 2017.
  Veličković et al., "Graph Attention Networks", ICLR 2018.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph

from jaxaudit.graph.dropout import Dropout
from jaxaudit.graph.propagation import SparseFeatures, linear, propagate, segment_softmax

__all__ = ["GCN", "GraphSAGE", "GAT", "GCNConv", "SAGEConv", "GATConv"]


#: the first two: the two convolutions; the third: the activation between them
_Layers = tuple[Callable[..., jax.Array], Callable[..., jax.Array],
                Callable[[jax.Array], jax.Array]]


def _num_nodes(x: jax.Array | SparseFeatures) -> int:
    return x.shape[0]


def _edge_weight(graph: jraph.GraphsTuple) -> jax.Array:
    if graph.edges is None:
        return jnp.ones(graph.senders.shape, jnp.float32)
    return jnp.asarray(graph.edges, jnp.float32)


def _in_features(x: jax.Array | SparseFeatures) -> int:
    return x.shape[1]


class GCNConv(nn.Module):
    """``H' = D̂^{-1/2} (A + I) D̂^{-1/2} X W + b`` with D̂ the degrees of A + I (masked A)."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array | SparseFeatures, senders: jax.Array, receivers: jax.Array,
                 weight: jax.Array) -> jax.Array:
        w = self.param("kernel", nn.initializers.glorot_uniform(), (_in_features(x), self.features))
        b = self.param("bias", nn.initializers.zeros, (self.features,))
        h = linear(x, w)
        n = _num_nodes(h)
        deg = 1.0 + jax.ops.segment_sum(weight, receivers, n)
        inv_sqrt = jax.lax.rsqrt(deg)
        norm = weight * inv_sqrt[senders] * inv_sqrt[receivers]
        agg = propagate(h, senders, receivers, norm)
        return agg + h / deg[:, None] + b


class SAGEConv(nn.Module):
    """``h_i' = W_root x_i + W_nbr mean_{j -> i} x_j + b`` (mean aggregator, PyG SAGEConv)."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array | SparseFeatures, senders: jax.Array, receivers: jax.Array,
                 weight: jax.Array) -> jax.Array:
        w = self.param(
            "kernel", nn.initializers.glorot_uniform(), (_in_features(x), 2 * self.features)
        )
        b = self.param("bias", nn.initializers.zeros, (self.features,))
        h = linear(x, w)
        h_root, h_nbr = h[:, : self.features], h[:, self.features :]
        n = _num_nodes(h)
        count = jax.ops.segment_sum(weight, receivers, n)
        total = propagate(h_nbr, senders, receivers, weight)
        return h_root + total / jnp.maximum(count, 1.0)[:, None] + b


class GATConv(nn.Module):
    """Multi-head graph attention with self-loops (Veličković et al. 2018).

    ``alpha_ij = softmax_j LeakyReLU_{0.2}(a_dst·W x_i + a_src·W x_j)`` over the unmasked
    in-edges of i and i itself; ``h_i' = concat_k sum_j alpha_ij^k W^k x_j + b`` (or the mean
    over heads when ``concat=False``).
    """

    features: int
    heads: int = 8
    concat: bool = True
    attention_dropout: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array | SparseFeatures, senders: jax.Array, receivers: jax.Array,
                 weight: jax.Array, training: bool = False) -> jax.Array:
        k, f = self.heads, self.features
        w = self.param("kernel", nn.initializers.glorot_uniform(), (_in_features(x), k * f))
        a_src = self.param("att_src", nn.initializers.glorot_uniform(), (1, k, f))
        a_dst = self.param("att_dst", nn.initializers.glorot_uniform(), (1, k, f))
        b = self.param("bias", nn.initializers.zeros, (k * f if self.concat else f,))
        n = x.shape[0]
        h = linear(x, w).reshape(n, k, f)
        loops = jnp.arange(n, dtype=senders.dtype)
        s = jnp.concatenate([senders, loops])
        r = jnp.concatenate([receivers, loops])
        mask = jnp.concatenate([weight, jnp.ones((n,), weight.dtype)]) > 0
        e_src = jnp.sum(h * a_src, axis=-1)  # (N, K)
        e_dst = jnp.sum(h * a_dst, axis=-1)
        logits = nn.leaky_relu(e_src[s] + e_dst[r], negative_slope=0.2)  # (E + N, K)
        alpha = segment_softmax(logits, r, n, mask[:, None])
        alpha = Dropout(self.attention_dropout, deterministic=not training)(alpha)
        out = jax.ops.segment_sum(alpha[:, :, None] * h[s], r, n)  # (N, K, F)
        out = out.reshape(n, k * f) if self.concat else out.mean(axis=1)
        return out + b


class _TwoLayer(nn.Module):
    """Two message-passing layers with an activation and dropout between them.

    Attributes:
      num_classes: outputs per node; hidden_dim: width of the hidden layer; dropout: its rate.
    """

    num_classes: int
    hidden_dim: int = 64
    dropout: float = 0.5

    def layers(self) -> _Layers:
        raise AttributeError("subclasses define layers()")

    @nn.compact
    def __call__(self, graph: jraph.GraphsTuple, training: bool = False) -> jax.Array:
        first, second, activation = self.layers()
        x = graph.nodes
        weight = _edge_weight(graph)
        kw = {"training": training} if isinstance(first, GATConv) else {}
        h = activation(first(x, graph.senders, graph.receivers, weight, **kw))
        h = Dropout(rate=self.dropout, deterministic=not training)(h)
        return second(h, graph.senders, graph.receivers, weight, **kw)


class GCN(_TwoLayer):
    """Two-layer GCN: conv(F -> hidden_dim), ReLU, dropout, conv(hidden_dim -> num_classes).

    Example:
      >>> import jax, jax.numpy as jnp, jraph
      >>> g = jraph.GraphsTuple(nodes=jnp.ones((3, 4)), edges=None, senders=jnp.array([0, 1]),
      ...     receivers=jnp.array([1, 0]), globals=None, n_node=jnp.array([3]), n_edge=jnp.array([2]))
      >>> model = GCN(num_classes=2)
      >>> params = model.init(jax.random.key(0), g)
      >>> model.apply(params, g).shape
      (3, 2)
    """

    def layers(self) -> _Layers:
        return GCNConv(self.hidden_dim), GCNConv(self.num_classes), nn.relu


class GraphSAGE(_TwoLayer):
    """Two-layer GraphSAGE (mean aggregator): ReLU and dropout between the layers."""

    def layers(self) -> _Layers:
        return SAGEConv(self.hidden_dim), SAGEConv(self.num_classes), nn.relu


class GAT(_TwoLayer):
    """Two-layer GAT: ``heads`` heads of ``hidden_dim // heads`` features (concatenated), ELU,
    dropout, then one head with ``num_classes`` outputs; dropout 0.6 on the hidden layer and on
    the attention coefficients as in Veličković et al."""

    dropout: float = 0.6
    heads: int = 8
    attention_dropout: float = 0.6

    def layers(self) -> _Layers:
        if self.hidden_dim % self.heads:
            raise ValueError(f"hidden_dim ({self.hidden_dim}) must be a multiple of heads "
                             f"({self.heads})")
        return (
            GATConv(self.hidden_dim // self.heads, heads=self.heads,
                    attention_dropout=self.attention_dropout),
            GATConv(self.num_classes, heads=1, concat=False,
                    attention_dropout=self.attention_dropout),
            nn.elu,
        )


