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

__all__ = ["Table", "FAIR_SHA256", "load_fair"]

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
