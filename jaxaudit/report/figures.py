"""Figures of a run folder, written atomically."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from jaxaudit.runs.files import atomic_write_bytes
from jaxaudit.runs.rundir import MANIFEST, RunDir, read_manifest

__all__ = ["save_figure"]


def save_figure(fig: Any, path: str | os.PathLike, **savefig_kwargs: Any) -> Path:
    """Write a matplotlib figure as PNG atomically (rendered in memory, then
    :func:`jaxaudit.runs.files.atomic_write_bytes`), so that an interrupted run never leaves half
    an image and only process 0 of a multi-process JAX program writes it. Into a run folder (a
    folder holding a valid manifest) the figure goes with its run-bound checksum record, like
    every result file (:meth:`jaxaudit.runs.RunDir.write_bytes`)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig_kwargs)
    path = Path(path)
    if os.path.lexists(path.parent / MANIFEST):
        try:
            manifest = read_manifest(path.parent)
        except (OSError, ValueError):
            manifest = None
        if manifest is not None:
            return RunDir(path.parent, manifest).write_bytes(path.name, buffer.getvalue())
    atomic_write_bytes(path, buffer.getvalue())
    return path
