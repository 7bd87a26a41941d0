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
    inverse_blowup_dp,
    inverse_blowup_gdp,
    kgk_bound_dp,
    kgk_bound_gdp,
    mmc_threshold,
    posterior_success,
    success_count_bound,
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
    assert set(s.baselines) == {"kgk_plus", "balle_rero", "kgk_plus_count", "mmc_threshold",
                                "steinke_threshold"}
    assert s.baselines["steinke_threshold"] == expected  # Steinke et al. = ours for K = 2
    assert (s.tightest_bound, s.tightest) == (expected, "ours")  # a tie goes to ours


def test_approximate_dp_and_gdp_use_their_own_bounds():
    p = np.full(40, 0.01)
    s = summarize_bounds(p, PrivacyModel(epsilon=1.0, delta=1e-6), uniform_support=100)
    # no pure-DP ReRo, no Steinke (K = 100); MMC with the (ε, δ) trade-off's f̄⁻¹
    assert set(s.baselines) == {"kgk_plus", "kgk_plus_count", "mmc_threshold"}
    assert s.baselines["mmc_threshold"] == mmc_threshold(40, 40, 100,
                                                         inverse_blowup_dp(1.0, 1e-6), 0.05)
    assert s.baselines["kgk_plus"] == pytest.approx(float(kgk_bound_dp(0.01, 1.0, 1e-6)))
    with jax.enable_x64(True):
        assert s.single_target_bound == pytest.approx(float(success_tail([0.01], 1.0, 1, 1e-6)))
    g = summarize_bounds(p, PrivacyModel(mu=1.0))
    assert g.per_target is None and g.privacy.startswith("1-GDP")
    assert g.count_bound == success_count_bound_fdp(p, lambda e: gdp_delta(e, 1.0))
    assert g.baselines == pytest.approx({"kgk_plus": float(kgk_bound_gdp(0.01, 1.0)),
                                         "balle_rero_zcdp": float(balle_rero_zcdp(0.01, 0.5)),
                                         "kgk_plus_count": 41})  # ⌈40·0.0924/0.05⌉ > n
    assert summarize_bounds(p, PrivacyModel(epsilon=2.0, mu=1.0)).per_target.beta == (
        pytest.approx(float(posterior_success(0.01, 2.0))))


@pytest.mark.parametrize(("privacy", "message"), [
    (PrivacyModel(), "epsilon"),
    (PrivacyModel(mu=0.0), "mu"),
    (PrivacyModel(epsilon=-1.0), "epsilon"),
])
def test_bad_privacy_is_refused(privacy, message):
    with pytest.raises(ValueError, match=message):
        summarize_bounds([0.1, 0.2], privacy)


def test_no_targets_is_refused():
    with pytest.raises(ValueError, match="priors"):
        summarize_bounds([], PrivacyModel(epsilon=1.0))


def _min_with_name(candidates):
    best = min(v for v in candidates.values() if v is not None)
    return best, next(k for k, v in candidates.items() if v == best)


@pytest.mark.parametrize("mu", [0.5, 1.0])
def test_tightest_bound_is_the_least_valid_count_bound_under_gdp(mu):
    """Uniform K = 10 under μ-GDP: MMC's one-run threshold is below our additive n·δ_f(ε)
    bound, so it is the tightest (each candidate recomputed by its own public function)."""
    n, k = 200, 10
    p = np.full(n, 1 / k)
    s = summarize_bounds(p, PrivacyModel(mu=mu), uniform_support=k)
    ours = success_count_bound_fdp(p, lambda e: gdp_delta(e, mu))
    mmc = mmc_threshold(n, n, k, inverse_blowup_gdp(mu), 0.05)
    kgk = float(np.sum(np.asarray(kgk_bound_gdp(p, mu), dtype=np.float64)))
    kgk_count = max(1, int(np.ceil(kgk / 0.05 * (1 + 1e-9))))
    kgk_count = kgk_count if kgk_count <= n else n + 1
    assert s.count_bound == ours and s.baselines["mmc_threshold"] == mmc
    assert s.baselines["kgk_plus_count"] == kgk_count
    expected = _min_with_name({"ours": ours, "kgk_plus": kgk_count, "mmc": mmc})
    assert (s.tightest_bound, s.tightest) == expected
    assert mmc < ours and s.tightest == "mmc"


@pytest.mark.slow
@pytest.mark.parametrize(("mu", "ours", "mmc"), [(0.5, 444, 305), (1.0, 891, 624)])
def test_fig1_case_n1000_k10(mu, ours, mmc):
    """The case of docs/bounds.md's Fig. 1 table: n = 1000, K = 10, uniform, γ = 0.05."""
    s = summarize_bounds(np.full(1000, 0.1), PrivacyModel(mu=mu), uniform_support=10)
    assert (s.count_bound, s.baselines["mmc_threshold"]) == (ours, mmc)
    assert (s.tightest_bound, s.tightest) == (mmc, "mmc")


def test_kgk_plus_count_is_markov_and_can_win():
    """Tiny priors: Σ_i b_i/γ < 1, so Markov's inequality gives v = 1 (a tie with ours, which
    goes to ours); under pure DP MMC and ours agree with KGK+ on the single-target level."""
    p = np.full(50, 1e-6)
    s = summarize_bounds(p, PrivacyModel(epsilon=1.0), uniform_support=10**6)
    b = float(kgk_bound_dp(1e-6, 1.0))
    assert s.baselines["kgk_plus_count"] == max(1, int(np.ceil(50 * b / 0.05)))
    assert s.count_bound == success_count_bound(p, 1.0) == 1
    assert (s.tightest_bound, s.tightest) == (1, "ours")
    mmc = mmc_threshold(50, 50, 10**6, inverse_blowup_dp(1.0), 0.05)
    assert s.baselines["mmc_threshold"] == mmc


def test_uniform_over_one_value_is_not_an_mmc_game():
    """K = 1 (the secret is known, p = 1): the count bound is vacuous; MMC (K ≥ 2) does not
    apply and no error names its internal alphabet size."""
    s = summarize_bounds(np.ones(10), PrivacyModel(epsilon=1.0), uniform_support=1)
    assert s.count_bound == 11 and s.vacuous and "mmc_threshold" not in s.baselines
    assert s.tightest_bound == 11
    with pytest.raises(ValueError, match="uniform_support"):
        summarize_bounds(np.ones(10), PrivacyModel(epsilon=1.0), uniform_support=0)


def test_report_prints_the_tightest_bound():
    """What `jaxaudit bounds` prints and the markdown summary show the tightest bound and its
    method (MMC at n = 200, K = 10, μ = 0.5, as computed by mmc_threshold above)."""
    from jaxaudit.pipelines import BoundsConfig, run_bounds
    from jaxaudit.report import bounds as report

    r = run_bounds(BoundsConfig(mu=0.5, prior="uniform:10", targets=200))
    mmc = mmc_threshold(200, 200, 10, inverse_blowup_gdp(0.5), 0.05)
    assert r.summary.tightest == "mmc" and r.summary.tightest_bound == mmc
    assert f"tightest valid count bound: {mmc}  (MMC)" in report.text(r)
    assert f"| tightest valid count bound | {mmc} (MMC) |" in report.markdown(r)
    assert report.as_json(r)["tightest_bound"] == mmc
