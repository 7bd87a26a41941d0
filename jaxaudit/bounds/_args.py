"""Boundary checks for ``jaxaudit.bounds`` that stay out of the way of ``jax.jit``.

The public functions validate their arguments with the shared helpers of
``jaxaudit._validation`` when the arguments are concrete values; when they are traced (the caller
wrapped the function in ``jax.jit`` or ``jax.vmap``) the check is skipped, because a traced value
has no value to check. Validation therefore happens once, at the outermost concrete call.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxaudit._validation import (
    check_finite,
    check_nonnegative,
    check_probability,
)


def is_traced(*values) -> bool:
    """True when any of ``values`` is a JAX tracer (inside jit/vmap/grad)."""
    return any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(values))


def probabilities(name: str, value) -> None:
    """ValueError unless every entry lies in [0, 1] (NaN refused); skipped when traced."""
    if not is_traced(value):
        check_probability(name, value)


def epsilon(name: str, value) -> None:
    """ValueError unless ε >= 0 (NaN refused, +inf allowed); skipped when traced."""
    if not is_traced(value):
        check_nonnegative(name, value)


def delta(name: str, value) -> None:
    """ValueError unless δ lies in [0, 1) (NaN refused); skipped when traced."""
    if not is_traced(value):
        check_probability(name, value, open_high=True)


def level(name: str, value) -> None:
    """ValueError unless a significance level lies in (0, 1); skipped when traced."""
    if not is_traced(value):
        check_probability(name, value, open_low=True, open_high=True)


def finite(name: str, value) -> None:
    """ValueError on NaN or ±inf; skipped when traced."""
    if not is_traced(value):
        check_finite(name, value)


def vector(name: str, value) -> np.ndarray:
    """A concrete 1-D float64 array (a scalar becomes length 1); ValueError on other ranks."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    return arr
