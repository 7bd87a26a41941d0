"""Annamalai & De Cristofaro's GDP audit in their own units, and the held-out default.

References computed independently here: the δ(ε) equation of μ-GDP at the seed authors' μ
values, and the "all scores" protocol recomputed with scipy's binomtest intervals exactly as
their public code does (two-sided 1 − 2·0.05 intervals, i.e. one-sided 95% per rate, best of all
thresholds with members scoring higher).
"""

import jax
import numpy as np
import pytest
from scipy import stats

from jaxaudit import bounds
from jaxaudit.renyi import gdp_epsilon_lower_bound
from jaxaudit.stats import gdp_epsilon


def gdp_delta(eps, mu):
    """δ(ε) of μ-GDP in float64: the library's one gdp_delta (jaxaudit.bounds) under x64."""
    with jax.enable_x64(True):
        return float(bounds.gdp_delta(eps, mu))


@pytest.mark.parametrize("mu, eps", [(2.000446, 10.0), (1.000557, 4.38), (0.501552, 2.0),
                                     (1.413676, 6.57), (3.161382, 17.85)])
def test_gdp_delta_equation_at_published_pairs(mu, eps):
    # δ(ε; μ) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = 1e−5 at the published (μ, ε) pairs
    assert gdp_delta(eps, mu) == pytest.approx(1e-5, rel=2e-4)
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(eps, abs=2e-3)


def _reference_all_thresholds(in_s, out_s, level=0.05):
    best = 0.0
    for t in np.unique(np.concatenate([in_s, out_s])):
        tp, fp = int(np.sum(in_s >= t)), int(np.sum(out_s >= t))
        fn = in_s.size - tp
        fpr_hi = stats.binomtest(fp, out_s.size).proportion_ci(1 - 2 * level).high
        fnr_hi = stats.binomtest(fn, in_s.size).proportion_ci(1 - 2 * level).high
        mu = stats.norm.ppf(1 - fpr_hi) - stats.norm.ppf(fnr_hi)
        best = max(best, mu)
    return best


def test_selection_all_matches_the_published_protocol():
    rng = np.random.default_rng(31)
    out_s = rng.normal(size=100)
    in_s = 1.5 + rng.normal(size=100)
    ours = gdp_epsilon_lower_bound(None, in_s, out_s, 1e-5, confidence=0.9, selection="all")
    ref_mu = _reference_all_thresholds(in_s, out_s)
    assert ours.mu == pytest.approx(ref_mu, rel=1e-6)
    assert ours.epsilon == pytest.approx(gdp_epsilon(ref_mu, 1e-5), rel=1e-6)


def test_held_out_selection_is_valid_and_all_is_optimistic():
    # Identical worlds: the held-out μ bound is 0 in ≥ 1 − significance of repetitions; the
    # all-scores maximum over thresholds is positive far more often (it is not a valid bound).
    rng = np.random.default_rng(7)
    reps, held, allsel = 200, 0, 0
    for _ in range(reps):
        a, b = rng.normal(size=100), rng.normal(size=100)
        held += gdp_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.9).mu > 0
        allsel += gdp_epsilon_lower_bound(None, a, b, 1e-5, confidence=0.9, selection="all").mu > 0
    assert held / reps <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / reps)
    assert allsel > held


def test_selection_refuses_unknown_value():
    with pytest.raises(ValueError, match="selection"):
        gdp_epsilon_lower_bound(jax.random.key(0), np.arange(10.0), np.arange(10.0), 1e-5, confidence=0.9, selection="best")
