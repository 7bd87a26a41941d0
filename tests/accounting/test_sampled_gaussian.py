"""The RDP of the Poisson-subsampled Gaussian (jaxaudit.accounting.sampled_gaussian) against
independent references: mpmath quadrature of the defining integrals in both directions, the
Opacus-style signed series evaluated in mpmath at 50 digits, the q = 1 closed form; and its
behaviour under jit, vmap and grad (finite differences), with no host callback in its jaxpr."""

import logging

import dp_accounting
import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from jaxpr_walk import primitives

from jaxaudit.accounting import rdp_epsilons, sampled_gaussian_rdp

Q = (0.01, 0.1, 0.5)
SIGMA = (0.8, 2.0, 2.62)
ORDERS = (1.1, 1.25, 1.5, 2.0, 3.0, 10.0)


def quadrature_rdp(q, sigma, alpha, dps=30):
    """max over both directions of D_α between μ = (1 − q) N(0, σ²) + q N(1, σ²) and
    μ₀ = N(0, σ²), by mpmath quadrature of E_{μ₀}[(μ/μ₀)^α] and E_μ[(μ₀/μ)^α] = E_{μ₀}[(μ/μ₀)^{1−α}].
    Returns (D_α(μ‖μ₀), D_α(μ₀‖μ))."""
    with mp.workdps(dps):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
        z0 = s**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2

        def ratio(z):  # μ(z)/μ₀(z)
            return 1 - q + q * mp.exp((2 * z - 1) / (2 * s**2))

        points = sorted({-mp.inf, -10 * s, -3 * s, mp.mpf(0), z0, 3 * s, a - 3 * s, a, a + 3 * s,
                         a + 10 * s, mp.inf})
        forward = mp.quad(lambda z: mp.npdf(z, 0, s) * ratio(z) ** a, points)
        backward = mp.quad(lambda z: mp.npdf(z, 0, s) * ratio(z) ** (1 - a), points)
        return float(mp.log(forward) / (a - 1)), float(mp.log(backward) / (a - 1))


def opacus_series_rdp(q, sigma, alpha, dps=50):
    """Opacus's ``compute_rdp`` formulas (``_compute_log_a_int`` / ``_compute_log_a_frac``, the
    signed two series of Mironov, Talwar, Zhang 2019 §3.3 with Opacus's stopping rule: stop
    once both new terms are below e^−30), evaluated in mpmath at ``dps`` digits."""
    with mp.workdps(dps):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
        if a == int(a):
            total = mp.fsum(mp.binomial(a, i) * (1 - q) ** (a - i) * q**i
                            * mp.exp((i * i - i) / (2 * s**2)) for i in range(int(a) + 1))
            return float(mp.log(total) / (a - 1))
        z0 = s**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2
        a0 = a1 = mp.mpf(0)
        i = 0
        while True:
            coef = mp.binomial(a, i)
            j = a - i
            s0 = coef * q**i * (1 - q) ** j * mp.exp((i * i - i) / (2 * s**2)) \
                * mp.ncdf((z0 - i) / s)
            s1 = coef * q**j * (1 - q) ** i * mp.exp((j * j - j) / (2 * s**2)) \
                * mp.ncdf((j - z0) / s)
            a0, a1 = a0 + s0, a1 + s1
            i += 1
            if max(abs(s0), abs(s1)) < mp.exp(-30):
                return float(mp.log(a0 + a1) / (a - 1))


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.slow
@pytest.mark.parametrize("q", Q)
@pytest.mark.parametrize("sigma", SIGMA)
def test_equals_mpmath_quadrature(q, sigma):
    ours = np.asarray(sampled_gaussian_rdp(sigma, q, jnp.asarray(ORDERS)))
    for alpha, value in zip(ORDERS, ours):
        forward, backward = quadrature_rdp(q, sigma, alpha)
        # Mironov, Talwar, Zhang (Thm 5): the direction D_α(μ‖μ₀) is the larger one
        assert backward <= forward * (1 + 1e-12)
        assert value == pytest.approx(max(forward, backward), rel=1e-6), alpha


@pytest.mark.slow
@pytest.mark.parametrize("q,sigma,alpha", [(0.5, 30.0, 1000.5), (0.1, 2.0, 700.0),
                                           (0.5, 10.0, 1.05), (0.9, 0.8, 2.5),
                                           (0.5, 100.0, 1.01)])
def test_equals_quadrature_at_large_orders_and_far_settings(q, sigma, alpha):
    # orders above 512 and large σ take more series terms (the public entry sizes the series
    # from concrete orders and σ; at σ = 100 the default 1,024 terms are 2e−6 high)
    ours = rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=1, orders=[alpha])[0]
    assert ours == pytest.approx(quadrature_rdp(q, sigma, alpha)[0], rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("q,sigma", [(0.01, 2.0), (0.5, 2.62), (0.1, 0.8)])
def test_equals_opacus_formulas_in_mpmath(q, sigma):
    orders = (1.1, 1.25, 1.5, 1.95, 2.0, 2.5, 3.0)
    ours = np.asarray(sampled_gaussian_rdp(sigma, q, jnp.asarray(orders)))
    reference = [opacus_series_rdp(q, sigma, a) for a in orders]
    np.testing.assert_allclose(ours, reference, rtol=1e-6)


def test_the_reported_opacus_numbers():
    # The Opacus user's report: q = 0.5, σ = 2.62, α = 1.25 / 1.5 give ε_α = 2.34 / 2.83 from
    # Opacus's compute_rdp, where dp_accounting gives ∞ (and 4.27 at α = 1.95 above 3.85 at
    # α = 2). These are T = 100 steps: the α = 2 value, where dp_accounting's integer sum is
    # exact, is 100 × 0.03846 = 3.85.
    orders = [1.25, 1.5, 1.95, 2.0]
    ours = rdp_epsilons(noise_multiplier=2.62, sampling_rate=0.5, steps=100, orders=orders)
    np.testing.assert_allclose(ours[:2], [2.34, 2.83], atol=5e-3)
    assert ours[3] == pytest.approx(3.85, abs=5e-3)
    assert np.all(np.isfinite(ours)) and np.all(np.diff(ours) > 0)
    acc = dp_accounting.rdp.RdpAccountant(orders)
    event = dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(2.62))
    logging.disable(logging.WARNING)  # dp_accounting's "Excluding this order" warnings
    try:
        acc.compose(dp_accounting.SelfComposedDpEvent(event, 100))
    finally:
        logging.disable(logging.NOTSET)
    theirs = np.asarray(acc.rdp)
    assert np.all(np.isinf(theirs[:2]))  # where ours is finite (and equals the quadrature)
    assert theirs[2] > theirs[3]  # not monotone
    assert ours[3] == pytest.approx(theirs[3], rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("sigma", [0.8, 2.0, 2.62, 10.0])
def test_monotone_in_order(q, sigma):
    grid = np.unique(np.concatenate([np.geomspace(1.01, 500.0, 400), np.arange(2.0, 40.0),
                                     np.arange(2.5, 40.0)]))
    eps = np.asarray(sampled_gaussian_rdp(sigma, q, jnp.asarray(grid)))
    assert np.all(np.isfinite(eps)) and np.all(eps > 0)
    assert np.all(np.diff(eps) >= 0)


def test_integer_sum_and_fractional_series_join_continuously():
    # integer orders take the finite binomial sum, their neighbours the two signed series
    alphas = np.asarray([2.0, 3.0, 5.0, 10.0, 64.0])
    grid = jnp.asarray(np.stack([alphas - 1e-7, alphas, alphas + 1e-7], axis=-1))
    for q, sigma in [(0.01, 0.8), (0.1, 2.0), (0.5, 2.62)]:
        near = np.asarray(sampled_gaussian_rdp(sigma, q, grid))
        np.testing.assert_allclose(near, near[:, 1:2] * np.ones(3), rtol=1e-6)
        assert np.all(np.diff(near, axis=-1) >= 0)


@pytest.mark.parametrize("sigma", [0.5, 2.0, 7.0])
def test_full_batch_closed_form_and_the_limit_q_to_one(sigma):
    orders = jnp.asarray([1.1, 1.5, 2.0, 3.7, 64.0])
    np.testing.assert_allclose(sampled_gaussian_rdp(sigma, 1.0, orders),
                               np.asarray(orders) / (2 * sigma**2), rtol=1e-15)
    np.testing.assert_allclose(sampled_gaussian_rdp(sigma, 1 - 1e-10, orders),
                               np.asarray(orders) / (2 * sigma**2), rtol=1e-6)


@pytest.mark.slow
def test_special_values():
    f = sampled_gaussian_rdp
    assert float(f(2.0, 0.1, jnp.inf)) == np.inf and float(f(2.0, 1.0, jnp.inf)) == np.inf
    assert float(f(2.0, 0.0, 3.0)) == 0.0 and float(f(jnp.inf, 0.3, 3.0)) == 0.0
    assert np.isnan(float(f(2.0, 0.1, 1.0))) and np.isnan(float(f(2.0, 0.1, 0.5)))
    assert np.isnan(float(f(2.0, 0.1, 600.5)))  # beyond the default 1024 terms: refused as NaN
    assert np.isfinite(float(f(2.0, 0.1, 600.5, num_terms=2048)))
    # the public entry: α = ∞ allowed, α = 1 (the KL limit) refused by name
    eps = rdp_epsilons(noise_multiplier=2.0, sampling_rate=0.1, steps=3, orders=[2.0, np.inf])
    assert np.isfinite(eps[0]) and eps[1] == np.inf
    with pytest.raises(ValueError, match="orders"):
        rdp_epsilons(noise_multiplier=2.0, sampling_rate=0.1, steps=3, orders=[1.0])
    with pytest.raises(ValueError, match="orders"):
        rdp_epsilons(noise_multiplier=2.0, sampling_rate=0.1, steps=3, orders=[np.nan])


@pytest.mark.slow
def test_jit_and_vmap_over_sigma_q_and_orders_equal_eager():
    sigmas = jnp.asarray([0.8, 2.0, 2.62])
    qs = jnp.asarray([0.01, 0.1, 0.5])
    orders = jnp.asarray([1.1, 1.25, 2.0, 3.5])
    eager = np.array([[[float(sampled_gaussian_rdp(s, q, a)) for a in orders] for q in qs]
                      for s in sigmas])
    jitted = jax.jit(sampled_gaussian_rdp)
    # (the same float64 sums, fused differently: equal to rounding over ~2000 terms)
    np.testing.assert_allclose(jitted(sigmas[:, None, None], qs[None, :, None], orders), eager,
                               rtol=1e-9)
    over_sigma = jax.vmap(sampled_gaussian_rdp, (0, None, None))(sigmas, 0.1, orders)
    np.testing.assert_allclose(over_sigma, eager[:, 1], rtol=1e-9)
    over_orders = jax.jit(jax.vmap(sampled_gaussian_rdp, (None, None, 0)))(2.0, 0.5, orders)
    np.testing.assert_allclose(over_orders, eager[1, 2], rtol=1e-9)


@pytest.mark.parametrize("q,alpha", [(0.01, 1.1), (0.1, 1.5), (0.5, 2.0), (0.5, 2.5),
                                     (1.0, 3.0)])
@pytest.mark.slow
def test_grad_matches_finite_differences(q, alpha):
    sigma, h = 2.0, 1e-3  # central differences: O(h²) ≈ 1e−7 relative
    d_sigma = jax.grad(sampled_gaussian_rdp)(sigma, q, alpha)
    fd = (sampled_gaussian_rdp(sigma + h, q, alpha) - sampled_gaussian_rdp(sigma - h, q, alpha))
    assert float(d_sigma) == pytest.approx(float(fd) / (2 * h), rel=1e-5)
    assert float(d_sigma) < 0  # more noise, less privacy loss
    if q < 1:
        d_q = jax.grad(sampled_gaussian_rdp, argnums=1)(sigma, q, alpha)
        hq = 1e-4 * q
        fd_q = (sampled_gaussian_rdp(sigma, q + hq, alpha)
                - sampled_gaussian_rdp(sigma, q - hq, alpha)) / (2 * hq)
        assert float(d_q) == pytest.approx(float(fd_q), rel=1e-5) and float(d_q) > 0


def test_no_host_callback_in_the_jaxpr():
    closed = jax.make_jaxpr(sampled_gaussian_rdp)(2.0, 0.1, jnp.asarray([1.5, 2.0]))
    names = primitives(closed.jaxpr)
    assert "lgamma" in names  # the walk sees the computation itself
    assert not {n for n in names if "callback" in n}, names
    rdp = jax.make_jaxpr(lambda s: rdp_epsilons(noise_multiplier=s, sampling_rate=0.5, steps=10,
                                                orders=[1.5, 2.0]))(2.0)
    assert not {n for n in primitives(rdp.jaxpr) if "callback" in n}
