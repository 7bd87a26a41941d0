"""Every public numeric function of ``jaxaudit.renyi`` inside the user's jit, vmap and grad.

Each is run eagerly (the validated entry) and through ``jax.jit``, ``jax.vmap`` over a natural
axis (orders, shifts, seeds) and, where differentiable, ``jax.grad``; the transformed values must
equal the eager ones, gradients must match a float64 central difference, and the jaxprs of the
cores must hold no host callback. Host-side functions (data-dependent selection) must refuse a
traced argument with a clear error instead of a tracer-conversion crash.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxpr_walk import host_callbacks

from jaxaudit import renyi, stats
from jaxaudit.renyi import confidence as renyi_confidence
from jaxaudit.renyi import ema, objective
from jaxaudit.stats import clopper_pearson_lower, clopper_pearson_upper

ORDERS = jnp.array([1.0, 1.25, 2.0, 5.0, jnp.inf])
FINITE_ORDERS = jnp.array([1.25, 2.0, 5.0])


def _no_callback(fn, *args):
    assert not host_callbacks(fn, *args)


def _central_difference(fn, x, h=1e-6):
    """d fn / dx at x by a float64 central difference of the eager (validated) function."""
    return (float(np.asarray(fn(x + h), np.float64)) - float(np.asarray(fn(x - h), np.float64))) / (
        2 * h)


# ----------------------------------------------------------------------------------------------
# Closed forms


@pytest.mark.parametrize("fn,args", [(renyi.gaussian_renyi, (0.7, 1.3)),
                                     (renyi.laplace_renyi, (0.7, 1.3))])
@pytest.mark.slow
def test_closed_forms_compose(fn, args):
    eager = fn(*args, ORDERS)
    np.testing.assert_allclose(jax.jit(fn)(*args, ORDERS), eager, rtol=1e-6)
    per_order = jax.vmap(fn, in_axes=(None, None, 0))(*args, ORDERS)
    np.testing.assert_allclose(per_order, eager, rtol=1e-6)
    shifts = jnp.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(jax.vmap(fn, in_axes=(0, None, None))(shifts, args[1], 2.0),
                               [fn(s, args[1], 2.0) for s in shifts], rtol=1e-6)
    x = (0.7, 1.3, 2.0)
    for argnum in range(3):
        grad = jax.jit(jax.grad(fn, argnums=argnum))(*x)
        with jax.enable_x64(True):
            reference = _central_difference(
                lambda v, i=argnum: fn(*(jnp.float64(v) if j == i else jnp.float64(x[j])
                                         for j in range(3))), x[argnum])
        assert float(grad) == pytest.approx(reference, rel=1e-4)
    _no_callback(fn, *args, 2.0)


@pytest.mark.slow
def test_binary_renyi_composes():
    p, q = 0.7, 0.2
    eager = renyi.binary_renyi(p, q, np.asarray(ORDERS))   # float64
    np.testing.assert_allclose(jax.jit(renyi.binary_renyi)(p, q, ORDERS), eager, rtol=1e-5)
    np.testing.assert_allclose(
        jax.vmap(renyi.binary_renyi, in_axes=(None, None, 0))(p, q, ORDERS), eager, rtol=1e-5)
    args = [p, q, 2.0]
    with jax.enable_x64(True):
        for argnum, x in ((0, p), (1, q), (2, 2.0)):
            grad = jax.grad(renyi.binary_renyi, argnums=argnum)(*map(jnp.float64, args))
            ref = _central_difference(
                lambda v, i=argnum: renyi.binary_renyi(*(v if j == i else args[j]
                                                         for j in range(3))), x)
            assert float(grad) == pytest.approx(ref, rel=1e-6)
    _no_callback(renyi.binary_renyi, p, q, 2.0)
    # the host-side float64 numpy path (eager calls) equals the traced core under x64, edges too
    rng = np.random.default_rng(0)
    ps = np.r_[rng.random(20), 0.0, 1.0, 0.0, 1.0, 0.3]
    qs = np.r_[rng.random(20), 0.0, 1.0, 1.0, 0.0, 0.0]
    with jax.enable_x64(True):
        traced = jax.jit(jax.vmap(renyi.binary_renyi, in_axes=(0, 0, None)))
        for a in (1.0, 1.5, 30.0, np.inf):
            np.testing.assert_allclose(renyi.binary_renyi(ps, qs, a), traced(ps, qs, a),
                                       rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Radii, held-out bound, class-restricted radius


def test_radii_compose():
    levels = jnp.array([0.5, 0.95, 0.999])
    hoeffding = lambda n, r, c: stats.hoeffding_radius(n, r, confidence=c)
    bernstein = lambda v, n, r, c: stats.bernstein_radius(v, n, r, confidence=c)
    h = jax.vmap(hoeffding, in_axes=(None, None, 0))(100.0, 1.0, levels)
    np.testing.assert_allclose(h, [hoeffding(100, 1.0, float(c)) for c in levels], rtol=1e-6)
    np.testing.assert_allclose(jax.jit(hoeffding)(100.0, 1.0, 0.95), hoeffding(100, 1.0, 0.95),
                               rtol=1e-6)
    # d r / d confidence = range / (2 β sqrt(2 n log(1/β))), β = 1 − confidence
    g = jax.grad(hoeffding, argnums=2)(100.0, 1.0, 0.95)
    assert float(g) == pytest.approx(1.0 / (2 * 0.05 * np.sqrt(200 * np.log(20))), rel=1e-4)
    b = jax.jit(jax.vmap(bernstein, in_axes=(0, None, None, None)))(
        jnp.array([0.0, 0.01, 0.2]), 100.0, 1.0, 0.95)
    np.testing.assert_allclose(b, [bernstein(v, 100, 1.0, 0.95) for v in (0.0, 0.01, 0.2)],
                               rtol=1e-6)
    # d r / d V̂ = sqrt(2 log(2/β)/n) / (2 sqrt(V̂))
    g = jax.grad(bernstein)(0.04, 100.0, 1.0, 0.95)
    assert float(g) == pytest.approx(np.sqrt(2 * np.log(40) / 100) / (2 * 0.2), rel=1e-4)
    radius = functools.partial(renyi.theory_radius, confidence=0.95)
    t = jax.vmap(radius, in_axes=(0,) + (None,) * 5)(
        FINITE_ORDERS, 1.0, 0.01, 0.01, 1000.0, 1000.0)
    np.testing.assert_allclose(t, [renyi.theory_radius(a, 1.0, 0.01, 0.01, 1000, 1000,
                                                       confidence=0.95)
                                   for a in FINITE_ORDERS], rtol=1e-6)
    with jax.enable_x64(True):
        g = jax.grad(radius, argnums=1)(*map(jnp.float64, (2.0, 1.0, 0.01, 0.01, 1000, 1000)))
        ref = _central_difference(lambda m: radius(2.0, m, 0.01, 0.01, 1000, 1000), 1.0)
    assert float(g) == pytest.approx(ref, rel=1e-6)
    _no_callback(hoeffding, 100.0, 1.0, 0.95)
    _no_callback(bernstein, 0.1, 100.0, 1.0, 0.95)
    _no_callback(radius, 2.0, 1.0, 0.01, 0.01, 1000.0, 1000.0)


@pytest.mark.slow
def test_held_out_bound_and_objective_compose():
    keys = jax.random.split(jax.random.key(0), 4)
    g = jax.vmap(lambda k: jax.random.uniform(k, (2, 300), minval=-1.0, maxval=1.0))(keys)
    g_q, g_p = g[:, 0] + 0.2, g[:, 1]
    for method in ("bernstein", "hoeffding"):
        eager = [renyi.held_out_lower_bound(a, b, 2.0, -1.0, 1.2, radius=method,
                                            confidence=0.95)
                 for a, b in zip(g_q, g_p)]
        fn = lambda a, b, alpha, m=method: renyi.held_out_lower_bound(a, b, alpha, -1.0, 1.2,
                                                                      radius=m, confidence=0.95)
        np.testing.assert_allclose(jax.jit(jax.vmap(fn, in_axes=(0, 0, None)))(g_q, g_p, 2.0),
                                   eager, rtol=1e-5)
        per_order = jax.vmap(fn, in_axes=(None, None, 0))(g_q[0], g_p[0], FINITE_ORDERS)
        np.testing.assert_allclose(per_order, [fn(g_q[0], g_p[0], a) for a in FINITE_ORDERS],
                                   rtol=1e-5)
        grad = jax.grad(fn)(g_q[0], g_p[0], 2.0)
        assert grad.shape == (300,) and np.all(np.isfinite(grad))
        _no_callback(fn, g_q[0], g_p[0], 2.0)
    # the DV objective and log-mean-exp (already pure)
    j = jax.jit(jax.vmap(renyi.dv_objective, in_axes=(0, 0, None)))(g_q, g_p, 2.0)
    np.testing.assert_allclose(j, [renyi.dv_objective(a, b, 2.0) for a, b in zip(g_q, g_p)],
                               rtol=1e-5)
    # d J / d g_q,i = α e^{(α−1) g_i} / Σ e^{(α−1) g}
    grad = jax.grad(renyi.dv_objective)(g_q[0], g_p[0], 2.0)
    w = np.exp(np.asarray(g_q[0], np.float64))
    np.testing.assert_allclose(grad, 2.0 * w / w.sum(), rtol=1e-4)
    np.testing.assert_allclose(jax.jit(objective.log_mean_exp)(g_q[0]), objective.log_mean_exp(g_q[0]),
                               rtol=1e-6)
    _no_callback(renyi.dv_objective, g_q[0], g_p[0], 2.0)


def test_ema_surrogate_composes():
    x = jax.random.normal(jax.random.key(1), (3, 64))
    state = ema.dv_ema_init()
    loss = lambda a, b: renyi.dv_surrogate_loss(a, b, 2.0, state, 0.1)[0]
    np.testing.assert_allclose(jax.jit(jax.vmap(loss))(x, x + 0.1),
                               [loss(a, b) for a, b in zip(x, x + 0.1)], rtol=1e-6)
    # with an empty state the gradient is the plain gradient of −J_α
    np.testing.assert_allclose(jax.grad(loss)(x[0], x[1]),
                               jax.grad(lambda a: -renyi.dv_objective(a, x[1], 2.0))(x[0]),
                               rtol=1e-5)
    _no_callback(loss, x[0], x[1])


@pytest.mark.slow
def test_rademacher_bound_composes():
    params = {"Dense_0": {"kernel": jnp.ones((1, 4)) * 0.3, "bias": jnp.zeros(4)},
              "Dense_1": {"kernel": jnp.ones((4, 1)) * 0.2, "bias": jnp.zeros(1)}}
    eager = renyi_confidence.rademacher_bound(params, 2.0, 100)
    np.testing.assert_allclose(jax.jit(renyi_confidence.rademacher_bound)(params, 2.0, 100.0), eager,
                               rtol=1e-6)
    ns = jnp.array([100.0, 400.0])
    np.testing.assert_allclose(
        jax.vmap(renyi_confidence.rademacher_bound, in_axes=(None, None, 0))(params, 2.0, ns),
        [eager, eager / 2], rtol=1e-6)
    grads = jax.grad(renyi_confidence.rademacher_bound)(params, 2.0, 100.0)
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(grads))


# ----------------------------------------------------------------------------------------------
# GDP conversions and Clopper–Pearson


@pytest.mark.slow
def test_gdp_epsilon_composes():
    mus = jnp.array([0.0, 0.5, 1.0, 2.0, jnp.inf])
    eager = stats.gdp_epsilon(np.asarray(mus), 1e-5)   # float64
    np.testing.assert_allclose(jax.jit(stats.gdp_epsilon)(mus, 1e-5), eager, rtol=2e-5)
    np.testing.assert_allclose(jax.vmap(stats.gdp_epsilon, in_axes=(0, None))(mus, 1e-5),
                               eager, rtol=2e-5)
    with jax.enable_x64(True):
        np.testing.assert_allclose(
            jax.jit(stats.gdp_epsilon)(jnp.asarray(mus, jnp.float64), 1e-5), eager, rtol=1e-12)
        for argnum, x in ((0, 1.0), (1, 1e-5)):
            grad = jax.grad(stats.gdp_epsilon, argnums=argnum)(jnp.float64(1.0),
                                                               jnp.float64(1e-5))
            f = (lambda v: stats.gdp_epsilon(v, 1e-5)) if argnum == 0 else (
                lambda v: stats.gdp_epsilon(1.0, v))
            assert float(grad) == pytest.approx(_central_difference(f, x, h=1e-6 * x), rel=1e-5)
        # the clamped ends have zero gradient, never NaN
        assert float(jax.grad(stats.gdp_epsilon)(jnp.float64(1.0), jnp.float64(0.9))) == 0.0
    _no_callback(stats.gdp_epsilon, 1.0, 1e-5)
    rdp = jax.jit(jax.vmap(stats.gdp_to_rdp, in_axes=(None, 0)))(1.5, ORDERS)
    np.testing.assert_allclose(rdp, stats.gdp_to_rdp(1.5, np.asarray(ORDERS)), rtol=1e-6)
    assert float(jax.grad(stats.gdp_to_rdp)(1.5, 2.0)) == pytest.approx(3.0)
    _no_callback(stats.gdp_to_rdp, 1.5, 2.0)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [clopper_pearson_upper, clopper_pearson_lower])
def test_clopper_pearson_composes(fn):
    k = jnp.array([0.0, 1.0, 7.0, 250.0, 999.0, 1000.0])
    n = 1000.0
    eager = fn(np.asarray(k), n, confidence=0.975)   # scipy, float64
    traced = jax.jit(lambda k: fn(k, n, confidence=0.975))(k)
    # float32: the one core (jaxaudit.stats.binomial) keeps a margin over float32 betainc's
    # error, so the traced limit is on the safe side of the exact one, within 1e-4 at n = 1000
    side = 1.0 if fn is clopper_pearson_upper else -1.0
    assert np.all(side * (np.asarray(traced, np.float64) - eager) >= 0)
    np.testing.assert_allclose(traced, eager, rtol=1e-2, atol=1e-4)
    per_level = jax.vmap(lambda c: fn(7.0, 40.0, confidence=c))(jnp.array([0.9, 0.975, 0.999]))
    exact = np.asarray([fn(7, 40, confidence=c) for c in (0.9, 0.975, 0.999)])
    assert np.all(side * (np.asarray(per_level, np.float64) - exact) >= 0)
    np.testing.assert_allclose(per_level, exact, rtol=1e-3)
    with jax.enable_x64(True):
        traced64 = jax.jit(lambda k: fn(k, n, confidence=0.975))(jnp.asarray(k, jnp.float64))
    np.testing.assert_allclose(traced64, eager, rtol=1e-9, atol=1e-14)
    # the traced bound is on the safe side of the exact quantile
    assert np.all(traced64 >= eager - 1e-15) if fn is clopper_pearson_upper else np.all(
        traced64 <= eager + 1e-15)
    _no_callback(lambda k: fn(k, n, confidence=0.975), k)


# ----------------------------------------------------------------------------------------------
# The estimator inside the caller's transforms


@pytest.mark.slow
def test_estimate_renyi_inside_jit_and_vmap():
    config = renyi.CriticConfig(hidden_dims=(8,), steps=40)
    k1, k2 = jax.random.split(jax.random.key(2))
    x_q = 1.0 + jax.random.normal(k1, (2, 200))
    x_p = jax.random.normal(k2, (2, 200))
    keys = jax.random.split(jax.random.key(3), 2)
    fn = lambda key, a, b: renyi.estimate_renyi(key, a, b, 2.0, config=config)
    batched = jax.jit(jax.vmap(fn))(keys, x_q, x_p)
    for i in range(2):
        eager = fn(keys[i], x_q[i], x_p[i])
        np.testing.assert_allclose(batched.point[i], eager.point, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(batched.lower[i], eager.lower, rtol=1e-4, atol=1e-5)
        assert float(eager.lower) >= 0.0


# ----------------------------------------------------------------------------------------------
# Host-side functions refuse traced input clearly


@pytest.mark.parametrize("call", [
    lambda a, b: renyi.threshold_renyi_lower_bound(jax.random.key(0), a, b, 2.0, confidence=0.95),
    lambda a, b: renyi.gdp_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95),
    lambda a, b: renyi.clopper_pearson_epsilon_lower_bound(jax.random.key(0), a, b, 1e-5, confidence=0.95),
    lambda a, b: renyi.binned_renyi_lower_bound(jax.random.key(0), a, b, 2.0),
    lambda a, b: renyi.runs_needed(a, b, 2.0),
])
def test_host_side_functions_refuse_tracers(call):
    a, b = jnp.linspace(0.0, 1.0, 40), jnp.linspace(-0.5, 0.5, 40)
    with pytest.raises(TypeError, match="host-side"):
        jax.jit(call)(a, b)
