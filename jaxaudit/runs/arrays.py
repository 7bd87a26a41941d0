"""Reading ``.npy`` and ``.npz`` files from folders the user hands us, without trusting them.

``numpy.load`` trusts the file: a 200-byte ``.npy`` whose header claims a (10⁹, 10⁹) shape makes
it allocate the claimed size (``MemoryError`` or the machine swapping), and an ``.npz`` is a zip
archive whose members may inflate a thousandfold (a "zip bomb": 8 MB on disk, 8 GB in memory).
Every ``.npy``/``.npz`` the library reads from a user's folder goes through :func:`load_npy`,
:func:`load_npz` or :func:`load_arrays`, which check before anything is allocated:

* the header is a valid ``.npy`` header (format 1.0, 2.0 or 3.0), its dtype holds no Python
  objects (nothing is ever unpickled: ``allow_pickle=False`` always), and the bytes its shape
  needs (``prod(shape) × itemsize``) are present in the file (or in the zip member);
* for an ``.npz``, every member is a ``.npy`` and the uncompressed sizes declared by the
  archive add up to at most ``max_bytes`` (default: ``max(256 MiB, 200 × the archive's size)``,
  i.e. a compression ratio no real array of scores, masks or parameters reaches — ``np.savez``
  stores without compression, ratio 1). Python's zip reader never inflates a member past its
  declared size (a member that lies fails its CRC), so the declared sizes bound the memory used.

* the array (or the archive's arrays, in all) fits in the memory available now
  (:func:`jaxaudit._validation.paths.available_memory`), and at most ``max_bytes`` when the
  caller sets a limit: an 8 GiB ``.npy`` on a machine with less memory free is refused naming
  the file, not met by numpy's ``MemoryError`` after a long read.

Violations are ``ValueError`` naming the file. :func:`describe_npy` and :func:`describe_npz` give
shapes and dtypes from the headers alone (nothing is loaded), so a caller can check a size
before reading.
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeAlias, TypeVar, cast

import numpy as np
import numpy.lib.format as npformat

from jaxaudit._validation.paths import check_memory

__all__ = ["load_npy", "load_npz", "load_arrays", "describe_npy", "describe_npz",
           "DEFAULT_MAX_RATIO", "DEFAULT_MIN_LIMIT"]

#: Declared-size limit of an ``.npz`` as a multiple of its size on disk (see the module docstring).
DEFAULT_MAX_RATIO = 200
#: The declared-size limit is never below this (small archives of compressible masks are fine).
DEFAULT_MIN_LIMIT = 256 << 20
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP = b"PK\x05\x06"

#: Where arrays are read from: a path, the file's content as bytes, or a binary file open for
#: reading (read from its start; closed after reading).
Source: TypeAlias = str | os.PathLike[str] | bytes | bytearray | memoryview | io.BufferedIOBase
_T = TypeVar("_T")


def _label(source: Source, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(source, bytes | bytearray | memoryview):
        return "the array data"
    if isinstance(source, io.BufferedIOBase):
        return str(getattr(source, "name", "the array file"))
    return str(source)


def _read_header(f: IO[bytes], available: int, label: str
                 ) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype from the ``.npy`` header at ``f``'s position, checked
    against the ``available`` bytes from that position on."""
    start = f.tell()
    try:
        version = npformat.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = npformat.read_array_header_2_0(f)
        else:  # 3.0 (utf-8 field names): not exposed publicly by numpy
            from numpy.lib import _format_impl

            # private in numpy (absent from its stubs), the only reader of format 3.0 headers
            shape, fortran, dtype = _format_impl._read_array_header(  # type: ignore[attr-defined]
                f, version)
    except (ValueError, EOFError, OSError, SyntaxError, TypeError, AttributeError,
            ImportError, zlib.error, zipfile.BadZipFile) as err:
        raise ValueError(f"{label} is not a valid .npy array ({err})") from None
    if dtype.hasobject:
        raise ValueError(f"{label} holds Python objects (dtype {dtype}); it would need "
                         "unpickling, which is never done (allow_pickle=False)")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise ValueError(f"{label}: invalid shape {shape} in its .npy header")
    needed = math.prod(shape) * dtype.itemsize
    data = available - (f.tell() - start)
    if needed > data:
        raise ValueError(
            f"{label}: its .npy header claims shape {shape} of {dtype} ({needed:,} bytes) but "
            f"only {max(data, 0):,} bytes of data follow; refused (truncated or forged file, "
            "nothing was allocated)")
    return shape, fortran, dtype


def _check_allocation(label: str, shape: tuple[int, ...], dtype: np.dtype,
                      max_bytes: int | None) -> None:
    """The bytes of an array of ``shape`` and ``dtype`` against ``max_bytes`` and the memory
    available now; a ValueError naming ``label`` before anything is allocated."""
    needed = math.prod(shape) * dtype.itemsize
    if max_bytes is not None and needed > max_bytes:
        raise ValueError(f"{label}: its .npy header claims shape {shape} of {dtype} "
                         f"({needed:,} bytes), more than the {int(max_bytes):,} bytes allowed; "
                         "not read")
    check_memory(label, needed, f"(shape {shape} of {dtype}, {needed:,} bytes)")


def _read_checked(f: IO[bytes], available: int, label: str, max_bytes: int | None = None
                  ) -> np.ndarray:
    start = f.tell()
    shape, _, dtype = _read_header(f, available, label)
    _check_allocation(label, shape, dtype, max_bytes)
    f.seek(start)
    try:
        return npformat.read_array(f, allow_pickle=False)
    except (ValueError, EOFError, OSError, zlib.error, zipfile.BadZipFile) as err:
        raise ValueError(f"{label} could not be read ({err})") from None


def _open(source: Source) -> tuple[IO[bytes], int]:
    """(file object, size in bytes) for a path or bytes; the caller closes the file."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        return io.BytesIO(data), len(data)
    if isinstance(source, io.BufferedIOBase):  # an open binary file
        f = cast(IO[bytes], source)
        size = f.seek(0, io.SEEK_END)
        f.seek(0)
        return f, size
    path = Path(source)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not an array file")
    f = open(path, "rb")  # noqa: SIM115 (closed by the caller)
    return f, os.fstat(f.fileno()).st_size


def _npy(source: Source, name: str | None, read: Callable[[IO[bytes], int, str], _T]) -> _T:
    """``read(file, size, label)`` on a ``.npy`` source (an ``.npz`` is refused)."""
    label = _label(source, name)
    f, size = _open(source)
    with f:
        head = f.read(len(_NPY_MAGIC))
        f.seek(0)
        if head.startswith(_ZIP_MAGIC[:2]):
            raise ValueError(f"{label} is an .npz archive (several arrays), not one .npy array")
        return read(f, size, label)


def load_npy(source: Source, *, name: str | None = None, max_bytes: int | None = None,
             ) -> np.ndarray:
    """One array from a ``.npy`` file (a path, or its bytes), checked before it is allocated.

    Args:
      source: path of the file, or its content as bytes.
      name: how errors name the file (default: its path).
      max_bytes: most bytes the array may hold (default: no limit but the memory available).

    Returns:
      The array.

    Raises:
      FileNotFoundError: no such file.
      ValueError: not a ``.npy`` file (an ``.npz`` archive is refused: use :func:`load_npz`),
        a dtype holding Python objects, a header whose shape needs more bytes than follow, or
        an array larger than ``max_bytes`` or than the memory available (nothing is read).
    """
    return _npy(source, name, lambda f, size, label: _read_checked(f, size, label, max_bytes))


def describe_npy(source: Source, *, name: str | None = None) -> tuple[tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` of a ``.npy`` file from its header alone, with the checks of
    :func:`load_npy` on the header (nothing is loaded): a caller checks the size it allows
    before reading."""
    def header(f: IO[bytes], size: int, label: str) -> tuple[tuple[int, ...], np.dtype]:
        shape, _, dtype = _read_header(f, size, label)
        return shape, dtype

    return _npy(source, name, header)


def _members(zf: zipfile.ZipFile, archive_size: int, max_bytes: int | None, label: str,
             loading: bool) -> list[zipfile.ZipInfo]:
    infos = zf.infolist()
    total = sum(i.file_size for i in infos)
    limit = (max(DEFAULT_MIN_LIMIT, DEFAULT_MAX_RATIO * archive_size)
             if max_bytes is None else int(max_bytes))
    if total > limit:
        raise ValueError(
            f"{label}: its members declare {total:,} bytes uncompressed, more than the limit of "
            f"{limit:,} ({archive_size:,} bytes on disk); refused as a possible zip bomb "
            "(nothing was decompressed; pass max_bytes to allow a larger archive)")
    if loading:
        check_memory(label, total, f"(members declaring {total:,} bytes uncompressed)")
    for info in infos:
        if info.is_dir() or not info.filename.endswith(".npy"):
            raise ValueError(f"{label}: member {info.filename!r} is not a .npy array")
        if info.flag_bits & 0x1:
            raise ValueError(f"{label}: member {info.filename!r} is encrypted")
    return infos


def _zip(f: IO[bytes], label: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(f)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as err:
        raise ValueError(f"{label} is not a valid .npz archive ({err})") from None


def _each_member(source: Source, name: str | None, max_bytes: int | None,
                 read: Callable[[IO[bytes], int, str], _T], loading: bool = True
                 ) -> dict[str, _T]:
    """``{array name: read(member, declared size, label)}`` over the checked members of an
    ``.npz`` (:func:`_members`); a member that cannot be decompressed is a ValueError naming it."""
    label = _label(source, name)
    f, size = _open(source)
    with f, _zip(f, label) as zf:
        out: dict[str, _T] = {}
        for info in _members(zf, size, max_bytes, label, loading):
            what = f"{label} (member {info.filename})"
            try:
                with zf.open(info) as member:
                    out[info.filename[: -len(".npy")]] = read(member, info.file_size, what)
            except (NotImplementedError, RuntimeError, zipfile.BadZipFile, zlib.error,
                    EOFError) as err:
                raise ValueError(f"{what} could not be read ({err})") from None
        return out


def load_npz(source: Source, *, name: str | None = None, max_bytes: int | None = None,
             ) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive (a path, or its bytes), checked before decompression.

    Args:
      source: path of the archive, or its content as bytes.
      name: how errors name the file (default: its path).
      max_bytes: most bytes the members may declare uncompressed, in all (default:
        ``max(256 MiB, 200 × the archive's size)``).

    Returns:
      ``{array name: array}`` in the archive's order.

    Raises:
      FileNotFoundError: no such file.
      ValueError: not a zip archive, a member that is not a ``.npy`` (or is encrypted, or uses an
        unknown compression), declared sizes over ``max_bytes``, a member whose header claims more
        bytes than the member holds, a dtype holding Python objects, or a failed CRC.
    """
    return _each_member(source, name, max_bytes, _read_checked)


def describe_npz(source: Source, *, name: str | None = None, max_bytes: int | None = None,
                 ) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{array name: (shape, dtype)}`` of an ``.npz`` from the member headers alone, with the
    checks of :func:`load_npz` on the declared sizes and headers (no array is loaded)."""
    def header(member: IO[bytes], size: int, what: str) -> tuple[tuple[int, ...], np.dtype]:
        shape, _, dtype = _read_header(member, size, what)
        return shape, dtype

    return _each_member(source, name, max_bytes, header, loading=False)


def load_arrays(source: Source, *, name: str | None = None, max_bytes: int | None = None,
                ) -> np.ndarray | dict[str, np.ndarray]:
    """An ``.npy`` (one array) or an ``.npz`` (``{name: array}``), told apart by their first
    bytes, with the checks of :func:`load_npy` / :func:`load_npz`."""
    label = _label(source, name)
    if isinstance(source, bytes | bytearray | memoryview):
        head = bytes(source[:4])
    elif isinstance(source, io.BufferedIOBase):
        source.seek(0)
        head = source.read(4)
        source.seek(0)
    else:
        with open(source, "rb") as f:
            head = f.read(4)
    if head in (_ZIP_MAGIC, _EMPTY_ZIP):
        return load_npz(source, name=label, max_bytes=max_bytes)
    return load_npy(source, name=label)
