"""Argument checks shared by the public functions (run on the host, outside jit).

Every check raises ``ValueError`` naming the argument and the offending value, so that bad input
never turns into a silent wrong number.
"""

from __future__ import annotations

import numpy as np


def _as_array(name: str, value) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numeric, got {value!r}") from err


def _describe(arr: np.ndarray, bad: np.ndarray) -> str:
    first = arr[bad].ravel()[0] if arr.ndim else arr
    return f"{first!r}" if arr.size == 1 else f"{first!r} (and {int(bad.sum()) - 1} more)"


def check_finite(name: str, value) -> np.ndarray:
    """Refuse NaN/inf; return the value as a float64 numpy array."""
    arr = _as_array(name, value)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} must be finite, got {_describe(arr, bad)}")
    return arr


def check_probability(name: str, value, *, open_low: bool = False, open_high: bool = False):
    """Refuse values outside [0, 1] (or the open ends asked for) and NaN."""
    arr = _as_array(name, value)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    low_bad = arr <= 0 if open_low else arr < 0
    high_bad = arr >= 1 if open_high else arr > 1
    bad = low_bad | high_bad
    if bad.any():
        interval = ("(" if open_low else "[") + "0, 1" + (")" if open_high else "]")
        raise ValueError(f"{name} must lie in {interval}, got {_describe(arr, bad)}")
    return arr


def check_nonnegative(name: str, value) -> np.ndarray:
    """Refuse negative values, NaN and -inf (+inf is allowed: a vacuous parameter)."""
    arr = _as_array(name, value)
    bad = np.isnan(arr) | (arr < 0)
    if bad.any():
        raise ValueError(f"{name} must be >= 0, got {_describe(arr, bad)}")
    return arr


def check_positive(name: str, value) -> np.ndarray:
    """Refuse values <= 0 and NaN."""
    arr = _as_array(name, value)
    bad = np.isnan(arr) | (arr <= 0)
    if bad.any():
        raise ValueError(f"{name} must be > 0, got {_describe(arr, bad)}")
    return arr


def check_shape(name: str, value, shape: tuple) -> None:
    """Refuse an array whose shape differs from ``shape`` (None entries match any size)."""
    actual = np.shape(value)
    if len(actual) != len(shape) or any(s is not None and s != a for s, a in zip(shape, actual)):
        raise ValueError(f"{name} must have shape {shape}, got {actual}")


def check_choice(name: str, value, choices) -> None:
    """Refuse a value not among ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}, got {value!r}")
