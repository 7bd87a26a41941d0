"""CIFAR-10 from the python-pickle batches (Krizhevsky, "Learning Multiple Layers of Features from
Tiny Images", technical report, University of Toronto, 2009).

Layout: ``<data_dir>/cifar10/cifar-10-batches-py/`` holds ``data_batch_1`` ... ``data_batch_5``
(train, 5 × 10 000 images) and ``test_batch`` (10 000 images), the files of the archive
``cifar-10-python.tar.gz`` published at https://www.cs.toronto.edu/~kriz/cifar.html. Each file is
a pickled dict whose ``b"data"`` is a (10000, 3072) uint8 array, one image per row in CHW order
(1024 red, then 1024 green, then 1024 blue values, each plane row-major), and whose
``b"labels"`` is a list of 10 000 labels in 0..9. The data cannot be shipped with jaxaudit: put
the files there yourself or let ``download=True`` (CLI: ``jaxaudit data info cifar10
--download``) fetch the archive.

Checksums (what is checked, and where each digest was published):

* the archive ``cifar-10-python.tar.gz``, when ``download=True`` fetches it, against its SHA-256
  (:data:`ARCHIVE_SHA256`, the ``file_hash`` of Keras's ``keras.datasets.cifar10.load_data``)
  *and* its MD5 (:data:`ARCHIVE_MD5`, listed on the dataset's page above); only a verified
  archive is opened, and only the six batch files are read out of it (never ``extractall``);
* every batch file, each time it is loaded and when it is extracted, against its MD5
  (:data:`BATCH_MD5`, the per-file digests of torchvision's ``torchvision.datasets.CIFAR10``).

No public per-batch SHA-256 is published by the dataset's authors, Keras, torchvision or
TensorFlow Datasets (the latter lists only the *binary* archive), so the batches are checked by
their published MD5: a guard against truncated, corrupted or substituted files, not against a
deliberately crafted MD5 collision. The strong check is the archive's SHA-256 at download time.
A batch is checksum-verified *before* it is unpickled; ``verify=False`` (for files you generated
yourself in the same format) skips the digests but not the structural checks. Unpickling is
restricted to the few numpy/builtin callables the format needs, so a file can never run code.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tarfile
import tempfile
import warnings
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from jaxaudit._validation import check_choice
from jaxaudit.datasets._files import ENV_VAR, FileStatus, fetch_first, resolve_data_dir

__all__ = ["load_cifar10", "verify_cifar10_files", "cifar10_folder"]

#: Sub-folder of the data directory, and the folder the archive unpacks to.
SUBFOLDER = "cifar10"
BATCH_FOLDER = "cifar-10-batches-py"

#: Batch files of each split.
SPLITS: dict[str, tuple[str, ...]] = {
    "train": tuple(f"data_batch_{i}" for i in range(1, 6)),
    "test": ("test_batch",),
}

#: Published MD5 of each extracted batch file (torchvision's ``CIFAR10`` dataset class).
BATCH_MD5: dict[str, str] = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}

#: The archive's name and canonical locations (tried in order).
ARCHIVE = "cifar-10-python.tar.gz"
ARCHIVE_URLS: tuple[str, ...] = ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",)
#: Published SHA-256 of the archive (Keras's ``keras.datasets.cifar10.load_data``).
ARCHIVE_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
#: Published MD5 of the archive (https://www.cs.toronto.edu/~kriz/cifar.html).
ARCHIVE_MD5 = "c58f30108f718f92721af3b95e74349a"

_IMAGE_SIZE = 32 * 32 * 3
_CHUNK = 1 << 20


def cifar10_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the batch files: ``<data_dir>/cifar10/cifar-10-batches-py``.

    Args:
      data_dir: data directory, or None for ``$JAXAUDIT_DATA`` / ``~/.cache/jaxaudit``.

    Returns:
      The folder as an absolute ``Path`` (it need not exist).
    """
    return resolve_data_dir(data_dir) / SUBFOLDER / BATCH_FOLDER


def _hashes(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(MD5, SHA-256) of a file, read once in 1 MiB chunks."""
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            md5.update(block)
            sha.update(block)
    return md5.hexdigest(), sha.hexdigest()


def _check_batch_digest(path: Path, name: str) -> None:
    """Refuse a batch file whose MD5 is not the published one (before it is unpickled)."""
    actual = _hashes(path)[0]
    if actual != BATCH_MD5[name]:
        raise ValueError(
            f"checksum mismatch for {path}: MD5 is {actual}, expected {BATCH_MD5[name]} (the "
            f"published digest of the CIFAR-10 '{name}'). The file is truncated, corrupted or not "
            f"the canonical CIFAR-10 batch; it was not used. Delete it and re-download it "
            f"(download=True), or pass verify=False if you generated this file yourself."
        )


def _check_archive_digest(path: Path) -> None:
    md5, sha = _hashes(path)
    if sha != ARCHIVE_SHA256 or md5 != ARCHIVE_MD5:
        raise ValueError(
            f"checksum mismatch for the downloaded {ARCHIVE}: SHA-256 {sha}, MD5 {md5}; expected "
            f"SHA-256 {ARCHIVE_SHA256}, MD5 {ARCHIVE_MD5}. The download is truncated, corrupted "
            f"or not the published archive; it was deleted and nothing was extracted."
        )


class _BatchUnpickler(pickle.Unpickler):
    """Unpickler that resolves only what a CIFAR-10 batch needs: numpy's array reconstruction
    (protocol 2 and the protocol-5 ``_frombuffer``), ``numpy.dtype`` and the latin-1 bytes
    encoding Python 3 uses for ``bytes`` at protocol 2. Anything else is refused."""

    _NUMPY = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._NUMPY:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*numpy\.core")
                return super().find_class(module, name)
        if (module, name) == ("_codecs", "encode"):
            return _latin1_encode
        raise pickle.UnpicklingError(f"unexpected class {module}.{name} in a CIFAR-10 batch")


def _latin1_encode(text: object, encoding: str) -> bytes:
    """``_codecs.encode`` restricted to latin-1 (how protocol 2 stores ``bytes``)."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"unexpected encoding {encoding!r} in a CIFAR-10 batch")
    return text.encode("latin1")


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Unpickle one batch and validate it; return (images (n, 32, 32, 3) uint8, labels int32)."""
    try:
        with open(path, "rb") as f:
            entry = _BatchUnpickler(f, encoding="bytes").load()
    except Exception as err:  # any unpickling failure means a corrupt or foreign file
        raise ValueError(
            f"{path} is not a valid CIFAR-10 batch ({type(err).__name__}: {err}); re-download it"
        ) from err
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: a CIFAR-10 batch is a dict, got {type(entry).__name__}")
    entry = {k.encode("latin1") if isinstance(k, str) else k: v for k, v in entry.items()}
    data, labels = entry.get(b"data"), entry.get(b"labels")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != _IMAGE_SIZE or data.shape[0] < 1:
        what = (f"{data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
                else type(data).__name__)
        raise ValueError(f"{path}: b'data' must be a (n, 3072) uint8 array, got {what}")
    if not isinstance(labels, list | np.ndarray) or len(labels) != data.shape[0]:
        got = len(labels) if isinstance(labels, list | np.ndarray) else type(labels).__name__
        raise ValueError(f"{path}: b'labels' must list {data.shape[0]} labels, got {got}")
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in labels):
        raise ValueError(f"{path}: b'labels' must be integers")
    labels = np.asarray(labels, dtype=np.int64)
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{path}: labels outside 0..9")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels.astype(np.int32)


def _remedy(folder: Path) -> str:
    return (
        f"The CIFAR-10 data cannot be shipped with jaxaudit: put the python-version batches "
        f"(data_batch_1 ... data_batch_5, test_batch, from {ARCHIVE} of "
        f"https://www.cs.toronto.edu/~kriz/cifar.html) in {folder}, or fetch them with "
        f"download=True (CLI: jaxaudit data info cifar10 --download), or point the {ENV_VAR} "
        f"environment variable (or the data_dir argument) at a directory holding "
        f"'{SUBFOLDER}/{BATCH_FOLDER}/'."
    )


def _extract_batches(archive: Path, names: Iterable[str], folder: Path, verify: bool) -> None:
    """Copy the members ``cifar-10-batches-py/<name>`` of the archive into ``folder``, each via a
    temporary file that is verified (with ``verify``) before it is renamed into place."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for name in names:
                try:
                    member = tar.getmember(f"{BATCH_FOLDER}/{name}")
                except KeyError:
                    raise ValueError(f"{ARCHIVE} has no member {BATCH_FOLDER}/{name}") from None
                content = tar.extractfile(member) if member.isfile() else None
                if content is None:
                    raise ValueError(f"{ARCHIVE}: {BATCH_FOLDER}/{name} is not a regular file")
                fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
                tmp = Path(tmp_name)
                try:
                    with os.fdopen(fd, "wb") as out, content as src:
                        for block in iter(functools.partial(src.read, _CHUNK), b""):
                            out.write(block)
                    if verify:
                        _check_batch_digest(tmp, name)
                    os.replace(tmp, folder / name)
                finally:
                    if tmp.exists():
                        tmp.unlink()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise ValueError(f"{ARCHIVE} is not a valid gzipped tar archive ({err})") from err


def _download(names: Iterable[str], folder: Path, verify: bool) -> None:
    """Fetch the archive from :data:`ARCHIVE_URLS` (first that answers), verify it (with
    ``verify``), extract ``names`` into ``folder`` and delete the archive."""

    def use(tmp: Path) -> None:
        if verify:
            _check_archive_digest(tmp)
        _extract_batches(tmp, names, folder, verify)

    folder.mkdir(parents=True, exist_ok=True)
    fetch_first(ARCHIVE_URLS, folder.parent, ARCHIVE, use)


def load_cifar10(split: str = "train", data_dir: str | os.PathLike[str] | None = None,
                 download: bool = False, *, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Load a CIFAR-10 split from the python-pickle batches.

    Args:
      split: ``"train"`` (``data_batch_1`` ... ``data_batch_5``, 50 000 images) or ``"test"``
        (``test_batch``, 10 000 images).
      data_dir: data directory holding ``cifar10/cifar-10-batches-py/``; default
        ``$JAXAUDIT_DATA`` or ``~/.cache/jaxaudit``.
      download: fetch the archive from https://www.cs.toronto.edu/~kriz/ when a batch is missing
        (verified, then only the missing batches are extracted and the archive deleted).
      verify: check every batch (and a downloaded archive) against its published digest before
        reading it (see the module docstring). ``False`` only for files you generated yourself in
        the CIFAR-10 format; the structure is validated either way.

    Returns:
      ``(images, labels)``: numpy ``uint8`` (N, 32, 32, 3) in HWC order (RGB, pixels 0..255) and
      ``int32`` (N,) labels in 0..9, the batches concatenated in order.

    Raises:
      FileNotFoundError: a batch is missing and ``download`` is False (the message names the
        folder to put the files in and the remedies), or no download location answered.
      ValueError: unknown ``split``, a non-bool ``verify``, a checksum mismatch (the file is
        not used), or a malformed or foreign file.

    Example:
      >>> images, labels = load_cifar10("test")  # doctest: +SKIP
      >>> images.shape, labels.shape  # doctest: +SKIP
      ((10000, 32, 32, 3), (10000,))
    """
    check_choice("split", split, tuple(SPLITS))
    if not isinstance(verify, bool):
        raise ValueError(f"verify must be True or False, got {verify!r}")
    if not isinstance(download, bool):
        raise ValueError(f"download must be True or False, got {download!r}")
    folder = cifar10_folder(data_dir)
    names = SPLITS[split]
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        if not download:
            raise FileNotFoundError(
                f"CIFAR-10 file '{missing[0]}' not found in {folder}. {_remedy(folder)}"
            )
        _download(missing, folder, verify)
    parts = []
    for name in names:
        path = folder / name
        if verify:
            _check_batch_digest(path, name)
        parts.append(_read_batch(path))
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    return images, labels


def verify_cifar10_files(data_dir: str | os.PathLike[str] | None = None) -> list[FileStatus]:
    """Check every CIFAR-10 batch found in the data directory against its published MD5.

    Args:
      data_dir: data directory (see :func:`jaxaudit.datasets.resolve_data_dir`).

    Returns:
      One :class:`~jaxaudit.datasets._files.FileStatus` per batch (key
      ``"cifar10/cifar-10-batches-py/<name>"``): ``"ok"``, ``"bad"`` or ``"missing"``.
    """
    folder = cifar10_folder(data_dir)
    out = []
    for name, expected in BATCH_MD5.items():
        path = folder / name
        if not path.is_file():
            status = "missing"
        else:
            status = "ok" if _hashes(path)[0] == expected else "bad"
        out.append(FileStatus(f"{SUBFOLDER}/{BATCH_FOLDER}/{name}", path, status))
    return out
