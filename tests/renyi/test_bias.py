"""The DV point estimate does not overshoot the truth on average at audit sizes.

Gaussian scores Q = N(1, 1), P = N(0, 1): D_α = α/2 exactly. The issue's acceptance is
mean ≤ 1.05 × truth over 50 repetitions at 72, 250 and 500 runs per world for α ≤ 2 (the full
table is made by ``benchmarks/renyi_bias.py``). Here, with 64 seeded repetitions, the mean may
exceed 1.05 × truth by at most two standard errors of the mean (measured from the same
repetitions). The check has power: the validation J_α that chooses the direction (an in-sample
statistic of a critic selected on it) is computed from the same runs and must be flagged.

The second test reproduces the overshoot seen on MNIST canary scores at ε = 2 (DV 1.0 against
an accountant's 0.25 at α = 2): draws in which an unusual number of Q samples lie outside the
range of the P sample (20–29 of 500 here, 3 typically; the MNIST ε = 2 scores had 23). Before the
point estimate's critic was clipped to the range it spans on the P training samples, the mean
estimate on these draws was 4.8× the true D_2 (and 1.24× at α = 1.25); now it is below the truth.
``clip="range"`` (the earlier clip) is run on the same draws and must be flagged at α = 2.
"""

import jax
import numpy as np
import pytest

from jaxaudit.renyi import renyi_estimator


@pytest.mark.slow
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
    # power: the optimistic in-sample criterion of the same runs is flagged
    assert overshoots(np.asarray(est.per_direction.criterion).max(-1)).any()


@pytest.mark.slow
def test_no_overshoot_on_draws_with_unmatched_tails():
    reps, n, shift = 24, 500, 0.5
    alphas = np.array([1.25, 2.0], np.float32)
    rng = np.random.default_rng(7)
    q = rng.normal(size=(3000, n)) - shift
    p = rng.normal(size=(3000, n))
    outside = (q < p.min(1, keepdims=True)).sum(1) + (q > p.max(1, keepdims=True)).sum(1)
    pick = np.argsort(-outside)[:reps]
    assert outside[pick].min() >= 15 and np.median(outside) <= 5
    keys = jax.random.split(jax.random.key(3), reps)
    x_q, x_p = q[pick].astype(np.float32), p[pick].astype(np.float32)
    truth = alphas * shift**2 / 2

    def mean_and_se(clip):
        fn = jax.jit(jax.vmap(renyi_estimator(clip=clip), in_axes=(0, 0, 0, None)))
        est = fn(keys, x_q, x_p, alphas)
        point = np.asarray(est.point)
        return est, point.mean(0), point.std(0, ddof=1) / np.sqrt(reps)

    est, mean, se = mean_and_se("observed")
    assert np.all(mean <= 1.05 * truth + 2 * se), (mean, truth, se)
    # power: the earlier clip to the range on both samples overshoots on the same draws
    _, mean_range, se_range = mean_and_se("range")
    assert mean_range[1] > 1.05 * truth[1] + 2 * se_range[1], (mean_range, truth, se_range)
    # the reported standard error is finite and positive
    assert np.all(np.isfinite(np.asarray(est.point_se))) and np.all(np.asarray(est.point_se) > 0)
