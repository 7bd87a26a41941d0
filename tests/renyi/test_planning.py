"""'How many runs?' predictor: agreement with a simulation, monotonicity, output, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxaudit.renyi import held_out_lower_bound, planning, runs_needed
from jaxaudit.renyi.planning import format_runs_needed


def _pilot(seed, n=250, shift=1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, n)


def _simulated_bounds(result, n, reps, seed):
    """Held-out bounds of the clipped model critic on data drawn from the fitted model."""
    alpha = result.orders
    m = n - math.floor(result.split * n)
    k_q, k_p = jax.random.split(jax.random.key(seed))
    x_q = result.mean_in + result.sd * jax.random.normal(k_q, (reps, m))
    x_p = result.mean_out + result.sd * jax.random.normal(k_p, (reps, m))
    slope = (result.mean_in - result.mean_out) / result.sd**2
    mid = 0.5 * (result.mean_in + result.mean_out)
    bound = jax.vmap(lambda g_q, g_p: held_out_lower_bound(
        g_q, g_p, alpha, result.clip_lo, result.clip_hi, radius=result.radius,
        confidence=1.0 - planning._failure_per_direction(result.confidence,
                                                          result.both_directions)))
    return np.asarray(bound(slope * (x_q - mid), slope * (x_p - mid)))


@pytest.mark.slow
@pytest.mark.parametrize("alpha,method", [(2.0, "bernstein"), (1.5, "hoeffding")])
def test_prediction_matches_a_simulation(alpha, method):
    """At the predicted n the mean simulated bound / estimate is the fraction ± 0.15 (observed
    within ±0.01: the prediction plugs the population moments into the same radii); at n/4 it is
    more than 0.25 below the fraction."""
    result = runs_needed(*_pilot(0), alpha, fraction=0.5, radius=method)
    assert result.reachable and result.model == "gaussian"
    assert result.estimate == pytest.approx(alpha * result.shift**2 / 2)
    assert result.expected_bound >= result.target > 0
    np.testing.assert_allclose(result.critic([result.mean_in, result.mean_out]),
                               [result.shift**2 / 2, -result.shift**2 / 2], rtol=1e-12)
    n = result.runs_per_world
    at_n = _simulated_bounds(result, n, reps=200, seed=1).mean() / result.estimate
    at_quarter = _simulated_bounds(result, n // 4, reps=200, seed=2).mean() / result.estimate
    assert abs(at_n - 0.5) <= 0.15
    assert at_quarter < 0.25
    # the pilot itself (125 held-out runs) is far from enough
    assert result.pilot_bound < 0.25 * result.estimate


def test_more_runs_for_a_larger_fraction_or_a_smaller_delta():
    pilot = _pilot(3)
    runs = [runs_needed(*pilot, 2.0, fraction=f).runs_per_world for f in (0.2, 0.4, 0.6, 0.8)]
    assert all(a < b for a, b in zip(runs, runs[1:]))
    by_delta = [runs_needed(*pilot, 2.0, confidence=1 - d).runs_per_world
                for d in (0.2, 0.05, 0.001)]
    assert all(a < b for a, b in zip(by_delta, by_delta[1:]))


def test_orders_as_an_array_match_single_orders():
    pilot = _pilot(4)
    both = runs_needed(*pilot, [1.5, 4.0])
    for i, alpha in enumerate((1.5, 4.0)):
        single = runs_needed(*pilot, alpha)
        assert both.runs_per_world[i] == single.runs_per_world
        assert both.clip_hi[i] == pytest.approx(single.clip_hi)
    assert both.reachable.dtype == bool and both.runs_per_world.shape == (2,)


def test_smallest_n_is_the_smallest():
    """bound(n) ≥ target at the answer and < target one run earlier (the bisection's claim)."""
    result = runs_needed(*_pilot(5), 2.0, fraction=0.3)
    curve = planning._curve(result.shift, 2.0)
    at = lambda n: planning._best(curve, n, result.split,
                                    planning._failure_per_direction(result.confidence,
                                                                    result.both_directions),
                                  result.radius)[0]
    n = result.runs_per_world
    assert at(n) >= result.target > at(n - 1)


def _quadrature_moments(t, mean, sd, c):
    """E and Var of exp(t (clip(G, −c, c) − c)), G ~ N(mean, sd²), by adaptive quadrature."""
    def moment(power):
        # the two clipped tails are point masses at ±c; quadrature over [−c, c]
        tails = (np.exp(-2 * power * t * c) * stats.norm.cdf(-c, mean, sd)
                 + stats.norm.sf(c, mean, sd))
        integrand = lambda x: np.exp(power * t * (x - c)) * stats.norm.pdf(x, mean, sd)
        return tails + integrate.quad(integrand, -c, c, epsabs=0, epsrel=1e-12, limit=200)[0]

    first = moment(1)
    return first, moment(2) - first**2


def test_clipped_gaussian_moments_match_quadrature():
    for t, mean, sd, c in [(1.0, 0.5, 1.0, 1.3), (3.0, -2.0, 2.0, 0.7), (8.0, 0.02, 0.2, 5.0)]:
        m1, var = planning._moments(t, mean, sd, np.array([c]))
        np.testing.assert_allclose([m1[0], var[0]], _quadrature_moments(t, mean, sd, c),
                                   rtol=1e-8)


def test_unreachable_and_the_sentences():
    rng = np.random.default_rng(6)
    weak = runs_needed(rng.normal(0.05, 1, 200), rng.normal(0, 1, 200), 2.0, max_runs=5000)
    assert not weak.reachable and weak.runs_per_world == math.inf
    assert format_runs_needed(weak, 200) == (
        "the bound is vacuous at 100 held-out runs; even 5,000 runs per world would not make "
        "it ≥ 50% of the estimate")

    result = runs_needed(*_pilot(7, n=144), 2.0)
    sentence = format_runs_needed(result, 144)
    assert sentence.startswith("the bound is vacuous at 72 held-out runs; about ")
    assert sentence.endswith(" runs per world would make it ≥ 50% of the estimate")
    about = int(sentence.split("about ")[1].split(" runs")[0].replace(",", ""))
    assert result.runs_per_world <= about <= 1.1 * result.runs_per_world
    assert format_runs_needed(result, 100_000).startswith("the bound is about ")

    several = format_runs_needed(runs_needed(*_pilot(7, n=144), [1.5, 2.0]), 144)
    assert several.startswith("α = 1.5: the bound is vacuous") and "; α = 2: " in several


def test_identical_means_need_infinitely_many_runs():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    result = runs_needed(x, x[::-1], 2.0)
    assert result.estimate == 0 and not result.reachable and result.runs_per_world == math.inf


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"in_scores": [1.0, np.inf, 2.0, 3.0]}, "in_scores"),
        ({"in_scores": [1.0, 2.0, 3.0]}, "in_scores"),
        ({"out_scores": np.ones((4, 2))}, "out_scores"),
        ({"in_scores": [1.0] * 4, "out_scores": [2.0] * 4}, "in_scores"),
        ({"orders": 1.0}, "orders"),
        ({"orders": [2.0, np.nan]}, "orders"),
        ({"orders": []}, "orders"),
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.0}, "fraction"),
        ({"confidence": 1.0}, "confidence"),
        ({"split": 1.0}, "split"),
        ({"split": 0.2}, "split"),
        ({"radius": "theory"}, "radius"),
        ({"max_runs": 2}, "max_runs"),
        ({"max_runs": 1e6}, "max_runs"),
    ],
)
def test_bad_input(kwargs, name):
    args = {"in_scores": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "out_scores": [0.0, 1.0, 2.0, 3.5],
            "orders": 2.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        runs_needed(args.pop("in_scores"), args.pop("out_scores"), args.pop("orders"), **args)


def test_format_refuses_a_bad_pilot_size():
    result = runs_needed(*_pilot(8, n=20), 2.0)
    with pytest.raises(ValueError, match="n_pilot"):
        format_runs_needed(result, 2)
    assert isinstance(format_runs_needed(result, np.int64(20)), str)
    assert jnp.isfinite(result.expected_bound)
