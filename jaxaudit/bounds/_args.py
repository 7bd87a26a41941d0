"""Boundary checks for ``jaxaudit.bounds`` that stay out of the way of ``jax.jit``.

The public functions validate their arguments with the shared helpers of
``jaxaudit._validation`` when the arguments are concrete values; when they are traced (the caller
wrapped the function in ``jax.jit`` or ``jax.vmap``) the check is skipped, because a traced value
has no value to check. Validation therefore happens once, at the outermost concrete call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
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


def upper_bound(fn, *args):
    """Evaluate the jnp function ``fn(*args)`` of an *upper bound* without float32 under-rounding.

    Traced arguments (inside jit/vmap) are cast to their promoted dtype and passed straight to
    ``fn``. Concrete arguments are evaluated in float64 (x64 scoped to this call) from their
    float64 values, so that, e.g., a prior 3e−39 given as a Python float is not flushed to 0 by a
    float32 cast before ε = 100 lifts β to ≈ 1; the float64 result is then cast to the promoted
    dtype of the inputs (float32 unless x64 is on), rounding *up* where the cast rounded down,
    so the returned value is never below the float64 bound.
    """
    dtype = jnp.result_type(*[jnp.asarray(a) for a in args], float)
    if is_traced(*args):
        return fn(*[jnp.asarray(a, dtype=dtype) for a in args])
    with jax.enable_x64(True):
        out = fn(*[jnp.asarray(np.asarray(a, dtype=np.float64)) for a in args])
        if dtype == jnp.float64:
            return out
        exact = np.asarray(out)
        cast = jnp.asarray(exact.astype(dtype))  # round to nearest (float32, bfloat16, ...)
        below = exact > np.asarray(cast, dtype=np.float64)
        return jnp.where(below, jnp.nextafter(cast, jnp.asarray(np.inf, dtype=dtype)), cast)


def vector(name: str, value) -> np.ndarray:
    """A concrete 1-D float64 array (a scalar becomes length 1); ValueError on other ranks."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric 1-D array, got {value!r}") from err
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    return arr


def scalar(name: str, value) -> float:
    """A concrete scalar as a Python float; ValueError naming ``name`` for arrays or non-numbers."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number, got {value!r}") from err
    if arr.ndim != 0 and arr.size != 1:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return float(arr.reshape(()))


def integer(name: str, value, minimum: int = 0) -> int:
    """A concrete integer ≥ ``minimum`` (NaN, inf and fractions refused, naming ``name``)."""
    try:
        as_float = float(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}") from err
    if not np.isfinite(as_float) or as_float != int(as_float) or as_float < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(as_float)
