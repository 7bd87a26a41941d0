"""The one key rule of every sweep: unit u of a sweep with root seed s uses the PRNG key
``fold_in(key(s), u)``.

A sweep (shadow models, canary runs, …) is a list of independent work units: unit u is the u-th
model or run of the sweep. Its key depends on the root seed and on u only, never on how the
units are grouped into chunks, on the pipeline that runs them or on the machine that runs them,
so

* ``jaxaudit shadow`` then ``jaxaudit bmp --shadow`` and ``jaxaudit bmp`` training its own models
  with the same seed train the same models;
* a resumed, re-chunked or distributed sweep gives the serial sweep's result.

Besides the units, a pipeline may need a few keys for other purposes (a Monte Carlo estimate of
the inclusion probabilities, the posterior sampler). Those come from named *streams*, which take
the top of the fold-in range (``fold_in(key(s), 2**32 − 1 − i)`` for the i-th stream) so they never
meet a unit (units are below 2**31). Generated data (the CSBM graph) uses ``key(s)`` itself.

``KEY_RULE`` names this rule; pipelines store it in their run configuration, so a folder written
under an earlier rule is refused instead of being mixed with units drawn under this one.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxaudit._validation import check_integer

__all__ = ["KEY_RULE", "MAX_UNITS", "STREAMS", "stream_key", "unit_key", "unit_keys"]

#: Name of the key rule, stored in run configurations.
KEY_RULE = "unit-fold-in-v1"
#: Units are numbered 0 … MAX_UNITS − 1.
MAX_UNITS = 2**31
#: The auxiliary streams, in the order that gives their index.
STREAMS = ("priors", "audit", "init", "eval")


def _root(seed: int) -> jax.Array:
    return jax.random.key(check_integer("seed", seed, minimum=0))


def unit_key(seed: int, unit: int) -> jax.Array:
    """The key of unit ``unit`` of the sweep with root seed ``seed``: ``fold_in(key(seed), unit)``.

    Examples:
      >>> import jax
      >>> bool((jax.random.key_data(unit_key(3, 5))
      ...       == jax.random.key_data(jax.random.fold_in(jax.random.key(3), 5))).all())
      True
    """
    unit = check_integer("unit", unit, minimum=0)
    if unit >= MAX_UNITS:
        raise ValueError(f"unit must be < 2**31, got {unit}")
    return jax.random.fold_in(_root(seed), unit)


def unit_keys(seed: int, start: int, count: int) -> jax.Array:
    """The keys of units ``start … start + count − 1`` as one key array of shape (count,), e.g.
    the models of one chunk of a shadow-model sweep."""
    start = check_integer("start", start, minimum=0)
    count = check_integer("count", count, minimum=1)
    if start + count > MAX_UNITS:
        raise ValueError(f"units must be < 2**31, got start + count = {start + count}")
    units = np.arange(start, start + count, dtype=np.uint32)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(_root(seed), units)


def stream_key(seed: int, stream: str) -> jax.Array:
    """The key of the named auxiliary stream (one of :data:`STREAMS`) of the sweep ``seed``."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {list(STREAMS)}, got {stream!r}")
    return jax.random.fold_in(_root(seed), 2**32 - 1 - STREAMS.index(stream))
