"""Data-directory resolution, the SHA-256 table of known files, verification and download.

The data directory is resolved as: explicit ``data_dir`` argument > ``JAXAUDIT_DATA``
environment variable > ``~/.cache/jaxaudit``. Files live in sub-folders named after their
source: ``planetoid/ind.cora.x`` ..., ``mnist/t10k-images-idx3-ubyte.gz`` ...

Every file with a known SHA-256 (:data:`SHA256`) is verified before it is read; a mismatch is a
``ValueError`` and the file is never used. Downloads (only with ``download=True``) go to a
temporary file in the target folder, are verified, and only then renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

#: Environment variable naming the data directory.
ENV_VAR = "JAXAUDIT_DATA"

#: SHA-256 of every file the loaders know, by ``"<subfolder>/<file>"``. ``None`` marks a file the
#: loaders can read but whose canonical checksum is not recorded here (MNIST training split): such
#: files are checked structurally (gzip CRC, IDX header and exact length) instead.
SHA256: dict[str, str | None] = {
    "planetoid/ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "planetoid/ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "planetoid/ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "planetoid/ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "planetoid/ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "planetoid/ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "planetoid/ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "planetoid/ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "planetoid/ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "planetoid/ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "planetoid/ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "planetoid/ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "planetoid/ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "planetoid/ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "planetoid/ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "planetoid/ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "mnist/t10k-images-idx3-ubyte.gz": "9fe7630f90c0e670227960a294637bc2e78a29d724810e24204eb342c9f033a1",
    "mnist/t10k-labels-idx1-ubyte.gz": "2c54c993d38068b3c3adb720a5cdee07065a066a7b36e7d1df720548d6359eba",
    "mnist/train-images-idx3-ubyte.gz": None,
    "mnist/train-labels-idx1-ubyte.gz": None,
}

#: Canonical public locations, tried in order, by sub-folder (file name appended).
BASE_URLS: dict[str, tuple[str, ...]] = {
    "planetoid": ("https://github.com/kimiyoung/planetoid/raw/master/data/",),
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ),
}

_CHUNK = 1 << 20


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$JAXAUDIT_DATA``, else ``~/.cache/jaxaudit``.

    Args:
      data_dir: explicit directory, or None.

    Returns:
      The directory as an absolute ``Path`` (it need not exist).
    """
    if data_dir is not None:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".cache" / "jaxaudit").resolve()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _remedy(key: str, folder: Path) -> str:
    sub = key.split("/")[0]
    return (
        f"Pass download=True (CLI: --download) to fetch it from {BASE_URLS[sub][0]}, or "
        f"place the file in {folder}, or point the {ENV_VAR} environment variable (or the "
        f"data_dir argument) at a directory holding '{sub}/'."
    )


def check_file(path: Path, key: str) -> None:
    """Raise ``ValueError`` if ``path`` does not have the SHA-256 recorded for ``key``."""
    expected = SHA256.get(key)
    if expected is None:
        return
    actual = sha256_file(path)
    if actual != expected:
        raise ValueError(
            f"checksum mismatch for {path}: SHA-256 {actual}, expected {expected}. The file is "
            f"truncated, corrupted or not the canonical '{key}'; it was not used. Delete it and "
            f"re-download it (download=True) from {BASE_URLS[key.split('/')[0]][0]}."
        )


def fetch_url(url: str, dest: Path) -> None:
    """Copy ``url`` to ``dest`` with urllib (any scheme urllib handles, file:// included)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out, _CHUNK)


def download_file(key: str, dest: Path) -> None:
    """Download ``key`` from its canonical locations to ``dest``, verified before the rename.

    The bytes go to a temporary file in ``dest``'s folder; a checksum mismatch deletes it and
    raises ``ValueError``; only a verified file is renamed to ``dest``.
    """
    sub, name = key.split("/", 1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for base in BASE_URLS[sub]:
        url = base + name
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=dest.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            try:
                fetch_url(url, tmp)
            except OSError as err:
                errors.append(f"{url}: {err}")
                continue
            check_file(tmp, key)
            os.replace(tmp, dest)
            return
        finally:
            if tmp.exists():
                tmp.unlink()
    raise FileNotFoundError(f"could not download {key}: " + "; ".join(errors))


def require_files(
    sub: str, names: Iterable[str], data_dir=None, download: bool = False
) -> dict[str, Path]:
    """Locate (and with ``download`` fetch) the files ``sub/<name>``, each checksum-verified.

    Returns:
      ``{name: path}`` for every name, all verified.

    Raises:
      FileNotFoundError: a file is missing and ``download`` is False (the message names the file,
        the folder searched and the remedies).
      ValueError: a file fails its checksum.
    """
    folder = resolve_data_dir(data_dir) / sub
    paths = {}
    for name in names:
        key = f"{sub}/{name}"
        path = folder / name
        if not path.is_file():
            if not download:
                raise FileNotFoundError(
                    f"data file '{name}' not found in {folder}. {_remedy(key, folder)}"
                )
            download_file(key, path)
        check_file(path, key)
        paths[name] = path
    return paths


class FileStatus(NamedTuple):
    """Result of verifying one known file."""

    key: str
    path: Path
    status: str  # "ok", "bad", "missing" or "unchecked" (no recorded checksum)


def verify_files(data_dir=None) -> list[FileStatus]:
    """Check the SHA-256 of every known file in the data directory.

    Args:
      data_dir: data directory (see :func:`resolve_data_dir`).

    Returns:
      One :class:`FileStatus` per known file: ``"ok"``, ``"bad"`` (checksum mismatch),
      ``"missing"``, or ``"unchecked"`` (present, no checksum recorded).
    """
    root = resolve_data_dir(data_dir)
    out = []
    for key, expected in SHA256.items():
        path = root / key
        if not path.is_file():
            status = "missing"
        elif expected is None:
            status = "unchecked"
        else:
            status = "ok" if sha256_file(path) == expected else "bad"
        out.append(FileStatus(key, path, status))
    return out
