"""Joint reconstruction from noisy marginals: exact recovery without noise, the global optimum
on games small enough to enumerate, better than chance under noise, jit, and bad input."""

import itertools

import jax
import numpy as np
import pytest

from jaxaudit.attacks import (
    ReconstructionConfig,
    Table,
    joint_reconstruction,
    marginals_game,
    release_marginals,
)
from jaxaudit.attacks.reconstruction import JointReconstruction

FAST = ReconstructionConfig(restarts=3, steps=200)


def _identifiable_table(rng, n_rows=30, levels=(3, 2)):
    """Every row has its own quasi-identifier q, so the (q, h) marginals pin down h."""
    codes = np.stack([np.arange(n_rows)] + [rng.integers(0, k, n_rows) for k in levels], 1)
    names = ("q",) + tuple(f"h{j}" for j in range(len(levels)))
    return Table(names, codes.astype(np.int32),
                 (tuple(range(n_rows)),) + tuple(tuple(range(k)) for k in levels))


def _shared_table(rng, n_rows=16):
    """Quasi-identifiers shared between rows: the release need not identify every target."""
    codes = np.stack([rng.integers(0, 2, n_rows), rng.integers(0, 3, n_rows),
                      rng.integers(0, 2, n_rows)], 1)
    return Table(("q", "h1", "h2"), codes.astype(np.int32), ((0, 1), (0, 1, 2), (0, 1)))


def _objective(game, release, sigma, guess, prior=True):
    """The integer objective ‖r − Σ_i e(h_i)‖²/(2σ²) − Σ_i log D_i(h_i), in numpy."""
    n = game.truth.shape[0]
    counts = game.rest_counts + np.bincount(game.target_cells[np.arange(n), guess].ravel(),
                                            minlength=game.release_size)
    lp = np.maximum(game.log_prior, -69.0)[np.arange(n), guess].sum() if prior else 0.0
    return ((release - counts) ** 2).sum() / (2 * sigma**2) - lp


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_identifiable_table_exactly_without_noise(seed):
    table = _identifiable_table(np.random.default_rng(seed))
    game = marginals_game(jax.random.key(seed), table, attributes=["q", "h0", "h1"],
                          hidden_attributes=["h0", "h1"], num_targets=8)
    y = release_marginals(jax.random.key(100 + seed), game, 0.0)
    for sigma in (0.0, 1e-3):
        r = joint_reconstruction(jax.random.key(seed), game, y, sigma, FAST)
        assert isinstance(r, JointReconstruction)
        np.testing.assert_array_equal(np.asarray(r.guess), game.truth)
        # the guess reproduces the release exactly
        n = game.truth.shape[0]
        counts = game.rest_counts + np.bincount(
            game.target_cells[np.arange(n), np.asarray(r.guess)].ravel(),
            minlength=game.release_size)
        np.testing.assert_array_equal(counts, y)


@pytest.mark.slow
@pytest.mark.parametrize("seed,sigma", [(0, 0.5), (1, 1.0), (2, 0.0)])
def test_reaches_the_enumerated_global_optimum(seed, sigma):
    """n = 3 targets, H = 6 hidden values: the best of all 216 integer tables (exact
    enumeration of the objective, computed here in numpy) is what the attack returns."""
    table = _shared_table(np.random.default_rng(seed))
    game = marginals_game(jax.random.key(seed), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], num_targets=3)
    y = release_marginals(jax.random.key(50 + seed), game, sigma)
    s = max(sigma, 1e-6)
    big_h = game.hidden_values.shape[0]
    best = min(_objective(game, y, s, np.array(g))
               for g in itertools.product(range(big_h), repeat=3))
    r = joint_reconstruction(jax.random.key(seed), game, y, s, FAST)
    got = _objective(game, y, s, np.asarray(r.guess))
    assert got == pytest.approx(best, rel=1e-5, abs=1e-3)


@pytest.mark.slow
def test_better_than_chance_under_moderate_noise():
    """σ = 1 per cell on an identifiable table (each target's two cells are its own): the
    per-target exact-match probability of the best single-target test is well above both
    chance (1/H = 1/6) and the prior; over 10 seeded games × 12 targets the joint attack must
    beat chance by far (one-sided binomial: P[≥ 40 of 120 | p = 1/6] ≈ 2e-5)."""
    hits = 0
    for seed in range(10):
        table = _identifiable_table(np.random.default_rng(seed), n_rows=40)
        game = marginals_game(jax.random.key(seed), table, attributes=["q", "h0", "h1"],
                              hidden_attributes=["h0", "h1"], num_targets=12)
        y = release_marginals(jax.random.key(1000 + seed), game, 1.0)
        r = joint_reconstruction(jax.random.key(seed), game, y, 1.0, FAST)
        hits += int((np.asarray(r.guess) == game.truth).sum())
    assert hits >= 40


@pytest.mark.slow
def test_no_worse_than_the_prior_when_the_noise_swamps_the_release():
    """σ = 1e4: the release carries no information and the attack is the prior's MAP."""
    table = _shared_table(np.random.default_rng(3), n_rows=40)
    game = marginals_game(jax.random.key(3), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], num_targets=10)
    y = release_marginals(jax.random.key(4), game, 1e4)
    r = joint_reconstruction(jax.random.key(5), game, y, 1e4, FAST)
    np.testing.assert_array_equal(np.asarray(r.guess), np.argmax(game.log_prior, axis=1))


@pytest.mark.slow
def test_jit_matches_eager_and_confidence_is_a_fraction():
    table = _shared_table(np.random.default_rng(7), n_rows=20)
    game = marginals_game(jax.random.key(7), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], num_targets=5)
    y = release_marginals(jax.random.key(8), game, 0.3)
    key = jax.random.key(9)
    eager = joint_reconstruction(key, game, y, 0.3, FAST)
    jitted = jax.jit(lambda k, y, s: joint_reconstruction(k, game, y, s, FAST))(key, y, 0.3)
    np.testing.assert_array_equal(np.asarray(eager.guess), np.asarray(jitted.guess))
    np.testing.assert_allclose(np.asarray(eager.objective), np.asarray(jitted.objective),
                               rtol=1e-5)
    conf = np.asarray(eager.confidence)
    assert conf.shape == (5,) and ((conf >= 1 / 3 - 1e-6) & (conf <= 1)).all()
    np.testing.assert_allclose(np.asarray(eager.relaxed).sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("kwargs,name", [
    (dict(release="bad"), "release"),
    (dict(release=np.zeros(3)), "release"),
    (dict(release="nan"), "release"),
    (dict(noise_multiplier=-1.0), "noise_multiplier"),
    (dict(noise_multiplier=float("nan")), "noise_multiplier"),
    (dict(noise_multiplier="1"), "noise_multiplier"),
    (dict(restarts=0), "restarts"),
    (dict(steps=1.5), "steps"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(prior="yes"), "prior"),
    (dict(integer_sweeps=-1), "integer_sweeps"),
    (dict(sharpen=float("inf")), "sharpen"),
    (dict(anneal=-1.0), "anneal"),
    (dict(key=3), "key"),
    (dict(game=(1, 2)), "game"),
])
def test_bad_input_names_the_argument(kwargs, name):
    table = _shared_table(np.random.default_rng(0))
    game = marginals_game(jax.random.key(0), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], num_targets=2)
    y = release_marginals(jax.random.key(1), game, 0.5)
    if isinstance(kwargs.get("release"), str) and kwargs["release"] == "nan":
        bad = y.copy()
        bad[0] = np.nan
        kwargs = dict(release=bad)
    args = dict(key=jax.random.key(0), game=game, release=y, noise_multiplier=0.5)
    args.update(kwargs)
    fields = {f: args.pop(f) for f in ReconstructionConfig._fields if f in args}
    with pytest.raises(ValueError, match=name):
        joint_reconstruction(args.pop("key"), args.pop("game"), args.pop("release"),
                             args.pop("noise_multiplier"), ReconstructionConfig(**fields))


def test_degenerate_games_and_huge_loops_refused():
    """steps = 10¹² once gave an OverflowError, cells outside the release were clamped into
    other cells silently, and a game without targets gave an IndexError: all are refused,
    naming the field."""
    table = _shared_table(np.random.default_rng(0))
    game = marginals_game(jax.random.key(0), table, attributes=["q", "h1", "h2"],
                          hidden_attributes=["h1", "h2"], num_targets=2)
    y = release_marginals(jax.random.key(1), game, 0.5)
    key = jax.random.key(0)
    for field in ("steps", "integer_sweeps"):  # 1e12: not an integer; 10**12: too many
        for huge, why in ((1e12, ", got"), (10**12, " in")):
            with pytest.raises(ValueError, match=f"config.{field} must be an integer{why}"):
                joint_reconstruction(key, game, y, 0.5, FAST._replace(**{field: huge}))
    for bad in (game.release_size, 10**6, -1):
        cells = game.target_cells.copy()
        cells[1, 0, 0] = bad
        with pytest.raises(ValueError, match="game.target_cells must index the release"):
            joint_reconstruction(key, game._replace(target_cells=cells), y, 0.5, FAST)
    with pytest.raises(TypeError, match="game.target_cells must be integer"):
        joint_reconstruction(key, game._replace(target_cells=game.target_cells * 1.0), y, 0.5,
                             FAST)
    empty = game._replace(target_cells=game.target_cells[:0], log_prior=game.log_prior[:0],
                          truth=game.truth[:0])
    with pytest.raises(ValueError, match="at least one target"):
        joint_reconstruction(key, empty, y, 0.5, FAST)
    with pytest.raises(ValueError, match="game.log_prior"):
        joint_reconstruction(key, game._replace(log_prior=game.log_prior[:, :1]), y, 0.5, FAST)
    with pytest.raises(TypeError, match="ReconstructionConfig"):
        joint_reconstruction(key, game, y, 0.5, {"steps": 10})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noiseless_attack_fits_exactly_when_many_tables_do(seed):
    """1-way marginals: every permutation of the targets' hidden values fits the release
    exactly (enumerated here over all H^n tables: several do). At σ = 0 the attack returns one
    of them. (Not necessarily the most likely one, the posterior mode: that is a combinatorial
    search which coordinate descent does not do; docs/attacks.md.)"""
    rng = np.random.default_rng(seed)
    n_rows = 40
    codes = np.stack([rng.integers(0, 3, n_rows), rng.integers(0, 2, n_rows), np.zeros(n_rows)], 1)
    codes[:, 2] = (codes[:, 0] + rng.integers(0, 2, n_rows)) % 3  # h depends on q: priors differ
    table = Table(("q", "r", "h"), codes.astype(np.int32), ((0, 1, 2), (0, 1), (0, 1, 2)))
    game = marginals_game(jax.random.key(seed), table, attributes=["q", "r", "h"],
                          hidden_attributes=["h"], way=1, num_targets=5)
    y = release_marginals(jax.random.key(60 + seed), game, 0.0)
    n = game.truth.shape[0]

    def counts(g):
        return game.rest_counts + np.bincount(game.target_cells[np.arange(n), g].ravel(),
                                              minlength=game.release_size)

    fits = [g for g in itertools.product(range(3), repeat=n)
            if np.array_equal(counts(np.array(g)), y)]
    assert len(fits) > 1
    r = joint_reconstruction(jax.random.key(seed), game, y, 0.0, FAST)
    np.testing.assert_array_equal(counts(np.asarray(r.guess)), y)
    assert float(np.min(np.asarray(r.objective))) == pytest.approx(
        -1e-12 * np.maximum(game.log_prior, -69.0)[np.arange(n), np.asarray(r.guess)].sum(),
        abs=1e-6)
