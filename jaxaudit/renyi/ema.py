"""MINE-style bias-corrected gradients of log E[e^x], with the moving average kept in log space.

The minibatch gradient of lme(x) = log mean e^{x_i} is Σ e^{x_i} ∇x_i / Σ e^{x_i}; its
denominator is a noisy ratio estimate, so the gradient is biased. Belghazi et al. (MINE) replace
the minibatch mean of e^x by an exponential moving average. Here the average is kept as its log,

    log_ema ← logaddexp(log(1 − b) + log_ema, log b + stop_grad(lme(x))),

and the loss uses the surrogate s(x) = exp(lme(x) − stop_grad(log_ema)), whose gradient is
Σ e^{x_i} ∇x_i / (n · ema). All exponents are differences of log-means, so nothing overflows even
when α·g is in the hundreds in float32. Rate b = 1 makes log_ema = lme(x) and recovers the plain
gradient (the right choice for full-batch training).

The transformation is optax-style: ``ema_log_mean_exp(rate)`` returns an ``(init, update)`` pair
over an :class:`EmaLogMeanExpState` NamedTuple.

References:
  Belghazi et al., "Mutual Information Neural Estimation", ICML 2018, §3.2.
  Kim, Alabi, Varshney (2026), arXiv 2605.21938 (EMA for the DV-Rényi critic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit.renyi.objective import log_mean_exp

__all__ = [
    "EmaLogMeanExpState",
    "EmaLogMeanExp",
    "ema_log_mean_exp",
    "ema_surrogate",
    "DvEmaState",
    "dv_ema_init",
    "dv_surrogate_loss",
]


class EmaLogMeanExpState(NamedTuple):
    """State of the log-space moving average.

    Attributes:
      log_ema: log of the moving average of mean(e^x) (float scalar).
      count: number of updates so far (int32 scalar); the first update sets log_ema = lme(x).
    """

    log_ema: jax.Array
    count: jax.Array  # type: ignore[assignment]  # shadows tuple.count; a public field name


class EmaLogMeanExp(NamedTuple):
    """An ``(init, update)`` pair; ``update(x, state) -> (log_ema, new_state)``."""

    init: Callable[..., Any]
    update: Callable[..., Any]


def ema_log_mean_exp(rate: float) -> EmaLogMeanExp:
    """Optax-style moving average of mean(e^x), kept in log space.

    Args:
      rate: b ∈ (0, 1], the weight of the newest minibatch (b = 1: no averaging).

    Returns:
      ``EmaLogMeanExp(init, update)``. ``init()`` gives the empty state; ``update(x, state)``
      returns the updated ``log_ema`` (already a stop-gradient constant) and the new state. The
      first update is initialised with the batch value itself (no bias towards 0).

    Examples:
      >>> import jax.numpy as jnp
      >>> ema = ema_log_mean_exp(0.5)
      >>> log_ema, state = ema.update(jnp.array([0.0]), ema.init())
      >>> log_ema, state = ema.update(jnp.array([jnp.log(3.0)]), state)
      >>> round(float(jnp.exp(log_ema)), 4)   # (1 + 3) / 2
      2.0
    """

    def init(dtype=jnp.float32) -> EmaLogMeanExpState:
        return EmaLogMeanExpState(jnp.zeros((), dtype), jnp.zeros((), jnp.int32))

    def update(x, state: EmaLogMeanExpState):
        b = jnp.asarray(rate, dtype=state.log_ema.dtype)
        batch = jax.lax.stop_gradient(log_mean_exp(x)).astype(state.log_ema.dtype)
        mixed = jnp.logaddexp(jnp.log1p(-b) + state.log_ema, jnp.log(b) + batch)
        # b = 1 gives log(0) + log_ema = -inf in the first term: logaddexp handles it exactly.
        log_ema = jnp.where(state.count == 0, batch, mixed)
        return log_ema, EmaLogMeanExpState(log_ema, state.count + 1)

    return EmaLogMeanExp(init, update)


def ema_surrogate(x: ArrayLike, log_ema: ArrayLike) -> jax.Array:
    """Value lme(x), gradient Σ e^{x_i} ∇x_i / (n · e^{log_ema}) (the corrected gradient).

    Computed as ``sg(lme) + s − sg(s)`` with s = exp(lme(x) − sg(log_ema)), so the forward value
    is the honest log-mean-exp (useful for logging) and the backward pass is MINE's.

    Args:
      x: the exponents of one term (e.g. (α−1)·g on Q samples), shape (n,).
      log_ema: the moving average from :func:`ema_log_mean_exp` (treated as a constant).

    Returns:
      A scalar with value lme(x) and the bias-corrected gradient.
    """
    lme = log_mean_exp(x)
    s = jnp.exp(lme - jax.lax.stop_gradient(log_ema))
    return jax.lax.stop_gradient(lme) + s - jax.lax.stop_gradient(s)


class DvEmaState(NamedTuple):
    """One moving average per term of J_α: ``q`` for lme((α−1)g_q), ``p`` for lme(α g_p)."""

    q: EmaLogMeanExpState
    p: EmaLogMeanExpState


def dv_ema_init(dtype: Any = jnp.float32) -> DvEmaState:
    """Empty :class:`DvEmaState`."""
    ema = ema_log_mean_exp(1.0)
    return DvEmaState(ema.init(dtype), ema.init(dtype))


def dv_surrogate_loss(g_q: ArrayLike, g_p: ArrayLike, order: ArrayLike, state: DvEmaState,
                      rate: float) -> tuple[jax.Array, DvEmaState]:
    """Loss −J_α(g) with the EMA-corrected gradient for both terms.

    Args:
      g_q: critic values on a minibatch from Q.
      g_p: critic values on a minibatch from P.
      order: order α > 1.
      state: the two moving averages.
      rate: EMA rate b ∈ (0, 1] (1: plain gradient of −J_α).

    Returns:
      ``(loss, new_state)``; ``loss`` has the value −J_α(g) on the batch and gradient
      −[α/(α−1) ∇_corr lme((α−1)g_q) − ∇_corr lme(α g_p)]. Use ``jax.value_and_grad(...,
      has_aux=True)``.
    """
    order = jnp.asarray(order, dtype=jnp.result_type(g_q, float))
    ema = ema_log_mean_exp(rate)
    x_q = (order - 1.0) * g_q
    x_p = order * g_p
    log_ema_q, state_q = ema.update(x_q, state.q)
    log_ema_p, state_p = ema.update(x_p, state.p)
    objective = order / (order - 1.0) * ema_surrogate(x_q, log_ema_q) - ema_surrogate(
        x_p, log_ema_p
    )
    return -objective, DvEmaState(state_q, state_p)
