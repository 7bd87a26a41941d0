"""Count and tail bounds: the reference values of docs/bounds.md, special cases of prior work, the dominance theorem by
exact enumeration, a coverage simulation, f-DP vs (ε, δ) consistency, and argument checks."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from jaxaudit.bounds import (
    aggregate_gain,
    approx_dp_delta,
    gdp_delta,
    posterior_success,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.count_bound import fdp_epsilon_grid
from jaxaudit.bounds.prior_work import steinke_p_value

UNIFORM_ANCHORS = [(2, 1.0, 755), (10, 1.0, 255), (100, 1.0, 36),
                   (2, 4.0, 990), (10, 4.0, 877), (100, 4.0, 381)]


@pytest.mark.slow
@pytest.mark.parametrize(("alphabet_size", "eps", "expected"), UNIFORM_ANCHORS)
def test_uniform_k_anchors(alphabet_size, eps, expected):
    priors = np.full(1000, 1.0 / alphabet_size)
    assert success_count_bound(priors, eps, gamma=0.05) == expected
    assert success_count_bound(priors, eps, method="fft") == expected
    # The uniform-K prior gives a binomial: the quantile from scipy's binomial agrees.
    beta = math.exp(eps) / (math.exp(eps) + alphabet_size - 1)
    assert int(scipy.stats.binom.isf(0.05, 1000, beta)) + 1 == expected


def test_membership_half_is_steinke_one_run_bound():
    """π = 1/2, r guesses: PoiBin(β) = Bin(r, e^ε/(1 + e^ε)), Steinke et al.'s pure-DP bound."""
    for eps, v in ((1.0, 80), (0.5, 70), (2.0, 95)):
        ours = float(success_tail(np.full(100, 0.5), eps, v))
        assert ours == pytest.approx(steinke_p_value(1000, 100, v, eps), rel=1e-10)


def test_approximate_dp_adds_n_delta():
    priors = np.linspace(0.01, 0.3, 200)
    vs = np.array([10, 40, 60, 100])
    pure = np.asarray(success_tail(priors, 1.0, vs))
    approx = np.asarray(success_tail(priors, 1.0, vs, delta=1e-5))
    np.testing.assert_allclose(approx, np.minimum(1.0, pure + 200 * 1e-5), rtol=1e-12)
    v_pure = success_count_bound(priors, 1.0, gamma=0.05)
    v_approx = success_count_bound(priors, 1.0, delta=1e-5, gamma=0.05)
    assert v_approx == success_count_bound(priors, 1.0, gamma=0.05 - 200 * 1e-5) >= v_pure
    assert success_count_bound(priors, 1.0, delta=1e-3, gamma=0.05) == 201  # n δ ≥ γ: vacuous


def test_vacuous_is_n_plus_one_never_zero():
    assert success_count_bound([0.9] * 5, 5.0, gamma=0.05) == 6
    assert success_count_bound([0.0] * 5, 5.0, gamma=0.05) == 1  # abstentions: 0 successes


@pytest.mark.slow
def test_count_bound_monotone_in_eps_and_prior():
    p = np.linspace(0.001, 0.2, 300)
    eps_values = [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]
    vs = [success_count_bound(p, e) for e in eps_values]
    assert vs == sorted(vs)
    assert success_count_bound(p * 1.2, 1.0) >= success_count_bound(p, 1.0)


def test_exact_jit_version_matches_and_vmaps():
    p = np.linspace(0.001, 0.4, 257)
    eps = jnp.array([0.0, 0.5, 1.0, 3.0])
    with jax.enable_x64(True):
        vs = jax.vmap(lambda q, e, d, g: success_count_bound(q, e, d, g, method="recursion"),
                      (None, 0, None, None))(jnp.asarray(p), eps, 1e-5, 0.05)
    host = [success_count_bound(p, float(e), 1e-5, 0.05) for e in eps]
    assert vs.tolist() == host


@pytest.mark.slow
def test_fdp_bound_never_exceeds_approx_bound_at_grid_points():
    p = np.full(300, 0.02)
    mu = 1.0
    delta_fn = lambda e: gdp_delta(e, mu)
    grid = fdp_epsilon_grid(delta_fn, p.size, 0.05, num=12)
    vs = np.array([10, 20, 40, 80])
    fdp_tail = np.asarray(success_tail_fdp(p, delta_fn, vs, epsilons=grid))
    fdp_count = success_count_bound_fdp(p, delta_fn, 0.05, epsilons=grid)
    with jax.enable_x64(True):
        deltas = np.asarray(gdp_delta(jnp.asarray(grid), mu))
    for e, d in zip(grid, deltas, strict=True):
        assert (fdp_tail <= np.asarray(success_tail(p, e, vs, d)) + 1e-15).all()
        if p.size * d < 0.05:
            assert fdp_count <= success_count_bound(p, e, d, 0.05)
    assert fdp_count == success_count_bound_fdp(p, delta_fn, 0.05, epsilons=grid, method="fft")
    # The grid reaches exactly far enough: ε_max is the smallest ε with n δ(ε) ≤ γ/100, and it
    # lies below the Gaussian-tail estimate μ²/2 + μ sqrt(2 ln(100 n/γ)).
    with jax.enable_x64(True):
        assert p.size * float(gdp_delta(grid[-1], mu)) <= 0.05 / 100
        assert p.size * float(gdp_delta(grid[-1] - 1e-4, mu)) > 0.05 / 100
    assert grid[-1] <= 0.5 + math.sqrt(2 * math.log(100 * 300 / 0.05))


def test_fdp_of_an_approx_dp_profile_matches_approx_bound():
    """For the (ε₀, δ₀) trade-off, the f-DP minimum is attained at ε₀ on a grid containing it."""
    p = np.full(100, 0.1)
    delta_fn = lambda e: approx_dp_delta(e, 1.0, 1e-6)
    grid = np.linspace(0.0, 3.0, 31)
    assert success_count_bound_fdp(p, delta_fn, 0.05, epsilons=grid) == success_count_bound(
        p, 1.0, 1e-6, 0.05)


# ---------------------------------------------------------------------------------------------
# The dominance theorem, by exact enumeration
# ---------------------------------------------------------------------------------------------

PRIORS = np.array([0.1, 0.3, 0.5, 0.6, 0.8, 0.95])
SECRETS = np.array(list(itertools.product([0, 1], repeat=6)))  # (64, 6)
OUTPUTS = np.arange(-10, 17)


def _posterior_over_secrets(a, eps):
    """Noisy count a = Σx + Z, Z two-sided geometric Pr[Z = z] ∝ e^{−ε|z|} (ε-DP)."""
    prior = np.prod(np.where(SECRETS == 1, PRIORS, 1 - PRIORS), axis=1)
    lik = np.exp(-eps * np.abs(a - SECRETS.sum(1)))
    post = prior * lik
    return post / post.sum()


def _tail_given_output(post, guess):
    successes = (SECRETS == guess).sum(1)
    return np.array([post[successes >= v].sum() for v in range(8)])


def _violations(eps_mechanism, eps_bound, key):
    worst = -np.inf
    for a in OUTPUTS:
        post = _posterior_over_secrets(a, eps_mechanism)
        marg = post @ SECRETS
        guesses = [(marg >= 0.5).astype(int)]  # MAP adversary
        rnd = jax.random.bernoulli(jax.random.fold_in(key, int(a) + 100), 0.5, (3, 6))
        guesses += list(np.asarray(rnd, dtype=int))  # three random adversaries per output
        for z in guesses:
            p = np.where(z == 1, PRIORS, 1 - PRIORS)
            bound = np.asarray(success_tail(p, eps_bound, np.arange(8), method="recursion"))
            worst = max(worst, float(np.max(_tail_given_output(post, z) - bound)))
    return worst


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_dominance_theorem_exact_enumeration(eps):
    key = jax.random.key(2026)
    assert _violations(eps, eps, key) <= 1e-12
    # Power check: the same enumeration catches a bound computed with too small an ε.
    assert _violations(eps, eps / 4, key) > 1e-3


def test_single_target_randomized_response_attains_beta():
    """K-ary randomized response: the MAP posterior success equals β exactly (tightness)."""
    for alphabet_size, eps in ((2, 1.0), (10, 2.0), (100, 4.0)):
        keep = math.exp(eps) / (math.exp(eps) + alphabet_size - 1)
        with jax.enable_x64(True):
            beta = float(posterior_success(1.0 / alphabet_size, eps))
        assert beta == pytest.approx(keep, rel=1e-12)


@pytest.mark.slow
def test_coverage_of_count_bound_by_simulation():
    """K-ary RR on n = 1000 targets, 4000 seeded runs: Pr[L ≥ v_γ] ≤ γ within 4 MC sd."""
    n, alphabet_size, eps, gamma, runs = 1000, 10, 1.0, 0.05, 4000
    v_gamma = success_count_bound(np.full(n, 1 / alphabet_size), eps, gamma=gamma)
    keep = math.exp(eps) / (math.exp(eps) + alphabet_size - 1)
    k_secret, k_keep, k_other = jax.random.split(jax.random.key(7), 3)
    secret = jax.random.randint(k_secret, (runs, n), 0, alphabet_size)
    truthful = jax.random.bernoulli(k_keep, keep, (runs, n))
    shift = jax.random.randint(k_other, (runs, n), 1, alphabet_size)
    output = jnp.where(truthful, secret, (secret + shift) % alphabet_size)
    successes = np.asarray((output == secret).sum(1))  # MAP guess = the output
    rate = float(np.mean(successes >= v_gamma))
    exact = float(scipy.stats.binom.sf(v_gamma - 1, n, keep))
    sd = math.sqrt(exact * (1 - exact) / runs)
    assert rate <= gamma + 4 * sd
    assert abs(rate - exact) <= 4 * sd  # and the simulation agrees with the exact tail


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"priors": [0.5, 1.5]}, "priors"),
    ({"priors": [0.5, float("nan")]}, "priors"),
    ({"epsilon": -0.1}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"delta": -1e-9}, "delta"),
    ({"gamma": 0.0}, "gamma"),
    ({"gamma": 1.0}, "gamma"),
])
def test_bad_input(kwargs, name):
    args = {"priors": [0.1, 0.2], "epsilon": 1.0, "delta": 0.0, "gamma": 0.05} | kwargs
    with pytest.raises(ValueError, match=name):
        success_count_bound(**args)
    if name != "gamma":
        args.pop("gamma")
        with pytest.raises(ValueError, match=name):
            success_tail(v=1, **args)


def test_bad_fdp_input():
    with pytest.raises(ValueError, match="delta_of_epsilon"):
        success_count_bound_fdp([0.1], 0.5)
    with pytest.raises(ValueError, match="epsilons"):
        success_count_bound_fdp([0.1], lambda e: gdp_delta(e, 1.0), epsilons=[-1.0, 1.0])


def test_aggregate_gain_is_bound_minus_expected_baseline_over_n():
    # The count bound's excess over the Σ p_i successes expected from the prior, per target.
    assert aggregate_gain(np.full(1000, 0.1), 255) == pytest.approx((255 - 100) / 1000, rel=1e-12)
    p = np.random.default_rng(0).uniform(0.0, 0.2, size=37)
    v = success_count_bound(p, 1.0, 0.0, 0.05)
    assert aggregate_gain(p, v) == pytest.approx((min(v, 37) - math.fsum(p)) / 37, rel=1e-12)
    # a vacuous bound (n + 1) counts as all n targets
    assert aggregate_gain([0.5, 0.5], 3) == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(ValueError, match="count_bound"):
        aggregate_gain([0.5], -1)
    with pytest.raises(ValueError, match="priors"):
        aggregate_gain([], 1)
