"""Binned Rényi lower bound: exact inner minimisation, coverage, power, reduction, bad input."""

import jax
import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.renyi import (
    binary_renyi,
    binned,
    binned_renyi_lower_bound,
    threshold_renyi_lower_bound,
)

SIG = 0.05


def _log_f(q, p, alpha):
    """log Σ q^α p^{1−α} along the last axis (inf where p = 0 < q)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(q > 0, alpha * np.log(q) + (1 - alpha) * np.log(p), -np.inf)
    t = np.where((q > 0) & (p <= 0), np.inf, t)
    return np.logaddexp.reduce(t, axis=-1)


def _simplex_grid(box, size):
    """Grid points of box ∩ simplex for k = 2 or 3: a grid over the k − 1 coordinates with the
    narrowest ranges (box ∩ what the simplex implies, edges included), the last one implied."""
    lo, hi = box
    lo_eff = np.maximum(lo, 1 - (hi.sum() - hi))
    hi_eff = np.minimum(hi, 1 - (lo.sum() - lo))
    order = np.argsort(hi_eff - lo_eff)
    free, implied = order[:-1], order[-1]
    axes = [np.linspace(lo_eff[j], hi_eff[j], size) for j in free]
    points = np.stack([g.ravel() for g in np.meshgrid(*axes)], axis=-1)
    last = 1 - points.sum(axis=1)
    keep = (last >= lo[implied]) & (last <= hi[implied])
    q = np.empty((keep.sum(), lo.size))
    q[:, free], q[:, implied] = points[keep], last[keep]
    return q


def _brute_force(box_q, box_p, alpha, size):
    """(min over a dense grid of both sets, that minimum polished by SLSQP from the best point).

    Every grid point is feasible, so the first is an upper bound of the minimum; the second is
    the reference for tightness.
    """
    qs, ps = _simplex_grid(box_q, size), _simplex_grid(box_p, size)
    best, arg = np.inf, None
    for chunk in np.array_split(np.arange(qs.shape[0]), max(1, qs.shape[0] // 200)):
        values = _log_f(qs[chunk, None, :], ps[None, :, :], alpha)
        i = np.unravel_index(np.argmin(values), values.shape)
        if values[i] < best:
            best, arg = values[i], (qs[chunk][i[0]], ps[i[1]])
    k = box_q[0].size
    res = optimize.minimize(
        lambda v: _log_f(v[:k], v[k:], alpha), np.concatenate(arg), method="SLSQP",
        bounds=list(zip(np.concatenate([box_q[0], np.maximum(box_p[0], 1e-12)]),
                        np.concatenate([box_q[1], box_p[1]]), strict=True)),
        constraints=[{"type": "eq", "fun": lambda v: v[:k].sum() - 1},
                     {"type": "eq", "fun": lambda v: v[k:].sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 500})
    feasible = abs(res.x[:k].sum() - 1) < 1e-10 and abs(res.x[k:].sum() - 1) < 1e-10
    return best, (min(best, res.fun) if feasible else best)


def _random_boxes(rng, k):
    """One-sided boxes around random distributions, as the confidence sets are built."""
    q, p = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    w = rng.uniform(0.0, 0.2, size=(4, k)) * rng.uniform(0.0, 1.0)
    heavy = q >= p
    box_q = (np.where(heavy, np.clip(q - w[0], 0, 1), 0.0),
             np.where(heavy, 1.0, np.clip(q + w[1], 0, 1)))
    box_p = (np.where(heavy, 0.0, np.clip(p - w[2], 0, 1)),
             np.where(heavy, np.clip(p + w[3], 0, 1), 1.0))
    return box_q, box_p


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_inner_minimum_matches_brute_force(k):
    """The certified dual value is never above the grid minimum (every grid point is feasible)
    and within 1e-7 (log scale) of the best feasible value found (grid polished by SLSQP, or the
    alternating primal minimisation, whichever is lower)."""
    rng = np.random.default_rng(10 + k)
    for alpha in (1.1, 1.5, 2.0, 4.0, 8.0):
        for _ in range(3):
            box_q, box_p = _random_boxes(rng, k)
            grid, polished = _brute_force(box_q, box_p, alpha, 1001 if k == 2 else 50)
            best = min(polished, _alternating_primal(box_q, box_p, alpha, iterations=200))
            value = binned._min_log_sum(box_q, box_p, alpha)
            assert value <= grid + 1e-13 * max(1.0, abs(grid))
            assert value >= best - 1e-7 * max(1.0, abs(best))


def test_two_bins_minimum_is_the_box_corner():
    # q_1 ≥ 0.6, p_1 ≤ 0.3: D_α(q‖p) is smallest at (0.6, 0.3), D_α(p‖q) likewise.
    box_q = (np.array([0.6, 0.0]), np.array([1.0, 1.0]))
    box_p = (np.array([0.0, 0.0]), np.array([0.3, 1.0]))
    for alpha in (1.01, 2.0, 16.0, 64.0):
        forward = binned._min_divergence(box_q, box_p, alpha)
        backward = binned._min_divergence(box_p, box_q, alpha)
        np.testing.assert_allclose([forward, backward],
                                   [binary_renyi(0.6, 0.3, alpha), binary_renyi(0.3, 0.6, alpha)],
                                   rtol=1e-9)
        assert forward <= binary_renyi(0.6, 0.3, alpha)


def _alternating_primal(box_q, box_p, alpha, iterations=3000):
    """Independent reference: exact block minimisation over q and p in turn (a primal value)."""
    def fill(base, lo, hi):
        g = lambda ls: np.sum(np.clip(np.exp(ls) * base, lo, hi)) - 1
        return np.clip(np.exp(optimize.brentq(g, -700, 700, xtol=1e-15)) * base, lo, hi)

    q, p = None, fill(np.ones_like(box_p[0]), *box_p)
    for _ in range(iterations):
        q = fill(p, *box_q)
        p = fill(q, *box_p)
    return _log_f(q, p, alpha)


@pytest.mark.slow
def test_inner_minimum_against_alternating_primal():
    """Up to 12 bins and α up to 32: 0 ≤ primal − dual ≤ 1e-7 relative (log scale)."""
    rng = np.random.default_rng(4)
    for _ in range(30):
        k = int(rng.integers(2, 13))
        alpha = float(rng.choice([1.01, 1.5, 2.0, 4.0, 8.0, 32.0]))
        box_q, box_p = _random_boxes(rng, k)
        primal = _alternating_primal(box_q, box_p, alpha, iterations=400)
        value = binned._min_log_sum(box_q, box_p, alpha)
        assert value <= primal + 1e-13 * max(1.0, abs(primal))
        assert value >= primal - 1e-6 * max(1.0, abs(primal))


def test_two_bins_is_the_threshold_bound():
    """bins=2 chooses and bounds the threshold exactly as threshold_renyi_lower_bound does."""
    rng = np.random.default_rng(5)
    alphas = [1.5, 2.0, 5.0]
    for case in range(12):
        n = [20, 100, 300, 2000][case % 4]     # 2000: more than 512 distinct candidates
        a, b = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
        if case % 3 == 0:
            a, b = -a, -b                      # members score lower: the "≤ t" test
        if case % 5 == 0:
            a, b = np.round(a), np.round(b)    # ties
        ours = binned_renyi_lower_bound(jax.random.key(case), a, b, alphas, bins=2)
        theirs = threshold_renyi_lower_bound(jax.random.key(case), a, b, alphas, confidence=1 - SIG)
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-12)
        assert np.all(ours <= theirs * (1 + 1e-12) + 1e-15)


@pytest.mark.slow
def test_coverage_on_gaussian_scores():
    """D_α = αΔ²/2: the bound exceeds it in ≤ significance + 3 binomial sd of 200 repetitions."""
    rng = np.random.default_rng(6)
    reps, n, delta, alpha = 200, 300, 1.0, 2.0
    over = 0
    for _ in range(reps):
        a, b = rng.normal(delta, 1, n), rng.normal(0, 1, n)
        value = binned_renyi_lower_bound(jax.random.key(int(rng.integers(2**31))), a, b, alpha,
                                         confidence=1 - SIG)
        over += value > alpha * delta**2 / 2
    assert over / reps <= SIG + 3 * np.sqrt(SIG * (1 - SIG) / reps)


@pytest.mark.slow
def test_identical_worlds_give_zero():
    """No signal: the bound is 0 (up to 1e-9) in at least 95% of 200 repetitions."""
    rng = np.random.default_rng(7)
    def one():
        a, b = rng.normal(size=300), rng.normal(size=300)
        return binned_renyi_lower_bound(jax.random.key(int(rng.integers(2**31))), a, b, 2.0)

    values = np.array([one() for _ in range(200)])
    assert np.all(values >= 0)
    assert np.mean(values <= 1e-9) >= 0.95


@pytest.mark.slow
def test_bin_probabilities_are_covered_at_the_chosen_partition():
    """Sharper than the test against αΔ²/2: at the partition chosen on the selection split, the
    bound exceeds max(D_α(q‖p), D_α(p‖q)) of the *true* bin probabilities (normal cdfs) in at most
    significance + 3 sd of the repetitions (the confidence set's own guarantee)."""
    rng = np.random.default_rng(8)
    reps, n, delta, alpha, sig = 150, 400, 0.5, 2.0, 0.3
    over = 0
    for _ in range(reps):
        a, b = rng.normal(delta, 1, n), rng.normal(0, 1, n)
        split = np.random.default_rng(int(rng.integers(2**31)))
        in_sel, in_eval = binned._split(split, a, 0.5)
        out_sel, out_eval = binned._split(split, b, 0.5)
        part = binned._select(in_sel, out_sel, alpha, binned.DEFAULT_BINS, sig)
        value = binned._partition_bound(in_eval, out_eval, part, alpha, sig)
        edges = np.concatenate([[-np.inf], part.edges, [np.inf]])
        q, p = np.diff(stats.norm.cdf(edges - delta)), np.diff(stats.norm.cdf(edges))
        truth = max(_log_f(q, p, alpha), _log_f(p, q, alpha)) / (alpha - 1)
        over += value > truth + 1e-12
    assert over / reps <= sig + 3 * np.sqrt(sig * (1 - sig) / reps)


def test_large_samples_beat_the_threshold_bound():
    """2·10⁴ runs per world, Δ = 1, α = 2 (truth 1): clearly positive, below the truth, and at
    least the threshold bound in 4 of 5 seeds."""
    rng = np.random.default_rng(9)
    wins = 0
    for seed in range(5):
        a, b = rng.normal(1.0, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000)
        value = float(binned_renyi_lower_bound(jax.random.key(seed), a, b, 2.0))
        assert 0.5 < value < 1.0
        wins += value >= float(threshold_renyi_lower_bound(jax.random.key(seed), a, b, 2.0, confidence=1 - SIG))
    assert wins >= 4


def test_shapes_and_degenerate_scores():
    rng = np.random.default_rng(11)
    a, b = rng.normal(1, 1, 500), rng.normal(0, 1, 500)
    assert binned_renyi_lower_bound(jax.random.key(0), a, b, 2.0).shape == ()
    assert binned_renyi_lower_bound(jax.random.key(0), a, b, [1.5, 2.0, 8.0], bins=[3, 8]).shape == (3,)
    assert binned_renyi_lower_bound(jax.random.key(0), np.ones(10), np.ones(10), 2.0) == 0.0
    assert binned_renyi_lower_bound(jax.random.key(0), [1, 2, 3, 4], [1, 2, 3, 4], [2.0, 64.0]).tolist() == [0, 0]


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"in_scores": [1.0, np.nan, 2.0, 3.0]}, "in_scores"),
        ({"out_scores": [1.0, 2.0, 3.0]}, "out_scores"),
        ({"out_scores": [[1.0, 2.0], [3.0, 4.0]]}, "out_scores"),
        ({"orders": 1.0}, "orders"),
        ({"orders": []}, "orders"),
        ({"orders": [[2.0]]}, "orders"),
        ({"bins": 1}, "bins"),
        ({"bins": [2, 2.5]}, "bins"),
        ({"bins": []}, "bins"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"selection_fraction": 1.0}, "selection_fraction"),
        ({"selection_fraction": 0.1}, "selection_fraction"),
    ],
)
def test_bad_input(kwargs, name):
    args = {"in_scores": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "out_scores": [0.0, 1.0, 2.0, 3.0],
            "orders": 2.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        binned_renyi_lower_bound(jax.random.key(0), args.pop("in_scores"), args.pop("out_scores"), args.pop("orders"),
                                 **args)
