"""Resumable run folders: a manifest, atomically written chunk files, checksums.

Layout of a run folder::

    manifest.json          kind, config, config_hash, version, created, planned_chunks
    chunks/<name>.npz      one finished chunk of results (numpy arrays)
    chunks/<name>.npz.sha256   "<SHA-256 of the file>  <name>.npz" (the digest bound to the name)
    ...                    tables (*.json, *.csv), summaries (*.md), figures (*.png)

Every file is written to a temporary file in the same folder and renamed into place (with the
permissions the umask gives a new file), so a run killed mid-way loses at most the chunk in
flight. The manifest is created exclusively (a hard link that fails if one exists): of two
processes opening the same new folder at once, one creates the run and the other resumes it when
its configuration is the same, or is refused. Re-opening the folder with the same configuration
resumes; a different configuration is refused; a manifest whose configuration no longer matches
its own hash (edited by hand) is refused; a chunk whose checksum does not match is removed and
recomputed, never silently used, and a chunk stored under another chunk's name is refused.
:func:`load_results` says how many of the planned chunks are finished.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["RunDir", "RunResults", "load_results", "read_manifest", "config_hash", "atomic_write_bytes"]

_CHUNK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MANIFEST = "manifest.json"


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def config_hash(config: dict) -> str:
    """SHA-256 of the canonical JSON form of ``config`` (sorted keys, no whitespace)."""
    text = json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` atomically, only if it does not exist (a hard link of a
    complete temporary file: readers never see a partial file). False when it already exists."""
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


def read_manifest(path: str | Path) -> dict:
    """The manifest of run folder ``path``, checked against its own hash.

    Raises:
      FileNotFoundError: no manifest.
      ValueError: the manifest is not valid JSON, lacks its fields, or its configuration does
        not match its ``config_hash`` (edited by hand): its results cannot be trusted to be what
        it says.
    """
    manifest_path = Path(path) / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{manifest_path} not found: {path} is not a jaxaudit run folder")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{manifest_path} is corrupt ({err}); the run cannot be read") from err
    if not isinstance(manifest, dict) or not {"kind", "config", "config_hash"} <= set(manifest):
        raise ValueError(f"{manifest_path} lacks kind/config/config_hash: not a jaxaudit manifest")
    if config_hash(manifest["config"]) != manifest["config_hash"]:
        raise ValueError(
            f"{manifest_path}: the configuration does not match its config_hash (the manifest "
            "was edited by hand); its results were made with another configuration. Restore the "
            "manifest or use a new folder")
    return manifest


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RunDir:
    """A run folder. Use :meth:`open`; see the module docstring for the layout."""

    def __init__(self, path: Path, manifest: dict):
        self.path = Path(path)
        self.manifest = manifest

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def config(self) -> dict:
        return self.manifest["config"]

    @classmethod
    def open(cls, path, *, kind: str, config: dict) -> RunDir:
        """Create the run folder, or resume it when it holds a run with the same configuration.

        Raises:
          ValueError: the folder holds a run of another kind or configuration (also when another
            process created it at the same instant), its manifest is corrupt or edited, or it is
            not empty and holds no manifest; ``path`` is a file or cannot be written.
        """
        from jaxaudit import __version__

        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ValueError(f"run folder {path} is a file, not a folder")
        config = _jsonable(dict(config))
        digest = config_hash(config)
        manifest_path = path / MANIFEST
        if not manifest_path.exists():
            others = path.exists() and any(
                not p.name.startswith(".") and p.name != MANIFEST for p in path.iterdir())
            if others and not manifest_path.exists():
                raise ValueError(f"{path} is not empty and holds no {MANIFEST}; use a new folder")
            manifest = {
                "kind": kind,
                "config": config,
                "config_hash": digest,
                "version": __version__,
                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "planned_chunks": [],
            }
            try:
                created = _create_exclusive(manifest_path, json.dumps(manifest, indent=2).encode())
            except PermissionError as err:
                raise ValueError(f"run folder {path} cannot be written ({err})") from err
            if created:
                return cls(path, manifest)
            # another process created the run between our check and our write: join or refuse
        manifest = read_manifest(path)
        if manifest.get("kind") != kind or manifest.get("config_hash") != digest:
            diff = _describe_diff(manifest.get("config", {}), config)
            raise ValueError(
                f"{path} already holds a {manifest.get('kind')!r} run with a different "
                f"configuration ({diff}); choose another output folder or repeat the "
                "original command to resume it"
            )
        if manifest.get("version") != __version__:
            warnings.warn(
                f"resuming a run made by jaxaudit {manifest.get('version')} with "
                f"{__version__}", stacklevel=2,
            )
        return cls(path, manifest)

    def plan(self, names) -> None:
        """Record chunk names the run will hold (kept in the manifest, in order, without
        duplicates), so that :func:`load_results` can tell a finished run from a partial one."""
        planned = list(self.manifest.get("planned_chunks", []))
        new = [n for n in names if n not in planned]
        if not new:
            return
        for n in new:
            self._chunk_path(n)  # validates the name
        fresh = read_manifest(self.path)  # another writer may have planned chunks meanwhile
        planned = list(fresh.get("planned_chunks", []))
        planned += [n for n in names if n not in planned]
        self.manifest = fresh | {"planned_chunks": planned}
        atomic_write_bytes(self.path / MANIFEST, json.dumps(self.manifest, indent=2).encode())

    def missing_chunks(self) -> list[str]:
        """Planned chunks not (validly) finished, in plan order."""
        return [n for n in self.manifest.get("planned_chunks", [])
                if self._verified_bytes(n) is None]

    # -- chunks -------------------------------------------------------------------------------
    def _chunk_path(self, name: str) -> Path:
        if not _CHUNK_NAME.match(name):
            raise ValueError(f"chunk name must match {_CHUNK_NAME.pattern}, got {name!r}")
        return self.path / "chunks" / f"{name}.npz"

    def save_chunk(self, name: str, arrays: dict) -> None:
        """Write one chunk of results atomically, then its checksum."""
        buf = io.BytesIO()
        np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
        data = buf.getvalue()
        path = self._chunk_path(name)
        atomic_write_bytes(path, data)
        atomic_write_bytes(path.with_suffix(".npz.sha256"),
                           f"{_sha256(data)}  {path.name}\n".encode())

    def _verified_bytes(self, name: str) -> bytes | None:
        """The chunk's bytes when its checksum file holds their SHA-256 *and names this chunk*
        (a chunk and its checksum moved under another chunk's name are refused); None otherwise.
        A checksum file without a name (older runs) is checked on the digest alone."""
        path = self._chunk_path(name)
        sidecar = path.with_suffix(".npz.sha256")
        if not path.exists() or not sidecar.exists():
            return None
        data = path.read_bytes()
        fields = sidecar.read_text().split()
        if not fields or _sha256(data) != fields[0]:
            return None
        if len(fields) > 1 and fields[1] != path.name:
            return None
        return data

    def has_chunk(self, name: str) -> bool:
        """True when the chunk exists and its checksum matches; a corrupt chunk is removed."""
        path = self._chunk_path(name)
        if self._verified_bytes(name) is not None:
            return True
        if path.exists():
            warnings.warn(f"chunk {name!r} in {self.path} is corrupt; it will be recomputed",
                          stacklevel=2)
            path.unlink(missing_ok=True)
            path.with_suffix(".npz.sha256").unlink(missing_ok=True)
        return False

    def load_chunk(self, name: str) -> dict[str, np.ndarray]:
        """Load a verified chunk. Raises ValueError when it is missing or corrupt."""
        data = self._verified_bytes(name)
        if data is None:
            raise ValueError(f"chunk {name!r} in {self.path} is missing, corrupt, or not the "
                             "chunk its checksum file names")
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}

    def chunk_names(self) -> list[str]:
        """Names of the chunks present (not yet verified), sorted; a checksum file whose chunk
        was deleted counts too (loading it then fails instead of the chunk being skipped)."""
        folder = self.path / "chunks"
        if not folder.is_dir():
            return []
        names = {p.name[: -len(".npz")] for p in folder.glob("*.npz")}
        names |= {p.name[: -len(".npz.sha256")] for p in folder.glob("*.npz.sha256")}
        return sorted(names)

    # -- other outputs ------------------------------------------------------------------------
    def write_json(self, relpath: str, obj) -> Path:
        path = self.path / relpath
        atomic_write_bytes(path, json.dumps(_jsonable(obj), indent=2).encode())
        return path

    def write_text(self, relpath: str, text: str) -> Path:
        path = self.path / relpath
        atomic_write_bytes(path, text.encode())
        return path


def _describe_diff(old: dict, new: dict) -> str:
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
    config: dict
    manifest: dict
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

    def __getitem__(self, key):
        """``results["chunks"]`` as well as ``results.chunks`` (the dict this used to be)."""
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(key)
            return getattr(self, key)
        return tuple.__getitem__(self, key)


def load_results(path: str | Path) -> RunResults:
    """Load a run folder written through :class:`RunDir`.

    Returns:
      :class:`RunResults` (``kind``, ``config``, ``manifest``, ``chunks``, ``planned``,
      ``missing``, ``tables``, ``files``); ``len(chunks)`` of ``len(planned)`` are done, and
      ``results.concat("masks")`` concatenates one array over the chunks.

    Raises:
      FileNotFoundError: no manifest in ``path``.
      ValueError: a corrupt or hand-edited manifest, a chunk whose checksum does not match or
        names another chunk, or a checksum file whose chunk was deleted (corrupt results are
        never returned).
    """
    path = Path(path)
    manifest = read_manifest(path)
    run = RunDir(path, manifest)
    chunks = {name: run.load_chunk(name) for name in run.chunk_names()}
    planned = list(manifest.get("planned_chunks", []))
    missing = [n for n in planned if n not in chunks]
    tables, files = {}, []
    for p in sorted(path.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        rel = p.relative_to(path).as_posix()
        files.append(rel)
        if p.suffix == ".json" and p.name != MANIFEST:
            try:
                tables[rel] = json.loads(p.read_text())
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise ValueError(f"{p} is corrupt ({err})") from err
    return RunResults(kind=manifest["kind"], config=manifest["config"], manifest=manifest,
                      chunks=chunks, planned=planned, missing=missing, tables=tables, files=files)
