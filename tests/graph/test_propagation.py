"""propagate (CSR kernel with a custom gradient and batching rule) against segment_sum."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.graph.propagation import propagate


def _graph(seed, n=40, e=150):
    rng = np.random.default_rng(seed)
    senders = jnp.asarray(rng.integers(0, n, e), jnp.int32)  # unsorted, repeated, self-loops
    receivers = jnp.asarray(rng.integers(0, n - 3, e), jnp.int32)  # last 3 nodes receive nothing
    return rng, n, e, senders, receivers


def _reference(h, senders, receivers, weight):
    w = weight.reshape((-1,) + (1,) * (h.ndim - 1))
    return jax.ops.segment_sum(w * h[senders], receivers, h.shape[0])


def _dense_reference(h, senders, receivers, weight):
    """float64 A @ h with A[r, s] = sum of the weights of the edges s -> r."""
    n = h.shape[0]
    a = np.zeros((n, n))
    np.add.at(a, (np.asarray(receivers), np.asarray(senders)), np.asarray(weight, np.float64))
    return (a @ np.asarray(h, np.float64).reshape(n, -1)).reshape(h.shape)


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 5])  # the CSR path and the segment_sum path
@pytest.mark.parametrize("models", [1, 3])
def test_propagate_equals_segment_sum_under_vmap(width, models):
    rng, n, e, senders, receivers = _graph(0)
    h = jnp.asarray(rng.normal(size=(models, n, width)), jnp.float32)
    weight = jnp.asarray(rng.random((models, e)) * (rng.random((models, e)) < 0.7), jnp.float32)
    probe = jnp.asarray(rng.normal(size=(models, n, width)), jnp.float32)

    def loss(fn):
        # nonlinear in h and weight, so both gradients depend on where they are taken
        return lambda h, w, p: jnp.sum(jnp.tanh(fn(h, senders, receivers, w)) * p) + jnp.sum(
            fn(h, senders, receivers, w) ** 2)

    out = jax.jit(jax.vmap(lambda h, w: propagate(h, senders, receivers, w)))(h, weight)
    for r in range(models):
        np.testing.assert_allclose(out[r], _dense_reference(h[r], senders, receivers, weight[r]),
                                   rtol=1e-5, atol=1e-5)
    grads = jax.jit(jax.vmap(jax.grad(loss(propagate), argnums=(0, 1))))(h, weight, probe)
    ref = jax.vmap(jax.grad(loss(_reference), argnums=(0, 1)))(h, weight, probe)
    for got, want in zip(grads, ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert np.abs(np.asarray(want)).max() > 0.1  # a gradient that is not trivially zero


@pytest.mark.slow
def test_propagate_multi_head_and_unbatched():
    rng, n, e, senders, receivers = _graph(1)
    h = jnp.asarray(rng.normal(size=(n, 8, 8)), jnp.float32)  # 64 features in (heads, F)
    weight = jnp.asarray(rng.random(e), jnp.float32)
    out = propagate(h, senders, receivers, weight)
    np.testing.assert_allclose(out, _dense_reference(h, senders, receivers, weight),
                               rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda h: jnp.sum(propagate(h, senders, receivers, weight) ** 2))(h)
    g_ref = jax.grad(lambda h: jnp.sum(_reference(h, senders, receivers, weight) ** 2))(h)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-4)


def test_propagate_vmap_over_h_only_and_weight_only():
    """Shared weights with batched features, and batched weights with shared features."""
    rng, n, e, senders, receivers = _graph(2)
    h = jnp.asarray(rng.normal(size=(4, n, 40)), jnp.float32)
    weight = jnp.asarray(rng.random((4, e)), jnp.float32)
    out = jax.vmap(lambda h: propagate(h, senders, receivers, weight[0]))(h)
    np.testing.assert_allclose(out, jax.vmap(lambda h: _reference(h, senders, receivers,
                                                                  weight[0]))(h),
                               rtol=1e-5, atol=1e-5)
    out = jax.vmap(lambda w: propagate(h[0], senders, receivers, w))(weight)
    np.testing.assert_allclose(out, jax.vmap(lambda w: _reference(h[0], senders, receivers,
                                                                  w))(weight),
                               rtol=1e-5, atol=1e-5)


def _dense_adjacency(n, senders, receivers, weight):
    a = np.zeros((n, n))
    np.add.at(a, (np.asarray(receivers), np.asarray(senders)), np.asarray(weight, np.float64))
    return a


@pytest.mark.slow
def test_wide_gcn_and_sage_layers_match_dense_references():
    """GCNConv and SAGEConv with 48 features per node (the CSR path) against float64 dense
    formulas, on a directed random graph with a random edge mask, values and kernel gradients
    under vmap over two masks."""
    from jaxaudit.graph.models import GCNConv, SAGEConv

    rng, n, e, senders, receivers = _graph(3)
    x = jnp.asarray(rng.normal(size=(n, 6)), jnp.float32)
    masks = jnp.asarray(rng.random((2, e)) < 0.6, jnp.float32)
    probe = jnp.asarray(rng.normal(size=(n, 48)), jnp.float32)

    def gcn_ref(p, m):
        a_hat = _dense_adjacency(n, senders, receivers, m) + np.eye(n)
        d = a_hat.sum(1)
        xw = np.asarray(x, np.float64) @ np.asarray(p["kernel"], np.float64)
        return (a_hat / np.sqrt(np.outer(d, d))) @ xw + np.asarray(p["bias"])

    def sage_ref(p, m):
        a = _dense_adjacency(n, senders, receivers, m)
        xw = np.asarray(x, np.float64) @ np.asarray(p["kernel"], np.float64)
        root, nbr = xw[:, :48], xw[:, 48:]
        return root + (a @ nbr) / np.maximum(a.sum(1), 1.0)[:, None] + np.asarray(p["bias"])

    for conv, ref in ((GCNConv(48), gcn_ref), (SAGEConv(48), sage_ref)):
        params = conv.init(jax.random.key(5), x, senders, receivers, masks[0])
        out = jax.vmap(lambda m, conv=conv, params=params: conv.apply(
            params, x, senders, receivers, m))(masks)
        for r in range(2):
            np.testing.assert_allclose(out[r], ref(params["params"], masks[r]),
                                       rtol=1e-4, atol=1e-4)

        # gradient of a nonlinear loss in the kernel, against central finite differences of
        # the float64 dense reference
        def loss(p, m, conv=conv):
            return jnp.sum(jnp.tanh(conv.apply(p, x, senders, receivers, m)) * probe)

        got = jax.vmap(jax.grad(loss), in_axes=(None, 0))(params, masks)
        eps = 1e-3
        k = np.asarray(params["params"]["kernel"])
        for r in range(2):
            for (i, j) in ((0, 0), (2, 5), (5, 47)):
                bumped = [k.copy(), k.copy()]
                bumped[0][i, j] += eps
                bumped[1][i, j] -= eps
                vals = [float(np.sum(np.tanh(ref({**params["params"], "kernel": b}, masks[r]))
                                     * np.asarray(probe, np.float64))) for b in bumped]
                fd = (vals[0] - vals[1]) / (2 * eps)
                np.testing.assert_allclose(got["params"]["kernel"][r, i, j], fd,
                                           rtol=2e-3, atol=2e-3)
