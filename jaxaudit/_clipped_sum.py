"""DP-SGD's clipped sum and Gaussian noise: the library's one copy of the two primitives.

    S = Σ_i w_i clip_C(g_i),   clip_C(g) = g · min(1, C/‖g‖₂)   (norm over all leaves),
    S + N(0, (σΔ)² I),         Δ = C (add/remove) or 2C (replace-one).

They live at the foundation so that every layer that trains privately uses the same code:
:mod:`jaxaudit.dpsgd.private_aggregate` builds its optax transformations from them, and the
node-level private shadow training of :mod:`jaxaudit.graph.dp_training` (a lower layer than
``dpsgd``) clips and noises its per-node gradients with them. Both re-export nothing new: the
public names are ``jaxaudit.dpsgd.per_example_gradients`` and the helpers of
``jaxaudit.dpsgd.private_aggregate``.

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp
import optax

from jaxaudit._validation import check_choice

__all__ = ["SENSITIVITY", "add_gaussian_noise", "clip_and_sum", "noise_stddev",
           "per_example_gradients"]

#: The neighbouring relations (as in :mod:`jaxaudit.accounting`) and the L2 sensitivity of the
#: clipped sum under each, in units of C.
SENSITIVITY = {"add_remove": 1.0, "replace_one": 2.0}


def noise_stddev(noise_multiplier: float | jax.Array, clip_norm: float | jax.Array,
                 relation: str = "add_remove") -> float | jax.Array:
    """σ·Δ: the standard deviation of the noise on the clipped sum, Δ = C (add/remove) or 2C
    (replace-one). Python floats in, a Python float out (traced values stay traced)."""
    check_choice("relation", relation, SENSITIVITY)
    factor = SENSITIVITY[relation]
    return noise_multiplier * (clip_norm if factor == 1.0 else factor * clip_norm)


def add_gaussian_noise(key: jax.Array, tree: Any, stddev: float | jax.Array) -> Any:
    """tree + N(0, stddev² I), one independent draw per leaf entry (key split per leaf)."""
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    noisy = [x + stddev * jax.random.normal(k, x.shape, x.dtype) for x, k in zip(leaves, keys)]
    return jax.tree.unflatten(treedef, noisy)


def _leading_size(tree: Any) -> int:
    sizes = {jnp.shape(leaf)[0] if jnp.ndim(leaf) else None for leaf in jax.tree.leaves(tree)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError("per-example gradients must be a pytree of arrays sharing one leading "
                         f"example axis, got leading sizes {sorted(map(str, sizes))}")
    return cast(int, sizes.pop())  # not None: refused above


def clip_and_sum(per_example_grads: Any, clip_norm: float | jax.Array,
                 mask: jax.Array | None = None) -> Any:
    """Σ_i w_i · clip_C(g_i), clip_C(g) = g · min(1, C/‖g‖₂) with the norm over all leaves.

    Args:
      per_example_grads: pytree whose leaves have a leading example axis of size B.
      clip_norm: C > 0.
      mask: optional (B,) 0/1 weights w (default all ones). For 0/1 weights
        clip_C(w g) = w clip_C(g), so the mask is applied before optax's
        ``per_example_global_norm_clip``.

    Returns:
      A pytree shaped like one example's gradient.
    """
    leaves, treedef = jax.tree.flatten(per_example_grads)
    n = _leading_size(per_example_grads)
    if mask is not None:
        if jnp.shape(mask) != (n,):
            raise ValueError(f"mask must have shape ({n},), got {jnp.shape(mask)}")
        mask = jnp.asarray(mask, leaves[0].dtype)
        leaves = [g * mask.reshape((-1,) + (1,) * (g.ndim - 1)) for g in leaves]
    summed, _ = optax.transforms.per_example_global_norm_clip(leaves, clip_norm)
    return jax.tree.unflatten(treedef, summed)


def per_example_gradients(loss: Callable[..., jax.Array], params: Any, *batch: Any) -> Any:
    """``jax.vmap(jax.grad(loss), in_axes=(None, 0, ..., 0))(params, *batch)``.

    ``loss(params, *example)`` is one example's scalar loss; every array of ``batch`` has a
    leading example axis. Returns a pytree shaped like ``params`` with that axis in front.
    """
    return jax.vmap(jax.grad(loss), in_axes=(None,) + (0,) * len(batch))(params, *batch)
