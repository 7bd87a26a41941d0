"""The host-side driver of ``epsilon_lower_bounds`` (float64 numpy/scipy, nothing compiled)
against independent references: the ROC hull against a brute-force hull and Andrew's monotone
chain (exact counts), the one-run p-value against scipy's binomial over the whole support, the
tail bound and the f-DP statistic against the traceable cores, and the AUC against scipy's
Mann–Whitney U.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.renyi import score_bounds as sb


def _monotone_chain(x, y):
    """Andrew's monotone chain, one point at a time (the implementation the vectorised hull
    replaced): pop b while it lies on or below the chord a–j."""
    hull: list[int] = []
    for j in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (x[b] - x[a]) * (y[j] - y[a]) - (y[b] - y[a]) * (x[j] - x[a]) >= 0:
                hull.pop()
            else:
                break
        hull.append(j)
    return np.asarray(hull)


def _brute_force_hull(x, y):
    """j is a strict upper-hull vertex iff it lies strictly above every chord from a point
    before it to a point after it (points sorted by x, ties by y); the ends always are."""
    n = x.size
    x, y = x.astype(np.int64), y.astype(np.int64)
    keep = [0]
    for j in range(1, n - 1):
        a, b = np.arange(j)[:, None], np.arange(j + 1, n)[None, :]
        cross = (x[b] - x[a]) * (y[j] - y[a]) - (y[b] - y[a]) * (x[j] - x[a])
        if np.all(cross > 0):
            keep.append(j)
    return np.asarray(keep + [n - 1])


def _staircase(in_scores, out_scores):
    thresholds = np.concatenate([np.union1d(in_scores, out_scores), [np.inf]])
    fn = np.searchsorted(np.sort(in_scores), thresholds, side="left")
    tn = np.searchsorted(np.sort(out_scores), thresholds, side="left")
    return fn, tn


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rounding", [None, 1, 0])
def test_hull_is_the_brute_force_hull(seed, rounding):
    """Random Gaussian scores, continuous or rounded (many ties within and across worlds)."""
    rng = np.random.default_rng(seed)
    shift = [0.0, 0.5, 2.0, -1.0, 4.0, 1.0][seed]
    inn, out = rng.normal(shift, 1.0, 25 + seed), rng.normal(0.0, 1.0, 30 - seed)
    if rounding is not None:
        inn, out = np.round(inn, rounding), np.round(out, rounding)
    fn, tn = _staircase(inn, out)
    hull = sb._upper_hull(fn, tn)
    np.testing.assert_array_equal(hull, _brute_force_hull(fn, tn))
    np.testing.assert_array_equal(hull, _monotone_chain(fn, tn))


@pytest.mark.parametrize("seed", range(3))
def test_hull_counts_match_the_monotone_chain_at_scale(seed):
    """10⁴ scores per world (Gaussian, and integer scores with heavy ties): exact equality of
    the (tp, fp) counts with the one-point-at-a-time chain."""
    rng = np.random.default_rng(100 + seed)
    inn, out = rng.normal(1.0, 1.0, 10_000), rng.normal(0.0, 1.0, 9_000)
    if seed == 2:
        inn, out = np.round(inn * 3), np.round(out * 3)
    tp, fp = sb.roc_hull_counts(inn, out)
    fn, tn = _staircase(inn, out)
    idx = _monotone_chain(fn, tn)
    np.testing.assert_array_equal(tp, inn.size - fn[idx])
    np.testing.assert_array_equal(fp, out.size - tn[idx])


def test_hull_of_degenerate_staircases():
    # all scores tied: the staircase is (0, 0) and (n_in, n_out)
    tp, fp = sb.roc_hull_counts(np.zeros(10), np.zeros(12))
    np.testing.assert_array_equal(tp, [10, 0])
    np.testing.assert_array_equal(fp, [12, 0])
    # perfectly separated, and collinear points (interleaved one by one) dropped
    tp, fp = sb.roc_hull_counts(np.arange(10.0) + 100, np.arange(12.0))
    np.testing.assert_array_equal(tp, [10, 10, 0])
    np.testing.assert_array_equal(fp, [12, 0, 0])
    x = np.arange(0, 20, 2.0)
    tp, fp = sb.roc_hull_counts(x + 1, x)
    np.testing.assert_array_equal(tp, _staircase_counts(x + 1, x)[0])


def _staircase_counts(inn, out):
    fn, tn = _staircase(inn, out)
    idx = _brute_force_hull(fn, tn)
    return inn.size - fn[idx], out.size - tn[idx]


def _p_value_scipy(m, g, v, eps, delta):
    """Steinke et al.'s p-value over the whole support 0..v−1 with scipy."""
    q = 1.0 / (1.0 + np.exp(-eps))
    k = np.arange(v)
    upper = np.cumsum(stats.binom.pmf(k, g, q)[::-1])[::-1]   # P[k ≤ X < v]
    window = float(np.max(upper / (v - k))) if v > 0 else 0.0
    return min(stats.binom.sf(v - 1, g, q) + 2 * m * delta * window, 1.0)


@pytest.mark.parametrize("m,g,v,eps,delta", [
    (20, 10, 9, 0.7, 1e-3), (100, 7, 7, 2.0, 1e-2), (40, 12, 1, 1.3, 0.0), (50, 30, 20, 0.0, 0.1),
    (400_000, 150_000, 120_000, 1.2, 1e-6), (400_000, 150_000, 80_000, 0.1, 1e-6),
    (400_000, 150_000, 149_000, 4.0, 1e-6), (2_000_000, 60_000, 45_000, 1.0, 1e-6),
    (2_000_000, 900_000, 899_700, 7.5, 1e-9)])
def test_host_p_value_matches_the_whole_support(m, g, v, eps, delta):
    # log C(g, k) from gammaln values near g log g (about 1.2e7 at g = 9e5) keeps about 1e−9
    # relative accuracy at g ~ 10⁶ (as the traceable core; scipy's pmf is more accurate there)
    p = sb._one_run_p_value_host(float(m), g, v, eps, delta)
    rel = 1e-9 if g < 500_000 else 1e-8
    assert p == pytest.approx(_p_value_scipy(m, g, v, eps, delta), rel=rel, abs=1e-300)


@pytest.mark.parametrize("m,g,v,level,delta", [(400.0, 50, 45, 1e-2, 1e-4),
                                               (400.0, 120, 100, 1e-2, 1e-4),
                                               (4000.0, 2000, 1900, 1e-4, 1e-7),
                                               (4000.0, 30, 30, 0.05, 1e-7)])
def test_host_one_run_epsilon_is_the_root(m, g, v, level, delta):
    """The bisection returns a rejected ε, and 10⁻⁷ above it is not rejected (scipy p-value)."""
    reject = lambda e: sb._one_run_p_value_host(m, g, v, e, delta) <= level
    eps = sb._largest_rejected_host(reject, sb._EPS_CAP)
    assert eps > 0
    assert _p_value_scipy(m, g, v, eps, delta) <= level * (1 + 1e-9)
    assert _p_value_scipy(m, g, v, eps + 1e-7, delta) > level
    # a known rejected point only skips evaluations: the same float
    assert sb._largest_rejected_host(reject, sb._EPS_CAP, known=0.9 * eps) == eps


def test_host_tail_bound_is_the_closed_form_root_raised_by_the_margin():
    g = np.array([10, 50, 120, 2000, 30, 7])
    v = np.array([9, 45, 100, 1900, 30, 3])
    level = 1e-3
    tail = sb._one_run_tail_epsilons_host(g, v, level)
    for t, gi, vi in zip(tail, g, v, strict=True):
        def gap(e, gi=gi, vi=vi):
            return stats.binom.sf(vi - 1, gi, 1 / (1 + np.exp(-e))) - level
        root = optimize.brentq(gap, 0.0, 60.0, xtol=1e-14) if gap(0.0) < 0 else 0.0
        assert root <= t <= root * (1 + 2e-9) + 2e-9


@pytest.mark.slow
def test_host_twins_agree_with_the_traceable_cores():
    """The δ = 0 tail bound, the f-DP statistic and μ, and the one-run ε: host (numpy/scipy)
    against the jitted jnp cores in float64."""
    g = np.array([50, 80, 120, 400, 33])
    v = np.array([45, 70, 100, 300, 33])
    m, level, delta = 900.0, 0.01, 1e-4
    with jax.enable_x64(True):
        core_tail = np.asarray(jax.jit(jax.vmap(
            lambda a, b: sb._one_run_tail_epsilon(a, b, level)))(jnp.asarray(g), jnp.asarray(v)))
        core_eps = np.asarray(jax.jit(jax.vmap(
            lambda a, b: sb._one_run_epsilon(m, a, b, level, delta, 4096)))(
                jnp.asarray(g), jnp.asarray(v)))
        core_mu = np.asarray(jax.jit(jax.vmap(
            lambda a, b: sb._fdp_one_run_mu(m, a, b, level)))(jnp.asarray(g), jnp.asarray(v)))
        mus = np.array([0.3, 1.0, 2.5])[:, None]
        core_obj = np.asarray(jax.jit(jax.vmap(jax.vmap(
            lambda a, b, u: sb._fdp_one_run_objective(m, a, b, level, u), (0, 0, None)),
            (None, None, 0)))(jnp.asarray(g), jnp.asarray(v), jnp.asarray(mus[:, 0])))
    tail = sb._one_run_tail_epsilons_host(g, v, level)
    np.testing.assert_allclose(tail, core_tail, rtol=1e-8, atol=1e-8)
    host_eps = [sb._largest_rejected_host(
        lambda e, a=a, b=b: sb._one_run_p_value_host(m, a, b, e, delta) <= level, sb._EPS_CAP)
        for a, b in zip(g.tolist(), v.tolist(), strict=True)]
    np.testing.assert_allclose(host_eps, core_eps, rtol=1e-12, atol=1e-12)
    for j, (a, b) in enumerate(zip(g.tolist(), v.tolist(), strict=True)):
        mu = sb._fdp_one_run_mu_host(m, g[j:j + 1], v[j:j + 1], level)
        assert mu == pytest.approx(core_mu[j], rel=1e-9, abs=1e-12)
        for k, u in enumerate(mus[:, 0].tolist()):
            assert sb._fdp_one_run_objective_host(m, a, b, level, u) == pytest.approx(
                core_obj[k, j], rel=1e-10, abs=1e-12)
    # the maximum over thresholds, with the one-evaluation skips, is the largest μ
    assert sb._fdp_one_run_mu_host(m, g, v, level) == pytest.approx(core_mu.max(), rel=1e-9)


def test_auc_counts_ties_as_one_half():
    """The integer count against scipy's Mann–Whitney U on heavily tied scores."""
    rng = np.random.default_rng(7)
    inn, out = rng.integers(0, 5, 300).astype(float), rng.integers(0, 4, 250).astype(float)
    u = stats.mannwhitneyu(inn, out, alternative="two-sided").statistic
    assert sb.warn_if_reversed(inn, out, "test") == pytest.approx(u / (300 * 250), rel=1e-14)


def test_gdp_epsilon_host_is_the_jitted_conversion():
    """stats.gdp.gdp_epsilon_host (the host drivers' scalar twin) against gdp_epsilon, limits
    included."""
    from jaxaudit.stats import gdp_epsilon
    from jaxaudit.stats.gdp import gdp_epsilon_host

    for mu in (0.0, 0.05, 0.5, 1.0, 2.0, 4.0, 11.0, np.inf):
        for delta in (0.0, 1e-12, 1e-6, 1e-5, 0.3, 0.9, 1.0):
            want = gdp_epsilon(mu, delta)
            got = gdp_epsilon_host(mu, delta)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-13), (mu, delta)
