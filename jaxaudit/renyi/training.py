"""Training the DV critic with optax Adam inside one jit-compiled ``lax.scan``.

Maximises J_α(g) = α/(α−1)·lme((α−1)g_q) − lme(α g_p) over the bounded critic on the *training*
split only, with the EMA-corrected gradient of ``jaxaudit.renyi.ema`` (rate 1, the plain gradient,
for full-batch training; 0.1 by default for minibatches). No selection on held-out data happens
here: the number of steps, M and the learning rate are fixed by the config.

References:
  Kim, Alabi, Varshney (2026), arXiv 2605.21938, §2 (SGD with EMA); Belghazi et al. (2018).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxaudit.renyi.critic import Critic, init_critic
from jaxaudit.renyi.ema import dv_ema_init, dv_surrogate_loss

__all__ = ["CriticConfig", "TrainHistory", "make_critic", "train_critic"]


class CriticConfig(NamedTuple):
    """Hyper-parameters of the critic and its training (hashable: usable as a static argument).

    Attributes:
      hidden: hidden-layer widths of the MLP.
      bound: M, the critic's output bound |g| ≤ M.
      steps: number of Adam steps.
      learning_rate: Adam step size.
      batch_size: minibatch size per world; ``None`` trains on the full training split.
      ema_rate: EMA rate b; ``None`` picks 1 (plain gradient) for full batch, 0.1 otherwise.
    """

    hidden: tuple[int, ...] = (32,)
    bound: float = 2.0
    steps: int = 300
    learning_rate: float = 0.02
    batch_size: int | None = None
    ema_rate: float | None = None


class TrainHistory(NamedTuple):
    """Diagnostics of one training run.

    Attributes:
      objective: J_α on each step's (mini)batch of the training split, shape (steps,).
    """

    objective: jax.Array


def make_critic(config: CriticConfig) -> Critic:
    """The :class:`Critic` module described by ``config``."""
    return Critic(hidden=tuple(config.hidden), bound=float(config.bound))


def _as_samples(x):
    x = jnp.asarray(x, dtype=jnp.result_type(x, jnp.float32))
    return x[:, None] if x.ndim == 1 else x


@partial(jax.jit, static_argnames="config")
def train_critic(key, x_q, x_p, alpha, config: CriticConfig = CriticConfig()):
    """Fit the critic g ≈ log dQ/dP + c by maximising J_α on (x_q, x_p).

    Args:
      key: PRNG key (initialisation and minibatches).
      x_q: training samples of Q, shape (n_q,) for scalar scores or (n_q, d).
      x_p: training samples of P, shape (n_p,) or (n_p, d).
      alpha: order α > 1 (a traced scalar is fine: vmap over orders).
      config: :class:`CriticConfig` (static).

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
    x_q, x_p = _as_samples(x_q), _as_samples(x_p)
    alpha = jnp.asarray(alpha, x_q.dtype)
    critic = make_critic(config)
    key_init, key_steps = jax.random.split(key)
    variables = init_critic(key_init, critic, jnp.concatenate([x_q, x_p]))
    stats = variables["stats"]
    full_batch = config.batch_size is None
    rate = config.ema_rate if config.ema_rate is not None else (1.0 if full_batch else 0.1)
    optimizer = optax.adam(config.learning_rate)

    def loss_fn(params, xb_q, xb_p, ema_state):
        g_q = critic.apply({"params": params, "stats": stats}, xb_q)
        g_p = critic.apply({"params": params, "stats": stats}, xb_p)
        return dv_surrogate_loss(g_q, g_p, alpha, ema_state, rate)

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
        return (params, opt_state, ema_state), -loss

    params = variables["params"]
    carry = (params, optimizer.init(params), dv_ema_init(x_q.dtype))
    (params, _, _), objective = jax.lax.scan(
        step, carry, jax.random.split(key_steps, config.steps)
    )
    return {"params": params, "stats": stats}, TrainHistory(objective)
