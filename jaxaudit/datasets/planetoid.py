"""Planetoid citation graphs (Cora, CiteSeer) from the canonical ``ind.<name>.*`` files.

The files are those of the ``planetoid`` repository of Yang, Cohen and Salakhutdinov,
"Revisiting Semi-Supervised Learning with Graph Embeddings", ICML 2016
(https://github.com/kimiyoung/planetoid): Python-2 pickles of scipy sparse feature matrices
(``x``, ``tx``, ``allx``), one-hot label arrays (``y``, ``ty``, ``ally``), an adjacency dict
(``graph``) and a text file of test indices (``test.index``).

Assembly is the standard one (Kipf & Welling's ``gcn`` loader, also PyTorch Geometric's):
features = vstack(allx, tx) with the test rows moved to the positions listed in ``test.index``;
CiteSeer's isolated test nodes (indices missing from ``test.index``) get zero feature rows and
all-zero one-hot labels (label 0 after argmax; they are in no split). Masks: train = the first
``len(y)`` nodes (20 per class), val = the next 500, test = the sorted ``test.index``.
"""

from __future__ import annotations

import collections
import os
import pickle
import warnings
from typing import Any

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from jaxaudit._validation import check_choice
from jaxaudit.datasets._files import require_files
from jaxaudit.graph.types import Graph

PLANETOID_NAMES = ("cora", "citeseer")
_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
_NUM_VAL = 500


class _PlanetoidUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the classes the Planetoid pickles use.

    ``scipy.sparse.csr`` (the module name in the Python-2 pickles) is mapped to
    ``scipy.sparse``, so loading does not depend on scipy's old module paths; any other
    class is refused.
    """

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("scipy.sparse") and name in ("csr_matrix", "csc_matrix", "lil_matrix"):
            return getattr(sp, name)
        if (module, name) == ("collections", "defaultdict"):
            return collections.defaultdict
        if (module, name) in (("__builtin__", "list"), ("builtins", "list")):
            return list
        if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray") and name in (
            "ndarray",
            "dtype",
            "_reconstruct",
        ):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*numpy\.core")
                return super().find_class(module, name)
        raise pickle.UnpicklingError(f"unexpected class {module}.{name} in a Planetoid file")


def _unpickle(path: str | os.PathLike[str]) -> Any:
    with open(path, "rb") as f, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*numpy\.core")
        return _PlanetoidUnpickler(f, encoding="latin1").load()


def _edges_from_dict(adjacency: dict[int, list[int]], num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrised, de-duplicated edges without self-loops, sorted by (sender, receiver)."""
    src = np.fromiter((u for u, nbrs in adjacency.items() for _ in nbrs), dtype=np.int64)
    dst = np.fromiter((v for nbrs in adjacency.values() for v in nbrs), dtype=np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    both = np.concatenate([src * num_nodes + dst, dst * num_nodes + src])
    codes = np.unique(both)
    return (codes // num_nodes).astype(np.int32), (codes % num_nodes).astype(np.int32)


def load_planetoid(name: str, data_dir: str | os.PathLike[str] | None = None,
                   download: bool = False) -> Graph:
    """Load Cora or CiteSeer as a :class:`Graph` with the standard Planetoid split.

    Every file is checked against its SHA-256 before it is unpickled.

    Args:
      name: ``"cora"`` or ``"citeseer"`` (case-insensitive).
      data_dir: data directory holding ``planetoid/``; default ``$JAXAUDIT_DATA`` or
        ``~/.cache/jaxaudit``.
      download: fetch missing files from https://github.com/kimiyoung/planetoid (verified
        before use).

    Returns:
      A ``Graph``: features (N, F) float32, labels (N,) int32, undirected edges in both
      directions without self-loops, train/val/test masks (Cora: 2708 nodes, 1433 features,
      7 classes, 5278 undirected edges, 140/500/1000 split; CiteSeer: 3327, 3703, 6, 4552,
      120/500/1000).

    Raises:
      FileNotFoundError: a file is missing and ``download`` is False.
      ValueError: unknown name, or a file fails its checksum.

    References:
      Yang, Cohen, Salakhutdinov, "Revisiting Semi-Supervised Learning with Graph Embeddings",
      ICML 2016. Kipf, Welling, "Semi-Supervised Classification with Graph Convolutional
      Networks", ICLR 2017 (the assembly).
    """
    name = str(name).lower()
    check_choice("name", name, PLANETOID_NAMES)
    paths = require_files("planetoid", [f"ind.{name}.{p}" for p in _PARTS], data_dir, download)
    obj = {p: _unpickle(paths[f"ind.{name}.{p}"]) for p in _PARTS if p != "test.index"}
    test_index = np.loadtxt(paths[f"ind.{name}.test.index"], dtype=np.int64).reshape(-1)

    y, tx, ty, allx, ally = obj["y"], obj["tx"], obj["ty"], obj["allx"], obj["ally"]
    test_range = np.sort(test_index)
    if name == "citeseer":
        # Isolated test nodes are missing from test.index: pad tx/ty with zero rows for them.
        full = np.arange(test_range.min(), test_range.max() + 1)
        tx_ext = sp.lil_matrix((len(full), tx.shape[1]), dtype=np.float32)
        tx_ext[test_range - test_range.min(), :] = tx
        ty_ext = np.zeros((len(full), ty.shape[1]), dtype=ty.dtype)
        ty_ext[test_range - test_range.min(), :] = ty
        tx, ty = tx_ext, ty_ext

    features = sp.vstack([allx, tx]).toarray().astype(np.float32)
    onehot = np.vstack([ally, ty])
    features[test_index, :] = features[test_range, :]
    onehot[test_index, :] = onehot[test_range, :]
    labels = onehot.argmax(axis=1).astype(np.int32)
    num_nodes = features.shape[0]

    senders, receivers = _edges_from_dict(obj["graph"], num_nodes)
    train = np.zeros(num_nodes, bool)
    train[: y.shape[0]] = True
    val = np.zeros(num_nodes, bool)
    val[y.shape[0] : y.shape[0] + _NUM_VAL] = True
    test = np.zeros(num_nodes, bool)
    test[test_range] = True

    return Graph(
        features=jnp.asarray(features),
        labels=jnp.asarray(labels),
        senders=jnp.asarray(senders),
        receivers=jnp.asarray(receivers),
        train_mask=jnp.asarray(train),
        val_mask=jnp.asarray(val),
        test_mask=jnp.asarray(test),
        num_classes=int(onehot.shape[1]),
        name=name,
    )
