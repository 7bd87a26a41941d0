"""epsilon_for_success and epsilon_for_count against the closed form (mpmath), the scipy
binomial count bound and brute force over ε; edge cases, jit/vmap, argument checks."""

import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.stats

from jaxaudit.bounds import (
    epsilon_for_count,
    epsilon_for_success,
    posterior_success,
    success_count_bound,
)


def _mp_logit(x):
    x = mpmath.mpf(x)
    return mpmath.log(x) - mpmath.log(1 - x)


@pytest.mark.parametrize(("p", "s"), [(0.1, 0.5), (1e-6, 0.01), (0.3, 0.3), (1e-300, 0.9),
                                      (0.5, 0.999999)])
def test_one_target_is_logit_difference_rounded_down(p, s):
    with mpmath.workdps(40):
        exact = _mp_logit(s) - _mp_logit(p)
        eps = epsilon_for_success(p, s)
        assert mpmath.mpf(eps) <= exact
        assert float(exact) - eps <= 4 * math.ulp(float(exact)) + 1e-300
        # β(ε*, p) ≤ s, exactly (mpmath)
        e = mpmath.e ** mpmath.mpf(eps)
        assert e * p / (1 + (e - 1) * p) <= mpmath.mpf(s)


def test_several_targets_take_the_largest_prior():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.0, 0.2, 50)
    eps = epsilon_for_success(p, 0.4)
    assert eps == pytest.approx(math.log(0.4 / 0.6) - math.log(p.max() / (1 - p.max())), rel=1e-14)
    with jax.enable_x64(True):
        beta = np.asarray(posterior_success(p, eps))
        assert beta.max() <= 0.4
        assert np.asarray(posterior_success(p, eps + 1e-9)).max() > 0.4


def test_success_edges():
    assert epsilon_for_success(0.6, 0.5) == -math.inf  # already above the target at ε = 0
    assert epsilon_for_success([0.0, 0.0], 0.1) == math.inf
    assert epsilon_for_success(0.3, 1.0) == math.inf
    assert epsilon_for_success(0.0, 0.0) == math.inf
    assert epsilon_for_success(0.5, 0.5) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(("alphabet_size", "count"), [(2, 755), (10, 255), (10, 300), (100, 36)])
def test_count_inverse_of_the_binomial_count_bound(alphabet_size, count):
    """Uniform-K prior: v_γ(ε) = scipy's binomial quantile + 1 at β = e^ε/(e^ε + K − 1); ε* is
    where it passes the target."""
    n, gamma = 1000, 0.05
    eps = epsilon_for_count(np.full(n, 1 / alphabet_size), count, gamma=gamma)

    def scipy_bound(e):
        beta = math.exp(e) / (math.exp(e) + alphabet_size - 1)
        return int(scipy.stats.binom.isf(gamma, n, beta)) + 1

    assert scipy_bound(eps) <= count < scipy_bound(eps + 1e-6)


def test_count_inverse_by_brute_force_over_epsilon():
    rng = np.random.default_rng(2)
    p = rng.uniform(0.0, 0.3, 60)
    for count, delta in ((15, 0.0), (25, 1e-5), (40, 0.0)):
        eps = epsilon_for_count(p, count, gamma=0.1, delta=delta)
        grid = np.linspace(0.0, 6.0, 61)
        bounds = [success_count_bound(p, e, delta, 0.1) for e in grid]
        assert all((b <= count) == (e <= eps) for e, b in zip(grid, bounds, strict=True))
        assert success_count_bound(p, eps, delta, 0.1) <= count
        assert success_count_bound(p, eps + 1e-6, delta, 0.1) > count


def test_count_edges():
    p = np.full(10, 0.5)
    assert epsilon_for_count(p, 0) == -math.inf  # Pr[S ≥ 0] = 1 > γ
    assert epsilon_for_count(p, 11) == math.inf  # Pr[S ≥ n + 1] = 0
    assert epsilon_for_count(np.r_[np.full(3, 0.5), np.zeros(7)], 4) == math.inf  # S ≤ 3
    assert epsilon_for_count(p, 10, gamma=0.05, delta=0.01) == -math.inf  # n δ ≥ γ
    assert epsilon_for_count(p, 8, gamma=0.05) == -math.inf  # Pr[Bin(10, 1/2) ≥ 8] = 0.0547
    assert epsilon_for_count(p, 9, gamma=0.05) > 0  # Pr[Bin(10, 1/2) ≥ 9] = 0.0107


def test_jit_and_vmap():
    p = np.full(200, 0.1)
    with jax.enable_x64(True):
        counts = jnp.array([30, 40, 60])
        mapped = jax.vmap(lambda v: epsilon_for_count(p, v))(counts)
        np.testing.assert_array_equal(mapped, [epsilon_for_count(p, int(v)) for v in counts])
        targets = jnp.array([0.2, 0.5, 0.9])
        np.testing.assert_array_equal(
            jax.jit(jax.vmap(lambda s: epsilon_for_success(p, s)))(targets),
            [epsilon_for_success(p, float(s)) for s in targets])


@pytest.mark.parametrize(("call", "name"), [
    (lambda: epsilon_for_success([0.1, 1.5], 0.5), "priors"),
    (lambda: epsilon_for_success(0.1, float("nan")), "max_success"),
    (lambda: epsilon_for_success([], 0.5), "priors"),
    (lambda: epsilon_for_count([0.1], 1.5), "max_count"),
    (lambda: epsilon_for_count([0.1], -1), "max_count"),
    (lambda: epsilon_for_count([0.1], 1, gamma=1.0), "gamma"),
    (lambda: epsilon_for_count([0.1], 1, delta=-0.1), "delta"),
    (lambda: epsilon_for_count([0.1], 1, method="dft"), "method"),
])
def test_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_no_epsilon_message_blames_the_cause():
    """The inverse question with n·δ ≥ γ has no answer because of δ, not because of ε = 0:
    the printed reason says so (10 targets, δ = 0.01: n·δ = 0.1 ≥ γ = 0.05, exact arithmetic);
    with δ = 0 and a count the prior alone exceeds, it blames ε = 0."""
    from jaxaudit.pipelines import BoundsConfig, run_bounds
    from jaxaudit.report import bounds as report

    r = run_bounds(BoundsConfig(max_count=5, delta=0.01, prior="uniform:10", targets=10))
    assert r.epsilon == -math.inf
    text = report.text(r)
    assert "n·δ = 0.1 ≥ γ = 0.05" in text and "ε = 0" not in text
    # Pr[Bin(10, 1/2) ≥ 5] = 0.623 > γ at ε = 0
    r = run_bounds(BoundsConfig(max_count=5, prior="uniform:2", targets=10))
    assert r.epsilon == -math.inf and "even at ε = 0" in report.text(r)


# --------------------------------------------------------------------------------------------
# Derivatives: the implicit function theorem (count) and the closed form (success)
# --------------------------------------------------------------------------------------------

_GRAD_PRIORS = np.array([0.2, 0.3, 0.1, 0.25, 0.15, 0.05, 0.1, 0.2, 0.3, 0.1])


@pytest.mark.slow
@pytest.mark.parametrize("count", [5, 6])
def test_epsilon_for_count_gradient_matches_finite_differences(count):
    """grad ε*(p) by the implicit function theorem equals central differences of the concrete
    (float64) bisection, for every prior entry and for γ and δ (it used to be silently 0)."""
    h = 1e-6
    with jax.enable_x64(True):
        grad_p = np.asarray(jax.grad(lambda q: epsilon_for_count(q, count))(
            jnp.asarray(_GRAD_PRIORS)))
        fd = np.empty(_GRAD_PRIORS.size)
        for i in range(_GRAD_PRIORS.size):
            e = np.zeros(_GRAD_PRIORS.size)
            e[i] = h
            fd[i] = (epsilon_for_count(_GRAD_PRIORS + e, count)
                     - epsilon_for_count(_GRAD_PRIORS - e, count)) / (2 * h)
        assert np.all(fd < 0)
        np.testing.assert_allclose(grad_p, fd, rtol=1e-6)
        grad_gamma = float(jax.grad(lambda g: epsilon_for_count(
            jnp.asarray(_GRAD_PRIORS), count, gamma=g))(0.05))
        fd_gamma = (epsilon_for_count(_GRAD_PRIORS, count, gamma=0.05 + h)
                    - epsilon_for_count(_GRAD_PRIORS, count, gamma=0.05 - h)) / (2 * h)
        assert grad_gamma == pytest.approx(fd_gamma, rel=1e-6)
        grad_delta = float(jax.grad(lambda d: epsilon_for_count(
            jnp.asarray(_GRAD_PRIORS), count, delta=d))(1e-3))
        fd_delta = (epsilon_for_count(_GRAD_PRIORS, count, delta=1e-3 + h)
                    - epsilon_for_count(_GRAD_PRIORS, count, delta=1e-3 - h)) / (2 * h)
        assert grad_delta == pytest.approx(fd_delta, rel=1e-6)


@pytest.mark.slow
def test_epsilon_for_count_gradient_float32_jit_and_infinite_ends():
    """float32 under jit agrees with the float64 derivative; ±inf answers have derivative 0."""
    grad = jax.jit(jax.grad(lambda q: epsilon_for_count(q, 5)))
    g32 = np.asarray(grad(jnp.asarray(_GRAD_PRIORS, jnp.float32)))
    with jax.enable_x64(True):
        g64 = np.asarray(jax.grad(lambda q: epsilon_for_count(q, 5))(jnp.asarray(_GRAD_PRIORS)))
        for count in (0, _GRAD_PRIORS.size + 1):   # no ε protects / every ε protects
            g = np.asarray(jax.grad(lambda q, c=count: epsilon_for_count(q, c))(
                jnp.asarray(_GRAD_PRIORS)))
            assert np.all(g == 0.0)
    np.testing.assert_allclose(g32, g64, rtol=1e-3)


@pytest.mark.parametrize("x64", [False, True])
def test_epsilon_for_success_gradient_closed_form(x64):
    """ε = logit S − logit max p: dε/dS = 1/(S(1 − S)) and dε/dp_max = −1/(p(1 − p)) (the
    one-ulp rounding down passes the tangent through; ``nextafter`` has no rule of its own)."""
    with jax.enable_x64(x64):
        priors = jnp.array([0.2, 0.1])
        d_s = float(jax.grad(lambda s: epsilon_for_success(priors, s))(0.6))
        d_p = np.asarray(jax.grad(lambda q: epsilon_for_success(q, 0.6))(priors))
    assert d_s == pytest.approx(1 / (0.6 * 0.4), rel=1e-5)
    np.testing.assert_allclose(d_p, [-1 / (0.2 * 0.8), 0.0], rtol=1e-5)
