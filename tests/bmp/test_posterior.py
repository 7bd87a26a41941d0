"""NUTS posterior vs the deterministic grid posterior, soundness of the lower quantile, the
Jeffreys baseline, input validation."""

import logging
import re
import warnings

import jax
import numpy as np
import pytest
from bmp_shared import COUNT_SETS, SOUND_EPS, SOUND_REPS

from jaxaudit import bmp, mia

QS = (0.05, 0.5, 0.95)


@pytest.fixture(scope="module")
def nuts_and_grids(shared_nuts):
    post = shared_nuts[0]
    grids = [bmp.posterior_grid(mia.ErrorCounts(*map(float, c)), num_epsilons=100, num_s=12)
             for c in COUNT_SETS]
    return post, grids


@pytest.mark.slow
@pytest.mark.parametrize("node", range(len(COUNT_SETS)))
def test_nuts_matches_grid(nuts_and_grids, node):
    post, grids = nuts_and_grids
    grid = grids[node]
    assert float(post.rhat[node]) <= 1.01
    ess = float(post.ess[node])
    for which, draws in (("l", post.epsilon_left[node]), ("r", post.epsilon_right[node])):
        got = np.quantile(np.asarray(draws).ravel(), QS)
        want = grid.quantile(which, QS)
        dens = np.maximum(grid.density_at(which, want), 1e-3)
        mcse = np.sqrt(np.asarray(QS) * (1 - np.asarray(QS)) / ess) / dens
        tol = np.maximum(0.05, 3 * mcse)
        assert np.all(np.abs(got - want) <= tol), (which, got, want, tol)


#: the reported mixing case of a fixed s (docs/bmp.md, section 5): s = 0.5, FP/N0 = 35/200, FN/N1 = 82/200
SPREAD_COUNTS, SPREAD_KEYS = (35.0, 200.0, 82.0, 200.0), 16


@pytest.fixture(scope="module")
def fixed_strength_runs():
    """One compiled call under a fixed s = 0.5 (4 chains × (500 + 1000)): lane 0 the count set
    (10, 100, 30, 100), lanes 1..16 the mixing case, each lane its own key (deduplicate=False)."""
    rows = [(10.0, 100.0, 30.0, 100.0)] + [SPREAD_COUNTS] * SPREAD_KEYS
    counts = mia.ErrorCounts(*(np.array([r[j] for r in rows]) for j in range(4)))
    return bmp.posterior_nuts(jax.random.key(1), counts, bmp.PosteriorModel(attack_prior=0.5),
                              bmp.NutsConfig(), deduplicate=False)


@pytest.mark.slow
def test_fixed_strength_noncentered_matches_grid(fixed_strength_runs):
    post = jax.tree.map(lambda x: x[0], fixed_strength_runs)
    counts = mia.ErrorCounts(10.0, 100.0, 30.0, 100.0)
    grid = bmp.posterior_grid(counts, bmp.PosteriorModel(attack_prior=0.5), num_epsilons=100)
    assert float(post.rhat) <= 1.01
    for which, draws in (("l", post.epsilon_left), ("r", post.epsilon_right)):
        got = np.quantile(np.asarray(draws).ravel(), QS)
        want = grid.quantile(which, QS)
        dens = np.maximum(grid.density_at(which, want), 1e-3)
        mcse = np.sqrt(np.asarray(QS) * (1 - np.asarray(QS)) / float(post.ess)) / dens
        assert np.all(np.abs(got - want) <= np.maximum(0.05, 3 * mcse)), (which, got, want)


@pytest.mark.slow
def test_fixed_strength_median_spread_matches_reported_precision(fixed_strength_runs):
    """The reported case of docs/bmp.md, section 5: at a fixed s = 0.5 with counts 35/200, 82/200 the ε_L medians of
    independent runs spread widely (sd ≈ 0.14 around the exact grid's 1.75) although R-hat ≤
    1.03 and the bulk ESS is 200–550. The spread is what the diagnostics promise, because the
    marginal is flat at its median (density 0.19: 41% of the mass lies in the arm
    ε_L ∈ [ε̂_L, ε̂_L/s] = [0.70, 1.40] of the L-shaped support, the rest is a prior-driven tail).

    16 keys against the exact grid median m: with the reported precision σ_k of run k, either
    the median's MCSE (``diagnostics.median_mcse``, in ``post.mcse_median``) or √(0.25/ESS_k)/p(m)
    from the bulk ESS and the grid density, T = Σ_k (median_k − m)² / mean_k(σ_k²) is ≈ χ²₁₆ if
    the precision is honest. The test fails outside χ²₁₆'s 0.1% and 99.9% quantiles (3.94,
    39.25), so an honest sampler fails it with probability ≈ 0.2% per statistic (asymptotic;
    measured on 64 keys: T/16 ≈ 1.04 for the bulk ESS, 1.05 for the MCSE), while an ESS that
    overstates the effective sample 5-fold (the issue's reading) fails the upper bound with
    probability 0.95 (3-fold: 0.67).
    """
    from scipy import stats

    post = jax.tree.map(lambda x: x[1:], fixed_strength_runs)
    grid = bmp.posterior_grid(mia.ErrorCounts(*SPREAD_COUNTS), bmp.PosteriorModel(attack_prior=0.5),
                              num_epsilons=400)
    m = float(grid.quantile("l", 0.5))
    dens = float(grid.density_at("l", m))
    eps_l = np.asarray(post.epsilon_left)
    medians = np.median(eps_l.reshape(SPREAD_KEYS, -1), axis=1)
    mcse = np.asarray(jax.vmap(bmp.diagnostics.median_mcse)(post.epsilon_left))
    ess_l = np.asarray(jax.vmap(bmp.diagnostics.bulk_ess)(post.epsilon_left))
    assert np.all(np.asarray(post.mcse_median) >= mcse * (1 - 1e-5))  # the larger of ε_L, ε_R
    lo, hi = stats.chi2.ppf([0.001, 0.999], SPREAD_KEYS)
    for name, sigma in (("mcse_median", mcse), ("bulk ESS", np.sqrt(0.25 / ess_l) / dens)):
        t = float(np.sum((medians - m) ** 2) / np.mean(sigma**2))
        print(f"{name}: T = {t:.1f} (chi2_16 99.8% range {lo:.1f}-{hi:.1f}), sd of medians "
              f"{medians.std(ddof=1):.3f}, rms sigma {np.sqrt(np.mean(sigma**2)):.3f}")
        assert lo <= t <= hi, (name, t, medians, sigma)


@pytest.mark.slow
def test_soundness_of_lower_quantile(shared_nuts):
    """Known mechanism (ε_L, ε_R) = (1, 2), 100 seeded repetitions of N0 = N1 = 100 runs each.

    * attack points drawn as the model assumes (s ~ U(0, 1), point uniform on the band): the
      posterior 5% quantile is below the truth in >= 90% of the repetitions;
    * optimal attack (the region's corner): the optimal-attack Jeffreys estimator's 5% quantile is
      below the truth in >= 90%. The BMP posterior's rate is only reported: its s ~ Beta(1, 1)
      prior expects sub-optimal attacks, so an operating point on the region's boundary is read as
      a weaker attack on a leakier mechanism and the posterior sits above what the optimal attack
      certifies (measured 54% / 80%; the grid posterior of the same model agrees, so it is the
      model, not the sampler — see :func:`jaxaudit.bmp.posterior_nuts`).
    """
    (eps_l, eps_r), reps = SOUND_EPS, SOUND_REPS
    _, post, counts = shared_nuts
    q_l = np.asarray(bmp.posterior_quantiles(post.epsilon_left, (0.05,)))[0]
    q_r = np.asarray(bmp.posterior_quantiles(post.epsilon_right, (0.05,)))[0]
    below_l, below_r = q_l <= eps_l, q_r <= eps_r
    opt, mod = slice(0, reps), slice(reps, 2 * reps)
    jeff = bmp.jeffreys_estimate(jax.random.key(4), mia.ErrorCounts(*(c[opt] for c in counts)),
                                 q=(0.05,))
    rates = dict(model_l=below_l[mod].mean(), model_r=below_r[mod].mean(),
                 optimal_l=below_l[opt].mean(), optimal_r=below_r[opt].mean(),
                 jeffreys_l=np.mean(jeff.epsilon_left[0] <= eps_l),
                 jeffreys_r=np.mean(jeff.epsilon_right[0] <= eps_r))
    print("soundness rates (5% quantile <= truth):",
          {k: round(float(r), 2) for k, r in rates.items()})
    assert rates["model_l"] >= 0.90 and rates["model_r"] >= 0.90
    assert rates["jeffreys_l"] >= 0.90 and rates["jeffreys_r"] >= 0.90
    # every posterior draw has ε ≥ ε̂(α, β) and the band prior favours sub-optimal attacks: the
    # posterior's lower quantile sits above the optimal-attack (Jeffreys) reading
    assert rates["optimal_l"] <= rates["jeffreys_l"] and rates["optimal_r"] <= rates["jeffreys_r"]
    assert np.mean(np.asarray(post.rhat) <= 1.05) >= 0.95


@pytest.mark.slow
def test_strong_attack_prior_covers_optimal_attacks(shared_nuts, strong_prior_nuts):
    """Optimal attacks at (ε_L, ε_R) = (1, 2), N0 = N1 = 100, 100 seeded repetitions: the
    posterior 5% quantile under s ~ Beta(20, 1) (an attack believed near-optimal) lies below the
    truth more often than under the agnostic Beta(1, 1), on both sides. The full table over
    settings and priors is in docs/bmp.md."""
    from bmp_shared import SOUND_REPS

    post, _ = strong_prior_nuts
    default = jax.tree.map(lambda x: x[:SOUND_REPS], shared_nuts[1])
    eps_l, eps_r = SOUND_EPS

    def rates(p):
        q_l = np.asarray(bmp.posterior_quantiles(p.epsilon_left, (0.05,)))[0]
        q_r = np.asarray(bmp.posterior_quantiles(p.epsilon_right, (0.05,)))[0]
        return np.mean(q_l <= eps_l), np.mean(q_r <= eps_r)

    strong, agnostic = rates(post), rates(default)
    print(f"optimal attack at (1, 2), 5% quantile below truth (eps_L, eps_R): Beta(20, 1) "
          f"{strong}, Beta(1, 1) {agnostic}; R-hat<=1.05 {np.mean(np.asarray(post.rhat) <= 1.05)}")
    assert strong[0] >= agnostic[0] + 0.1 and strong[1] >= agnostic[1]
    assert np.mean(np.asarray(post.rhat) <= 1.05) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("node", range(len(COUNT_SETS)))
def test_optimal_prior_nuts_matches_grid(optimal_prior_nuts, node):
    """NUTS on (logit α, logit β/(1 − α)) vs the grid posterior of the corner model evaluated
    directly in (ε_L, ε_R): quantiles agree within 3 Monte Carlo standard errors (or 0.05)."""
    post = optimal_prior_nuts[0]
    grid = bmp.posterior_grid(mia.ErrorCounts(*map(float, COUNT_SETS[node])),
                              bmp.PosteriorModel(attack_prior="optimal"), num_epsilons=600)
    assert float(post.rhat[node]) <= 1.01
    assert np.all(np.asarray(post.s[node]) == 1.0)
    for which, draws in (("l", post.epsilon_left[node]), ("r", post.epsilon_right[node])):
        got = np.quantile(np.asarray(draws).ravel(), QS)
        want = grid.quantile(which, QS)
        dens = np.maximum(grid.density_at(which, want), 1e-3)
        mcse = np.sqrt(np.asarray(QS) * (1 - np.asarray(QS)) / float(post.ess[node])) / dens
        assert np.all(np.abs(got - want) <= np.maximum(0.05, 3 * mcse)), (which, got, want)


@pytest.mark.slow
def test_optimal_prior_covers_optimal_attacks(optimal_prior_nuts):
    """Optimal attacks at (ε_L, ε_R) = (1, 2), N0 = N1 = 100, 100 seeded repetitions: under
    ``attack_prior="optimal"`` the posterior 5% quantile lies below the truth in >= 90% of the
    repetitions on each side (the issue's target for an attack believed optimal; a prior on s
    near 1 cannot reach it on the smaller side, see docs/bmp.md). Monte Carlo standard error of
    a rate near 0.95 over 100 repetitions: 0.022."""
    _, post, _ = optimal_prior_nuts
    eps_l, eps_r = SOUND_EPS
    q_l = np.asarray(bmp.posterior_quantiles(post.epsilon_left, (0.05,)))[0]
    q_r = np.asarray(bmp.posterior_quantiles(post.epsilon_right, (0.05,)))[0]
    rates = np.mean(q_l <= eps_l), np.mean(q_r <= eps_r)
    med_l = np.median(np.asarray(bmp.posterior_quantiles(post.epsilon_left, (0.5,))))
    med_r = np.median(np.asarray(bmp.posterior_quantiles(post.epsilon_right, (0.5,))))
    print(f"optimal prior, optimal attack at (1, 2): 5% quantile below truth {rates}; "
          f"median posterior median ({med_l:.3f}, {med_r:.3f})")
    assert min(rates) >= 0.90
    # not vacuous: the posterior medians sit near the truth
    assert abs(med_l - eps_l) < 0.15 and abs(med_r - eps_r) < 0.25
    assert np.all(np.asarray(post.rhat) <= 1.05) and int(np.sum(post.divergences)) == 0


@pytest.mark.slow
def test_jeffreys_estimate_is_centred_on_the_operating_point():
    counts = mia.ErrorCounts(np.array([10.0, 300.0]), np.array([100.0, 1000.0]),
                             np.array([30.0, 200.0]), np.array([100.0, 1000.0]))
    est = bmp.jeffreys_estimate(jax.random.key(4), counts, num_draws=20000)
    el, er = bmp.region.epsilons_from_errors(np.array([0.1, 0.3]), np.array([0.3, 0.2]))
    # the median of the pushed-forward Jeffreys posterior sits near the point estimate, and the
    # interval shrinks with the counts
    np.testing.assert_allclose(est.epsilon_left[1], el, atol=0.15)
    np.testing.assert_allclose(est.epsilon_right[1], er, atol=0.15)
    width = est.epsilon_right[2] - est.epsilon_right[0]
    assert width[1] < width[0]


@pytest.mark.parametrize("bad,match", [
    (mia.ErrorCounts(5, 4, 1, 10), "fp"),
    (mia.ErrorCounts(-1, 4, 1, 10), "counts.fp"),
    (mia.ErrorCounts(1, 4, 1, 0), "counts.n1"),
    (mia.ErrorCounts(1, 4, np.nan, 10), "counts.fn"),
    (mia.ErrorCounts(np.ones(3), np.ones(3), np.ones(2), np.ones(3)), "shape"),
])
def test_bad_counts_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        bmp.posterior_nuts(jax.random.key(0), bad)


def test_bad_options_raise():
    c = mia.ErrorCounts(1, 10, 2, 10)
    C, M = bmp.NutsConfig, bmp.PosteriorModel
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="max_num_doublings"):
            bmp.posterior_nuts(jax.random.key(0), c, config=C(max_num_doublings=bad))
        with pytest.raises(ValueError, match="warmup_max_num_doublings"):
            bmp.posterior_nuts(jax.random.key(0), c, config=C(warmup_max_num_doublings=bad))
    for bad in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="target_acceptance_rate"):
            bmp.posterior_nuts(jax.random.key(0), c, config=C(target_acceptance_rate=bad))
    for bad in ((0.0, 1.0), (1.0, -2.0), "beta:1", "gamma:2,2", -0.1, (1.0, float("inf")),
                "optimal:1", True):
        with pytest.raises(ValueError, match="attack_prior"):
            bmp.posterior_nuts(jax.random.key(0), c, bmp.PosteriorModel(attack_prior=bad))
    with pytest.raises(ValueError, match="num_samples"):
        bmp.posterior_nuts(jax.random.key(0), c, config=C(num_samples=0))
    with pytest.raises(ValueError, match="chunk_size"):
        bmp.posterior_nuts(jax.random.key(0), c, config=C(chunk_size=0))
    with pytest.raises(ValueError, match="attack_prior"):
        bmp.posterior_nuts(jax.random.key(0), c, bmp.PosteriorModel(attack_prior=1.0))
    with pytest.raises(ValueError, match="prior_variance"):
        bmp.posterior_nuts(jax.random.key(0), c, bmp.PosteriorModel(prior_variance=-1.0))
    with pytest.raises(ValueError, match="num_chains"):
        bmp.posterior_nuts(jax.random.key(0), c, config=C(num_chains=1))
    with pytest.raises(ValueError, match="symmetric"):
        bmp.posterior_nuts(jax.random.key(0), c, M(attack_prior="optimal", symmetric=True))
    with pytest.raises(ValueError, match="parameterization"):
        bmp.posterior_nuts(jax.random.key(0), c, M(attack_prior="optimal",
                                                   parameterization="centered"))
    with pytest.raises(ValueError, match="parameterization"):
        bmp.posterior_nuts(jax.random.key(0), c, M(parameterization="corner"))
    with pytest.raises(ValueError, match="delta_link"):
        bmp.posterior_nuts(jax.random.key(0), c, M(delta_link="tanh"))
    with pytest.raises(ValueError, match="config"):
        bmp.posterior_nuts(jax.random.key(0), c, config=dict(num_samples=10))
    with pytest.raises(ValueError, match="model"):  # the sampler settings in the model's place
        bmp.posterior_nuts(jax.random.key(0), c, C())
    with pytest.raises(TypeError, match="num_sample"):
        bmp.posterior_nuts(jax.random.key(0), c, num_sample=10)  # a typo is not swallowed


@pytest.mark.slow
def test_unmixed_chains_warn():
    """Two warm-up steps and four draws from over-dispersed starts cannot mix: R-hat > 1.05 for
    the count sets, and the user is told (the draws are returned all the same)."""
    c = mia.ErrorCounts(np.array([10.0, 40.0]), np.array([100.0, 100.0]),
                        np.array([30.0, 20.0]), np.array([100.0, 100.0]))
    with pytest.warns(RuntimeWarning, match="have not mixed for [12] of 2 distinct count sets"):
        post = bmp.posterior_nuts(jax.random.key(0), c,
                                  config=bmp.NutsConfig(num_warmup=2, num_samples=4))
    assert np.any(np.asarray(post.rhat) > 1.05)
    assert post.epsilon_left.shape == (2, 4, 4)


@pytest.mark.slow
def test_min_ess_reruns_only_the_hard_count_sets():
    """A degenerate count set (the attack wrong on every run: its posterior hugs the axes, with
    a low bulk ESS) is resampled once, with the thinning sized to reach min_ess, and reaches it;
    the easy one keeps its first-pass draws exactly."""
    c = mia.ErrorCounts(np.array([10.0, 32.0]), np.array([100.0, 32.0]),
                        np.array([30.0, 32.0]), np.array([100.0, 32.0]))
    config = bmp.NutsConfig(num_warmup=200, num_samples=300)
    first = bmp.posterior_nuts(jax.random.key(2), c, config=config)
    ess = np.asarray(first.ess)
    target = float(np.clip(1.5 * ess[1], ess[1] + 1, ess[0] - 1))
    assert ess[1] < target < ess[0], ess  # the degenerate set is the hard one
    post = bmp.posterior_nuts(jax.random.key(2), c, config=config._replace(min_ess=target))
    assert np.all(np.asarray(post.ess) >= target), (np.asarray(post.ess), target)
    assert post.epsilon_left.shape == first.epsilon_left.shape
    np.testing.assert_array_equal(np.asarray(post.epsilon_left[0]), np.asarray(first.epsilon_left[0]))
    assert not np.array_equal(np.asarray(post.epsilon_left[1]), np.asarray(first.epsilon_left[1]))
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="min_ess"):
            bmp.posterior_nuts(jax.random.key(0), c, config=config._replace(min_ess=bad))


def test_grid_warns_when_it_cannot_resolve_the_posterior():
    """The grid is shared by both axes: an attack that is always wrong on the OUT runs and
    always right on the IN runs pins ε_R near 0.02 while ε_L spreads to 6, so at 400 cells ε_R's
    central 90% spans 2 cells and the grid says so; the default range of the optimal model
    resolves a posterior concentrated near 0 (it matches NUTS there, see docs/bmp.md)."""
    optimal = bmp.PosteriorModel(attack_prior="optimal")
    with pytest.warns(RuntimeWarning, match="ε_R marginal spans"):
        bmp.posterior_grid(mia.ErrorCounts(50.0, 50.0, 0.0, 50.0), optimal, num_epsilons=400)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g = bmp.posterior_grid(mia.ErrorCounts(32.0, 32.0, 32.0, 32.0), optimal, num_epsilons=400)
    assert g.quantile("l", 0.95) < 0.2



@pytest.mark.slow  # two NUTS compilations
def test_min_ess_rerun_reuses_its_program_whatever_the_thinning(caplog):
    """The rerun's thinning is an input of its compiled program, and its rows are padded to at
    least 16: a second call whose rerun thins differently (another min_ess) compiles nothing."""
    c = mia.ErrorCounts(np.array([10.0, 32.0]), np.array([100.0, 32.0]),
                        np.array([30.0, 32.0]), np.array([100.0, 32.0]))
    config = bmp.NutsConfig(num_warmup=30, num_samples=40)
    first = bmp.posterior_nuts(jax.random.key(2), c, config=config)
    ess = float(np.asarray(first.ess).min())
    kw = dict(num_samples=40, num_warmup=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the short chains may stay below
        bmp.posterior_nuts(jax.random.key(2), c, config=bmp.NutsConfig(**kw, min_ess=1.5 * ess))
        with jax.log_compiles(True), caplog.at_level(logging.WARNING):
            caplog.clear()
            post = bmp.posterior_nuts(jax.random.key(2), c,
                                      config=bmp.NutsConfig(**kw, min_ess=5.0 * ess))
    # only the small eager indexing ops that write the rerun's rows back may compile (their
    # shapes follow the number of rerun rows); the sampler's program must not
    names = {m.group(1) for r in caplog.records
             if (m := re.match(r"Compiling jit\((\w+)\)", r.getMessage()))}
    assert names <= {"_squeeze", "dynamic_slice", "scatter", "gather"}, names
    assert np.asarray(post.ess).min() > np.asarray(first.ess).min()
