"""Hoeffding and empirical Bernstein radii (jaxaudit.stats.radii): their closed forms, seeded
coverage simulations and bad input."""

import math

import numpy as np
import pytest

from jaxaudit import stats


@pytest.mark.parametrize("n,value_range,confidence", [(10, 1.0, 0.95), (100, 2.5, 0.99),
                                                      (5000, 0.3, 0.5)])
def test_hoeffding_closed_form(n, value_range, confidence):
    want = value_range * math.sqrt(math.log(1.0 / (1.0 - confidence)) / (2.0 * n))
    assert float(stats.hoeffding_radius(n, value_range, confidence=confidence)) == pytest.approx(
        want, rel=1e-6)


@pytest.mark.parametrize("variance,n,value_range,confidence", [(0.0, 101, 1.0, 0.9),
                                                               (0.2, 50, 1.0, 0.95),
                                                               (3.0, 1000, 10.0, 0.999)])
def test_bernstein_closed_form(variance, n, value_range, confidence):
    log_term = math.log(2.0 / (1.0 - confidence))
    want = math.sqrt(2 * variance * log_term / n) + 7 * value_range * log_term / (3 * (n - 1))
    got = float(stats.bernstein_radius(variance, n, value_range, confidence=confidence))
    assert got == pytest.approx(want, rel=1e-6)


def test_radii_cover_in_simulation():
    """Bernoulli(0.3) samples of size 200, 20 000 seeded repetitions: P(mean − p ≥ r) and
    P(p > mean + r_Bernstein(V̂)) are at most β = 0.05 + 3 Monte Carlo standard errors."""
    rng = np.random.default_rng(22)
    reps, n, p, confidence = 20_000, 200, 0.3, 0.95
    beta = 1.0 - confidence
    x = rng.random((reps, n)) < p
    means = x.mean(axis=1)
    r_h = float(stats.hoeffding_radius(n, 1.0, confidence=confidence))
    r_b = np.asarray(stats.bernstein_radius(x.var(axis=1, ddof=1), n, 1.0,
                                            confidence=confidence))
    slack = 3 * math.sqrt(beta * (1 - beta) / reps)
    assert np.mean(means - p >= r_h) <= beta + slack
    assert np.mean(p > means + r_b) <= beta + slack
    # and the radii are not vacuous: a plug-in radius of 0 fails half the time
    assert np.mean(p > means) > 0.3


@pytest.mark.parametrize("call,name", [
    (lambda: stats.hoeffding_radius(0, 1.0, confidence=0.9), "n"),
    (lambda: stats.hoeffding_radius(10, -1.0, confidence=0.9), "value_range"),
    (lambda: stats.hoeffding_radius(10, 1.0, confidence=1.5), "confidence"),
    (lambda: stats.hoeffding_radius(10, 1.0), "confidence"),
    (lambda: stats.bernstein_radius(-0.1, 10, 1.0, confidence=0.9), "sample_variance"),
    (lambda: stats.bernstein_radius(0.1, 1, 1.0, confidence=0.9), "n"),
    (lambda: stats.bernstein_radius(0.1, 10, "wide", confidence=0.9), "value_range"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
