"""Boundary checks shared by the MIA functions (host side)."""

from __future__ import annotations

import numpy as np


def check_runs(scores, masks, *, scores_name="scores", masks_name="masks"):
    """(R, N) float scores without NaN and (R, N) boolean masks of the same shape."""
    s_shape, m_shape = np.shape(scores), np.shape(masks)
    if len(s_shape) != 2:
        raise ValueError(f"{scores_name} must have shape (R, N), got {s_shape}")
    if m_shape != s_shape:
        raise ValueError(f"{masks_name} must have the shape of {scores_name} {s_shape}, got {m_shape}")
    m = np.asarray(masks)
    if m.dtype != bool and not np.isin(m, (0, 1)).all():
        raise ValueError(f"{masks_name} must be boolean (0/1)")
    if np.isnan(np.asarray(scores, dtype=np.float64)).any():
        raise ValueError(f"{scores_name} must not contain NaN")
