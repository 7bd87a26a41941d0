"""Data-directory resolution, the SHA-256 table of known files, verification and download.

The data directory is resolved as: explicit ``data_dir`` argument > ``JAXAUDIT_DATA``
environment variable > ``~/.cache/jaxaudit``. Files live in sub-folders named after their
source: ``planetoid/ind.cora.x`` ..., ``mnist/t10k-images-idx3-ubyte.gz`` ...

Every file is verified against the SHA-256 recorded here before it is read (:data:`SHA256`; for
the gzipped MNIST files, :data:`SHA256_GUNZIPPED`, the digest of the decompressed content); a
mismatch is a ``ValueError`` and the file is never used. Downloads (only with ``download=True``) go to a
temporary file in the target folder, are verified, and only then renamed into place.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import http.client
import os
import shutil
import ssl
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from jaxaudit._validation import check_bool

#: Environment variable naming the data directory.
ENV_VAR = "JAXAUDIT_DATA"

#: SHA-256 of every raw file the loaders know, by ``"<subfolder>/<file>"`` (the Planetoid files
#: are byte-identical to those of https://github.com/kimiyoung/planetoid).
SHA256: dict[str, str] = {
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
}

#: SHA-256 of the *decompressed* content of the gzipped MNIST IDX files. The gzip container differs
#: between mirrors (header time stamp, compression settings) while the IDX bytes are the published
#: ones, so the content is what is checked (the gzip CRC-32 guards the container).
SHA256_GUNZIPPED: dict[str, str] = {
    "mnist/t10k-images-idx3-ubyte.gz": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "mnist/t10k-labels-idx1-ubyte.gz": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    "mnist/train-images-idx3-ubyte.gz": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "mnist/train-labels-idx1-ubyte.gz": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
}

#: Every known file.
KNOWN_FILES: tuple[str, ...] = (*SHA256, *SHA256_GUNZIPPED)

#: Canonical public locations, tried in order, by sub-folder (file name appended).
BASE_URLS: dict[str, tuple[str, ...]] = {
    "planetoid": ("https://github.com/kimiyoung/planetoid/raw/master/data/",),
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ),
}

_CHUNK = 1 << 20


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
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


def sha256_file(path: str | os.PathLike[str], gunzip: bool = False) -> str:
    """Hex SHA-256 of a file (of its decompressed content with ``gunzip``), read in 1 MiB chunks.

    Raises:
      ValueError: ``gunzip`` and the file is not a valid gzip stream (bad CRC, truncated, ...).
    """
    digest = hashlib.sha256()
    try:
        with gzip.open(path, "rb") if gunzip else open(path, "rb") as f:
            for block in iter(lambda: f.read(_CHUNK), b""):
                digest.update(block)
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise ValueError(f"not a valid gzip stream ({err})") from err
    return digest.hexdigest()


def _digests(path: Path, key: str) -> tuple[str, str]:
    """(actual, expected) SHA-256 for a known file; an invalid gzip stream gives ``"invalid
    gzip stream"`` as the actual digest."""
    if key in SHA256_GUNZIPPED:
        try:
            return sha256_file(path, gunzip=True), SHA256_GUNZIPPED[key]
        except ValueError as err:
            return str(err), SHA256_GUNZIPPED[key]
    return sha256_file(path), SHA256[key]


def _remedy(key: str, folder: Path) -> str:
    sub = key.split("/")[0]
    return (
        f"Pass download=True (CLI: --download) to fetch it from {BASE_URLS[sub][0]}, or "
        f"place the file in {folder}, or point the {ENV_VAR} environment variable (or the "
        f"data_dir argument) at a directory holding '{sub}/'."
    )


def check_file(path: Path, key: str) -> None:
    """Raise ``ValueError`` if ``path`` does not have the SHA-256 recorded for ``key``."""
    actual, expected = _digests(path, key)
    if actual != expected:
        what = "decompressed content" if key in SHA256_GUNZIPPED else "file"
        raise ValueError(
            f"checksum mismatch for {path}: SHA-256 of the {what} is {actual}, expected "
            f"{expected}. The file is truncated, corrupted or not the canonical '{key}'; it was "
            f"not used. Delete it and re-download it (download=True) from "
            f"{BASE_URLS[key.split('/')[0]][0]}."
        )


def fetch_url(url: str, dest: Path) -> None:
    """Copy ``url`` to ``dest`` with urllib (any scheme urllib handles, file:// included)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out, _CHUNK)


#: Errors of a mirror (unreachable, refused, a broken transfer): the next mirror is tried.
_REMOTE_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError,
                  ConnectionError, ssl.SSLError)


def _local_error(folder: Path, err: OSError) -> OSError:
    """An ``OSError`` of the same kind saying that the data folder cannot be written, and how
    to fix it (a read-only folder, a full disk, ...)."""
    hint = ("free some space or choose another data directory"
            if err.errno in (errno.ENOSPC, errno.EDQUOT)
            else "choose a writable data directory")
    return OSError(err.errno, f"cannot write to the data folder {folder}: "
                              f"{err.strerror or err} ({hint}: --data-dir or ${ENV_VAR})")


def prepare_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) for downloads.

    Raises:
      ValueError: ``folder`` or one of its parents is a file, not a folder.
      OSError: it cannot be created or written (read-only, full disk): the message names it.
    """
    for part in (folder, *folder.parents):
        if part.exists() and not part.is_dir():
            raise ValueError(f"cannot download into {folder}: {part} is a file, not a folder "
                             f"(move it away, or choose another data directory: --data-dir or "
                             f"${ENV_VAR})")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _local_error(folder, err) from err
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _local_error(folder, PermissionError(errno.EACCES, os.strerror(errno.EACCES)))


def fetch_first(urls: Iterable[str], folder: Path, label: str, use: Callable[[Path], None]
                ) -> None:
    """Fetch the first of ``urls`` that answers into a temporary file in ``folder`` and call
    ``use(tmp)`` on it (verify, then rename or extract); the temporary file is always removed.

    Raises ``FileNotFoundError`` naming ``label`` and every URL's error when none answers; errors
    raised by ``use`` (a checksum mismatch: ``ValueError``) propagate. A folder that cannot be
    written (read-only, full disk: ``OSError``) or is a file (``ValueError``) stops at once with
    a message naming it, instead of being blamed on the mirrors.
    """
    prepare_folder(folder)
    errors = []
    for url in urls:
        try:
            fd, tmp_name = tempfile.mkstemp(prefix=f".{Path(label).name}.", suffix=".part",
                                            dir=folder)
            os.close(fd)
        except OSError as err:
            raise _local_error(folder, err) from err
        tmp = Path(tmp_name)
        try:
            try:
                fetch_url(url, tmp)
            except _REMOTE_ERRORS as err:
                errors.append(f"{url}: {err}")
                continue
            except OSError as err:  # writing the temporary file: the folder, not the mirror
                raise _local_error(folder, err) from err
            try:
                use(tmp)
            except FileNotFoundError:
                raise
            except OSError as err:  # the rename or extraction into the folder
                raise _local_error(folder, err) from err
            return
        finally:
            if tmp.exists():
                tmp.unlink()
    raise FileNotFoundError(f"could not download {label}: " + "; ".join(errors))


def download_file(key: str, dest: Path) -> None:
    """Download ``key`` from its canonical locations to ``dest``, verified before the rename.

    The bytes go to a temporary file in ``dest``'s folder; a checksum mismatch deletes it and
    raises ``ValueError``; only a verified file is renamed to ``dest``.
    """
    sub, name = key.split("/", 1)

    def use(tmp: Path) -> None:
        check_file(tmp, key)
        os.replace(tmp, dest)

    fetch_first([base + name for base in BASE_URLS[sub]], dest.parent, key, use)


def require_files(
    sub: str, names: Iterable[str], data_dir: str | os.PathLike[str] | None = None,
    download: bool = False
) -> dict[str, Path]:
    """Locate (and with ``download`` fetch) the files ``sub/<name>``, each checksum-verified.

    Returns:
      ``{name: path}`` for every name, all verified.

    Raises:
      FileNotFoundError: a file is missing and ``download`` is False (the message names the file,
        the folder searched and the remedies).
      ValueError: a file fails its checksum.
    """
    check_bool("download", download)  # "no" is truthy: it would start a download
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
    status: str  # "ok", "bad" (checksum mismatch) or "missing"


def verify_files(data_dir: str | os.PathLike[str] | None = None) -> list[FileStatus]:
    """Check the SHA-256 of every known file in the data directory.

    Args:
      data_dir: data directory (see :func:`resolve_data_dir`).

    Returns:
      One :class:`FileStatus` per known file: ``"ok"``, ``"bad"`` (checksum mismatch) or
      ``"missing"``.
    """
    root = resolve_data_dir(data_dir)
    out = []
    for key in KNOWN_FILES:
        path = root / key
        if not path.is_file():
            status = "missing"
        else:
            actual, expected = _digests(path, key)
            status = "ok" if actual == expected else "bad"
        out.append(FileStatus(key, path, status))
    return out
