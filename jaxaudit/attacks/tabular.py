"""A real categorical table shipped offline by a registry package: Fair's affairs survey.

``statsmodels`` ships ``statsmodels/datasets/fair/fair.csv`` (6,366 respondents of the 1974
*Redbook* magazine survey; Fair, "A Theory of Extramarital Affairs", J. Political Economy 86(1),
1978; redistributed with the author's permission). Every column but ``affairs`` is already
categorical (survey answers or interval midpoints); ``affairs`` (time spent, continuous) is
turned into the binary ``had_affair`` = affairs > 0. The file is read directly (no pandas) and
verified against :data:`FAIR_SHA256`.

Columns and numbers of levels: rate_marriage 5, age 6, yrs_married 7, children 6, religious 4,
educ 6, occupation 6, occupation_husb 6, had_affair 2.
"""

from __future__ import annotations

import csv
import hashlib
import io
from typing import NamedTuple

import numpy as np

from jaxaudit._validation import ArgumentTypeError

__all__ = ["Table", "FAIR_SHA256", "check_table", "load_fair"]

#: SHA-256 of fair.csv as shipped by statsmodels 0.15.0 (the loader refuses any other file).
FAIR_SHA256 = "fd5f3f094a34fc35ca346a14c359e046ed27843038d6921efcd50a7ab21f6af0"


class Table(NamedTuple):
    """A categorical table.

    Attributes:
      columns: tuple of column names.
      codes: (N, C) int32, codes[r, c] ∈ 0..len(levels[c]) − 1.
      levels: tuple of per-column tuples of the original values, in code order.
    """

    columns: tuple
    codes: np.ndarray
    levels: tuple


def check_table(table: object, name: str = "table") -> None:
    """A :class:`Table` whose codes index its levels: ``codes`` an (N, C) integer array, one
    column per name and one tuple of levels per column, every code of column c in
    0..len(levels[c]) − 1 (a larger code would fall into the next marginal's cells).

    Raises:
      TypeError: ``table`` is not a :class:`Table` (a dict, a DataFrame), or its codes are not
        integers (float codes would be truncated).
      ValueError: shapes that disagree, or a code outside its column's levels (naming the
        column, the code and its row).
    """
    if not isinstance(table, Table):
        raise ArgumentTypeError(
            f"{name} must be a jaxaudit.attacks.Table(columns, codes, levels), got "
            f"{type(table).__name__}; build one from integer codes per column, as load_fair does")
    columns, levels = table.columns, table.levels
    if not isinstance(columns, tuple | list) or not all(isinstance(c, str) for c in columns):
        raise ArgumentTypeError(f"{name}.columns must be a tuple of column names")
    codes = np.asarray(table.codes)
    if codes.dtype == bool or not np.issubdtype(codes.dtype, np.integer):
        raise ArgumentTypeError(f"{name}.codes must be an integer array, got dtype {codes.dtype} "
                                "(float codes would be truncated: map each value to its level's "
                                "index)")
    if codes.ndim != 2 or codes.shape[1] != len(columns) or codes.shape[0] < 1:
        raise ValueError(f"{name}.codes must have shape (N, {len(columns)}) with N >= 1 (one "
                         f"column per name), got {codes.shape}")
    if not isinstance(levels, tuple | list) or len(levels) != len(columns):
        raise ValueError(f"{name}.levels must hold one tuple of levels per column "
                         f"({len(columns)}), got {type(levels).__name__} of length "
                         f"{len(levels) if hasattr(levels, '__len__') else '?'}")
    for c, column in enumerate(columns):
        size = len(levels[c])
        bad = np.flatnonzero((codes[:, c] < 0) | (codes[:, c] >= size))
        if bad.size:
            row = int(bad[0])
            raise ValueError(f"{name}: column {column!r} has {size} levels, so its codes must be "
                             f"in 0..{size - 1}, got {int(codes[row, c])} in row {row} "
                             f"({bad.size} bad row(s))")


def load_fair() -> Table:
    """Load Fair's affairs table from the installed statsmodels, checksum-verified.

    Raises:
      ImportError: statsmodels is not installed.
      ValueError: the file differs from the pinned one.

    Examples:
      >>> t = load_fair()
      >>> t.codes.shape, t.columns[-1]
      ((6366, 9), 'had_affair')
    """
    from importlib.resources import files

    data = (files("statsmodels.datasets") / "fair" / "fair.csv").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != FAIR_SHA256:
        raise ValueError(f"statsmodels' fair.csv has SHA-256 {digest}, expected {FAIR_SHA256}")
    rows = list(csv.reader(io.StringIO(data.decode())))
    header, values = rows[0], np.asarray(rows[1:], dtype=np.float64)
    values[:, header.index("affairs")] = values[:, header.index("affairs")] > 0
    header[header.index("affairs")] = "had_affair"
    codes, levels = [], []
    for j in range(values.shape[1]):
        lv, code = np.unique(values[:, j], return_inverse=True)
        levels.append(tuple(float(v) for v in lv))
        codes.append(code)
    return Table(tuple(header), np.stack(codes, axis=1).astype(np.int32), tuple(levels))
