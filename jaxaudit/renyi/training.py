"""Training the DV critic with optax Adam inside one jit-compiled ``lax.scan``.

Maximises J_α(g) = α/(α−1)·lme((α−1)g_q) − lme(α g_p) over the bounded critic on the *training*
split only, with the EMA-corrected gradient of ``jaxaudit.renyi.ema`` (rate 1, the plain gradient,
for full-batch training; 0.1 by default for minibatches). No selection on held-out data happens
here: the number of steps, M and the learning rate are fixed by the config.

Two configurations are named: ``CriticConfig()`` (ours: a bounded one-hidden-layer 32-unit critic,
full batch, no EMA, early stopping on an inner validation split) and
:data:`PAPER_CRITIC_CONFIG` (Kim, Alabi & Varshney's: a 1→100→100→1 ReLU MLP, Adam 1e−4,
minibatches of 400, the EMA-corrected objective at rate 0.25, final parameters). Their
comparison on the same scores is in docs/renyi.md ("Our critic or the paper's").

References:
  Kim, Alabi, Varshney (2026), arXiv 2605.21938, §2 (SGD with EMA); Belghazi et al. (2018).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    check_choice,
    check_chunk_size,
    check_instance,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
    typed_key,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.renyi.confidence import held_out_lower_bound
from jaxaudit.renyi.critic import Critic, init_critic
from jaxaudit.renyi.ema import dv_ema_init, dv_surrogate_loss
from jaxaudit.renyi.objective import dv_objective

__all__ = [
    "CriticConfig", "PAPER_BOUNDED_CRITIC_CONFIG", "PAPER_CRITIC_CONFIG", "TrainHistory", "check_config", "make_critic",
    "objective_standard_error", "train_critic",
]


class CriticConfig(NamedTuple):
    """Hyper-parameters of the critic and its training (hashable: usable as a static argument).

    ``CriticConfig()`` is our default (a bounded 32-unit critic, full batch, no EMA, early
    stopping); :data:`PAPER_CRITIC_CONFIG` is Kim, Alabi & Varshney's (100×100 ReLU, Adam 1e−4,
    minibatches of 400, EMA rate 0.25). Pass either as ``config=`` to :func:`train_critic`,
    ``renyi.estimate_renyi`` or ``renyi.renyi_estimator``.

    Attributes:
      hidden_dims: hidden-layer widths of the MLP.
      critic_bound: M, the critic's output bound |g| ≤ M.
      steps: number of Adam steps.
      learning_rate: Adam step size.
      batch_size: minibatch size per world; ``None`` trains on the full training split.
      ema_rate: EMA rate b; ``None`` picks 1 (plain gradient) for full batch, 0.1 otherwise.
      validation_fraction: fraction of the training samples held out *inside* training for early
        stopping (the parameters with the best validation criterion after a warm-up of
        steps // 10 are returned). DV objectives overfit: a bounded critic can become a step
        on the far tail of Q where no P sample lies, and drive the training J_α far above D_α.
        0 disables early stopping (final parameters).
      selection: early-stopping criterion on the validation samples. "penalised" (default):
        J_α minus one delta-method standard error (see :func:`objective_standard_error`), which
        penalises the heavy right tail of mean e^{αg} under P that makes the plain validation
        J_α optimistic for step-like critics; "objective": the plain validation J_α;
        "bound": the held-out lower bound (range [−M, M], confidence 1/2; very conservative, stops
        early).
      weight_decay: decoupled weight decay of AdamW (0: plain Adam).
      eval_every: validate (and possibly keep the parameters) every this many steps.
    """

    hidden_dims: tuple[int, ...] = (32,)
    critic_bound: float = 2.0
    steps: int = 300
    learning_rate: float = 0.01
    batch_size: int | None = None
    ema_rate: float | None = None
    validation_fraction: float = 0.2
    selection: str = "penalised"
    eval_every: int = 10
    weight_decay: float = 0.0

    def check(self) -> CriticConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration, normalised. The functions that take it call it first."""
        return check_config(self)


#: Kim, Alabi & Varshney's critic and its training, as their public code (GitHub
#: bkim34/RDP_audit, ``scripts/renyi_sweep.py``) and paper (arXiv 2605.21938, §4) run it: a
#: 1→100→100→1 ReLU MLP, Adam with step 1e−4, minibatches of 400 per world, the MINE-style EMA
#: of both log-mean-exp terms at rate 0.25 (the weight of the newest minibatch; their scripts'
#: ``--ema-rate`` default), 750 steps (750 epochs at their 400 training pairs per world, where a
#: minibatch is the whole training split), final parameters (no early stopping, so
#: ``validation_fraction=0``). Their critic is unbounded; ours keeps the M·tanh(h/M) output
#: with M = 50, which is the identity to within 1% for |h| ≤ 8.6 (g stays far below that on
#: canary scores) and keeps every bound that needs |g| ≤ M formally valid. Two further differences
#: remain: we standardise the score (an affine map the first layer can absorb) and initialise
#: the last layer at 0; minibatches are drawn with replacement, not by epochs.
PAPER_CRITIC_CONFIG = CriticConfig(
    hidden_dims=(100, 100), critic_bound=50.0, steps=750, learning_rate=1e-4, batch_size=400,
    ema_rate=0.25, validation_fraction=0.0,
)

#: The paper's critic training (network, optimiser, minibatches, EMA, 750 steps, no early
#: stopping) with our output bound M = 2. On Gaussian scores it measured better than both
#: ``CriticConfig()`` and :data:`PAPER_CRITIC_CONFIG` in spread and bound (docs/renyi.md, "Our
#: critic or the paper's"); not the default until it is checked at small sizes and on canary
#: scores.
PAPER_BOUNDED_CRITIC_CONFIG = PAPER_CRITIC_CONFIG._replace(critic_bound=2.0)


class TrainHistory(NamedTuple):
    """Diagnostics of one training run.

    Attributes:
      objective: J_α on each step's (mini)batch of the fitting samples, shape (steps,).
      validation: the selection criterion on the inner validation samples at steps 0,
        eval_every, 2·eval_every, ..., shape (steps // eval_every,) (NaN without validation).
      best_step: the step whose parameters were returned (``steps`` means the final ones).
      log_ema: the moving averages after each step, log of the EMA of mean e^{(α−1)g} on Q's
        minibatches and of mean e^{αg} on P's, shape (steps, 2). With rate 1 (full batch) each
        row is the batch's own log-mean-exp; below 1 it lags behind it (the EMA is active).
    """

    objective: jax.Array
    validation: jax.Array
    best_step: jax.Array
    log_ema: jax.Array


def objective_standard_error(g_q: ArrayLike, g_p: ArrayLike, order: ArrayLike) -> jax.Array:
    """Delta-method standard error of the empirical J_α(g).

    SE² = (α/(α−1))² V̂[e^{(α−1)g_q}] / (n_Q Â²) + V̂[e^{αg_p}] / (n_P B̂²); the ratios are
    scale-free, so the exponentials are taken relative to their maxima (no overflow).
    """

    def relative_variance(x):
        w = jnp.exp(x - jax.lax.stop_gradient(jnp.max(x)))
        return jnp.var(w, ddof=1) / (jnp.mean(w) ** 2 * x.shape[0])

    ratio = order / (order - 1.0)
    return jnp.sqrt(ratio**2 * relative_variance((order - 1.0) * g_q)
                    + relative_variance(order * g_p))


SELECTIONS = ("penalised", "objective", "bound")


def check_config(config: Any) -> CriticConfig:
    """Validate a :class:`CriticConfig` (ValueError naming the field); returns it normalised."""
    check_instance("config", config, CriticConfig)
    check_config_fields(config, "config")
    if isinstance(config.hidden_dims, str | bytes) or not hasattr(config.hidden_dims, "__iter__"):
        raise ArgumentTypeError(f"config.hidden_dims must be a sequence of layer widths, got "
                                f"{config.hidden_dims!r}")
    hidden = tuple(check_integer("config.hidden_dims", h, minimum=1) for h in config.hidden_dims)
    check_positive("config.critic_bound", config.critic_bound)
    check_positive("config.learning_rate", config.learning_rate)
    check_nonnegative("config.weight_decay", config.weight_decay)
    for name in ("steps", "eval_every"):
        check_integer(f"config.{name}", getattr(config, name), minimum=1)
    check_chunk_size(config.batch_size, "config.batch_size")
    if config.ema_rate is not None:
        check_probability("config.ema_rate", config.ema_rate, open_low=True)
    check_probability("config.validation_fraction", config.validation_fraction, open_high=True)
    check_choice("config.selection", config.selection, SELECTIONS)
    return config._replace(hidden_dims=hidden)


def make_critic(config: CriticConfig) -> Critic:
    """The :class:`Critic` module described by ``config``."""
    return Critic(hidden=tuple(config.hidden_dims), bound=float(config.critic_bound))


def _as_samples(x):
    x = jnp.asarray(x, dtype=jnp.result_type(x, jnp.float32))
    return x[:, None] if x.ndim == 1 else x


@partial(jax.jit, static_argnames="config")
def train_critic(
    key: jax.Array, x_q: ArrayLike, x_p: ArrayLike, order: ArrayLike,
    config: CriticConfig = CriticConfig(), validation: Any = None,
) -> tuple[dict, TrainHistory]:
    """Fit the critic g ≈ log dQ/dP + c by maximising J_α on (x_q, x_p).

    Args:
      key: PRNG key (initialisation and minibatches).
      x_q: training samples of Q, shape (n_q,) for scalar scores or (n_q, d).
      x_p: training samples of P, shape (n_p,) or (n_p, d).
      order: order α > 1 (a traced scalar is fine: vmap over orders).
      config: :class:`CriticConfig` (static).
      validation: optional ``(xv_q, xv_p)`` validation samples for early stopping; by default
        a ``config.validation_fraction`` of (x_q, x_p) is split off (after shuffling).

    Returns:
      ``(variables, history)``: the flax variables (``params`` and the standardiser ``stats``
      fitted on x_q ∪ x_p) and a :class:`TrainHistory`.

    Examples:
      >>> import jax
      >>> k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
      >>> x_q = 1.0 + jax.random.normal(k1, (500,))
      >>> x_p = jax.random.normal(k2, (500,))
      >>> variables, history = train_critic(k3, x_q, x_p, 2.0, CriticConfig(steps=200))
      >>> bool(history.objective[-1] > 0.5)   # D_2 = 2 · 1² / 2 = 1
      True
    """
    config = check_config(config)
    key = typed_key(key)  # a legacy uint32 key draws what jax.random.key draws
    x_q, x_p = jnp.asarray(_as_samples(x_q)), jnp.asarray(_as_samples(x_p))
    dtype = x_q.dtype
    order = jnp.asarray(order, dtype)
    critic = make_critic(config)
    key_init, key_steps, key_q, key_p = jax.random.split(key, 4)
    variables = init_critic(key_init, critic, jnp.concatenate([x_q, x_p]))
    stats = variables["stats"]
    x_q, x_p, held = _validation_split(key_q, key_p, x_q, x_p, config, validation)

    def apply(params, x):
        return critic.apply({"params": params, "stats": stats}, x)

    criterion = _criterion(apply, held, order, config, dtype)
    step, init_carry = _adam_step(apply, x_q, x_p, order, config)
    params, objective, val, best_step, log_ema = _fit_with_early_stopping(
        key_steps, variables["params"], init_carry, step, criterion, config,
        early_stopping=held is not None, dtype=dtype)
    return {"params": params, "stats": stats}, TrainHistory(objective, val, best_step, log_ema)


def _validation_split(key_q, key_p, x_q, x_p, config, validation):
    """The fitting samples and the validation pair (``None``: no early stopping)."""
    if validation is not None:
        return x_q, x_p, (_as_samples(validation[0]), _as_samples(validation[1]))
    n_val_q = int(config.validation_fraction * x_q.shape[0])
    n_val_p = int(config.validation_fraction * x_p.shape[0])
    if n_val_q < 2 or n_val_p < 2:
        return x_q, x_p, None
    x_q = jax.random.permutation(key_q, x_q)
    x_p = jax.random.permutation(key_p, x_p)
    return x_q[n_val_q:], x_p[n_val_p:], (x_q[:n_val_q], x_p[:n_val_p])


def _criterion(apply, held, alpha, config, dtype):
    """The early-stopping criterion of ``config.selection`` on the validation pair."""

    def criterion(params):
        if held is None:
            return jnp.asarray(jnp.nan, dtype)
        g_q, g_p = apply(params, held[0]), apply(params, held[1])
        if config.selection == "bound":
            return held_out_lower_bound(g_q, g_p, alpha, -config.critic_bound, config.critic_bound,
                                        confidence=0.5)
        if config.selection == "penalised":
            return dv_objective(g_q, g_p, alpha) - objective_standard_error(g_q, g_p, alpha)
        return dv_objective(g_q, g_p, alpha)

    return criterion


def _adam_step(apply, x_q, x_p, alpha, config):
    """One AdamW step on the EMA-corrected DV surrogate (full batch or a minibatch per world).

    Returns ``(step, init)``: ``step(carry, key) -> (carry, (J_α, log_ema))`` for ``lax.scan``
    (``log_ema``: the two moving averages after the step, shape (2,)) and ``init(params)`` the
    initial carry (params, optimizer state, EMA state).
    """
    full_batch = config.batch_size is None
    rate = config.ema_rate if config.ema_rate is not None else (1.0 if full_batch else 0.1)
    optimizer = optax.adamw(config.learning_rate, weight_decay=config.weight_decay)

    def loss_fn(params, xb_q, xb_p, ema_state):
        return dv_surrogate_loss(apply(params, xb_q), apply(params, xb_p), alpha, ema_state, rate)

    def step(carry, step_key):
        params, opt_state, ema_state = carry
        if full_batch:
            xb_q, xb_p = x_q, x_p
        else:
            kq, kp = jax.random.split(step_key)
            xb_q = x_q[jax.random.randint(kq, (config.batch_size,), 0, x_q.shape[0])]
            xb_p = x_p[jax.random.randint(kp, (config.batch_size,), 0, x_p.shape[0])]
        (loss, ema_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, xb_q, xb_p, ema_state
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        log_ema = jnp.stack([ema_state.q.log_ema, ema_state.p.log_ema])
        return (params, opt_state, ema_state), (-loss, log_ema)

    def init(params):
        return (params, optimizer.init(params), dv_ema_init(x_q.dtype))

    return step, init


def _fit_with_early_stopping(key, params, init_carry, step, criterion, config, *,
                             early_stopping, dtype):
    """``config.steps`` steps in blocks of ``eval_every``; keeps the parameters with the best
    criterion after a warm-up of steps // 10 (the final ones without early stopping).

    Returns (params, objective per step, criterion per block, best step, log EMAs per step).
    """
    warmup = config.steps // 10

    def block(carry, inputs):
        """Validate the current parameters, keep the best, then take ``eval_every`` steps."""
        train_carry, best = carry
        keys, index = inputs
        value = criterion(train_carry[0])
        improved = (value > best[0]) & (index >= warmup)
        best = jax.tree.map(
            lambda new, old: jnp.where(improved, new, old), (value, index, train_carry[0]), best
        )
        train_carry, (objective, log_ema) = jax.lax.scan(step, train_carry, keys)
        return (train_carry, best), (objective, log_ema, value)

    every = max(1, min(config.eval_every, config.steps))
    n_blocks = config.steps // every
    keys = jax.random.split(key, config.steps)
    best = (jnp.asarray(-jnp.inf, dtype), jnp.asarray(0, jnp.int32), params)
    train_carry = init_carry(params)
    starts = jnp.arange(n_blocks, dtype=jnp.int32) * every
    (train_carry, best), (objective, log_ema, val) = jax.lax.scan(
        block, (train_carry, best), (keys[: n_blocks * every].reshape(n_blocks, every), starts)
    )
    objective = objective.reshape(-1)
    log_ema = log_ema.reshape(-1, 2)
    if config.steps > n_blocks * every:
        train_carry, (rest, rest_ema) = jax.lax.scan(step, train_carry, keys[n_blocks * every:])
        objective = jnp.concatenate([objective, rest])
        log_ema = jnp.concatenate([log_ema, rest_ema])
    params = train_carry[0]
    if early_stopping:
        final = criterion(params)
        improved = final > best[0]
        best_step = jnp.where(improved, config.steps, best[1])
        params = jax.tree.map(lambda new, old: jnp.where(improved, new, old), params, best[2])
    else:
        best_step = jnp.asarray(config.steps, jnp.int32)
    return params, objective, val, best_step, log_ema
