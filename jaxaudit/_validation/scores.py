"""Checks of membership scores, masks and binary decisions (host side; shapes also when traced)."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from jaxaudit._validation.core import (
    ArgumentTypeError,
    _as_array,
    _describe,
    check_finite,
    is_traced,
)

_T = TypeVar("_T")


def check_scores_and_masks(scores: Any, masks: Any, *, scores_name: str = "scores",
                           masks_name: str = "masks") -> None:
    """(R, N) finite-or-inf float scores without NaN and (R, N) boolean masks of that shape.
    Shapes are checked under a transform too; values only when concrete."""
    s_shape, m_shape = np.shape(scores), np.shape(masks)
    if len(s_shape) != 2:
        raise ValueError(f"{scores_name} must have shape (R, N), got {s_shape}")
    if m_shape != s_shape:
        raise ValueError(f"{masks_name} must have the shape of {scores_name} {s_shape}, got {m_shape}")
    check_mask(masks_name, masks)
    if is_traced(scores, masks):
        return
    if np.isnan(_as_array(scores_name, scores)).any():
        raise ValueError(f"{scores_name} must not contain NaN")


def check_mask(name: str, masks: Any) -> None:
    """Membership masks: boolean, or numbers that are exactly 0 or 1. Concrete masks are checked
    by value; a traced mask cannot be, so under ``jax.jit``/``jax.vmap`` only boolean and integer
    dtypes pass (a float mask is a TypeError naming ``name``: convert it with ``masks > 0.5`` or
    ``masks.astype(bool)`` outside the transform)."""
    if is_traced(masks):
        kind = np.dtype(masks.dtype).kind
        if kind not in "biu":
            raise ArgumentTypeError(
                f"{name} must be boolean (or integer 0/1) under jax.jit/vmap, got dtype "
                f"{masks.dtype}: a traced float mask cannot be checked for 0/1 values")
        return
    m = _as_array(name, masks)
    if m.dtype != bool and not np.isin(m, (0, 1)).all():
        raise ValueError(f"{name} must be boolean (0/1)")


def check_binary(name: str, value: _T) -> _T:
    """Boolean values, or numbers that are all 0 or 1 (labels, hard decisions); anything else
    (a score, 0.5, 2, NaN) is refused. Returned unchanged; skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(f"{name} must be boolean (0/1), got {_describe(arr, bad)}")
    return value


def check_score_vector(name: str, value: Any, minimum: int = 4) -> np.ndarray:
    """A finite 1-D array of at least ``minimum`` scores (one per run), as float64 (a traced
    value: only its shape is checked)."""
    arr = check_finite(name, value)
    if arr.ndim != 1 or arr.size < minimum:
        raise ValueError(f"{name} must be a 1-D array of at least {minimum} scores, got shape "
                         f"{arr.shape}")
    return arr
