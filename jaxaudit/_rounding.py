"""Upper bounds that stay upper bounds after the cast to the caller's dtype.

A bound computed in float64 and cast to float32 is rounded to *nearest*, which is below the true
value about half the time (``max_gain(1.0)`` gave 0.2449186593 < tanh(1/4) = 0.2449186624).
:func:`upper_bound` evaluates the formula in float64 and rounds the cast *up*; :func:`round_up`
does the same for a value already computed in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from jaxaudit._validation import is_traced


def round_up(exact: ArrayLike, dtype: DTypeLike) -> jax.Array:
    """``exact`` (a float64 value) cast to ``dtype``, rounded up: never below ``exact``."""
    exact = np.asarray(exact, dtype=np.float64)
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float64:
        with jax.enable_x64(True):
            return jnp.asarray(exact)
    cast = jnp.asarray(exact.astype(dtype))  # round to nearest (float32, bfloat16, ...)
    below = exact > np.asarray(cast, dtype=np.float64)
    return jnp.where(below, jnp.nextafter(cast, jnp.asarray(np.inf, dtype=dtype)), cast)


def _bound(fn: Callable[..., jax.Array], args: tuple, direction: float) -> jax.Array:
    """``fn(*args)`` in float64 from concrete arguments, rounded outward into their promoted dtype
    (up for ``direction`` +1, down for −1); traced arguments in their dtype."""
    dtype = jnp.result_type(*[jnp.asarray(a) for a in args], float)
    if is_traced(*args):
        return fn(*[jnp.asarray(a, dtype=dtype) for a in args])
    with jax.enable_x64(True):
        out = fn(*[jnp.asarray(np.asarray(a, dtype=np.float64)) for a in args])
        if dtype == jnp.float64:
            return out
        exact = np.asarray(out)
    # no multiplication by ±1: XLA:CPU flushes float32 subnormals in arithmetic
    return round_up(exact, dtype) if direction > 0 else -round_up(-exact, dtype)


def upper_bound(fn: Callable[..., jax.Array], *args: Any) -> jax.Array:
    """Evaluate the jnp function ``fn(*args)`` of an *upper bound* without float32 under-rounding.

    Traced arguments (inside jit/vmap) are cast to their promoted dtype and passed straight to
    ``fn``. Concrete arguments are evaluated in float64 (x64 scoped to this call) from their
    float64 values, so that, e.g., a prior 3e−39 given as a Python float is not flushed to 0 by a
    float32 cast before ε = 100 lifts β to ≈ 1; the float64 result is then cast to the promoted
    dtype of the inputs (float32 unless x64 is on), rounding *up* where the cast rounded down,
    so the returned value is never below the float64 bound.
    """
    return _bound(fn, args, 1.0)


def lower_bound(fn: Callable[..., jax.Array], *args: Any) -> jax.Array:
    """:func:`upper_bound` for a *lower* bound: concrete arguments in float64, the result rounded
    down into their promoted dtype (−round_up(−x)); traced ones in their dtype."""
    return _bound(fn, args, -1.0)
