"""Clopper–Pearson limits (jaxaudit.stats.binomial): against scipy's beta quantiles and exact
binomial sums, exact coverage by enumeration, a seeded coverage simulation at 0.95, the float32
core on the safe side and bad input."""

import functools

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from scipy import stats as sp_stats

from jaxaudit import stats


def _all_k(ns):
    k = np.concatenate([np.arange(n + 1.0) for n in ns])
    n = np.concatenate([np.full(n + 1, float(n)) for n in ns])
    return k, n


def _scipy_upper(k, n, c):
    return np.where(k < n, sp_stats.beta.ppf(c, k + 1, np.maximum(n - k, 1)), 1.0)


def _scipy_lower(k, n, c):
    return np.where(k > 0, sp_stats.beta.ppf(1 - c, np.maximum(k, 1), n - k + 1), 0.0)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.999])
def test_limits_match_scipy_beta_quantiles(confidence):
    k, n = _all_k((1, 7, 50, 400))
    up = stats.clopper_pearson_upper(k, n, confidence=confidence)
    lo = stats.clopper_pearson_lower(k, n, confidence=confidence)
    want_up, want_lo = _scipy_upper(k, n, confidence), _scipy_lower(k, n, confidence)
    assert up.dtype == np.float64 and lo.dtype == np.float64
    assert np.all(up >= want_up - 1e-14) and np.all(lo <= want_lo + 1e-14)  # the safe side
    np.testing.assert_allclose(up, want_up, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(lo, want_lo, rtol=1e-9, atol=1e-15)


def test_limits_solve_the_exact_binomial_equations():
    """At p⁺, Pr[Bin(n, p⁺) ≤ k] = 1 − c; at p⁻, Pr[Bin(n, p⁻) ≥ k] = 1 − c (80-digit sums)."""
    mpmath.mp.dps = 80
    c = 0.95
    for n, k in ((10, 0), (10, 3), (37, 12), (200, 199)):
        p_up = mpmath.mpf(float(stats.clopper_pearson_upper(k, n, confidence=c)))
        p_lo = mpmath.mpf(float(stats.clopper_pearson_lower(max(k, 1), n, confidence=c)))
        cdf = sum(mpmath.binomial(n, j) * p_up**j * (1 - p_up) ** (n - j) for j in range(k + 1))
        sf = sum(mpmath.binomial(n, j) * p_lo**j * (1 - p_lo) ** (n - j)
                 for j in range(max(k, 1), n + 1))
        assert float(cdf) == pytest.approx(1 - c, rel=1e-8)
        assert float(sf) == pytest.approx(1 - c, rel=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("n", [12, 30])
def test_exact_coverage_by_enumeration(n):
    """Σ_k Pr[Bin(n, p) = k]·[p ≤ p⁺(k)] ≥ c at every p of a fine grid (and for p⁻ likewise);
    the plug-in k/n + 0 would not cover (the check has power)."""
    c = 0.95
    k = np.arange(n + 1.0)
    up = stats.clopper_pearson_upper(k, n, confidence=c)
    lo = stats.clopper_pearson_lower(k, n, confidence=c)
    worst_plugin = 1.0
    for p in np.linspace(0.001, 0.999, 499):
        pmf = sp_stats.binom.pmf(k, n, p)
        assert np.sum(pmf * (p <= up)) >= c - 1e-12, p
        assert np.sum(pmf * (p >= lo)) >= c - 1e-12, p
        worst_plugin = min(worst_plugin, np.sum(pmf * (p <= k / n)))
    assert worst_plugin < c


def test_coverage_simulation_at_095():
    """20 000 seeded binomial draws per p: the one-sided coverage of p⁺ and of p⁻ at 0.95 is at
    least 0.95 − 3 Monte Carlo standard errors (3·sqrt(0.95·0.05/20000) ≈ 0.0046)."""
    rng = np.random.default_rng(2026)
    reps, n, c = 20_000, 50, 0.95
    se = np.sqrt(c * (1 - c) / reps)
    # the limits depend on k only: one table over 0..n, looked up at every draw
    up_table = stats.clopper_pearson_upper(np.arange(n + 1.0), n, confidence=c)
    lo_table = stats.clopper_pearson_lower(np.arange(n + 1.0), n, confidence=c)
    for p in (0.02, 0.3, 0.7):
        k = rng.binomial(n, p, size=reps)
        up, lo = up_table[k], lo_table[k]
        assert np.mean(p <= up) >= c - 3 * se, p
        assert np.mean(p >= lo) >= c - 3 * se, p


@pytest.mark.parametrize("confidence", [0.975, pytest.param(0.9, marks=pytest.mark.slow),
                                        pytest.param(0.999, marks=pytest.mark.slow)])
def test_float32_core_stays_on_the_safe_side(confidence):
    """Inside jax.jit in float32 the limits keep the margin over float32 betainc's error: never
    on the wrong side of scipy's exact quantile, and within 1e-4 of it up to n = 1000."""
    k, n = _all_k((1, 7, 50, 200, 1000))
    for c in (confidence,):
        up = np.asarray(jax.jit(functools.partial(stats.clopper_pearson_upper, confidence=c))(
            jnp.asarray(k, jnp.float32), jnp.asarray(n, jnp.float32)), np.float64)
        lo = np.asarray(jax.jit(functools.partial(stats.clopper_pearson_lower, confidence=c))(
            jnp.asarray(k, jnp.float32), jnp.asarray(n, jnp.float32)), np.float64)
        want_up, want_lo = _scipy_upper(k, n, c), _scipy_lower(k, n, c)
        assert np.all(up >= want_up), (c, (up - want_up).min())
        assert np.all(lo <= want_lo), (c, (want_lo - lo).min())
        assert np.all(up - want_up <= 1e-4) and np.all(want_lo - lo <= 1e-4)


@pytest.mark.parametrize("call,name", [
    (lambda: stats.clopper_pearson_upper(11, 10, confidence=0.95), "k"),
    (lambda: stats.clopper_pearson_upper(-1, 10, confidence=0.95), "k"),
    (lambda: stats.clopper_pearson_upper(1.5, 10, confidence=0.95), "k"),
    (lambda: stats.clopper_pearson_lower(1, 0, confidence=0.95), "n"),
    (lambda: stats.clopper_pearson_lower(1, np.nan, confidence=0.95), "n"),
    (lambda: stats.clopper_pearson_upper(1, 10, confidence=1.0), "confidence"),
    (lambda: stats.clopper_pearson_upper(1, 10, confidence=np.nan), "confidence"),
    (lambda: stats.clopper_pearson_lower(1, 10, confidence="high"), "confidence"),
    (lambda: stats.clopper_pearson_upper([1, 2], [10, 10, 10], confidence=0.9), "k"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
