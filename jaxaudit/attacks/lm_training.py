"""DP-SGD for a sequence model: Poisson subsampling, per-example clipping, Gaussian noise.

Each step t draws a Poisson batch (record i in with probability q; the sampled rows are gathered
into a fixed-shape batch padded with zero-weight rows), and privatises the sum of clipped per-example gradients exactly as
:func:`jaxaudit.dpsgd.make_private_step` does:

    ĝ_t = (Σ_i mask_i · clip_C(∇ℓ_i(θ)) + N(0, σ²C² I)) / (qN),   clip_C(g) = g / max(1, ‖g‖/C),

with ℓ_i the record's negative log-likelihood (a *sequence* loss; the dpsgd pillar's
:func:`jaxaudit.dpsgd.make_private_step` is written for classification losses). The per-example
gradients come from :func:`jaxaudit.dpsgd.per_example_gradients` (``jax.vmap(jax.grad(ℓ_i))``),
and the clip, mask, sum, noise and division by qN from the library's one DP aggregation,
``optax.chain(jaxaudit.dpsgd.dp_aggregate(...), optax.adam(η))``: an optimiser only
post-processes the privatised gradient, so the privacy is that of the T noisy sums, accounted
for by :func:`jaxaudit.attacks.dpsgd_privacy` under replace-one neighbours. That accountant (as
``dp_accounting``'s ``REPLACE_ONE``) takes σ relative to C, the noise σC; ``dp_aggregate``'s σ is
relative to the replace-one sensitivity 2C, so it is given σ/2 (noise (σ/2)·2C = σC). The
normaliser qN is a constant (the expected batch size), never the realised one.

**User-level DP-SGD** (McMahan et al. 1710.06963): given (U, R, T) tokens, the unit i is a
user with R records, sampled with all of them, and ℓ_i = Σ_j ℓ(record_ij) is the user's summed
loss, so clip_C bounds the whole user's contribution: the same accountant then gives (ε, δ)
for replacing one *user* (N = U units).

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
  McMahan, Ramage, Talwar, Zhang, "Learning Differentially Private Recurrent Language Models",
  ICLR 2018, arXiv 1710.06963 (DP-trained recurrent LMs).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.typing import VariableDict
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
)
from jaxaudit.attacks.char_model import sequence_log_likelihood
from jaxaudit.dpsgd.private_aggregate import dp_aggregate, per_example_gradients

__all__ = ["train_dp_lm"]


def train_dp_lm(key: jax.Array, model: nn.Module, tokens: ArrayLike, *, steps: int,
                sampling_rate: float, noise_multiplier: float,
                clip_norm: float = 1.0, learning_rate: float = 3e-3,
                init_params: VariableDict | None = None,
                on_chunk: Callable[[int], None] | None = None, chunk: int = 50,
                optimizer: optax.GradientTransformation | None = None) -> VariableDict:
    """Train ``model`` on ``tokens`` with DP-SGD (Adam on the privatised gradient).

    Args:
      key: PRNG key (initialisation, then per step: batch mask and noise).
      model: a flax module mapping (B, T) tokens to (B, T, V) logits (e.g. ``CharGRU``).
      tokens: (N, T) int32 records (each one privacy unit), or (U, R, T) int32 users of R
        records each (user-level DP-SGD: a user is sampled with all its records, and the
        gradient of the user's SUMMED loss Σ_j ℓ(record_j) is clipped as one, so the noise
        protects the user, the unit of the accounting; all-PAD rows pad users with fewer
        records and contribute nothing).
      steps: T ≥ 1 steps.
      sampling_rate: Poisson rate q ∈ (0, 1].
      noise_multiplier: σ ≥ 0 (0: no noise, no privacy).
      clip_norm: C > 0.
      learning_rate: Adam step size.
      init_params: start from these parameters (e.g. a public pretraining); default: fresh.
      on_chunk: optional callback with the number of steps done after each chunk (progress).
      chunk: steps per jitted chunk.
      optimizer: what post-processes the privatised gradient (default ``optax.adam``
        with ``learning_rate``; any optax transformation keeps the privacy).

    Returns:
      The trained parameters.
    """
    check_probability("sampling_rate", sampling_rate, open_low=True)
    check_nonnegative("noise_multiplier", noise_multiplier)
    check_positive("clip_norm", clip_norm)
    check_positive("learning_rate", learning_rate)
    steps = check_integer("steps", steps, minimum=1)
    tokens = jnp.asarray(tokens, jnp.int32)
    if tokens.ndim == 2:
        tokens = tokens[:, None, :]
    if tokens.ndim != 3:
        raise ValueError(f"tokens must have shape (N, T) or (U, R, T), got {tokens.shape}")
    n = tokens.shape[0]
    k_init, k_train = jax.random.split(key)
    params = (jax.jit(model.init)(k_init, tokens[:1, 0]) if init_params is None
              else init_params)
    q, sigma, c = float(sampling_rate), float(noise_multiplier), float(clip_norm)
    # σ/2 relative to Δ = 2C is the accountant's σ relative to C: noise σC (exact: halving and
    # doubling are exact in floating point, so (σ/2)·(2C) == σ·C bit for bit).
    post = optax.adam(float(learning_rate)) if optimizer is None else optimizer

    def make_opt(noise: float | jax.Array) -> optax.GradientTransformation:
        return optax.chain(dp_aggregate(c, noise / 2.0, normalizer=q * n,
                                        neighbouring="replace_one"), post)

    opt_state = make_opt(sigma).init(params)
    # Fixed-shape Poisson batches: the sampled rows, padded with zero-weight rows up to a
    # capacity 8 standard deviations above the mean. A step whose sample is larger would drop
    # records; such a run is refused (probability < 1e-15 per step).
    batch_cap = min(n, int(math.ceil(q * n + 8.0 * math.sqrt(q * (1.0 - q) * n) + 8.0)))

    def loss(prm, unit):
        # one privacy unit's loss: the sum over its records (R = 1: one record)
        return -jnp.sum(sequence_log_likelihood(model, prm, unit))

    # The records and σ are arguments of the jitted chunk, not constants, so that runs that
    # differ only in them (another ε, another draw of the secrets) compile the same program
    # (and hit JAX's persistent compilation cache when it is on).
    def one_step(carry, k, toks, noise):
        opt = make_opt(noise)
        prm, state, overflow = carry
        k_mask, k_noise = jax.random.split(k)
        mask = jax.random.bernoulli(k_mask, q, (n,))
        (rows,) = jnp.nonzero(mask, size=batch_cap, fill_value=0)
        weight = (jnp.arange(batch_cap) < mask.sum()).astype(jnp.float32)
        grads = per_example_gradients(loss, prm, toks[rows])
        updates, state = opt.update(grads, state, prm, mask=weight, noise_key=k_noise)
        overflow = overflow + (mask.sum() > batch_cap)
        return (optax.apply_updates(prm, updates), state, overflow), None

    @jax.jit
    def run(carry, keys, toks, noise):
        return jax.lax.scan(lambda cr, k: one_step(cr, k, toks, noise), carry, keys)[0]

    keys = jax.random.split(k_train, int(steps))
    carry = (params, opt_state, jnp.zeros((), jnp.int32))
    done = 0
    while done < steps:
        m = min(chunk, steps - done)
        carry = run(carry, keys[done:done + m], tokens, jnp.float32(sigma))
        done += m
        jax.block_until_ready(carry)
        if on_chunk is not None:
            on_chunk(done)
    if int(carry[2]) > 0:
        raise RuntimeError(f"{int(carry[2])} Poisson batches exceeded the fixed batch capacity "
                           f"{batch_cap}; the run would not match its privacy accounting")
    return carry[0]
