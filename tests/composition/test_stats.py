"""Every public function of ``jaxaudit.stats`` inside the user's jit, vmap and grad.

Each runs eagerly (the validated entry, float64) and through ``jax.jit``, ``jax.vmap`` over a
natural axis (counts, confidences, sample sizes, μ, orders) and, where differentiable,
``jax.grad``; the transformed values equal the eager ones (float32 tolerance; the Clopper–Pearson
limits stay on their safe side), gradients match a float64 central difference, and no core's
jaxpr holds a host callback.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxpr_walk import host_callbacks

from jaxaudit import stats


def _central_difference(fn, x, h):
    return (float(fn(x + h)) - float(fn(x - h))) / (2 * h)


@pytest.mark.slow
@pytest.mark.parametrize("fn,side", [(stats.clopper_pearson_upper, 1.0),
                                     (stats.clopper_pearson_lower, -1.0)])
def test_clopper_pearson_jit_vmap(fn, side):
    k = jnp.array([0.0, 2.0, 9.0, 30.0])
    n = jnp.array([10.0, 10.0, 40.0, 30.0])
    eager = fn(np.asarray(k), np.asarray(n), confidence=0.95)
    jitted = jax.jit(lambda k, n: fn(k, n, confidence=0.95))(k, n)
    mapped = jax.vmap(lambda k, n: fn(k, n, confidence=0.95))(k, n)
    per_confidence = jax.vmap(lambda c: fn(2.0, 10.0, confidence=c))(jnp.array([0.8, 0.95]))
    for got, want in ((jitted, eager), (mapped, eager),
                      (per_confidence, [fn(2, 10, confidence=c) for c in (0.8, 0.95)])):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        assert np.all(side * (got - want) >= 0)           # float32: the safe side
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)
    with jax.enable_x64(True):
        exact = jax.jit(lambda k, n: fn(k, n, confidence=0.95))(jnp.asarray(k, jnp.float64),
                                                                jnp.asarray(n, jnp.float64))
    np.testing.assert_array_equal(np.asarray(exact), eager)   # the same core as the eager call
    assert not host_callbacks(lambda k, n: fn(k, n, confidence=0.95), k, n)


@pytest.mark.parametrize("fn,args,wrt", [
    (lambda n, c: stats.hoeffding_radius(n, 1.0, confidence=c), (100.0, 0.95), 0),
    (lambda v, c: stats.bernstein_radius(v, 100.0, 1.0, confidence=c), (0.2, 0.95), 0),
])
def test_radii_jit_vmap_grad(fn, args, wrt):
    eager = float(fn(*args))
    assert float(jax.jit(fn)(*args)) == pytest.approx(eager, rel=1e-6)
    xs = jnp.array([0.5, 1.0, 2.0]) * args[wrt]
    mapped = jax.vmap(lambda x: fn(*(x if i == wrt else a for i, a in enumerate(args))))(xs)
    want = [float(fn(*(float(x) if i == wrt else a for i, a in enumerate(args)))) for x in xs]
    np.testing.assert_allclose(mapped, want, rtol=1e-6)
    for i in (wrt, 1):
        g = float(jax.grad(fn, argnums=i)(*args))
        h = 1e-4 * args[i] if i == wrt else 1e-5
        with jax.enable_x64(True):
            fd = _central_difference(
                lambda x, i=i: fn(*(jnp.float64(x) if j == i else jnp.float64(a)
                               for j, a in enumerate(args))), args[i], h)
        assert g == pytest.approx(fd, rel=1e-3)
    assert not host_callbacks(fn, *args)


@pytest.mark.slow
def test_gdp_epsilon_jit_vmap_grad():
    mus = jnp.array([0.5, 1.0, 2.0])
    eager = stats.gdp_epsilon(np.asarray(mus), 1e-5)
    np.testing.assert_allclose(jax.jit(stats.gdp_epsilon)(mus, 1e-5), eager, rtol=2e-5)
    np.testing.assert_allclose(jax.vmap(stats.gdp_epsilon, in_axes=(0, None))(mus, 1e-5),
                               eager, rtol=2e-5)
    with jax.enable_x64(True):
        g = float(jax.grad(stats.gdp_epsilon)(jnp.float64(1.0), jnp.float64(1e-5)))
        fd = _central_difference(lambda m: stats.gdp_epsilon(m, 1e-5), 1.0, 1e-6)
    assert g == pytest.approx(fd, rel=1e-5)
    assert not host_callbacks(stats.gdp_epsilon, 1.0, 1e-5)


def test_gdp_to_rdp_jit_vmap_grad():
    orders = jnp.array([1.5, 2.0, 8.0])
    eager = stats.gdp_to_rdp(1.5, np.asarray(orders))
    np.testing.assert_allclose(jax.jit(stats.gdp_to_rdp)(1.5, orders), eager, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(stats.gdp_to_rdp, in_axes=(None, 0))(1.5, orders),
                               eager, rtol=1e-6)
    assert float(jax.grad(stats.gdp_to_rdp)(1.5, 2.0)) == pytest.approx(3.0)      # α μ
    assert float(jax.grad(stats.gdp_to_rdp, argnums=1)(1.5, 2.0)) == pytest.approx(1.125)
    assert not host_callbacks(stats.gdp_to_rdp, 1.5, 2.0)
