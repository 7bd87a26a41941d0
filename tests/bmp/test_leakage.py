"""Sampling leakage: Poisson c = 0, fixed-size uniform c = inf, snowball on a 6-node graph:
exact enumeration vs Monte Carlo."""

import itertools

import jax
import numpy as np
import pytest

from jaxaudit import bmp

# a 2-connected 6-node graph
SENDERS = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 1])
RECEIVERS = np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 4])
LAW = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05])  # random sample size 0..6


def _all_subsets(n):
    return np.array(list(itertools.product([False, True], repeat=n)))


@pytest.mark.slow
def test_poisson_leakage_is_zero_exactly():
    n, q = 5, 0.3
    masks = _all_subsets(n)
    probs = np.prod(np.where(masks, q, 1 - q), axis=1)
    est = bmp.leakage.sampling_leakage(masks, probs)
    np.testing.assert_allclose(est.c_r, 0, atol=1e-12)
    np.testing.assert_allclose(est.c_l, 0, atol=1e-12)
    assert est.exact
    np.testing.assert_array_equal(bmp.leakage.poisson_leakage(q, n).c_r, 0)


@pytest.mark.slow
def test_fixed_size_uniform_leakage_is_infinite():
    n, k = 5, 2
    masks = _all_subsets(n)
    masks = masks[masks.sum(1) == k]
    est = bmp.leakage.sampling_leakage(masks, np.full(len(masks), 1 / len(masks)))
    assert np.all(np.isinf(est.c_r)) and np.all(np.isinf(est.c_l))
    assert np.all(np.isinf(bmp.leakage.uniform_leakage(n, k).c_r))
    # Monte Carlo sees the disjoint supports too
    rng = np.random.default_rng(0)
    draws = masks[rng.integers(len(masks), size=500)]
    assert np.all(np.isinf(bmp.leakage.sampling_leakage(draws).c_r))


@pytest.mark.slow
def test_snowball_enumeration_matches_monte_carlo():
    # random size with full support and teleporting growth: finite, node-dependent leakage
    masks, probs = bmp.leakage.snowball_distribution(SENDERS, RECEIVERS, 6, LAW, teleport=0.3)
    assert abs(probs.sum() - 1) < 1e-12
    exact = bmp.leakage.sampling_leakage(masks, probs)
    assert np.all(np.isfinite(exact.c_r)) and np.all(exact.c_r > 0)
    assert np.ptp(exact.c_r) > 0.05  # node-dependent
    draws = bmp.leakage.snowball_draws(jax.random.key(7), SENDERS, RECEIVERS, 6, LAW, 20000, teleport=0.3)
    # the empirical law of whole samples matches the enumeration (chi-square-free check: 4 sd)
    index = {m.tobytes(): j for j, m in enumerate(masks)}
    freq = np.bincount([index[d.tobytes()] for d in draws], minlength=len(masks)) / len(draws)
    sd = np.sqrt(probs * (1 - probs) / len(draws))
    assert np.all(np.abs(freq - probs) <= 4.5 * sd + 1e-12)
    mc = bmp.leakage.sampling_leakage(draws)
    for c_exact, c_mc, se in ((exact.c_r, mc.c_r, mc.c_r_se), (exact.c_l, mc.c_l, mc.c_l_se)):
        assert np.all(np.isfinite(c_mc))
        # the empirical sup is biased upwards; the truth is within 4 se below, 1 se above + bias
        assert np.all(c_mc >= c_exact - 4 * se), (c_mc, c_exact, se)
        assert np.all(c_mc <= c_exact + 4 * se + 0.1), (c_mc, c_exact, se)


@pytest.mark.slow
def test_fixed_size_snowball_is_infinite_and_statistic_lower_bound():
    masks, probs = bmp.leakage.snowball_distribution(SENDERS, RECEIVERS, 6, 3)
    assert np.all(np.isinf(bmp.leakage.sampling_leakage(masks, probs).c_r))
    masks, probs = bmp.leakage.snowball_distribution(SENDERS, RECEIVERS, 6, LAW, teleport=0.3)
    full = bmp.leakage.sampling_leakage(masks, probs)
    # a statistic of S_{-i} (number of sampled neighbours of i) leaks no more (post-processing)
    adj = np.zeros((6, 6), int)
    adj[SENDERS, RECEIVERS] = adj[RECEIVERS, SENDERS] = 1
    stat = masks.astype(int) @ adj
    part = bmp.leakage.sampling_leakage(masks, probs, statistic=stat)
    assert np.all(part.c_r <= full.c_r + 1e-12) and np.all(part.c_l <= full.c_l + 1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="masks"):
        bmp.leakage.sampling_leakage(np.zeros(5, bool))
    with pytest.raises(ValueError, match="probs"):
        bmp.leakage.sampling_leakage(np.zeros((3, 4), bool), np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="sample_size"):
        bmp.leakage.uniform_leakage(4, 4)


def _brute_force_leakage(masks, probs, statistic):
    """Per node, the laws of the S_{-i} codes by a Python dict (the definition, no sorting)."""
    num_draws, num_nodes = masks.shape
    weights = np.ones(num_draws) if probs is None else probs
    out = np.zeros((2, num_nodes))
    for i in range(num_nodes):
        law = {}
        for k in range(num_draws):
            code = (int(statistic[k, i]),) if statistic is not None else tuple(
                np.delete(masks[k], i).tolist())
            p = law.setdefault(code, [0.0, 0.0])
            p[int(masks[k, i])] += weights[k]
        t0 = sum(v[0] for v in law.values())
        t1 = sum(v[1] for v in law.values())
        for row, (num, den, n_num, n_den) in enumerate(((0, 1, t0, t1), (1, 0, t1, t0))):
            ratios = [np.inf if v[den] == 0 else np.log((v[num] / n_num) / (v[den] / n_den))
                      for v in law.values() if v[num] > 0]
            out[row, i] = max(max(ratios), 0.0)
    return out  # rows c_L, c_R


@pytest.mark.slow
@pytest.mark.parametrize("use_statistic", [False, True])
@pytest.mark.parametrize("use_probs", [False, True])
def test_sampling_leakage_matches_brute_force(use_probs, use_statistic):
    rng = np.random.default_rng(11)
    masks = rng.random((60, 5)) < 0.4
    probs = rng.dirichlet(np.ones(60)) if use_probs else None
    statistic = rng.integers(0, 3, (60, 5)) if use_statistic else None
    est = bmp.leakage.sampling_leakage(masks, probs, statistic=statistic)
    ref = _brute_force_leakage(masks, probs, statistic)
    np.testing.assert_allclose(est.c_l, ref[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(est.c_r, ref[1], rtol=1e-12, atol=1e-12)
    assert est.c_l.dtype == np.float64 and isinstance(est.c_l, np.ndarray)
