"""MNIST from the IDX ``.gz`` files (LeCun, Bottou, Bengio, Haffner, 1998).

IDX format: big-endian header ``0x00 0x00 <dtype=0x08 (uint8)> <ndim>`` followed by ``ndim``
uint32 sizes and the raw bytes. Images: magic 2051, (N, 28, 28); labels: magic 2049, (N,).

Checksums: both splits are verified against the published SHA-256 of the decompressed IDX
content (:data:`jaxaudit.datasets._files.SHA256_GUNZIPPED`), so any mirror's gzip container is
accepted while the data must be exactly the published bytes; the IDX header (magic number, sizes)
and length are checked as well.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import numpy as np

from jaxaudit._validation import check_choice
from jaxaudit.datasets._files import require_files

_FILES = {
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 10_000),
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 60_000),
}


def _read_idx(path: str | os.PathLike[str], magic: int, shape: tuple[int, ...]) -> np.ndarray:
    """Read one gzipped IDX file, refusing any deviation from the expected header and length."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"{path} is not a valid gzip file ({err}); re-download it") from err
    ndim = len(shape)
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header")
    got_magic, *dims = struct.unpack(f">{1 + ndim}I", raw[:header])
    if got_magic != magic or tuple(dims) != shape or len(raw) != header + int(np.prod(shape)):
        raise ValueError(
            f"{path}: IDX header/length mismatch (magic {got_magic}, sizes {tuple(dims)}, "
            f"{len(raw)} bytes; expected magic {magic}, sizes {shape})"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def load_mnist(split: str = "test", data_dir: str | os.PathLike[str] | None = None,
               download: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Load an MNIST split from the IDX files.

    Args:
      split: ``"test"`` (10 000 images) or ``"train"`` (60 000 images; not in the shared data
        folder of this project, fetched with ``download=True``).
      data_dir: data directory holding ``mnist/``; default ``$JAXAUDIT_DATA`` or
        ``~/.cache/jaxaudit``.
      download: fetch missing files from https://ossci-datasets.s3.amazonaws.com/mnist/ (then
        http://yann.lecun.com/exdb/mnist/).

    Returns:
      ``(images, labels)``: numpy ``uint8`` (N, 28, 28) with pixels in 0..255 and ``int32`` (N,)
      labels in 0..9.

    Raises:
      FileNotFoundError: a file is missing and ``download`` is False.
      ValueError: unknown split, checksum mismatch or malformed file.

    Example:
      >>> images, labels = load_mnist("test")  # doctest: +SKIP
      >>> images.shape  # doctest: +SKIP
      (10000, 28, 28)
    """
    check_choice("split", split, tuple(_FILES))
    image_name, label_name, n = _FILES[split]
    paths = require_files("mnist", [image_name, label_name], data_dir, download)
    images = _read_idx(paths[image_name], 2051, (n, 28, 28))
    labels = _read_idx(paths[label_name], 2049, (n,)).astype(np.int32)
    if labels.max() > 9:
        raise ValueError(f"{paths[label_name]}: labels outside 0..9")
    return images, labels
