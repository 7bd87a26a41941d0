"""Certified lower bounds: Clopper–Pearson limits against scipy, exact coverage by enumerating
every outcome of small binomials, and a seeded simulation at N = 100 and 1000."""

import functools

import jax
import numpy as np
import pytest
from scipy import stats

from jaxaudit import bmp, mia
from jaxaudit import stats as stats_cp

CONFIDENCE = 0.9


@pytest.mark.slow
def test_clopper_pearson_matches_scipy():
    for n in (1, 7, 50, 1000):
        k = np.arange(n + 1)
        for level in (0.9, 0.975, 0.999):
            got = np.asarray(stats_cp.clopper_pearson_upper(k, n, confidence=level), np.float64)
            want = np.where(k < n, stats.beta.ppf(level, k + 1, np.maximum(n - k, 1)), 1.0)
            assert np.all(got >= want - 1e-12)  # never below the exact limit ...
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-9)  # ... and tight


def _truth_grid():
    """True operating points (α, β) below the diagonal, including the edges of the square."""
    pts = [(a, b) for a in (0.001, 0.02, 0.1, 0.3, 0.5, 0.8) for b in (0.001, 0.05, 0.2, 0.45, 0.7)
           if a + b < 1]
    return np.array(pts)


@pytest.mark.slow
@pytest.mark.parametrize("n0,n1", [(10, 10), (20, 30), (40, 40)])
def test_exact_coverage_by_enumeration(n0, n1):
    """Pr over every (X, Y) ∈ {0..N0} × {0..N1} that ε⁻ ≤ the tightest ε the true operating point
    certifies (the worst case: an optimal attack on a mechanism with exactly those ε), summed
    exactly with binomial weights, is ≥ the confidence at every true (α, β) of the grid."""
    x, y = np.meshgrid(np.arange(n0 + 1.0), np.arange(n1 + 1.0), indexing="ij")
    cert = bmp.certified_epsilons(mia.ErrorCounts(x, np.full_like(x, n0), y, np.full_like(y, n1)),
                                  confidence=CONFIDENCE)
    lo_l, lo_r = np.asarray(cert.epsilon_left, np.float64), np.asarray(cert.epsilon_right, np.float64)
    with np.errstate(divide="ignore"):  # the plug-in reading, for the test's power
        plug_l, plug_r = (np.asarray(e, np.float64) for e in bmp.region.epsilons_from_errors(x / n0, y / n1))
    worst, worst_plug = 1.0, 1.0
    for a, b in _truth_grid():
        true_l = np.log1p(-a) - np.log(b)
        true_r = np.log1p(-b) - np.log(a)
        weight = stats.binom.pmf(x, n0, a) * stats.binom.pmf(y, n1, b)
        covered = (lo_l <= true_l) & (lo_r <= true_r)
        coverage = float(np.sum(weight * covered))
        worst = min(worst, coverage)
        worst_plug = min(worst_plug, float(np.sum(weight * ((plug_l <= true_l)
                                                          & (plug_r <= true_r)))))
        assert coverage >= CONFIDENCE - 1e-12, (a, b, coverage)
        # each side alone is covered at its Bonferroni level at least
        assert np.sum(weight * (lo_l <= true_l)) >= 1 - (1 - CONFIDENCE) / 2 - 1e-12
        assert np.sum(weight * (lo_r <= true_r)) >= 1 - (1 - CONFIDENCE) / 2 - 1e-12
    print(f"N0={n0}, N1={n1}: worst joint coverage {worst:.4f} (claimed {CONFIDENCE}); "
          f"plug-in estimate {worst_plug:.4f}")
    assert worst_plug < CONFIDENCE  # the enumeration does catch a bound that is not certified


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 1000])
def test_simulated_coverage_optimal_attack(n):
    """2000 seeded repetitions per true (ε_L, ε_R) of an optimal attack (the region's corner):
    joint coverage ≥ 0.95 − 3 Monte Carlo standard errors, and the bound is not vacuous."""
    key = jax.random.key(14 + n)
    reps = 2000
    for eps_l, eps_r in ((1.0, 2.0), (0.5, 0.5), (2.0, 1.0)):
        a, b = (float(v) for v in bmp.region.region_corner(eps_l, eps_r))
        key, k1, k2 = jax.random.split(key, 3)
        fp = np.asarray(jax.random.binomial(k1, n, a, (reps,)), float)
        fn = np.asarray(jax.random.binomial(k2, n, b, (reps,)), float)
        cert = bmp.certified_epsilons(mia.ErrorCounts(fp, np.full(reps, n), fn, np.full(reps, n)))
        covered = (np.asarray(cert.epsilon_left) <= eps_l) & (np.asarray(cert.epsilon_right) <= eps_r)
        rate = covered.mean()
        se = np.sqrt(0.95 * 0.05 / reps)
        print(f"N={n} ({eps_l}, {eps_r}): joint coverage {rate:.3f}, median bound "
              f"({np.median(cert.epsilon_left):.2f}, {np.median(cert.epsilon_right):.2f})")
        assert rate >= 0.95 - 3 * se
        if n == 1000:
            assert np.median(cert.epsilon_left) > 0.6 * eps_l and np.median(cert.epsilon_right) > 0.6 * eps_r


def test_edge_counts_and_bad_input():
    c = bmp.certified_epsilons(mia.ErrorCounts(np.array([0.0, 10.0, 5.0]), np.full(3, 10.0),
                                               np.array([0.0, 0.0, 5.0]), np.full(3, 10.0)))
    np.testing.assert_allclose(np.asarray(c.fpr_upper)[1], 1.0)  # X = N0: no information
    assert float(c.epsilon_right[1]) == 0.0 and float(c.epsilon_left[1]) == 0.0
    assert float(c.epsilon_right[2]) == 0.0 and float(c.epsilon_left[2]) == 0.0  # a random guess
    assert float(c.epsilon_right[0]) > 0 and float(c.epsilon_left[0]) > 0
    with pytest.raises(ValueError, match="confidence"):
        bmp.certified_epsilons(mia.ErrorCounts(1, 10, 1, 10), confidence=1.0)
    with pytest.raises(ValueError, match="counts.fp"):
        bmp.certified_epsilons(mia.ErrorCounts(11, 10, 1, 10))
    with pytest.raises(ValueError, match="confidence"):
        stats_cp.clopper_pearson_upper(1, 10, confidence=0.0)
    with pytest.raises(ValueError, match="k must"):
        stats_cp.clopper_pearson_upper(11, 10, confidence=0.95)


def _scipy_upper(k, n, level):
    return np.where(k < n, stats.beta.ppf(level, k + 1, np.maximum(n - k, 1)), 1.0)


def _all_k(ns):
    """Every k of every n, as two flat arrays (one compiled call for all of them)."""
    k = np.concatenate([np.arange(n + 1.0) for n in ns])
    n = np.concatenate([np.full(n + 1, float(n)) for n in ns])
    return k, n


@pytest.mark.slow
def test_clopper_pearson_traced_float64_matches_scipy():
    """Under jax.jit with x64 the core is the eager float64 bisection: scipy's quantile to 1e-6,
    never below it, and equal to the eager figures."""
    k, n = _all_k((1, 7, 50, 1000))
    with jax.enable_x64(True):
        jitted = jax.jit(lambda k, n, level: stats_cp.clopper_pearson_upper(k, n, confidence=level))
        for level in (0.9, 0.975, 0.999):
            got = np.asarray(jitted(k, n, level))
            want = _scipy_upper(k, n, level)
            assert got.dtype == np.float64
            assert np.all(got >= want - 1e-12)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
            np.testing.assert_array_equal(got, np.asarray(stats_cp.clopper_pearson_upper(k, n,
                                                                                   confidence=level)))


@pytest.mark.slow
def test_clopper_pearson_traced_float32_stays_conservative():
    """Under jax.jit in float32 the bisection keeps the margin over float32 betainc's error: the
    limit is never below scipy's exact quantile, and loose by at most 1e-4 up to n = 1000."""
    k, n = _all_k((1, 7, 50, 200, 1000))
    for level in (0.9, 0.975, 0.999):
        jitted = jax.jit(functools.partial(stats_cp.clopper_pearson_upper, confidence=level))
        got = np.asarray(jitted(k, n), np.float64)
        want = _scipy_upper(k, n, level)
        assert np.all(got >= want), (level, (got - want).min())
        assert np.all(got - want <= 1e-4), (level, (got - want).max())


@pytest.mark.slow
@pytest.mark.parametrize("n0,n1", [(30, 20)])
def test_exact_coverage_of_the_jitted_float32_bound(n0, n1):
    """The bound computed inside jax.jit (float32) covers as the eager one: exact enumeration of
    every (X, Y), worst joint coverage over the truth grid >= the confidence; and it is never
    larger (less conservative) than the eager float64 bound beyond float32 round-off."""
    x, y = np.meshgrid(np.arange(n0 + 1.0), np.arange(n1 + 1.0), indexing="ij")
    counts = mia.ErrorCounts(x, np.full_like(x, n0), y, np.full_like(y, n1))
    jitted = jax.jit(lambda c: bmp.certified_epsilons(c, confidence=CONFIDENCE))(
        mia.ErrorCounts(*(np.asarray(c, np.float32) for c in counts)))
    eager = bmp.certified_epsilons(counts, confidence=CONFIDENCE)
    lo_l, lo_r = np.asarray(jitted.epsilon_left, np.float64), np.asarray(jitted.epsilon_right, np.float64)
    assert np.all(lo_l <= np.asarray(eager.epsilon_left) + 1e-6)
    assert np.all(lo_r <= np.asarray(eager.epsilon_right) + 1e-6)
    np.testing.assert_allclose(lo_r, np.asarray(eager.epsilon_right), atol=2e-3)
    for a, b in _truth_grid():
        true_l, true_r = np.log1p(-a) - np.log(b), np.log1p(-b) - np.log(a)
        weight = stats.binom.pmf(x, n0, a) * stats.binom.pmf(y, n1, b)
        coverage = float(np.sum(weight * ((lo_l <= true_l) & (lo_r <= true_r))))
        assert coverage >= CONFIDENCE - 1e-12, (a, b, coverage)
