"""Worst-case initial parameters: non-private pretraining on public in-distribution data.

Annamalai & De Cristofaro (2024, arXiv 2405.14106) audit DP-SGD from a model pretrained on a
disjoint half of the data: the private examples then have small, mostly unclipped gradients while
the canary keeps a large clipped one, so the canary's signal stands out of the noise. The same
fixed parameters initialise every audited run.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_finite,
    check_key,
    check_positive,
    check_positive_finite,
    plain,
)
from jaxaudit.dpsgd.ghost import _per_example_losses
from jaxaudit.dpsgd.models import fast_apply

__all__ = ["pretrain"]


def pretrain(key: jax.Array, model: nn.Module, public_images: ArrayLike, public_labels: ArrayLike,
             *, steps: int = 500, learning_rate: float = 1e-3, batch_size: int = 128,
             init_params: Any = None, optimizer: str = "adam") -> Any:
    """Train ``model`` on public data (minibatch cross-entropy); return its parameters.

    Annamalai & De Cristofaro pretrain MNIST models with plain SGD, learning rate 0.01, batch 32,
    5 epochs (``optimizer="sgd"``, ``steps = 5 · N / 32``); minibatches here are drawn with
    replacement rather than by epochs.

    Args:
      key: PRNG key (initialisation and minibatch sampling, with replacement per step).
      model: flax module.
      public_images: (N, ...) public inputs (uint8 images are scaled to [0, 1]).
      public_labels: (N,) integer labels.
      steps: optimiser steps (compiled as one ``lax.scan``).
      learning_rate: step size.
      batch_size: minibatch size (capped at N).
      init_params: start from these instead of ``model.init``.
      optimizer: "adam" or "sgd" (plain SGD).

    Returns:
      Parameters in ``model.init``'s format.
    """
    x = np.asarray(public_images)
    x = x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else check_finite("public_images", x).astype(np.float32)
    y = np.asarray(public_labels)
    if y.shape != x.shape[:1] or y.size == 0:
        raise ValueError(f"public_labels must have shape {x.shape[:1]} (non-empty), got {y.shape}")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {plain(steps)}")
    check_key("key", key)
    check_positive_finite("learning_rate", learning_rate)
    check_positive("batch_size", batch_size)
    check_choice("optimizer", optimizer, ("adam", "sgd"))
    batch = min(int(batch_size), x.shape[0])
    k_init, k_batches = jax.random.split(key)
    xs, ys = jnp.asarray(x), jnp.asarray(y, jnp.int32)
    params = model.init(k_init, xs[:1]) if init_params is None else init_params
    opt = optax.adam(learning_rate) if optimizer == "adam" else optax.sgd(learning_rate)

    @jax.jit
    def train(params: Any, k: jax.Array) -> Any:
        def body(carry: tuple[Any, optax.OptState], kk: jax.Array
                 ) -> tuple[tuple[Any, optax.OptState], jax.Array]:
            p, s = carry
            idx = jax.random.randint(kk, (batch,), 0, xs.shape[0])
            loss, g = jax.value_and_grad(
                lambda q: _per_example_losses(fast_apply(model, q, xs[idx]), ys[idx]).mean())(p)
            upd, s = opt.update(g, s, p)
            return (optax.apply_updates(p, upd), s), loss

        (p, _), _ = jax.lax.scan(body, (params, opt.init(params)), jax.random.split(k, steps))
        return p

    return train(params, k_batches) if steps else params
