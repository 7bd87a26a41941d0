"""The Poisson-binomial engine against independent oracles: mpmath exact convolution (deep
tails), scipy (moderate tails), the binomial closed form (equal p), and path agreement."""

import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.stats
from scipy.special import logsumexp

from jaxaudit.bounds import (
    poisson_binomial_isf,
    poisson_binomial_logpmf,
    poisson_binomial_tail,
)

PATHS = ["recursion", "fft"]


def _mpmath_pmf(q, dps=80):
    """Exact convolution at 80 significant digits (a pure-Python oracle independent of ours)."""
    with mpmath.workdps(dps):
        pmf = [mpmath.mpf(1)]
        for qi in q:
            qi = mpmath.mpf(float(qi))
            one_minus = 1 - qi
            new = [pmf[0] * one_minus]
            new += [pmf[k] * one_minus + pmf[k - 1] * qi for k in range(1, len(pmf))]
            new.append(pmf[-1] * qi)
            pmf = new
        tail, sf = mpmath.mpf(0), []
        for x in reversed(pmf):
            tail += x
            sf.append(tail)
        sf.reverse()
        log = lambda xs: np.array([float(mpmath.log(x)) if x > 0 else -np.inf for x in xs])
        return log(pmf), log(sf)


@pytest.fixture(scope="module")
def oracle_cases():
    """Two random cases whose tails reach below 1e−250 (seeded)."""
    rng = np.random.default_rng(20260101)
    cases = []
    for n, power in ((300, 3.0), (120, 1.0)):
        q = rng.uniform(0.0, 1.0, n) ** power  # many small p: tails far below 1e−250
        cases.append((q, *_mpmath_pmf(q)))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("method", PATHS)
def test_matches_mpmath_in_deep_tails(oracle_cases, method):
    deepest = 0.0
    for q, ref_logpmf, ref_logsf in oracle_cases:
        n = q.size
        logsf = np.asarray(poisson_binomial_tail(q, np.arange(n + 1), log=True, method=method))
        keep = ref_logsf > math.log(1e-300) * 10  # far beyond 1e−250 (log space)
        deepest = min(deepest, ref_logsf[keep].min())
        np.testing.assert_allclose(np.expm1(logsf[keep] - ref_logsf[keep]), 0.0, atol=1e-10)
        logpmf = np.asarray(poisson_binomial_logpmf(q, method=method))
        keep = np.isfinite(ref_logpmf)
        np.testing.assert_allclose(np.expm1(logpmf[keep] - ref_logpmf[keep]), 0.0, atol=1e-10)
    assert deepest < math.log(1e-250)


@pytest.mark.slow
@pytest.mark.parametrize("method", PATHS)
def test_moderate_tails_match_scipy(method):
    rng = np.random.default_rng(7)
    q = rng.uniform(0.0, 0.5, 50)
    vs = np.arange(51)
    ref = scipy.stats.poisson_binom.pmf(np.arange(51), q)
    ref_sf = np.cumsum(ref[::-1])[::-1]
    ours = np.asarray(poisson_binomial_tail(q, vs, method=method))
    moderate = ref_sf > 1e-10
    np.testing.assert_allclose(ours[moderate], ref_sf[moderate], rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("method", PATHS)
def test_equal_p_is_binomial(method):
    n, p = 1000, 0.03
    logpmf_ref = scipy.stats.binom.logpmf(np.arange(n + 1), n, p)
    logsf_ref = np.array([logsumexp(logpmf_ref[v:]) for v in range(n + 1)])
    vs = np.array([0, 1, 30, 80, 200, 600, 1000])
    ours = np.asarray(poisson_binomial_tail(np.full(n, p), vs, log=True, method=method))
    np.testing.assert_allclose(np.expm1(ours - logsf_ref[vs]), 0.0, atol=1e-9)
    assert ours[-1] == pytest.approx(n * math.log(p), rel=1e-12)  # Pr[S = n] = p^n ≈ 1e−1523


@pytest.mark.slow
def test_paths_agree_at_moderately_large_n():
    """n = 4096 (recursion ≈ 1 s here): every tail from the recursion equals the tilted FFT."""
    rng = np.random.default_rng(11)
    q = rng.uniform(0.0, 0.2, 4096)
    vs = np.arange(0, 4097, 7)
    rec = np.asarray(poisson_binomial_tail(q, vs, log=True, method="recursion"))
    fft = np.asarray(poisson_binomial_tail(q, vs, log=True, method="fft"))
    finite = np.isfinite(rec)
    assert np.array_equal(finite, np.isfinite(fft))
    np.testing.assert_allclose(np.expm1(fft[finite] - rec[finite]), 0.0, atol=1e-9)
    for gamma in (0.05, 1e-12, 1e-200):
        assert poisson_binomial_isf(q, gamma, method="fft") == poisson_binomial_isf(
            q, gamma, method="recursion")


@pytest.mark.slow
def test_large_n_tilts_consistent():
    """n = 10^5: a tail read from a shared tilt equals the tail from a tilt centred on it."""
    rng = np.random.default_rng(3)
    q = rng.uniform(0.0, 0.2, 100_000)
    mean, sd = q.sum(), math.sqrt((q * (1 - q)).sum())
    vs = np.ceil(mean + sd * np.array([10.0, 10.5, 11.0])).astype(int)
    together = np.asarray(poisson_binomial_tail(q, vs, log=True))
    alone = np.array([float(poisson_binomial_tail(q, v, log=True)) for v in vs])
    np.testing.assert_allclose(np.expm1(together - alone), 0.0, atol=1e-9)
    # Gaussian sanity of the scale: 10 sd above the mean has log tail ≈ −50 (skewness shifts it).
    assert -70 < together[0] < -40
    v = poisson_binomial_isf(q, 1e-20)
    assert float(poisson_binomial_tail(q, v)) <= 1e-20 < float(poisson_binomial_tail(q, v - 1))


def test_edges_and_outputs():
    q = [0.0, 1.0, 0.3, 1.0]
    tail = np.asarray(poisson_binomial_tail(q, [-3, 0, 1, 2, 3, 4, 5]))
    np.testing.assert_allclose(tail, [1, 1, 1, 1, 0.3, 0, 0], atol=1e-15)
    assert float(poisson_binomial_tail(q, 5, log=True)) == -np.inf
    pmf = np.exp(np.asarray(poisson_binomial_logpmf(q)))
    np.testing.assert_allclose(pmf, [0, 0, 0.7, 0.3, 0], atol=1e-15)
    assert poisson_binomial_isf(q, 0.05) == 4 and poisson_binomial_isf([1.0] * 3, 0.05) == 4
    assert poisson_binomial_isf([0.0] * 3, 0.05) == 1


@pytest.mark.slow
def test_non_negative_and_float32_inputs():
    q32 = np.random.default_rng(5).uniform(0, 1, 3000).astype(np.float32)
    for method in PATHS:
        tail = np.asarray(poisson_binomial_tail(q32, np.arange(3001), method=method))
        assert tail.dtype == np.float64 and (tail >= 0).all() and (tail <= 1).all()
        assert (np.diff(tail) <= 1e-15).all()


def test_jit_and_vmap_of_exact_core():
    probs = jnp.array([[0.5] * 8, [0.25] * 8])
    with jax.enable_x64(True):
        v = jax.jit(jax.vmap(lambda q: poisson_binomial_isf(q, 0.05, method="recursion")))(probs)
    assert v.tolist() == [
        int(scipy.stats.binom.isf(0.05, 8, 0.5)) + 1, int(scipy.stats.binom.isf(0.05, 8, 0.25)) + 1]


@pytest.mark.parametrize("bad", [[0.5, 1.2], [-0.1], [0.2, float("nan")]])
def test_bad_probs(bad):
    with pytest.raises(ValueError, match="probs"):
        poisson_binomial_tail(bad, 1)


def test_bad_arguments():
    with pytest.raises(ValueError, match="method"):
        poisson_binomial_tail([0.5], 1, method="dft")
    with pytest.raises(ValueError, match="v"):
        poisson_binomial_tail([0.5], float("nan"))
    with pytest.raises(ValueError, match="gamma"):
        poisson_binomial_isf([0.5], 1.5)
    with pytest.raises(ValueError, match="probs"):
        poisson_binomial_logpmf(np.ones((2, 2)) * 0.5)
