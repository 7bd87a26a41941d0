"""μ-GDP conversions (jaxaudit.stats.gdp): δ_μ(ε) against mpmath, its inverse against a scipy
root, the RDP conversion against numerical quadrature of the two Gaussians' Rényi divergence,
the ``order`` argument and bad input."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize
from scipy import stats as sp_stats

from jaxaudit import bounds, stats
from jaxaudit.stats.gdp import gdp_delta_core


def _delta_mp(eps, mu):
    mpmath.mp.dps = 60
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    phi = lambda x: mpmath.ncdf(x)
    return phi(-eps / mu + mu / 2) - mpmath.e**eps * phi(-eps / mu - mu / 2)


@pytest.mark.parametrize("eps,mu", [(0.0, 0.5), (1.0, 1.0), (4.0, 2.0), (20.0, 3.0)])
def test_delta_core_against_mpmath(eps, mu):
    with jax.enable_x64(True):
        got = float(gdp_delta_core(jnp.float64(eps), jnp.float64(mu)))
    assert got == pytest.approx(float(_delta_mp(eps, mu)), rel=1e-9)


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-5), (2.0, 1e-3), (4.0, 1e-8)])
def test_epsilon_inverts_delta(mu, delta):
    """ε solves δ_μ(ε) = δ (scipy brentq on scipy's normal cdf) and sits on the low side."""
    def f(e):
        return sp_stats.norm.cdf(-e / mu + mu / 2) - np.exp(e) * sp_stats.norm.cdf(-e / mu - mu / 2)
    want = optimize.brentq(lambda e: f(e) - delta, 0.0, 200.0, xtol=1e-14)
    got = stats.gdp_epsilon(mu, delta)
    assert got == pytest.approx(want, rel=1e-9)
    assert float(_delta_mp(got, mu)) >= delta * (1 - 1e-12)   # never above the exact ε


@pytest.mark.parametrize("mu,order", [(0.5, 2.0), (1.0, 3.0), (1.5, 1.5)])
def test_rdp_against_quadrature(mu, order):
    """D_α(N(μ, 1) ‖ N(0, 1)) = 1/(α − 1) log ∫ p^α q^{1−α} by scipy quadrature."""
    log_p, log_q = sp_stats.norm(mu, 1).logpdf, sp_stats.norm(0, 1).logpdf
    integrand = lambda x: np.exp(order * log_p(x) + (1 - order) * log_q(x))
    centre = order * mu   # the integrand is a Gaussian bump centred at α μ
    integral, _ = integrate.quad(integrand, centre - 15, centre + 15, epsabs=0, epsrel=1e-12,
                                 limit=200)
    want = np.log(integral) / (order - 1)
    assert float(stats.gdp_to_rdp(mu, order)) == pytest.approx(want, rel=1e-8)


def test_order_is_the_name_and_bad_input_is_named():
    assert float(stats.gdp_to_rdp(2.0, order=3.0)) == 6.0
    with pytest.raises(ValueError, match="order"):
        stats.gdp_to_rdp(2.0, 0.5)
    with pytest.raises(ValueError, match="mu"):
        stats.gdp_to_rdp(-1.0, 2.0)
    with pytest.raises(ValueError, match="delta"):
        stats.gdp_epsilon(1.0, 1.5)


def test_bounds_gdp_delta_is_the_same_core():
    # bounds.gdp_delta is the validated, rounded-up entry of the same core
    with jax.enable_x64(True):
        assert float(bounds.gdp_delta(1.0, 1.0)) == float(gdp_delta_core(1.0, 1.0))
