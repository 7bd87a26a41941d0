"""Checks of Rényi orders α."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxaudit._validation.core import check_at_least, check_finite, is_traced


def check_orders(name: str, orders: Any) -> np.ndarray:
    """Rényi orders: a non-empty 1-D array (a scalar becomes length 1) of finite α > 1."""
    if is_traced(orders):
        return orders
    arr = np.atleast_1d(check_finite(name, orders))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    if (arr <= 1).any():
        raise ValueError(f"{name} must all be > 1, got {float(arr[arr <= 1][0])!r}")
    return arr


def check_order_limits(name: str, value: Any) -> np.ndarray:
    """Rényi order(s) α ∈ [1, ∞] for a closed form that has the limits (α = 1: KL, α = ∞: the
    max-divergence): NaN and α < 1 refused, +inf allowed; any shape. Skipped when traced."""
    return check_at_least(name, value, 1, note=" (1 and inf are the limits)")
