"""Adversarial edge cases of the bounds: float32 results never below the exact bound, limits at
infinite parameters instead of NaN or overflow, v_γ at its definition's edges against mpmath, and
argument checks that name the argument. Every reference here is independent of the code under
test (mpmath at 50 digits, scipy in float64, closed-form limits)."""

import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.stats

from jaxaudit.bounds import (
    approx_dp_delta,
    approx_dp_tradeoff,
    ball_mass,
    balle_rero_rdp,
    gdp_delta,
    inverse_blowup_dp,
    kgk_bound_dp,
    kgk_bound_gdp,
    poisson_binomial_isf,
    poisson_binomial_tail,
    posterior_success,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
    zipf_prior,
)
from jaxaudit.bounds.count_bound import fdp_epsilon_grid
from jaxaudit.bounds.prior_work import balle_rero_pure, hayes_gaussian, mmc_reject, steinke_p_value
from jaxaudit.bounds.success import gain_ratio

# The mpmath oracles use 50 digits locally (workdps), never by changing the global precision,
# which the code under test (zipf_prior) also uses.


@mpmath.workdps(50)
def _mp_beta(p, eps):
    p, e = mpmath.mpf(float(p)), mpmath.exp(mpmath.mpf(float(eps)))
    return e * p / (1 + (e - 1) * p)


@mpmath.workdps(50)
def _mp_gdp_delta(eps, mu):
    eps, mu = mpmath.mpf(float(eps)), mpmath.mpf(float(mu))
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


# ---------------------------------------------------------------------------------------------
# float32 (JAX's default precision) never rounds an upper bound down
# ---------------------------------------------------------------------------------------------


def test_beta_in_float32_never_below_exact():
    """Default float32: β ≥ the exact value, also for priors a float32 cast would flush to 0.

    p = 2^−128 (one guess at a uniformly random 128-bit key, ≈ 2.9e−39, subnormal in float32)
    at ε = 100 has β = sigmoid(100 − 88.7) ≈ 0.99999; p = 1e−50 at ε = 100 has β ≈ 2.7e−7.
    """
    assert not jax.config.jax_enable_x64
    rng = np.random.default_rng(31)
    cases = [(2.0**-128, 100.0), (1e-50, 100.0), (1e-300, 700.0), (0.3, 0.7), (1 - 1e-16, 0.0)]
    cases += list(zip(10 ** rng.uniform(-44, 0, 60), rng.uniform(0, 100, 60), strict=True))
    for p, eps in cases:
        exact = _mp_beta(p, eps)
        got = float(posterior_success(p, eps))  # Python floats
        assert got >= exact, (p, eps, got, exact)
        assert got <= exact * (1 + 2e-7) + 2e-45, (p, eps, got, exact)
    # float32 arrays: the bound is exact for the float32 value given, rounded up.
    p32 = (10 ** rng.uniform(-44, 0, 200)).astype(np.float32)
    eps32 = rng.uniform(0, 60, 200).astype(np.float32)
    beta = np.asarray(posterior_success(p32, eps32))
    assert beta.dtype == np.float32
    for b, p, e in zip(beta, p32, eps32, strict=True):
        assert float(b) >= _mp_beta(p, e)


def test_direct_count_bound_exact_runs_in_float64():
    """β ≈ 0.99999 for ten p = 2^−128 targets at ε = 100: Pr[S ≥ 10] ≈ 0.9999 > γ, v_γ = 11."""
    p = jnp.full(10, 2.0**-128, dtype=jnp.float32)
    exact_tail = _mp_beta(2.0**-128, 100.0) ** 10
    assert exact_tail > 0.05
    assert int(success_count_bound(p, 100.0, method="recursion")) == 11
    assert success_count_bound(np.full(10, 2.0**-128), 100.0) == 11


def test_closed_form_bounds_in_float32_never_below_float64_reference():
    rng = np.random.default_rng(32)
    kappa = 10 ** rng.uniform(-40, 0, 80)
    eps = rng.uniform(0, 20, 80)
    mu = rng.uniform(0.05, 6, 80)
    norm = scipy.stats.norm
    refs = {
        "kgk_gdp": (kgk_bound_gdp(kappa, mu), norm.cdf(norm.ppf(kappa) + mu)),
        "hayes": (hayes_gaussian(kappa, mu, 1.0), norm.cdf(norm.ppf(kappa) + mu)),
        "kgk_pure": (kgk_bound_dp(kappa, eps),
                     np.minimum(np.minimum(1, np.exp(eps) * kappa), -np.expm1(-eps) + np.exp(-eps) * kappa)),
        "kgk_approx": (kgk_bound_dp(kappa, eps, 1e-9),
                       np.minimum(np.minimum(1, np.exp(eps) * kappa + 1e-9),
                                  1 - np.exp(-eps) * (1 - 1e-9 - kappa))),
        "balle_pure": (balle_rero_pure(kappa, eps), np.minimum(1, np.exp(eps) * kappa)),
    }
    for name, (got, ref) in refs.items():
        got = np.asarray(got)
        assert got.dtype == np.float32, name
        assert (got.astype(np.float64) >= ref * (1 - 1e-12)).all(), name
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-44, err_msg=name)
    # GDP δ(ε) in float32 against mpmath (δ enters every approximate-DP bound additively).
    for e, m in zip(eps[:30], mu[:30], strict=True):
        exact = _mp_gdp_delta(e, m)
        got = float(gdp_delta(float(e), float(m)))
        if exact < 1e-300:  # below float64's range: 0 is off by < 1e−300, negligible even × n
            assert got == 0.0 or got <= 2e-45
            continue
        assert got >= exact and got <= exact * (1 + 2e-7) + 2e-45, (e, m, got, exact)


# ---------------------------------------------------------------------------------------------
# Infinite and huge parameters: the limit, never NaN or an overflow
# ---------------------------------------------------------------------------------------------

INF = math.inf
LIMITS = [
    ("gain_ratio p=1/2 eps=inf", lambda: gain_ratio(0.5, INF), 2.0),  # e^ε/(1 + (e^ε − 1)p) → 1/p
    ("gain_ratio p=1/2 eps=1000", lambda: gain_ratio(0.5, 1000.0), 2.0),
    ("gdp_delta eps=inf", lambda: gdp_delta(INF, 1.0), 0.0),
    ("gdp_delta eps/mu overflow", lambda: gdp_delta(1.0, 1e-300), 0.0),
    ("gdp_delta mu=inf", lambda: gdp_delta(3.0, INF), 1.0),
    ("gdp_delta eps=inf mu=inf", lambda: gdp_delta(INF, INF), 1.0),  # vacuous, not NaN
    ("kgk_pure kappa=0 eps=inf", lambda: kgk_bound_dp(0.0, INF), 0.0),  # e^ε·0 = 0 convention
    ("kgk_approx kappa=0 eps=inf", lambda: kgk_bound_dp(0.0, INF, 0.0), 0.0),
    ("balle_pure kappa=0 eps=inf", lambda: balle_rero_pure(0.0, INF), 0.0),
    ("balle_rdp kappa=0 eps=inf", lambda: balle_rero_rdp(0.0, 2.0, INF), 0.0),
    ("balle_rdp alpha=inf is pure DP", lambda: balle_rero_rdp(0.1, INF, 1.0), 0.1 * math.e),
    ("approx_dp_delta eps0=inf", lambda: approx_dp_delta(0.0, INF, 0.0), 1.0),
    ("approx_dp_tradeoff alpha=0 eps=inf", lambda: approx_dp_tradeoff(0.0, INF, 0.0), 1.0),
    ("steinke eps=1000", lambda: steinke_p_value(10, 5, 3, 1000.0), 1.0),  # Bin(5, 1) ≥ 3
    ("inverse_blowup eps=1000", lambda: inverse_blowup_dp(1000.0)(0.3), 0.0),
    ("inverse_blowup eps=1000 at 1", lambda: inverse_blowup_dp(1000.0)(1.0), 1.0),
]


@pytest.mark.parametrize(("name", "fn", "expected"), LIMITS, ids=[c[0] for c in LIMITS])
def test_limits_not_nan(name, fn, expected):
    got = float(fn())
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-300), name


def test_fdp_grid_with_infinite_epsilon_is_vacuous_there():
    """ε = ∞ on the grid: δ(∞) = 0, β = 1, the bound there is vacuous; the finite ε decides."""
    p = np.full(50, 0.01)
    fn = lambda e: gdp_delta(e, 1.0)
    grid = fdp_epsilon_grid(fn, p.size)
    tail = float(success_tail_fdp(p, fn, 5, epsilons=np.append(grid, INF)))
    assert tail == float(success_tail_fdp(p, fn, 5, epsilons=grid))


# ---------------------------------------------------------------------------------------------
# v_γ at the edges of its definition: smallest v with Pr[PoiBin ≥ v] ≤ γ (inclusive), n + 1
# ---------------------------------------------------------------------------------------------


@mpmath.workdps(50)
def _mp_sf(q):
    pmf = [mpmath.mpf(1)]
    for qi in q:
        qi = mpmath.mpf(float(qi))
        pmf = [a * (1 - qi) + b * qi for a, b in zip([*pmf, 0], [0, *pmf], strict=True)]
    return [mpmath.fsum(pmf[v:]) for v in range(len(pmf))]  # sf[v] = Pr[S ≥ v], v = 0..n


@mpmath.workdps(50)
def _mp_isf(sf, gamma):
    ok = [v for v, s in enumerate(sf) if s <= gamma]
    return ok[0] if ok else len(sf)  # len(sf) = n + 1


@pytest.mark.slow
@pytest.mark.parametrize("method", ["recursion", "fft"])
def test_isf_matches_mpmath_definition_at_edges(method):
    rng = np.random.default_rng(33)
    mixed = np.concatenate([np.zeros(7), np.ones(5), [1e-300, 1 - 1e-16, 0.5],
                            rng.uniform(0, 1, 25)])
    rng.shuffle(mixed)
    cases = [mixed, np.array([0.3]), np.array([0.0]), np.array([1.0]), np.full(10, 0.5)]
    for q in cases:
        sf = _mp_sf(q)
        gammas = [0.5, 0.05, 1e-3, 1e-30, 1e-299, 1e-320]
        # γ just above / below each tail value: v_γ is that v / the next one.
        gammas += [float(s) * f for s in sf[1:] for f in (1 + 1e-7, 1 - 1e-7)
                   if 0 < float(s) * f < 1]
        for gamma in gammas:
            expected = _mp_isf(sf, mpmath.mpf(gamma))
            assert poisson_binomial_isf(q, gamma, method=method) == expected, (q.size, gamma)
            if gamma in (0.05, 1e-30):  # the count-bound wrapper: same answer (ε = 0: β = p)
                assert success_count_bound(q, 0.0, gamma=gamma, method=method) == expected
    # Bin(10, 1/2): Pr[S ≥ 9] = 11/1024 exactly. One ulp below it the exact v_γ is 10; round-off
    # in the tail must not turn that into 9 (it did before the safety margin). At γ = 11/1024
    # itself the tie is resolved conservatively (10); clearly above it, 9.
    for gamma in (np.nextafter(11 / 1024, 0), 11 / 1024):
        assert poisson_binomial_isf(np.full(10, 0.5), gamma, method=method) == 10
        assert success_count_bound(np.full(10, 0.5), 0.0, gamma=gamma, method=method) == 10
    assert poisson_binomial_isf(np.full(10, 0.5), 11 / 1024 * (1 + 1e-7), method=method) == 9
    with jax.enable_x64(True):
        assert int(success_count_bound(jnp.full(10, 0.5), 0.0, 0.0, 11 / 1024,
                                       method="recursion")) == 10
    tail = np.asarray(poisson_binomial_tail(mixed, np.arange(-1, mixed.size + 2), method=method))
    ref = np.array([1.0] + [float(s) for s in _mp_sf(mixed)] + [0.0])
    np.testing.assert_allclose(tail, ref, rtol=1e-11, atol=0)


def test_ball_mass_counts_points_at_distance_exactly_eta():
    """p must upper-bound the success mass: x = 0.4 is within η = 0.3 of z = 0.1 (decimal
    arithmetic), although the float distance is 0.30000000000000004. Mass 0.6, not 0.3."""
    assert ball_mass([0.1, 0.4, 0.41], [0.3, 0.3, 0.4], [0.1], 0.3, "l1").tolist() == [0.6]
    # 3-4-5 triangle scaled by 0.1: the float l2 distance is 0.5000000000000001.
    assert ball_mass([[0.1, 0.2], [0.4, 0.6]], [0.5, 0.5], [[0.1, 0.2]], 0.5, "l2").tolist() == [1.0]


@pytest.mark.parametrize("exponent", [1 - 1e-9, 1 + 1e-9, 0.9])
def test_zipf_normalisation_near_exponent_one(exponent):
    """H_N(s) = ζ(s) − ζ(s, N + 1) cancels near s = 1; against a 60-digit mpmath value."""
    n = 10**6
    with mpmath.workdps(60):
        harmonic = mpmath.zeta(exponent) - mpmath.zeta(exponent, n + 1)
        expected = [float(mpmath.mpf(r) ** -exponent / harmonic) for r in (1, 1000, n)]
    np.testing.assert_allclose(zipf_prior(exponent, n, [1, 1000, n]), expected, rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# Argument checks name the argument
# ---------------------------------------------------------------------------------------------

BAD = [
    (lambda: success_tail_fdp([0.5], lambda e: gdp_delta(e, 1.0), 1, gamma=2.0), "gamma"),
    (lambda: success_count_bound([0.5], [1.0, 2.0]), "epsilon"),
    (lambda: success_tail([0.5], 1.0, 1, [0.0, 0.1]), "delta"),
    (lambda: success_count_bound([0.5], 1.0, gamma=[0.05, 0.1]), "gamma"),
    (lambda: fdp_epsilon_grid(lambda e: gdp_delta(e, 1.0), -5), "n"),
    (lambda: fdp_epsilon_grid(lambda e: gdp_delta(e, 1.0), 5, 2.0), "gamma"),
    (lambda: fdp_epsilon_grid(lambda e: gdp_delta(e, 1.0), 5, 0.05, 0), "num"),
    (lambda: poisson_binomial_tail("abc", 1), "probs"),
    (lambda: steinke_p_value(float("nan"), 5, 3, 1.0), "m"),
    (lambda: steinke_p_value(10, 5, float("nan"), 1.0), "v"),
    (lambda: mmc_reject(10, 5, 3, 2, 0.5), "inverse_blowup"),
    (lambda: mmc_reject(10, 5, -1, 2, inverse_blowup_dp(1.0)), "c_correct"),
]


@pytest.mark.parametrize(("fn", "name"), BAD)
def test_bad_input_names_the_argument(fn, name):
    with pytest.raises(ValueError, match=name):
        fn()


# ---------------------------------------------------------------------------------------------
# Validity of the f-DP bound on a mechanism that attains μ-GDP exactly
# ---------------------------------------------------------------------------------------------


def test_fdp_bound_covers_gaussian_mechanism_attack():
    """n targets with uniform binary secrets, output a_i = μ x_i + N(0, 1) (μ-GDP in each
    person's record, tight); the Bayes attack x̂_i = 1[a_i > μ/2] succeeds w.p. Φ(μ/2) each, so
    L ~ Bin(n, Φ(μ/2)) exactly. The f-DP tail bound must dominate the exact tail at every v,
    and a seeded simulation (3000 runs) of the attack stays below γ at v_γ within 4 MC sd."""
    n, mu, gamma, runs = 60, 0.1, 0.05, 3000
    priors = np.full(n, 0.5)
    fn = lambda e: gdp_delta(e, mu)
    success = scipy.stats.norm.cdf(mu / 2)
    vs = np.arange(n + 2)
    bound = np.asarray(success_tail_fdp(priors, fn, vs))
    exact = scipy.stats.binom.sf(vs - 1, n, success)
    assert (bound >= exact - 1e-12).all()
    v_gamma = success_count_bound_fdp(priors, fn, gamma)
    assert v_gamma <= n  # not vacuous here
    assert scipy.stats.binom.sf(v_gamma - 1, n, success) <= gamma
    rng = np.random.default_rng(2031)
    x = rng.random((runs, n)) < 0.5
    a = mu * x + rng.standard_normal((runs, n))
    count = ((a > mu / 2) == x).sum(1)
    rate = float(np.mean(count >= v_gamma))
    tail = float(scipy.stats.binom.sf(v_gamma - 1, n, success))
    sd = math.sqrt(max(tail * (1 - tail), 1 / runs) / runs)
    assert rate <= gamma + 4 * sd and abs(rate - tail) <= 4 * sd
