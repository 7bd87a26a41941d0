"""Prior encodings against brute force: top-k, balls, columns, Zipf normalisation."""

import itertools
import math

import numpy as np
import pytest

from jaxaudit.bounds import (
    ball_mass,
    ball_mass_sup,
    columns_prior,
    membership_prior,
    top_k_mass,
    uniform_prior,
    zipf_prior,
)


def test_top_k_equals_best_subset_by_enumeration():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(7), size=3)
    for k in (1, 2, 3):
        brute = [max(row[list(s)].sum() for s in itertools.combinations(range(7), k))
                 for row in probs]
        np.testing.assert_allclose(top_k_mass(probs, k), brute, rtol=1e-12)
        np.testing.assert_allclose(top_k_mass(probs, k), brute, rtol=1e-12)
    assert top_k_mass([0.2, 0.8], 5).item() == pytest.approx(1.0)


def test_membership_and_uniform():
    np.testing.assert_allclose(membership_prior([0.2, 0.7]), [0.8, 0.7])
    np.testing.assert_allclose(membership_prior([0.2, 0.7], guess=[True, False]), [0.2, 0.3])
    assert uniform_prior(10, 3) == pytest.approx(0.3) and uniform_prior(2, 5) == 1.0


@pytest.mark.parametrize("metric", ["l1", "l2", "linf", "hamming"])
def test_ball_mass_and_sup_bound(metric):
    rng = np.random.default_rng(1)
    values = rng.integers(0, 4, size=(30, 2)).astype(float)
    probs = rng.dirichlet(np.ones(30))
    radius = 1.0
    # Brute-force sup over a fine grid of real-valued guesses (the guess space is R^2 here).
    grid = np.stack(np.meshgrid(np.linspace(-1, 4, 51), np.linspace(-1, 4, 51)), -1).reshape(-1, 2)
    masses = ball_mass(values, probs, grid, radius, metric)
    direct = np.array([probs[_dist(values, g, metric) <= radius].sum() for g in grid[:50]])
    np.testing.assert_allclose(masses[:50], direct, rtol=1e-12)
    assert ball_mass_sup(values, probs, radius, metric) >= masses.max() - 1e-12
    exact_support = ball_mass_sup(values, probs, radius, metric, guesses_in_support=True)
    assert exact_support == pytest.approx(ball_mass(values, probs, values, radius, metric).max())


def _dist(values, g, metric):
    d = values - g
    return {"l1": np.abs(d).sum(1), "l2": np.sqrt((d**2).sum(1)), "linf": np.abs(d).max(1),
            "hamming": (d != 0).sum(1)}[metric]


def test_columns_prior_by_enumeration():
    cols = [np.array([0.5, 0.3, 0.2]), np.array([0.9, 0.1]), np.array([0.25] * 4)]
    for t in (1, 2, 3):
        best = 0.0
        for z in itertools.product(range(3), range(2), range(4)):  # every possible guess
            total = 0.0
            for x in itertools.product(range(3), range(2), range(4)):
                pr = math.prod(c[xi] for c, xi in zip(cols, x, strict=True))
                total += pr * (sum(a == b for a, b in zip(x, z, strict=True)) >= t)
            best = max(best, total)
        assert columns_prior(cols, t) == pytest.approx(best, rel=1e-12)


def test_zipf_normalisation_and_spec_scale():
    masses = zipf_prior(0.9, 5000)
    assert masses.sum() == pytest.approx(1.0, rel=1e-12)
    assert (np.diff(masses) < 0).all()
    direct = 1.0 / np.sum(np.arange(1, 10**6 + 1, dtype=float) ** -0.9)
    assert zipf_prior(0.9, 10**6, [1])[0] == pytest.approx(direct, rel=1e-10)
    assert zipf_prior(1.0, 10, [1])[0] == pytest.approx(1 / sum(1 / r for r in range(1, 11)))


@pytest.mark.parametrize(("fn", "args", "name"), [
    (top_k_mass, ([0.5, 0.6],), "probs"),
    (top_k_mass, ([0.5, 0.5], 0), "attempts"),
    (membership_prior, ([1.2],), "inclusion_prob"),
    (ball_mass, ([0.0, 1.0], [0.5, 0.5], [0.0], -1.0), "radius"),
    (ball_mass, ([0.0, 1.0], [0.5, 0.5], [0.0], 1.0, "cosine"), "metric"),
    (zipf_prior, (-1.0, 10), "exponent"),
    (zipf_prior, (1.0, 10, [11]), "ranks"),
    (columns_prior, ([[0.5, 0.5]], 0), "threshold"),
])
def test_bad_input(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)
