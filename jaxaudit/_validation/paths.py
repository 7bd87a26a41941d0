"""Checks of file and folder arguments: outputs that can be written, inputs that exist."""

from __future__ import annotations

import os
from pathlib import Path


def _writable_ancestor(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (where a missing folder would be created)."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(name: str, path: str | os.PathLike[str]) -> Path:
    """A file that can be written: not an existing folder, its folder creatable and writable.
    Checked before any work, so a bad path fails at once and not after the computation."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} {path} is a folder; give a file name")
    folder = path.parent if path.parent.exists() else _writable_ancestor(path)
    if not folder.is_dir():
        raise ValueError(f"{name} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: folder {folder} is not writable")
    return path


def check_output_dir(name: str, path: str | os.PathLike[str]) -> Path:
    """A folder that can be written: not an existing file, creatable and writable. Checked
    before any work."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file, not a folder")
    target = path if path.exists() else _writable_ancestor(path)
    if not target.is_dir():
        raise ValueError(f"{name} {path}: {target} is not a folder")
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: {target} is not writable")
    return path


def check_input_path(name: str, path: str | os.PathLike[str], *, folder: bool = False) -> Path:
    """An existing file (or folder with ``folder=True``); FileNotFoundError naming ``name``."""
    path = Path(path)
    if not (path.is_dir() if folder else path.is_file()):
        what = "folder" if folder else "file"
        raise FileNotFoundError(f"{name} {what} not found: {path}")
    return path
