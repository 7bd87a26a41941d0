"""Trade-off functions, TPR at FPR and inverse blow-ups stay exact in their tails: against
mpmath at α = 1e−30 … 1e−1 in float32 and float64 (x64)."""

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

from jaxaudit.bounds import PrivacyModel, gdp_tradeoff, inverse_blowup_gdp, kgk_bound_gdp
from jaxaudit.bounds.tradeoff import gdp_f, gdp_tpr, profile_grid, profile_tpr
from jaxaudit.stats.gdp import gdp_delta_core

mp.mp.dps = 50
ALPHAS = [10.0**-k for k in range(30, 0, -1)]
MUS = (0.5, 1.0, 3.0)


def mp_inv(x):
    x = mp.mpf(x)
    return mp.findroot(lambda z: mp.log(mp.ncdf(z)) - mp.log(x), -mp.sqrt(-2 * mp.log(x)))


def mp_tpr(alpha, mu):
    return mp.ncdf(mp_inv(alpha) + mu)


@pytest.mark.parametrize("mu", MUS)
def test_gdp_tradeoff_is_a_lower_bound_within_a_few_ulp_in_both_precisions(mu):
    for x64, dtype in ((True, jnp.float64), (False, jnp.float32)):
        with jax.enable_x64(x64):
            for alpha in ALPHAS:
                exact = 1 - mp_tpr(alpha, mu)
                for got in (gdp_tradeoff(jnp.asarray(alpha, dtype), jnp.asarray(mu, dtype)),
                            jax.jit(gdp_f)(jnp.asarray(alpha, dtype), jnp.asarray(mu, dtype))):
                    assert got.dtype == dtype
                    got = mp.mpf(float(got))
                    ulp = float(jnp.finfo(dtype).eps)
                    # never above where f is near 1 (the tail that read f = 1, TPR = 0); a few
                    # ulp of Φ and Φ⁻¹ elsewhere
                    assert got <= exact * (1 + (0 if alpha <= 1e-3 else 4 * ulp)), (alpha, x64)
                    assert exact - got <= 8 * ulp * exact, (alpha, x64)


@pytest.mark.parametrize("mu", MUS)
def test_tpr_at_fpr_is_exact_in_the_tails(mu):
    model = PrivacyModel(mu=mu)
    exact = np.array([float(mp_tpr(a, mu)) for a in ALPHAS])
    np.testing.assert_allclose(np.asarray(model.tpr_at_fpr(ALPHAS)), exact, rtol=1e-12)
    with jax.enable_x64(True):
        np.testing.assert_allclose(np.asarray(kgk_bound_gdp(np.array(ALPHAS), mu)), exact,
                                   rtol=1e-12)
    alphas32 = np.array(ALPHAS, np.float32)  # the float32 α themselves, as the caller holds them
    exact32 = np.array([float(mp_tpr(float(a), mu)) for a in alphas32])
    kgk32 = np.asarray(kgk_bound_gdp(alphas32, mu), np.float64)
    assert np.all(kgk32 >= exact32) and np.all(kgk32 <= exact32 * (1 + 1e-6))  # rounded up
    blowup = inverse_blowup_gdp(mu)  # f̄⁻¹(y) = Φ(Φ⁻¹(y) − μ)
    for a in ALPHAS[::5]:
        assert blowup(a) == pytest.approx(float(mp.ncdf(mp_inv(a) - mu)), rel=1e-12)
    # float32 under jit: the TPR keeps its digits down to 1e−30 (relative 1e−4: Φ⁻¹ in float32)
    tpr32 = jax.jit(gdp_tpr)(jnp.asarray(ALPHAS, jnp.float32), jnp.float32(mu))
    assert tpr32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(tpr32, np.float64), exact, rtol=1e-4)
    assert np.all(np.asarray(tpr32) > 0)


def test_smallest_normal_float_keeps_a_positive_tpr():
    for x64, dtype in ((True, jnp.float64), (False, jnp.float32)):
        with jax.enable_x64(x64):
            tiny = jnp.finfo(dtype).smallest_normal
            assert float(gdp_tpr(tiny, jnp.asarray(1.0, dtype))) > float(tiny)
            assert float(gdp_f(tiny, jnp.asarray(1.0, dtype))) < 1.0


def test_a_sampled_curve_is_an_upper_bound_on_the_tpr_in_the_tails():
    def delta(e):
        with jax.enable_x64(True):
            return np.asarray(gdp_delta_core(jnp.asarray(e, jnp.float64), 1.0))

    grid, deltas = profile_grid(delta)
    with jax.enable_x64(True):
        got = np.asarray(profile_tpr(jnp.asarray(ALPHAS[15:]), jnp.asarray(grid), jnp.asarray(deltas)))
    exact = np.array([float(mp_tpr(a, 1.0)) for a in ALPHAS[15:]])
    assert np.all(got >= exact * (1 - 1e-12))
    assert np.all(got <= exact * 1.05)  # the grid reaches δ ≤ 1e−15: tight down to α ≈ 1e−15
