"""The data directory's inventory: what a data set holds, which known files are present and
intact, and fetching the missing ones (what ``jaxaudit data info|verify|download`` prints).

- :func:`describe_dataset`: nodes, undirected edges, features, classes, label counts and split
  sizes of a graph (cora, citeseer, csbm), or images and label counts (mnist's test split,
  cifar10's train split), as ``{label: text}`` in the order printed.
- :func:`verify_data_dir`: every known file found in the data directory checked against its
  published digest (SHA-256; MD5 for the CIFAR-10 batches, see :mod:`jaxaudit.datasets.cifar10`),
  and the files missing from a data set (split) of which other files are present.
- :func:`fetch_dataset`: the missing files of one data set from its canonical locations, every
  file of it verified; the data folder is checked first, so a file in the way, a read-only
  folder or a full disk is one error naming the folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
from numpy.typing import ArrayLike

from jaxaudit._validation import check_choice
from jaxaudit.datasets._files import FileStatus, prepare_folder, resolve_data_dir, verify_files
from jaxaudit.datasets.cifar10 import load_cifar10, verify_cifar10_files
from jaxaudit.datasets.csbm import edge_homophily
from jaxaudit.datasets.fetch import DATASETS as FILE_DATASETS
from jaxaudit.datasets.fetch import dataset_files, download_dataset, missing_files
from jaxaudit.datasets.mnist import load_mnist
from jaxaudit.datasets.planetoid import load_planetoid
from jaxaudit.datasets.registry import graph_by_name

__all__ = ["INFO_DATASETS", "Inventory", "dataset_names", "describe_dataset", "fetch_dataset",
           "verify_data_dir"]

#: The data sets :func:`describe_dataset` knows (the files' data sets and the generated CSBM).
INFO_DATASETS = (*FILE_DATASETS, "csbm")

_SPLITS = (("cora", (None,)), ("citeseer", (None,)), ("mnist", ("test", "train")),
           ("cifar10", ("test", "train")))


def _counts(labels: ArrayLike, num_classes: int) -> str:
    counts = np.bincount(np.asarray(labels), minlength=num_classes)
    return " ".join(f"{c}:{int(n)}" for c, n in enumerate(counts))


def describe_dataset(name: str, data_dir: str | os.PathLike[str] | None = None, *,
                     download: bool = False, key: jax.Array | None = None) -> dict[str, str]:
    """What data set ``name`` (one of :data:`INFO_DATASETS`) holds, ``{label: text}``.

    Args:
      name: a data set; MNIST is described by its test split, CIFAR-10 by its train split.
      data_dir: data directory (None: ``$JAXAUDIT_DATA`` or ``~/.cache/jaxaudit``).
      download: fetch missing files first.
      key: the CSBM's PRNG key (:func:`jaxaudit.datasets.graph_by_name`; None:
        ``jax.random.key(0)``).

    Raises:
      ValueError: an unknown name; FileNotFoundError: missing files (naming the remedy).
    """
    check_choice("name", name, INFO_DATASETS)
    if name in ("mnist", "cifar10"):
        split = "test" if name == "mnist" else "train"
        load = load_mnist if name == "mnist" else load_cifar10
        images, labels = load(split, data_dir, download)
        shape = "x".join(str(s) for s in images.shape[1:])
        return {"dataset": f"{name} ({split} split)", "images": str(images.shape[0]),
                "image shape": f"{shape} uint8" + (" (HWC)" if name == "cifar10" else ""),
                "pixel range": f"{int(images.min())}..{int(images.max())}", "classes": "10",
                "label counts": _counts(labels, 10)}
    if name == "csbm":  # the CSBM of the shadow and bmp commands (graph_by_name)
        graph = graph_by_name(name, key=key)
    else:
        graph = load_planetoid(name, data_dir, download)

    sizes = [int(np.asarray(m).sum()) for m in (graph.train_mask, graph.val_mask, graph.test_mask)]
    return {"dataset": graph.name, "nodes": str(graph.num_nodes),
            "undirected edges": str(graph.num_edges // 2), "directed edges": str(graph.num_edges),
            "features": str(graph.num_features), "classes": str(graph.num_classes),
            "label counts": _counts(graph.labels, graph.num_classes),
            "edge homophily": f"{edge_homophily(graph):.4f}",
            "split (train/val/test)": "/".join(str(s) for s in sizes)}


class Inventory(NamedTuple):
    """Result of :func:`verify_data_dir`.

    Attributes:
      root: the data directory.
      found: every known file present, with its status ``"ok"`` or ``"bad"`` (digest mismatch).
      missing: the files absent from a data set (split) of which other files are present.
    """

    root: Path
    found: list[FileStatus]
    missing: list[Path]

    @property
    def bad(self) -> list[FileStatus]:
        """The files whose digest does not match."""
        return [f for f in self.found if f.status == "bad"]

    @property
    def complete(self) -> bool:
        """No bad file and no data set partly present."""
        return not self.bad and not self.missing


def verify_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Inventory:
    """Check every known file in the data directory and find the partly present data sets.

    Raises:
      FileNotFoundError: the data directory does not exist, or holds no known file (nothing
        would be verified: a wrong folder is an error, not a clean bill).
    """
    root = resolve_data_dir(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data directory {root} does not exist (--data-dir or "
                                "$JAXAUDIT_DATA; `jaxaudit data download` creates it)")
    found = [r for r in verify_files(root) + verify_cifar10_files(root) if r.status != "missing"]
    if not found:
        raise FileNotFoundError(
            f"no known data file found in {root} (expected sub-folders planetoid/, mnist/, "
            "cifar10/cifar-10-batches-py/); nothing was verified. Point --data-dir or "
            "$JAXAUDIT_DATA at the data, or run `jaxaudit data download`")
    missing = []
    for name, splits in _SPLITS:
        for split in splits:
            paths = dataset_files(name, root, split)
            absent = [p for p in paths if not p.is_file()]
            if absent and len(absent) < len(paths):
                missing += absent
    return Inventory(root, found, missing)


def dataset_names(names: Sequence[str] = ()) -> tuple[str, ...]:
    """The data sets stored in files among ``names`` (checked; empty: all of them)."""
    for name in names:
        check_choice("names", name, FILE_DATASETS)
    return tuple(names) or FILE_DATASETS


def fetch_dataset(name: str, data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Fetch the missing files of data set ``name`` (one of ``fetch.DATASETS``) and verify every
    file of it (:func:`jaxaudit.datasets.fetch.download_dataset`); returns the fetched paths."""
    check_choice("name", name, FILE_DATASETS)
    root = resolve_data_dir(data_dir)
    for folder in dict.fromkeys(p.parent for p in missing_files(name, root)):
        prepare_folder(folder)  # a file in the way, read-only: one clear error, no traceback
    return download_dataset(name, root)
