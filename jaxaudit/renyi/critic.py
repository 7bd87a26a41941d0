"""The bounded MLP critic g: R^d → [−M, M] with input standardisation.

g(x) = M · tanh(h(z)/M), z = (x − mean)/scale, h an MLP. The standardisation statistics are
fitted on the training split only and stored in the ``"stats"`` variable collection next to
``"params"``, so ``critic.apply(variables, x)`` is self-contained and the held-out split never
influences the critic. Boundedness (|g| ≤ M) is what the finite-sample bounds of
``jaxaudit.renyi.confidence`` need.

References:
  Kim, Alabi, Varshney (2026), arXiv 2605.21938 (bounded critic class Γ_Θ); docs/renyi.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

__all__ = ["Critic", "fit_standardiser", "init_critic"]


def fit_standardiser(x: ArrayLike) -> dict:
    """Per-feature mean and scale of training samples ``x`` of shape (n, d).

    Returns:
      ``{"mean": (d,), "scale": (d,)}`` with scale = std (or 1 where the std is 0).
    """
    x = jnp.asarray(x)
    mean = jnp.mean(x, axis=0)
    std = jnp.std(x, axis=0)
    return {"mean": mean, "scale": jnp.where(std > 0, std, jnp.ones_like(std))}


class Critic(nn.Module):
    """Bounded MLP critic g(x) = M · tanh(h((x − mean)/scale) / M).

    Attributes:
      hidden: widths of the hidden layers.
      bound: M > 0, the output bound.
      activation: hidden activation (1-Lipschitz with σ(0) = 0 for the "theory" radius; ReLU
        is positive-homogeneous, which the norm-based Rademacher bound uses).

    Input x has shape (n, d) (or (d,)); output shape (n,) (or ()).
    """

    hidden: Sequence[int] = (32, 32)
    bound: float = 3.0
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        d = x.shape[-1]
        mean = self.variable("stats", "mean", jnp.zeros, (d,), x.dtype).value
        scale = self.variable("stats", "scale", jnp.ones, (d,), x.dtype).value
        h = (x - mean) / scale
        for width in self.hidden:
            h = self.activation(nn.Dense(width)(h))
        h = nn.Dense(1, kernel_init=nn.initializers.zeros)(h)[..., 0]
        return self.bound * jnp.tanh(h / self.bound)


def init_critic(key: jax.Array, critic: Critic, x_train: ArrayLike) -> dict:
    """Initialise parameters and fit the standardiser on ``x_train`` (n, d) (training split only).

    Args:
      key: PRNG key for the weights.
      critic: the module.
      x_train: the pooled training samples of both worlds.

    Returns:
      Flax variables ``{"params": ..., "stats": {"mean", "scale"}}``.
    """
    variables = critic.init(key, jnp.asarray(x_train)[:1])
    stats = fit_standardiser(x_train)
    return {"params": variables["params"], "stats": stats}


def critic_apply(critic: Critic, variables: dict, x: ArrayLike) -> jax.Array:
    """g(x) for samples x of shape (n, d)."""
    return jnp.asarray(critic.apply(variables, x))
