"""Threshold-test baselines: no signal → ε = 0, coverage of the claimed significance."""

import jax
import numpy as np
import pytest
from scipy import stats

from jaxaudit import bounds
from jaxaudit.renyi import (
    binary_renyi,
    clopper_pearson_epsilon_lower_bound,
    gdp_epsilon_lower_bound,
    threshold_renyi_lower_bound,
)
from jaxaudit.stats import clopper_pearson_lower, clopper_pearson_upper, gdp_epsilon, gdp_to_rdp


def gdp_delta(eps, mu):
    """δ(ε) of μ-GDP in float64: the library's one gdp_delta (jaxaudit.bounds) under x64."""
    with jax.enable_x64(True):
        return float(bounds.gdp_delta(eps, mu))


def test_gdp_delta_matches_definition_and_epsilon_inverts_it():
    # δ(ε) = sup_S P(A∈S) − e^ε P(B∈S) for N(μ,1) vs N(0,1): attained at the likelihood-ratio set.
    mu, eps = 1.3, 0.7
    t = eps / mu + mu / 2
    direct = stats.norm.sf(t - mu) - np.exp(eps) * stats.norm.sf(t)
    assert gdp_delta(eps, mu) == pytest.approx(direct, rel=1e-10)
    for mu in (0.5, 1.0, 2.0, 4.0):
        e = gdp_epsilon(mu, 1e-5)
        assert gdp_delta(e, mu) == pytest.approx(1e-5, rel=1e-6)
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    np.testing.assert_allclose(gdp_to_rdp(2.0, [1.5, 2.0]), [3.0, 4.0])


def test_clopper_pearson_matches_beta_quantiles():
    assert clopper_pearson_upper(0, 10, confidence=0.95) == pytest.approx(1 - 0.05 ** (1 / 10))
    assert clopper_pearson_lower(10, 10, confidence=0.95) == pytest.approx(0.05 ** (1 / 10))
    assert clopper_pearson_upper(10, 10, confidence=0.95) == 1.0
    assert clopper_pearson_lower(0, 10, confidence=0.95) == 0


def test_no_signal_gives_zero_for_every_baseline():
    rng = np.random.default_rng(0)
    gdp, cp, ren = [], [], []
    for _ in range(40):
        a, b = rng.normal(size=2000), rng.normal(size=2000)
        gdp.append(gdp_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95).epsilon)
        cp.append(clopper_pearson_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95))
        ren.append(threshold_renyi_lower_bound(jax.random.key(0), a, b, 2.0, confidence=0.95))
    for values in (gdp, cp, ren):
        values = np.asarray(values)
        assert np.mean(values == 0.0) >= 0.9   # a positive value is a false detection (≤ 5%)
        assert np.max(values) < 0.5


def test_discrete_no_signal_scores():
    # Heavily tied scores (a known failure mode: thresholds between ties).
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, 3000).astype(float), rng.integers(0, 3, 3000).astype(float)
    assert gdp_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95).epsilon == 0.0
    assert clopper_pearson_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95) == 0.0
    assert threshold_renyi_lower_bound(jax.random.key(0), a, b, [1.5, 3.0], confidence=0.95).tolist() == [0.0, 0.0]


@pytest.mark.slow
def test_coverage_of_baselines_on_the_gaussian_mechanism():
    """Lower bounds exceed the truth in ≤ significance + 3 sd of 200 repetitions."""
    rng = np.random.default_rng(2)
    mu, reps, n, sig = 1.0, 200, 1000, 0.05
    alphas = np.array([1.5, 3.0])
    true_eps = gdp_epsilon(mu, 1e-5)
    true_rdp = alphas * mu**2 / 2
    over = np.zeros(4)
    mus = []
    for _ in range(reps):
        a, b = rng.normal(mu, 1, n), rng.normal(0, 1, n)
        g = gdp_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=1 - sig)
        mus.append(g.mu)
        over[0] += g.mu > mu
        over[1] += clopper_pearson_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=1 - sig) > true_eps
        r = threshold_renyi_lower_bound(jax.random.key(0), a, b, alphas, confidence=1 - sig)
        over[2:] += r > true_rdp
    limit = sig + 3 * np.sqrt(sig * (1 - sig) / reps)
    assert np.all(over / reps <= limit)
    # and the GDP method has power here (μ_lo is informative)
    assert 0.5 * mu < np.median(mus) < mu


def test_threshold_renyi_matches_binary_divergence():
    # With huge samples the bound approaches d_α(TPR‖FPR) at the best threshold.
    rng = np.random.default_rng(3)
    a = (rng.random(200_000) < 0.7).astype(float)
    b = (rng.random(200_000) < 0.2).astype(float)
    value = float(threshold_renyi_lower_bound(jax.random.key(0), a, b, 2.0, confidence=0.95))
    exact = max(binary_renyi(0.7, 0.2, 2.0), binary_renyi(0.2, 0.7, 2.0))
    assert 0.95 * exact < value <= exact


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: gdp_epsilon_lower_bound(jax.random.key(0), [1.0, np.nan, 2.0, 3.0], [1, 2, 3, 4], 1e-5, confidence=0.95),
         "in_scores"),
        (lambda: gdp_epsilon_lower_bound(jax.random.key(0), [1, 2, 3, 4], [1, 2, 3, 4], 1.5, confidence=0.95), "delta"),
        (lambda: gdp_epsilon_lower_bound(jax.random.key(0), [1, 2, 3, 4], [1, 2, 3, 4], 1e-5, confidence=1.0), "confidence"),
        (lambda: clopper_pearson_epsilon_lower_bound(jax.random.key(0), [], [1, 2, 3, 4], 1e-5, confidence=0.95), "in_scores"),
        (lambda: threshold_renyi_lower_bound(jax.random.key(0), [1, 2, 3, 4], [1, 2, 3, 4], 1.0, confidence=0.95), "orders"),
        (lambda: threshold_renyi_lower_bound(jax.random.key(0), [1, 2, 3, 4], [1, 2, 3, 4], [], confidence=0.95), "orders"),
        (lambda: threshold_renyi_lower_bound(jax.random.key(0), [1, 2, 3, 4], [[1, 2], [3, 4]], 2.0, confidence=0.95),
         "out_scores"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_rate_bounds_at_the_selected_threshold_cover_at_their_levels():
    """Tight check of the protocol: at the threshold chosen on the selection split, the true
    TPR/FPR (normal tails) lie outside their Clopper–Pearson bounds in ≤ significance/2 each.

    Choosing the threshold on the evaluation data, or giving each rate the full significance,
    pushes these rates well above significance/2 (CP is nearly exact per rate).
    """
    rng = np.random.default_rng(8)
    mu, reps, n, sig = 1.0, 200, 600, 0.2
    tpr_miss = fpr_miss = either = 0
    for _ in range(reps):
        inn, out = rng.normal(mu, 1, n), rng.normal(0, 1, n)
        test = gdp_epsilon_lower_bound(jax.random.key(int(rng.integers(2**31))), inn, out, 1e-5,
                                       confidence=1 - sig).test
        # say "in" iff sign·x ≥ t: P(sign·X ≥ t) for X ~ N(m, 1)
        rate = lambda m, t=test: stats.norm.sf(t.threshold - t.sign * m)
        miss_t, miss_f = test.tpr_lo > rate(mu), test.fpr_hi < rate(0.0)
        tpr_miss += miss_t
        fpr_miss += miss_f
        either += miss_t or miss_f
    sd = np.sqrt(sig / 2 * (1 - sig / 2) / reps)
    assert tpr_miss / reps <= sig / 2 + 3 * sd and fpr_miss / reps <= sig / 2 + 3 * sd
    assert either / reps <= sig + 3 * np.sqrt(sig * (1 - sig) / reps)
