"""Tests of renyi.epsilon_lower_bounds (one-run and f-DP one-run audits beside the threshold bounds)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxaudit import renyi
from jaxaudit.renyi import score_bounds as sb
from jaxaudit.stats import gdp_epsilon


def _quantile_normal(mu, n):
    """Scores at the mid-point quantiles of N(mu, 1), as jax_privacy's tests generate them
    (tests/auditing_test.py, ``_deterministic_normal``): Φ⁻¹((i + 1/2)/n) + mu."""
    return stats.norm.ppf(np.linspace(0, 1, n, endpoint=False) + 1 / (2 * n)) + mu


def _p_value_naive(m, n_guess, n_correct, eps, delta):
    """Steinke et al.'s p-value term by term with scipy (independent of the jnp core)."""
    q = 1.0 / (1.0 + np.exp(-eps))
    beta = stats.binom.sf(n_correct - 1, n_guess, q)
    window = max((sum(stats.binom.pmf(n_correct - j, n_guess, q) for j in range(1, i + 1)) / i
                  for i in range(1, n_correct + 1)), default=0.0)
    return min(beta + 2 * m * delta * window, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("m,g,v", [(20, 10, 9), (50, 30, 20), (100, 7, 7), (40, 12, 1)])
@pytest.mark.parametrize("eps,delta", [(0.0, 0.0), (0.7, 1e-3), (2.0, 1e-2), (1.3, 0.0)])
def test_p_value_matches_scipy(m, g, v, eps, delta):
    with jax.enable_x64(True):
        p = float(sb._one_run_p_value(jnp.asarray(float(m)), g, v, jnp.asarray(eps),
                                      jnp.asarray(delta), 128))
    assert p == pytest.approx(_p_value_naive(m, g, v, eps, delta), rel=1e-10, abs=1e-14)


@pytest.mark.slow
def test_one_run_epsilon_is_the_root_and_jits_and_vmaps():
    m, level, delta = 400.0, 0.01, 1e-4
    g = jnp.asarray([50, 80, 120])
    v = jnp.asarray([45, 70, 100])
    with jax.enable_x64(True):
        f = jax.jit(jax.vmap(lambda a, b: sb._one_run_epsilon(m, a, b, level, delta, 512)))
        eps = np.asarray(f(g, v))
    for e, gi, vi in zip(eps, np.asarray(g), np.asarray(v)):
        assert e > 0
        assert _p_value_naive(m, int(gi), int(vi), e, delta) <= level * (1 + 1e-9)  # rejected
        assert _p_value_naive(m, int(gi), int(vi), e + 1e-6, delta) > level    # the largest


@pytest.mark.slow
def test_reference_values_jax_privacy_shift_two():
    """Shift 2 only, 10⁴ scores per world (the full table is in the slow test below)."""
    n = 10_000
    res = renyi.epsilon_lower_bounds(jax.random.key(0), _quantile_normal(2.0, n), _quantile_normal(0.0, n),
                                     delta=1e-6, confidence=0.95, bonferroni="hull")
    assert float(res.one_run) == pytest.approx(2.311945, abs=1e-3)
    assert float(res.fdp_one_run) == pytest.approx(4.7218075, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("shift,one_run,fdp", [(1.0, 1.13346, 2.164749), (2.0, 2.311945, 4.7218075),
                                               (4.0, 4.395568, 9.133752)])
def test_reference_values_jax_privacy(shift, one_run, fdp):
    """google-deepmind/jax_privacy tests/auditing_test.py, test_epsilon_one_run_close:
    10⁴ quantile scores per world (N(shift, 1) vs N(0, 1)), significance 0.05, δ = 1e−6,
    CanaryScoreAuditor.epsilon_one_run / epsilon_one_run_fdp with the default Bonferroni
    threshold strategy give 1.13346 / 2.311945 / 4.395568 and 2.164749 / 4.7218075 / 9.133752."""
    n = 10_000
    res = renyi.epsilon_lower_bounds(jax.random.key(0), _quantile_normal(shift, n), _quantile_normal(0.0, n),
                                     delta=1e-6, confidence=0.95, bonferroni="hull")
    assert float(res.one_run) == pytest.approx(one_run, abs=1e-3)
    assert float(res.fdp_one_run) == pytest.approx(fdp, abs=1e-3)
    # Bounds below the truth: μ-GDP's ε at δ = 1e−6 (4.89 / 11.0 / 26.4 for μ = 1 / 2 / 4).
    assert float(res.one_run) < gdp_epsilon(shift, 1e-6)
    assert float(res.fdp_one_run_mu) < shift


def test_grid_counts_ignore_labels_on_ties():
    """All scores tied: the top-r guesses are a seeded random subset, not the in-world runs."""
    tp, fp = sb.grid_counts(np.zeros(500), np.zeros(500), tie_seed=1)
    r = tp + fp
    assert np.all(np.abs(tp - r / 2) <= 4 * np.sqrt(r / 4) + 1)
    assert tp[-1] == 500 and r[-1] == 1000 and r[0] == 1


@pytest.mark.slow
def test_identical_worlds_give_zero():
    rng = np.random.default_rng(3)
    x = rng.normal(size=300)
    res = renyi.epsilon_lower_bounds(jax.random.key(0), x, x.copy(), delta=1e-5)
    for field in ("clopper_pearson", "one_run", "mu", "gdp_epsilon", "fdp_one_run_mu",
                  "fdp_one_run"):
        assert float(getattr(res, field)) == 0.0, field
    res = renyi.epsilon_lower_bounds(jax.random.key(0), rng.normal(size=300), rng.normal(size=300), delta=1e-5)
    assert float(res.one_run) < 0.3 and float(res.clopper_pearson) < 0.3


@pytest.mark.slow
def test_fields_and_rdp_switch():
    rng = np.random.default_rng(4)
    inn, out = rng.normal(3.0, 1.0, 200), rng.normal(0.0, 1.0, 200)
    res = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5)
    assert res.orders.shape == res.threshold_rdp.shape == (0,)
    assert float(res.one_run) > 0 and float(res.fdp_one_run_mu) > 0
    assert float(res.fdp_one_run) == pytest.approx(gdp_epsilon(float(res.fdp_one_run_mu), 1e-5))


@pytest.mark.slow
def test_rdp_fields():
    rng = np.random.default_rng(4)
    inn, out = rng.normal(3.0, 1.0, 200), rng.normal(0.0, 1.0, 200)
    res = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5, include_rdp=True, orders=[2.0, 8.0])
    assert res.threshold_rdp.shape == res.binned_rdp.shape == (2,)
    assert np.all(res.threshold_rdp <= renyi.gaussian_renyi(3.0, 1.0, np.array([2.0, 8.0])))


def test_bonferroni_all_is_below_hull():
    """The valid count m + 1 tests each threshold at a smaller level than the hull count
    (K ≤ m + 1), so its bounds are never larger."""
    rng = np.random.default_rng(5)
    inn, out = rng.normal(2.5, 1.0, 150), rng.normal(0.0, 1.0, 150)
    valid = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5, bonferroni="all")
    hull = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5, bonferroni="hull")
    grid = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5)
    assert int(grid.num_tests) <= sb.GRID_POINTS and float(grid.one_run) > 0
    assert int(valid.num_tests) == 301 and int(hull.num_tests) < 301
    assert 0 < float(valid.one_run) < float(hull.one_run)
    assert 0 < float(valid.fdp_one_run_mu) < float(hull.fdp_one_run_mu)
    assert float(valid.clopper_pearson) == float(hull.clopper_pearson)


@pytest.mark.parametrize("kwargs,name", [
    (dict(in_scores=[1.0, np.nan] * 8), "in_scores"),
    (dict(out_scores=np.zeros((4, 4))), "out_scores"),
    (dict(in_scores=np.arange(5.0)), "in_scores"),
    (dict(delta=0.0), "delta"),
    (dict(delta=1.0), "delta"),
    (dict(confidence=1.0), "confidence"),
    (dict(confidence=-0.1), "confidence"),
    (dict(bonferroni="none"), "bonferroni"),
    (dict(bonferroni=3), "bonferroni"),
])
def test_bad_input_refused(kwargs, name):
    args = dict(in_scores=np.arange(20.0), out_scores=np.arange(20.0), delta=1e-5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        renyi.epsilon_lower_bounds(jax.random.key(0), **args)


@pytest.mark.parametrize("key", [-1, 1.5, 0, "0", None, np.zeros(3, np.uint32)])
def test_bad_key_gets_the_shared_key_error(key):
    """A seed where the key belongs (or any non-key) is refused with the library's one key
    message, not numpy's error from deep inside the split."""
    with pytest.raises(ValueError, match="key must be a JAX PRNG key"):
        renyi.epsilon_lower_bounds(key, np.arange(20.0), np.arange(20.0), delta=1e-5)


@pytest.mark.parametrize("orders", ["2", ["2", "4"], b"2", [2.0, 1.0]])
def test_orders_must_be_numbers_above_one(orders):
    """orders="2" was accepted (numpy parsed the string); strings and orders ≤ 1 are refused,
    also when include_rdp=False leaves them unused."""
    with pytest.raises(ValueError, match="orders"):
        renyi.epsilon_lower_bounds(jax.random.key(0), np.arange(20.0), np.arange(20.0),
                                   delta=1e-5, orders=orders)


@pytest.mark.slow
def test_a_legacy_key_splits_as_the_typed_key():
    rng = np.random.default_rng(3)
    inn, out = rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 200)
    typed = renyi.epsilon_lower_bounds(jax.random.key(7), inn, out, delta=1e-5)
    legacy = renyi.epsilon_lower_bounds(jax.random.PRNGKey(7), inn, out, delta=1e-5)
    for a, b in zip(typed, legacy):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------------------------
# Scores oriented the wrong way ("higher = member" is the convention)


def test_auc_is_the_mann_whitney_statistic():
    """The AUC behind the orientation warning against scipy's Mann–Whitney U (ties included)."""
    rng = np.random.default_rng(4)
    inn, out = np.round(rng.normal(0.3, 1.0, 150), 1), np.round(rng.normal(0.0, 1.0, 120), 1)
    u = stats.mannwhitneyu(inn, out, alternative="two-sided").statistic
    assert sb.warn_if_reversed(inn, out, "test") == pytest.approx(u / (150 * 120), rel=1e-12)


def test_reversed_scores_warn_and_name_the_fix():
    """In-world scores below the out-world ones (e.g. a loss passed where -loss belongs): the
    one-run bound drops to 0 and a UserWarning says how to orient them."""
    rng = np.random.default_rng(5)
    inn, out = rng.normal(0.0, 1.0, 300), rng.normal(2.0, 1.0, 300)
    with pytest.warns(UserWarning, match="higher = member"):
        res = renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=1e-5)
    assert float(res.one_run) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fixed = renyi.epsilon_lower_bounds(jax.random.key(0), -inn, -out, delta=1e-5)
    assert float(fixed.one_run) > 0


def test_well_oriented_and_null_scores_do_not_warn():
    rng = np.random.default_rng(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        renyi.epsilon_lower_bounds(jax.random.key(0), rng.normal(2.0, 1.0, 300),
                                   rng.normal(0.0, 1.0, 300), delta=1e-5)
        renyi.epsilon_lower_bounds(jax.random.key(0), rng.normal(size=300), rng.normal(size=300),
                                   delta=1e-5)
    # the null false-alarm rate is that of a one-sided 3-sigma test (about 0.13%)
    alarms = 0
    for _ in range(400):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sb.warn_if_reversed(rng.normal(size=100), rng.normal(size=80), "null")
        alarms += len(caught)
    assert alarms <= 4


@pytest.mark.slow
@pytest.mark.parametrize("bonferroni", ["grid", "hull"])
def test_coverage_gaussian(bonferroni):
    # "all" is never above "hull" (same thresholds, smaller level): its coverage follows.
    """μ-GDP mechanism (in ~ N(2, 1), out ~ N(0, 1), 200 random draws per world, 200 seeded
    repetitions, confidence 0.95, δ = 1e−5). Each bound may exceed the truth (ε of 2-GDP at δ,
    or μ = 2 for the μ bounds) in at most 5% of runs; allowed: ≤ 20 of 200
    (P[Bin(200, 0.05) ≥ 21] < 0.002)."""
    mu, delta, reps, n = 2.0, 1e-5, 200, 200
    true_eps = gdp_epsilon(mu, delta)
    rng = np.random.default_rng(20260512)
    over = dict(clopper_pearson=0, one_run=0, mu=0, fdp_one_run_mu=0)
    for rep in range(reps):
        res = renyi.epsilon_lower_bounds(jax.random.key(rep), rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n),
                                         delta=delta, confidence=0.95,
                                         bonferroni=bonferroni)
        over["clopper_pearson"] += float(res.clopper_pearson) > true_eps
        over["one_run"] += float(res.one_run) > true_eps
        over["mu"] += float(res.mu) > mu
        over["fdp_one_run_mu"] += float(res.fdp_one_run_mu) > mu
    print("exceedances of", reps, bonferroni, over)
    assert all(count <= 20 for count in over.values()), over


@pytest.mark.slow
@pytest.mark.parametrize("bonferroni", ["grid", "hull"])
def test_coverage_randomized_response(bonferroni):
    # "all" is never above "hull" (same thresholds, smaller level): its coverage follows.
    """A stress case where the bounds come close to the truth: randomized response, the score of
    an in-run is 1 with probability p = e^ε/(1 + e^ε), of an out-run with 1 − p (ε = 2, pure
    ε-DP, so ε(δ) ≤ 2 for every δ), 500 runs per world, 200 seeded repetitions, confidence 0.95,
    δ = 1e−8 (at 1e−5 the 2mδ term alone exceeds the level 0.05/1001 of bonferroni="all" and
    the one-run bound is 0). Allowed: ≤ 20 of 200 exceedances (P[Bin(200, 0.05) ≥ 21] < 0.002)."""
    eps, delta, reps, n = 2.0, 1e-8, 200, 500
    p = 1.0 / (1.0 + np.exp(-eps))
    rng = np.random.default_rng(20261201)
    over = dict(clopper_pearson=0, one_run=0)
    closest = 0.0
    for rep in range(reps):
        inn = (rng.random(n) < p).astype(float)
        out = (rng.random(n) < 1 - p).astype(float)
        res = renyi.epsilon_lower_bounds(jax.random.key(rep), inn, out, delta=delta, confidence=0.95,
                                         bonferroni=bonferroni)
        over["clopper_pearson"] += float(res.clopper_pearson) > eps
        over["one_run"] += float(res.one_run) > eps
        closest = max(closest, float(res.one_run))
    print("exceedances of", reps, bonferroni, over, "largest one-run bound", closest)
    assert closest > 1.0  # the stress case is informative
    assert all(count <= 20 for count in over.values()), over


def test_traced_input_refused_with_type_error():
    with pytest.raises(TypeError, match="epsilon_lower_bounds is host-side"):
        jax.jit(lambda a: renyi.epsilon_lower_bounds(jax.random.key(0), a, a, delta=1e-5))(jnp.zeros(16))
