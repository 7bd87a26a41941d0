"""The graph pytree shared by the loaders, the CSBM generator and the GNN engine, and its degrees."""

from __future__ import annotations

import jax.numpy as jnp
import jraph
import numpy as np
from flax import struct

__all__ = ["Graph", "node_degrees"]


@struct.dataclass
class Graph:
    """A node-classification graph with static shapes.

    Attributes:
      features: (N, F) float32 node features.
      labels: (N,) int32 class labels.
      senders, receivers: (E,) int32 directed edge endpoints; undirected edges appear in both
        directions, no self-loops.
      train_mask, val_mask, test_mask: (N,) bool, the standard split (all False for synthetic
        graphs without one).
      num_classes: static number of classes.
      name: static name of the data set ("cora", "citeseer", "csbm", ...).
    """

    features: jnp.ndarray
    labels: jnp.ndarray
    senders: jnp.ndarray
    receivers: jnp.ndarray
    train_mask: jnp.ndarray
    val_mask: jnp.ndarray
    test_mask: jnp.ndarray
    num_classes: int = struct.field(pytree_node=False, default=0)
    name: str = struct.field(pytree_node=False, default="graph")

    @property
    def num_nodes(self) -> int:
        return int(self.features.shape[0])

    @property
    def num_edges(self) -> int:
        """Number of directed edges (twice the undirected count)."""
        return int(self.senders.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    def to_graphs_tuple(self) -> jraph.GraphsTuple:
        """The same graph as a single ``jraph.GraphsTuple`` (node features as ``nodes``)."""
        return jraph.GraphsTuple(
            nodes=self.features,
            edges=None,
            senders=self.senders,
            receivers=self.receivers,
            globals=None,
            n_node=jnp.asarray([self.num_nodes]),
            n_edge=jnp.asarray([self.num_edges]),
        )


def node_degrees(graph: Graph) -> np.ndarray:
    """Degrees from the (both-direction) edge list of a ``Graph``: deg(i) = #{e : senders_e = i}."""
    return np.bincount(np.asarray(graph.senders), minlength=graph.num_nodes)
