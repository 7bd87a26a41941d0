"""The membership-inference and BMP statistics inside the user's transforms.

Every public numeric function of ``jaxaudit.mia`` and of the BMP statistics (certified bound,
Jeffreys estimator, region maps) runs under ``jax.jit``, ``jax.vmap`` over a natural axis (nodes,
models, priors, thresholds) and, where it is differentiable, ``jax.grad``; each result is compared
with the eager (validated) call. The end-to-end pipeline LiRA → Bayes decisions → error counts →
certified bound and Jeffreys estimate is jitted and vmapped over a vector of node priors, and its
jaxpr holds no host callback.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxpr_walk import CALLBACKS, primitives

from jaxaudit import bmp, mia, stats

R, N = 24, 5  # models, nodes


def _data(seed=0, num_models=R, num_nodes=N):
    key = jax.random.key(seed)
    masks = jax.random.bernoulli(key, 0.5, (num_models, num_nodes))
    noise = jax.random.normal(jax.random.fold_in(key, 1), (num_models, num_nodes))
    scores = 1.2 * masks + jnp.where(masks, 0.7, 1.0) * noise
    return scores, masks


def _close(got, want, **tol):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), **tol)


def _equal(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _central_difference(f, x, h):
    """Eager central differences of a scalar function, one coordinate at a time (float64)."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = h
        grad[idx] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return grad


# ---------------------------------------------------------------------------------------------
# mia
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fix_variance", [False, True])
def test_lira_jit_vmap_over_experiments(fix_variance):
    lira = functools.partial(mia.lira_loo, fix_variance=fix_variance)
    data = [_data(seed) for seed in range(3)]
    scores, masks = (jnp.stack(x) for x in zip(*data))
    eager = [lira(s, m) for s, m in data]
    _close(jax.jit(lira)(*data[0]), eager[0], rtol=1e-6, atol=1e-6)
    _close(jax.vmap(lira)(scores, masks), jnp.stack(eager), rtol=1e-5, atol=1e-5)


def test_lira_grad_matches_finite_differences():
    """dΛ/ds by jax.grad through the public function against eager central differences."""
    scores, masks = _data(1, num_models=8, num_nodes=2)
    weights = jax.random.normal(jax.random.key(2), (8, 2))

    def objective(s):
        return jnp.sum(weights * mia.lira_loo(s, masks))

    got = np.asarray(jax.grad(objective)(scores))
    want = _central_difference(lambda s: objective(jnp.asarray(s, jnp.float32)), scores, 1e-2)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    assert np.all(np.isfinite(got)) and np.abs(got).max() > 0.1


@pytest.mark.slow
def test_decisions_jit_and_vmap():
    scores, masks = _data(2)
    llr = mia.lira_loo(scores, masks)
    etas = jnp.array([[0.1] * N, [0.5] * N, [0.02, 0.3, 0.5, 0.8, 0.99]])
    _equal(jax.jit(mia.bayes_decision)(llr, etas[2]), mia.bayes_decision(llr, etas[2]))
    _equal(jax.vmap(mia.bayes_decision, in_axes=(None, 0))(llr, etas),
           jnp.stack([mia.bayes_decision(llr, e) for e in etas]))
    thresholds = jnp.array([-1.0, 0.0, 2.5])
    _equal(jax.jit(mia.decisions.threshold_decision)(llr, 0.5), mia.decisions.threshold_decision(llr, 0.5))
    _equal(jax.vmap(mia.decisions.threshold_decision, in_axes=(None, 0))(llr, thresholds),
           jnp.stack([mia.decisions.threshold_decision(llr, float(t)) for t in thresholds]))
    fprs = jnp.array([0.0, 0.1, 0.3])
    for per_node in (True, False):
        fixed = functools.partial(mia.fixed_fpr_decision, per_node=per_node)
        _equal(jax.jit(fixed)(llr, masks, 0.1), fixed(llr, masks, 0.1))
        _equal(jax.vmap(fixed, in_axes=(None, None, 0))(llr, masks, fprs),
               jnp.stack([fixed(llr, masks, float(f)) for f in fprs]))


def test_error_counts_jit_and_vmap_over_priors():
    scores, masks = _data(3)
    llr = mia.lira_loo(scores, masks)
    decisions = jnp.stack([mia.bayes_decision(llr, eta) for eta in (0.2, 0.5, 0.8)])
    _equal(jax.jit(mia.error_counts)(decisions[0], masks), mia.error_counts(decisions[0], masks))
    _equal(jax.vmap(mia.error_counts, in_axes=(0, None))(decisions, masks),
           jax.tree_util.tree_map(lambda *x: jnp.stack(x),
                                  *[mia.error_counts(d, masks) for d in decisions]))


@pytest.mark.slow
def test_metrics_jit_and_vmap_over_nodes_and_thresholds():
    scores, masks = _data(4, num_models=40)
    llr = mia.lira_loo(scores, masks)
    for axis in (None, 0):
        auc = functools.partial(mia.roc_auc, axis=axis)
        _close(jax.jit(auc)(llr, masks), auc(llr, masks), rtol=1e-6)
        adv = functools.partial(mia.membership_advantage, axis=axis)
        d = llr > 0
        _close(jax.jit(adv)(d, masks), adv(d, masks), rtol=1e-6)
        tpr = functools.partial(mia.tpr_at_fpr, axis=axis)
        _close(jax.jit(tpr)(llr, masks, 0.1), tpr(llr, masks, 0.1), rtol=1e-6)
    # vmap over the node axis equals the per-node (axis=0) figures
    _close(jax.vmap(mia.roc_auc, in_axes=1)(llr, masks), mia.roc_auc(llr, masks, axis=0), rtol=1e-6)
    _close(jax.vmap(mia.membership_advantage, in_axes=1)(llr > 0, masks),
           mia.membership_advantage(llr > 0, masks, axis=0), rtol=1e-6)
    # vmap over FPR levels
    fprs = jnp.array([0.05, 0.1, 0.25])
    _close(jax.vmap(mia.tpr_at_fpr, in_axes=(None, None, 0))(llr, masks, fprs),
           jnp.stack([mia.tpr_at_fpr(llr, masks, float(f)) for f in fprs]), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# bmp: certified bound, Clopper–Pearson, Jeffreys
# ---------------------------------------------------------------------------------------------


def _counts():
    return mia.ErrorCounts(jnp.array([0, 3, 9, 12, 20]), jnp.array([20, 20, 25, 30, 20]),
                           jnp.array([1, 5, 2, 15, 0]), jnp.array([18, 22, 25, 30, 20]))


@pytest.mark.slow
def test_certified_jit_and_vmap_over_nodes():
    """float32 under the transform: never above the eager (float64) bound, within 1e-3 of it;
    with x64 the transformed figures equal the eager ones."""
    counts = _counts()
    eager = bmp.certified_epsilons(counts, confidence=0.9)
    cert = functools.partial(bmp.certified_epsilons, confidence=0.9)
    jitted = jax.jit(cert)(counts)
    mapped = jax.vmap(cert)(counts)
    for got in (jitted, mapped):
        for field in ("epsilon_left", "epsilon_right"):
            g, w = np.asarray(getattr(got, field)), np.asarray(getattr(eager, field))
            assert np.all(g <= w + 1e-6)
            np.testing.assert_allclose(g, w, atol=1e-3)
        for field in ("fpr_upper", "fnr_upper"):
            g, w = np.asarray(getattr(got, field)), np.asarray(getattr(eager, field))
            assert np.all(g >= w - 1e-7)
            np.testing.assert_allclose(g, w, atol=1e-4)
    with jax.enable_x64(True):
        counts64 = mia.ErrorCounts(*(np.asarray(c, np.float64) for c in counts))
        eager64 = bmp.certified_epsilons(counts64, confidence=0.9)
        _equal(jax.jit(cert)(counts64)[:4], eager64[:4])
        _close(jax.vmap(cert)(counts64)[:4], eager64[:4], rtol=1e-12, atol=1e-12)


def test_clopper_pearson_jit_and_vmap_over_n():
    ns = jnp.array([5.0, 10.0, 40.0])
    ks = jnp.array([0.0, 3.0, 40.0])
    upper = functools.partial(stats.clopper_pearson_upper, confidence=0.95)
    eager = np.asarray(upper(ks, ns))
    for got in (jax.jit(upper)(ks, ns), jax.vmap(upper)(ks, ns)):
        got = np.asarray(got)
        assert np.all(got >= eager - 1e-7)
        np.testing.assert_allclose(got, eager, atol=1e-4)


@pytest.mark.slow
def test_jeffreys_jit_and_vmap_over_keys():
    counts = _counts()
    jeff = functools.partial(bmp.jeffreys_estimate, num_draws=500)
    key = jax.random.key(5)
    _close(jax.jit(jeff)(key, counts), jeff(key, counts), rtol=1e-5, atol=1e-5)
    keys = jax.random.split(key, 2)
    _close(jax.vmap(jeff, in_axes=(0, None))(keys, counts),
           jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[jeff(k, counts) for k in keys]),
           rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# bmp: region maps
# ---------------------------------------------------------------------------------------------

EPS_L = jnp.array([0.3, 1.0, 2.5])
EPS_R = jnp.array([1.5, 0.5, 2.0])
ALPHA = jnp.array([0.05, 0.2, 0.4])
BETA = jnp.array([0.3, 0.25, 0.1])
ETA = jnp.array([0.1, 0.5, 0.9])
P0 = jnp.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
P1 = jnp.array([[0.2, 0.3, 0.5], [0.3, 0.4, 0.3], [0.6, 0.3, 0.1]])

#: name -> (function, batched arguments: vmapped over their first axis together)
REGION = {
    "region_contains": (bmp.region.region_contains, (ALPHA, BETA, EPS_L, EPS_R)),
    "region_contains_right": (functools.partial(bmp.region.region_contains, side="right"),
                              (ALPHA, BETA, EPS_L, EPS_R)),
    "region_area": (bmp.region.region_area, (EPS_L, EPS_R)),
    "region_area_left": (functools.partial(bmp.region.region_area, side="left"), (EPS_L, EPS_R)),
    "region_corner": (bmp.region.region_corner, (EPS_L, EPS_R)),
    "region_corner_member": (functools.partial(bmp.region.region_corner, null="member"), (EPS_L, EPS_R)),
    "tradeoff_curve": (bmp.region.tradeoff_curve, (ALPHA, EPS_L, EPS_R)),
    "epsilons_from_errors": (bmp.region.epsilons_from_errors, (ALPHA, BETA)),
    "epsilons_from_roc": (bmp.region.epsilons_from_roc, (P0, P1)),
    "mp_epsilon": (bmp.region.mp_epsilon, (ALPHA, BETA)),
    "mp_region_area": (bmp.region.mp_region_area, (EPS_L,)),
    "posterior_interval": (bmp.region.posterior_interval, (ETA, EPS_L, EPS_R)),
    "precision_bound": (bmp.region.precision_bound, (ETA, EPS_R)),
    "npv_bound": (bmp.region.npv_bound, (ETA, EPS_L)),
    "to_joint": (bmp.region.to_joint, (ALPHA, BETA, ETA)),
    "from_joint": (bmp.region.from_joint, (ALPHA * 0.5, BETA * 0.1, ETA * 0.5)),
    "to_posterior_coordinates": (bmp.region.to_posterior_coordinates, (ALPHA, BETA, ETA)),
    "compose": (bmp.region.compose, (EPS_L, EPS_R, EPS_R, EPS_L)),
    "compose_with_sampling": (bmp.region.compose_with_sampling, (EPS_L, EPS_R, EPS_R, EPS_L)),
    "finite_mechanism_epsilons": (bmp.region.finite_mechanism_epsilons, (P0, P1)),
    "bayes_optimal_errors": (bmp.region.bayes_optimal_errors, (P0, P1, ETA)),
}


def test_region_table_covers_every_public_region_function():
    from jaxaudit.bmp import region

    covered = {name.split("_right")[0].split("_left")[0].split("_member")[0] for name in REGION}
    assert covered == set(region.__all__)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REGION))
def test_region_jit_and_vmap(name):
    fn, args = REGION[name]
    eager = fn(*args)
    _close(jax.jit(fn)(*args), eager, rtol=1e-6, atol=1e-7)
    per_point = [fn(*(a[i] for a in args)) for i in range(args[0].shape[0])]
    _close(jax.vmap(fn)(*args),
           jax.tree_util.tree_map(lambda *x: jnp.stack(x), *per_point), rtol=1e-6, atol=1e-7)


#: differentiable maps: (function to a scalar, point) for jax.grad against central differences
REGION_GRADS = {
    "region_area": (lambda e: bmp.region.region_area(e[0], e[1]), [0.7, 1.3]),
    "region_corner": (lambda e: sum(bmp.region.region_corner(e[0], e[1])), [0.7, 1.3]),
    "tradeoff_curve": (lambda x: bmp.region.tradeoff_curve(x[0], x[1], x[2]), [0.1, 0.8, 1.2]),
    "epsilons_from_errors": (lambda x: sum(bmp.region.epsilons_from_errors(x[0], x[1])), [0.1, 0.3]),
    "mp_epsilon": (lambda x: bmp.region.mp_epsilon(x[0], x[1]), [0.1, 0.3]),
    "mp_region_area": (lambda e: bmp.region.mp_region_area(e[0]), [0.9]),
    "posterior_interval": (lambda x: sum(bmp.region.posterior_interval(x[0], x[1], x[2])), [0.3, 0.5, 1.1]),
    "precision_bound": (lambda x: bmp.region.precision_bound(x[0], x[1]), [0.3, 1.1]),
    "npv_bound": (lambda x: bmp.region.npv_bound(x[0], x[1]), [0.3, 1.1]),
    "to_posterior_coordinates": (lambda x: sum(bmp.region.to_posterior_coordinates(x[0], x[1], x[2])),
                                 [0.1, 0.3, 0.4]),
    "from_joint": (lambda x: sum(bmp.region.from_joint(x[0], x[1], x[2])), [0.1, 0.2, 0.4]),
}


@pytest.mark.parametrize("name", sorted(REGION_GRADS))
def test_region_grad_matches_finite_differences(name):
    fn, point = REGION_GRADS[name]
    with jax.enable_x64(True):
        x = jnp.asarray(point, jnp.float64)
        got = np.asarray(jax.grad(lambda v: fn(v))(x))
        want = _central_difference(fn, point, 1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# bmp: sampling leakage
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("x64", [False, True])
def test_sampling_leakage_jit_and_vmap_over_draw_sets(exact, x64):
    """With x64 the transformed figures are the eager (float64) ones. In float32 the leakages
    agree to round-off; the standard errors are compared with x64 only, as in float32 a tie in
    the sup (two patterns with one frequency ratio, common with counts) may resolve to the other
    pattern, whose standard error differs."""
    rng = np.random.default_rng(12)
    sets = rng.random((3, 80, 4)) < 0.5
    probs = rng.dirichlet(np.ones(80), size=3) if exact else None
    stat = rng.integers(0, 3, (3, 80, 4))
    fields = 4 if x64 else 2

    def leak(masks, probs, statistic):
        return bmp.leakage.sampling_leakage(masks, probs, statistic=statistic)[:fields]

    with jax.enable_x64(x64):
        for statistic in (None, stat):
            eager = [leak(sets[j], None if probs is None else probs[j],
                          None if statistic is None else statistic[j]) for j in range(3)]
            jitted = jax.jit(leak)(sets[0], None if probs is None else probs[0],
                                   None if statistic is None else statistic[0])
            tol = {"rtol": 1e-12, "atol": 1e-12} if x64 else {"rtol": 1e-5, "atol": 1e-6}
            _close(jitted, eager[0], **tol)
            mapped = jax.vmap(leak)(sets, probs, statistic)
            _close(mapped, jax.tree_util.tree_map(lambda *x: np.stack(x), *eager), **tol)


def test_closed_form_leakage_under_jit():
    _equal(jax.jit(lambda q: bmp.leakage.poisson_leakage(q, 4)[:4])(0.3), bmp.leakage.poisson_leakage(0.3, 4)[:4])
    _equal(jax.jit(lambda: bmp.leakage.uniform_leakage(4, 2)[:4])(), bmp.leakage.uniform_leakage(4, 2)[:4])


# ---------------------------------------------------------------------------------------------
# end to end: LiRA -> Bayes decisions -> error counts -> certified bound and Jeffreys estimate
# ---------------------------------------------------------------------------------------------

CONFIDENCE = 0.9
NUM_DRAWS = 1000


def _pipeline(scores, masks, eta, key):
    llr = mia.lira_loo(scores, masks)
    decisions = mia.bayes_decision(llr, eta)
    counts = mia.error_counts(decisions, masks)
    cert = bmp.certified_epsilons(counts, confidence=CONFIDENCE)
    jeff = bmp.jeffreys_estimate(key, counts, num_draws=NUM_DRAWS)
    return counts, cert.epsilon_left, cert.epsilon_right, jeff.epsilon_left, jeff.epsilon_right


@pytest.mark.slow
def test_end_to_end_jit_vmap_over_priors_equals_eager():
    scores, masks = _data(6, num_models=40)
    etas = jnp.array([[0.05] * N, [0.5] * N, [0.9] * N, [0.1, 0.3, 0.5, 0.7, 0.9]])
    key = jax.random.key(7)
    batched = jax.jit(jax.vmap(_pipeline, in_axes=(None, None, 0, None)))(scores, masks, etas, key)
    for p, eta in enumerate(etas):
        counts, cert_l, cert_r, jeff_l, jeff_r = _pipeline(scores, masks, eta, key)
        _equal(jax.tree_util.tree_map(lambda x, p=p: x[p], batched[0]), counts)
        # float32 under the transform, float64 eagerly: never larger, within 1e-3
        for got, want in ((batched[1][p], cert_l), (batched[2][p], cert_r)):
            got, want = np.asarray(got), np.asarray(want)
            assert np.all(got <= want + 1e-6)
            np.testing.assert_allclose(got, want, atol=1e-3)
        _close((batched[3][p], batched[4][p]), (jeff_l, jeff_r), rtol=1e-5, atol=1e-5)
    # the priors matter: a node's counts change with η (the test is not vacuous)
    assert not np.array_equal(np.asarray(batched[0].fp[0]), np.asarray(batched[0].fp[2]))


@pytest.mark.slow
def test_end_to_end_with_x64_equals_eager_exactly():
    scores, masks = _data(8, num_models=16)
    key = jax.random.key(9)
    with jax.enable_x64(True):
        got = jax.jit(_pipeline)(scores, masks, 0.3, key)
        want = _pipeline(scores, masks, 0.3, key)
        _equal(got[:3], want[:3])
        _close(got[3:], want[3:], rtol=1e-5, atol=1e-5)




def test_primitive_walker_finds_a_callback():
    def with_callback(x):
        y = jax.pure_callback(np.sin, jax.ShapeDtypeStruct((), jnp.float32), x)
        return jax.lax.cond(x > 0, lambda v: jax.jit(jnp.cos)(v), lambda v: v, y)

    assert "pure_callback" in primitives(jax.make_jaxpr(with_callback)(1.0))
    assert {"cos", "cond"} <= primitives(jax.make_jaxpr(with_callback)(1.0))


def test_cores_hold_no_host_callback():
    scores, masks = _data(10)
    counts = _counts()
    traced = {
        "pipeline": jax.make_jaxpr(jax.vmap(_pipeline, in_axes=(None, None, 0, None)))(
            scores, masks, jnp.full((2, N), 0.5), jax.random.key(0)),
        "lira_loo": jax.make_jaxpr(mia.lira_loo)(scores, masks),
        "fixed_fpr_decision": jax.make_jaxpr(mia.fixed_fpr_decision)(scores, masks, 0.1),
        "roc_auc": jax.make_jaxpr(mia.roc_auc)(scores, masks),
        "tpr_at_fpr": jax.make_jaxpr(mia.tpr_at_fpr)(scores, masks, 0.1),
        "membership_advantage": jax.make_jaxpr(mia.membership_advantage)(scores > 0, masks),
        "clopper_pearson_upper": jax.make_jaxpr(functools.partial(
            stats.clopper_pearson_upper, confidence=0.95))(counts.fp, counts.n0),
        "certified_epsilons": jax.make_jaxpr(bmp.certified_epsilons)(counts),
    }
    for name, (fn, args) in REGION.items():
        traced[name] = jax.make_jaxpr(fn)(*args)
    for name, jaxpr in traced.items():
        prims = primitives(jaxpr)
        assert prims, name
        assert not prims & CALLBACKS, (name, prims & CALLBACKS)
    # the walker does reach the bisection's betainc inside the certified bound's loop
    assert "regularized_incomplete_beta" in primitives(traced["pipeline"])
