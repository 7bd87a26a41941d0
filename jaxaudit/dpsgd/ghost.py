"""Per-example gradient norms and the clipped gradient sum without per-example backward passes.

For a model given as a :func:`jaxaudit.dpsgd.models.layer_program` (affine layers, convolutions
as im2col matmuls), one batched backward pass with respect to each layer's affine output gives
the per-example output gradients G_i. Then (ghost clipping / book-keeping):

* dense layer, input a_i, output gradient g_i: the per-example weight gradient is a_i g_iᵀ and
  ‖a_i g_iᵀ‖²_F = ‖a_i‖² ‖g_i‖² (never formed; Goodfellow arXiv 1510.01799), bias gradient g_i;
* convolution as im2col, patches P_i (S × K), output gradient G_i (S × O): the per-example weight
  gradient is P_iᵀ G_i, formed (K·O numbers, the same multiply-adds as its norm), bias Σ_s G_i;
* the global norm ‖∇ℓ_i‖² is the sum over layers, the clip factor c_i = w_i / max(1, ‖∇ℓ_i‖/C),
  and the clipped sum Σ_i c_i ∇ℓ_i is one matmul per layer with the output gradients scaled by
  c_i (Li et al., arXiv 2110.05679; Bu et al., arXiv 2210.00038, "book-keeping": the output
  gradients of the one backward pass are reused, no second backward pass).

Blocks of examples (:func:`blocked_clipped_sum`): the clip factor of example i depends on
example i alone, so the batch can be cut into blocks of ``block_size`` examples processed one
after another (``lax.scan``), each block's clipped sum added to the total. The result is the
same sum, reassociated. This keeps one block's intermediates (the im2col patches, output
gradients and per-example weight gradients of a few examples: ~0.2 MB per ``SmallCNN`` example)
in the CPU's cache instead of streaming batch-sized arrays (8 MB for SmallCNN's second im2col at
|D| = 101) through memory between XLA's unfused operations; on accelerators one block (the whole
batch) is best. Measurements: ``benchmarks/README.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxaudit.dpsgd.models import Layer

__all__ = ["ghost_clipped_sum", "blocked_clipped_sum", "block_features", "default_block_size"]


def _per_example_losses(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels)


def default_block_size(backend: str | None = None, num_devices: int | None = None
                       ) -> int | None:
    """Examples per block when none is given: 1 on CPU with one JAX device per core (several
    local CPU devices, the CLI's configuration: each device then runs one single-threaded step,
    which blocks of one keep in cache), None (the whole batch in one block) otherwise — on a
    single CPU device the whole-batch step is the faster one, as XLA spreads its larger
    operations over the cores, and on accelerators. Measured on a quiet 2-core machine:
    ``benchmarks/README.md``.

    Args:
      backend: "cpu", "gpu", "tpu" (None: ``jax.default_backend()``).
      num_devices: local devices of that backend (None: ``jax.local_device_count()``).
    """
    backend = jax.default_backend() if backend is None else backend
    if backend != "cpu":
        return None
    num_devices = jax.local_device_count() if num_devices is None else int(num_devices)
    return 1 if num_devices > 1 else None


def ghost_clipped_sum(layers: Sequence[Layer], params: Any, features: jax.Array,
                      labels: jax.Array, weights: jax.Array, clip_norm: float | jax.Array
                      ) -> tuple[Any, jax.Array]:
    """Σ_i w_i clip_C(∇ℓ_i) and the per-example norms ‖∇ℓ_i‖ from one batched backward pass.

    ``features`` is the first layer's input for the batch (``prepare(inputs)`` of the program).
    Pure and traceable; no validation.
    """
    p = params["params"]

    def affine(layer: Layer, a: jax.Array) -> jax.Array:
        kernel, bias = p[layer.name]["kernel"], p[layer.name]["bias"]
        if layer.kind == "conv":
            kernel = kernel.reshape(-1, kernel.shape[-1])
        return a @ kernel + bias

    def forward(perturbations: list[jax.Array]) -> tuple[jax.Array, list[jax.Array]]:
        a, acts = features, []
        for layer, e in zip(layers, perturbations):
            acts.append(a)
            a = layer.after(affine(layer, a) + e)
        return _per_example_losses(a, labels), acts

    def shapes() -> list[jax.Array]:
        a, out = features, []
        for layer in layers:
            z = affine(layer, a)
            out.append(z)
            a = layer.after(z)
        return out

    zeros = [jnp.zeros(s.shape, s.dtype) for s in jax.eval_shape(shapes)]
    losses, vjp_fn, acts = jax.vjp(forward, zeros, has_aux=True)
    (grads_z,) = vjp_fn(jnp.ones_like(losses))

    sq = jnp.zeros(losses.shape, losses.dtype)
    per_example: list[Any] = []  # (gw, gb) of a conv layer, None for a dense one
    for layer, a, g in zip(layers, acts, grads_z):
        if layer.kind == "conv":
            # Per-example (P_iᵀ G_i)ᵀ = G_iᵀ P_i, shape (N, O, K). On a batch, materialising
            # G_iᵀ first (small: O x S per example) lets XLA use its fast batched matmul; the
            # direct einsum contracts a middle axis and ran 4-5x slower on CPU. On a block of
            # one example the einsum is one plain matmul and was 8% faster per step.
            if g.shape[0] == 1:
                gw = jnp.einsum("nso,nsk->nok", g, a)
            else:
                gw = jax.lax.optimization_barrier(jnp.swapaxes(g, 1, 2)) @ a
            gb = g.sum(axis=1)
            sq = sq + jnp.sum(gw * gw, axis=(1, 2)) + jnp.sum(gb * gb, axis=1)
            per_example.append((gw, gb))
        else:
            g2 = jnp.sum(g * g, axis=1)
            sq = sq + jnp.sum(a * a, axis=1) * g2 + g2
            per_example.append(None)
    norms = jnp.sqrt(sq)
    # w_i / max(1, ‖g_i‖/C): optax's per_example_global_norm_clip factor times the mask
    factors = weights / jnp.maximum(norms / clip_norm, 1.0)

    out: dict[str, dict[str, jax.Array]] = {}
    for layer, a, g, pe in zip(layers, acts, grads_z, per_example):
        shape = p[layer.name]["kernel"].shape
        if layer.kind == "conv":
            gw, gb = pe
            # Σ_n c_n gw_n as a row-vector-matrix product over gw's leading axis (the einsum
            # "n,nok->ko" made XLA copy gw into a transposed layout first).
            n, o, k = gw.shape
            kernel = (factors @ gw.reshape(n, o * k)).reshape(o, k).T.reshape(shape)
            bias = factors @ gb
        else:
            gs = g * factors[:, None]
            kernel = a.T @ gs
            bias = gs.sum(axis=0)
        out[layer.name] = {"kernel": kernel, "bias": bias}
    return {"params": out}, norms


def block_features(features: jax.Array, block_size: int) -> jax.Array:
    """(N, ...) -> (⌈N/b⌉, b, ...): the batch cut into blocks of b examples, zero-padded at the
    end (padded rows get weight 0 in :func:`blocked_clipped_sum`). Computed once per batch."""
    n = features.shape[0]
    block_size = max(1, min(int(block_size), n))
    blocks = -(-n // block_size)
    pad = blocks * block_size - n
    if pad:
        features = jnp.pad(features, [(0, pad)] + [(0, 0)] * (features.ndim - 1))
    return features.reshape((blocks, block_size) + features.shape[1:])


def blocked_clipped_sum(layers: Sequence[Layer], params: Any, blocked: jax.Array,
                        labels: jax.Array, weights: jax.Array, clip_norm: float | jax.Array
                        ) -> tuple[Any, jax.Array]:
    """:func:`ghost_clipped_sum` over the blocks of :func:`block_features`, one after another.

    Σ_i w_i clip_C(∇ℓ_i) = Σ_blocks Σ_{i∈block} w_i clip_C(∇ℓ_i): each example's clip factor
    depends on that example only, so the sum over blocks is the same sum (reassociated).
    ``labels`` and ``weights`` have the unpadded length N; the (N,) norms are returned.
    """
    n = labels.shape[0]
    blocks, size = blocked.shape[:2]
    pad = blocks * size - n
    y = jnp.pad(labels, (0, pad)).reshape(blocks, size)
    w = jnp.pad(weights, (0, pad)).reshape(blocks, size)  # padded rows: weight 0

    def body(total: Any, item: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
        f, yb, wb = item
        summed, norms = ghost_clipped_sum(layers, params, f, yb, wb, clip_norm)
        return jax.tree.map(jnp.add, total, summed), norms

    shapes = jax.eval_shape(
        lambda: ghost_clipped_sum(layers, params, blocked[0], y[0], w[0], clip_norm)[0])
    total0 = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    total, norms = jax.lax.scan(body, total0, (blocked, y, w))
    return total, norms.reshape(-1)[:n]
