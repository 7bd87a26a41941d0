"""GNN layers against dense references; accuracy of the standard recipe on Cora and a CSBM."""

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest

from jaxaudit.datasets import load_planetoid, make_csbm
from jaxaudit.graph import (
    GAT,
    GCN,
    GraphSAGE,
    gnn_logits,
    train_gnn,
)
from jaxaudit.graph.models import GCNConv
from jaxaudit.graph.propagation import sparse_features, sparse_matmul


@pytest.fixture(scope="module")
def small():
    return make_csbm(jax.random.key(0), num_nodes=60, num_classes=3, num_features=8)


def _tuple(graph, edges=None, senders=None, receivers=None):
    s = graph.senders if senders is None else senders
    r = graph.receivers if receivers is None else receivers
    return jraph.GraphsTuple(nodes=graph.features, edges=edges, senders=s, receivers=r,
                             globals=None, n_node=jnp.asarray([graph.num_nodes]),
                             n_edge=jnp.asarray([s.shape[0]]))


@pytest.mark.slow
def test_gcn_conv_matches_dense_normalised_adjacency(small):
    conv = GCNConv(5)
    x = small.features
    params = conv.init(jax.random.key(1), x, small.senders, small.receivers,
                       jnp.ones(small.num_edges))
    keep = np.asarray(jax.random.bernoulli(jax.random.key(2), 0.6, (small.num_edges,)))
    out = conv.apply(params, x, small.senders, small.receivers, jnp.asarray(keep, jnp.float32))
    # dense reference D^-1/2 (A + I) D^-1/2 X W + b on the kept edges (float64)
    n = small.num_nodes
    a = np.zeros((n, n))
    np.add.at(a, (np.asarray(small.receivers)[keep], np.asarray(small.senders)[keep]), 1.0)
    a_hat = a + np.eye(n)
    d = a_hat.sum(1)
    ref = (a_hat / np.sqrt(np.outer(d, d))) @ np.asarray(x, np.float64) @ np.asarray(
        params["params"]["kernel"], np.float64) + np.asarray(params["params"]["bias"])
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("module", [GCN(num_classes=3), GraphSAGE(num_classes=3), GAT(num_classes=3)])
def test_edge_mask_equals_removed_edges(small, module):
    keep = np.asarray(jax.random.bernoulli(jax.random.key(3), 0.5, (small.num_edges,)))
    params = module.init(jax.random.key(4), _tuple(small))
    masked = module.apply(params, _tuple(small, edges=jnp.asarray(keep, jnp.float32)))
    removed = module.apply(params, _tuple(small, senders=small.senders[keep],
                                          receivers=small.receivers[keep]))
    np.testing.assert_allclose(np.asarray(masked), np.asarray(removed), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_sparse_matmul_vmapped_values_and_gradients():
    key = jax.random.key(5)
    x = np.asarray(jax.random.bernoulli(key, 0.1, (40, 30)), np.float32) * np.asarray(
        jax.random.uniform(jax.random.fold_in(key, 1), (40, 30)))
    xs = sparse_features(x)
    w = jax.random.normal(jax.random.fold_in(key, 2), (5, 30, 6))

    def loss(fn):
        return lambda wi: jnp.sum(jnp.sin(fn(wi)) ** 2)

    sparse_fn = lambda wi: sparse_matmul(xs, wi)
    dense_fn = lambda wi: jnp.asarray(x) @ wi
    np.testing.assert_allclose(jax.jit(jax.vmap(sparse_fn))(w), jax.vmap(dense_fn)(w),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(loss(sparse_fn))))(w),
                               jax.vmap(jax.grad(loss(dense_fn)))(w), rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def cora():
    return load_planetoid("cora")


@pytest.mark.slow
@pytest.mark.needs_data("cora")
@pytest.mark.parametrize("model,threshold", [("gcn", 0.78), ("sage", 0.75), ("gat", 0.75)])
def test_cora_standard_split_accuracy(cora, model, threshold):
    module, params = train_gnn(jax.random.key(0), cora, model, cora.train_mask)
    acc = float(jnp.mean((gnn_logits(module, params, cora).argmax(1) == cora.labels)[cora.test_mask]))
    print(f"Cora {model} test accuracy {acc:.3f}")
    assert acc >= threshold


@pytest.mark.slow
def test_csbm_high_homophily_accuracy():
    graph = make_csbm(jax.random.key(7), homophily=0.9, features="bernoulli")
    module, params = train_gnn(jax.random.key(0), graph, "gcn", graph.train_mask)
    acc = float(jnp.mean((gnn_logits(module, params, graph).argmax(1) == graph.labels)[graph.test_mask]))
    print(f"CSBM (h=0.9) GCN test accuracy {acc:.3f}")
    assert acc >= 0.78


def test_sparse_matmul_empty_rows_and_columns_unbatched():
    # CSR edge cases: a row and a column without nonzeros, and no vmap at all.
    x = np.zeros((6, 5), np.float32)
    x[0, 1], x[2, 1], x[2, 4], x[5, 0] = 0.5, 1.0, 2.0, 3.0
    xs = sparse_features(x)
    assert xs.shape == (6, 5)
    w = jax.random.normal(jax.random.key(9), (5, 3))
    np.testing.assert_allclose(jax.jit(sparse_matmul)(xs, w), x @ w, rtol=1e-6, atol=1e-6)
    g = jax.grad(lambda wi: jnp.sum(sparse_matmul(xs, wi) ** 2))(w)
    np.testing.assert_allclose(g, 2 * x.T @ (x @ w), rtol=1e-5, atol=1e-5)
