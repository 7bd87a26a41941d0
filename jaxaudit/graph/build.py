"""A ``Graph`` from the user's own data: an edge index, a PyG ``Data`` object, a networkx graph,
or an ``.npz`` file.

The GNN engine expects an undirected simple graph stored in both directions: for every edge
{i, j} with i ≠ j, the pairs (i, j) and (j, i) each once, and no self-loop (the GCN adds its own
self-loops; an extra one would double-count the node). :func:`from_edge_index` turns any edge
list into that form — it symmetrises, drops self-loops and duplicates, and sorts by (sender,
receiver) — and validates every array, so an out-of-range index fails with a ``ValueError``
naming the argument instead of being clipped by XLA's gathers.

The ``.npz`` format read by :func:`load_graph_npz` (and ``jaxaudit shadow|bmp --graph FILE``):

============== ============ ==============================================================
array           shape        meaning
============== ============ ==============================================================
``features``    (N, F)       finite node features (float)
``labels``      (N,)         integer classes in [0, num_classes)
``edge_index``  (2, E)       integer endpoints in [0, N), any direction, duplicates allowed
``train_mask``  (N,)         optional boolean split; likewise ``val_mask``, ``test_mask``
``num_classes`` ()           optional integer (default: max(labels) + 1)
``name``        ()           optional unicode string (default: the file's stem)
============== ============ ==============================================================

It is read without unpickling (``allow_pickle=False``) and with the declared sizes checked
before anything is decompressed. Every constructor then refuses, naming the array: a graph
without nodes or features, fewer than two classes present (a node's membership score compares its
true class with the others), a non-integer or non-scalar ``num_classes``, and a graph whose
training would not fit in memory — at least ``4·[N·F + 8·64·(F + C) + 4·(N + E)·(64 + C)]`` bytes
for N nodes, F features, C classes and E directed edges, against half the machine's physical
memory (``jaxaudit._validation.graphs.training_bytes``), so that one label of 10⁹ (10⁹ classes)
or a width of 6·10⁷ features is refused before anything of that size is allocated. Narrow floats
(bfloat16) are upcast to float32. The constructors run on the host (numpy); under ``jax.jit``
they raise a ``TypeError`` saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeAlias

import jax.numpy as jnp
import numpy as np

from jaxaudit._validation import (
    ArgumentTypeError,
    check_graph,
    check_input_path,
    check_integer,
    check_labels,
    is_traced,
)
from jaxaudit._validation.graphs import (
    check_graph_size,
    check_node_count,
    check_two_classes,
)
from jaxaudit.graph.types import Graph

__all__ = ["from_edge_index", "from_jraph", "from_networkx", "from_pyg", "load_graph_npz",
           "save_graph_npz"]

#: An array from any library: numpy, jax, a nested list, or a torch tensor (read through
#: ``.detach().cpu().numpy()``, so torch is never imported).
ArrayInput: TypeAlias = Any


def _to_numpy(name: str, value: ArrayInput) -> np.ndarray:
    """numpy view of an array-like (a torch tensor through ``.detach().cpu().numpy()``); a JAX
    tracer is refused: the constructors run on the host."""
    if is_traced(value):
        raise ArgumentTypeError(
            f"{name} is a traced array: the graph constructors of jaxaudit.graph "
            "(from_edge_index, from_jraph, from_pyg, from_networkx) run on the host, with numpy "
            "(they symmetrise, deduplicate and sort the edges); call them outside jax.jit/vmap and "
            "pass the Graph in")
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    if isinstance(value, str | bytes):
        raise ArgumentTypeError(f"{name} must be an array, got the string {value!r}")
    arr = np.asarray(value)
    if arr.dtype == object:
        raise ArgumentTypeError(f"{name} must be a numeric array, got dtype object")
    return arr


def _features(features: ArrayInput) -> np.ndarray:
    """(N, F) float32 features with N, F >= 1, finite in float32 (bfloat16 and other narrow
    floats upcast, as the library's other checks do)."""
    x = _to_numpy("features", features)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (N, F), got {x.shape}")
    if x.dtype.kind == "V" and jnp.issubdtype(x.dtype, jnp.floating):  # bfloat16, float8
        x = x.astype(np.float32)
    if x.dtype.kind not in "biuf":
        raise ArgumentTypeError(f"features must be numeric, got dtype {x.dtype}")
    check_node_count("features", x.shape)
    if not np.all(np.isfinite(x)):
        raise ValueError("features must be finite")
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32, copy=False)
    if not np.all(np.isfinite(x32)):
        raise ValueError("features must be finite in float32 (|x| <= 3.4e38), the GNNs' precision")
    return x32


def _mask(name: str, value: ArrayInput | None, num_nodes: int) -> np.ndarray:
    if value is None:
        return np.zeros(num_nodes, dtype=bool)
    arr = _to_numpy(name, value)
    if arr.shape != (num_nodes,):
        raise ValueError(f"{name} must have shape ({num_nodes},), got {arr.shape}")
    if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must be boolean (0/1)")
    return arr.astype(bool)


def _edges(edge_index: ArrayInput, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrised, self-loop-free, duplicate-free (sender, receiver) pairs in sorted order."""
    edges = _to_numpy("edge_index", edge_index)
    if edges.ndim != 2 or edges.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {edges.shape}")
    if edges.size and edges.dtype.kind not in "iu":
        if edges.dtype.kind != "f" or not np.all(np.isfinite(edges)) or np.any(
                edges != np.round(edges)):
            raise ValueError(f"edge_index must hold integer node indices, got dtype {edges.dtype}")
    if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):  # before the int64 cast,
        bad = edges[(edges < 0) | (edges >= num_nodes)][0]              # which wraps 2**64 - 1
        raise ValueError(f"edge_index must lie in [0, N={num_nodes}), got {int(bad)}")
    edges = edges.astype(np.int64)
    both = np.concatenate([edges, edges[::-1]], axis=1)
    both = both[:, both[0] != both[1]]
    both = np.unique(both, axis=1) if both.size else both.reshape(2, 0)
    return both[0].astype(np.int32), both[1].astype(np.int32)


def from_edge_index(features: ArrayInput, labels: ArrayInput, edge_index: ArrayInput, *,
                    num_classes: int | None = None, train_mask: ArrayInput | None = None,
                    val_mask: ArrayInput | None = None, test_mask: ArrayInput | None = None,
                    name: str = "graph") -> Graph:
    """A :class:`~jaxaudit.graph.Graph` from node arrays and an edge list.

    Args:
      features: (N, F) finite node features (numpy, jax or torch).
      labels: (N,) integer classes (integral floats accepted).
      edge_index: (2, E) integer endpoints, in either or both directions; self-loops and
        duplicates are dropped, every edge is stored in both directions.
      num_classes: number of classes (default ``max(labels) + 1``).
      train_mask, val_mask, test_mask: optional (N,) boolean split (default all False).
      name: the data set's name, carried as static metadata.

    Returns:
      The validated ``Graph`` (float32 features, int32 labels and edges).

    Raises:
      ValueError: a shape that does not fit, no node or no feature, a non-finite feature, a
        label outside [0, num_classes), fewer than two classes present, an edge endpoint outside
        [0, N), or a graph whose training would not fit in memory (module docstring).
      TypeError: a non-numeric array, or a traced one (call this outside ``jax.jit``).

    Examples:
      >>> import numpy as np
      >>> g = from_edge_index(np.eye(3), [0, 1, 1], [[0, 1, 1], [1, 0, 2]])
      >>> g.senders.tolist(), g.receivers.tolist()
      ([0, 1, 1, 2], [1, 0, 2, 1])
    """
    x = _features(features)
    n = x.shape[0]
    y_raw = _to_numpy("labels", labels)
    if y_raw.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {y_raw.shape}")
    # the memory check (edges counted once they are deduplicated, by check_graph below) before
    # any array of the class count's size exists: num_classes or one label may be absurd
    if num_classes is not None:
        k = check_integer("num_classes", num_classes, minimum=1, maximum=None)
        check_graph_size(n, x.shape[1], k)
        y = check_labels("labels", y_raw, k)
    else:
        y = check_labels("labels", y_raw)
        k = int(y.max()) + 1
        check_graph_size(n, x.shape[1], k,
                         classes=f"labels: the largest, {k - 1}, implies num_classes")
    check_two_classes("labels", y)
    if not isinstance(name, str):
        raise ArgumentTypeError(f"name must be a string, got {name!r}")
    senders, receivers = _edges(edge_index, n)
    graph = Graph(
        features=jnp.asarray(x),
        labels=jnp.asarray(y, dtype=jnp.int32),
        senders=jnp.asarray(senders),
        receivers=jnp.asarray(receivers),
        train_mask=jnp.asarray(_mask("train_mask", train_mask, n)),
        val_mask=jnp.asarray(_mask("val_mask", val_mask, n)),
        test_mask=jnp.asarray(_mask("test_mask", test_mask, n)),
        num_classes=k,
        name=name,
    )
    check_graph(graph)
    return graph


def from_pyg(data: Any, *, num_classes: int | None = None, name: str = "pyg") -> Graph:
    """A ``Graph`` from a PyTorch Geometric ``Data`` object (``x``, ``y``, ``edge_index`` and the
    masks it has). torch_geometric itself is not imported: any object with these attributes
    works."""
    for field in ("x", "y", "edge_index"):
        if getattr(data, field, None) is None:
            raise ValueError(f"data.{field} is missing: a PyG Data object needs x, y and edge_index")
    return from_edge_index(
        data.x, data.y, data.edge_index, num_classes=num_classes,
        train_mask=getattr(data, "train_mask", None), val_mask=getattr(data, "val_mask", None),
        test_mask=getattr(data, "test_mask", None), name=name)


def from_jraph(graphs_tuple: Any, labels: ArrayInput, *, num_classes: int | None = None,
               train_mask: ArrayInput | None = None, val_mask: ArrayInput | None = None,
               test_mask: ArrayInput | None = None, name: str = "jraph") -> Graph:
    """A ``Graph`` from a ``jraph.GraphsTuple`` and the nodes' labels (the inverse of
    :meth:`Graph.to_graphs_tuple`).

    ``nodes`` are the features ((N, F) array), ``senders``/``receivers`` the edges (either or
    both directions; stored in both, self-loops and duplicates dropped, as
    :func:`from_edge_index`). Edge features and globals are not used (a shadow model receives
    its edge weights in ``edges``). A batch of several graphs is read as one graph with their
    disjoint union of nodes; padding graphs (``jraph.pad_with_graphs``) would become nodes of
    it, so unpad first.

    Args:
      graphs_tuple: a ``jraph.GraphsTuple`` (any object with ``nodes``, ``senders``,
        ``receivers``; jraph is not imported).
      labels: (N,) integer classes.
      num_classes, train_mask, val_mask, test_mask, name: as in :func:`from_edge_index`.

    Returns:
      The validated ``Graph``.

    Examples:
      >>> import jraph, numpy as np
      >>> gt = jraph.GraphsTuple(nodes=np.eye(3), edges=None, senders=np.array([0, 1]),
      ...                        receivers=np.array([1, 2]), globals=None,
      ...                        n_node=np.array([3]), n_edge=np.array([2]))
      >>> from_jraph(gt, [0, 1, 1]).senders.tolist()
      [0, 1, 1, 2]
    """
    for field in ("nodes", "senders", "receivers"):
        if not hasattr(graphs_tuple, field):
            raise ArgumentTypeError(f"graphs_tuple must be a jraph.GraphsTuple (nodes, senders, "
                                    f"receivers), got {type(graphs_tuple).__name__}")
    nodes = graphs_tuple.nodes
    if nodes is None or isinstance(nodes, dict | list | tuple):
        raise ArgumentTypeError(f"graphs_tuple.nodes must be one (N, F) feature array, got "
                                f"{type(nodes).__name__}")
    senders = _to_numpy("graphs_tuple.senders", graphs_tuple.senders)
    receivers = _to_numpy("graphs_tuple.receivers", graphs_tuple.receivers)
    if senders.ndim != 1 or receivers.shape != senders.shape:
        raise ValueError(f"graphs_tuple.senders and receivers must be (E,) arrays of one shape, "
                         f"got {senders.shape} and {receivers.shape}")
    n_node = getattr(graphs_tuple, "n_node", None)
    rows = np.shape(nodes)[0] if np.ndim(nodes) else None
    if n_node is not None and rows is not None:
        total = int(np.sum(_to_numpy("graphs_tuple.n_node", n_node)))
        if total != rows:
            raise ValueError(f"graphs_tuple.n_node sums to {total} but graphs_tuple.nodes has "
                             f"{rows} rows")
    return from_edge_index(nodes, labels, np.stack([senders, receivers]),
                           num_classes=num_classes, train_mask=train_mask, val_mask=val_mask,
                           test_mask=test_mask, name=name)


def from_networkx(nx_graph: Any, *, features: str = "x", label: str = "y",
                  num_classes: int | None = None, name: str = "networkx") -> Graph:
    """A ``Graph`` from a networkx graph whose nodes carry a feature vector (attribute
    ``features``) and a class (attribute ``label``). Nodes are numbered in ``nx_graph.nodes``
    order; edge direction is ignored. networkx is not imported: only the graph's own methods are
    used."""
    nodes = list(nx_graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    attrs = nx_graph.nodes
    for attr in (features, label):
        missing = [node for node in nodes if attr not in attrs[node]]
        if missing:
            raise ValueError(f"node {missing[0]!r} has no attribute {attr!r}")
    x = np.stack([np.asarray(attrs[node][features], dtype=np.float64) for node in nodes]) \
        if nodes else np.zeros((0, 1))
    y = np.asarray([attrs[node][label] for node in nodes])
    pairs = [(index[u], index[v]) for u, v in nx_graph.edges()]
    edge_index = np.asarray(pairs, dtype=np.int64).T.reshape(2, -1)
    return from_edge_index(x, y, edge_index, num_classes=num_classes, name=name)


def save_graph_npz(path: str | os.PathLike[str], graph: Graph) -> Path:
    """Write ``graph`` in the ``.npz`` format of this module (read back by
    :func:`load_graph_npz`).

    Raises:
      TypeError: ``path`` is not a path (a string or ``os.PathLike``) or ``graph`` is not a
        :class:`~jaxaudit.graph.Graph`; the message names the argument (and says when the two
        were swapped).
    """
    if isinstance(path, Graph) and isinstance(graph, str | os.PathLike):
        raise ArgumentTypeError("save_graph_npz takes (path, graph): the arguments are swapped "
                                f"(path is a Graph, graph is {graph!r})")
    if not isinstance(path, str | os.PathLike):
        raise ArgumentTypeError(f"path must be a file path (str or os.PathLike), got "
                                f"{type(path).__name__}")
    if not isinstance(graph, Graph):
        raise ArgumentTypeError(f"graph must be a jaxaudit.graph.Graph, got "
                                f"{type(graph).__name__}")
    path = Path(path)
    np.savez(path, features=np.asarray(graph.features), labels=np.asarray(graph.labels),
             edge_index=np.stack([np.asarray(graph.senders), np.asarray(graph.receivers)]),
             train_mask=np.asarray(graph.train_mask), val_mask=np.asarray(graph.val_mask),
             test_mask=np.asarray(graph.test_mask), num_classes=np.asarray(graph.num_classes),
             name=np.asarray(graph.name))
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def _name_field(value: np.ndarray) -> str:
    if value.ndim != 0 or value.dtype.kind != "U":
        raise ValueError(f"name must be a string (a 0-d unicode array), got dtype {value.dtype} "
                         f"and shape {value.shape}")
    return str(value)


def _num_classes_field(value: np.ndarray) -> int:
    """The stored class count: one integer (an integral float accepted), checked by
    :func:`from_edge_index` (NaN, fractions, arrays and booleans refused by name)."""
    if value.ndim != 0:
        raise ValueError(f"num_classes must be one integer (a 0-d array), got an array of shape "
                         f"{value.shape}")
    if value.dtype.kind not in "iuf":
        raise ValueError(f"num_classes must be an integer, got dtype {value.dtype}")
    return check_integer("num_classes", value.item(), minimum=1, maximum=None)


def load_graph_npz(path: str | os.PathLike[str]) -> Graph:
    """A ``Graph`` from an ``.npz`` file in this module's format, read without unpickling and
    validated by :func:`from_edge_index`.

    Raises:
      FileNotFoundError: no such file.
      ValueError: not an ``.npz`` archive, a required array missing, or any check of
        :func:`from_edge_index` failing (the message names the file).
    """
    from jaxaudit.runs.arrays import load_npz

    path = check_input_path("graph", path)
    arrays = load_npz(path, name=f"graph file {path}")
    missing = [k for k in ("features", "labels", "edge_index") if k not in arrays]
    if missing:
        raise ValueError(f"graph file {path} lacks the array(s) {', '.join(missing)} "
                         "(needs features, labels, edge_index)")
    unknown = sorted(set(arrays) - {"features", "labels", "edge_index", "train_mask", "val_mask",
                                    "test_mask", "num_classes", "name"})
    if unknown:
        raise ValueError(f"graph file {path} has unknown array(s) {', '.join(unknown)}")
    try:
        name = _name_field(arrays["name"]) if "name" in arrays else path.stem
        num_classes = _num_classes_field(arrays["num_classes"]) if "num_classes" in arrays \
            else None
        return from_edge_index(
            arrays["features"], arrays["labels"], arrays["edge_index"], num_classes=num_classes,
            train_mask=arrays.get("train_mask"), val_mask=arrays.get("val_mask"),
            test_mask=arrays.get("test_mask"), name=name)
    except ValueError as err:
        raise type(err)(f"graph file {path}: {err}") from None
