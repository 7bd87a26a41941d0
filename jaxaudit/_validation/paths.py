"""Checks of file and folder arguments: outputs that can be written, inputs that exist."""

from __future__ import annotations

import os
from pathlib import Path


def _nonempty(name: str, path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path; a ValueError naming ``name`` for the empty string, which Path would
    silently read as the current folder."""
    if not os.fspath(path):
        raise ValueError(f"{name} must not be empty")
    return Path(path)


def _writable_ancestor(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (where a missing folder would be created)."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(name: str, path: str | os.PathLike[str]) -> Path:
    """A file that can be written: not an existing folder, its folder creatable and writable.
    Checked before any work, so a bad path fails at once and not after the computation."""
    path = _nonempty(name, path)
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
    path = _nonempty(name, path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file, not a folder")
    target = path if path.exists() else _writable_ancestor(path)
    if not target.is_dir():
        raise ValueError(f"{name} {path}: {target} is not a folder")
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: {target} is not writable")
    return path


def available_memory() -> int | None:
    """Bytes of memory available now (``MemAvailable`` of /proc/meminfo, else physical memory),
    or None where neither can be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def check_memory(name: str, needed: float, what: str) -> None:
    """A ValueError naming ``name`` and ``what`` when ``needed`` bytes exceed
    :func:`available_memory` (checked before anything is allocated or read, instead of a
    ``MemoryError`` traceback after minutes); nothing when the memory cannot be read."""
    available = available_memory()
    if available is not None and needed > available:
        raise ValueError(f"{name} {what}: reading it needs about {needed / 2**30:.3g} GiB, more "
                         f"than the {available / 2**30:.3g} GiB of memory available; not read")


def check_read_size(name: str, path: str | os.PathLike[str], *,
                    bytes_per_byte: float = 1.0) -> Path:
    """A file that fits in memory when read whole: its size (``os.stat``, nothing is read)
    times ``bytes_per_byte`` (the memory reading one byte of it takes: 1 for a raw array, more
    for text or a converted copy) must not exceed :func:`available_memory`. A ValueError naming
    ``name`` otherwise, before any reading, instead of a MemoryError after minutes."""
    path = Path(path)
    size = path.stat().st_size
    check_memory(name, size * bytes_per_byte, f"{path} is {size / 2**30:.3g} GiB")
    return path


def check_input_path(name: str, path: str | os.PathLike[str], *, folder: bool = False,
                     bytes_per_byte: float = 1.0) -> Path:
    """An existing file (or folder with ``folder=True``); FileNotFoundError naming ``name``.
    A file is read whole by its callers: :func:`check_read_size` with ``bytes_per_byte``."""
    path = _nonempty(name, path)
    if not (path.is_dir() if folder else path.is_file()):
        what = "folder" if folder else "file"
        if folder and path.exists():  # there, but of the other kind
            raise NotADirectoryError(f"{name} {path} is a file, not a folder")
        if path.exists():
            raise IsADirectoryError(f"{name} {path} is a folder, not a file")
        raise FileNotFoundError(f"{name} {what} not found: {path}")
    return path if folder else check_read_size(name, path, bytes_per_byte=bytes_per_byte)
