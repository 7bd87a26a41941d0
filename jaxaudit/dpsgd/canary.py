"""The audit's canary: a blank input carrying the label the initial model finds least likely.

Annamalai & De Cristofaro (2024, arXiv 2405.14106) use an all-zero image with the "worst-case"
label, argmin_y p_θ₀(y | 0): its gradient is large and points the same way in every run, which
makes the canary's effect on the trained model as distinguishable as possible.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

__all__ = ["blank_canary", "worst_case_label"]


def blank_canary(shape: tuple[int, ...] = (28, 28)) -> jax.Array:
    """An all-zero input of the shape of one example (float32).

    Example:
      >>> blank_canary((2, 2)).tolist()
      [[0.0, 0.0], [0.0, 0.0]]
    """
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    if any(s < 1 for s in shape):
        raise ValueError(f"shape must have positive sizes, got {shape}")
    return jnp.zeros(shape, jnp.float32)


def worst_case_label(model: nn.Module, params: Any, canary_input: ArrayLike) -> int:
    """argmin_y p_θ(y | canary_input): the label the model finds least likely.

    Args:
      model: flax module returning logits; params: its parameters.
      canary_input: one example (no batch axis).

    Returns:
      The label as a Python int.
    """
    x = jnp.asarray(canary_input, jnp.float32)
    if not bool(jnp.isfinite(x).all()):
        raise ValueError("canary_input must be finite")
    logits = model.apply(params, x[None])[0]
    return int(jnp.argmin(logits))
