"""Every public numeric function of ``jaxaudit.dpsgd`` inside the user's jit and vmap.

Each is run eagerly (the validated entry, one call per key or seed) and through ``jax.jit`` and
``jax.vmap`` over keys or seeds; the transformed values must equal the eager ones (to float32
rounding: under an outer jit XLA fuses the clip factors' square root and division differently
from the entry's own compiled call, a few ulp), PRNG keys and counts exactly. Host-side drivers
(``canary_runs`` returns numpy arrays) must refuse a traced argument with a clear error.
"""

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
    canary_runs,
    clipped_gradient_sum,
    dp_aggregate,
    dp_gradient_step,
    dp_noisy_sum,
    make_private_step,
    per_example_gradients,
    train_run,
)
from jaxaudit.dpsgd.canary_training import canary_score
from jaxaudit.dpsgd.private_aggregate import add_gaussian_noise, clip_and_sum, noise_stddev

NUM_SEEDS = 2


def _keys(seed):
    return jax.random.split(jax.random.key(seed), NUM_SEEDS)


def _leaf(x):
    if jnp.issubdtype(jnp.asarray(x).dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def _close(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(_leaf(x), _leaf(y), rtol=2e-6, atol=1e-7)


def _row(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def _check_jit_vmap(fn, keys):
    """fn(key) eagerly per key == jax.jit(fn)(key) == jax.vmap(fn)(keys)[i] == jit(vmap(fn))[i]."""
    eager = [fn(k) for k in keys]
    _close(jax.jit(fn)(keys[0]), eager[0])
    for mapped in (jax.vmap(fn)(keys), jax.jit(jax.vmap(fn))(keys)):
        for i in range(len(keys)):
            _close(_row(mapped, i), eager[i])


@pytest.fixture(scope="module")
def setup():
    model = MLP(hidden_dims=(6,), num_classes=3)
    k1, k2 = jax.random.split(jax.random.key(0))
    x = jax.random.uniform(k1, (5, 4)) * 3.0
    y = jax.random.randint(k2, (5,), 0, 3)
    return model, x, y


def _init(model, x):
    return lambda key: model.init(key, x[:1])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ghost", "vmap"])
def test_clipped_gradient_sum_over_seeds(setup, method):
    model, x, y = setup
    w = jnp.array([1.0, 0.0, 1.0, 1.0, 1.0])
    _check_jit_vmap(lambda k: clipped_gradient_sum(model, _init(model, x)(k), x, y, 0.5, w,
                                                   method=method), _keys(1))


@pytest.mark.slow
def test_clipped_gradient_sum_small_cnn_under_jit():
    model = SmallCNN()
    x = jax.random.uniform(jax.random.key(2), (3, 28, 28))
    y = jnp.array([1, 4, 7])
    params = model.init(jax.random.key(3), x[:1])
    eager = clipped_gradient_sum(model, params, x, y, 0.3)
    _close(jax.jit(lambda p: clipped_gradient_sum(model, p, x, y, 0.3))(params), eager)


@pytest.mark.slow
def test_dp_gradient_step_over_keys(setup):
    model, x, y = setup
    params = model.init(jax.random.key(4), x[:1])
    mask = jnp.array([1.0, 1.0, 0.0, 1.0, 1.0])
    config = DpsgdConfig(clip_norm=0.5, noise_multiplier=1.2, learning_rate=0.1)
    _check_jit_vmap(lambda k: dp_gradient_step(k, model, params, x, y, config, mask=mask,
                                               normalizer=4.0), _keys(5))


@pytest.mark.slow
def test_make_private_step_over_keys_and_traced_sigma(setup):
    model, x, y = setup
    params = model.init(jax.random.key(6), x[:1])

    def step(key, sigma=0.9):
        prepare, init, fn = make_private_step(
            model, DpsgdConfig(clip_norm=0.5, noise_multiplier=sigma, learning_rate=0.2),
            normalizer=5.0)
        return fn(key, params, init(params), prepare(x), y, jnp.ones(5))

    _check_jit_vmap(step, _keys(7))
    k = jax.random.key(8)
    _close(jax.jit(step)(k, jnp.float32(0.9)), step(k))


@pytest.mark.slow
def test_train_run_and_canary_score_over_seeds():
    model = LogisticRegression(num_classes=3)
    x = jax.random.uniform(jax.random.key(9), (6, 4))
    y = jnp.array([0, 1, 2, 0, 1, 2])
    params = model.init(jax.random.key(10), x[:1])
    canary = (jnp.ones(4), 2)

    def run(key):
        return train_run(key, model, params, (x, y), canary,
                         DpsgdConfig(noise_multiplier=0.7, clip_norm=0.5, steps=3,
                                     learning_rate=0.3, sampling_rate=0.5), include_canary=True)

    _check_jit_vmap(run, _keys(11))
    _check_jit_vmap(lambda k: canary_score(model, model.init(k, x[:1]), canary), _keys(12))


def test_canary_runs_refuses_a_traced_argument():
    model = LogisticRegression(num_classes=2)
    x, y = jnp.ones((3, 2)), jnp.array([0, 1, 0])
    params = model.init(jax.random.key(13), x[:1])
    cfg = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=1, learning_rate=0.1)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="key.*train_run"):
        jax.jit(lambda k: canary_runs(k, model, params, (x, y), (x[0], 1), cfg, num_runs=1))(
            jax.random.key(14))
    with pytest.raises(ValueError, match="noise_multiplier.*train_run"):
        jax.jit(lambda s: canary_runs(key, model, params, (x, y), (x[0], 1),
                                      cfg._replace(noise_multiplier=s), num_runs=1))(1.0)


@pytest.mark.slow
def test_transformations_over_keys():
    grads = {"w": jax.random.normal(jax.random.key(15), (4, 3)),
             "b": jax.random.normal(jax.random.key(16), (4,))}
    mask = jnp.array([1.0, 0.0, 1.0, 1.0])
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}

    def aggregate(key):
        tx = optax.chain(dp_aggregate(0.8, 1.1, key=key, normalizer=3.0), optax.adam(0.1))
        updates, state = tx.update(grads, tx.init(params), params, mask=mask)
        return updates, state[0]

    def noisy_sum(key):
        tx = dp_noisy_sum(0.8, 1.1, normalizer=3.0, relation="replace_one")
        return tx.update(clip_and_sum(grads, 0.8, mask), tx.init(params), noise_key=key)

    _check_jit_vmap(aggregate, _keys(17))
    _check_jit_vmap(noisy_sum, _keys(18))
    _check_jit_vmap(lambda k: add_gaussian_noise(k, grads, 0.5), _keys(19))


@pytest.mark.slow
def test_clip_and_sum_per_example_gradients_noise_stddev_under_transforms():
    def loss(w, xi, yi):
        return jnp.sum((xi @ w - yi) ** 2)

    x = jax.random.normal(jax.random.key(20), (3, 5, 2))  # a batch of 5 per seed
    y = jax.random.normal(jax.random.key(21), (3, 5))
    w = jnp.array([0.5, -0.2])

    def f(xs, ys, clip):
        return clip_and_sum(per_example_gradients(loss, w, xs, ys), clip)

    eager = [f(x[i], y[i], 0.7) for i in range(3)]
    mapped = jax.vmap(f, in_axes=(0, 0, None))(x, y, 0.7)
    jitted = jax.jit(jax.vmap(f))(x, y, jnp.full(3, 0.7))  # clip norm traced and batched
    for i in range(3):
        _close(mapped[i], eager[i])
        _close(jitted[i], eager[i])
    sigmas = jnp.array([0.0, 0.5, 2.0])
    for rel, factor in (("add_remove", 1.0), ("replace_one", 2.0)):
        got = jax.jit(jax.vmap(lambda s, rel=rel: noise_stddev(s, 0.3, rel)))(sigmas)
        np.testing.assert_allclose(got, [noise_stddev(float(s), 0.3, rel) for s in sigmas],
                                   rtol=1e-6)
        np.testing.assert_allclose(got, np.asarray(sigmas) * factor * 0.3, rtol=1e-6)
