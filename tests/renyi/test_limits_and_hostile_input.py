"""Limits α = 1 and α = ∞ of the closed forms, the GDP inversion at its ends, and hostile input
(huge bin counts, δ = 0, μ = ∞), each against an independent reference (mpmath, closed forms)."""

import threading
import tracemalloc

import jax
import mpmath
import numpy as np
import pytest
from scipy import stats

from jaxaudit.renyi import (
    binary_renyi,
    binned,
    binned_renyi_lower_bound,
    held_out_lower_bound,
    laplace_renyi,
    theory_radius,
)
from jaxaudit.stats import (
    bernstein_radius,
    clopper_pearson_lower,
    clopper_pearson_upper,
    gdp_epsilon,
    gdp_to_rdp,
    hoeffding_radius,
)

INF = float("inf")

# ----------------------------------------------------------------------------------------------
# binary_renyi at α = 1 and ∞ (was −inf at α = 1)


def _binary_mp(p, q, alpha):
    """D_α(Ber(p)‖Ber(q)) in 50-digit mpmath, α > 1 finite."""
    mpmath.mp.dps = 50
    p, q, a = mpmath.mpf(p), mpmath.mpf(q), mpmath.mpf(alpha)
    return float(mpmath.log(p**a * q ** (1 - a) + (1 - p) ** a * (1 - q) ** (1 - a)) / (a - 1))


@pytest.mark.parametrize("p,q", [(0.7, 0.2), (0.01, 0.3), (0.5, 0.5), (0.999, 0.9), (0.0, 0.4)])
def test_binary_renyi_limits_against_mpmath(p, q):
    mpmath.mp.dps = 50
    P, Q = mpmath.mpf(p), mpmath.mpf(q)
    kl = (P * mpmath.log(P / Q) if p > 0 else 0) + (1 - P) * mpmath.log((1 - P) / (1 - Q))
    ratios = [mpmath.log(P / Q)] if p > 0 else []
    ratios += [mpmath.log((1 - P) / (1 - Q))] if p < 1 else []
    got = binary_renyi(p, q, [1.0, INF])
    assert got[0] == pytest.approx(float(kl), rel=1e-12, abs=1e-15)
    assert got[1] == pytest.approx(float(max(ratios)), rel=1e-12, abs=1e-15)
    # and they are the limits of the general formula (monotone in α, van Erven & Harremoës)
    assert binary_renyi(p, q, 1.0 + 1e-7) == pytest.approx(float(kl), rel=1e-5, abs=1e-9)
    assert _binary_mp(p, q, 1.0 + 1e-7) == pytest.approx(float(kl), rel=1e-5, abs=1e-9)
    assert binary_renyi(p, q, 1e4) <= got[1] + 1e-12
    assert binary_renyi(p, q, 1e4) == pytest.approx(got[1], rel=1e-3, abs=1e-9)
    assert float(binary_renyi(p, q, 3.0)) == pytest.approx(_binary_mp(p, q, 3.0), rel=1e-12,
                                                           abs=1e-15)


def test_binary_renyi_infinite_where_q_misses_p():
    assert binary_renyi(0.3, 0.0, [1.0, 2.0, INF]).tolist() == [INF, INF, INF]
    assert binary_renyi(0.0, 0.0, [1.0, 2.0, INF]).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("kwargs,name", [({"order": 0.5}, "order"), ({"order": np.nan}, "order"),
                                         ({"p": 1.5}, "p"), ({"q": -0.1}, "q")])
def test_binary_renyi_bad_input(kwargs, name):
    args = {"p": 0.5, "q": 0.4, "order": 2.0} | kwargs
    with pytest.raises(ValueError, match=name):
        binary_renyi(**args)


# ----------------------------------------------------------------------------------------------
# laplace_renyi at α = 1 and ∞ (was NaN)


@pytest.mark.parametrize("shift,scale", [(1.0, 1.0), (0.3, 2.0), (-2.5, 0.7)])
def test_laplace_limits_against_mpmath(shift, scale):
    mpmath.mp.dps = 30
    b = mpmath.mpf(scale)
    lq = lambda x: -abs(x - shift) / b - mpmath.log(2 * b)
    lp = lambda x: -abs(x) / b - mpmath.log(2 * b)
    kl = mpmath.quad(lambda x: mpmath.exp(lq(x)) * (lq(x) - lp(x)),
                     [-mpmath.inf, min(0, shift), max(0, shift), mpmath.inf])
    # ess sup of log q/p = |Δ|/b (the triangle inequality, attained beyond the shift)
    grid = np.linspace(-20, 20, 40001)
    sup = max(float(lq(x) - lp(x)) for x in grid[::97])
    got = laplace_renyi(shift, scale, np.array([1.0, INF], np.float32))
    assert float(got[0]) == pytest.approx(float(kl), rel=1e-5)
    assert float(got[1]) == pytest.approx(abs(shift) / scale, rel=1e-6)
    assert float(got[1]) == pytest.approx(sup, rel=1e-3)
    # continuity at both ends (float32)
    near = laplace_renyi(shift, scale, np.array([1.0 + 1e-4, 1e5], np.float32))
    assert float(near[0]) == pytest.approx(float(kl), rel=1e-3)
    assert float(near[1]) == pytest.approx(abs(shift) / scale, rel=1e-3)


@pytest.mark.parametrize("kwargs,name", [({"order": 0.9}, "order"), ({"scale": 0.0}, "scale"),
                                         ({"shift": np.nan}, "shift")])
def test_laplace_bad_input(kwargs, name):
    args = {"shift": 1.0, "scale": 1.0, "order": 2.0} | kwargs
    with pytest.raises(ValueError, match=name):
        laplace_renyi(**args)


# ----------------------------------------------------------------------------------------------
# Radii: δ = 0 and other bad values refused (was ZeroDivisionError)


@pytest.mark.parametrize("call,name", [
    (lambda: hoeffding_radius(100, 1.0, confidence=1.0), "confidence"),
    (lambda: hoeffding_radius(100, 1.0, confidence=-0.5), "confidence"),
    (lambda: hoeffding_radius(100, 1.0), "confidence"),
    (lambda: hoeffding_radius(0, 1.0, confidence=0.95), "n"),
    (lambda: hoeffding_radius(10, -1.0, confidence=0.95), "value_range"),
    (lambda: bernstein_radius(0.1, 100, 1.0, confidence=1.0), "confidence"),
    (lambda: bernstein_radius(0.1, 1, 1.0, confidence=0.95), "n"),
    (lambda: bernstein_radius(-0.1, 10, 1.0, confidence=0.95), "sample_variance"),
    (lambda: theory_radius(1.0, 1.0, 0.1, 0.1, 10, 10, confidence=0.95), "order"),
    (lambda: theory_radius(2.0, 1.0, 0.1, 0.1, 10, 10, confidence=1.0), "confidence"),
    (lambda: held_out_lower_bound([0.1, 0.2], [0.0, 0.1], 2.0, -1.0, 1.0, confidence=1.0), "confidence"),
    (lambda: held_out_lower_bound([0.1, 0.2], [0.0, 0.1], 1.0, -1.0, 1.0, confidence=0.95), "order"),
    (lambda: held_out_lower_bound([0.1, 0.2], [0.0, 0.1], 2.0, 1.0, -1.0, confidence=0.95), "hi"),
    (lambda: held_out_lower_bound([0.1], [0.0, 0.1], 2.0, -1.0, 1.0, confidence=0.95), "g_q"),
    (lambda: held_out_lower_bound([0.1, np.nan], [0.0, 0.1], 2.0, -1.0, 1.0, confidence=0.95), "g_q"),
])
def test_radius_and_bound_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_hoeffding_radius_at_confidence_zero_is_zero():
    assert float(hoeffding_radius(10, 1.0, confidence=0.0)) == 0.0


def test_radius_confidence_is_checked():
    """Confidence 1 (failure probability 0) raised ZeroDivisionError; it is refused, and the
    radius at confidence 0.95 is the closed form."""
    for radius, args in ((hoeffding_radius, (100, 1.0)), (bernstein_radius, (0.1, 100, 1.0))):
        with pytest.raises(ValueError, match="confidence"):
            radius(*args, confidence=1.0)
        with pytest.raises(ValueError, match="confidence"):
            radius(*args, confidence=1.5)
    assert float(hoeffding_radius(100, 1.0, confidence=0.95)) == pytest.approx(
        np.sqrt(np.log(20) / 200), rel=1e-6)


# ----------------------------------------------------------------------------------------------
# gdp_epsilon: μ = ∞ (never returned), δ = 0 (returned 64), against mpmath


def _gdp_epsilon_mp(mu, delta):
    """Root of Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ (Dong, Roth, Su, arXiv 1905.02383), 40
    digits (bisection: δ(ε) decreases in ε)."""
    mpmath.mp.dps = 40
    mu, delta = mpmath.mpf(mu), mpmath.mpf(delta)
    f = lambda e: (mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)
                   - delta)
    if f(0) <= 0:
        return 0.0
    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    while f(hi) > 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return float(lo)


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-5), (2.0, 1e-3), (4.0, 1e-10),
                                      (1.0, 0.3), (0.2, 1e-12), (3.0, 0.5)])
def test_gdp_epsilon_against_mpmath(mu, delta):
    expected = _gdp_epsilon_mp(mu, delta)
    got = gdp_epsilon(mu, delta)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert got <= expected * (1 + 1e-12) + 1e-15   # the lower end of the bracket: never above


def test_gdp_epsilon_ends():
    assert gdp_epsilon(1.0, 0.0) == INF          # was 64: no finite ε has δ = 0
    assert gdp_epsilon(0.0, 0.0) == 0.0          # μ = 0 is perfect privacy
    assert gdp_epsilon(1.0, 1.0) == 0.0
    assert gdp_epsilon(1.0, 0.5) == 0.0          # δ(0) = 2Φ(1/2) − 1 ≈ 0.383 ≤ 0.5
    result = {}
    worker = threading.Thread(target=lambda: result.update(eps=gdp_epsilon(INF, 1e-5)),
                              daemon=True)
    worker.start()
    worker.join(timeout=60)     # the doubling search never ended for μ = ∞
    assert result.get("eps") == INF
    np.testing.assert_array_equal(gdp_epsilon([INF, 0.0], [1e-5, 1e-5]), [INF, 0.0])


@pytest.mark.parametrize("call,name", [(lambda: gdp_epsilon(-1.0, 1e-5), "mu"),
                                       (lambda: gdp_epsilon(np.nan, 1e-5), "mu"),
                                       (lambda: gdp_epsilon(1.0, 1.5), "delta"),
                                       (lambda: gdp_to_rdp(-1.0, 2.0), "mu"),
                                       (lambda: gdp_to_rdp(1.0, 0.5), "order")])
def test_gdp_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_gdp_to_rdp_limits():
    np.testing.assert_allclose(gdp_to_rdp(2.0, [1.0, 1.5, 2.0]), [2.0, 3.0, 4.0])
    assert gdp_to_rdp(0.0, INF) == 0.0 and gdp_to_rdp(1.0, INF) == INF


# ----------------------------------------------------------------------------------------------
# binned_renyi_lower_bound: a huge bin count refused; memory linear in the number of bins


def test_binned_refuses_more_bins_than_scores():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    with pytest.raises(ValueError, match="bins"):
        binned_renyi_lower_bound(jax.random.key(0), a, b, 2.0, bins=10**6)   # grew past 24 GB
    with pytest.raises(ValueError, match="bins"):
        binned_renyi_lower_bound(jax.random.key(0), a, b[:300], 2.0, bins=[2, 301])


def _random_boxes(rng, k):
    q, p = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    heavy = q >= p
    box_q = (np.where(heavy, 0.9 * q, 0.0), np.where(heavy, 1.0, np.minimum(1.1 * q, 1.0)))
    box_p = (np.where(heavy, 0.0, 0.9 * p), np.where(heavy, np.minimum(1.1 * p, 1.0), 1.0))
    return box_q, box_p


def test_dual_grid_memory_is_bounded_in_the_number_of_bins():
    """1,681 grid points × 2,000 bins: the unchunked evaluation held ~300 MB; now < 64 MB, and
    the chunked values equal the ones of separate small calls."""
    rng = np.random.default_rng(1)
    box_q, box_p = _random_boxes(rng, 2000)
    axis = np.linspace(-40.0, 40.0, 41)
    gu, gw = (g.ravel() for g in np.meshgrid(axis, axis, indexing="ij"))
    tracemalloc.start()
    values = binned._dual_log_values(gu, gw, box_q, box_p, 2.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 2**20
    pieces = np.concatenate([binned._dual_log_values(gu[i:i + 7], gw[i:i + 7], box_q, box_p, 2.0)
                             for i in range(0, gu.size, 7)])
    np.testing.assert_array_equal(values, pieces)


def test_water_fill_is_exact_and_linear_in_memory():
    rng = np.random.default_rng(2)
    for k in (2, 3, 7, 40):
        for _ in range(20):
            box_q, _ = _random_boxes(rng, k)
            base = rng.random(k) + 1e-3
            x, s = binned._water_fill(base, *box_q)
            assert x.sum() == pytest.approx(1.0, abs=1e-12)
            np.testing.assert_allclose(x, np.clip(s * base, *box_q))
            # brute force: Σ clip(s·base) at each breakpoint (the k × m evaluation)
            pos = base > 0
            points = np.unique(np.concatenate([box_q[0][pos] / base[pos],
                                               box_q[1][pos] / base[pos]]))
            brute = np.sum(np.clip(points[:, None] * base, *box_q), axis=1)
            np.testing.assert_allclose(binned._clipped_sums(points, base, *box_q), brute,
                                       rtol=1e-12, atol=1e-14)
    box_q, _ = _random_boxes(rng, 3000)
    tracemalloc.start()
    binned._water_fill(rng.random(3000), *box_q)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * 2**20     # the 6000 × 3000 evaluation held 144 MB per array


# ----------------------------------------------------------------------------------------------
# Clopper–Pearson at a confidence


def test_clopper_pearson_confidence():
    k, n = np.array([0, 3, 10]), 10
    up = clopper_pearson_upper(k, n, confidence=0.95)
    lo = clopper_pearson_lower(k, n, confidence=0.95)
    np.testing.assert_allclose(up[:2], stats.beta.ppf(0.95, k[:2] + 1, n - k[:2]), rtol=1e-12)
    np.testing.assert_allclose(lo[1:], stats.beta.ppf(0.05, k[1:], n - k[1:] + 1), rtol=1e-12)
    assert up[2] == 1.0 and lo[0] == 0.0
    for call, name in ((lambda: clopper_pearson_upper(11, 10, confidence=0.95), "k"),
                       (lambda: clopper_pearson_upper(1.5, 10, confidence=0.95), "k"),
                       (lambda: clopper_pearson_upper(1, 0, confidence=0.95), "n"),
                       (lambda: clopper_pearson_upper(1, 10, confidence=1.0), "confidence")):
        with pytest.raises(ValueError, match=name):
            call()
