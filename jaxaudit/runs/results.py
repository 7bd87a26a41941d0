"""The results of a run folder, as loaded: :class:`RunResults` and :func:`load_results`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxaudit.runs.files import parse_json, read_regular, scan_run_folder
from jaxaudit.runs.rundir import (
    MANIFEST,
    NOT_COVERED,
    RESULT_SUFFIXES,
    RunDir,
    RunFolderWarning,
    read_manifest,
)

__all__ = ["MAX_TABLE_BYTES", "RunResults", "load_results"]

#: Largest JSON table :func:`load_results` reads (a larger one is refused naming it, unread).
MAX_TABLE_BYTES = 256 << 20


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
      unverified: the files (outside ``chunks/``) that no checksum record covers: not written
        by the run, so nothing says they hold what the run computed (each is warned about).
    """

    kind: str
    config: dict[str, Any]
    manifest: dict[str, Any]
    chunks: dict[str, dict[str, np.ndarray]]
    planned: list[str]
    missing: list[str]
    tables: dict[str, Any]
    files: list[str]
    unverified: tuple[str, ...] = ()

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


def load_results(path: str | Path) -> RunResults:
    """Load a run folder written through :class:`RunDir`.

    Symbolic links, FIFOs and devices inside the folder are neither followed nor read (each is
    skipped with a warning).

    Returns:
      :class:`RunResults` (``kind``, ``config``, ``manifest``, ``chunks``, ``planned``,
      ``missing``, ``tables``, ``files``); ``len(chunks)`` of ``len(planned)`` are done, and
      ``results.concat("masks")`` concatenates one array over the chunks.

    Raises:
      FileNotFoundError: no manifest in ``path``.
      ValueError: a folder written in an older layout; a corrupt, hand-edited or deeply nested
        manifest; a chunk whose checksum record does not match, names another chunk or another
        run; a checksum file whose chunk was deleted; a chunk whose arrays are unsafe to load
        (sizes that do not add up, a possible zip bomb, pickled objects); a result file (e.g.
        ``result.json``) that does not match its checksum record (edited by hand) or was
        deleted while its record is there; a planned chunk missing beside written results; a
        JSON table larger than :data:`MAX_TABLE_BYTES` (not read); a corrupt or deeply nested
        JSON table (corrupt results are never returned). A file no
        checksum covers is loaded with a :class:`~jaxaudit.runs.rundir.RunFolderWarning` and
        listed in ``unverified``.
    """
    path = Path(path)
    manifest = read_manifest(path)
    run = RunDir(path, manifest)
    chunks = {name: run.load_chunk(name) for name in run.chunk_names()}
    planned = list(manifest.get("planned_chunks", []))
    missing = [n for n in planned if n not in chunks]
    files, skipped = scan_run_folder(path)
    for rel, reason in skipped:
        warnings.warn(f"{path / rel} skipped: {reason}", stacklevel=2)
    status = run.output_status(files)
    bad = {rel: why for rel, why in status.items() if why and why != NOT_COVERED}
    if bad:
        rel, why = next(iter(bad.items()))
        more = f" (and {len(bad) - 1} more: {', '.join(list(bad)[1:4])})" if len(bad) > 1 else ""
        raise ValueError(f"run folder {path} is inconsistent: result file {rel} is not usable: "
                         f"{why}{more}. Its results cannot be trusted to be what the run "
                         "computed; repeat the run's command to write it again")
    written = [rel for rel, why in status.items() if not why and rel.endswith(RESULT_SUFFIXES)]
    if missing and written:
        raise ValueError(f"run folder {path} is inconsistent: planned chunks {missing[:5]} are "
                         f"missing although its results ({', '.join(written[:3])}) were written "
                         "once every chunk was finished (removed by hand?); repeat the run's "
                         "command to recompute them")
    unverified = tuple(rel for rel, why in status.items() if why == NOT_COVERED)
    for rel in unverified:
        warnings.warn(f"{path / rel} is {NOT_COVERED}: nothing says it holds what the run "
                      "computed", RunFolderWarning, stacklevel=2)
    tables = {}
    for rel in files:
        if rel.endswith(".json") and rel != MANIFEST:
            p = path / rel
            try:
                raw = read_regular(p, MAX_TABLE_BYTES)
            except OSError as err:
                raise ValueError(f"{p} cannot be read ({err.strerror or err})") from err
            tables[rel] = parse_json(raw, p)
    return RunResults(kind=manifest["kind"], config=manifest["config"], manifest=manifest,
                      chunks=chunks, planned=planned, missing=missing, tables=tables, files=files,
                      unverified=unverified)
