"""The DP aggregation transformation (clip, sum, Gaussian noise, normalise) and its two users.

The first tests pin the refactor: the canary step/run of :mod:`jaxaudit.dpsgd` and the LM
fine-tuning of :mod:`jaxaudit.attacks` must give, bit for bit, what the code gave before the noisy
clipped sum was moved into one transformation. The references below are that code's arithmetic
written out here (vmap(grad), optax's per-example clip-and-sum, one normal draw per leaf from
``split(key, num_leaves)``, θ − (η/n̄)·ĝ or Adam on ĝ/n̄), with the same keys.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxaudit.attacks.char_model import CharGRU, sequence_log_likelihood
from jaxaudit.attacks.lm_training import train_dp_lm
from jaxaudit.dpsgd import MLP, LogisticRegression, make_private_step, train_run
from jaxaudit.dpsgd.private_step import _clipped_sum_fn

# ---------------------------------------------------------------------------------------------
# references: the pre-refactor arithmetic, written out


def _ref_noise(key, tree, stddev):
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(
        treedef, [x + stddev * jax.random.normal(k, x.shape, x.dtype) for x, k in zip(leaves, keys)])


def _ref_masked_clip_sum(grads, weights, clip):
    leaves, treedef = jax.tree.flatten(grads)
    leaves = [g * weights.reshape((-1,) + (1,) * (g.ndim - 1)) for g in leaves]
    summed, _ = optax.transforms.per_example_global_norm_clip(leaves, clip)
    return jax.tree.unflatten(treedef, summed)


def _ref_clip_sum(model, method, params, features, labels, weights, clip):
    if method == "ghost":  # the model-specific clipped sum (tested against per-example grads)
        _, fn = _clipped_sum_fn(model, "ghost")
        return fn(params, features, labels, weights, clip)[0]

    def loss(p, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x[None]), y[None])[0]

    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, features, labels)
    return _ref_masked_clip_sum(grads, weights, clip)


def _ref_step(model, method, clip, lr, normalizer, key, params, features, labels, mask, sigma):
    summed = _ref_clip_sum(model, method, params, features, labels, mask, clip)
    noisy = _ref_noise(key, summed, sigma * clip)
    scale = lr / normalizer
    return jax.tree.map(lambda p, g: p - scale * g, params, noisy)


def _ref_run(model, method, clip, lr, q, steps, key, in_flag, params, features, labels, canary,
             sigma):
    n = labels.shape[0] - 1
    normalizer = max(q * n, 1e-12)
    member = jnp.ones(labels.shape, jnp.float32).at[-1].set(in_flag.astype(jnp.float32))

    def body(p, k):
        if q < 1.0:
            k, k_sample = jax.random.split(k)
            mask = member * jax.random.bernoulli(k_sample, q, member.shape)
        else:
            mask = member
        return _ref_step(model, method, clip, lr, normalizer, k, p, features, labels, mask,
                         sigma), None

    p, _ = jax.lax.scan(body, params, jax.random.split(key, steps))
    logits = model.apply(p, canary[0][None])
    return -optax.softmax_cross_entropy_with_integer_labels(logits, canary[1][None])[0]


def _ref_train_dp_lm(key, model, tokens, steps, q, sigma, clip, lr):
    n = tokens.shape[0]
    k_init, k_train = jax.random.split(key)
    params = jax.jit(model.init)(k_init, tokens[:1])
    opt = optax.adam(lr)
    normalizer = q * n
    cap = min(n, int(math.ceil(q * n + 8.0 * math.sqrt(q * (1.0 - q) * n) + 8.0)))

    def loss(p, record):
        return -sequence_log_likelihood(model, p, record[None])[0]

    def one_step(carry, k):
        p, state = carry
        k_mask, k_noise = jax.random.split(k)
        mask = jax.random.bernoulli(k_mask, q, (n,))
        (rows,) = jnp.nonzero(mask, size=cap, fill_value=0)
        weight = (jnp.arange(cap) < mask.sum()).astype(jnp.float32)
        grads = jax.vmap(jax.grad(loss), in_axes=(None, 0))(p, tokens[rows])
        noisy = _ref_noise(k_noise, _ref_masked_clip_sum(grads, weight, clip), sigma * clip)
        g = jax.tree.map(lambda x: x / normalizer, noisy)
        updates, state = opt.update(g, state, p)
        return (optax.apply_updates(p, updates), state), None

    run = jax.jit(lambda carry, keys: jax.lax.scan(one_step, carry, keys)[0])
    return run((params, opt.init(params)), jax.random.split(k_train, steps))[0]


def _assert_trees_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _data(key, n, shape, classes):
    k1, k2 = jax.random.split(key)
    return jax.random.uniform(k1, (n,) + shape), jax.random.randint(k2, (n,), 0, classes)


# ---------------------------------------------------------------------------------------------
# bit-identical to the pre-refactor code


@pytest.mark.parametrize("model, shape, method", [
    (MLP(hidden=(7,), num_classes=3), (5,), "vmap"),
    (MLP(hidden=(7,), num_classes=3), (5,), "ghost"),
])
def test_private_step_bit_identical_to_reference(model, shape, method):
    x, y = _data(jax.random.key(30), 6, shape, model.num_classes)
    params = model.init(jax.random.key(31), x[:1])
    clip, sigma, lr, normalizer = 0.3, 1.3, 0.7, 5.0
    prepare, step = make_private_step(model, clip_norm=clip, noise_multiplier=sigma,
                                      learning_rate=lr, normalizer=normalizer, method=method)
    features = prepare(x)
    mask = jnp.array([1, 0, 1, 1, 1, 0], jnp.float32)
    for seed in (0, 1):
        key = jax.random.key(seed)
        got = jax.jit(step)(key, params, features, y, mask)
        ref = jax.jit(lambda k, p, f, yy, m: _ref_step(model, method, clip, lr, normalizer, k, p, f,
                                                        yy, m, sigma))(key, params, features, y,
                                                                       mask)
        _assert_trees_equal(got, ref)


@pytest.mark.parametrize("method, q", [("vmap", 1.0), ("ghost", 0.5)])
def test_canary_run_bit_identical_to_reference(method, q):
    model = LogisticRegression(num_classes=3)
    n, steps, clip, lr, sigma = 7, 4, 0.4, 0.6, 0.9
    x, y = _data(jax.random.key(32), n, (4,), 3)
    params = model.init(jax.random.key(33), x[:1])
    canary = (jnp.full(4, 0.5), jnp.asarray(2, jnp.int32))
    xs = jnp.concatenate([x, canary[0][None]])
    ys = jnp.concatenate([y, canary[1][None]]).astype(jnp.int32)
    for include in (True, False):
        key = jax.random.key(34)
        got = train_run(key, model, params, (x, y), canary, include_canary=include,
                        noise_multiplier=sigma, clip_norm=clip, steps=steps, learning_rate=lr,
                        sampling_rate=q, method=method)
        ref = jax.jit(lambda k, flag, f, p, s: _ref_run(model, method, clip, lr, q, steps, k,
                                                         flag, p, f, ys, canary, s))(
            key, jnp.asarray(include), xs, params, jnp.float32(sigma))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def test_train_dp_lm_bit_identical_to_reference():
    model = CharGRU(embed_dim=4, hidden_dim=8)
    tokens = jax.random.randint(jax.random.key(35), (12, 6), 1, model.vocab_size)
    args = dict(steps=5, sampling_rate=0.5, noise_multiplier=0.8, clip_norm=0.7,
                learning_rate=3e-3)
    got = train_dp_lm(jax.random.key(36), model, tokens, chunk=5, **args)
    ref = _ref_train_dp_lm(jax.random.key(36), model, tokens, 5, 0.5, 0.8, 0.7, 3e-3)
    _assert_trees_equal(got, ref)
