"""Every public numeric function of ``jaxaudit.bounds`` inside the user's jit, vmap and grad.

Each is run eagerly (the validated entry, float64 for the count bounds and tails) and through
``jax.jit``, ``jax.vmap`` over a natural axis (ε, μ, priors, radii, levels) and, where
differentiable, ``jax.grad`` (checked against a float64 central difference of the eager
function). The large-n (FFT) cases compile for tens of seconds on a loaded CPU: they are marked
slow (``pytest -m slow``); the jaxpr check of the FFT cores runs by default. The transformed calls run under ``jax.enable_x64(True)``, as the docstrings ask for
the bounds' accuracy; integer results (count bounds, thresholds) must be equal, real ones equal
to round-off. The jaxprs of the large-n Poisson-binomial cores must hold no host callback.
"""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from jaxpr_walk import CALLBACKS, primitives

from jaxaudit import bounds
from jaxaudit.bounds.count_bound import fdp_epsilon_grid
from jaxaudit.bounds.prior_work import balle_rero_pure, hayes_gaussian, mmc_reject, steinke_p_value
from jaxaudit.bounds.success import gain_ratio, max_gain_prior

EPS = np.array([0.0, 0.5, 1.0, 4.0])


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _central_difference(fn, x, h=1e-6):
    return (float(fn(x + h)) - float(fn(x - h))) / (2 * h)


def _priors(n, seed, high=0.3):
    return np.random.default_rng(seed).uniform(0.0, high, n)


# ----------------------------------------------------------------------------------------------
# Closed forms: β, gain, f-DP, prior work (broadcasting jnp functions)

CLOSED = [
    (bounds.posterior_success, (0.1,)), (bounds.gain, (0.1,)), (gain_ratio, (0.1,)),
    (bounds.kgk_bound_dp, (0.1,)), (balle_rero_pure, (0.01,)),
    (lambda eps, k: bounds.kgk_bound_dp(k, eps, 1e-6), (0.1,)),
]


@pytest.mark.parametrize(("fn", "args"), CLOSED)
def test_closed_forms_in_epsilon(fn, args):
    f = (lambda e: fn(*args, e)) if fn in (bounds.posterior_success, bounds.gain,
                                          gain_ratio, bounds.kgk_bound_dp,
                                          balle_rero_pure) else (lambda e: fn(e, *args))
    eager = np.array([float(f(e)) for e in EPS])
    np.testing.assert_allclose(jax.vmap(f)(jnp.asarray(EPS)), eager, rtol=1e-14)
    np.testing.assert_allclose(jax.jit(f)(EPS[2]), eager[2], rtol=1e-14)
    assert float(jax.grad(f)(1.0)) == pytest.approx(_central_difference(f, 1.0), rel=1e-6)


def test_success_in_prior_and_max_gain():
    p = jnp.array([1e-6, 0.1, 0.5, 0.9])
    eager = np.asarray(bounds.posterior_success(np.asarray(p), 1.0))
    np.testing.assert_allclose(jax.vmap(bounds.posterior_success, (0, None))(p, 1.0), eager,
                               rtol=1e-14)
    for fn in (bounds.max_gain, max_gain_prior):
        np.testing.assert_allclose(jax.vmap(fn)(jnp.asarray(EPS)),
                                   [float(fn(e)) for e in EPS], rtol=1e-14)
        assert float(jax.grad(fn)(1.0)) == pytest.approx(_central_difference(fn, 1.0), rel=1e-6)


@pytest.mark.parametrize("fn", [
    lambda mu: bounds.gdp_delta(1.0, mu), lambda mu: bounds.gdp_tradeoff(0.1, mu),
    lambda mu: bounds.kgk_bound_gdp(0.01, mu), lambda mu: hayes_gaussian(0.01, 1.0, 1 / mu),
    lambda mu: bounds.balle_rero_zcdp(0.01, mu**2 / 2),
    lambda mu: bounds.balle_rero_rdp(0.01, 2.0, mu), lambda mu: bounds.approx_dp_delta(0.5, mu, 1e-6),
    lambda mu: bounds.approx_dp_tradeoff(0.1, mu, 1e-6),
])
@pytest.mark.slow
def test_fdp_and_prior_work_in_their_parameter(fn):
    mus = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(jax.vmap(fn)(jnp.asarray(mus)), [float(fn(m)) for m in mus],
                               rtol=1e-13)
    np.testing.assert_allclose(jax.jit(fn)(1.5), float(fn(1.5)), rtol=1e-13)
    assert float(jax.grad(fn)(1.5)) == pytest.approx(_central_difference(fn, 1.5), rel=1e-5)


@pytest.mark.slow
def test_one_run_audits_in_epsilon():
    eps = jnp.array([0.5, 1.0, 2.0])
    p_value = lambda e: steinke_p_value(1000, 100, 80, e, 1e-6)  # noqa: E731
    np.testing.assert_allclose(jax.vmap(p_value)(eps), [p_value(float(e)) for e in eps],
                               rtol=1e-12)
    assert float(jax.grad(p_value)(1.0)) == pytest.approx(_central_difference(p_value, 1.0),
                                                          rel=1e-6)
    threshold = lambda e: bounds.steinke_threshold(1000, 300, e)  # noqa: E731
    assert jax.vmap(threshold)(eps).tolist() == [threshold(float(e)) for e in eps]
    mmc = lambda e: bounds.mmc_threshold(300, 300, 10, bounds.inverse_blowup_dp(e))  # noqa: E731
    assert jax.vmap(mmc)(eps).tolist() == [mmc(float(e)) for e in eps]
    reject = lambda c: mmc_reject(300, 300, c, 10, bounds.inverse_blowup_gdp(1.0))  # noqa: E731
    cs = jnp.array([10, 60, 200])
    assert jax.vmap(reject)(cs).tolist() == [reject(int(c)) for c in cs]
    ys = jnp.array([0.0, 0.3, 0.9, 1.0])
    for inverse in (bounds.inverse_blowup_dp(1.0), bounds.inverse_blowup_gdp(1.0)):
        np.testing.assert_allclose(jax.vmap(inverse)(ys), [inverse(float(y)) for y in ys],
                                   rtol=1e-14)


# ----------------------------------------------------------------------------------------------
# Poisson-binomial engine, both paths


@pytest.mark.parametrize(("n", "method"), [
    (40, "recursion"), pytest.param(600, "fft", marks=pytest.mark.slow)])
def test_tail_logpmf_isf_compose(n, method):
    qs = np.stack([_priors(n, 1), _priors(n, 2, 0.9)])
    vs = np.array([0, 3, n // 10, n // 3, n])
    tail = lambda q: bounds.poisson_binomial_tail(q, vs, log=True, method=method)  # noqa: E731
    eager = np.stack([np.asarray(tail(q)) for q in qs])
    np.testing.assert_allclose(jax.vmap(tail)(jnp.asarray(qs)), eager, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(tail)(jnp.asarray(qs[0])), eager[0], rtol=1e-12)
    logpmf = lambda q: bounds.poisson_binomial_logpmf(q, method=method)  # noqa: E731
    eager_pmf = np.asarray(logpmf(qs[1]))
    np.testing.assert_allclose(jax.jit(logpmf)(jnp.asarray(qs[1])), eager_pmf, rtol=1e-11)
    gammas = jnp.array([0.3, 0.05, 1e-12])
    isf = lambda g: bounds.poisson_binomial_isf(qs[0], g, method=method)  # noqa: E731
    assert jax.vmap(isf)(gammas).tolist() == [isf(float(g)) for g in gammas]


@pytest.mark.slow
def test_tail_gradient_in_probs():
    """d log Pr[S ≥ v] / d q_0 by the recursion (reverse mode) and the FFT path (forward mode:
    its tilts run in while loops) against a central difference."""
    q = _priors(300, 3)
    for method, n in (("recursion", 40), ("fft", 300)):
        f = lambda x, n=n, method=method: bounds.poisson_binomial_tail(  # noqa: E731
            np.concatenate([[x], q[1:n]]) if not isinstance(x, jax.core.Tracer)
            else jnp.concatenate([x[None], jnp.asarray(q[1:n])]), n // 4, log=True, method=method)
        expected = _central_difference(f, 0.2)
        diff = jax.grad(f) if method == "recursion" else jax.jacfwd(f)
        assert float(diff(jnp.float64(0.2))) == pytest.approx(expected, rel=1e-5)


def test_large_n_cores_have_no_host_callback():
    q = jnp.asarray(_priors(5000, 4))
    for fn, args in ((lambda q: bounds.poisson_binomial_tail(q, jnp.array([600.0, 900.0]), log=True,
                                                             method="fft"), (q,)),
                     (lambda q: bounds.poisson_binomial_isf(q, 1e-10, method="fft"), (q,)),
                     (lambda q: bounds.poisson_binomial_logpmf(q, method="fft"), (q,)),
                     (lambda e: bounds.success_count_bound(np.asarray(q), e), (1.0,))):
        names = primitives(jax.make_jaxpr(fn)(*args).jaxpr)
        assert not names & CALLBACKS, names & CALLBACKS
        assert "fft" in names


# ----------------------------------------------------------------------------------------------
# Count bounds and tails over ε, priors, levels


@pytest.mark.slow
def test_count_bound_vmaps_over_epsilon_at_n_1e5():
    """The integer found by the in-jnp search equals the eager one exactly, at n = 10⁵ (FFT)."""
    p = _priors(100_000, 5, 0.01)
    eps = np.array([0.5, 2.0])
    eager = [bounds.success_count_bound(p, float(e)) for e in eps]
    mapped = jax.vmap(lambda e: bounds.success_count_bound(p, e))(jnp.asarray(eps))
    assert mapped.tolist() == eager


@pytest.mark.parametrize("n", [50, pytest.param(700, marks=pytest.mark.slow)])
def test_count_bounds_and_tails_compose(n):
    p = _priors(n, 6)
    eps = jnp.asarray(EPS)
    count = lambda e: bounds.success_count_bound(p, e, 1e-5 / n)  # noqa: E731
    assert jax.vmap(count)(eps).tolist() == [count(float(e)) for e in EPS]
    gammas = jnp.array([0.2, 0.05, 1e-6])
    by_gamma = lambda g: bounds.success_count_bound(p, 1.0, 0.0, g)  # noqa: E731
    assert jax.vmap(by_gamma)(gammas).tolist() == [by_gamma(float(g)) for g in gammas]
    vs = np.array([0, n // 5, n // 2])
    tail = lambda e: bounds.success_tail(p, e, vs)  # noqa: E731
    np.testing.assert_allclose(jax.vmap(tail)(eps), np.stack([tail(float(e)) for e in EPS]),
                               rtol=1e-12, atol=1e-300)
    batch = np.stack([p, _priors(n, 7)])
    by_prior = lambda q: bounds.success_count_bound(q, 1.0)  # noqa: E731
    assert jax.vmap(by_prior)(jnp.asarray(batch)).tolist() == [by_prior(q) for q in batch]
    exact = lambda e: bounds.success_count_bound(p, e, method="recursion")  # noqa: E731
    assert jax.jit(jax.vmap(exact))(eps).tolist() == [int(exact(float(e))) for e in EPS]
    v = bounds.success_count_bound(p, 1.0)
    assert float(jax.jit(bounds.aggregate_gain)(jnp.asarray(p), v)) == pytest.approx(
        bounds.aggregate_gain(p, v), rel=1e-14)


def test_fdp_bounds_vmap_over_mu():
    p = _priors(60, 8, 0.05)
    grid = np.linspace(0.0, 8.0, 9)
    count = lambda mu: bounds.success_count_bound_fdp(  # noqa: E731
        p, lambda e: bounds.gdp_delta(e, mu), epsilons=grid)
    mus = jnp.array([0.5, 1.0, 2.0])
    assert jax.vmap(count)(mus).tolist() == [count(float(m)) for m in mus]
    vs = np.array([1, 5, 20])
    tail = lambda mu: bounds.success_tail_fdp(  # noqa: E731
        p, lambda e: bounds.gdp_delta(e, mu), vs, epsilons=grid)
    np.testing.assert_allclose(jax.vmap(tail)(mus), np.stack([tail(float(m)) for m in mus]),
                               rtol=1e-12)


@pytest.mark.slow
def test_fdp_default_grid_inside_jit_and_vmap():
    """Without ``epsilons``, the default grid is built in jnp when δ_f closes over a traced μ:
    the same grid as the host search (to round-off) and the same count bounds."""
    p = _priors(200, 9, 0.3)
    for mu in (0.5, 1.0, 3.0, 30.0):
        delta = lambda e, mu=mu: bounds.gdp_delta(e, mu)  # noqa: E731
        traced = jax.jit(lambda m: fdp_epsilon_grid(lambda e: bounds.gdp_delta(e, m), 200, 0.05))
        np.testing.assert_allclose(traced(mu), fdp_epsilon_grid(delta, 200, 0.05), atol=1e-12)
    count = lambda mu: bounds.success_count_bound_fdp(p, lambda e: bounds.gdp_delta(e, mu))  # noqa: E731
    mus = jnp.array([0.5, 1.0, 3.0])
    eager = [count(float(m)) for m in mus]
    assert jax.vmap(count)(mus).tolist() == eager
    assert int(jax.jit(count)(1.0)) == eager[1]


# ----------------------------------------------------------------------------------------------
# Prior encodings


def test_priors_compose():
    pis = jnp.array([0.1, 0.5, 0.8])
    np.testing.assert_allclose(jax.vmap(bounds.membership_prior)(pis),
                               [float(bounds.membership_prior(float(x))) for x in pis])
    guess = jnp.array([True, False, True])
    np.testing.assert_allclose(jax.jit(bounds.membership_prior)(pis, guess),
                               bounds.membership_prior(np.asarray(pis), np.asarray(guess)))
    assert float(jax.grad(lambda x: bounds.membership_prior(x, True).sum())(0.3)) == 1.0

    dists = np.random.default_rng(9).dirichlet(np.ones(6), size=4)
    np.testing.assert_allclose(jax.vmap(lambda d: bounds.top_k_mass(d, 2))(jnp.asarray(dists)),
                               bounds.top_k_mass(dists, 2), rtol=1e-14)
    np.testing.assert_allclose(jax.jit(bounds.top_k_mass)(jnp.asarray(dists)),
                               bounds.top_k_mass(dists), rtol=1e-14)
    np.testing.assert_allclose(
        jax.jit(lambda d: bounds.top_k_mass(d, 3))(jnp.asarray(dists)),
        bounds.top_k_mass(dists, 3), rtol=1e-14)

    values, probs = np.array([0.0, 0.4, 1.0, 2.5]), np.array([0.1, 0.4, 0.3, 0.2])
    radii = jnp.array([0.0, 0.3, 0.6, 2.0])
    sup = lambda r: bounds.ball_mass_sup(values, probs, r)  # noqa: E731
    np.testing.assert_allclose(jax.vmap(sup)(radii), [sup(float(r)) for r in radii], rtol=1e-14)
    mass = lambda r: bounds.ball_mass(values, probs, [0.5, 2.0], r, metric="l1")  # noqa: E731
    np.testing.assert_allclose(jax.vmap(mass)(radii), np.stack([mass(float(r)) for r in radii]),
                               rtol=1e-14)

    columns = [np.array([0.5, 0.5]), np.array([0.9, 0.1]), np.array([0.2, 0.7, 0.1])]
    cp = jax.jit(lambda cs: bounds.columns_prior(cs, 2))([jnp.asarray(c) for c in columns])
    assert float(cp) == pytest.approx(bounds.columns_prior(columns, 2), rel=1e-13)
    ranks = jnp.array([1.0, 2.0, 10.0])
    np.testing.assert_allclose(jax.jit(lambda r: bounds.zipf_prior(0.9, 1000, r))(ranks),
                               bounds.zipf_prior(0.9, 1000, np.asarray(ranks)), rtol=1e-14)
    ks = jnp.array([2, 10, 100])
    np.testing.assert_allclose(jax.vmap(bounds.uniform_prior)(ks),
                               [bounds.uniform_prior(int(k)) for k in ks], rtol=1e-15)


@pytest.mark.slow
def test_fft_tail_gradient_equals_the_recursions():
    """Reverse mode through the tilted-FFT tail (whose tilt search is a while_loop) gives the
    exact recursion's gradient, at counts in the bulk, the far tail and the edges."""
    q = jnp.asarray(_priors(600, 11, 0.2))
    for v in (0, 30, 60, 90, 200, 601):
        fft = jax.grad(lambda x, v=v: bounds.poisson_binomial_tail(x, v, log=True, method="fft"))(q)
        rec = jax.grad(lambda x, v=v: bounds.poisson_binomial_tail(
            x, v, log=True, method="recursion"))(q)
        assert np.all(np.isfinite(fft))
        np.testing.assert_allclose(fft, rec, rtol=1e-10, atol=1e-12)
