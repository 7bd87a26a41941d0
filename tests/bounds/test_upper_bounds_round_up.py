"""Every function that returns an upper bound rounds up.

``max_gain(1.0)`` returned 0.2449186593 in float32, below the true tanh(1/4) = 0.2449186624...:
an upper bound rounded down. Each public upper bound is checked here against a 50-digit mpmath
evaluation of its formula at float32 inputs (converted exactly): the float32 result is never
below the exact value, and at most 2 ulp above it.
"""

import itertools

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

from jaxaudit import bounds
from jaxaudit.bounds.prior_work import balle_rero_pure, hayes_gaussian
from jaxaudit.bounds.success import gain_ratio

mp.mp.dps = 50


def _phi(x):
    return mp.ncdf(x)


def _phi_inv(p):
    if p == 0:
        return -mp.inf
    if p == 1:
        return mp.inf
    return mp.sqrt(2) * mp.erfinv(2 * p - 1)


def _beta(p, e):
    return mp.mpf(1) / (1 + mp.exp(-e) * (1 - p) / p) if p > 0 else mp.mpf(0)


def _gdp_delta(e, mu):
    return _phi(-e / mu + mu / 2) - mp.exp(e) * _phi(-e / mu - mu / 2)


ORACLES = {
    "posterior_success": (bounds.posterior_success, 2, _beta),
    "gain": (bounds.gain, 2, lambda p, e: _beta(p, e) - p),
    "gain_ratio": (gain_ratio, 2, lambda p, e: mp.exp(e) / (1 + (mp.exp(e) - 1) * p)),
    "max_gain": (bounds.max_gain, 1, lambda e: mp.tanh(e / 4)),
    "kgk_bound_dp": (bounds.kgk_bound_dp, 2,
                     lambda k, e: min(1, mp.exp(e) * k, 1 - mp.exp(-e) * (1 - k))),
    "kgk_bound_gdp": (bounds.kgk_bound_gdp, 2, lambda k, mu: _phi(_phi_inv(k) + mu)),
    "balle_rero_pure": (balle_rero_pure, 2, lambda k, e: min(1, mp.exp(e) * k)),
    "balle_rero_zcdp": (bounds.balle_rero_zcdp, 2, lambda k, rho: (
        mp.exp(-(mp.sqrt(-mp.log(k)) - mp.sqrt(rho)) ** 2) if rho < -mp.log(k) else mp.mpf(1))),
    "gdp_delta": (bounds.gdp_delta, 2, lambda e, mu: _gdp_delta(e, mu)),
    # three-argument bounds, third argument fixed (float32-exact values)
    "kgk_bound_dp delta>0": (lambda k, e: bounds.kgk_bound_dp(k, e, jnp.float32(2**-17)), 2,
                             lambda k, e: min(1, mp.exp(e) * k + mp.mpf(2) ** -17,
                                              1 - mp.exp(-e) * (1 - mp.mpf(2) ** -17 - k))),
    "balle_rero_rdp": (lambda k, e: bounds.balle_rero_rdp(k, jnp.float32(2.5), e), 2,
                       lambda k, e: min(1, (k * mp.exp(e)) ** (1 - 1 / mp.mpf(2.5)))),
    "hayes_gaussian": (lambda k, s: hayes_gaussian(k, s, jnp.float32(1.25)), 2,
                       lambda k, s: _phi(_phi_inv(k) + s / mp.mpf(1.25))),
}
# inputs: first argument a probability (a prior κ, or ε for max_gain/gdp_delta), second ε, μ, ρ
PROBS = np.array([1e-6, 0.013, 0.1, 0.2449, 0.3, 0.377, 0.5, 0.71, 0.9, 0.999], np.float32)
SCALES = np.array([0.01, 0.1, 0.37, 1.0, 1.7, 2.3, 4.0, 7.5], np.float32)


def _inputs(name, arity):
    if arity == 1:
        return [(s,) for s in SCALES]
    if name == "gdp_delta":
        return list(itertools.product(SCALES, SCALES[2:]))
    return list(itertools.product(PROBS, SCALES))


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_upper_bound_is_rounded_up(name):
    fn, arity, oracle = ORACLES[name]
    points = _inputs(name, arity)
    cols = [np.array([p[i] for p in points], np.float32) for i in range(arity)]
    got = np.asarray(fn(*[jnp.asarray(c) for c in cols]))
    assert got.dtype == np.float32
    exact = np.array([oracle(*[mp.mpf(float(c[j])) for c in cols]) for j in range(len(points))],
                     dtype=object)
    below = [(points[j], float(got[j]), float(exact[j])) for j in range(len(points))
             if mp.mpf(float(got[j])) < exact[j]]
    assert not below, f"{name} rounded down at {below[:3]}"
    ulp = np.spacing(np.abs(got).astype(np.float32)).astype(np.float64)
    gap = np.array([float(mp.mpf(float(got[j])) - exact[j]) for j in range(len(points))])
    assert (gap <= 2 * ulp + 1e-45).all(), f"{name}: more than 2 ulp above the exact value"


def test_max_gain_at_one_is_not_rounded_down():
    assert float(bounds.max_gain(1.0)) >= float(mp.tanh(mp.mpf(1) / 4)) > 0.2449186593


def test_approx_dp_delta_rounded_up():
    eps = np.array([0.0, 0.3, 0.9, 1.5], np.float32)
    got = np.asarray(bounds.approx_dp_delta(jnp.asarray(eps), 1.0, 1e-5))
    d0 = mp.mpf(float(np.float32(1e-5)))
    for e, g in zip(eps, got, strict=True):
        e0 = mp.mpf(1)
        exact = d0 + (1 - d0) * max(0, mp.exp(e0) - mp.exp(mp.mpf(float(e)))) / (1 + mp.exp(e0))
        assert mp.mpf(float(g)) >= exact


def test_rounding_up_does_not_break_jit():
    out = jax.jit(bounds.max_gain)(jnp.float32(1.0))
    np.testing.assert_allclose(out, np.tanh(0.25), rtol=1e-6)
