"""Ghost clipping in blocks of examples (jaxaudit.dpsgd.ghost) against vmap(grad) through flax's
own layers: per-example norms and the clipped, masked sum, with clipping active and inactive."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxaudit._validation import ArgumentTypeError
from jaxaudit.dpsgd import MLP, DpsgdConfig, SmallCNN, clipped_gradient_sum, dp_gradient_step
from jaxaudit.dpsgd.ghost import block_features, default_block_size


def _reference(model, params, x, y, weights, clip):
    """Per-example gradients by vmap(grad) of flax's model.apply (nn.Conv, not im2col), clipped
    and summed in float64 numpy; and the per-example norms."""
    def loss(p, xi, yi):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, xi[None]), yi[None])[0]

    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    leaves = [np.asarray(g, np.float64) for g in jax.tree.leaves(grads)]
    norms = np.sqrt(sum(np.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves))
    factors = np.asarray(weights, np.float64) * np.minimum(1.0, clip / norms)
    summed = [np.tensordot(factors, g, axes=1) for g in leaves]
    return jax.tree.unflatten(jax.tree.structure(grads), summed), norms


@pytest.fixture(scope="module")
def cnn_batch():
    key = jax.random.key(30)
    k1, k2, k3 = jax.random.split(key, 3)
    n = 7
    x = jax.random.uniform(k1, (n, 28, 28))
    y = jax.random.randint(k2, (n,), 0, 10)
    model = SmallCNN()
    params = model.init(k3, x[:1])
    weights = jnp.array([1, 1, 0, 1, 1, 0, 1], jnp.float32)
    return model, params, x, y, weights


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [1, 3, 7])
@pytest.mark.parametrize("clipping", ["active", "inactive"])
def test_blocked_ghost_equals_vmap_reference_smallcnn(cnn_batch, block_size, clipping):
    model, params, x, y, weights = cnn_batch
    _, norms_ref = _reference(model, params, x, y, weights, 1.0)
    # active: half the examples clipped; inactive: C above every norm (plain masked sum)
    clip = float(np.median(norms_ref)) if clipping == "active" else 10.0 * float(norms_ref.max())
    ref, _ = _reference(model, params, x, y, weights, clip)
    summed, norms = clipped_gradient_sum(model, params, x, y, clip, weights, method="ghost",
                                         block_size=block_size)
    np.testing.assert_allclose(norms, norms_ref, rtol=2e-5)
    for a, b in zip(jax.tree.leaves(summed), jax.tree.leaves(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max())


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [1, 4])
def test_blocked_ghost_equals_vmap_path_dense(block_size):
    model = MLP(hidden_dims=(8, 6), num_classes=4)
    x = jax.random.normal(jax.random.key(31), (9, 5))
    y = jax.random.randint(jax.random.key(32), (9,), 0, 4)
    params = model.init(jax.random.key(33), x[:1])
    weights = jnp.ones(9).at[4].set(0.0)
    _, norms_ref = _reference(model, params, x, y, weights, 1.0)
    clip = float(np.median(norms_ref))
    ref, _ = _reference(model, params, x, y, weights, clip)
    summed, norms = clipped_gradient_sum(model, params, x, y, clip, weights, block_size=block_size)
    np.testing.assert_allclose(norms, norms_ref, rtol=2e-5)
    for a, b in zip(jax.tree.leaves(summed), jax.tree.leaves(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(b).max())


@pytest.mark.slow
def test_step_under_jit_vmap_and_grad_matches_unblocked():
    """The blocked step is traceable: vmapped over two parameter sets under jit it equals the
    whole-batch step, and it can be differentiated (the learning rate's gradient is finite)."""
    model = MLP(hidden_dims=(4,), num_classes=3)
    x = jax.random.normal(jax.random.key(34), (5, 3))
    y = jnp.array([0, 1, 2, 1, 0])
    stacked = jax.vmap(lambda k: model.init(k, x[:1]))(jax.random.split(jax.random.key(35), 2))

    def step(p, block_size):
        return dp_gradient_step(jax.random.key(36), model, p, x, y,
                                DpsgdConfig(clip_norm=0.1, noise_multiplier=0.5,
                                            learning_rate=0.2, block_size=block_size),
                                normalizer=1.0)

    blocked = jax.jit(jax.vmap(lambda p: step(p, 2)))(stacked)
    whole = jax.jit(jax.vmap(lambda p: step(p, 5)))(stacked)
    for a, b in zip(jax.tree.leaves(blocked), jax.tree.leaves(whole)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    p0 = jax.tree.map(lambda a: a[0], stacked)
    g = jax.grad(lambda p: sum(jnp.sum(v) for v in jax.tree.leaves(step(p, 2))))(p0)
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(g))


def test_block_features_pads_with_zero_rows():
    f = jnp.arange(10.0).reshape(5, 2)
    b = block_features(f, 2)
    assert b.shape == (3, 2, 2)
    np.testing.assert_array_equal(b.reshape(6, 2)[:5], f)
    np.testing.assert_array_equal(b.reshape(6, 2)[5], 0.0)
    assert block_features(f, 9).shape == (1, 5, 2)  # never wider than the batch


def test_default_block_size_by_backend():
    # one example per block only where each CPU device runs its own single-threaded step
    assert default_block_size("cpu", num_devices=2) == 1
    assert default_block_size("cpu", num_devices=1) is None
    assert default_block_size("gpu", num_devices=8) is None
    assert default_block_size("tpu", num_devices=1) is None
    import jax

    expected = 1 if jax.default_backend() == "cpu" and jax.local_device_count() > 1 else None
    assert default_block_size() == expected


def test_block_size_validated():
    model = MLP(hidden_dims=(4,), num_classes=2)
    x, y = jnp.ones((3, 2)), jnp.array([0, 1, 0])
    params = model.init(jax.random.key(0), x[:1])
    for bad in (0, -1):
        with pytest.raises(ValueError, match="block_size"):
            clipped_gradient_sum(model, params, x, y, 1.0, block_size=bad)
    for bad in (1.5, "2", True):
        with pytest.raises((ValueError, ArgumentTypeError), match="block_size"):
            dp_gradient_step(jax.random.key(0), model, params, x, y,
                             DpsgdConfig(clip_norm=1.0, noise_multiplier=1.0, learning_rate=0.1,
                                         block_size=bad), normalizer=3.0)
