"""Files of a run folder: strict JSON, reads that follow no symbolic link, atomic writes.

* JSON: every JSON file jaxaudit writes is strict JSON (RFC 8259, ``allow_nan=False``): a
  non-finite number (NaN, ±inf) is written as ``null`` (:func:`dumps_strict`); a JSON file is read
  through :func:`parse_json`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH` before
  anything recurses into it.
* Reads: :func:`read_regular` reads a regular file only, never through a symbolic link, so a link
  to a file elsewhere (credentials) or a FIFO/device is not read; :func:`scan_run_folder` lists a
  folder's regular files and what it skipped (a name that is not valid UTF-8 among them, shown
  with its bytes escaped: :func:`printable_name`); :func:`open_regular` and :func:`sha256_file`
  checksum a file of any size in blocks.
* Writes: :func:`atomic_write_bytes` writes a temporary file in the same folder (with the
  permissions the umask gives a new file) and renames it into place, so an interrupted run
  leaves no half-written file; :func:`create_exclusive` creates a file only if it does not
  exist (a hard link that fails if one exists). In a multi-process JAX program only process 0
  writes (:func:`jax_process`).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAX_JSON_DEPTH", "atomic_write_bytes", "config_hash", "create_exclusive",
           "dumps_strict", "jax_process", "jsonable", "open_regular", "parse_json",
           "printable_name", "read_regular", "scan_run_folder", "sha256_file", "sha256_hex",
           "symlink_below"]

#: Deepest nesting of lists/objects accepted in a manifest or a JSON table (a deeper one is
#: refused before anything recurses into it).
MAX_JSON_DEPTH = 64
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy/JAX values as Python ones, tuples as lists, paths as strings and
    non-finite floats as None (JSON ``null``)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__array__") and not isinstance(obj, str | bytes | int | float):
        return jsonable(np.asarray(obj))  # a JAX array
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``obj`` as strict JSON: numpy/JAX values converted, every non-finite
    number written as ``null`` (``allow_nan=False``: nothing else can produce a bare ``NaN`` or
    ``Infinity``). ``kwargs`` go to :func:`json.dumps` (``indent``, ``sort_keys``, ...)."""
    return json.dumps(jsonable(obj), allow_nan=False, **kwargs)


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON form of ``config`` (sorted keys, no whitespace, non-finite
    numbers as ``null``)."""
    return hashlib.sha256(
        dumps_strict(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _depth_exceeds(obj: Any, limit: int) -> bool:
    """True when lists/dicts nest deeper than ``limit`` (iterative: no recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limit:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items if isinstance(v, dict | list))
    return False


def parse_json(data: bytes, what: object) -> Any:
    """JSON from ``data``; ``ValueError`` naming ``what`` when it is not UTF-8 JSON or nests
    deeper than :data:`MAX_JSON_DEPTH`."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{what} is corrupt ({err})") from None
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply to be read (more than "
                         f"{MAX_JSON_DEPTH} levels)") from None
    if _depth_exceeds(obj, MAX_JSON_DEPTH):
        raise ValueError(f"{what} is nested too deeply to be read (more than "
                         f"{MAX_JSON_DEPTH} levels)")
    return obj


def open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for binary reading when it is a regular file and not a symbolic link (a
    FIFO, a device or a link is refused with ``ValueError`` without being read or followed); the
    caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP or (Path(path).is_symlink() and
                                        not isinstance(err, FileNotFoundError)):
            raise ValueError(f"{path} is a symbolic link; not followed") from None
        raise
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise ValueError(f"{path} is not a regular file; not read")
    return f


def read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` when it is a regular file and not a symbolic link (a FIFO, a device
    or a link is refused with ``ValueError`` without being read or followed), and holds at most
    ``max_bytes`` (a larger file is a ``ValueError`` naming it and its size, and is not read)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise ValueError(f"{path} holds {size:,} bytes, more than {max_bytes:,}; not read")
        return f.read()


#: Bytes read at a time by :func:`sha256_file`.
_BLOCK = 1 << 20


def sha256_file(f: io.BufferedIOBase, keep: bool = False) -> tuple[str, bytes | None]:
    """The SHA-256 (hexadecimal) of what remains of the open binary file ``f``, read in blocks of
    1 MiB (a file of any size is checksummed in constant memory), and, with ``keep``, the bytes
    read (the very bytes hashed)."""
    h, kept = hashlib.sha256(), []
    while block := f.read(_BLOCK):
        h.update(block)
        if keep:
            kept.append(block)
    return h.hexdigest(), (b"".join(kept) if keep else None)


def printable_name(name: str) -> str:
    """``name`` as a valid UTF-8 text: a file name's bytes that are not UTF-8 (kept by Python as
    lone surrogates) written as ``\\xNN`` escapes, e.g. ``bad\\xff.json``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _undecodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def symlink_below(root: Path, path: Path) -> Path | None:
    """The first folder between ``root`` (excluded) and ``path`` (excluded) that is a symbolic
    link; None when there is none."""
    rel = path.relative_to(root)
    current = root
    for part in rel.parts[:-1]:
        current = current / part
        if current.is_symlink():
            return current
    return None


def scan_run_folder(path: str | Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The regular files of a run folder, without following any symbolic link.

    Hidden names (starting with ``.``: temporary files) are ignored. Symbolic links (to files or
    folders, inside or outside the folder), FIFOs, sockets, devices, unreadable folders and names
    that are not valid UTF-8 (``bad\\xff.json``: no report could name them) are not read and not
    descended into.

    Returns:
      ``(files, skipped)``: the files' paths relative to ``path`` (POSIX, sorted) and
      ``(relative path, reason)`` for everything skipped (a path that is not UTF-8 with its bytes
      escaped, :func:`printable_name`).
    """
    root = Path(path)
    files, skipped = [], []

    def onerror(err: OSError) -> None:
        where = Path(err.filename) if err.filename else root
        rel = where.relative_to(root).as_posix() if where != root else "."
        skipped.append((printable_name(rel), f"cannot be read ({err.strerror or err})"))

    not_utf8 = "file name is not valid UTF-8 (not read)"
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=onerror):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        keep = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            if _undecodable(d):
                skipped.append((printable_name((rel_dir / d).as_posix()), not_utf8))
            elif (here / d).is_symlink():
                skipped.append(((rel_dir / d).as_posix(), "symbolic link (not followed)"))
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in filenames:
            if name.startswith("."):
                continue
            rel = (rel_dir / name).as_posix()
            if _undecodable(name):
                skipped.append((printable_name(rel), not_utf8))
                continue
            try:
                mode = os.lstat(here / name).st_mode
            except OSError as err:
                skipped.append((rel, f"cannot be read ({err.strerror or err})"))
                continue
            if stat.S_ISLNK(mode):
                skipped.append((rel, "symbolic link (not followed)"))
            elif not stat.S_ISREG(mode):
                skipped.append((rel, "not a regular file"))
            else:
                files.append(rel)
    return sorted(files), sorted(skipped)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_temp(path: Path, data: bytes) -> str:
    """``data`` in a new temporary file beside ``path``, with the umask's permissions (mkstemp
    alone would leave 0600 where the figures written by matplotlib get 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _write_error(path: Path, err: OSError) -> OSError:
    """An ``OSError`` of the same kind whose message names ``path`` and the remedy."""
    reason = err.strerror or str(err)
    hints: dict[int | None, str] = {
        errno.ENOSPC: "free some space or choose another folder",
        errno.EDQUOT: "free some space or choose another folder",
        errno.EROFS: "the file system is read-only: choose another folder",
        errno.EACCES: "choose a folder you can write to",
        errno.EPERM: "choose a folder you can write to"}
    hint = hints.get(err.errno, "")
    new = type(err)(err.errno, f"cannot write {path}: {reason}" + (f" ({hint})" if hint else ""))
    return new


def jax_process() -> tuple[int, int]:
    """``(index, count)`` of this process in a multi-process JAX program (after
    ``jax.distributed.initialize()``); ``(0, 1)`` otherwise. Read without importing JAX."""
    if "jax" not in sys.modules:
        return 0, 1
    try:
        from jax._src import distributed
    except ImportError:  # pragma: no cover - a JAX without the module
        return 0, 1
    state = distributed.global_state
    if getattr(state, "client", None) is None:
        return 0, 1
    return int(state.process_id or 0), int(state.num_processes or 1)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    In a multi-process JAX program only process 0 writes: on the others (:func:`jax_process`)
    this does nothing (docs/scaling.md).

    Raises:
      OSError: the folder cannot be written (read-only, full disk, ...): the message names
        ``path`` and the reason; nothing is left behind.
    """
    if jax_process()[0] != 0:
        return
    path = Path(path)
    try:
        tmp = _write_temp(path, data)
    except OSError as err:
        raise _write_error(path, err) from err
    try:
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise _write_error(path, err) from err
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` atomically, only if it does not exist (a hard link of a
    complete temporary file: readers never see a partial file). False when it already exists.
    On a JAX process other than process 0 nothing is written and the answer is True."""
    if jax_process()[0] != 0:
        return True
    tmp = _write_temp(path, data)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: exclusive create, then the content
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)



def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hexadecimal."""
    return hashlib.sha256(data).hexdigest()
