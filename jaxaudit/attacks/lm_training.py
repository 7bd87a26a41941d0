"""DP-SGD for a sequence model: Poisson subsampling, per-example clipping, Gaussian noise.

Each step t draws a Poisson batch (record i in with probability q; the sampled rows are gathered
into a fixed-shape batch padded with zero-weight rows), and privatises the sum of clipped per-example gradients exactly as
:func:`jaxaudit.dpsgd.make_private_step` does:

    ĝ_t = (Σ_i mask_i · clip_C(∇ℓ_i(θ)) + N(0, σ²C² I)) / (qN),   clip_C(g) = g / max(1, ‖g‖/C),

with ℓ_i the record's negative log-likelihood (a *sequence* loss, which is why this module has
its own step: the dpsgd pillar's step is written for classification losses). The per-example
gradients come from ``jax.vmap(jax.grad(ℓ_i))``, the clip-and-sum from optax's
``per_example_global_norm_clip`` (the masked rows are zeroed first: clip(0·g) = 0) and the noise
from :func:`jaxaudit.dpsgd.add_gaussian_noise`. The update applies Adam to ĝ_t: an optimiser
only post-processes the privatised gradient, so the privacy is that of the T noisy sums,
accounted for by :func:`jaxaudit.attacks.dpsgd_privacy`. The normaliser qN is a constant
(the expected batch size), never the realised one.

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
  McMahan, Ramage, Talwar, Zhang, "Learning Differentially Private Recurrent Language Models",
  ICLR 2018, arXiv 1710.06963 (DP-trained recurrent LMs).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxaudit._validation import (
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
)
from jaxaudit.attacks.char_model import sequence_log_likelihood
from jaxaudit.dpsgd import add_gaussian_noise

__all__ = ["train_dp_lm"]


def train_dp_lm(key, model, tokens, *, steps: int, sampling_rate: float, noise_multiplier: float,
                clip_norm: float = 1.0, learning_rate: float = 3e-3,
                init_params=None, on_chunk: Callable[[int], None] | None = None,
                chunk: int = 50):
    """Train ``model`` on ``tokens`` with DP-SGD (Adam on the privatised gradient).

    Args:
      key: PRNG key (initialisation, then per step: batch mask and noise).
      model: a flax module mapping (B, T) tokens to (B, T, V) logits (e.g. ``CharGRU``).
      tokens: (N, T) int32 records.
      steps: T ≥ 1 steps.
      sampling_rate: Poisson rate q ∈ (0, 1].
      noise_multiplier: σ ≥ 0 (0: no noise, no privacy).
      clip_norm: C > 0.
      learning_rate: Adam step size.
      init_params: start from these parameters (e.g. a public pretraining); default: fresh.
      on_chunk: optional callback with the number of steps done after each chunk (progress).
      chunk: steps per jitted chunk.

    Returns:
      The trained parameters.
    """
    check_probability("sampling_rate", sampling_rate, open_low=True)
    check_nonnegative("noise_multiplier", noise_multiplier)
    check_positive("clip_norm", clip_norm)
    check_positive("learning_rate", learning_rate)
    steps = check_integer("steps", steps, minimum=1)
    tokens = jnp.asarray(tokens, jnp.int32)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (N, T), got {tokens.shape}")
    n = tokens.shape[0]
    k_init, k_train = jax.random.split(key)
    params = jax.jit(model.init)(k_init, tokens[:1]) if init_params is None else init_params
    opt = optax.adam(float(learning_rate))
    opt_state = opt.init(params)
    q, sigma, c = float(sampling_rate), float(noise_multiplier), float(clip_norm)
    normalizer = q * n
    # Fixed-shape Poisson batches: the sampled rows, padded with zero-weight rows up to a
    # capacity 8 standard deviations above the mean. A step whose sample is larger would drop
    # records; such a run is refused (probability < 1e-15 per step).
    batch_cap = min(n, int(math.ceil(q * n + 8.0 * math.sqrt(q * (1.0 - q) * n) + 8.0)))

    def loss(prm, record):
        return -sequence_log_likelihood(model, prm, record[None])[0]

    def one_step(carry, k):
        prm, state, overflow = carry
        k_mask, k_noise = jax.random.split(k)
        mask = jax.random.bernoulli(k_mask, q, (n,))
        (rows,) = jnp.nonzero(mask, size=batch_cap, fill_value=0)
        weight = (jnp.arange(batch_cap) < mask.sum()).astype(jnp.float32)
        grads = jax.vmap(jax.grad(loss), in_axes=(None, 0))(prm, tokens[rows])
        leaves, treedef = jax.tree.flatten(grads)
        leaves = [g * weight.reshape((-1,) + (1,) * (g.ndim - 1)) for g in leaves]
        summed, _ = optax.transforms.per_example_global_norm_clip(leaves, c)
        noisy = add_gaussian_noise(k_noise, jax.tree.unflatten(treedef, summed), sigma * c)
        g = jax.tree.map(lambda x: x / normalizer, noisy)
        updates, state = opt.update(g, state, prm)
        overflow = overflow + (mask.sum() > batch_cap)
        return (optax.apply_updates(prm, updates), state, overflow), None

    @jax.jit
    def run(carry, keys):
        return jax.lax.scan(one_step, carry, keys)[0]

    keys = jax.random.split(k_train, int(steps))
    carry = (params, opt_state, jnp.zeros((), jnp.int32))
    done = 0
    while done < steps:
        m = min(chunk, steps - done)
        carry = run(carry, keys[done:done + m])
        done += m
        jax.block_until_ready(carry)
        if on_chunk is not None:
            on_chunk(done)
    if int(carry[2]) > 0:
        raise RuntimeError(f"{int(carry[2])} Poisson batches exceeded the fixed batch capacity "
                           f"{batch_cap}; the run would not match its privacy accounting")
    return carry[0]
