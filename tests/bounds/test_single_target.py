"""The single-target success under f-DP: each route against an independent reference (mpmath,
closed forms, an enumerated mechanism), the least of them reported with its route."""

import itertools

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from scipy.stats import norm

from jaxaudit.bounds import (
    PrivacyModel,
    gdp_delta,
    kgk_bound_dp,
    kgk_bound_gdp,
    single_target_success,
    success_tail_fdp,
)
from jaxaudit.bounds.single_target import ROUTES
from jaxaudit.bounds.tradeoff import profile_grid
from jaxaudit.stats.gdp import gdp_delta_core

mp.mp.dps = 60
PHI = mp.ncdf


def mp_gdp_delta(eps, mu):
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return PHI(-eps / mu + mu / 2) - mp.e**eps * PHI(-eps / mu - mu / 2)


def mp_beta(eps, p):
    eps, p = mp.mpf(eps), mp.mpf(p)
    return mp.e**eps * p / (1 + (mp.e**eps - 1) * p)


def mp_fixed_point(mu, k):
    """Root of Φ(−z − μ) = (K − 1)Φ(z); a = Φ(z + μ)."""
    mu = mp.mpf(mu)
    z0 = float(norm.ppf(1.0 / k)) - float(mu) / 2
    z = mp.findroot(lambda z: mp.log(PHI(-z - mu)) - mp.log(k - 1) - mp.log(PHI(z)), z0)
    return PHI(z + mu)


def mp_inverse_phi(x):
    return mp.findroot(lambda z: mp.log(PHI(z)) - mp.log(x), mp.mpf(norm.ppf(float(x))))


def mp_kgk(p, mu):
    return PHI(mp_inverse_phi(mp.mpf(p)) + mu)


def mp_posterior(p, mu, eps_start):
    """inf_ε β(ε, p) + δ_μ(ε): the stationary point by findroot from ours, then the value."""
    def deriv(e):
        return mp.diff(lambda x: mp_beta(x, p) + mp_gdp_delta(x, mu), e)
    eps = mp.findroot(deriv, mp.mpf(max(eps_start, 1e-3)))
    return min(mp_beta(eps, p) + mp_gdp_delta(eps, mu), 1)


GDP_GRID = [(mu, p) for mu in (0.5, 1.0, 2.0) for p in (1e-4, 1e-2, 0.1, 0.5)]


@pytest.mark.parametrize(("mu", "p"), GDP_GRID)
def test_gdp_routes_against_mpmath(mu, p):
    r = single_target_success(p, PrivacyModel(mu=mu))
    assert float(r.kgk_plus) == pytest.approx(float(mp_kgk(p, mu)), rel=1e-10)
    # the posterior route is a value of β + δ at its ε: never below the exact infimum
    at_eps = mp_beta(float(r.epsilon), p) + mp_gdp_delta(float(r.epsilon), mu)
    assert float(r.posterior) == pytest.approx(float(min(at_eps, 1)), rel=1e-10)
    if float(r.posterior) < 1 and float(r.epsilon) > 0:
        assert float(r.posterior) == pytest.approx(float(mp_posterior(p, mu, float(r.epsilon))),
                                                   rel=1e-8)
    assert float(r.bound) == min(float(r.posterior), float(r.kgk_plus))


@pytest.mark.parametrize(("mu", "k"), [(0.5, 2), (1.0, 2), (1.0, 10), (2.0, 10), (1.0, 100),
                                       (3.0, 1000), (0.2, 10**6)])
def test_gdp_fixed_point_against_mpmath_and_never_below_it(mu, k):
    r = single_target_success(1.0 / k, PrivacyModel(mu=mu), exact_match=True)
    exact = float(mp_fixed_point(mu, k))
    assert float(r.fixed_point) >= exact  # an upper bound
    assert float(r.fixed_point) == pytest.approx(exact, rel=1e-9)
    if k == 2:
        assert float(r.fixed_point) == pytest.approx(norm.cdf(mu / 2), rel=1e-9)


def randomized_response_tradeoff(a, k, alpha):
    """The exact trade-off of K-ary randomized response (keep with probability a, else one of
    the K − 1 others uniformly) between secrets y and x: piecewise linear through (0, 1),
    (b, 1 − a), (1 − a, b), (1, 0) with b = (1 − a)/(K − 1)."""
    b = (1 - a) / (k - 1)
    xs, ys = [0.0, b, 1 - a, 1.0], [1.0, 1 - a, b, 0.0]
    return np.interp(alpha, xs, ys)


@pytest.mark.parametrize(("mu", "k"), [(1.0, 2), (1.0, 10), (0.5, 10), (2.0, 100)])
def test_randomized_response_attains_the_fixed_point_and_is_gdp(mu, k):
    a = float(single_target_success(1.0 / k, PrivacyModel(mu=mu), exact_match=True).bound)
    # enumeration: the guess is the output; success = Σ_x Pr[X = x] Pr[M(x) = x] = a
    probs = np.full((k, k), (1 - a) / (k - 1))
    np.fill_diagonal(probs, a)
    assert np.sum(np.diag(probs) / k) == pytest.approx(a, rel=1e-12)
    alpha = np.concatenate([np.logspace(-12, 0, 4000), np.linspace(0, 1, 4001)])
    f_mu = norm.cdf(-norm.ppf(alpha) - mu)
    # μ-GDP: the trade-off of the mechanism is ≥ f_μ everywhere (to rounding; a is at or just
    # above the exact root, by 1e−12 relative)
    assert np.all(randomized_response_tradeoff(a, k, alpha) >= f_mu - 1e-9)
    # and a larger keep probability is not μ-GDP: the fixed point is the highest attainable
    worse = randomized_response_tradeoff(a + 1e-4, k, alpha)
    assert np.any(worse < f_mu - 1e-7)


def mp_fixed_point_general(mu, p):
    """Root of Φ(z) = r Φ(−z − μ), r = p/(1 − p); a = Φ(z + μ)."""
    mu, p = mp.mpf(mu), mp.mpf(p)
    z = mp.findroot(lambda z: mp.log(PHI(-z - mu)) + mp.log(p / (1 - p)) - mp.log(PHI(z)),
                    float(norm.ppf(float(p))))
    return PHI(z + mu)


@pytest.mark.parametrize(("mu", "p"), [(1.0, 0.3), (0.5, 0.7), (2.0, 0.05), (1.0, 0.9)])
def test_fixed_point_for_a_non_uniform_prior_against_mpmath(mu, p):
    r = single_target_success(p, PrivacyModel(mu=mu), exact_match=True)
    exact = float(mp_fixed_point_general(mu, p))
    assert exact <= float(r.fixed_point) <= exact * (1 + 1e-9)
    assert float(r.fixed_point) <= float(r.kgk_plus)  # never above 1 − f(p)


def test_non_uniform_fixed_point_is_above_the_bayes_attack_on_a_gdp_mechanism():
    """Secret X ∈ {0, 1, 2} with prior (0.5, 0.3, 0.2); output N(v_X, I₂) with v_x the corners
    of an equilateral triangle of side μ (every pair is a Gaussian shift of norm μ: μ-GDP). The
    Bayes-optimal guess argmax_x π(x) φ(y − v_x) succeeds with probability computed by Monte
    Carlo (10^6 draws, ± 0.002 at 4 standard errors); the fixed point at p = 0.5 bounds it."""
    mu, prior = 1.5, np.array([0.5, 0.3, 0.2])
    v = mu / np.sqrt(3) * np.array([[np.cos(t), np.sin(t)] for t in (0, 2 * np.pi / 3, 4 * np.pi / 3)])
    rng = np.random.default_rng(np.random.SeedSequence(20261207))
    x = rng.choice(3, size=10**6, p=prior)
    y = v[x] + rng.standard_normal((10**6, 2))
    log_post = np.log(prior) - 0.5 * ((y[:, None, :] - v[None]) ** 2).sum(-1)
    success = np.mean(log_post.argmax(1) == x)
    bound = float(single_target_success(0.5, PrivacyModel(mu=mu), exact_match=True).bound)
    assert success <= bound + 0.002
    assert bound < float(kgk_bound_gdp(0.5, mu))  # and tighter than 1 − f(p)


@pytest.mark.parametrize(("epsilon", "k"), [(0.5, 2), (1.0, 10), (4.0, 100)])
def test_fixed_point_under_pure_dp_is_beta(epsilon, k):
    r = single_target_success(1.0 / k, PrivacyModel(epsilon=epsilon), exact_match=True)
    assert float(r.bound) == pytest.approx(np.exp(epsilon) / (np.exp(epsilon) + k - 1), rel=1e-12)


EPSILONS, PRIORS, DELTAS = (0.5, 1.0, 2.0, 4.0), (1e-6, 1e-3, 0.01, 0.1, 0.5, 0.9), (0.0, 1e-6, 1e-3)


@pytest.mark.parametrize(("epsilon", "p", "delta"), list(itertools.product(EPSILONS, PRIORS, DELTAS)))
def test_approx_dp_grid_against_mpmath(epsilon, p, delta):
    """The 72-point (ε, p, δ) grid: the least of β(ε, p) + δ, KGK+ and the (ε, δ) curve's
    posterior route, each against its mpmath value; never above β + δ or KGK+."""
    r = single_target_success(p, PrivacyModel(epsilon=epsilon, delta=delta))
    beta_delta = float(min(mp_beta(epsilon, p) + delta, 1))
    e, d = mp.mpf(epsilon), mp.mpf(delta)
    kgk = float(min(1, mp.e**e * p + d, 1 - mp.e**(-e) * (1 - d - p)))
    assert float(r.kgk_plus) == pytest.approx(kgk, rel=1e-12)
    assert float(r.bound) <= min(beta_delta, kgk) * (1 + 1e-12)
    if delta == 0:  # pure DP: β is tight (K-ary randomized response attains it)
        assert float(r.bound) == pytest.approx(beta_delta, rel=1e-12)
    # the posterior route is a value of β(ε_j, p) + δ(ε_j) of the (ε, δ) curve
    eps_j = float(r.epsilon)
    d_j = delta + (1 - delta) * max(0.0, np.exp(epsilon) - np.exp(eps_j)) / (1 + np.exp(epsilon))
    assert float(r.posterior) == pytest.approx(float(min(mp_beta(eps_j, p) + d_j, 1)), rel=1e-10)


def test_the_issue_numbers_and_the_route_that_won():
    gdp = PrivacyModel(mu=1.0)
    r = single_target_success(0.5, gdp)
    assert ROUTES[int(r.route)] == "kgk_plus" and float(r.bound) == pytest.approx(0.841345, abs=1e-6)
    r = single_target_success(0.5, gdp, exact_match=True)
    assert ROUTES[int(r.route)] == "fixed_point"
    assert float(r.bound) == pytest.approx(norm.cdf(0.5), rel=1e-10)
    r = single_target_success(0.1, gdp, exact_match=True)
    assert float(r.bound) == pytest.approx(0.329, abs=5e-4)
    assert float(r.posterior) == pytest.approx(0.359, abs=5e-4)
    assert float(r.kgk_plus) == pytest.approx(0.389, abs=5e-4)
    # the ε optimum of μ = 0.5, p = 1e−4 lies beyond the old default grid (which ended at 1.463)
    r = single_target_success(1e-4, PrivacyModel(mu=0.5))
    assert ROUTES[int(r.route)] == "posterior" and 1.7 < float(r.epsilon) < 1.78
    assert float(r.bound) == pytest.approx(0.000643, abs=1e-6)


@pytest.mark.parametrize(("mu", "p"), GDP_GRID)
def test_never_above_the_old_numbers(mu, p):
    with jax.enable_x64(True):
        old_tail = float(success_tail_fdp([p], lambda e: gdp_delta(e, mu), 1))
    new = float(single_target_success(p, PrivacyModel(mu=mu)).bound)
    assert new <= old_tail * (1 + 1e-12)
    assert new <= float(kgk_bound_gdp(p, mu)) * (1 + 1e-12)


@pytest.mark.parametrize(("mu", "p"), [(m, p) for m in (0.5, 1.0, 2.0) for p in (0.5, 0.7, 0.9)])
def test_never_below_the_bayes_attack_on_the_gaussian_mechanism(mu, p):
    """Secret X ∈ {1 (prior p), 0}, output N(μX, 1): the Bayes-optimal guess succeeds with
    max_t p Φ(μ − t) + (1 − p) Φ(t) (exact), and its baseline is p ≥ 1/2: our bound must be
    at least that."""
    t = np.linspace(-10, 10, 200001)
    bayes = np.max(p * norm.cdf(mu - t) + (1 - p) * norm.cdf(t))
    assert float(single_target_success(p, PrivacyModel(mu=mu)).bound) >= bayes - 1e-12


def test_a_sampled_gdp_curve_reproduces_the_closed_forms_from_above():
    def delta(e):
        with jax.enable_x64(True):
            return np.asarray(gdp_delta_core(jnp.asarray(e, jnp.float64), 1.0))

    grid, deltas = profile_grid(delta)
    curve = PrivacyModel(epsilons=grid, deltas=deltas)
    for p in (0.1, 0.01, 0.5, 0.3):
        exact = single_target_success(p, PrivacyModel(mu=1.0), exact_match=True)
        sampled = single_target_success(p, curve, exact_match=True)
        for field in ("posterior", "kgk_plus", "fixed_point"):
            e, s = float(getattr(exact, field)), float(getattr(sampled, field))
            assert e * (1 - 1e-9) <= s <= e * (1 + 1e-4), field


@pytest.mark.slow
def test_inside_jit_vmap_and_grad():
    with jax.enable_x64(True):
        mus, ps = jnp.linspace(0.2, 3.0, 7), jnp.logspace(-5, -0.5, 7)
        f = jax.jit(jax.vmap(lambda m, p: single_target_success(p, PrivacyModel(mu=m)).bound))
        out = np.asarray(f(mus, ps))
        ref = [float(single_target_success(float(p), PrivacyModel(mu=float(m))).bound)
               for m, p in zip(mus, ps, strict=True)]
        np.testing.assert_allclose(out, ref, rtol=1e-12)
        g = jax.grad(lambda m: single_target_success(0.1, PrivacyModel(mu=m),
                                                     exact_match=True).bound)(1.0)
        # d/dμ of the fixed point, by a central difference of the concrete values
        h = 1e-5
        fd = (float(single_target_success(0.1, PrivacyModel(mu=1 + h), exact_match=True).bound)
              - float(single_target_success(0.1, PrivacyModel(mu=1 - h), exact_match=True).bound)) / (2 * h)
        assert float(g) == pytest.approx(fd, rel=1e-4)
    f32 = jax.jit(lambda m, p: single_target_success(p, PrivacyModel(mu=m)).bound)
    assert np.all(np.isfinite(np.asarray(f32(jnp.float32(1.0), jnp.float32(0.01)))))


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="priors"):
        single_target_success(1.5, PrivacyModel(mu=1.0))
    with pytest.raises(ValueError, match="exact_match"):
        single_target_success(0.2, PrivacyModel(mu=1.0), exact_match="yes")
    with pytest.raises(ValueError, match="relation"):
        single_target_success(0.1, PrivacyModel(mu=1.0, relation="add_remove"))
    assert float(kgk_bound_dp(0.1, 1.0)) > 0  # the prior-work entry still stands beside it
