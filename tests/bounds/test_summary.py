"""summarize_bounds: each entry equals the public function it comes from, and the applicable
prior work is chosen as documented (independent references: scipy's binomial quantile)."""

import jax
import numpy as np
import pytest
import scipy.stats

from jaxaudit.bounds import (
    PrivacyModel,
    balle_rero_zcdp,
    gdp_delta,
    kgk_bound_approx,
    kgk_bound_gdp,
    posterior_success,
    success_count_bound_fdp,
    success_tail,
    summarize_bounds,
)


@pytest.mark.slow
def test_uniform_pure_dp_matches_binomial_and_lists_one_run_baselines():
    n, k, eps = 300, 2, 1.0
    s = summarize_bounds(np.full(n, 1 / k), PrivacyModel(epsilon=eps), uniform_support=k)
    q = np.exp(eps) / (np.exp(eps) + k - 1)  # β of the uniform-K prior (K-ary randomized response)
    tails = scipy.stats.binom.sf(np.arange(n + 1) - 1, n, q)
    expected = int(np.nonzero(tails <= 0.05)[0][0])
    assert s.count_bound == expected and not s.vacuous
    assert s.aggregate_gain == pytest.approx((expected - n / k) / n, rel=1e-12)
    assert s.per_target.beta == pytest.approx(q, rel=1e-12)
    assert s.per_target.gain == pytest.approx(q - 1 / k, rel=1e-12)
    assert s.single_target_bound == pytest.approx(q, rel=1e-12)
    assert set(s.baselines) == {"kgk_plus", "balle_rero", "mmc_threshold", "steinke_threshold"}
    assert s.baselines["steinke_threshold"] == expected  # Steinke et al. = ours for K = 2


def test_approximate_dp_and_gdp_use_their_own_bounds():
    p = np.full(40, 0.01)
    s = summarize_bounds(p, PrivacyModel(epsilon=1.0, delta=1e-6), uniform_support=100)
    assert set(s.baselines) == {"kgk_plus"}  # no pure-DP ReRo, no MMC/Steinke under (ε, δ)
    assert s.baselines["kgk_plus"] == pytest.approx(float(kgk_bound_approx(0.01, 1.0, 1e-6)))
    with jax.enable_x64(True):
        assert s.single_target_bound == pytest.approx(float(success_tail([0.01], 1.0, 1, 1e-6)))
    g = summarize_bounds(p, PrivacyModel(gdp_mu=1.0))
    assert g.per_target is None and g.privacy.startswith("1-GDP")
    assert g.count_bound == success_count_bound_fdp(p, lambda e: gdp_delta(e, 1.0))
    assert g.baselines == pytest.approx({"kgk_plus": float(kgk_bound_gdp(0.01, 1.0)),
                                         "balle_rero_zcdp": float(balle_rero_zcdp(0.01, 0.5))})
    assert summarize_bounds(p, PrivacyModel(epsilon=2.0, gdp_mu=1.0)).per_target.beta == (
        pytest.approx(float(posterior_success(0.01, 2.0))))


@pytest.mark.parametrize(("privacy", "message"), [
    (PrivacyModel(), "epsilon"),
    (PrivacyModel(gdp_mu=0.0), "gdp_mu"),
    (PrivacyModel(epsilon=-1.0), "epsilon"),
])
def test_bad_privacy_is_refused(privacy, message):
    with pytest.raises(ValueError, match=message):
        summarize_bounds([0.1, 0.2], privacy)


def test_no_targets_is_refused():
    with pytest.raises(ValueError, match="priors"):
        summarize_bounds([], PrivacyModel(epsilon=1.0))
