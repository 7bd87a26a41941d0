"""β(ε, p), gains, f-DP profiles and the baselines against docs/bounds.md's reference values and closed forms."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.special
import scipy.stats

from jaxaudit.bounds import (
    approx_dp_delta,
    approx_dp_tradeoff,
    balle_rero_rdp,
    balle_rero_zcdp,
    gain,
    gdp_delta,
    gdp_tradeoff,
    inverse_blowup_dp,
    inverse_blowup_gdp,
    kgk_bound_dp,
    kgk_bound_gdp,
    max_gain,
    mmc_threshold,
    poisson_binomial_isf,
    posterior_success,
    steinke_threshold,
    success_count_bound,
)
from jaxaudit.bounds.prior_work import balle_rero_pure, hayes_gaussian, mmc_reject, steinke_p_value
from jaxaudit.bounds.success import gain_ratio, max_gain_prior

BETA_ANCHORS = [((1, 0.5), 0.731059), ((1, 0.1), 0.231969), ((1, 0.01), 0.0267236),
                ((4, 0.01), 0.355461), ((8, 1e-3), 0.748992), ((10, 1e-6), 0.0215518)]


@pytest.mark.parametrize(("args", "expected"), BETA_ANCHORS)
def test_beta_anchors_float32_and_float64(args, expected):
    eps, p = args
    assert float(posterior_success(p, eps)) == pytest.approx(expected, rel=2e-6)  # float32
    with jax.enable_x64(True):
        beta64 = float(posterior_success(p, eps))
    assert beta64 == pytest.approx(math.exp(eps) * p / (1 + math.expm1(eps) * p), rel=1e-12)
    assert beta64 == pytest.approx(expected, rel=1e-5)


def test_beta_edges_monotone_and_jit():
    assert float(posterior_success(0.0, 5.0)) == 0.0
    assert float(posterior_success(1.0, 5.0)) == 1.0
    assert float(posterior_success(0.0, math.inf)) == 0.0
    assert float(posterior_success(0.3, math.inf)) == 1.0
    assert float(posterior_success(0.3, 0.0)) == pytest.approx(0.3)
    eps = jnp.linspace(0.0, 12.0, 61)
    p = jnp.logspace(-7, 0, 57)
    beta = jax.jit(posterior_success)(p[:, None], eps[None, :])
    assert (jnp.diff(beta, axis=0) >= 0).all() and (jnp.diff(beta, axis=1) >= 0).all()
    assert (beta >= p[:, None] * (1 - 1e-6)).all()
    assert jnp.isfinite(beta).all()


def test_max_gain_identity_by_numerical_maximisation():
    for eps in (0.1, 1.0, 4.0, 10.0):
        with jax.enable_x64(True):
            res = scipy.optimize.minimize_scalar(lambda x, e=eps: -float(gain(x, e)),
                                                 bounds=(0, 1), method="bounded",
                                                 options={"xatol": 1e-12})
            assert -res.fun == pytest.approx(float(max_gain(eps)), rel=1e-9)
            assert res.x == pytest.approx(float(max_gain_prior(eps)), abs=1e-5)
            assert float(gain_ratio(0.2, eps)) == pytest.approx(
                float(posterior_success(0.2, eps)) / 0.2, rel=1e-12)


@pytest.mark.parametrize(("eps", "mu", "expected"),
                         [(1.0, 1.0, 0.126937), (4.0, 1.0, 4.71224e-5), (2.0, 0.5, 9.43917e-6)])
def test_gdp_delta_anchors(eps, mu, expected):
    with jax.enable_x64(True):
        assert float(gdp_delta(eps, mu)) == pytest.approx(expected, rel=1e-5)


def test_gdp_delta_is_conjugate_of_tradeoff():
    """δ(ε) = sup_α 1 − f(α) − e^ε α, checked by a fine α grid (a lower bound converging to δ)."""
    alpha = np.concatenate([[0.0], np.logspace(-14, -1, 4000), np.linspace(0.1, 1, 4000)])
    with jax.enable_x64(True):
        for mu in (0.5, 1.0, 2.0):
            f = np.asarray(gdp_tradeoff(alpha, mu))
            for eps in (0.0, 0.5, 2.0, 5.0):
                grid_sup = np.max(1 - f - math.exp(eps) * alpha)
                exact = float(gdp_delta(eps, mu))
                assert exact >= grid_sup - 1e-12
                assert exact == pytest.approx(grid_sup, rel=1e-3, abs=1e-12)
            kink = (1 - 1e-3) / (1 + math.e)  # the sup of a piecewise-linear f sits at a kink
            alpha_dp = np.append(alpha, kink)
            f_dp = np.asarray(approx_dp_tradeoff(alpha_dp, 1.0, 1e-3))
            for eps in (0.0, 0.5, 1.0, 3.0):
                grid_sup = np.max(1 - f_dp - math.exp(eps) * alpha_dp)
                assert float(approx_dp_delta(eps, 1.0, 1e-3)) == pytest.approx(grid_sup, rel=1e-6)


def test_kgk_and_reconstruction_anchors():
    with jax.enable_x64(True):
        # Anchors are given to 6 significant digits.
        assert float(kgk_bound_gdp(0.5, 1.0)) == pytest.approx(0.841345, abs=1e-6)
        assert float(kgk_bound_gdp(0.01, 1.0)) == pytest.approx(0.0923622, abs=1e-7)
        assert float(kgk_bound_gdp(0.01, 2.0)) == pytest.approx(0.372081, abs=1e-6)
        assert float(balle_rero_zcdp(0.01, 1.0)) == pytest.approx(0.268948, abs=1e-6)
        assert float(balle_rero_zcdp(0.01, 5.0)) == 1.0
        assert float(hayes_gaussian(0.01, 2.0, 1.0)) == pytest.approx(0.372081, abs=1e-6)
        # RDP at α → ∞ tends to the pure-DP form min(1, e^ε κ).
        assert float(balle_rero_rdp(0.01, 1e9, 1.0)) == pytest.approx(0.01 * math.e, rel=1e-6)
        # (ε, 0) forms coincide.
        assert float(kgk_bound_dp(0.3, 1.0, 0.0)) == pytest.approx(float(kgk_bound_dp(0.3, 1.0)))


def test_pure_dp_ordering_ours_kgk_balle():
    kappa = jnp.logspace(-6, 0, 200)
    for eps in (0.5, 1.0, 4.0):
        ours = posterior_success(kappa, eps)
        kgk = kgk_bound_dp(kappa, eps)
        balle = balle_rero_pure(kappa, eps)
        assert (ours <= kgk + 1e-6).all() and (kgk <= balle + 1e-6).all()
    assert float(posterior_success(0.5, 1.0)) == pytest.approx(0.731, abs=5e-4)
    assert float(kgk_bound_dp(0.5, 1.0)) == pytest.approx(0.816, abs=5e-4)


@pytest.mark.parametrize(("delta", "expected"), [(0.0, 0.0715562468), (1e-6, 0.0717015337)])
def test_steinke_anchors(delta, expected):
    assert steinke_p_value(1000, 100, 80, 1.0, delta) == pytest.approx(expected, rel=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("alphabet_size", [2, 10, 100])
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_mmc_pure_dp_threshold_is_ours_plus_0_to_2(alphabet_size, eps):
    ours = success_count_bound(np.full(1000, 1 / alphabet_size), eps)
    mmc = mmc_threshold(1000, 1000, alphabet_size, inverse_blowup_dp(eps))
    assert 0 <= mmc - ours <= 2
    assert mmc_reject(1000, 1000, mmc, alphabet_size, inverse_blowup_dp(eps))
    assert not mmc_reject(1000, 1000, mmc - 1, alphabet_size, inverse_blowup_dp(eps))


@jax.enable_x64(True)
def test_inverse_blowups_invert_the_blowups():
    for y in (0.01, 0.3, 0.9):
        x = inverse_blowup_gdp(1.0)(y)
        assert float(kgk_bound_gdp(x, 1.0)) == pytest.approx(y, rel=1e-9)
        x = inverse_blowup_dp(1.0)(y)
        assert float(kgk_bound_dp(x, 1.0)) == pytest.approx(y, rel=1e-12)
        # (ε, δ): KGK+'s 1 − f(x) is the blow-up f̄, and f̄⁻¹ its least preimage
        x = inverse_blowup_dp(1.0, 1e-3)(y)
        assert float(kgk_bound_dp(x, 1.0, 1e-3)) == pytest.approx(y, rel=1e-12)
        assert float(kgk_bound_dp(x * (1 - 1e-9), 1.0, 1e-3)) < y
    assert inverse_blowup_dp(1.0, 1e-3)(1e-4) == 0.0  # below f̄(0) = δ: the least x is 0
    assert inverse_blowup_dp(1.0, 1e-3)(1.0) == pytest.approx(1 - 1e-3, rel=1e-15)


@pytest.mark.parametrize(("fn", "args", "name"), [
    (posterior_success, (1.5, 1.0), "prior"),
    (posterior_success, (0.5, -1.0), "epsilon"),
    (posterior_success, (float("nan"), 1.0), "prior"),
    (posterior_success, (0.5, float("nan")), "epsilon"),
    (gdp_delta, (1.0, 0.0), "mu"),
    (approx_dp_tradeoff, (0.1, 1.0, 1.0), "delta"),
    (kgk_bound_dp, (0.1, 1.0, -0.1), "delta"),
    (balle_rero_rdp, (0.1, 1.0, 1.0), "order"),
    (steinke_p_value, (10, 20, 5, 1.0), "r"),
    (mmc_threshold, (10, 10, 1, inverse_blowup_dp(1.0)), "alphabet_size"),
])
def test_bad_input_names_the_argument(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_scipy_consistency_of_kgk_gdp():
    kappa = np.array([1e-4, 0.1, 0.5, 0.9])
    with jax.enable_x64(True):
        ours = np.asarray(kgk_bound_gdp(kappa, 1.3))
    np.testing.assert_allclose(ours, scipy.stats.norm.cdf(scipy.stats.norm.ppf(kappa) + 1.3),
                               rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(("n", "eps", "delta"), [(1000, 1.0, 0.0), (50, 0.3, 0.0), (200, 2.0, 1e-5),
                                                 (10, 1000.0, 0.0)])
def test_steinke_threshold_is_first_v_the_one_run_test_rejects(n, eps, delta):
    # Independent reference under pure DP: the smallest v with Pr[Bin(n, e^ε/(1 + e^ε)) ≥ v] ≤ γ
    # (scipy); with δ > 0 a linear scan of the p-value, which the bisection must agree with.
    if delta == 0.0:
        sf = scipy.stats.binom.sf(np.arange(n + 1) - 1, n, scipy.special.expit(eps))
    else:
        sf = np.array([steinke_p_value(n, n, v, eps, delta) for v in range(n + 1)])
    ok = np.nonzero(sf <= 0.05)[0]
    expected = int(ok[0]) if ok.size else n + 1
    assert steinke_threshold(n, n, eps, delta, 0.05) == expected
    if (n, eps) == (1000, 1.0):
        assert expected == 755  # = the count bound of the uniform K = 2 prior (Steinke = ours)


class JitAndEagerAgreeTest(chex.TestCase):
    """Concrete inputs take the checked float64 path (validation, rounding up), traced inputs
    (under jit) the bare formula; both must give the closed form."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_posterior_success_and_gdp_delta(self):
        eps, p, mu = np.array([0.5, 1.0, 4.0]), np.array([0.5, 0.1, 0.01]), np.array([1.0, 1.0, 0.5])
        with jax.enable_x64(True):
            beta = self.variant(posterior_success)(jnp.asarray(p), jnp.asarray(eps))
            delta = self.variant(gdp_delta)(jnp.asarray(eps), jnp.asarray(mu))
        chex.assert_shape([beta, delta], (3,))
        np.testing.assert_allclose(beta, np.exp(eps) * p / (1 + np.expm1(eps) * p), rtol=1e-12)
        norm = scipy.stats.norm
        reference = norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        np.testing.assert_allclose(delta, reference, rtol=1e-9)

    @chex.variants(with_jit=True, without_jit=True)
    def test_count_bound_exact_is_the_binomial_quantile(self):
        n, q, gamma = 50, 0.3, 0.05
        with jax.enable_x64(True):
            v = self.variant(lambda probs, g: jnp.asarray(
                poisson_binomial_isf(probs, g, method="recursion"), jnp.int32))(jnp.full(n, q), gamma)
        chex.assert_shape(v, ())
        chex.assert_type(v, jnp.int32)
        tails = scipy.stats.binom.sf(np.arange(n + 1) - 1, n, q)  # Pr[Bin(n, q) ≥ v], v = 0..n
        assert int(v) == int(np.nonzero(tails <= gamma)[0][0])


def test_balle_rero_rdp_takes_the_order_and_its_epsilon():
    """``order`` is the Rényi order, ``epsilon`` the RDP ε at it (the vocabulary's names)."""
    new = float(balle_rero_rdp(0.01, order=2.0, epsilon=1.0))
    assert new == pytest.approx((0.01 * math.e) ** 0.5, rel=1e-6)  # float32, rounded up
    with pytest.raises(ValueError, match="order"):
        balle_rero_rdp(0.01, 1.0, 1.0)


@pytest.mark.parametrize(("fn", "kwargs"), [
    (posterior_success, dict(prior=0.3, epsilon=1.0)),
    (gain_ratio, dict(prior=0.3, epsilon=1.0)),
    (hayes_gaussian, dict(kappa=0.3, sensitivity=1.0, sigma=2.0)),
    (balle_rero_pure, dict(kappa=0.3, epsilon=1.0)),
])
def test_checked_closed_forms_keep_their_signature(fn, kwargs):
    """The closed forms written under ``checked_upper_bound`` keep their names, parameters,
    keyword calls and checks (Hayes: σ > 0, Δ ≥ 0)."""
    import inspect
    assert list(inspect.signature(fn).parameters) == list(kwargs)
    assert float(fn(**kwargs)) == float(fn(*kwargs.values()))
    assert float(jax.jit(fn)(**kwargs)) == pytest.approx(float(fn(**kwargs)), rel=1e-6)
    if fn is hayes_gaussian:
        with pytest.raises(ValueError, match="sigma must be > 0"):
            fn(0.3, 1.0, 0.0)
        with pytest.raises(ValueError, match="sensitivity must be >= 0"):
            fn(0.3, -1.0, 1.0)
