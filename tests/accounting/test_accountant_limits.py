"""The accountants at the extremes: a ValueError naming the argument, never an OverflowError,
a NaN, a bracketing failure or a TiB allocation (σ = 10⁻³⁰⁰ or 10³⁰⁰, T = 10¹⁵, ε = 10⁹)."""

import math

import pytest

from jaxaudit.accounting import epsilon_for_delta, noise_for_epsilon, rdp_epsilons
from jaxaudit.accounting.rdp import MAX_PLD_EPSILON, MAX_PLD_STEPS, MIN_NOISE, pld_epsilon

MECH = dict(sampling_rate=0.01, steps=100)


@pytest.mark.parametrize("fn", [
    lambda s: rdp_epsilons(noise_multiplier=s, orders=[2.0], **MECH),
    lambda s: epsilon_for_delta(noise_multiplier=s, delta=1e-5, **MECH),
    lambda s: pld_epsilon(noise_multiplier=s, delta=1e-5, **MECH),
])
def test_tiny_noise_is_refused_by_name(fn):
    # before: NaN (RDP, σ² underflows) and an OverflowError inside dp_accounting (PLD)
    with pytest.raises(ValueError, match="noise_multiplier"):
        fn(1e-300)
    assert MIN_NOISE == 1e-100


def test_huge_noise_gives_zero_epsilon():
    # before: OverflowError (σ² in dp_accounting). ε is non-increasing in σ: 0 at σ = 10¹²
    assert pld_epsilon(noise_multiplier=1e300, delta=1e-5, **MECH) == 0.0
    assert epsilon_for_delta(noise_multiplier=1e300, delta=1e-5, **MECH) == 0.0


def test_pld_refuses_what_would_not_fit_in_memory():
    # before: a 221 TiB allocation (T = 10¹⁵) and NoBracketIntervalFoundError (ε = 10⁹)
    with pytest.raises(ValueError, match="steps=1000000000000000"):
        pld_epsilon(noise_multiplier=1.0, sampling_rate=0.01, steps=10**15, delta=1e-5)
    with pytest.raises(ValueError, match="steps"):
        noise_for_epsilon(10.0, 1e-5, MAX_PLD_STEPS + 1, 0.01, accountant="pld")
    with pytest.raises(ValueError, match="epsilon=1000000000.0"):
        noise_for_epsilon(1e9, 1e-5, 100, 1.0, accountant="pld")
    with pytest.raises(ValueError, match="RDP epsilon"):  # σ = 10⁻³: RDP ε ≈ 10⁸
        pld_epsilon(noise_multiplier=1e-3, delta=1e-5, **MECH)
    # the RDP accountant answers these
    assert math.isfinite(epsilon_for_delta(noise_multiplier=1.0, sampling_rate=0.01,
                                           steps=10**15, delta=1e-5))
    assert MAX_PLD_EPSILON == 1000.0


def test_pld_epsilon_is_the_accountants_number():
    # μ-GDP at full batch: T = 100, σ = 5 is μ = 2, ε(δ = 1e-5) = 10.0 (the docstring's pin)
    assert round(pld_epsilon(noise_multiplier=5.0, sampling_rate=1.0, steps=100, delta=1e-5),
                 1) == 10.0
