"""Resumable run folders: a manifest, atomically written chunk files, checksums.

Layout of a run folder::

    manifest.json          kind, config, config_hash, version, created
    chunks/<name>.npz      one finished chunk of results (numpy arrays)
    chunks/<name>.npz.sha256
    ...                    tables (*.json, *.csv), summaries (*.md), figures (*.png)

Every file is written to a temporary file in the same folder and renamed into place, so a run
killed mid-way loses at most the chunk in flight. Re-opening the folder with the same
configuration resumes; a different configuration is refused; a chunk whose checksum does not match
is removed and recomputed, never silently used.
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
from pathlib import Path

import numpy as np

__all__ = ["RunDir", "load_results", "config_hash", "atomic_write_bytes"]

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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
          ValueError: the folder holds a run of another kind or configuration, or is not empty
            and holds no manifest.
        """
        from jaxaudit import __version__

        path = Path(path)
        config = _jsonable(dict(config))
        digest = config_hash(config)
        manifest_path = path / MANIFEST
        if manifest_path.exists():
            try:
                manifest = json.loads(manifest_path.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise ValueError(f"{manifest_path} is unreadable ({err}); use a new folder") from err
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
        if path.exists() and any(path.iterdir()):
            raise ValueError(f"{path} is not empty and holds no {MANIFEST}; use a new folder")
        manifest = {
            "kind": kind,
            "config": config,
            "config_hash": digest,
            "version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        atomic_write_bytes(manifest_path, json.dumps(manifest, indent=2).encode())
        return cls(path, manifest)

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
        atomic_write_bytes(path.with_suffix(".npz.sha256"), _sha256(data).encode())

    def _verified_bytes(self, name: str) -> bytes | None:
        path = self._chunk_path(name)
        sidecar = path.with_suffix(".npz.sha256")
        if not path.exists() or not sidecar.exists():
            return None
        data = path.read_bytes()
        if _sha256(data) != sidecar.read_text().strip():
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
            raise ValueError(f"chunk {name!r} in {self.path} is missing or corrupt")
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}

    def chunk_names(self) -> list[str]:
        """Names of the chunks present (not yet verified), sorted."""
        folder = self.path / "chunks"
        if not folder.is_dir():
            return []
        return sorted(p.name[: -len(".npz")] for p in folder.glob("*.npz"))

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


def load_results(path) -> dict:
    """Load a run folder written through :class:`RunDir`.

    Returns:
      dict with ``kind``, ``config``, ``manifest``, ``chunks`` ({name: {array name: array}}),
      ``tables`` ({relative path: parsed JSON} for every other ``*.json``) and ``files`` (every
      file's relative path).

    Raises:
      FileNotFoundError: no manifest in ``path``.
      ValueError: a chunk's checksum does not match (corrupt results are never returned).
    """
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"{manifest_path} not found: {path} is not a jaxaudit run folder")
    manifest = json.loads(manifest_path.read_text())
    run = RunDir(path, manifest)
    chunks = {name: run.load_chunk(name) for name in run.chunk_names()}
    tables, files = {}, []
    for p in sorted(path.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        rel = p.relative_to(path).as_posix()
        files.append(rel)
        if p.suffix == ".json" and p.name != MANIFEST:
            tables[rel] = json.loads(p.read_text())
    return {
        "kind": manifest["kind"],
        "config": manifest["config"],
        "manifest": manifest,
        "chunks": chunks,
        "tables": tables,
        "files": files,
    }
