"""Helpers shared by the statistics modules: float promotion and a static-length bisection."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

#: Bisection steps of the traceable cores: the bracket [0, 1] halves 128 times, below float64
#: resolution everywhere in [0, 1] (also near 0, where 64 steps leave 5e-20 absolute).
BISECTION_STEPS = 128


def float_arrays(*values: ArrayLike) -> tuple[jax.Array, ...]:
    """``values`` as jnp arrays of their promoted float dtype (float32 unless x64 is on or a
    value is already float64); lists accepted."""
    arrays = [jnp.asarray(v) for v in values]
    dtype = jnp.result_type(*arrays, float)
    return tuple(jnp.asarray(a, dtype) for a in arrays)


def bisect(fn_at_least: Callable[[jax.Array], jax.Array], lo: jax.Array, hi: jax.Array,
           steps: int = BISECTION_STEPS) -> tuple[jax.Array, jax.Array]:
    """Bisection on [lo, hi] for a predicate that is False at lo and True at hi (monotone);
    returns the final (lo, hi) with fn(lo) False and fn(hi) True (elementwise, static steps,
    so it jits and vmaps)."""

    def step(_: int, bracket: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        lo, hi = bracket
        mid = lo + 0.5 * (hi - lo)
        above = fn_at_least(mid)
        return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

    return jax.lax.fori_loop(0, steps, step, (lo, hi))
