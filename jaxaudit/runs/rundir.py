"""Resumable run folders: a manifest, atomically written chunk files, checksums.

Layout of a run folder::

    manifest.json          kind, config, config_hash, version, created, planned_chunks,
                           manifest_hash
    chunks/<name>.npz      one finished chunk of results (numpy arrays)
    chunks/<name>.npz.sha256   "<SHA-256 of the file>  <name>.npz" and "run <config_hash>"
    ...                    tables (*.json, *.csv), summaries (*.md), figures (*.png)

Every file is written to a temporary file in the same folder and renamed into place (with the
permissions the umask gives a new file), so a run killed mid-way loses at most the chunk in
flight. The manifest is created exclusively (a hard link that fails if one exists): of two
processes opening the same new folder at once, one creates the run and the other resumes it when
its configuration is the same, or is refused. Re-opening the folder with the same configuration
resumes; a different configuration is refused.

Integrity (what is refused, never silently used):

* ``config_hash`` is the SHA-256 of the canonical configuration (it identifies the run: resuming
  compares it); ``manifest_hash`` is the SHA-256 of every other field of the manifest, so the
  run's ``kind`` and ``planned_chunks`` (a shortened plan would hide a partial run) cannot be
  edited unnoticed. A manifest that does not match either hash, is not a JSON object, or is
  nested deeper than :data:`MAX_JSON_DEPTH` is a ``ValueError`` naming it. Manifests written by
  jaxaudit 0.x before ``manifest_hash`` existed are still read (:func:`load_results` warns that
  their kind and plan are unprotected) and resumed as they are (their chunks keep records
  without the run line); a manifest without ``manifest_hash`` next to chunk records that have
  one had it removed, and is refused.
* a chunk's checksum record names the chunk *and the run* (its ``config_hash``): a chunk whose
  digest does not match, one moved under another chunk's name, and one copied from another run
  (e.g. another seed) are refused; :meth:`RunDir.has_chunk` removes them so they are recomputed.
  :meth:`RunDir.save_file` / :meth:`RunDir.load_file` give any other reusable file (a cached
  model) the same run-bound checksum.
* arrays are read through :mod:`jaxaudit.runs.arrays` (sizes checked before anything is
  allocated or decompressed; never unpickled).
* reading never follows a symbolic link inside the run folder and reads only regular files
  (:func:`scan_run_folder` lists what it skipped): a link to a file elsewhere (credentials) or a
  FIFO/device is not read.

JSON: every JSON file written here is strict JSON (RFC 8259, ``allow_nan=False``): a non-finite
number (NaN, ±inf) is written as ``null``. :func:`load_results` says how many of the planned
chunks are finished.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import math
import os
import re
import stat
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, SupportsIndex, overload

import numpy as np

from jaxaudit.runs.arrays import describe_npz, load_npz

__all__ = ["RunDir", "RunResults", "load_results", "read_manifest", "config_hash",
           "atomic_write_bytes", "dumps_strict", "scan_run_folder", "MAX_JSON_DEPTH", "jax_process"]

_CHUNK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MANIFEST = "manifest.json"
#: Deepest nesting of lists/objects accepted in a manifest or a JSON table (a deeper one is
#: refused before anything recurses into it).
MAX_JSON_DEPTH = 64
_MAX_MANIFEST_BYTES = 64 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _jsonable(obj: Any, strict: bool = True) -> Any:
    """``obj`` with numpy/JAX values as Python ones, paths as strings and (``strict``)
    non-finite floats as None (JSON ``null``)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v, strict) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v, strict) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist(), strict)
    if isinstance(obj, np.generic):
        return _jsonable(obj.item(), strict)
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__array__") and not isinstance(obj, str | bytes | int | float):
        return _jsonable(np.asarray(obj), strict)  # a JAX array
    if strict and isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``obj`` as strict JSON: numpy/JAX values converted, every non-finite
    number written as ``null`` (``allow_nan=False``: nothing else can produce a bare ``NaN`` or
    ``Infinity``). ``kwargs`` go to :func:`json.dumps` (``indent``, ``sort_keys``, ...)."""
    return json.dumps(_jsonable(obj), allow_nan=False, **kwargs)


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON form of ``config`` (sorted keys, no whitespace, non-finite
    numbers as ``null``)."""
    return hashlib.sha256(
        dumps_strict(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _legacy_config_hash(config: dict[str, Any]) -> str:
    """The hash of earlier versions (non-finite numbers as ``NaN``/``Infinity``)."""
    text = json.dumps(_jsonable(config, strict=False), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _manifest_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of every field of the manifest except ``manifest_hash`` itself."""
    body = {k: v for k, v in manifest.items() if k != "manifest_hash"}
    return hashlib.sha256(
        dumps_strict(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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


def _read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` when it is a regular file and not a symbolic link (a FIFO, a device
    or a link is refused with ``ValueError`` without being read or followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP or (Path(path).is_symlink() and
                                        not isinstance(err, FileNotFoundError)):
            raise ValueError(f"{path} is a symbolic link; not followed") from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file; not read")
        if max_bytes is not None and st.st_size > max_bytes:
            raise ValueError(f"{path} holds {st.st_size:,} bytes, more than {max_bytes:,}; "
                             "not read")
        return f.read()


def _symlink_below(root: Path, path: Path) -> Path | None:
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
    folders, inside or outside the folder), FIFOs, sockets, devices and unreadable folders are
    not read and not descended into.

    Returns:
      ``(files, skipped)``: the files' paths relative to ``path`` (POSIX, sorted) and
      ``(relative path, reason)`` for everything skipped.
    """
    root = Path(path)
    files, skipped = [], []

    def onerror(err: OSError) -> None:
        where = Path(err.filename) if err.filename else root
        rel = where.relative_to(root).as_posix() if where != root else "."
        skipped.append((rel, f"cannot be read ({err.strerror or err})"))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=onerror):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        keep = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            if (here / d).is_symlink():
                skipped.append(((rel_dir / d).as_posix(), "symbolic link (not followed)"))
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in filenames:
            if name.startswith("."):
                continue
            rel = (rel_dir / name).as_posix()
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


def _create_exclusive(path: Path, data: bytes) -> bool:
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


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of run folder ``path``, checked against its own hashes.

    Raises:
      FileNotFoundError: no manifest.
      ValueError: the manifest is a symbolic link or not a regular file, is not valid JSON, is
        not a JSON object, nests deeper than :data:`MAX_JSON_DEPTH`, lacks its fields, or does
        not match its ``config_hash`` or ``manifest_hash`` (edited by hand): its results cannot be
        trusted to be what it says.
    """
    manifest_path = Path(path) / MANIFEST
    if not os.path.lexists(manifest_path):
        raise FileNotFoundError(f"{manifest_path} not found: {path} is not a jaxaudit run folder")
    try:
        raw = _read_regular(manifest_path, _MAX_MANIFEST_BYTES)
    except OSError as err:
        raise ValueError(f"{manifest_path} cannot be read ({err.strerror or err})") from err
    manifest = parse_json(raw, f"{manifest_path}")
    if not isinstance(manifest, dict):
        raise ValueError(f"{manifest_path} holds a JSON {type(manifest).__name__}, not an "
                         "object: not a jaxaudit manifest")
    if not {"kind", "config", "config_hash"} <= set(manifest):
        raise ValueError(f"{manifest_path} lacks kind/config/config_hash: not a jaxaudit manifest")
    if not isinstance(manifest["kind"], str) or not isinstance(manifest["config"], dict) \
            or not isinstance(manifest["config_hash"], str):
        raise ValueError(f"{manifest_path}: kind and config_hash must be strings and config an "
                         "object: not a jaxaudit manifest")
    planned = manifest.get("planned_chunks", [])
    if not isinstance(planned, list) or not all(
            isinstance(n, str) and _CHUNK_NAME.match(n) for n in planned):
        raise ValueError(f"{manifest_path}: planned_chunks must be a list of chunk names")
    edited = (f"{manifest_path}: the {{}} does not match its {{}} (the manifest was edited by "
              "hand); its results cannot be trusted to be what it says. Restore the manifest or "
              "use a new folder")
    stored = manifest["config_hash"]
    if "manifest_hash" in manifest:
        if config_hash(manifest["config"]) != stored:
            raise ValueError(edited.format("configuration", "config_hash"))
        if _manifest_digest(manifest) != manifest["manifest_hash"]:
            raise ValueError(edited.format("kind, plan or provenance", "manifest_hash"))
    elif stored not in (config_hash(manifest["config"]), _legacy_config_hash(manifest["config"])):
        raise ValueError(edited.format("configuration", "config_hash"))
    elif _has_run_records(Path(path)):
        raise ValueError(f"{manifest_path} has no manifest_hash but its chunks were written by "
                         "a version that records one: it was removed (the manifest was edited "
                         "by hand); its kind and plan cannot be trusted. Restore the manifest or "
                         "use a new folder")
    return manifest


def _has_run_records(path: Path) -> bool:
    """True when a checksum record in ``path/chunks`` holds a ``run`` line (written only in
    folders whose manifest has ``manifest_hash``)."""
    folder = path / "chunks"
    if folder.is_symlink() or not folder.is_dir():
        return False
    for sidecar in folder.glob("*.sha256"):
        try:
            text = _read_regular(sidecar, 1 << 16).decode("ascii", errors="replace")
        except (OSError, ValueError):
            continue
        if any(line.split()[:1] == ["run"] for line in text.splitlines()[1:]):
            return True
    return False


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    atomic_write_bytes(path / MANIFEST, dumps_strict(manifest, indent=2).encode())


def _safe_relpath(relpath: str | os.PathLike[str]) -> Path:
    rel = Path(relpath)
    if rel.is_absolute() or not rel.parts or any(p in ("", ".", "..") for p in rel.parts):
        raise ValueError(f"relpath must be a relative path inside the run folder, got {relpath!r}")
    return rel


class RunDir:
    """A run folder. Use :meth:`open`; see the module docstring for the layout."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = Path(path)
        self.manifest = manifest

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest["config"]

    @property
    def legacy(self) -> bool:
        """True for a manifest written before ``manifest_hash`` existed (its kind and plan are
        not protected; its checksum records need not name the run)."""
        return "manifest_hash" not in self.manifest

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, kind: str, config: dict[str, Any]) -> RunDir:
        """Create the run folder, or resume it when it holds a run with the same configuration.

        Raises:
          ValueError: the folder holds a run of another kind or configuration (also when another
            process created it at the same instant), its manifest is corrupt or edited, or it is
            not empty and holds no manifest; ``path`` is a file or cannot be written (read-only,
            full disk: the message names the folder and the reason).
        """
        from jaxaudit import __version__

        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ValueError(f"run folder {path} is a file, not a folder")
        raw_config = dict(config)
        config = _jsonable(raw_config)
        digest = config_hash(config)
        manifest_path = path / MANIFEST
        if not os.path.lexists(manifest_path):
            try:
                others = path.exists() and any(
                    not p.name.startswith(".") and p.name != MANIFEST for p in path.iterdir())
            except OSError as err:
                raise ValueError(f"run folder {path} cannot be read "
                                 f"({err.strerror or err})") from err
            if others:
                raise ValueError(f"{path} is not empty and holds no {MANIFEST}; use a new folder")
            manifest: dict[str, Any] = {
                "kind": kind,
                "config": config,
                "config_hash": digest,
                "version": __version__,
                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "planned_chunks": [],
            }
            manifest["manifest_hash"] = _manifest_digest(manifest)
            try:
                created = _create_exclusive(manifest_path,
                                            dumps_strict(manifest, indent=2).encode())
            except OSError as err:
                raise ValueError(f"run folder {path} cannot be written ({err.strerror or err}); "
                                 "choose a folder you can write to") from err
            if created:
                return cls(path, manifest)
            # another process created the run between our check and our write: join or refuse
        manifest = read_manifest(path)
        same = manifest["config_hash"] in (digest, _legacy_config_hash(raw_config))
        if manifest["kind"] != kind or not same:
            diff = _describe_diff(manifest["config"], config)
            raise ValueError(
                f"{path} already holds a {manifest['kind']!r} run with a different "
                f"configuration ({diff}); choose another output folder or repeat the "
                "original command to resume it"
            )
        if manifest.get("version") != __version__:
            warnings.warn(
                f"resuming a run made by jaxaudit {manifest.get('version')} with "
                f"{__version__}", stacklevel=2,
            )
        return cls(path, manifest)

    def plan(self, names: Sequence[str]) -> None:
        """Record chunk names the run will hold (kept in the manifest, in order, without
        duplicates, covered by ``manifest_hash``), so that :func:`load_results` can tell a
        finished run from a partial one."""
        planned = list(self.manifest.get("planned_chunks", []))
        new = [n for n in names if n not in planned]
        if not new:
            return
        for n in new:
            self._chunk_path(n)  # validates the name
        fresh = read_manifest(self.path)  # another writer may have planned chunks meanwhile
        planned = list(fresh.get("planned_chunks", []))
        planned += [n for n in names if n not in planned]
        manifest = fresh | {"planned_chunks": planned}
        if "manifest_hash" in fresh:
            manifest["manifest_hash"] = _manifest_digest(manifest)
        else:  # a manifest of the previous version stays one, in strict JSON (inf as null)
            manifest["config_hash"] = config_hash(manifest["config"])
        self.manifest = manifest
        _write_manifest(self.path, manifest)

    def missing_chunks(self) -> list[str]:
        """Planned chunks not (validly) finished, in plan order."""
        return [n for n in self.manifest.get("planned_chunks", [])
                if self._verified_bytes(n) is None]

    # -- checksummed files --------------------------------------------------------------------
    def _record(self, path: Path, data: bytes) -> bytes:
        """The checksum record of ``data`` stored as ``path``: digest and name, then the run's
        ``config_hash`` (not in a folder of the previous version, which must stay one: a run
        line next to a manifest without ``manifest_hash`` means the hash was removed)."""
        record = f"{_sha256(data)}  {path.name}\n"
        if not self.legacy:
            record += f"run {self.manifest['config_hash']}\n"
        return record.encode()

    def _checked_bytes(self, path: Path) -> tuple[bytes | None, str]:
        """``(bytes, "")`` when ``path`` and its checksum record ``path.sha256`` are regular files
        inside the folder (no symbolic link on the way) and the record holds the file's SHA-256,
        its name and this run's ``config_hash`` (a record without the run line is accepted for a
        legacy manifest only); ``(None, reason)`` otherwise."""
        sidecar = path.with_name(path.name + ".sha256")
        link = _symlink_below(self.path, path)
        if link is not None:
            return None, f"{link} is a symbolic link (not followed)"
        try:
            data = _read_regular(path)
            text = _read_regular(sidecar, 1 << 16).decode("ascii")
        except FileNotFoundError as err:
            return None, f"{Path(err.filename).name if err.filename else path.name} is missing"
        except (OSError, ValueError) as err:  # a link, a FIFO, not ASCII, unreadable
            return None, str(err)
        lines = [line.split() for line in text.splitlines() if line.strip()]
        if not lines or _sha256(data) != lines[0][0]:
            return None, "its SHA-256 does not match its checksum record (corrupt)"
        if len(lines[0]) > 1 and lines[0][1:] != [path.name]:
            return None, f"its checksum record names {' '.join(lines[0][1:])!r} (moved or swapped)"
        if lines[1:] != [["run", self.manifest["config_hash"]]] and not (
                self.legacy and not lines[1:]):
            return None, ("its checksum record does not bind it to this run (copied from another "
                          "run, e.g. another seed)")
        return data, ""

    def save_file(self, relpath: str, data: bytes) -> Path:
        """Write ``data`` to ``relpath`` with a checksum record bound to this run
        (``relpath + ".sha256"``): for a file the run reuses when resumed (e.g. a cached
        pretrained model), read back with :meth:`load_file`."""
        rel = _safe_relpath(relpath)
        path = self.path / rel
        atomic_write_bytes(path, data)
        atomic_write_bytes(path.with_name(path.name + ".sha256"), self._record(path, data))
        return path

    def load_file(self, relpath: str) -> bytes | None:
        """The bytes written by :meth:`save_file` when they still match their run-bound
        checksum record; None when the file is absent, corrupt, a symbolic link, or was copied
        from another run (then recompute it and :meth:`save_file` it again)."""
        data, _ = self._checked_bytes(self.path / _safe_relpath(relpath))
        return data

    # -- chunks -------------------------------------------------------------------------------
    def _chunk_path(self, name: str) -> Path:
        if not isinstance(name, str) or not _CHUNK_NAME.match(name):
            raise ValueError(f"chunk name must match {_CHUNK_NAME.pattern}, got {name!r}")
        return self.path / "chunks" / f"{name}.npz"

    def save_chunk(self, name: str, arrays: dict[str, Any]) -> None:
        """Write one chunk of results atomically, then its checksum record (digest, chunk name
        and this run's ``config_hash``)."""
        import io

        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        objects = [k for k, v in arrays.items() if v.dtype.hasobject]
        if objects:
            raise ValueError(f"chunk {name!r}: arrays {objects} hold Python objects; a chunk holds "
                             "numeric arrays only (it is never unpickled)")
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        path = self._chunk_path(name)
        # the record first: a process that sees the chunk file always finds its record (several
        # processes may fill one folder, runs.claims); a crash in between leaves a record
        # without a chunk, which reads as "not finished"
        atomic_write_bytes(path.with_suffix(".npz.sha256"), self._record(path, data))
        atomic_write_bytes(path, data)

    def _verified_bytes(self, name: str) -> bytes | None:
        """The chunk's bytes when its checksum record matches them, names this chunk and this
        run; None otherwise."""
        return self._checked_bytes(self._chunk_path(name))[0]

    def has_chunk(self, name: str) -> bool:
        """True when the chunk exists and its checksum record matches. A corrupt chunk (or one
        from another run) reads as not finished, with a warning, and is overwritten when it is
        computed again (it is not removed here: another process may be writing it)."""
        path = self._chunk_path(name)
        data, reason = self._checked_bytes(path)
        if data is not None:
            return True
        if _symlink_below(self.path, path) is not None:
            raise ValueError(f"{self.path}: {reason}; refusing to write through it")
        if os.path.lexists(path):
            warnings.warn(f"chunk {name!r} in {self.path} is not usable ({reason}); it will be "
                          "recomputed", stacklevel=2)
        return False

    def load_chunk(self, name: str) -> dict[str, np.ndarray]:
        """Load a verified chunk (sizes checked before loading, see :mod:`jaxaudit.runs.arrays`).

        Raises:
          ValueError: the chunk is missing, corrupt, moved, copied from another run, or not a
            safe ``.npz`` (the message says which).
        """
        path = self._chunk_path(name)
        data, reason = self._checked_bytes(path)
        if data is None:
            raise ValueError(f"run folder {self.path} is inconsistent: chunk {name!r} is not "
                             f"usable: {reason}. Repeat the run's command to recompute it")
        return load_npz(data, name=f"chunk {name!r} in {self.path}")

    def describe_chunk(self, name: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """``{array name: (shape, dtype)}`` of a verified chunk, from its headers alone.

        Raises:
          ValueError: as :meth:`load_chunk`.
        """
        path = self._chunk_path(name)
        data, reason = self._checked_bytes(path)
        if data is None:
            raise ValueError(f"chunk {name!r} is not usable: {reason}")
        return describe_npz(data, name=f"chunk {name!r} in {self.path}")

    def chunk_names(self) -> list[str]:
        """Names of the chunks present (not yet verified), sorted; a checksum file whose chunk
        was deleted counts too (loading it then fails instead of the chunk being skipped)."""
        folder = self.path / "chunks"
        if not folder.is_dir():
            return []
        names = set()
        for p in folder.iterdir():
            for suffix in (".npz", ".npz.sha256"):
                stem = p.name[: -len(suffix)]
                if p.name.endswith(suffix) and _CHUNK_NAME.match(stem or "-"):
                    names.add(stem)
        return sorted(names)

    # -- other outputs ------------------------------------------------------------------------
    def write_json(self, relpath: str, obj: Any) -> Path:
        """Write ``obj`` as strict JSON (non-finite numbers as ``null``, see
        :func:`dumps_strict`)."""
        path = self.path / _safe_relpath(relpath)
        atomic_write_bytes(path, dumps_strict(obj, indent=2).encode())
        return path

    def write_text(self, relpath: str, text: str) -> Path:
        path = self.path / _safe_relpath(relpath)
        atomic_write_bytes(path, text.encode())
        return path


def _describe_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(set(old) | set(new))
    changed = [k for k in keys if old.get(k) != new.get(k)]
    shown = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:4])
    return shown or "hash differs"


class RunResults(NamedTuple):
    """A run folder as loaded by :func:`load_results`.

    Attributes:
      kind: the run's kind (e.g. ``"shadow"``, ``"rdp"``).
      config: the configuration the run was opened with.
      manifest: the whole manifest.
      chunks: ``{chunk name: {array name: array}}`` of the finished chunks.
      planned: the chunk names the run planned, in order.
      missing: planned chunks not finished (the run is partial when this is not empty).
      tables: ``{relative path: parsed JSON}`` for every other ``*.json``.
      files: every file's relative path.
    """

    kind: str
    config: dict[str, Any]
    manifest: dict[str, Any]
    chunks: dict[str, dict[str, np.ndarray]]
    planned: list[str]
    missing: list[str]
    tables: dict[str, Any]
    files: list[str]

    def concat(self, array: str, names: Sequence[str] | None = None) -> np.ndarray:
        """One array of every chunk, concatenated along axis 0 in chunk order.

        Args:
          array: the array's name inside the chunks (e.g. ``"masks"``).
          names: the chunks, in order (default: the planned order when the run planned its
            chunks, else the finished chunks sorted by name).

        Raises:
          ValueError: a named chunk is not finished or does not hold ``array``.
        """
        if names is None:
            names = self.planned or sorted(self.chunks)
        missing = [n for n in names if n not in self.chunks]
        if missing:
            raise ValueError(f"chunks not finished: {missing[:5]}{'…' if len(missing) > 5 else ''}")
        lacking = [n for n in names if array not in self.chunks[n]]
        if lacking:
            raise ValueError(f"chunks {lacking[:5]} hold no array {array!r}")
        return np.concatenate([self.chunks[n][array] for n in names])

    @overload
    def __getitem__(self, key: SupportsIndex) -> Any: ...

    @overload
    def __getitem__(self, key: slice) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, key: str) -> Any: ...

    def __getitem__(self, key: SupportsIndex | slice | str) -> Any:
        """``results["chunks"]`` as well as ``results.chunks`` (the dict this used to be)."""
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(key)
            return getattr(self, key)
        return tuple.__getitem__(self, key)


def load_results(path: str | Path) -> RunResults:
    """Load a run folder written through :class:`RunDir`.

    Symbolic links, FIFOs and devices inside the folder are neither followed nor read (each is
    skipped with a warning); so is a manifest of an older version, whose kind and plan are not
    protected by a hash, read with a warning.

    Returns:
      :class:`RunResults` (``kind``, ``config``, ``manifest``, ``chunks``, ``planned``,
      ``missing``, ``tables``, ``files``); ``len(chunks)`` of ``len(planned)`` are done, and
      ``results.concat("masks")`` concatenates one array over the chunks.

    Raises:
      FileNotFoundError: no manifest in ``path``.
      ValueError: a corrupt, hand-edited or deeply nested manifest; a chunk whose checksum
        record does not match, names another chunk or another run; a checksum file whose chunk
        was deleted; a chunk whose arrays are unsafe to load (sizes that do not add up, a
        possible zip bomb, pickled objects); a corrupt or deeply nested JSON table (corrupt
        results are never returned).
    """
    path = Path(path)
    manifest = read_manifest(path)
    run = RunDir(path, manifest)
    if run.legacy:
        warnings.warn(f"{path / MANIFEST} was written by an older jaxaudit without manifest_hash: "
                      "its kind and planned chunks are not protected against editing",
                      stacklevel=2)
    chunks = {name: run.load_chunk(name) for name in run.chunk_names()}
    planned = list(manifest.get("planned_chunks", []))
    missing = [n for n in planned if n not in chunks]
    files, skipped = scan_run_folder(path)
    for rel, reason in skipped:
        warnings.warn(f"{path / rel} skipped: {reason}", stacklevel=2)
    tables = {}
    for rel in files:
        if rel.endswith(".json") and rel != MANIFEST:
            p = path / rel
            try:
                raw = _read_regular(p)
            except OSError as err:
                raise ValueError(f"{p} cannot be read ({err.strerror or err})") from err
            tables[rel] = parse_json(raw, p)
    return RunResults(kind=manifest["kind"], config=manifest["config"], manifest=manifest,
                      chunks=chunks, planned=planned, missing=missing, tables=tables, files=files)


def discard_new_run(path: str | os.PathLike[str], existed: bool, *, keep_folder: bool = False
                    ) -> None:
    """Remove what this command wrote into a run folder it created (the manifest, the cached
    public model, an empty chunks/ folder) when no chunk was finished: the first chunk failed
    (e.g. the training diverged), and the corrected command must be able to use the same
    ``--out`` instead of being refused as a different configuration. A folder that held a run
    before (``existed``), or any finished chunk, is left alone; the folder itself is kept when
    it existed (empty) before the command (``keep_folder``). Only process 0 of a multi-process
    JAX program removes anything (:func:`jax_process`)."""
    path = Path(path)
    chunks = path / "chunks"
    if existed or jax_process()[0] != 0 or (chunks.is_dir() and any(chunks.glob("*.npz"))):
        return
    try:
        for name in ("manifest.json", *(p.name for p in path.glob("pretrained_seed_*.msgpack*"))):
            (path / name).unlink(missing_ok=True)
        if chunks.is_dir() and not any(chunks.iterdir()):
            chunks.rmdir()
        if not keep_folder and not any(path.iterdir()):
            path.rmdir()
    except OSError:
        pass


def save_figure(fig: Any, path: str | os.PathLike, **savefig_kwargs: Any) -> Path:
    """Write a matplotlib figure as PNG atomically (rendered in memory, then
    :func:`atomic_write_bytes`), so that an interrupted run never leaves half an image and only
    process 0 of a multi-process JAX program writes it."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig_kwargs)
    path = Path(path)
    atomic_write_bytes(path, buffer.getvalue())
    return path
