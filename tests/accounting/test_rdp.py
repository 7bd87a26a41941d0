"""Tests of the public accounting functions (jaxaudit.accounting): our RDP against
dp_accounting where dp_accounting is exact (integer orders, q = 1, the (ε, δ) conversion rule)."""

import logging

import dp_accounting
import numpy as np
import pytest

from jaxaudit.accounting import epsilon_for_delta, noise_for_epsilon, rdp_epsilons

ORDERS = [1.1, 1.5, 2.0, 3.0, 8.0, 32.0]


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.5, 100), (10.0, 37)])
def test_full_batch_equals_gaussian_closed_form(sigma, steps):
    eps = rdp_epsilons(noise_multiplier=sigma, sampling_rate=1.0, steps=steps, orders=ORDERS)
    np.testing.assert_allclose(eps, np.asarray(ORDERS) * steps / (2 * sigma**2), rtol=1e-12)


def test_subsampled_matches_accountant_at_integer_orders_and_is_below_it_elsewhere():
    # dp_accounting's integer-order sum is exact; its fractional orders sum |terms| (too high).
    q, sigma, steps = 0.01, 1.1, 500
    eps = rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=steps, orders=ORDERS)
    acc = dp_accounting.rdp.RdpAccountant(ORDERS)
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    integer = np.asarray(ORDERS) == np.round(ORDERS)
    np.testing.assert_allclose(eps[integer], np.asarray(acc.rdp)[integer], rtol=1e-10)
    assert np.all(eps[~integer] < np.asarray(acc.rdp)[~integer])
    full = rdp_epsilons(noise_multiplier=sigma, sampling_rate=1.0, steps=steps, orders=ORDERS)
    assert np.all(eps < full) and np.all(np.diff(eps) > 0)


def test_epsilon_for_delta_is_dp_accountings_conversion_of_our_rdp():
    q, sigma, steps, delta = 0.02, 1.3, 300, 1e-5
    acc = dp_accounting.rdp.RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    orders = np.asarray(acc._orders, dtype=float)
    ours = epsilon_for_delta(noise_multiplier=sigma, sampling_rate=q, steps=steps, delta=delta,
                             orders=orders)
    eps = rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=steps, orders=orders)
    reference, _ = dp_accounting.rdp.compute_epsilon(orders, eps, delta)
    assert ours == pytest.approx(reference, rel=1e-12)
    # tighter RDP, same rule: never above dp_accounting's own answer
    assert ours <= acc.get_epsilon(delta) * (1 + 1e-12)
    # Independent check: the conversion of Balle et al. (2020, Thm 21),
    # ε = min_α ε_α + log((α−1)/α) − (log δ + log α)/(α−1), and Mironov's looser one.
    keep = orders > 1.01
    balle = np.min(eps[keep] + np.log((orders[keep] - 1) / orders[keep])
                   - (np.log(delta) + np.log(orders[keep])) / (orders[keep] - 1))
    classic = np.min(eps + np.log(1 / delta) / (orders - 1))
    assert ours == pytest.approx(balle, rel=1e-12)
    assert ours < classic


def test_epsilon_for_delta_uses_the_kl_shortcut_only_when_it_applies():
    # Full batch, σ = 50: ε_α = α/(2σ²). At δ = 0.3, δ² > 1 − exp(−ε_α) at α = 1.1, so the KL
    # bound δ ≤ √(1 − e^{−KL}) gives ε = 0; at δ = 1e−5 it does not, and the closed-form
    # conversion over the default orders applies.
    from jaxaudit.accounting import DEFAULT_ORDERS

    sigma, orders = 50.0, np.asarray(DEFAULT_ORDERS)
    assert 0.3**2 > -np.expm1(-1.1 / (2 * sigma**2))
    assert epsilon_for_delta(noise_multiplier=sigma, sampling_rate=1.0, steps=1, delta=0.3) == 0
    eps = orders / (2 * sigma**2)
    expected = max(0.0, np.min(eps + np.log1p(-1 / orders) - np.log(1e-5 * orders) / (orders - 1)))
    ours = epsilon_for_delta(noise_multiplier=sigma, sampling_rate=1.0, steps=1, delta=1e-5)
    assert ours == pytest.approx(expected, rel=1e-12) and ours > 0


@pytest.mark.slow
def test_noise_for_epsilon_round_trip():
    sigma = noise_for_epsilon(2.0, 1e-5, 200, 0.05)
    eps = epsilon_for_delta(noise_multiplier=sigma, sampling_rate=0.05, steps=200, delta=1e-5)
    assert eps <= 2.0 + 1e-6 and eps == pytest.approx(2.0, abs=2e-3)
    eps_less_noise = epsilon_for_delta(noise_multiplier=0.97 * sigma, sampling_rate=0.05,
                                       steps=200, delta=1e-5)
    assert eps_less_noise > 2.0


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(noise_multiplier=0.0, sampling_rate=1.0, steps=1, orders=[2.0]), "noise_multiplier"),
        (dict(noise_multiplier=1.0, sampling_rate=1.5, steps=1, orders=[2.0]), "sampling_rate"),
        (dict(noise_multiplier=1.0, sampling_rate=0.0, steps=1, orders=[2.0]), "sampling_rate"),
        (dict(noise_multiplier=1.0, sampling_rate=1.0, steps=0, orders=[2.0]), "steps"),
        (dict(noise_multiplier=1.0, sampling_rate=1.0, steps=2.5, orders=[2.0]), "steps"),
        (dict(noise_multiplier=1.0, sampling_rate=1.0, steps=1, orders=[1.0]), "orders"),
        (dict(noise_multiplier=np.nan, sampling_rate=1.0, steps=1, orders=[2.0]),
         "noise_multiplier"),
    ],
)
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        rdp_epsilons(**kwargs)


def test_bad_delta_and_epsilon():
    with pytest.raises(ValueError, match="delta"):
        epsilon_for_delta(noise_multiplier=1.0, sampling_rate=1.0, steps=1, delta=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        noise_for_epsilon(-1.0, 1e-5, 10, 0.1)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, mu", [(10.0, 2.000446), (4.38, 1.000557), (2.0, 0.501552)])
def test_pld_calibration_is_the_tight_gaussian_value(epsilon, mu):
    # Full-batch DP-GD for T steps is exactly μ-GDP with μ = √T/σ (Dong, Roth, Su 2022); the
    # (ε, δ = 1e−5) pairs are the published ones (δ(ε; μ) = 1e−5). The PLD accountant must land
    # on σ = √T/μ; the RDP accountant's conversion is looser (more noise).
    steps = 100
    sigma = noise_for_epsilon(epsilon, 1e-5, steps, 1.0, accountant="pld")
    assert sigma == pytest.approx(np.sqrt(steps) / mu, rel=2e-3)
    assert noise_for_epsilon(epsilon, 1e-5, steps, 1.0) > sigma * 1.03


def test_unknown_accountant_is_refused():
    with pytest.raises(ValueError, match="accountant"):
        noise_for_epsilon(1.0, 1e-5, 10, 1.0, accountant="prv")


def test_no_absl_warnings_reach_the_user(caplog, capfd):
    # dp_accounting's fractional orders at q = 0.5, σ = 2.62 used to log ~24 "Excluding this
    # order" warnings through absl; our RDP does not call it, and the PLD path is silenced.
    from jaxaudit.accounting import DEFAULT_ORDERS

    caplog.set_level(logging.DEBUG)
    eps = rdp_epsilons(noise_multiplier=2.62, sampling_rate=0.5, steps=100, orders=DEFAULT_ORDERS)
    assert np.all(np.isfinite(eps))
    epsilon_for_delta(noise_multiplier=2.62, sampling_rate=0.5, steps=100, delta=1e-5)
    captured = capfd.readouterr()
    assert "Excluding" not in caplog.text + captured.out + captured.err


def test_quiet_absl_silences_warnings_and_restores_verbosity(caplog):
    from absl import logging as absl_logging

    from jaxaudit.accounting.rdp import _quiet_absl

    before = absl_logging.get_verbosity()
    caplog.set_level(logging.DEBUG)
    with _quiet_absl():
        absl_logging.warning("Excluding this order from the epsilon computation.")
    assert "Excluding" not in caplog.text
    assert absl_logging.get_verbosity() == before
    absl_logging.warning("Excluding (outside the scope)")
    assert "Excluding (outside the scope)" in caplog.text
