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

from jaxaudit._validation import ArgumentTypeError
from jaxaudit.attacks.char_model import CharGRU, sequence_log_likelihood
from jaxaudit.attacks.lm_training import LmConfig, train_dp_lm
from jaxaudit.dpsgd import (
    MLP,
    DpsgdConfig,
    LogisticRegression,
    clipped_gradient_sum,
    dp_aggregate,
    dp_noisy_sum,
    make_private_step,
    per_example_gradients,
    train_run,
)
from jaxaudit.dpsgd.private_aggregate import clip_and_sum, noise_stddev
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
        prepare, fn = _clipped_sum_fn(model, "ghost")  # prepare: the blocks of the ghost path
        return fn(params, prepare(features), labels, weights, clip)[0]

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


def _unkey(x):
    if jnp.issubdtype(jnp.asarray(x).dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def _assert_trees_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(_unkey(x), _unkey(y))


def _assert_trees_close(a, b):
    """Equal up to float32 rounding (jit fuses the clip factors' sqrt and division, and may
    round differently from op-by-op execution); keys and integers exactly."""
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(_unkey(x), _unkey(y), rtol=2e-6, atol=1e-7)


def _data(key, n, shape, classes):
    k1, k2 = jax.random.split(key)
    return jax.random.uniform(k1, (n,) + shape), jax.random.randint(k2, (n,), 0, classes)


# ---------------------------------------------------------------------------------------------
# bit-identical to the pre-refactor code


@pytest.mark.parametrize("model, shape, method", [
    (MLP(hidden_dims=(7,), num_classes=3), (5,), "vmap"),
    (MLP(hidden_dims=(7,), num_classes=3), (5,), "ghost"),
])
@pytest.mark.slow
def test_private_step_bit_identical_to_reference(model, shape, method):
    x, y = _data(jax.random.key(30), 6, shape, model.num_classes)
    params = model.init(jax.random.key(31), x[:1])
    clip, sigma, lr, normalizer = 0.3, 1.3, 0.7, 5.0
    prepare, init, step = make_private_step(
        model, DpsgdConfig(clip_norm=clip, noise_multiplier=sigma, learning_rate=lr,
                           method=method), normalizer=normalizer)
    features = prepare(x)
    mask = jnp.array([1, 0, 1, 1, 1, 0], jnp.float32)
    for seed in (0, 1):
        key = jax.random.key(seed)
        got = jax.jit(step)(key, params, init(params), features, y, mask)[0]
        ref = jax.jit(lambda k, p, f, yy, m: _ref_step(model, method, clip, lr, normalizer, k, p, f,
                                                        yy, m, sigma))(key, params, features, y,
                                                                       mask)
        _assert_trees_equal(got, ref)


@pytest.mark.slow
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
        got = train_run(key, model, params, (x, y), canary,
                        DpsgdConfig(noise_multiplier=sigma, clip_norm=clip, steps=steps,
                                    learning_rate=lr, sampling_rate=q, method=method),
                        include_canary=include)
        ref = jax.jit(lambda k, flag, f, p, s: _ref_run(model, method, clip, lr, q, steps, k,
                                                         flag, p, f, ys, canary, s))(
            key, jnp.asarray(include), xs, params, jnp.float32(sigma))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


@pytest.mark.slow
def test_train_dp_lm_bit_identical_to_reference():
    model = CharGRU(embed_dim=4, hidden_dim=8)
    tokens = jax.random.randint(jax.random.key(35), (12, 6), 1, model.vocab_size)
    config = LmConfig(steps=5, batch_size=6, clip_norm=0.7, learning_rate=3e-3)  # q = 6/12
    got = train_dp_lm(jax.random.key(36), model, tokens, config, noise_multiplier=0.8)
    ref = _ref_train_dp_lm(jax.random.key(36), model, tokens, 5, 0.5, 0.8, 0.7, 3e-3)
    _assert_trees_equal(got, ref)


# ---------------------------------------------------------------------------------------------
# the transformation itself: clipping, noise, normalisation, optax composition, keys, transforms


def _tree(key, n):
    """Per-example gradients of two leaves, (n, 3) and (n, 2, 2), with norms spread over [0, 4]."""
    k1, k2, k3 = jax.random.split(key, 3)
    scale = jnp.linspace(0.0, 4.0, n)
    a, b = jax.random.normal(k1, (n, 3)), jax.random.normal(k2, (n, 2, 2))
    norm = jnp.sqrt(jnp.sum(a ** 2, 1) + jnp.sum(b ** 2, (1, 2)))
    return {"a": a * (scale / norm)[:, None], "b": b * (scale / norm)[:, None, None]}, k3


def _np_rows(tree):
    """(n, d) float64 numpy matrix of the per-example gradients, leaves flattened in order."""
    return np.concatenate([np.asarray(leaf, np.float64).reshape(leaf.shape[0], -1)
                           for leaf in jax.tree.leaves(tree)], axis=1)


@pytest.mark.slow
def test_clip_and_sum_clips_each_example_to_norm_c():
    n, clip = 9, 1.5
    grads, _ = _tree(jax.random.key(40), n)
    rows = _np_rows(grads)
    norms = np.linalg.norm(rows, axis=1)
    assert (norms > clip).sum() >= 3 and (norms < clip).sum() >= 3  # both regimes present
    # each example alone (one-hot mask): its clipped gradient has norm min(‖g‖, C) ≤ C and the
    # direction of g
    singles = jax.vmap(lambda w: clip_and_sum(grads, clip, w))(jnp.eye(n))
    single_rows = _np_rows(singles)
    single_norms = np.linalg.norm(single_rows, axis=1)
    assert (single_norms <= clip * (1 + 1e-6)).all()
    np.testing.assert_allclose(single_norms, np.minimum(norms, clip), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(single_rows * norms[:, None], rows * single_norms[:, None],
                               rtol=1e-5, atol=1e-6)
    # the masked sum equals numpy's Σ_i w_i g_i min(1, C/‖g_i‖)
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1], np.float32)
    factors = mask * np.minimum(1.0, clip / np.where(norms > 0, norms, 1.0))
    got = _np_rows(jax.tree.map(lambda x: x[None], clip_and_sum(grads, clip, jnp.asarray(mask))))
    np.testing.assert_allclose(got[0], factors @ rows, rtol=1e-5, atol=1e-6)


def _params_like(per_example):
    """Zero parameters with the shapes of one example's gradient."""
    return jax.tree.map(lambda g: jnp.zeros(g.shape[1:], g.dtype), per_example)


def _noise_samples(relation, sigma, clip, num_keys):
    """Noise of dp_aggregate on zero gradients (so ĝ = Z / n̄), one update per key, vmapped."""
    zeros = {"a": jnp.zeros((3, 5)), "b": jnp.zeros((3, 2, 2))}
    normalizer = 4.0

    def one(key):
        tx = dp_aggregate(clip, sigma, key=key, normalizer=normalizer, relation=relation)
        out, _ = tx.update(zeros, tx.init(None), _params_like(zeros))
        return out

    out = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(41), num_keys))
    return _np_rows(out) * normalizer


@pytest.mark.slow
@pytest.mark.parametrize("relation, sensitivity", [("add_remove", 1.0), ("replace_one", 2.0)])
def test_noise_standard_deviation_is_sigma_times_sensitivity(relation, sensitivity):
    sigma, clip, num_keys = 0.8, 0.6, 3000
    z = _noise_samples(relation, sigma, clip, num_keys)
    m = z.size  # 3000 × 9 entries
    target = sigma * sensitivity * clip
    assert noise_stddev(sigma, clip, relation) == pytest.approx(target, rel=1e-12)
    # sample sd of m normals: relative standard error 1/sqrt(2m); tolerance 5 standard errors
    assert abs(z.std() / target - 1) < 5 / np.sqrt(2 * m)
    assert abs(z.mean()) < 5 * target / np.sqrt(m)
    corr = np.corrcoef(z[:, 0], z[:, -1])[0, 1]
    assert abs(corr) < 5 / np.sqrt(num_keys)


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_composes_with_optax_optimisers(optimizer):
    n, clip, sigma, normalizer, lr = 6, 1.2, 0.7, 3.0, 0.05
    grads, _ = _tree(jax.random.key(42), n)
    params = {"a": jnp.ones(3), "b": jnp.full((2, 2), -0.5)}
    mask = jnp.array([1, 1, 0, 1, 0, 1], jnp.float32)
    inner = optax.sgd(lr) if optimizer == "sgd" else optax.adam(lr)
    tx = optax.chain(dp_aggregate(clip, sigma, key=jax.random.key(43), normalizer=normalizer),
                     inner)
    state = tx.init(params)
    ref_state = inner.init(params)
    # reference: the numpy masked clipped sum, the noise from the state key split per update
    # (one split(k, num_leaves) sub-key per leaf), divided by n̄, then the bare optimiser
    norms = np.linalg.norm(_np_rows(grads), axis=1)
    f = np.asarray(mask) * np.minimum(1.0, clip / np.where(norms > 0, norms, 1.0))
    summed = jax.tree.map(lambda g: np.tensordot(f, np.asarray(g, np.float64), 1), grads)
    p, ref_p, k = params, jax.tree.map(np.asarray, params), jax.random.key(43)
    for _ in range(3):
        updates, state = tx.update(grads, state, p, mask=mask)
        p = optax.apply_updates(p, updates)
        k, k_noise = jax.random.split(k)
        noisy = _ref_noise(k_noise, jax.tree.map(jnp.float32, summed), sigma * clip)
        ref_updates, ref_state = inner.update(jax.tree.map(lambda g: g / normalizer, noisy),
                                              ref_state, ref_p)
        ref_p = optax.apply_updates(ref_p, ref_updates)
    for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(ref_p)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(state[0].count) == 3


@pytest.mark.slow
def test_key_in_state_split_per_update_and_noise_key_override():
    grads, _ = _tree(jax.random.key(44), 4)
    params = _params_like(grads)
    tx = dp_aggregate(1.0, 1.0, normalizer=1.0, key=jax.random.key(45))
    s0 = tx.init(None)
    u1, s1 = tx.update(grads, s0, params)
    u2, s2 = tx.update(grads, s1, params)
    assert not np.allclose(u1["a"], u2["a"])  # a fresh draw per update
    u1_again, _ = tx.update(grads, tx.init(None), params)
    _assert_trees_equal(u1, u1_again)  # reproducible from the key
    k_next, k_noise = jax.random.split(jax.random.key(45))
    np.testing.assert_array_equal(jax.random.key_data(s1.key), jax.random.key_data(k_next))
    _assert_trees_equal(u1, _ref_noise(k_noise, clip_and_sum(grads, 1.0), 1.0))
    # an explicit noise_key is used as given and leaves the state's key alone
    k = jax.random.key(46)
    u3, s3 = tx.update(grads, s1, params, noise_key=k)
    _assert_trees_equal(u3, _ref_noise(k, clip_and_sum(grads, 1.0), 1.0))
    np.testing.assert_array_equal(jax.random.key_data(s3.key), jax.random.key_data(s1.key))
    assert (int(s1.count), int(s2.count), int(s3.count)) == (1, 2, 2)
    # without any key the update refuses
    keyless = dp_aggregate(1.0, 1.0, normalizer=1.0)
    with pytest.raises(ValueError, match="noise_key"):
        keyless.update(grads, keyless.init(None), params)


@pytest.mark.slow
def test_dp_noisy_sum_is_the_noise_stage_of_dp_aggregate():
    grads, _ = _tree(jax.random.key(47), 5)
    mask = jnp.array([1, 0, 1, 1, 1], jnp.float32)
    kw = dict(key=jax.random.key(48), normalizer=2.5, relation="replace_one")
    full = dp_aggregate(0.9, 1.4, **kw)
    stage = dp_noisy_sum(0.9, 1.4, **kw)
    a, sa = full.update(grads, full.init(None), _params_like(grads), mask=mask)
    b, sb = stage.update(clip_and_sum(grads, 0.9, mask), stage.init(None))
    _assert_trees_equal(a, b)
    _assert_trees_equal(sa, sb)
    with pytest.raises(ValueError, match="mask"):
        stage.update(a, stage.init(None), mask=mask)


@pytest.mark.slow
def test_jit_and_vmap_over_seeds_equal_eager():
    grads, _ = _tree(jax.random.key(49), 5)
    mask = jnp.array([1, 1, 0, 1, 1], jnp.float32)

    def update(key, sigma):
        tx = dp_aggregate(0.8, sigma, key=key, normalizer=4.0)
        return tx.update(grads, tx.init(None), _params_like(grads), mask=mask)

    keys = jax.random.split(jax.random.key(50), 4)
    eager = [update(k, 1.1) for k in keys]
    jitted = jax.jit(update)(keys[0], 1.1)  # σ traced too
    _assert_trees_close(jitted, eager[0])
    for mapped in (jax.vmap(update, in_axes=(0, None))(keys, 1.1),
                   jax.jit(jax.vmap(update))(keys, jnp.full(4, 1.1))):
        for i, out in enumerate(eager):
            _assert_trees_close(jax.tree.map(lambda x, i=i: x[i], mapped), out)
    # per_example_gradients is vmap(grad): each row is that example's gradient
    w = jnp.array([0.3, -1.0])
    x, y = jnp.arange(8.0).reshape(4, 2), jnp.array([1.0, 0.0, 2.0, -1.0])
    g = per_example_gradients(lambda w, xi, yi: (xi @ w - yi) ** 2, w, x, y)
    np.testing.assert_allclose(g, 2 * (x @ w - y)[:, None] * x, rtol=1e-6)


def test_bad_arguments_raise_naming_them():
    grads, _ = _tree(jax.random.key(51), 3)
    for kwargs, name in [
        (dict(clip_norm=0.0, noise_multiplier=1.0), "clip_norm"),
        (dict(clip_norm=-1.0, noise_multiplier=1.0), "clip_norm"),
        (dict(clip_norm=1.0, noise_multiplier=-0.5), "noise_multiplier"),
        (dict(clip_norm=1.0, noise_multiplier=float("nan")), "noise_multiplier"),
        (dict(clip_norm=1.0, noise_multiplier=float("inf")), "noise_multiplier"),
        (dict(clip_norm=1.0, noise_multiplier=1.0, normalizer=0.0), "normalizer"),
        (dict(clip_norm=1.0, noise_multiplier=1.0, relation="substitute"), "relation"),
        (dict(clip_norm=1.0, noise_multiplier=1.0, key=3), "key"),
    ]:
        for build in (dp_aggregate, dp_noisy_sum):
            with pytest.raises(ValueError, match=name):
                build(**{"normalizer": 1.0, **kwargs})
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp_aggregate(1.0, "1.0", normalizer=1.0)
    tx = dp_aggregate(1.0, 1.0, normalizer=1.0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="mask"):
        tx.update(grads, tx.init(None), _params_like(grads), mask=jnp.ones(4))
    with pytest.raises(ValueError, match="leading"):
        tx.update({"a": jnp.ones((3, 2)), "b": jnp.ones((4, 2))}, tx.init(None),
                  {"a": jnp.ones(2), "b": jnp.ones(2)}, mask=jnp.ones(3))


# ---------------------------------------------------------------------------------------------
# silent wrong results refused: no example axis, no normaliser, fractional masks


def test_gradient_without_an_example_axis_is_refused_eagerly_and_under_jit():
    w = jnp.zeros(3)
    x, y = jnp.ones((8, 3)), jnp.arange(8.0)

    def loss(w, x, y):
        return jnp.sum((x @ w - y) ** 2)

    plain = jax.grad(loss)(w, x, y)  # (3,): no example axis; once read as 3 examples
    tx = optax.chain(dp_aggregate(1.0, 0.0, normalizer=8.0, key=jax.random.key(0)),
                     optax.sgd(0.1))
    state = tx.init(w)
    with pytest.raises(ValueError, match=r"shape \(3,\) for a parameter of shape \(3,\)"):
        tx.update(plain, state, w)
    with pytest.raises(ValueError, match=r"shape \(3,\) for a parameter of shape \(3,\)"):
        jax.jit(lambda g, s, p: tx.update(g, s, p))(plain, state, w)
    with pytest.raises(ValueError, match="needs params"):
        tx.update(per_example_gradients(lambda w, x, y: loss(w, x[None], y[None]), w, x, y),
                  state)
    # the per-example gradients pass, eagerly and under jit, with the same result
    grads = per_example_gradients(lambda w, x, y: loss(w, x[None], y[None]), w, x, y)
    eager, _ = tx.update(grads, state, w)
    jitted, _ = jax.jit(lambda g, s, p: tx.update(g, s, p))(grads, state, w)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    # a leaf with the right rank but another shape is named too
    params = {"a": jnp.zeros(3), "b": jnp.zeros((2, 2))}
    with pytest.raises(ValueError, match=r"\['b'\] has shape \(4, 2\)"):
        dp_aggregate(1.0, 0.0, normalizer=1.0, key=jax.random.key(0)).update(
            {"a": jnp.zeros((4, 3)), "b": jnp.zeros((4, 2))}, None, params)


def test_normalizer_is_required():
    with pytest.raises(TypeError, match="normalizer"):
        dp_aggregate(1.0, 1.0, key=jax.random.key(0))
    with pytest.raises(TypeError, match="normalizer"):
        dp_noisy_sum(1.0, 1.0, key=jax.random.key(0))


@pytest.mark.slow
@pytest.mark.parametrize("momentum", [None, 0.9])
def test_chained_with_sgd_at_sigma_zero_equals_optax_contrib_dpsgd(momentum):
    """With normalizer = B (the batch size), chain(dp_aggregate(C, 0), sgd(η)) is optax's own
    DP-SGD, optax.contrib.dpsgd(η, C, 0): clip, sum, divide by B, SGD."""
    batch, lr, clip = 16, 0.3, 0.5
    grads, _ = _tree(jax.random.key(60), batch)
    params = {"a": jnp.linspace(-1.0, 1.0, 3), "b": jnp.full((2, 2), 0.25)}
    ours = optax.chain(dp_aggregate(clip, 0.0, normalizer=float(batch), key=jax.random.key(0)),
                       optax.sgd(lr, momentum=momentum))
    theirs = optax.contrib.dpsgd(lr, clip, 0.0, seed=0, momentum=momentum)
    p, q = params, params
    s, t = ours.init(params), theirs.init(params)
    for i in range(3):
        g = jax.tree.map(lambda x, i=i: x * (1.0 + 0.5 * i), grads)
        u, s = ours.update(g, s, p)
        v, t = theirs.update(g, t, q)
        p, q = optax.apply_updates(p, u), optax.apply_updates(q, v)
        for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(q)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # normalizer 1 releases the sum: a step B times larger than optax's
    big = optax.chain(dp_aggregate(clip, 0.0, normalizer=1.0, key=jax.random.key(0)),
                      optax.sgd(lr))
    u1, _ = big.update(grads, big.init(params), params)
    v1, _ = theirs.update(grads, theirs.init(params), params)
    for a, b in zip(jax.tree.leaves(u1), jax.tree.leaves(v1)):
        np.testing.assert_allclose(a, batch * b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value", [0.5, 0.7])
def test_fractional_masks_are_refused(value):
    grads, _ = _tree(jax.random.key(61), 4)
    params = _params_like(grads)
    tx = dp_aggregate(1.0, 1.0, normalizer=4.0, key=jax.random.key(0))
    mask = jnp.array([1.0, value, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"mask must be boolean \(0/1\)"):
        tx.update(grads, tx.init(params), params, mask=mask)
    # traced: a float mask cannot be checked, so its dtype is refused
    with pytest.raises(TypeError, match="mask must be boolean .*under jax.jit/vmap, got dtype float32"):
        jax.jit(lambda m: tx.update(grads, tx.init(params), params, mask=m))(mask)
    # the same entries of the other entry points
    model = LogisticRegression(num_classes=2)
    x, y = jnp.ones((4, 3)), jnp.array([0, 1, 0, 1])
    mp = model.init(jax.random.key(0), x[:1])
    with pytest.raises(ValueError, match="weights must be boolean"):
        clipped_gradient_sum(model, mp, x, y, 1.0, mask)
    from jaxaudit.dpsgd import dp_gradient_step

    with pytest.raises(ValueError, match="mask must be boolean"):
        dp_gradient_step(jax.random.key(1), model, mp, x, y,
                         DpsgdConfig(clip_norm=1.0, noise_multiplier=1.0, learning_rate=0.1),
                         normalizer=4.0, mask=mask)


@pytest.mark.slow
def test_boolean_and_integer_masks_equal_float_zero_one_masks():
    grads, _ = _tree(jax.random.key(62), 4)
    params = _params_like(grads)
    tx = dp_aggregate(1.0, 1.0, normalizer=4.0, key=jax.random.key(0))
    as_bool = jnp.array([True, False, True, True])
    ref, _ = tx.update(grads, tx.init(params), params, mask=as_bool.astype(jnp.float32))
    for m in (as_bool, as_bool.astype(jnp.int32)):
        _assert_trees_equal(tx.update(grads, tx.init(params), params, mask=m)[0], ref)
        _assert_trees_close(jax.jit(lambda m: tx.update(grads, tx.init(params), params,
                                                        mask=m)[0])(m), ref)
    assert issubclass(ArgumentTypeError, TypeError)


@pytest.mark.slow  # 10-37 s of compilation on two cores: the slow suite, which CI also runs
@pytest.mark.parametrize("method", ["ghost", "vmap"])
def test_private_step_threads_momentum_like_a_hand_written_loop(method):
    """The optax state threads across steps: chained momentum accumulates, v ← μv + ĝ,
    θ ← θ − ηv, with ĝ = (clipped sum + the key's noise) / n̄ (σ = 0 and σ > 0)."""
    model = MLP(hidden_dims=(5,), num_classes=3)
    x, y = _data(jax.random.key(63), 6, (4,), 3)
    params = model.init(jax.random.key(64), x[:1])
    clip, lr, mu, normalizer = 0.4, 0.2, 0.9, 6.0
    mask = jnp.array([1, 1, 0, 1, 1, 1], bool)
    for sigma in (0.0, 0.8):
        config = DpsgdConfig(clip_norm=clip, noise_multiplier=sigma, learning_rate=lr,
                             method=method)
        prepare, init, step = make_private_step(model, config, normalizer=normalizer,
                                                optimizer=optax.sgd(lr, momentum=mu))
        features, state, p = prepare(x), init(params), params
        ref_p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
        velocity = jax.tree.map(np.zeros_like, ref_p)
        for k in jax.random.split(jax.random.key(65), 4):
            p, state = jax.jit(step)(k, p, state, features, y, mask)
            summed, _ = clipped_gradient_sum(model, jax.tree.map(jnp.float32, ref_p), x, y, clip,
                                             mask, method=method)
            noisy = _ref_noise(k, summed, sigma * clip)
            g = jax.tree.map(lambda s: np.asarray(s, np.float64) / normalizer, noisy)
            velocity = jax.tree.map(lambda v, gi: mu * v + gi, velocity, g)
            ref_p = jax.tree.map(lambda a, v: a - lr * v, ref_p, velocity)
        for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(ref_p)):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
        assert int(state[0].count) == 4
        # without threading (a fresh state each step) momentum would be lost: not the same
        fresh = params
        for k in jax.random.split(jax.random.key(65), 4):
            fresh, _ = step(k, fresh, init(fresh), features, y, mask)
        assert not np.allclose(jax.tree.leaves(fresh)[0], jax.tree.leaves(p)[0], atol=1e-6)
