"""Dropout from packed random bits (a performance choice; docs/gnn_mia.md).

Why not ``flax.linen.Dropout``: it draws one 32-bit uniform per element, and on CPU the
threefry generator then costs more than the rest of a GCN training epoch on Cora (measured:
benchmarks/README.md). A Bernoulli(keep) variable only needs ``k`` random bits
when ``keep * 2**k`` is an integer: dropout 0.5 needs one bit per element, so one 32-bit word
serves 32 elements and the generator does 32x less work.

:func:`bernoulli_keep` uses the smallest ``k`` in {1, 2, 4, 8, 16} for which ``keep * 2**k`` is
an integer, which is exact. Other rates (e.g. GAT's 0.6) use ``k = 16`` with ``keep`` rounded to
the nearest multiple of 2**-16 (error below 7.7e-6; flax's own float32 uniform is quantised too,
at 2**-23 or coarser).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxaudit._validation import plain

__all__ = ["bits_per_draw", "bernoulli_keep", "Dropout"]


def bits_per_draw(keep: float) -> int:
    """Bits per Bernoulli(keep) draw: smallest k in {1, 2, 4, 8, 16} with keep·2^k an integer
    (16 when none is)."""
    for k in (1, 2, 4, 8, 16):
        if float(keep) * 2**k == round(float(keep) * 2**k):
            return k
    return 16


def bernoulli_keep(key: jax.Array, keep: float, shape: tuple[int, ...]) -> jax.Array:
    """Boolean Bernoulli(``keep``) array of ``shape`` from packed random bits.

    Each 32-bit word of ``jax.random.bits`` is cut into ``32 // k`` fields of ``k`` bits
    (:func:`bits_per_draw`); a field ``u`` (uniform on {0, ..., 2^k − 1}) gives ``u < keep·2^k``,
    so ``P(True) = keep`` exactly when ``keep·2^k`` is an integer.

    Example:
      >>> import jax
      >>> m = bernoulli_keep(jax.random.key(0), 0.5, (1000, 64))
      >>> m.shape, bool(abs(float(m.mean()) - 0.5) < 0.01)
      ((1000, 64), True)
    """
    if not 0.0 <= float(keep) <= 1.0:
        raise ValueError(f"keep must be in [0, 1], got {plain(keep)}")
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64))
    k = bits_per_draw(keep)
    per_word = 32 // k
    threshold = int(round(float(keep) * 2**k))
    words = jax.random.bits(key, (-(-n // per_word),), jnp.uint32)
    shifts = jnp.arange(per_word, dtype=jnp.uint32) * jnp.uint32(k)
    fields = (words[:, None] >> shifts) & jnp.uint32(2**k - 1)
    return (fields.reshape(-1)[:n] < jnp.uint32(threshold)).reshape(shape)


class Dropout(nn.Module):
    """Inverted dropout with :func:`bernoulli_keep` masks (``rngs={"dropout": key}``).

    ``y = x · m / (1 − rate)`` with ``m ~ Bernoulli(1 − rate)`` when not ``deterministic``.
    """

    rate: float
    deterministic: bool | None = None

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool | None = None) -> jax.Array:
        if not 0.0 <= float(self.rate) <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {self.rate!r}")
        deterministic = nn.merge_param("deterministic", self.deterministic, deterministic)
        if deterministic or self.rate == 0.0:
            return x
        if self.rate == 1.0:
            return jnp.zeros_like(x)
        keep = 1.0 - self.rate
        mask = bernoulli_keep(self.make_rng("dropout"), keep, x.shape)
        return jnp.where(mask, x / keep, jnp.zeros_like(x))
