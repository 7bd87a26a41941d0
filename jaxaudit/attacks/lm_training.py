"""DP-SGD for a sequence model: Poisson subsampling, per-example clipping, Gaussian noise.

Each step t draws a Poisson batch (record i in with probability q = B/N, B the expected batch
size; the sampled rows are gathered into a fixed-shape batch padded with zero-weight rows), and
privatises the sum of clipped per-example gradients exactly as
:func:`jaxaudit.dpsgd.make_private_step` does:

    ĝ_t = (Σ_i mask_i · clip_C(∇ℓ_i(θ)) + N(0, σ²C² I)) / (qN),   clip_C(g) = g / max(1, ‖g‖/C),

with ℓ_i the record's negative log-likelihood (a *sequence* loss; the dpsgd pillar's
:func:`jaxaudit.dpsgd.make_private_step` is written for classification losses). The per-example
gradients come from :func:`jaxaudit.dpsgd.per_example_gradients` (``jax.vmap(jax.grad(ℓ_i))``),
and the clip, mask, sum, noise and division by qN from the library's one DP aggregation,
``optax.chain(jaxaudit.dpsgd.dp_aggregate(...), optax.adam(η))``: an optimiser only
post-processes the privatised gradient, so the privacy is that of the T noisy sums, accounted
for by :func:`jaxaudit.accounting.dpsgd_privacy` under replace-one neighbours. That accountant (as
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
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.typing import VariableDict
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_instance,
    check_integer,
    check_nonnegative_finite,
    check_positive_finite,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields, check_one_key
from jaxaudit.attacks.char_model import sequence_log_likelihood
from jaxaudit.dpsgd import dp_aggregate, per_example_gradients
from jaxaudit.runs import Progress

__all__ = ["LmConfig", "MAX_STEPS", "check_lm_config", "sampling_rate", "train_dp_lm"]

#: Most DP-SGD steps of one training (the step keys are materialised up front).
MAX_STEPS = 10**6
#: Steps per jitted chunk of :func:`train_dp_lm` (progress is reported between chunks).
CHUNK = 50


class LmConfig(NamedTuple):
    """The LM recipe of the secret-extraction game: the private corpus, the character GRU and its
    DP-SGD fine-tuning (Swanberg et al., arXiv 2507.08158, § 3).

    Attributes:
      num_secrets: n users, one secret each (default 100).
      num_filler: filler records of real text in the private corpus (default 1000).
      record_length: characters per record, BOS and EOS included (default 64).
      records_per_user: R ≥ 1 records per user (default 1): each secret record R times, the
        filler in users of R sentences; DP-SGD samples users and clips each user's summed
        gradient, so ε is per user, the unit the count bound counts
        (:func:`jaxaudit.attacks.corpus.user_records`).
      hidden_dim: GRU width when training from scratch (default 96).
      steps: DP-SGD steps T (default 300; at most :data:`MAX_STEPS`).
      batch_size: expected Poisson batch size B = qN (default 64; q = min(1, B/N) over the N
        privacy units).
      clip_norm: per-example (per-user) clipping norm C (default 1.0).
      learning_rate: Adam step size (default 3e-3).
      delta: δ ∈ (0, 1) of the (ε, δ) target under replace-one neighbours (default 1e-5).
    """

    num_secrets: int = 100
    num_filler: int = 1000
    record_length: int = 64
    records_per_user: int = 1
    hidden_dim: int = 96
    steps: int = 300
    batch_size: int = 64
    clip_norm: float = 1.0
    learning_rate: float = 3e-3
    delta: float = 1e-5

    def check(self) -> LmConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration with Python numbers. The functions that take it call it first."""
        return check_lm_config(self)


def check_lm_config(config: Any, name: str = "config") -> LmConfig:
    """``config`` checked field by field (errors name ``config.<field>``), as Python numbers.

    Raises:
      TypeError: ``config`` is not an :class:`LmConfig`.
      ValueError: a bad field, named.
    """
    check_instance(name, config, LmConfig)
    check_config_fields(config, name)
    ints = {f: check_integer(f"{name}.{f}", getattr(config, f), minimum=m)
            for f, m in (("num_secrets", 1), ("num_filler", 0), ("record_length", 1),
                         ("records_per_user", 1), ("hidden_dim", 1), ("steps", 1),
                         ("batch_size", 1))}
    if ints["steps"] > MAX_STEPS:
        raise ValueError(f"{name}.steps must be an integer in [1, {MAX_STEPS}], got "
                         f"{ints['steps']}")
    clip = float(check_positive_finite(f"{name}.clip_norm", config.clip_norm))
    lr = float(check_positive_finite(f"{name}.learning_rate", config.learning_rate))
    delta = float(check_probability(f"{name}.delta", config.delta, open_low=True,
                                    open_high=True))
    return config._replace(**ints, clip_norm=clip, learning_rate=lr, delta=delta)


def sampling_rate(batch_size: int, num_units: int) -> float:
    """q = min(1, B/N): the Poisson rate that gives an expected batch of B out of N units."""
    return min(1.0, batch_size / num_units)


def train_dp_lm(key: jax.Array, model: nn.Module, tokens: ArrayLike, config: LmConfig, *,
                noise_multiplier: float, init_params: VariableDict | None = None,
                optimizer: optax.GradientTransformation | None = None,
                progress: Progress | None = None) -> VariableDict:
    """Train ``model`` on ``tokens`` with DP-SGD (Adam on the privatised gradient).

    Args:
      key: PRNG key (initialisation, then per step: batch mask and noise).
      model: a flax module mapping (B, T) tokens to (B, T, V) logits (e.g. ``CharGRU``).
      tokens: (N, T) int32 records (each one privacy unit), or (U, R, T) int32 users of R
        records each (user-level DP-SGD: a user is sampled with all its records, and the
        gradient of the user's SUMMED loss Σ_j ℓ(record_j) is clipped as one, so the noise
        protects the user, the unit of the accounting; all-PAD rows pad users with fewer
        records and contribute nothing).
      config: :class:`LmConfig`; read: ``steps`` (T), ``batch_size`` (q = min(1, B/N)),
        ``clip_norm`` (C), ``learning_rate`` (Adam's step).
      noise_multiplier: σ ≥ 0 relative to C, the accountant's (0: no noise, no privacy).
      init_params: start from these parameters (e.g. a public pretraining); default: fresh.
      optimizer: what post-processes the privatised gradient (default ``optax.adam``
        with ``config.learning_rate``; any optax transformation keeps the privacy).
      progress: optional ``progress(done, total)`` over the steps, after each jitted chunk.

    Returns:
      The trained parameters.
    """
    check_one_key("key", key)
    config = check_lm_config(config)
    check_nonnegative_finite("noise_multiplier", noise_multiplier)
    steps = config.steps
    tokens = jnp.asarray(tokens, jnp.int32)
    if tokens.ndim == 2:
        tokens = tokens[:, None, :]
    if tokens.ndim != 3:
        raise ValueError(f"tokens must have shape (N, T) or (U, R, T), got {tokens.shape}")
    n = tokens.shape[0]
    k_init, k_train = jax.random.split(key)
    params = (jax.jit(model.init)(k_init, tokens[:1, 0]) if init_params is None
              else init_params)
    q, sigma, c = sampling_rate(config.batch_size, n), float(noise_multiplier), config.clip_norm
    # σ/2 relative to Δ = 2C is the accountant's σ relative to C: noise σC (exact: halving and
    # doubling are exact in floating point, so (σ/2)·(2C) == σ·C bit for bit).
    post = optax.adam(config.learning_rate) if optimizer is None else optimizer

    def make_opt(noise: float | jax.Array) -> optax.GradientTransformation:
        return optax.chain(dp_aggregate(c, noise / 2.0, normalizer=q * n,
                                        relation="replace_one"), post)

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
        weight = jnp.arange(batch_cap) < mask.sum()
        grads = per_example_gradients(loss, prm, toks[rows])
        updates, state = opt.update(grads, state, prm, mask=weight, noise_key=k_noise)
        overflow = overflow + (mask.sum() > batch_cap)
        return (optax.apply_updates(prm, updates), state, overflow), None

    @jax.jit
    def run(carry, keys, toks, noise):
        return jax.lax.scan(lambda cr, k: one_step(cr, k, toks, noise), carry, keys)[0]

    keys = jax.random.split(k_train, steps)
    carry = (params, opt_state, jnp.zeros((), jnp.int32))
    done = 0
    while done < steps:
        m = min(CHUNK, steps - done)
        carry = run(carry, keys[done:done + m], tokens, jnp.float32(sigma))
        done += m
        jax.block_until_ready(carry)
        if progress is not None:
            progress(done, steps)
    if int(carry[2]) > 0:
        raise RuntimeError(f"{int(carry[2])} Poisson batches exceeded the fixed batch capacity "
                           f"{batch_cap}; the run would not match its privacy accounting")
    return carry[0]
