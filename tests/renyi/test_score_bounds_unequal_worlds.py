"""The one-run audits on worlds of unequal size (renyi.epsilon_lower_bounds, ``inclusion=``).

The one-run theorems take the baseline of a guess "in" to be 1/2 (a fair coin per canary). With
1,000 in-world scores against 50 out-world ones a blind guess "in" is right 95% of the time; read
as leakage, it gave one-run ε = 2.56 (f-DP 3.45) on scores with no signal at all. With
``inclusion="fixed"`` (many-run scores) the larger world is subsampled to the smaller one's size.
"""

import jax
import numpy as np
import pytest
from scipy import stats

from jaxaudit import renyi
from jaxaudit.renyi import score_bounds as sb

DELTA = 1e-5


@pytest.mark.parametrize("n_in,n_out", [(1000, 50), (10_000, 1000), (50, 1000)])
def test_constant_scores_show_no_leakage(n_in, n_out):
    """All scores equal: no test can tell the worlds apart, whatever their sizes."""
    res = renyi.epsilon_lower_bounds(jax.random.key(0), np.zeros(n_in), np.zeros(n_out),
                                     delta=DELTA)
    assert float(res.one_run) == 0.0
    assert float(res.fdp_one_run_mu) == 0.0 and float(res.fdp_one_run) == 0.0
    assert int(res.one_run_canaries) == 2 * min(n_in, n_out)


def test_same_law_scores_2000_against_8_show_no_leakage():
    """The reported case: N(0, 1) scores, 2,000 in against 8 out, gave 4.26 (f-DP 6.59) in 5 of
    5 trials."""
    rng = np.random.default_rng(7)
    for trial in range(5):
        res = renyi.epsilon_lower_bounds(jax.random.key(trial), rng.normal(size=2000),
                                         rng.normal(size=8), delta=DELTA)
        assert float(res.one_run) == 0.0 and float(res.fdp_one_run_mu) == 0.0


def test_equal_worlds_subsample_is_blind_and_exact():
    """The larger world is cut to the smaller one's size by a score-blind permutation: a subset
    of its scores, the same for the same seed, and equal-sized worlds are left untouched."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=300), rng.normal(size=40)
    a1, b1 = sb.equal_worlds(a, b, 5)
    a2, _ = sb.equal_worlds(a, b, 5)
    a3, _ = sb.equal_worlds(a, b, 6)
    assert a1.size == b1.size == 40 and b1 is b
    assert np.isin(a1, a).all() and np.unique(a1).size == 40
    np.testing.assert_array_equal(a1, a2)
    assert not np.array_equal(a1, a3)
    c, d = rng.normal(size=30), rng.normal(size=30)
    c1, d1 = sb.equal_worlds(c, d, 5)
    assert c1 is c and d1 is d


def test_equal_sizes_unchanged_and_coin_keeps_every_score():
    """Equal worlds give the same numbers under both inclusion rules; "coin" (one training run,
    each canary's world a fair coin) counts every score as a canary."""
    rng = np.random.default_rng(2)
    inn, out = rng.normal(2.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    key = jax.random.key(3)
    fixed = renyi.epsilon_lower_bounds(key, inn, out, delta=DELTA)
    coin = renyi.epsilon_lower_bounds(key, inn, out, delta=DELTA, inclusion="coin")
    assert float(fixed.one_run) == float(coin.one_run) > 0
    assert float(fixed.fdp_one_run_mu) == float(coin.fdp_one_run_mu)
    unequal = renyi.epsilon_lower_bounds(key, inn, out[:100], delta=DELTA, inclusion="coin")
    assert int(unequal.one_run_canaries) == 500
    cut = renyi.epsilon_lower_bounds(key, inn, out[:100], delta=DELTA)
    assert int(cut.one_run_canaries) == 200


def test_inclusion_is_checked():
    with pytest.raises(ValueError, match="inclusion"):
        renyi.epsilon_lower_bounds(jax.random.key(0), np.zeros(10), np.zeros(10), delta=DELTA,
                                   inclusion="balanced")


def _null_exceedances(ratio, n_small, trials, seed):
    """Count, over ``trials`` draws of same-law N(0, 1) scores (ratio·n_small in, n_small out,
    and the reverse), the draws where each bound claims leakage (> 0)."""
    rng = np.random.default_rng(seed)
    names = ("one_run", "fdp_one_run_mu", "clopper_pearson", "mu")
    hits = dict.fromkeys(names, 0)
    for t in range(trials):
        big, small = rng.normal(size=ratio * n_small), rng.normal(size=n_small)
        inn, out = (big, small) if t % 2 == 0 else (small, big)
        res = renyi.epsilon_lower_bounds(jax.random.key(seed * 100_003 + t), inn, out,
                                         delta=DELTA)
        for name in names:
            hits[name] += float(getattr(res, name)) > 0.0
    return hits


def test_null_exceedances_small():
    """60 null draws at 25:1; a bound claiming leakage more often than its 5% level would show
    over the Bin(60, 0.05) 99.9% quantile (9)."""
    hits = _null_exceedances(25, 8, 60, seed=11)
    limit = stats.binom.ppf(0.999, 60, 0.05)
    assert all(v <= limit for v in hits.values()), hits


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [1, 2, 10, 50, 250])
def test_null_study(ratio):
    """The null study of docs/renyi.md: 400 draws of same-law scores per size ratio (half with
    the larger world in, half out), 8·ratio against 8 (ratio ≥ 10) or 200·ratio against 200.
    Each bound at confidence 0.95 may exceed the truth (0) in at most 5% of draws: the count must
    stay below the Bin(400, 0.05) 99.9% quantile (35)."""
    n_small = 8 if ratio >= 10 else 200
    hits = _null_exceedances(ratio, n_small, 400, seed=ratio)
    limit = stats.binom.ppf(0.999, 400, 0.05)
    assert all(v <= limit for v in hits.values()), hits


def test_batched_key_and_array_delta_are_refused_by_name():
    """A batch of keys (jax.random.split(key, 2)) is not one key; δ = [1e-5, 1e-5] is not a
    scalar: both refused naming the argument (they were accepted / raised a raw TypeError)."""
    inn, out = np.ones(20), np.zeros(20)
    with pytest.raises(ValueError, match="key"):
        renyi.epsilon_lower_bounds(jax.random.split(jax.random.key(0), 2), inn, out, delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=np.array([DELTA, DELTA]))
    with pytest.raises(ValueError, match="confidence"):
        renyi.epsilon_lower_bounds(jax.random.key(0), inn, out, delta=DELTA,
                                   confidence=[0.9, 0.95])


def test_traced_cores_refuse_float32():
    """The traceable one-run cores returned values above the float64 bound in float32 (up to
    9·10⁻³); they now refuse anything below float64 at trace time, and run under x64."""
    import jax.numpy as jnp

    g, v = jnp.asarray([200]), jnp.asarray([180])
    with pytest.raises(TypeError, match="float64"):
        jax.jit(jax.vmap(lambda a, b: sb._one_run_epsilon(400.0, a, b, 0.05, 1e-5, 4096)))(g, v)
    with pytest.raises(TypeError, match="float64"):
        jax.jit(jax.vmap(lambda a, b: sb._fdp_one_run_mu(400.0, a, b, 0.05)))(g, v)
    with jax.enable_x64(True):
        eps = jax.jit(jax.vmap(lambda a, b: sb._one_run_epsilon(400.0, a, b, 0.05, 1e-5, 4096)))(
            g, v)
    assert float(eps[0]) > 0
