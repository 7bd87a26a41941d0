"""reconcile_estimate: a point estimate below a valid lower bound is raised to it and flagged."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.renyi import reconcile_estimate


def test_user_story_numbers_are_raised_and_flagged():
    # DV 0.535 and 0.637 at α = 2, 3 below threshold bounds 0.942 and 1.352 (issue 24)
    r = reconcile_estimate(np.array([0.535, 0.637]), np.array([[0.942, 1.352], [0.0, 0.0]]))
    np.testing.assert_allclose(r.estimate, [0.942, 1.352], rtol=1e-6)
    assert r.raised.tolist() == [True, True]


def test_matches_an_elementwise_reference_never_below_any_bound():
    rng = np.random.default_rng(0)
    point = rng.normal(size=50).astype(np.float32)
    bounds = rng.normal(size=(3, 50)).astype(np.float32)
    bounds[2, :10] = -np.inf  # "no bound" entries
    r = reconcile_estimate(point, bounds)
    best = bounds.max(axis=0)
    expected = np.array([max(p, b) for p, b in zip(point, best)])
    np.testing.assert_array_equal(np.asarray(r.estimate), expected)
    np.testing.assert_array_equal(np.asarray(r.raised), best > point)
    assert (np.asarray(r.estimate)[None] >= bounds).all() and (np.asarray(r.estimate) >= point).all()
    # -inf is "no estimate": the bound stands in
    np.testing.assert_array_equal(reconcile_estimate(-np.inf, 0.5).estimate, 0.5)
    # an estimate already above every bound is untouched
    assert not np.asarray(reconcile_estimate(point + 10, bounds).raised).any()
    # one bound per order (no leading axis) is the same as m = 1
    one = reconcile_estimate(point, bounds[0])
    np.testing.assert_array_equal(np.asarray(one.estimate), np.maximum(point, bounds[0]))


def test_jit_vmap_grad():
    point, bounds = jnp.array([0.5, 2.0]), jnp.array([[1.0, 1.0]])
    eager = reconcile_estimate(point, bounds)
    jitted = jax.jit(reconcile_estimate)(point, bounds)
    np.testing.assert_array_equal(eager.estimate, jitted.estimate)
    batched = jax.vmap(reconcile_estimate, in_axes=(0, None))(jnp.stack([point, point + 1]), bounds)
    np.testing.assert_allclose(batched.estimate, [[1.0, 2.0], [1.5, 3.0]])
    g = jax.grad(lambda p: reconcile_estimate(p, bounds).estimate.sum())(point)
    np.testing.assert_array_equal(g, [0.0, 1.0])  # raised entries no longer depend on the point


@pytest.mark.parametrize("point, bounds, match", [
    ([0.5, np.nan], [0.0, 0.0], "point"),
    ([0.5, 1.0], [0.0, np.nan], "lower_bounds"),
    ([0.5, 1.0], [0.0, 0.0, 0.0], "lower_bounds must have shape"),
    (["a"], [0.0], "point"),
])
def test_bad_input_names_the_argument(point, bounds, match):
    with pytest.raises(ValueError, match=match):
        reconcile_estimate(point, bounds)
