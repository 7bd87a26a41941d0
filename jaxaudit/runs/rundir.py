"""Resumable run folders: a manifest, atomically written chunk files, checksums.

Layout of a run folder::

    manifest.json          kind, config, config_hash, version, created, layout, planned_chunks,
                           manifest_hash
    chunks/<name>.npz      one finished chunk of results (numpy arrays)
    chunks/<name>.npz.sha256   "<SHA-256 of the file>  <name>.npz" and "run <config_hash>"
    ...                    tables (*.json, *.csv), summaries (*.md), figures (*.png)

Every file is written atomically (:mod:`jaxaudit.runs.files`), so a run killed mid-way loses at
most the chunk in flight. The manifest is created exclusively (a hard link that fails if one
exists): of two processes opening the same new folder at once, one creates the run and the other
resumes it when its configuration is the same, or is refused. Re-opening the folder with the same
configuration resumes; a different configuration is refused.

Integrity (what is refused, never silently used):

* ``config_hash`` is the SHA-256 of the canonical configuration (it identifies the run: resuming
  compares it); ``manifest_hash`` is the SHA-256 of every other field of the manifest, so the
  run's ``kind`` and ``planned_chunks`` (a shortened plan would hide a partial run) cannot be
  edited unnoticed. A manifest that does not match either hash, is not a JSON object, or is
  nested deeper than :data:`jaxaudit.runs.files.MAX_JSON_DEPTH` is a ``ValueError`` naming it. A
  folder written in another layout (``layout`` other than :data:`LAYOUT`) is refused with the
  jaxaudit version that wrote it.
* a chunk's checksum record names the chunk *and the run* (its ``config_hash``): a chunk whose
  digest does not match, one moved under another chunk's name, and one copied from another run
  (e.g. another seed) are refused; :meth:`RunDir.has_chunk` removes them so they are recomputed.
  :meth:`RunDir.save_file` / :meth:`RunDir.load_file` give any other reusable file (a cached
  model) the same run-bound checksum.
* every result file a pipeline writes through :meth:`RunDir.write_json`,
  :meth:`RunDir.write_text` or :meth:`RunDir.write_bytes` (tables, summaries, figures) gets the
  same run-bound record beside it (``<name>.sha256``): :meth:`RunDir.output_status` says for each
  file whether it matches, was edited, is missing (its record is there) or is not covered by a
  checksum at all (a file the run did not write), so an edited ``result.json`` is refused like
  an edited manifest (:func:`jaxaudit.runs.load_results`) and reported (``jaxaudit report``).
* arrays are read through :mod:`jaxaudit.runs.arrays` (sizes checked before anything is
  allocated or decompressed; never unpickled).
* reading never follows a symbolic link inside the run folder and reads only regular files
  (:func:`jaxaudit.runs.files.scan_run_folder` lists what it skipped).
* checksums are computed in blocks: verifying a chunk never holds it in memory; loading one
  larger than :data:`MAX_LOAD_BYTES` is refused with a ``ValueError`` naming the file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxaudit._validation.paths import check_memory
from jaxaudit.runs.arrays import describe_npz, load_npz
from jaxaudit.runs.files import (
    atomic_write_bytes,
    config_hash,
    create_exclusive,
    dumps_strict,
    jax_process,
    jsonable,
    open_regular,
    parse_json,
    read_regular,
    sha256_file,
    sha256_hex,
    symlink_below,
)

__all__ = ["LAYOUT", "MANIFEST", "MAX_LOAD_BYTES", "NOT_COVERED", "RESULT_SUFFIXES", "RunDir", "RunFolderWarning",
           "discard_new_run", "read_manifest"]

CHUNK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MANIFEST = "manifest.json"
#: The run-folder layout this version writes and reads (stored in the manifest).
LAYOUT = 2
_MAX_MANIFEST_BYTES = 64 << 20
#: Largest chunk (or saved file) loaded into memory; a larger one is refused naming it. Checksums
#: are computed in blocks, so a chunk of any size is verified (``has_chunk``, the report)
#: without being loaded.
MAX_LOAD_BYTES = 4 << 30
#: :meth:`RunDir.output_status` of a file with no checksum record (not written by the run).
NOT_COVERED = "not covered by a checksum (not written by this run, or its record was removed)"
_RECORD = ".sha256"
#: What a run writes once its planned chunks are finished (tables, summaries, figures): such a
#: file beside a missing planned chunk means the chunk was removed.
RESULT_SUFFIXES = (".json", ".md", ".csv", ".png")


class RunFolderWarning(UserWarning):
    """A run folder holds something that cannot be used as it is: a corrupt, moved or copied
    chunk, or a result file that was edited or is missing."""


def _manifest_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of every field of the manifest except ``manifest_hash`` itself."""
    body = {k: v for k, v in manifest.items() if k != "manifest_hash"}
    return hashlib.sha256(
        dumps_strict(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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
        raw = read_regular(manifest_path, _MAX_MANIFEST_BYTES)
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
            isinstance(n, str) and CHUNK_NAME.match(n) for n in planned):
        raise ValueError(f"{manifest_path}: planned_chunks must be a list of chunk names")
    edited = (f"{manifest_path}: the {{}} does not match its {{}} (the manifest was edited by "
              "hand); its results cannot be trusted to be what it says. Restore the manifest or "
              "use a new folder")
    if manifest.get("layout") != LAYOUT:
        raise ValueError(
            f"{path} is a run folder of jaxaudit {manifest.get('version', '(unknown version)')}, "
            f"written in another layout than this version ({_version()}) reads; use a new folder "
            "(or that version to read it)")
    if config_hash(manifest["config"]) != manifest["config_hash"]:
        raise ValueError(edited.format("configuration", "config_hash"))
    if _manifest_digest(manifest) != manifest.get("manifest_hash"):
        raise ValueError(edited.format("kind, plan or provenance", "manifest_hash"))
    return manifest


def _version() -> str:
    from jaxaudit import __version__

    return __version__


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
        self._warned: set[tuple[str, str]] = set()  # (chunk, reason) already warned about

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest["config"]

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, kind: str, config: dict[str, Any]) -> RunDir:
        """Create the run folder, or resume it when it holds a run with the same configuration.

        Raises:
          ValueError: the folder holds a run of another kind or configuration (also when another
            process created it at the same instant), its manifest is corrupt or edited, or it is
            not empty and holds no manifest; ``path`` is a file or cannot be written (read-only,
            full disk: the message names the folder and the reason).
        """
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ValueError(f"run folder {path} is a file, not a folder")
        config = jsonable(dict(config))
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
                "version": _version(),
                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "layout": LAYOUT,
                "planned_chunks": [],
            }
            manifest["manifest_hash"] = _manifest_digest(manifest)
            try:
                created = create_exclusive(manifest_path,
                                            dumps_strict(manifest, indent=2).encode())
            except OSError as err:
                raise ValueError(f"run folder {path} cannot be written ({err.strerror or err}); "
                                 "choose a folder you can write to") from err
            if created:
                return cls(path, manifest)
            # another process created the run between our check and our write: join or refuse
        manifest = read_manifest(path)
        if manifest["kind"] != kind or manifest["config_hash"] != digest:
            diff = _describe_diff(manifest["config"], config)
            raise ValueError(
                f"{path} already holds a {manifest['kind']!r} run with a different "
                f"configuration ({diff}); choose another output folder or repeat the "
                "original command to resume it"
            )
        if manifest.get("version") != _version():
            warnings.warn(
                f"resuming a run made by jaxaudit {manifest.get('version')} with "
                f"{_version()}", stacklevel=2,
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
        manifest["manifest_hash"] = _manifest_digest(manifest)
        self.manifest = manifest
        _write_manifest(self.path, manifest)

    def missing_chunks(self) -> list[str]:
        """Planned chunks not (validly) finished, in plan order."""
        return [n for n in self.manifest.get("planned_chunks", [])
                if self._verify(self._chunk_path(n))]

    # -- checksummed files --------------------------------------------------------------------
    def _record(self, path: Path, data: bytes) -> bytes:
        """The checksum record of ``data`` stored as ``path``: digest and name, then the run's
        ``config_hash``."""
        return (f"{sha256_hex(data)}  {path.name}\n"
                f"run {self.manifest['config_hash']}\n").encode()

    def _checked_file(self, path: Path, keep: bool = False
                      ) -> tuple[io.BufferedReader | None, bytes | None, str]:
        """``(file, data, "")`` when ``path`` and its checksum record ``path.sha256`` are regular
        files inside the folder (no symbolic link on the way) and the record holds the file's
        SHA-256 (computed in blocks), its name and this run's ``config_hash``: ``file`` is the
        open file, at its start, for the caller to close, and ``data`` the bytes hashed when
        ``keep`` (else None). ``(None, None, reason)`` otherwise.

        Raises:
          ValueError: ``keep`` and the file holds more than :data:`MAX_LOAD_BYTES` (named, with
            its size; nothing is read).
        """
        sidecar = path.with_name(path.name + ".sha256")
        link = symlink_below(self.path, path)
        if link is not None:
            return None, None, f"{link} is a symbolic link (not followed)"
        try:
            text = read_regular(sidecar, 1 << 16).decode("ascii")
            f = open_regular(path)
        except FileNotFoundError as err:
            missing = Path(err.filename).name if err.filename else path.name
            return None, None, f"{missing} is missing"
        except (OSError, ValueError) as err:  # a link, a FIFO, not ASCII, unreadable
            return None, None, str(err)
        try:
            size = os.fstat(f.fileno()).st_size
            if keep and size > MAX_LOAD_BYTES:
                raise ValueError(
                    f"{path} holds {size:,} bytes, more than the {MAX_LOAD_BYTES:,} that are "
                    "loaded into memory; not loaded (rerun with a smaller chunk)")
            if keep:  # its bytes, then its arrays
                check_memory(str(path), 2 * size, f"({size:,} bytes)")
            digest, data = sha256_file(f, keep)
            f.seek(0)
        except BaseException:
            f.close()
            raise
        lines = [line.split() for line in text.splitlines() if line.strip()]
        # "<digest>  <name>": the name may hold spaces
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        named = first[len(lines[0][0]):].strip() if lines else ""
        reason = ""
        if not lines or digest != lines[0][0]:
            reason = "its SHA-256 does not match its checksum record (corrupt)"
        elif named and named != path.name.strip():
            reason = f"its checksum record names {named!r} (moved or swapped)"
        elif lines[1:] != [["run", self.manifest["config_hash"]]]:
            reason = ("its checksum record does not bind it to this run (copied from another "
                      "run, e.g. another seed)")
        if reason:
            f.close()
            return None, None, reason
        return f, data, ""

    def _checked_bytes(self, path: Path) -> tuple[bytes | None, str]:
        """``(bytes, "")`` of a file whose run-bound checksum record matches
        (:meth:`_checked_file`); ``(None, reason)`` otherwise."""
        f, data, reason = self._checked_file(path, keep=True)
        if f is not None:
            f.close()
        return data, reason

    def _verify(self, path: Path) -> str:
        """``""`` when the file matches its run-bound checksum record (checked in blocks, nothing
        kept in memory), else why not."""
        f, _, reason = self._checked_file(path)
        if f is not None:
            f.close()
        return reason

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
        from another run (then recompute it and :meth:`save_file` it again).

        Raises:
          ValueError: the file holds more than :data:`MAX_LOAD_BYTES` (named, not read).
        """
        data, _ = self._checked_bytes(self.path / _safe_relpath(relpath))
        return data

    # -- chunks -------------------------------------------------------------------------------
    def _chunk_path(self, name: str) -> Path:
        if not isinstance(name, str) or not CHUNK_NAME.match(name):
            raise ValueError(f"chunk name must match {CHUNK_NAME.pattern}, got {name!r}")
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
        """True when the chunk exists and its checksum record matches (checked in blocks: the
        chunk is not loaded). A corrupt chunk (or one from another run) reads as not finished,
        with a warning (once per chunk and reason for this ``RunDir``), and is overwritten when
        it is computed again (it is not removed here: another process may be writing it)."""
        path = self._chunk_path(name)
        reason = self._verify(path)
        if not reason:
            return True
        if symlink_below(self.path, path) is not None:
            raise ValueError(f"{self.path}: {reason}; refusing to write through it")
        if os.path.lexists(path) and (name, reason) not in self._warned:
            self._warned.add((name, reason))
            # once per chunk and reason, and shown without a line of jaxaudit's source (a
            # "<...>" file name is never looked up)
            warnings.warn_explicit(f"chunk {name!r} in {self.path} is not usable ({reason}); "
                                   "it will be recomputed", RunFolderWarning,
                                   "<jaxaudit run folder>",
                                   0, module="jaxaudit.runs.rundir")
        return False

    def load_chunk(self, name: str) -> dict[str, np.ndarray]:
        """Load a verified chunk (sizes checked before loading, see :mod:`jaxaudit.runs.arrays`).

        Raises:
          ValueError: the chunk is missing, corrupt, moved, copied from another run, larger
            than :data:`MAX_LOAD_BYTES`, or not a safe ``.npz`` (the message says which).
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
        f, _, reason = self._checked_file(path)
        if f is None:
            raise ValueError(f"chunk {name!r} is not usable: {reason}")
        with f:
            return describe_npz(f, name=f"chunk {name!r} in {self.path}")

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
                if p.name.endswith(suffix) and CHUNK_NAME.match(stem or "-"):
                    names.add(stem)
        return sorted(names)

    # -- other outputs ------------------------------------------------------------------------
    def write_bytes(self, relpath: str, data: bytes) -> Path:
        """Write a result file (``data``) atomically, then its run-bound checksum record
        (``relpath + ".sha256"``; when the record cannot be written the file is removed, and a
        crash in between leaves a file that does not pass); :meth:`output_status` checks it."""
        path = self.path / _safe_relpath(relpath)
        atomic_write_bytes(path, data)
        try:
            atomic_write_bytes(path.with_name(path.name + _RECORD), self._record(path, data))
        except BaseException:  # no result left that its record does not cover
            path.unlink(missing_ok=True)
            raise
        return path

    def write_json(self, relpath: str, obj: Any) -> Path:
        """Write ``obj`` as strict JSON (non-finite numbers as ``null``, see
        :func:`dumps_strict`), with its checksum record (:meth:`write_bytes`)."""
        return self.write_bytes(relpath, dumps_strict(obj, indent=2).encode())

    def write_text(self, relpath: str, text: str) -> Path:
        """Write ``text`` (UTF-8), with its checksum record (:meth:`write_bytes`)."""
        return self.write_bytes(relpath, text.encode())

    def output_status(self, relpaths: Sequence[str]) -> dict[str, str]:
        """Whether each result file can be trusted, checked in blocks (nothing kept in memory).

        Args:
          relpaths: files of the folder outside ``chunks/`` (relative, POSIX), e.g. the files of
            :func:`jaxaudit.runs.files.scan_run_folder`; checksum records (``*.sha256``) and the
            manifest among them are left out of the answer.

        Returns:
          ``{relative path: status}`` for each of ``relpaths`` and for each file whose checksum
          record is there but the file is not (status ``"<name> is missing"``): ``""`` when the
          file matches its run-bound record, :data:`NOT_COVERED` when it has no record, else why
          it does not match (edited, moved, or copied from another run).
        """
        out: dict[str, str] = {}
        names = set(relpaths)
        for rel in sorted(names):
            if rel == MANIFEST or rel.endswith(_RECORD) or rel.split("/")[0] == "chunks":
                continue
            path = self.path / _safe_relpath(rel)
            if not os.path.lexists(path.with_name(path.name + _RECORD)):
                out[rel] = NOT_COVERED
                continue
            reason = self._verify(path)
            out[rel] = reason.replace("(corrupt)", "(edited or corrupt)")
        for rel in sorted(names):
            target = rel[: -len(_RECORD)]
            if rel.endswith(_RECORD) and rel.split("/")[0] != "chunks" and target \
                    and target not in names:
                out[target] = f"{Path(target).name} is missing (its checksum record is there)"
        return out

def _describe_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(set(old) | set(new))
    changed = [k for k in keys if old.get(k) != new.get(k)]
    shown = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:4])
    return shown or "hash differs"


def discard_new_run(path: str | os.PathLike[str], existed: bool, *, keep_folder: bool = False
                    ) -> None:
    """Remove what this command wrote into a run folder it created (the manifest, the files
    saved with :meth:`RunDir.save_file` and their checksum records, an empty chunks/ folder) when
    no chunk was finished: the first chunk failed (e.g. the training diverged), and the corrected
    command must be able to use the same folder instead of being refused as a different
    configuration. A folder that held a run before (``existed``), or any finished chunk, is left
    alone; the folder itself is kept when it existed (empty) before the command
    (``keep_folder``). Only process 0 of a multi-process JAX program removes anything
    (:func:`jaxaudit.runs.files.jax_process`)."""
    path = Path(path)
    chunks = path / "chunks"
    if existed or jax_process()[0] != 0 or (chunks.is_dir() and any(chunks.glob("*.npz"))):
        return
    try:
        saved = [p for record in path.glob("*.sha256")
                 for p in (record, record.with_name(record.name[:-len(".sha256")]))]
        for file in (path / MANIFEST, *saved):
            file.unlink(missing_ok=True)
        if chunks.is_dir() and not any(chunks.iterdir()):
            chunks.rmdir()
        if not keep_folder and not any(path.iterdir()):
            path.rmdir()
    except OSError:
        pass
