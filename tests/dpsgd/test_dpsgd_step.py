"""Per-example clipping, sum and Gaussian noise of the DP-GD step, against independent references."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxaudit.dpsgd import (
    MLP,
    DpsgdConfig,
    LogisticRegression,
    SmallCNN,
    clipped_gradient_sum,
    dp_gradient_step,
    make_private_step,
    train_run,
)
from jaxaudit.dpsgd.private_step import _clipped_sum_fn


def _data(key, n, shape, classes=10):
    k1, k2 = jax.random.split(key)
    return jax.random.uniform(k1, (n,) + shape), jax.random.randint(k2, (n,), 0, classes)


_GRAD_FNS: dict = {}


def _loop_per_example_grads(model, params, x, y):
    """Reference: per-example gradients by vmap(grad) through flax's own layers (nn.Conv), as a
    list of numpy gradient trees (clipping and sums are then done in numpy)."""
    if model not in _GRAD_FNS:
        def loss(p, xi, yi):
            return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, xi[None]),
                                                                   yi[None])[0]
        _GRAD_FNS[model] = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    stacked = jax.tree.map(np.asarray, _GRAD_FNS[model](params, x, y))
    return [jax.tree.map(lambda g, i=i: g[i].astype(np.float64), stacked) for i in range(x.shape[0])]


def _tree_norm(t):
    return float(np.sqrt(sum(np.sum(np.asarray(leaf, np.float64) ** 2) for leaf in jax.tree.leaves(t))))


def _ref_clipped_sum(grads, clip, mask=None):
    """Σ_i mask_i · g_i · min(1, C/‖g_i‖) from a list of per-example gradient trees (numpy)."""
    mask = np.ones(len(grads)) if mask is None else mask
    factors = [m * min(1.0, clip / _tree_norm(g)) for m, g in zip(mask, grads)]
    return jax.tree.map(lambda *gs: sum(f * g for f, g in zip(factors, gs)), *grads)


@pytest.mark.parametrize(
    "model, shape",
    [(SmallCNN(), (28, 28)), (MLP(hidden_dims=(7, 5), num_classes=4), (6,)),
     (LogisticRegression(num_classes=3), (2, 3))],
)
@pytest.mark.slow
def test_ghost_equals_per_example_reference(model, shape):
    n = 6
    x, y = _data(jax.random.key(0), n, shape, classes=model.num_classes)
    params = model.init(jax.random.key(1), x[:1])
    weights = jnp.array([1, 0, 1, 1, 0, 1], jnp.float32)
    grads = _loop_per_example_grads(model, params, x, y)
    norms_ref = np.array([_tree_norm(g) for g in grads])
    clip = float(np.median(norms_ref))  # some clipped, some not
    ref = jax.tree.map(lambda *gs: sum(
        w * min(1.0, clip / nr) * g for w, nr, g in zip(np.asarray(weights), norms_ref, gs)), *grads)
    # the library's "vmap" path is the reference computation itself; check it on the small models
    for method in ("ghost",) if isinstance(model, SmallCNN) else ("ghost", "vmap"):
        summed, norms = clipped_gradient_sum(model, params, x, y, clip, weights, method=method)
        np.testing.assert_allclose(norms, norms_ref, rtol=2e-5)
        for a, b in zip(jax.tree.leaves(summed), jax.tree.leaves(ref)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6 * np.abs(b).max())


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [None, 1, 5, 12])
def test_each_clipped_gradient_within_clip_norm(block_size):
    model = MLP(hidden_dims=(16,), num_classes=5)
    n, clip = 12, 0.3
    x, y = _data(jax.random.key(2), n, (9,), classes=5)
    x = x * 10.0  # large gradients: most get clipped
    params = model.init(jax.random.key(3), x[:1])
    prepare, fn = _clipped_sum_fn(model, "ghost", block_size)
    x = prepare(x)  # the features layout of this block size (5: two blocks and a padded one)
    one_hot = jnp.eye(n)
    singles, norms = jax.vmap(lambda w: fn(params, x, y, w, clip))(one_hot)
    single_norms = np.sqrt(sum(np.sum(np.asarray(leaf).reshape(n, -1) ** 2, axis=1)
                               for leaf in jax.tree.leaves(singles)))
    assert (single_norms <= clip + 1e-6).all()
    # unclipped direction preserved and norm = min(‖g‖, C)
    np.testing.assert_allclose(single_norms, np.minimum(np.asarray(norms[0]), clip), rtol=1e-5)
    assert (np.asarray(norms[0]) > clip).sum() >= n // 2
    total, _ = fn(params, x, y, jnp.ones(n), clip)
    chex.assert_trees_all_close(total, jax.tree.map(lambda b: np.asarray(b).sum(axis=0), singles),
                                rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_noise_standard_deviation_is_sigma_times_clip():
    model = LogisticRegression(num_classes=4)
    x, y = _data(jax.random.key(4), 5, (6,), classes=4)
    params = model.init(jax.random.key(5), x[:1])
    sigma, clip = 1.7, 0.4
    prepare, init, step = make_private_step(
        model, DpsgdConfig(clip_norm=clip, noise_multiplier=sigma, learning_rate=1.0),
        normalizer=1.0)
    f, w = prepare(x), jnp.ones(5)
    keys = jax.random.split(jax.random.key(6), 4000)
    new = jax.jit(jax.vmap(lambda k: step(k, params, init(params), f, y, w)[0]))(keys)
    summed, _ = clipped_gradient_sum(model, params, x, y, clip)
    # θ' = θ − (S + Z)  =>  Z = θ − θ' − S
    noise = np.concatenate([
        (np.asarray(p)[None] - np.asarray(q) - np.asarray(s)[None]).reshape(len(keys), -1)
        for p, q, s in zip(jax.tree.leaves(params), jax.tree.leaves(new), jax.tree.leaves(summed))
    ], axis=1)
    m = noise.size  # 4000 × 28 entries
    sd = noise.std()
    # sample sd of m normals: relative standard error 1/sqrt(2m); 5 standard errors
    assert abs(sd / (sigma * clip) - 1) < 5 / np.sqrt(2 * m)
    assert abs(noise.mean()) < 5 * sigma * clip / np.sqrt(m)
    # independent across coordinates: sample correlation between two coordinates is ~0
    corr = np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]
    assert abs(corr) < 5 / np.sqrt(len(keys))


@pytest.mark.slow
def test_dp_gradient_step_without_noise_is_clipped_gradient_descent():
    model = MLP(hidden_dims=(8,), num_classes=3)
    x, y = _data(jax.random.key(7), 10, (4,), classes=3)
    params = model.init(jax.random.key(8), x[:1])
    out = dp_gradient_step(jax.random.key(9), model, params, x, y,
                           DpsgdConfig(clip_norm=0.5, noise_multiplier=0.0, learning_rate=0.3),
                           normalizer=10.0)
    grads = _loop_per_example_grads(model, params, x, y)
    total = _ref_clipped_sum(grads, 0.5)
    ref = jax.tree.map(lambda p, g: np.asarray(p) - 0.3 / 10.0 * g, params, total)
    chex.assert_trees_all_close(out, ref, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_full_batch_noiseless_run_equals_plain_clipped_gd():
    model = MLP(hidden_dims=(8,), num_classes=3)
    n, steps, lr, clip = 9, 6, 0.8, 0.2
    x, y = _data(jax.random.key(10), n, (5,), classes=3)
    params = model.init(jax.random.key(11), x[:1])
    canary = (jnp.zeros(5), 2)
    xs = jnp.concatenate([x, canary[0][None]])
    ys = jnp.concatenate([y, jnp.array([canary[1]])])
    for include in (True, False):
        p = params
        rows = n + 1 if include else n
        for _ in range(steps):
            grads = _loop_per_example_grads(model, p, xs[:rows], ys[:rows])
            total = _ref_clipped_sum(grads, clip)
            p = jax.tree.map(lambda a, g: np.asarray(a) - lr / n * g, p, total)
        ref_score = -optax.softmax_cross_entropy_with_integer_labels(
            model.apply(p, canary[0][None]), jnp.array([canary[1]]))[0]
        got = train_run(jax.random.key(12), model, params, (x, y), canary,
                        DpsgdConfig(noise_multiplier=0.0, clip_norm=clip, steps=steps,
                                    learning_rate=lr), include_canary=include)
        np.testing.assert_allclose(got, ref_score, rtol=1e-5)


@pytest.mark.slow
def test_poisson_sampling_masks_rows():
    """q < 1: each step uses the rows of an independent Bernoulli(q) mask (reference loop)."""
    model = LogisticRegression(num_classes=3)
    n, steps, lr, clip, q = 8, 5, 0.5, 0.3, 0.4
    x, y = _data(jax.random.key(13), n, (4,), classes=3)
    params = model.init(jax.random.key(14), x[:1])
    canary = (jnp.ones(4), 1)
    xs = jnp.concatenate([x, canary[0][None]])
    ys = jnp.concatenate([y, jnp.array([1])])
    key = jax.random.key(15)
    p = params
    sizes = []
    for k in jax.random.split(key, steps):
        _, ks = jax.random.split(k)
        mask = np.asarray(jax.random.bernoulli(ks, q, (n + 1,)), np.float32)
        sizes.append(mask.sum())
        grads = _loop_per_example_grads(model, p, xs, ys)
        total = _ref_clipped_sum(grads, clip, mask)
        p = jax.tree.map(lambda a, g: np.asarray(a) - lr / (q * n) * g, p, total)
    assert 0 < np.sum(sizes) < steps * (n + 1)  # the masks really subsample
    ref = -optax.softmax_cross_entropy_with_integer_labels(model.apply(p, canary[0][None]),
                                                           jnp.array([1]))[0]
    got = train_run(key, model, params, (x, y), canary,
                    DpsgdConfig(noise_multiplier=0.0, clip_norm=clip, steps=steps,
                                learning_rate=lr, sampling_rate=q), include_canary=True)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_bad_input_raises():
    model = LogisticRegression(num_classes=2)
    x, y = _data(jax.random.key(16), 3, (2,), classes=2)
    params = model.init(jax.random.key(17), x[:1])
    with pytest.raises(ValueError, match="clip_norm"):
        clipped_gradient_sum(model, params, x, y, 0.0)
    with pytest.raises(ValueError, match="labels"):
        clipped_gradient_sum(model, params, x, y[:2], 1.0)
    with pytest.raises(ValueError, match="method"):
        clipped_gradient_sum(model, params, x, y, 1.0, method="fast")
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp_gradient_step(jax.random.key(0), model, params, x, y,
                         DpsgdConfig(clip_norm=1.0, noise_multiplier=-1.0, learning_rate=0.1),
                         normalizer=3.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp_gradient_step(jax.random.key(0), model, params, x, y,
                         DpsgdConfig(clip_norm=1.0, noise_multiplier=float("nan"),
                                     learning_rate=0.1), normalizer=3.0)


@pytest.mark.slow
def test_canary_gradient_enters_the_update_exactly_once():
    # The two worlds differ only in the canary row's membership weight; with σ = 0 the difference
    # of one step's updates is η/n̄ · clip_C(∇ℓ_canary), against the reference clipped gradient
    # of the canary alone (flax's own layers, vmap(grad)).
    model = SmallCNN()
    x, y = _data(jax.random.key(21), 6, (28, 28))
    params = model.init(jax.random.key(22), x[:1])
    eta, normalizer, clip = 0.5, 5.0, 0.3
    prepare, init, step = make_private_step(
        model, DpsgdConfig(clip_norm=clip, noise_multiplier=0.0, learning_rate=eta),
        normalizer=normalizer)
    features = prepare(x)
    key = jax.random.key(23)
    member = jnp.ones(6).at[-1].set(1.0)
    without = jnp.ones(6).at[-1].set(0.0)
    diff = jax.tree.map(lambda a, b: np.asarray(b, np.float64) - np.asarray(a, np.float64),
                        step(key, params, init(params), features, y, member)[0],
                        step(key, params, init(params), features, y, without)[0])
    grads = _loop_per_example_grads(model, params, x, y)
    expected = jax.tree.map(lambda g: eta / normalizer * g, _ref_clipped_sum([grads[-1]], clip))
    for a, b in zip(jax.tree.leaves(diff), jax.tree.leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-7)
    np.testing.assert_allclose(_tree_norm(diff), eta / normalizer * min(
        clip, _tree_norm(grads[-1])), rtol=1e-3)
