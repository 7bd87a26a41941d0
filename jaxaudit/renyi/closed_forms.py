"""Closed-form Rényi divergences (Mironov units) of the Gaussian and Laplace mechanisms.

References:
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476), Propositions 3 and 6 and
  Table II.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

__all__ = ["gaussian_renyi", "laplace_renyi"]


def gaussian_renyi(shift: ArrayLike, sigma: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """D_α(N(Δ, σ² I) ‖ N(0, σ² I)) = α Δ² / (2σ²), Δ the Euclidean norm of the shift.

    Args:
      shift: Δ ≥ 0 (norm of the mean difference).
      sigma: σ > 0.
      alpha: order α > 1.

    Examples:
      >>> float(gaussian_renyi(1.0, 1.0, 2.0))
      1.0
    """
    shift, sigma, alpha = jnp.asarray(shift), jnp.asarray(sigma), jnp.asarray(alpha)
    return alpha * shift**2 / (2.0 * sigma**2)


def laplace_renyi(shift: ArrayLike, scale: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """D_α(Lap(Δ, b) ‖ Lap(0, b)) for the one-dimensional Laplace distribution.

    With t = |Δ|/b (Mironov 2017, Proposition 6 with sensitivity Δ and scale b):

        D_α = 1/(α−1) · log[ α/(2α−1) · e^{(α−1)t} + (α−1)/(2α−1) · e^{−α t} ],

    symmetric in the two arguments. Computed in log space (no overflow for large (α−1)t).

    Args:
      shift: Δ (location difference).
      scale: b > 0.
      alpha: order α > 1.

    Examples:
      >>> round(float(laplace_renyi(1.0, 1.0, 2.0)), 4)   # log(2/3 e + 1/3 e^{-2})
      0.6191
    """
    shift, scale, alpha = jnp.asarray(shift), jnp.asarray(scale), jnp.asarray(alpha)
    t = jnp.abs(shift) / scale
    log_terms = jnp.logaddexp(
        jnp.log(alpha / (2.0 * alpha - 1.0)) + (alpha - 1.0) * t,
        jnp.log((alpha - 1.0) / (2.0 * alpha - 1.0)) - alpha * t,
    )
    return log_terms / (alpha - 1.0)
