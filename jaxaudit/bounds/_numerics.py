"""Small jnp helpers shared by the bounds' traceable cores.

XLA on CPU runs with denormals flushed to zero: ``jnp.log(1e-310)`` is −inf there, although
1e−310 is a valid float64 prior (and β(ε, 1e−310) ≈ 1e−6 at ε = 700). :func:`safe_log` reads the
exponent and mantissa of a subnormal from its bits (integer operations are not flushed), so it
returns the exact logarithm of every positive float, subnormal or not.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeAlias

import jax
import jax.numpy as jnp
import numpy as np

#: Arguments that are never JAX tracers (numpy arrays, Python and numpy scalars, sequences of
#: floats). The public bounds return a Python int/float when all their array arguments are of
#: this kind; any ``jax.Array`` argument may be a tracer, and then they return a JAX array.
Concrete: TypeAlias = np.ndarray | np.number | float | Sequence[float]

_P = ParamSpec("_P")

_BITS = {jnp.dtype(jnp.float64): (jnp.int64, 1074), jnp.dtype(jnp.float32): (jnp.int32, 149)}


def safe_log(x: jax.Array) -> jax.Array:
    """log x for x ≥ 0 (−inf at 0) that keeps subnormal x (not flushed to 0 as in jnp.log).

    Its derivative is finite everywhere (0 at x = 0, where ``jnp.log`` would give a NaN through
    ``0·inf``); negative x, which no caller passes, also gives −inf.

    A positive subnormal is ``mantissa · 2^−1074`` (float64; ``2^−149`` for float32), with the
    integer mantissa equal to its bit pattern: log x = log(mantissa) − 1074·log 2, exact to
    rounding. Other dtypes (bfloat16, float16) use ``jnp.log`` unchanged.
    """
    x = jnp.asarray(x)
    if x.dtype not in _BITS:
        return jnp.log(x)
    int_dtype, scale = _BITS[x.dtype]
    bits = jax.lax.bitcast_convert_type(x, int_dtype)
    tiny = jnp.finfo(x.dtype).smallest_normal
    normal = bits >= jax.lax.bitcast_convert_type(tiny, int_dtype)
    subnormal = (bits > 0) & ~normal
    # the log of a stand-in 1 where x is not normal, so that no branch has a NaN derivative
    from_float = jnp.log(jnp.where(normal, x, 1.0))
    from_bits = jnp.log(jnp.where(subnormal, bits, 1).astype(x.dtype)) - scale * math.log(2.0)
    return jnp.where(normal, from_float, jnp.where(subnormal, from_bits, -jnp.inf))


def logaddexp(a: jax.Array, b: jax.Array) -> jax.Array:
    """``jnp.logaddexp`` whose derivative is 0, not NaN, where both arguments are −inf (the
    impossible counts of a log-space recursion)."""
    both = (a == -jnp.inf) & (b == -jnp.inf)
    out = jnp.logaddexp(jnp.where(both, 0.0, a), jnp.where(both, 0.0, b))
    return jnp.where(both, -jnp.inf, out)


def safe_logit(p: jax.Array) -> jax.Array:
    """logit p = log p − log(1 − p) with :func:`safe_log` for p (±inf at p = 0, 1)."""
    return safe_log(p) - jnp.log1p(-p)


def checked_upper_bound(*, broadcast: bool = False, positive: tuple[str, ...] = ()
                        ) -> Callable[[Callable[_P, jax.Array]], Callable[_P, jax.Array]]:
    """Decorator of a closed form f(p, x, ...) that the bounds report as an upper bound (β(ε, p),
    its gain, KGK+, Balle's ReRo, Hayes et al.'s Gaussian bound): the decorated function checks,
    by the names of f's parameters, that p is a probability and every other argument is ≥ 0
    (> 0 for those named in ``positive``; with ``broadcast``, that all broadcast together), then
    evaluates f (jitted) by :func:`jaxaudit._rounding.upper_bound`: concrete inputs in float64,
    rounded up into their dtype. Traced inputs pass unchecked, so a traced call just computes."""
    from jaxaudit._rounding import upper_bound
    from jaxaudit._validation import (
        check_broadcast,
        check_nonnegative,
        check_positive,
        check_probability,
    )

    def decorate(fn: Callable[_P, jax.Array]) -> Callable[_P, jax.Array]:
        signature = inspect.signature(fn)
        p_name, *x_names = signature.parameters
        core = jax.jit(fn)

        @functools.wraps(fn)
        def bound(*args: _P.args, **kwargs: _P.kwargs) -> jax.Array:
            p, *xs = signature.bind(*args, **kwargs).args
            check_probability(p_name, p)
            for name, x in zip(x_names, xs):
                (check_positive if name in positive else check_nonnegative)(name, x)
            if broadcast:
                check_broadcast(**dict(zip([p_name, *x_names], [p, *xs])))
            return upper_bound(core, p, *xs)

        return bound

    return decorate
