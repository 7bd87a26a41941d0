"""Checks of graphs and class labels: a node-classification graph whose arrays agree, and integer
labels in range (host side; skipped when traced)."""

from __future__ import annotations

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


def check_graph(graph: _GraphLike) -> None:
    """A node-classification graph whose arrays agree: features (N, F) finite, labels (N,)
    integers in [0, num_classes), senders/receivers (E,) integers in [0, N) of equal length,
    masks (N,). ValueError naming the field (an out-of-range index would otherwise be clipped or
    dropped silently by XLA's gathers and scatters)."""
    if is_traced(graph.features, graph.labels, graph.senders, graph.receivers):
        return
    features = np.asarray(graph.features)
    if features.ndim != 2:
        raise ValueError(f"graph.features must have shape (N, F), got {features.shape}")
    n = features.shape[0]
    if not np.isfinite(features).all():
        raise ValueError("graph.features must be finite")
    labels = np.asarray(graph.labels)
    if labels.shape != (n,):
        raise ValueError(f"graph.labels must have shape ({n},), got {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise ValueError(f"graph.labels must be integers, got dtype {labels.dtype}")
    k = int(graph.num_classes)
    if n and (labels.min() < 0 or labels.max() >= k):
        bad = labels[(labels < 0) | (labels >= k)][0]
        raise ValueError(f"graph.labels must lie in [0, num_classes={k}), got {int(bad)}")
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


def check_labels(name: str, labels: Any, num_classes: int | None = None) -> np.ndarray:
    """Integer class labels (integral floats accepted, fractions refused) in [0, num_classes)
    when ``num_classes`` is known (else >= 0); returned as an int64 array (unchecked and
    unchanged when traced)."""
    if is_traced(labels):
        return labels
    arr = _as_array(name, labels)
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].ravel()[0]
        raise ValueError(f"{name} must be integer class labels, got {float(bad)!r}")
    high = np.inf if num_classes is None else int(num_classes)
    bad = (arr < 0) | (arr >= high)
    if bad.any():
        interval = "[0, inf)" if num_classes is None else f"[0, num_classes={high})"
        raise ValueError(f"{name} must lie in {interval}, got {_describe(arr, bad)}")
    return arr.astype(np.int64)
