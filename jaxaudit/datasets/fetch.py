"""Which files each named data set needs, which are missing, and fetching them all at once.

``jaxaudit data download [NAME ...]`` and the test suite's data check use these: a data set is
*available* when every file it needs is in the data directory (see
:func:`jaxaudit.datasets.resolve_data_dir`); :func:`download_dataset` fetches the missing ones from
their canonical locations (the loaders' own download path: a temporary file, verified, then
renamed) and verifies every file of the set.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxaudit._validation import check_choice
from jaxaudit.datasets import cifar10
from jaxaudit.datasets._files import check_file, prepare_folder, require_files, resolve_data_dir
from jaxaudit.datasets.mnist import _FILES as _MNIST_FILES
from jaxaudit.datasets.planetoid import _PARTS as _PLANETOID_PARTS

#: The data sets that live in files (CSBM is generated and always available).
DATASETS = ("cora", "citeseer", "mnist", "cifar10")


def _splits(name: str, split: str | None) -> tuple[str, ...]:
    if name in ("mnist", "cifar10"):
        splits = tuple(_MNIST_FILES if name == "mnist" else cifar10.SPLITS)
        if split is None:
            return splits
        check_choice("split", split, splits)
        return (split,)
    if split is not None:
        raise ValueError(f"split must be None for {name}, got {split!r}")
    return ()


def dataset_files(name: str, data_dir: str | os.PathLike[str] | None = None,
                  split: str | None = None) -> list[Path]:
    """The paths of the files data set ``name`` needs (``split``: only that split's files).

    Args:
      name: one of :data:`DATASETS`.
      data_dir: data directory (None: ``$JAXAUDIT_DATA`` or ``~/.cache/jaxaudit``).
      split: for ``"mnist"`` and ``"cifar10"``, ``"train"`` or ``"test"``; None: both.

    Returns:
      Absolute paths (they need not exist).
    """
    check_choice("name", name, DATASETS)
    root = resolve_data_dir(data_dir)
    if name in ("cora", "citeseer"):
        return [root / "planetoid" / f"ind.{name}.{p}" for p in _PLANETOID_PARTS]
    if name == "mnist":
        return [root / "mnist" / f for s in _splits(name, split) for f in _MNIST_FILES[s][:2]]
    folder = cifar10.cifar10_folder(root)
    return [folder / b for s in _splits(name, split) for b in cifar10.SPLITS[s]]


def missing_files(name: str, data_dir: str | os.PathLike[str] | None = None,
                  split: str | None = None) -> list[Path]:
    """The files of :func:`dataset_files` that are not in the data directory."""
    return [p for p in dataset_files(name, data_dir, split) if not p.is_file()]


def download_dataset(name: str, data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Fetch the missing files of data set ``name`` and verify every file of the set.

    Args:
      name: one of :data:`DATASETS` (both splits of MNIST and CIFAR-10).
      data_dir: data directory (None: ``$JAXAUDIT_DATA`` or ``~/.cache/jaxaudit``).

    Returns:
      The paths that were fetched (empty when nothing was missing).

    Raises:
      FileNotFoundError: no canonical location answered for a missing file.
      ValueError: unknown name, a file (downloaded or already present) fails its checksum, or a
        file stands where a folder of the data directory should be.
      OSError: the data directory cannot be written (read-only, full disk); the message names it.
    """
    missing = missing_files(name, data_dir)
    root = resolve_data_dir(data_dir)
    if name == "cifar10":
        folder = cifar10.cifar10_folder(root)
        if missing:
            prepare_folder(folder)  # a file in the way / read-only: one clear error
            cifar10._download([p.name for p in missing], folder, verify=True)
        for batch in cifar10.BATCH_MD5:
            cifar10._check_batch_digest(folder / batch, batch)
        return missing
    sub = "mnist" if name == "mnist" else "planetoid"
    names = [p.name for p in dataset_files(name, root)]
    require_files(sub, names, root, download=True)  # fetches what is missing, verifies all
    for path in dataset_files(name, root):
        check_file(path, f"{sub}/{path.name}")
    return missing
