"""reconcile_estimate: a point estimate below a valid lower bound is raised to it and flagged."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.renyi import reconcile_estimate


def test_user_story_numbers_are_raised_and_flagged():
    # DV 0.535 and 0.637 at α = 2, 3 below threshold bounds 0.942 and 1.352 (a user's audit)
    r = reconcile_estimate(np.array([0.535, 0.637]), np.array([[0.942, 1.352], [0.0, 0.0]]))
    np.testing.assert_allclose(r.estimate, [0.942, 1.352], rtol=1e-6)
    assert r.raised.tolist() == [True, True]


def test_matches_an_elementwise_reference_never_below_any_bound():
    rng = np.random.default_rng(0)
    point = rng.normal(size=50).astype(np.float32)
    bounds = rng.normal(size=(3, 50)).astype(np.float32)
    bounds[2, :10] = -np.inf  # "no bound" entries
    r = reconcile_estimate(point, bounds)
    best = bounds.max(axis=0)
    expected = np.array([max(p, b) for p, b in zip(point, best)])
    np.testing.assert_array_equal(np.asarray(r.estimate), expected)
    np.testing.assert_array_equal(np.asarray(r.raised), best > point)
    assert (np.asarray(r.estimate)[None] >= bounds).all() and (np.asarray(r.estimate) >= point).all()
    # -inf is "no estimate": the bound stands in
    np.testing.assert_array_equal(reconcile_estimate(-np.inf, 0.5).estimate, 0.5)
    # an estimate already above every bound is untouched
    assert not np.asarray(reconcile_estimate(point + 10, bounds).raised).any()
    # one bound per order (no leading axis) is the same as m = 1
    one = reconcile_estimate(point, bounds[0])
    np.testing.assert_array_equal(np.asarray(one.estimate), np.maximum(point, bounds[0]))


def test_jit_vmap_grad():
    point, bounds = jnp.array([0.5, 2.0]), jnp.array([[1.0, 1.0]])
    eager = reconcile_estimate(point, bounds)
    jitted = jax.jit(reconcile_estimate)(point, bounds)
    np.testing.assert_array_equal(eager.estimate, jitted.estimate)
    batched = jax.vmap(reconcile_estimate, in_axes=(0, None))(jnp.stack([point, point + 1]), bounds)
    np.testing.assert_allclose(batched.estimate, [[1.0, 2.0], [1.5, 3.0]])
    g = jax.grad(lambda p: reconcile_estimate(p, bounds).estimate.sum())(point)
    np.testing.assert_array_equal(g, [0.0, 1.0])  # raised entries no longer depend on the point


@pytest.mark.parametrize("point, bounds, match", [
    ([0.5, np.nan], [0.0, 0.0], "point"),
    ([0.5, 1.0], [0.0, np.nan], "lower_bounds"),
    ([0.5, 1.0], [0.0, 0.0, 0.0], "lower_bounds must have shape"),
    (["a"], [0.0], "point"),
])
def test_bad_input_names_the_argument(point, bounds, match):
    with pytest.raises(ValueError, match=match):
        reconcile_estimate(point, bounds)


# --- (ε, δ) → RDP conversions: Kim et al.'s Gaussian one and the assumption-free one ---------

from scipy.optimize import brentq  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from scipy.stats import norm  # noqa: E402

from jaxaudit.renyi.reconcile import (  # noqa: E402
    dp_to_rdp_gaussian,
    dp_to_rdp_lower_bound,
    gdp_mu_for_epsilon,
)
from jaxaudit.stats import gdp_epsilon  # noqa: E402


def _gdp_delta(eps, mu):
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def _scipy_mu(eps, delta):
    return brentq(lambda m: _gdp_delta(eps, m) - delta, 1e-9, 100.0, xtol=1e-14)


def test_gdp_mu_for_epsilon_matches_scipy_root_and_inverts_gdp_epsilon():
    eps = np.array([0.0, 0.5, 2.0, 4.38, 6.57, 10.0, 17.85, 40.0])
    for delta in (1e-5, 1e-3, 0.1):
        mu = gdp_mu_for_epsilon(eps, delta)
        ref = np.array([_scipy_mu(e, delta) for e in eps])
        np.testing.assert_allclose(mu, ref, rtol=1e-9, atol=1e-12)
        assert (mu <= ref + 1e-12).all()  # the lower end of the bracket: never above the root
        back = gdp_epsilon(mu[1:], delta)
        np.testing.assert_allclose(back, eps[1:], rtol=1e-6)
    # the ε ↔ μ table printed in the authors' notebook (δ = 1e−5)
    np.testing.assert_allclose(gdp_mu_for_epsilon([2.0, 4.38, 6.57, 10.0, 17.85], 1e-5),
                               [0.5015516877, 1.000556797, 1.413676493, 2.000445619, 3.161382064],
                               rtol=1e-6)  # their bisection stops at |δ error| < 1e−12


def test_dp_to_rdp_gaussian_is_alpha_mu_squared_over_two_and_gives_the_papers_theory_column():
    orders = np.array([1.25, 2.0, 3.0, 5.0])
    for eps in (2.0, 10.0):
        np.testing.assert_allclose(dp_to_rdp_gaussian(eps, 1e-5, orders),
                                   orders * _scipy_mu(eps, 1e-5) ** 2 / 2, rtol=1e-9)
    # Kim et al.'s "theory" at α = 2 (ε = 2, 4.38, 6.57, 10, 17.85 at δ = 1e−5), as published
    got = dp_to_rdp_gaussian([2.0, 4.38, 6.57, 10.0, 17.85], 1e-5, 2.0)
    np.testing.assert_array_equal(np.round(got, 3), [0.252, 1.001, 1.998, 4.002, 9.994])


def _pair_epsilon(p, q, delta):
    """ε(δ) of a discrete pair in the direction P‖Q: root of Σ (P − e^ε Q)_+ = δ."""
    return brentq(lambda e: np.maximum(p - np.exp(e) * q, 0).sum() - delta, 0.0, 60.0,
                  xtol=1e-12)


def _pair_renyi(p, q, order):
    return logsumexp(order * np.log(p) + (1 - order) * np.log(q)) / (order - 1)


def test_gaussian_conversion_is_not_a_bound_without_the_gaussian_assumption():
    # Two-point pair: loss 10.1 on a mass ≈ 1e−4, else ≈ 0. Its ε(1e−5) is 10 (the same as
    # 2.0004-GDP), but its D_2 is 1.27, far below α μ²/2 = 4.0.
    ell = 10.1
    b = 1e-5 / (np.exp(ell) - np.exp(10.0))
    p, q = np.array([b * np.exp(ell), 1 - b * np.exp(ell)]), np.array([b, 1 - b])
    eps = _pair_epsilon(p, q, 1e-5)
    assert abs(eps - 10.0) < 1e-6
    d2 = max(_pair_renyi(p, q, 2.0), _pair_renyi(q, p, 2.0))
    assert d2 < 1.3
    assert float(dp_to_rdp_gaussian(eps, 1e-5, 2.0)) > 3 * d2  # the conversion overstates ε_2
    for order in (1.5, 2.0, 3.0, 10.0, 50.0):
        truth = max(_pair_renyi(p, q, order), _pair_renyi(q, p, order))
        assert float(dp_to_rdp_lower_bound(eps, 1e-5, order)) <= truth + 1e-9


@pytest.mark.parametrize("order", [1.1, 1.5, 2.0, 3.0, 8.0, 32.0])
def test_assumption_free_conversion_is_below_the_truth_on_gaussian_and_randomized_response(order):
    delta = 1e-5
    for mu in (0.5, 1.0, 2.0, 4.0, 8.0):
        eps = float(gdp_epsilon(mu, delta))  # exact ε(δ) of μ-GDP
        truth = order * mu**2 / 2
        assert float(dp_to_rdp_lower_bound(eps, delta, order)) <= truth + 1e-9
        # and for the Gaussian the Gaussian conversion is the truth itself
        np.testing.assert_allclose(dp_to_rdp_gaussian(eps, delta, order), truth, rtol=1e-6)
    for eps0 in (1.0, 5.0, 12.0, 20.0):
        pr = np.exp(eps0) / (1 + np.exp(eps0))
        p, q = np.array([pr, 1 - pr]), np.array([1 - pr, pr])
        eps = _pair_epsilon(p, q, delta)
        assert float(dp_to_rdp_lower_bound(eps, delta, order)) <= _pair_renyi(p, q, order) + 1e-9


def test_assumption_free_conversion_closed_form_and_clip():
    # α = 2: shift = log(1/δ) − 2 log 2 (Canonne, Kamath, Steinke, Prop. 12)
    np.testing.assert_allclose(dp_to_rdp_lower_bound(20.0, 1e-5, 2.0),
                               20.0 - (np.log(1e5) - 2 * np.log(2)), rtol=1e-12)
    assert float(dp_to_rdp_lower_bound(10.0, 1e-5, 2.0)) == 0.0  # vacuous at audit δ


@pytest.mark.slow
def test_conversions_jit_vmap_grad():
    eps = jnp.array([2.0, 10.0])
    eager = dp_to_rdp_gaussian(np.asarray(eps), 1e-5, 2.0)
    jitted = jax.jit(dp_to_rdp_gaussian)(eps, 1e-5, 2.0)
    np.testing.assert_allclose(jitted, eager, rtol=1e-4)
    batched = jax.vmap(dp_to_rdp_lower_bound, in_axes=(0, None, None))(eps + 10.0, 1e-5, 2.0)
    np.testing.assert_allclose(batched, dp_to_rdp_lower_bound(np.asarray(eps) + 10.0, 1e-5, 2.0),
                               rtol=1e-5)
    # d/dε α μ²/2 = α μ dμ/dε, dμ/dε = e^ε Φ(b)/φ(a) (implicit function theorem), vs scipy
    g = float(jax.grad(lambda e: dp_to_rdp_gaussian(e, 1e-5, 2.0))(10.0))
    h = 1e-4
    fd = (_scipy_mu(10.0 + h, 1e-5) ** 2 - _scipy_mu(10.0 - h, 1e-5) ** 2) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=-1.0, delta=1e-5, order=2.0), "epsilon"),
    (dict(epsilon=np.nan, delta=1e-5, order=2.0), "epsilon"),
    (dict(epsilon=1.0, delta=0.6, order=2.0), "delta"),
    (dict(epsilon=1.0, delta=0.0, order=2.0), "delta"),
    (dict(epsilon=1.0, delta=1e-5, order=1.0), "order"),
    (dict(epsilon=[1.0, 2.0], delta=1e-5, order=[2.0, 3.0, 4.0]), "broadcast"),
])
def test_conversions_bad_input_names_the_argument(kwargs, match):
    for fn in (dp_to_rdp_gaussian, dp_to_rdp_lower_bound):
        with pytest.raises(ValueError, match=match):
            fn(**kwargs)
    if "order" in match or "broadcast" in match:
        return
    with pytest.raises(ValueError, match=match):
        gdp_mu_for_epsilon(kwargs["epsilon"], kwargs["delta"])
