"""Reconstruction from noisy marginals: Bayes posterior vs brute force, privacy conversion,
Hamming guesses, loader pin, and soundness of the count bound over seeded repetitions."""

import itertools
import math

import jax
import numpy as np
import pytest
from scipy.stats import binom, norm

from jaxaudit.accounting import gaussian_marginals_privacy
from jaxaudit.attacks import (
    Table,
    load_fair,
    marginals_game,
    marginals_reconstruction,
    release_marginals,
)
from jaxaudit.attacks.marginals import hamming_guess, marginals_posterior
from jaxaudit.attacks.tabular import FAIR_SHA256
from jaxaudit.bounds import gdp_delta


def _tiny_table(rng, n=12):
    codes = np.stack([rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)], 1)
    return Table(("q", "h1", "h2"), codes.astype(np.int32), ((0, 1), (0, 1, 2), (0, 1)))


@pytest.mark.parametrize("way", [1, 2, 3])
def test_posterior_matches_brute_force_for_one_target(way):
    """n = 1: the posterior is exactly prior × Gaussian likelihood of the whole release."""
    table = _tiny_table(np.random.default_rng(way))
    game = marginals_game(jax.random.key(way), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], way=way, num_targets=1)
    sigma = 0.7
    y = release_marginals(jax.random.key(10 + way), game, sigma)
    got = marginals_posterior(game, y, sigma)[0]
    # Brute force: the release's mean for each hidden value h is rest + one-hot cells of (h, q).
    logs = []
    for h in range(game.hidden_values.shape[0]):
        mean = game.rest_counts.copy()
        mean[game.target_cells[0, h]] += 1.0
        logs.append(game.log_prior[0, h] + norm.logpdf(y, mean, sigma).sum())
    logs = np.array(logs)
    want = logs - np.logaddexp.reduce(logs)
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_game_prior_and_cells_by_enumeration():
    table = _tiny_table(np.random.default_rng(5), n=30)
    game = marginals_game(jax.random.key(1), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], way=2, num_targets=3)
    # Marginals: the 3 pairs; release size 2*3 + 2*2 + 3*2.
    assert game.release_size == 16 and len(game.subsets) == 3
    np.testing.assert_allclose(np.exp(game.log_prior).sum(1), 1.0)
    assert game.rest_counts.sum() == 27 * 3  # 27 rest rows, one cell per marginal each
    assert list(map(tuple, game.hidden_values)) == list(itertools.product(range(3), range(2)))


def test_hamming_guess_brute_force():
    rng = np.random.default_rng(0)
    values = np.array(list(itertools.product(range(3), range(2), range(2))))
    logp = np.log(rng.dirichlet(np.ones(len(values)), size=5))
    for d in (0, 1, 2):
        got = hamming_guess(logp, values, d)
        for i in range(5):
            mass = [sum(np.exp(logp[i, h]) for h in range(len(values))
                        if (values[h] != values[z]).sum() <= d) for z in range(len(values))]
            assert np.isclose(mass[got[i]], max(mass))
    assert (hamming_guess(logp, values, 0) == logp.argmax(1)).all()


def test_gaussian_marginals_privacy_is_gdp():
    p = gaussian_marginals_privacy(rho=2.0, num_tables=6, delta=1e-6)
    mu = 2.0
    assert math.isclose(p.noise_multiplier, math.sqrt(12) / mu)
    with jax.enable_x64(True):
        assert math.isclose(float(gdp_delta(p.epsilon, mu)), 1e-6, rel_tol=1e-6)
        grid_delta = np.asarray(gdp_delta(p.epsilons, mu))
    np.testing.assert_allclose(p.deltas, grid_delta, rtol=1e-12)
    # Grid lookup rounds ε down: never below the true δ(ε).
    e = np.linspace(0, p.epsilons[-1], 101)
    with jax.enable_x64(True):
        assert (p.delta_of_epsilon(e) >= np.asarray(gdp_delta(e, mu)) - 1e-15).all()
    with pytest.raises(ValueError, match="rho"):
        gaussian_marginals_privacy(rho=0.0, num_tables=1, delta=1e-5)


def test_fair_loader_pinned():
    t = load_fair()
    assert t.codes.shape == (6366, 9)
    assert [len(lv) for lv in t.levels] == [5, 6, 7, 6, 4, 6, 6, 6, 2]
    assert t.levels[1] == (17.5, 22.0, 27.0, 32.0, 37.0, 42.0)
    assert FAIR_SHA256.startswith("fd5f3f09")
    # 2,053 of the 6,366 respondents report time spent in affairs (affairs > 0).
    assert int(t.codes[:, -1].sum()) == 2053


def test_argument_errors_name_the_argument():
    kw = dict(attributes=["age", "educ", "religious"], hidden_attributes=["religious"], num_targets=5)
    with pytest.raises(ValueError, match="rho"):
        marginals_reconstruction(jax.random.key(0), rho=-1.0, **kw)
    with pytest.raises(ValueError, match="hidden"):
        marginals_reconstruction(jax.random.key(0), rho=1.0, attributes=["age"], hidden_attributes=["educ"])
    with pytest.raises(ValueError, match="attributes"):
        marginals_reconstruction(jax.random.key(0), rho=1.0, attributes=["nope", "educ"],
                                 hidden_attributes=["educ"])
    with pytest.raises(ValueError, match="distance"):
        marginals_reconstruction(jax.random.key(0), rho=1.0, distance=1, **kw)


def test_fair_attack_counts_and_monotone_baseline():
    kw = dict(attributes=["age", "educ", "religious", "occupation"],
              hidden_attributes=["religious", "occupation"], num_targets=40)
    exact = marginals_reconstruction(jax.random.key(3), rho=1.0, distance=0, **kw)
    approx = marginals_reconstruction(jax.random.key(3), rho=1.0, distance=1, **kw)
    for r in (exact, approx):
        assert 0 <= int(r.successes) <= 40 and int(r.successes) == int(r.hits.sum())
        assert float(r.baseline) == pytest.approx(float(r.priors.sum()))
        assert int(r.successes) < int(r.count_bound) <= 41
    # A Hamming ball contains its centre: approximate priors dominate exact ones.
    assert (np.asarray(approx.priors) >= np.asarray(exact.priors) - 1e-12).all()


def _isolated_table(n_rows=400):
    """Each row has its own quasi-identifier: every target's cells are its own, the attack on a
    binary hidden bit is exactly the optimal test between N(±1) cells, success Φ(μ/2)."""
    rng = np.random.default_rng(0)
    hidden = rng.permutation(np.arange(n_rows) % 2)
    codes = np.stack([np.arange(n_rows), hidden], 1).astype(np.int32)
    return Table(("qi", "bit"), codes, (tuple(range(n_rows)), (0, 1)))


@pytest.mark.slow
def test_count_bound_sound_over_seeded_repetitions():
    """Measured successes reach v_γ in at most a γ fraction of runs (plus binomial slack).

    Here the attack is the optimal test between N(+1) and N(−1) cells, so its success count is
    Binomial(n, Φ(μ/2)) with μ = √(2ρ): checked against that law, and any valid v_γ must lie
    above the law's (1 − γ)-quantile (a bound below it would be exceeded more than γ of the time).
    """
    table = _isolated_table()
    rho, n, reps, gamma = 0.125, 150, 60, 0.05
    kw = dict(attributes=["qi", "bit"], hidden_attributes=["bit"], way=2, num_targets=n, table=table,
              gamma=gamma)
    res = [marginals_reconstruction(jax.random.key(s), rho=rho, **kw) for s in range(reps)]
    succ = np.array([int(r.successes) for r in res])
    bound = np.array([int(r.count_bound) for r in res])
    assert (bound <= n).all()  # not vacuous
    exceed = int((succ >= bound).sum())
    assert exceed <= binom.ppf(0.999, reps, gamma)
    q = norm.cdf(math.sqrt(2 * rho) / 2)
    # Priors are ≈ 1/2 (balanced rest rows); the optimal attack's mean is n Φ(μ/2).
    assert abs(succ.mean() - n * q) < 4 * math.sqrt(n * q * (1 - q) / reps) + 1.0
    assert (bound >= binom.ppf(1 - gamma, n, q)).all()


@pytest.mark.slow
def test_memory_estimate_bounds_the_measured_peak():
    """The limit on --hidden rests on marginals_memory; it must not be
    below what the attack really allocates (tracemalloc sees numpy's buffers), nor wildly
    above (then usable games would be refused). The H² term dominates at H = 720."""
    import tracemalloc

    from jaxaudit.attacks.marginals import marginals_memory

    table = load_fair()
    attrs = ["age", "educ", "religious", "occupation", "rate_marriage", "yrs_married"]
    hidden = ["religious", "occupation", "rate_marriage", "age"]  # H = 4 * 6 * 5 * 6 = 720
    kw = dict(rho=1.0, attributes=attrs, hidden_attributes=hidden, table=table)
    marginals_reconstruction(jax.random.key(0), num_targets=2, **kw)  # compile and warm up
    sizes = [len(table.levels[table.columns.index(a)]) for a in attrs]
    tracemalloc.start()
    try:
        marginals_reconstruction(jax.random.key(1), num_targets=30, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = marginals_memory(sizes, len(hidden), 2, 30, 720)
    assert peak <= estimate <= 3 * peak, (peak, estimate)


def test_huge_hidden_space_refused_before_any_work(monkeypatch):
    """Five hidden attributes of Fair at n = 100 need 3.4 GiB and more (up to hundreds): refused
    at once, naming hidden and num_targets, before the game is built."""
    import importlib

    from jaxaudit.attacks.marginals import MAX_MEMORY_BYTES, check_marginals_arguments

    mod = importlib.import_module("jaxaudit.attacks.marginals")

    def boom(*a, **k):
        raise AssertionError("the game was built")

    monkeypatch.setattr(mod, "marginals_game", boom)
    attrs = ["age", "yrs_married", "children", "educ", "religious", "occupation",
             "rate_marriage"]
    hidden = ["religious", "rate_marriage", "age", "children", "educ"]  # the smallest five
    with pytest.raises(ValueError, match=r"hidden_attributes .* GiB .*num_targets"):
        marginals_reconstruction(jax.random.key(0), rho=1.0, attributes=attrs, hidden_attributes=hidden)
    # the same game with few enough targets fits (the limit is on memory, not on the names)
    h = 4 * 5 * 6 * 6 * 6
    small = MAX_MEMORY_BYTES // (3 * h * h)
    check_marginals_arguments(load_fair(), attributes=attrs, hidden_attributes=hidden, num_targets=small)


def test_table_is_checked():
    """A Table whose codes exceed its levels once spilled cells into the neighbouring marginals
    (or gave numpy's broadcast error in a hidden column); float codes were truncated and a dict
    gave an AttributeError. All are refused, naming the column or the type."""
    fair = load_fair()
    attrs = ["age", "educ", "religious"]
    kw = dict(attributes=attrs, hidden_attributes=["religious"], num_targets=5)
    for column in ("educ", "religious"):  # a released and a hidden column
        c = fair.columns.index(column)
        codes = fair.codes.copy()
        codes[7, c] = len(fair.levels[c])  # one past the last level
        with pytest.raises(ValueError, match=f"column '{column}' has {len(fair.levels[c])} "
                                             f"levels.*got {len(fair.levels[c])} in row 7"):
            marginals_game(jax.random.key(0), fair._replace(codes=codes), **kw)
        codes[7, c] = -1
        with pytest.raises(ValueError, match=f"column '{column}'.*got -1 in row 7"):
            marginals_reconstruction(jax.random.key(0), rho=1.0, table=fair._replace(codes=codes),
                                     **kw)
    with pytest.raises(TypeError, match="codes must be an integer array, got dtype float64"):
        marginals_game(jax.random.key(0), fair._replace(codes=fair.codes + 0.5), **kw)
    with pytest.raises(TypeError, match="table must be a jaxaudit.attacks.Table.*got dict"):
        marginals_game(jax.random.key(0), dict(fair._asdict()), **kw)
    with pytest.raises(ValueError, match="codes must have shape"):
        marginals_game(jax.random.key(0), fair._replace(codes=fair.codes[:, :3]), **kw)
    with pytest.raises(ValueError, match="levels must hold one tuple"):
        marginals_game(jax.random.key(0), fair._replace(levels=fair.levels[:3]), **kw)
    game = marginals_game(jax.random.key(0), fair, **kw)  # the real table passes
    assert game.truth.shape == (5,)


@pytest.mark.parametrize(("sigma", "error"), [
    (float("nan"), ValueError), (float("inf"), ValueError), (-1.0, ValueError), ("1", TypeError),
])
def test_release_and_posterior_refuse_a_bad_sigma(sigma, error):
    """σ NaN gave an all-NaN release, ∞ ±inf, −1 and the string "1" a release."""
    game = marginals_game(jax.random.key(0), _tiny_table(np.random.default_rng(0)),
                          attributes=["q", "h1", "h2"], hidden_attributes=["h1"], num_targets=2)
    with pytest.raises(error, match="noise_multiplier"):
        release_marginals(jax.random.key(1), game, sigma)
    y = release_marginals(jax.random.key(1), game, 0.0)  # σ = 0: the exact marginals
    n = game.truth.shape[0]
    want = game.rest_counts + np.bincount(
        game.target_cells[np.arange(n), game.truth].ravel(), minlength=game.release_size)
    np.testing.assert_array_equal(y, want)
    with pytest.raises(error, match="noise_multiplier"):
        marginals_posterior(game, y, sigma)


@pytest.mark.parametrize("field", ["attributes", "hidden_attributes"])
def test_a_bare_string_is_not_a_list_of_columns(field):
    """attributes="abc" was split into the columns "a", "b", "c"."""
    table = Table(("a", "b", "c"), np.random.default_rng(0).integers(0, 2, (12, 3)).astype(
        np.int32), ((0, 1),) * 3)
    kw = dict(attributes=["a", "b", "c"], hidden_attributes=["c"])
    kw[field] = "abc" if field == "attributes" else "c"
    with pytest.raises(TypeError, match=f"{field} must be a sequence of column names"):
        marginals_game(jax.random.key(0), table, num_targets=5, **kw)


@pytest.mark.parametrize("bad", [0, "key", np.array([1, 2, 3], np.uint32)])
def test_a_non_key_gets_the_library_key_message(bad):
    """A seed, a string or malformed key data: the library's TypeError naming ``key``, not JAX's
    "invalid PRNG key data"."""
    with pytest.raises(TypeError, match=r"key must be a JAX PRNG key"):
        marginals_reconstruction(bad, rho=1.0, attributes=["age", "educ"], hidden_attributes=["educ"],
                                 num_targets=5)


def test_a_batch_of_keys_is_refused_by_name():
    with pytest.raises(ValueError, match=r"key must be one PRNG key"):
        marginals_reconstruction(jax.random.split(jax.random.key(0), 2), rho=1.0,
                                 attributes=["age", "educ"], hidden_attributes=["educ"], num_targets=5)


def test_every_key_taking_attack_function_gets_the_library_key_message():
    """marginals_game, release_marginals and the LM trainers check their key first."""
    from jaxaudit.attacks import pretrain_public, train_and_score, train_dp_lm

    table = load_fair()
    calls = [
        lambda k: marginals_game(k, table, attributes=["age", "educ"], hidden_attributes=["educ"],
                                 num_targets=3),
        lambda k: release_marginals(k, None, 1.0),
        lambda k: train_dp_lm(k, None, None, None, noise_multiplier=1.0),
        lambda k: pretrain_public(k, None, None),
        lambda k: train_and_score(k, None, None, epsilon=1.0),
    ]
    for call in calls:
        for bad in (0, np.array([1, 2, 3], np.uint32)):
            with pytest.raises(TypeError, match=r"key must be a JAX PRNG key"):
                call(bad)
