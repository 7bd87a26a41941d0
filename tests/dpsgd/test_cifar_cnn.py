"""CifarCNN (Annamalai & De Cristofaro, arXiv 2405.14106): shapes, and the generic vmap(grad)
per-example clipping path on it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.dpsgd import clipped_gradient_sum
from jaxaudit.dpsgd.models import CifarCNN, fast_apply
from jaxaudit.dpsgd.private_step import _resolve

MODEL = CifarCNN()


def _data(seed, n):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return jax.random.uniform(k1, (n, 32, 32, 3)), jax.random.randint(k2, (n,), 0, 10)


def _global_norm(tree):
    return float(np.sqrt(sum(np.sum(np.asarray(v, np.float64) ** 2)
                             for v in jax.tree.leaves(tree))))


@pytest.fixture(scope="module")
def params():
    """Parameters in ``MODEL.init``'s structure (from ``jax.eval_shape``), filled with seeded
    LeCun-normal numpy draws: compiling flax's initialisers costs several seconds on CPU, the
    module itself is what is tested (``MODEL.init`` runs in the class's docstring example)."""
    shapes = jax.eval_shape(MODEL.init, jax.random.key(0),
                            jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32))
    rng = np.random.default_rng(0)

    def draw(leaf):
        fan_in = int(np.prod(leaf.shape[:-1])) if len(leaf.shape) > 1 else 1
        return jnp.asarray(rng.normal(0.0, fan_in**-0.5, leaf.shape).astype(np.float32))

    return jax.tree.map(draw, shapes)


def test_architecture_and_output_shape(params):
    shapes = {k: v["kernel"].shape for k, v in params["params"].items()}
    assert shapes == {
        "conv1_1": (3, 3, 3, 32), "conv1_2": (3, 3, 32, 32),
        "conv2_1": (3, 3, 32, 64), "conv2_2": (3, 3, 64, 64),
        "conv3_1": (3, 3, 64, 128), "conv3_2": (3, 3, 128, 128),
        "fc1": (4 * 4 * 128, 128), "fc2": (128, 10),
    }
    x, _ = _data(1, 5)
    logits = jax.jit(MODEL.apply)(params, x)
    assert logits.shape == (5, 10) and bool(jnp.isfinite(logits).all())


def test_ghost_path_is_used_by_default():
    assert _resolve(MODEL, "auto")[0] == "ghost"


@pytest.mark.slow
def test_vmap_clipping_bounds_a_single_example(params):
    """One jit-compiled call: the clipped sum of one example whose gradient norm exceeds C has
    norm C (≤ C up to float32 rounding)."""
    x, y = _data(4, 1)
    clip = 1e-3
    total, norms = clipped_gradient_sum(MODEL, params, x, y, clip, method="vmap")
    assert norms.shape == (1,) and float(norms[0]) > clip
    assert jax.tree.structure(total) == jax.tree.structure(params)
    assert _global_norm(total) <= clip * (1 + 1e-5)
    np.testing.assert_allclose(_global_norm(total), clip, rtol=1e-4)


@pytest.mark.slow
def test_cifar_cnn_ghost_path_matches_vmap_reference():
    # The im2col layer program (ghost clipping) against per-example vmap(grad) with optax's
    # clip-and-sum: same forward pass, same clipped sum and norms (float32 tolerance).
    model = CifarCNN()
    k1, k2, k3 = jax.random.split(jax.random.key(11), 3)
    x = jax.random.uniform(k1, (5, 32, 32, 3))
    y = jax.random.randint(k2, (5,), 0, 10)
    params = model.init(k3, x[:1])
    np.testing.assert_allclose(fast_apply(model, params, x), model.apply(params, x),
                               rtol=2e-4, atol=2e-5)
    weights = jnp.array([1.0, 1.0, 0.0, 1.0, 1.0])
    ghost, n_ghost = clipped_gradient_sum(model, params, x, y, 0.5, weights, method="ghost")
    ref, n_ref = clipped_gradient_sum(model, params, x, y, 0.5, weights, method="vmap")
    np.testing.assert_allclose(n_ghost, n_ref, rtol=1e-3)
    for a, b in zip(jax.tree.leaves(ghost), jax.tree.leaves(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
