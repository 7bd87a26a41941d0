"""The DV point estimate does not overshoot the truth on average at audit sizes.

Gaussian scores Q = N(1, 1), P = N(0, 1): D_α = α/2 exactly. The issue's acceptance is
mean ≤ 1.05 × truth over 50 repetitions at 72, 250 and 500 runs per world for α ≤ 2 (the full
table is made by ``benchmarks/renyi_bias.py``). Here, with 64 seeded repetitions, the mean may
exceed 1.05 × truth by at most two standard errors of the mean (measured from the same
repetitions). Reporting the larger of the two directions' held-out values instead of the
direction chosen on the training split (the estimator before this check existed) fails it:
the test also computes that statistic from the same runs and asserts it is flagged.
"""

import jax
import numpy as np
import pytest

from jaxaudit.renyi import renyi_estimator


@pytest.mark.parametrize("n", [72, 250])
def test_mean_point_estimate_at_most_truth_plus_margin(n):
    reps, shift = 64, 1.0
    alphas = np.array([1.5, 2.0], np.float32)
    k_q, k_p, k_est = jax.random.split(jax.random.key(2024 + n), 3)
    x_q = shift + jax.random.normal(k_q, (reps, n))
    x_p = jax.random.normal(k_p, (reps, n))
    fn = jax.jit(jax.vmap(renyi_estimator(), in_axes=(0, 0, 0, None)))
    est = fn(jax.random.split(k_est, reps), x_q, x_p, alphas)
    truth = alphas * shift**2 / 2

    def overshoots(values):
        mean = values.mean(0)
        se = values.std(0, ddof=1) / np.sqrt(reps)
        return mean > 1.05 * truth + 2 * se

    point = np.asarray(est.point)
    assert not overshoots(point).any(), (point.mean(0), truth)
    # it is an estimate with power, not a constant: clearly positive on average
    assert np.all(point.mean(0) > 0.3 * truth), (point.mean(0), truth)
    # the max over directions of the same held-out values is the biased statistic this replaced
    assert overshoots(np.asarray(est.per_direction.point).max(-1)).any()
