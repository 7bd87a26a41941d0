"""The guarantee types (jaxaudit.accounting.guarantees): the relation field, validation, pytrees
under jit/vmap, the conversions against independent references, group privacy checked on the
Gaussian mechanism, the replace-one accounting's home and the bounds' PrivacyModel."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sp_stats

from jaxaudit import accounting, bounds, stats
from jaxaudit.accounting import ApproxDP, GaussianDP, PldProfile, PureDP, RdpCurve


def _gdp_delta(eps, mu):
    """δ_μ(ε) in 60-digit mpmath."""
    mpmath.mp.dps = 60
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    return float(mpmath.ncdf(-eps / mu + mu / 2) - mpmath.e**eps * mpmath.ncdf(-eps / mu - mu / 2))


def test_relation_is_checked_and_static():
    for cls, args in ((PureDP, (1.0,)), (ApproxDP, (1.0, 1e-5)), (GaussianDP, (1.0,)),
                      (RdpCurve, ([2.0], [1.0]))):
        assert cls(*args, "add_remove").relation == "add_remove"
        with pytest.raises(ValueError, match="relation"):
            cls(*args, "add-remove")
    g = GaussianDP(1.0, "replace_one")
    leaves, tree = jax.tree_util.tree_flatten(g)
    assert leaves == [1.0]   # relation is metadata, not a leaf
    assert jax.tree_util.tree_unflatten(tree, leaves).relation == "replace_one"


@pytest.mark.parametrize("guarantee,field", [
    (PureDP(-1.0, "add_remove"), "epsilon"),
    (PureDP(np.nan, "add_remove"), "epsilon"),
    (ApproxDP(1.0, 1.5, "replace_one"), "delta"),
    (GaussianDP(-0.5, "replace_one"), "mu"),
    (RdpCurve([0.5, 2.0], [1.0, 2.0], "add_remove"), "orders"),
    (RdpCurve([2.0, 3.0], [1.0], "add_remove"), "epsilons"),
])
def test_validate_names_the_field(guarantee, field):
    with pytest.raises(ValueError, match=field):
        guarantee.validate()


def test_guarantees_pass_through_jit_and_vmap():
    mus = jnp.array([0.5, 1.0, 2.0])
    eps = jax.vmap(lambda m: GaussianDP(m, "add_remove").to_approx(1e-5).epsilon)(mus)
    eager = [float(GaussianDP(float(m), "add_remove").to_approx(1e-5).epsilon) for m in mus]
    np.testing.assert_allclose(eps, eager, rtol=1e-5)
    doubled = jax.jit(lambda g: g.to_replace_one())(ApproxDP(1.0, 1e-6, "add_remove"))
    assert doubled.relation == "replace_one"
    assert float(doubled.epsilon) == pytest.approx(2.0)


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-5), (3.0, 1e-8)])
def test_gaussian_to_approx_is_a_valid_claim(mu, delta):
    """ε solves δ_μ(ε) = δ (scipy brentq), rounded up: δ_μ(ε) ≤ δ in 60 digits, and ε is at
    least the auditing inverse stats.gdp_epsilon (which rounds down)."""
    out = GaussianDP(mu, "replace_one").to_approx(delta)
    eps = float(out.epsilon)
    def f(e):
        return sp_stats.norm.cdf(-e / mu + mu / 2) - np.exp(e) * sp_stats.norm.cdf(-e / mu - mu / 2)
    assert eps == pytest.approx(optimize.brentq(lambda e: f(e) - delta, 0, 300, xtol=1e-14),
                                rel=1e-9)
    assert _gdp_delta(eps, mu) <= delta * (1 + 1e-12)
    assert eps >= stats.gdp_epsilon(mu, delta)
    assert out.relation == "replace_one" and float(out.delta) == delta
    assert float(GaussianDP(0.0, "add_remove").to_approx(delta).epsilon) == 0.0
    assert float(GaussianDP(np.inf, "add_remove").to_approx(delta).epsilon) == np.inf


def test_gaussian_profile_and_rdp():
    g = GaussianDP(1.3, "add_remove")
    assert float(g.delta_of_epsilon(2.0)) == pytest.approx(_gdp_delta(2.0, 1.3), rel=1e-5)
    curve = g.to_rdp([2.0, 4.0])
    np.testing.assert_allclose(curve.epsilons, np.array([2.0, 4.0]) * 1.3**2 / 2, rtol=1e-6)
    assert curve.relation == "add_remove"


def test_rdp_curve_to_approx_is_the_accountants_rule():
    """Full-batch Gaussian (q = 1, σ = 2, T = 10): ε_α = T α/(2σ²); the conversion equals
    accounting.epsilon_for_delta and the closed form min_α ε_α + log(1 − 1/α) − log(δα)/(α − 1)."""
    orders = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    sigma, steps, delta = 2.0, 10, 1e-5
    rdp = steps * orders / (2 * sigma**2)
    with jax.enable_x64(True):
        got = float(RdpCurve(orders, rdp, "add_remove").to_approx(delta).epsilon)
    by_hand = np.min(rdp + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1))
    assert got == pytest.approx(by_hand, rel=1e-12)
    accountant = accounting.epsilon_for_delta(noise_multiplier=sigma, sampling_rate=1.0,
                                              steps=steps, delta=delta, orders=orders)
    assert got == pytest.approx(float(accountant), rel=1e-9)


def test_group_privacy_on_the_gaussian_mechanism():
    """A sum of records with ‖x‖ ≤ 1 plus N(0, σ²): add/remove moves it by 1 (1/σ-GDP), replace-one
    by 2 (exactly 2/σ-GDP). to_replace_one gives the exact replace-one μ, and the (ε, δ) rule
    (2ε, (1 + e^ε)δ) is never below the exact replace-one δ(2ε)."""
    sigma = 1.7
    add_remove = GaussianDP(1 / sigma, "add_remove")
    assert float(add_remove.to_replace_one().mu) == pytest.approx(2 / sigma)
    assert add_remove.to_replace_one().relation == "replace_one"
    for eps in (0.25, 1.0, 3.0):
        point = ApproxDP(eps, _gdp_delta(eps, 1 / sigma), "add_remove").to_replace_one()
        assert float(point.epsilon) == pytest.approx(2 * eps)
        assert float(point.delta) >= _gdp_delta(2 * eps, 2 / sigma)
    assert PureDP(0.7, "add_remove").to_replace_one() == PureDP(1.4, "replace_one")
    same = PureDP(0.7, "replace_one")
    assert same.to_replace_one() is same


def test_replace_one_accounting_lives_in_accounting():
    p = accounting.gaussian_marginals_privacy(rho=0.5, num_tables=3, delta=1e-5)   # μ = 1
    assert isinstance(p, PldProfile) and p.relation == "replace_one"
    assert p.noise_multiplier == pytest.approx(np.sqrt(6.0))
    np.testing.assert_allclose(p.deltas[1:4], [_gdp_delta(e, 1.0) for e in p.epsilons[1:4]],
                               rtol=1e-9)
    assert p.epsilon == pytest.approx(float(GaussianDP(1.0, "replace_one").to_approx(1e-5).epsilon),
                                      rel=1e-9)
    off = accounting.dpsgd_privacy(epsilon=np.inf, delta=1e-5, steps=3, sampling_rate=0.5)
    assert off.relation == "replace_one" and off.noise_multiplier == 0.0
    assert float(off.delta_of_epsilon(5.0)) == 1.0


@pytest.mark.slow
def test_privacy_model_is_the_bounds_view_of_the_guarantees():
    priors = [0.1] * 500
    for model, guarantee in ((bounds.PrivacyModel(epsilon=1.0), PureDP(1.0, "replace_one")),
                             (bounds.PrivacyModel(epsilon=1.0, delta=1e-4),
                              ApproxDP(1.0, 1e-4, "replace_one")),
                             (bounds.PrivacyModel(mu=1.0), GaussianDP(1.0, "replace_one"))):
        assert model.guarantee() == guarantee
        assert bounds.PrivacyModel.from_guarantee(guarantee) == model
        assert (bounds.summarize_bounds(priors, guarantee)
                == bounds.summarize_bounds(priors, model))
    with pytest.raises(ValueError, match="privacy.relation"):
        bounds.summarize_bounds(priors, PureDP(1.0, "add_remove"))
    # the group-privacy conversion makes it usable, with a larger (sound) bound
    converted = bounds.summarize_bounds(priors, PureDP(1.0, "add_remove").to_replace_one())
    assert converted.count_bound > bounds.summarize_bounds(priors, PureDP(1.0, "replace_one")
                                                           ).count_bound
    with pytest.raises(ValueError, match="privacy"):
        bounds.summarize_bounds(priors, RdpCurve([2.0], [1.0], "replace_one"))
