"""The result of a concrete attack next to the adversary-aware bound, and how it is computed.

For n targets with worst-case prior success p_i (the largest prior mass of any success set the
attack could pick) and a mechanism with privacy profile δ(ε):

* successes  L = Σ_i ℓ_i(X_i, z_i), measured;
* baseline   Σ_i p_i, the expected successes of the best attack that ignores the output;
* count_bound v_γ = min{v : inf_ε Pr[PoiBin(β(ε, p)) ≥ v] + n·δ(ε) ≤ γ}, β(ε, p) = sigmoid(ε +
  logit p) (Swanberg et al., f-DP count bound): Pr[L ≥ v_γ] ≤ γ over the mechanism's and the
  secrets' randomness. With worst-case p_i it is valid for approximate DP (no output-dependent
  p, see :mod:`jaxaudit.bounds.count_bound`);
* count_bound_approx_dp: the same with the single (ε, δ) point (looser; what the curve buys);
* single-target bounds inf_ε β(ε, p) + δ(ε) for the most likely and the median secret.

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, "A Unified Framework for Adversary-Aware
  Differential Privacy Bounds", arXiv 2507.08158 (count bound; Fig. 2 single-target gains).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit.accounting.guarantees import PldProfile
from jaxaudit.bounds import success_count_bound, success_count_bound_fdp, success_tail_fdp

__all__ = ["AttackResult", "attack_result"]


class AttackResult(NamedTuple):
    """A measured attack next to its bound (all fields are JAX arrays).

    Attributes:
      successes: measured number of targets attacked successfully (int32).
      count_bound: level-γ count bound v_γ from the privacy profile (int32; n + 1 = vacuous).
      baseline: Σ_i p_i, expected successes without the model/release (float).
      epsilon: ε of the mechanism at ``delta`` (inf: no noise).
      delta: δ of that point.
      gamma: level γ of the bound.
      count_bound_approx_dp: v_γ from the single (ε, δ) point alone (int32).
      hits: (n,) bool, which targets were attacked successfully.
      priors: (n,) float, p_i used in the bound.
      top_prior, top_bound: prior and single-target posterior bound of the most likely value.
      median_prior, median_bound: the same for the median-likely value.
      noise_multiplier: the mechanism's σ (DP-SGD's noise multiplier, or the per-cell σ of the
        marginals).
    """

    successes: jax.Array
    count_bound: jax.Array
    baseline: jax.Array
    epsilon: jax.Array
    delta: jax.Array
    gamma: jax.Array
    count_bound_approx_dp: jax.Array
    hits: jax.Array
    priors: jax.Array
    top_prior: jax.Array
    top_bound: jax.Array
    median_prior: jax.Array
    median_bound: jax.Array
    noise_multiplier: jax.Array


def _single_bound(p: float, profile: PldProfile) -> float:
    if p <= 0.0:
        return 0.0
    return float(success_tail_fdp(np.asarray([p]), profile.delta_of_epsilon, 1,
                                  profile.epsilons))


def attack_result(hits: ArrayLike, priors: ArrayLike, profile: PldProfile, *, gamma: float,
                  top_prior: float, median_prior: float) -> AttackResult:
    """Assemble an :class:`AttackResult` from per-target hits, p_i and a privacy profile."""
    hits = np.asarray(hits, dtype=bool)
    p = np.asarray(priors, dtype=np.float64)
    n = p.size
    bound: int | jax.Array
    if np.isinf(profile.epsilon):
        bound = bound_pt = n + 1
    else:
        bound = success_count_bound_fdp(p, profile.delta_of_epsilon, gamma, profile.epsilons)
        bound_pt = success_count_bound(p, profile.epsilon, profile.delta, gamma)
    with jax.enable_x64(True):
        f = lambda x: jnp.asarray(x, jnp.float64)
        return AttackResult(
            successes=jnp.asarray(int(hits.sum()), jnp.int32),
            count_bound=jnp.asarray(bound, jnp.int32),
            baseline=f(p.sum()),
            epsilon=f(profile.epsilon),
            delta=f(profile.delta),
            gamma=f(gamma),
            count_bound_approx_dp=jnp.asarray(bound_pt, jnp.int32),
            hits=jnp.asarray(hits),
            priors=f(p),
            top_prior=f(top_prior),
            top_bound=f(_single_bound(top_prior, profile)),
            median_prior=f(median_prior),
            median_bound=f(_single_bound(median_prior, profile)),
            noise_multiplier=f(profile.noise_multiplier),
        )
