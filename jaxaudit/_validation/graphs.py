"""Checks of graphs and class labels: a node-classification graph whose arrays agree, and integer
labels in range (host side; skipped when traced).

A graph file of a few hundred bytes can declare a graph whose training needs terabytes (one label
of 10⁹ implies 10⁹ classes; an (1, 6·10⁷) feature matrix, a first layer of 64 × 6·10⁷ weights).
:func:`check_graph_size` refuses such a graph before anything is allocated: the float32 memory one
model's training needs at least, :func:`training_bytes`, must not exceed :func:`memory_limit`,
half of this machine's physical memory.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

from jaxaudit._validation.core import _as_array, _describe, is_traced


class _GraphLike(Protocol):
    """What :func:`check_graph` reads of a ``jaxaudit.graph.Graph`` (this module sits below the
    graph package, so it names the fields instead of importing the class)."""

    features: Any
    labels: Any
    senders: Any
    receivers: Any
    train_mask: Any
    val_mask: Any
    test_mask: Any
    num_classes: int


#: Hidden width of the built-in GNNs (``jaxaudit.graph.models``: GCN, GraphSAGE, GAT), which
#: :func:`training_bytes` assumes.
HIDDEN = 64

#: Largest class count: labels are stored as int32.
MAX_CLASSES = 2**31 - 1


def memory_limit() -> int:
    """Bytes one graph's training may need: half of this machine's physical memory,
    ``os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")`` (the other half is left to the
    operating system, XLA's temporaries and the run's other arrays). 16 GiB where the system
    does not report its memory."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        total = -1
    return int(total) // 2 if total > 0 else 16 * 2**30


def training_bytes(num_nodes: int, num_features: int, num_classes: int, num_edges: int = 0
                   ) -> int:
    """A lower estimate of the bytes (float32) that training one two-layer GNN of width
    ``HIDDEN`` = H on a graph of N nodes, F features, C classes and E directed edges needs:

        4 · [N·F + 8·H·(F + C) + 4·(N + E)·(H + C)]

    the dense features; the two layers' weights eight times (the weights, their gradient, Adam's
    two moments, the update, weight decay's term and the loop's copies); the activations
    (per node) and messages (per edge) of both layers, forward and backward, four times. Python
    integers throughout, so no size overflows."""
    n, f, c, e = (int(v) for v in (num_nodes, num_features, num_classes, num_edges))
    return 4 * (n * f + 8 * HIDDEN * (f + c) + 4 * (n + e) * (HIDDEN + c))


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.3g} GiB" if nbytes < 2**40 else f"{nbytes / 2**40:.3g} TiB"


def check_graph_size(num_nodes: int, num_features: int, num_classes: int, num_edges: int = 0,
                     *, features: str = "features", classes: str = "num_classes",
                     edges: str = "edges") -> None:
    """Refuse a graph whose training cannot fit in memory (:func:`training_bytes` over
    :func:`memory_limit`) or whose classes do not fit int32 labels, before anything is
    allocated. The message names ``classes``, ``features`` or ``edges``, whichever makes the
    estimate too large (how the caller calls the class count, as in ``f"{classes} = {C}"``, the
    feature array and the edge array)."""
    if int(num_classes) > MAX_CLASSES:
        raise ValueError(f"{classes} = {int(num_classes)} exceeds the int32 labels' maximum "
                         f"{MAX_CLASSES}")
    need, limit = training_bytes(num_nodes, num_features, num_classes, num_edges), memory_limit()
    if need <= limit:
        return
    n, f, c, e = int(num_nodes), int(num_features), int(num_classes), int(num_edges)
    if training_bytes(n, f, 1, e) <= limit:
        what = f"{classes} = {c}"
    elif training_bytes(n, f, c, 0) > limit:
        what = f"{features} of shape ({n}, {f})"
    else:
        what = f"{edges}: {e} directed edges"
    raise ValueError(
        f"{what}: training a GNN on this graph needs at least {_gib(need)}, over the limit of "
        f"{_gib(limit)} (half of this machine's physical memory; estimate: "
        f"jaxaudit._validation.graphs.training_bytes)")


def check_graph(graph: _GraphLike) -> None:
    """A node-classification graph whose arrays agree: features (N, F) finite with N, F >= 1,
    labels (N,) integers in [0, num_classes) with at least two classes present,
    senders/receivers (E,) integers in [0, N) of equal length, masks (N,), and a training that
    fits in memory (:func:`check_graph_size`). ValueError naming the field (an out-of-range index
    would otherwise be clipped or dropped silently by XLA's gathers and scatters)."""
    if is_traced(graph.features, graph.labels, graph.senders, graph.receivers):
        return
    features = np.asarray(graph.features)
    if features.ndim != 2:
        raise ValueError(f"graph.features must have shape (N, F), got {features.shape}")
    n = features.shape[0]
    check_node_count("graph.features", features.shape)
    try:
        k = int(graph.num_classes)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"graph.num_classes must be an integer, got {graph.num_classes!r}"
                         ) from err
    check_graph_size(n, features.shape[1], k, np.size(graph.senders), features="graph.features",
                     classes="graph.num_classes", edges="graph.senders")
    if not np.isfinite(features).all():
        raise ValueError("graph.features must be finite")
    labels = np.asarray(graph.labels)
    if labels.shape != (n,):
        raise ValueError(f"graph.labels must have shape ({n},), got {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise ValueError(f"graph.labels must be integers, got dtype {labels.dtype}")
    if n and (labels.min() < 0 or labels.max() >= k):
        bad = labels[(labels < 0) | (labels >= k)][0]
        raise ValueError(f"graph.labels must lie in [0, num_classes={k}), got {int(bad)}")
    check_two_classes("graph.labels", labels)
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    if senders.ndim != 1 or receivers.shape != senders.shape:
        raise ValueError(f"graph.senders and graph.receivers must be 1-D of equal length, got "
                         f"shapes {senders.shape} and {receivers.shape}")
    for field, idx in (("senders", senders), ("receivers", receivers)):
        if idx.dtype.kind not in "iu":
            raise ValueError(f"graph.{field} must be integers, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise ValueError(f"graph.{field} must lie in [0, N={n}), got {int(bad)}")
    for field in ("train_mask", "val_mask", "test_mask"):
        shape = np.shape(getattr(graph, field))
        if shape != (n,):
            raise ValueError(f"graph.{field} must have shape ({n},), got {shape}")


def check_node_count(name: str, shape: tuple[int, ...]) -> None:
    """An (N, F) feature shape with at least one node and one feature (every model divides by
    both: the mean loss over nodes, the first layer's fan-in)."""
    if shape[0] < 1:
        raise ValueError(f"{name} must hold at least one node (row), got shape {shape}")
    if shape[1] < 1:
        raise ValueError(f"{name} must hold at least one feature (column) per node, got shape "
                         f"{shape}")


def check_two_classes(name: str, labels: np.ndarray) -> None:
    """At least two classes present among ``labels``. A shadow model's score of node i is
    ``z_y − logsumexp_{c≠y} z_c``: with one class there is no other class, so every score is
    +inf, and a model trained on one class learns nothing to attack."""
    present = np.unique(labels)
    if present.size < 2:
        which = f"class {int(present[0])}" if present.size else "no class"
        raise ValueError(
            f"{name} hold {which} only: a membership score compares a node's true class with the "
            f"others, so at least two classes must be present (and so at least two nodes)")


def check_labels(name: str, labels: Any, num_classes: int | None = None) -> np.ndarray:
    """Integer class labels (integral floats accepted, fractions refused) in [0, num_classes)
    when ``num_classes`` is known (else in [0, 2**63), so that the int64 cast cannot wrap);
    returned as an int64 array (unchecked and unchanged when traced)."""
    if is_traced(labels):
        return labels
    arr = _as_array(name, labels)
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].ravel()[0]
        raise ValueError(f"{name} must be integer class labels, got {float(bad)!r}")
    high = 2.0**63 if num_classes is None else int(num_classes)
    bad = (arr < 0) | (arr >= high)
    if bad.any():
        interval = "[0, 2**63)" if num_classes is None else f"[0, num_classes={high})"
        raise ValueError(f"{name} must lie in {interval}, got "
                         f"{_describe(arr, bad, integers=True)}")
    return arr.astype(np.int64)
