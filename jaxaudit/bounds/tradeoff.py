"""Trade-off functions in a form that stays exact in their tails, and the privacy curve of a model.

A mechanism is f-DP when every test between neighbouring datasets with type-I error α has
type-II error at least f(α) (Dong, Roth, Su, arXiv:1905.02383). The attack's true-positive rate
at false-positive rate α is then at most 1 − f(α), and the quantities the bounds report are:

* μ-GDP: f(α) = Φ(−Φ⁻¹(α) − μ), 1 − f(α) = Φ(Φ⁻¹(α) + μ) (Dong, Roth, Su, Eq. 6 with
  Φ⁻¹(1 − α) = −Φ⁻¹(α)).
* a privacy profile: a mechanism that is (ε_j, δ_j)-DP for every ε_j of a grid is f-DP for

      f(α) = max_j max(0, 1 − δ_j − e^{ε_j} α, e^{−ε_j}(1 − δ_j − α)),
      1 − f(α) = min_j min(1, δ_j + e^{ε_j} α, 1 − e^{−ε_j}(1 − δ_j − α))

  (Dong, Roth, Su, Prop. 2.12: the trade-off of a family of (ε, δ) guarantees is the upper
  envelope of theirs). Any subset of a valid profile gives a valid, if looser, f: a grid that
  samples the profile (δ_j an upper bound at ε_j) is a sound representation of the whole curve.
  With ε_j ≥ 0 only, this uses the symmetry f = f⁻¹ of a replace-one or add/remove profile that
  holds both ways (dp_accounting's δ(ε) is the larger of the two directions).

Why the direct forms. Φ(Φ⁻¹(1 − α) − μ) forms 1 − α, which is 1 in float32 for α < 6e−8 and in
float64 for α < 1.1e−16: the trade-off then reads f = 1, a true-positive rate of 0, below the
exact one (an unsound claim about the attack). Φ⁻¹(α) computed from α itself (``ndtri``, exact
down to the smallest normal float) keeps every digit; the TPR 1 − f is computed as Φ(Φ⁻¹(α) + μ)
or δ_j + e^{ε_j} α, never as 1 − f, and f near 1 as 1 − TPR rounded one float *down* (f is a
lower bound on the type-II error, so rounding it up would overstate privacy).

The (ε, δ) profile grid (:func:`profile_grid`) runs from ε = 0, where δ(0) is the largest
advantage TPR − FPR of any attack (Kulynych et al., riskcal, arXiv:2407.06496), to the ε where
δ falls below 1e−15.

References:
  Dong, Roth, Su. "Gaussian Differential Privacy." JRSS-B 2022, arXiv:1905.02383.
  Kulynych, Gomez, Kaissis, du Pin Calmon, Troncoso. "Attack-Aware Noise Calibration for
  Differential Privacy." NeurIPS 2024, arXiv:2407.06496.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri

__all__ = ["gdp_tpr", "gdp_f", "profile_tpr", "profile_grid", "PROFILE_GRID_SIZE"]

#: Points of the ε grid on which a model's privacy profile is sampled (:func:`profile_grid`).
PROFILE_GRID_SIZE = 1601
#: The profile grid ends where δ(ε) ≤ this (or at ε = 256).
PROFILE_DELTA_FLOOR = 1e-15


@jax.custom_jvp
def _down(x):
    """The float just below x for 0 < x (x = 0 and x ≤ 0 stay): a lower bound one ulp down.
    Its derivative is 1 (the tangent passes through; ``nextafter`` has no rule of its own)."""
    return jnp.where(x > 0, jnp.nextafter(x, jnp.zeros_like(x)), x)


@_down.defjvp
def _down_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _down(x), dx


def gdp_tpr(alpha, mu):
    """1 − f_μ(α) = Φ(Φ⁻¹(α) + μ): the largest TPR at FPR α under μ-GDP (jnp, exact in the
    tails: Φ⁻¹ of α itself). 0 at α = 0, 1 at α = 1."""
    return ndtr(ndtri(alpha) + mu)


def gdp_f(alpha, mu):
    """f_μ(α) = Φ(−Φ⁻¹(α) − μ), rounded one float down; where f > 1/2 computed as 1 − TPR, so
    no digit of a small TPR is lost (and f < 1 while the TPR is positive)."""
    z = ndtri(alpha)
    direct = _down(ndtr(-z - mu))
    from_tpr = _down(1.0 - ndtr(z + mu))
    return jnp.where(direct < 0.5, direct, from_tpr)


def profile_tpr(alpha, epsilons, deltas):
    """1 − f(α) of a privacy profile sampled at (ε_j, δ_j): min_j min(1, δ_j + e^{ε_j} α,
    1 − e^{−ε_j}(1 − δ_j − α)); α broadcasts against nothing (any shape), the grid is (G,)."""
    a = jnp.asarray(alpha)[..., None]
    e, d = jnp.asarray(epsilons), jnp.asarray(deltas)
    scaled = jnp.where(a == 0, 0.0, jnp.exp(e) * a)
    lines = jnp.minimum(d + scaled, 1.0 - jnp.exp(-e) * (1.0 - d - a))
    return jnp.clip(jnp.min(lines, axis=-1), 0.0, 1.0)


def profile_grid(delta_of_epsilon: Callable[[np.ndarray], np.ndarray],
                 num: int = PROFILE_GRID_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Sample a privacy profile on [0, ε_max]: ε_max is the first power of two (from 1) with
    δ(ε_max) ≤ 1e−15, at most 256. The grid is the union of ``num`` even points on [0, ε_max]
    and 64 on [0, 1] (where the advantage and large priors live). δ is clipped to [0, 1] and
    made non-increasing from the right (δ(ε) of a mechanism is non-increasing, so the running
    maximum from the right is still an upper bound). Host side (numpy)."""
    eps_max = 1.0
    while eps_max < 256.0 and float(np.max(delta_of_epsilon(np.array([eps_max])))) > PROFILE_DELTA_FLOOR:
        eps_max *= 2.0
    grid = np.unique(np.concatenate([np.linspace(0.0, eps_max, num), np.linspace(0.0, 1.0, 64)]))
    deltas = np.clip(np.asarray(delta_of_epsilon(grid), dtype=np.float64), 0.0, 1.0)
    deltas = np.maximum.accumulate(deltas[::-1])[::-1]
    return grid, deltas
