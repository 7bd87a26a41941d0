"""The one key rule of every sweep: unit u of a sweep with root key k uses the PRNG key
``fold_in(k, u)``.

A sweep (shadow models, canary runs, …) is a list of independent work units: unit u is the u-th
model or run of the sweep. Its key depends on the root key and on u only, never on how the
units are grouped into chunks, on the pipeline that runs them or on the machine that runs them,
so

* ``jaxaudit shadow`` then ``jaxaudit bmp --shadow`` and ``jaxaudit bmp`` training its own models
  with the same seed train the same models;
* a resumed, re-chunked or distributed sweep gives the serial sweep's result.

A pipeline's root key is ``jax.random.key(config.seed)``: the configuration's integer ``seed`` is
only the stored form of the root key. Besides the units, a pipeline may need a few keys for other
purposes (a Monte Carlo estimate of the inclusion probabilities, the posterior sampler). Those
come from named *streams*, which take the top of the fold-in range (``fold_in(k, 2**32 − 1 − i)``
for the i-th stream) so they never meet a unit (units are below 2**31). Generated data (the CSBM
graph) uses the root key itself.

``KEY_RULE`` names this rule; pipelines store it in their run configuration, so a folder written
under another rule is refused instead of being mixed with units drawn under this one.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxaudit._validation import check_integer, check_key

__all__ = ["KEY_RULE", "MAX_UNITS", "STREAMS", "stream_key", "unit_key", "unit_keys"]

#: Name of the key rule, stored in run configurations.
KEY_RULE = "unit-fold-in-v1"
#: Units are numbered 0 … MAX_UNITS − 1.
MAX_UNITS = 2**31
#: The auxiliary streams, in the order that gives their index.
STREAMS = ("priors", "audit", "init", "eval")


def unit_key(key: jax.Array, unit: int) -> jax.Array:
    """The key of unit ``unit`` of the sweep with root key ``key``: ``fold_in(key, unit)``.

    Examples:
      >>> import jax
      >>> root = jax.random.key(3)
      >>> bool((jax.random.key_data(unit_key(root, 5))
      ...       == jax.random.key_data(jax.random.fold_in(root, 5))).all())
      True
    """
    check_key("key", key)
    unit = check_integer("unit", unit, minimum=0)
    if unit >= MAX_UNITS:
        raise ValueError(f"unit must be < 2**31, got {unit}")
    return jax.random.fold_in(key, unit)


def unit_keys(key: jax.Array, start: int, count: int) -> jax.Array:
    """The keys of units ``start … start + count − 1`` of the sweep with root key ``key``, as one
    key array of shape (count,), e.g. the models of one chunk of a shadow-model sweep."""
    check_key("key", key)
    start = check_integer("start", start, minimum=0)
    count = check_integer("count", count, minimum=1)
    if start + count > MAX_UNITS:
        raise ValueError(f"units must be < 2**31, got start + count = {start + count}")
    units = np.arange(start, start + count, dtype=np.uint32)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, units)


def stream_key(key: jax.Array, stream: str) -> jax.Array:
    """The key of the named auxiliary stream (one of :data:`STREAMS`) of the sweep with root key
    ``key``."""
    check_key("key", key)
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {list(STREAMS)}, got {stream!r}")
    return jax.random.fold_in(key, 2**32 - 1 - STREAMS.index(stream))
