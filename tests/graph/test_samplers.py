"""Samplers: sizes, inclusion frequencies, snowball growth, Monte Carlo priors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import spearmanr

from jaxaudit.datasets import load_planetoid
from jaxaudit.graph import (
    Graph,
    inclusion_probabilities,
    poisson_sampler,
    random_walk_sampler,
    snowball_sampler,
    uniform_sampler,
)
from jaxaudit.graph.samplers import induced_edges

K = 400  # draws for frequency checks


@pytest.fixture(scope="module")
def cora():
    return load_planetoid("cora")


def _draws(sampler, graph, num, seed=0):
    keys = jax.random.split(jax.random.key(seed), num)
    return jax.jit(jax.vmap(lambda k: sampler(k, graph)))(keys)


@pytest.mark.needs_data("cora")
def test_poisson_mean_q_per_node(cora):
    q = 0.3
    s = _draws(poisson_sampler(q), cora, K)
    freq = np.asarray(s.node_mask).mean(0)
    z = (freq - q) / np.sqrt(q * (1 - q) / K)
    # independent nodes: z ~ N(0, 1); over 2708 nodes the max |z| is below 5 with prob > 0.998
    assert np.abs(z).max() < 5.0
    assert abs(z.mean() * np.sqrt(cora.num_nodes)) < 4.0  # pooled mean
    assert np.array_equal(np.asarray(s.edge_mask[0]), np.asarray(induced_edges(cora, s.node_mask[0])))


@pytest.mark.needs_data("cora")
def test_uniform_exact_size_and_prior(cora):
    ratio = 0.37
    s = _draws(uniform_sampler(ratio), cora, K, seed=1)
    n = round(ratio * cora.num_nodes)
    assert set(np.asarray(s.node_mask).sum(1).tolist()) == {n}
    eta, se = inclusion_probabilities(jax.random.key(0), uniform_sampler(ratio), cora)
    np.testing.assert_allclose(eta, n / cora.num_nodes, rtol=1e-6)
    assert np.all(np.asarray(se) == 0)


@pytest.mark.needs_data("cora")
def test_monte_carlo_prior_standard_error_coverage(cora):
    """The stated s.e. sqrt(η(1-η)/K) gives 95% intervals covering the exact η ≈ 95% of nodes."""
    sampler = uniform_sampler(0.5)
    generic = lambda k, g: sampler(k, g)  # no closed form attached: forces Monte Carlo
    eta_hat, se = inclusion_probabilities(jax.random.key(5), generic, cora, num_draws=K)
    eta = round(0.5 * cora.num_nodes) / cora.num_nodes
    covered = np.mean(np.abs(np.asarray(eta_hat) - eta) <= 1.96 * np.asarray(se))
    # 2708 nearly independent nodes: the coverage has s.d. ~0.004 around 0.95
    assert 0.93 <= covered <= 0.97, covered


def _forest_checks(graph, sample, max_neighbors, num_seeds):
    nodes = np.asarray(sample.node_mask)
    em = np.asarray(sample.edge_mask)
    s, r = np.asarray(graph.senders)[em], np.asarray(graph.receivers)[em]
    assert nodes[s].all() and nodes[r].all()
    adj = coo_matrix((np.ones(len(s)), (s, r)), shape=(graph.num_nodes,) * 2).tocsr()
    idx = np.flatnonzero(nodes)
    n_comp, _ = connected_components(adj[idx][:, idx], directed=False)
    # a forest grown from the seeds: one tree per seed, |edges| = |S| - #seeds
    assert n_comp == num_seeds
    assert len(s) // 2 == nodes.sum() - num_seeds
    # each node recruits at most max_neighbors children and has one parent
    deg = np.bincount(s, minlength=graph.num_nodes)
    assert deg.max() <= max_neighbors + 1


@pytest.mark.slow
@pytest.mark.needs_data("cora")
def test_snowball_growth_on_cora(cora):
    sampler = snowball_sampler(0.5, seeds_per_class=10, max_neighbors=3)
    s = _draws(sampler, cora, 8, seed=2)
    assert set(np.asarray(s.node_mask).sum(1).tolist()) == {round(0.5 * cora.num_nodes)}
    for i in range(3):
        _forest_checks(cora, jax.tree.map(lambda a, i=i: a[i], s), 3, 10 * cora.num_classes)
    induced = _draws(snowball_sampler(0.5, edges="induced"), cora, 1, seed=2)
    assert np.array_equal(np.asarray(induced.node_mask), np.asarray(s.node_mask[:1]))
    assert np.array_equal(np.asarray(induced.edge_mask[0]),
                          np.asarray(induced_edges(cora, induced.node_mask[0])))


@pytest.mark.slow
def test_snowball_stops_at_the_seeds_components():
    # component A: path 0-1-2-3-4-5 (class 0); nodes 6..19 isolated (class 1).
    # One seed per class; with a cap of 2 (the path's max degree) A is reached entirely, plus one
    # isolated node: |S| = 7 < target 10.
    s = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5])
    r = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4])
    labels = np.array([0] * 6 + [1] * 14)
    n = 20
    graph = Graph(features=jnp.zeros((n, 2)), labels=jnp.asarray(labels, jnp.int32),
                  senders=jnp.asarray(s, jnp.int32), receivers=jnp.asarray(r, jnp.int32),
                  train_mask=jnp.zeros(n, bool), val_mask=jnp.zeros(n, bool),
                  test_mask=jnp.zeros(n, bool), num_classes=2, name="toy")
    out = _draws(snowball_sampler(0.5, seeds_per_class=1, max_neighbors=2), graph, 5)
    nodes = np.asarray(out.node_mask)
    assert (nodes.sum(1) == 7).all() and nodes[:, :6].all()


@pytest.mark.slow
@pytest.mark.needs_data("cora")
def test_snowball_prior_far_from_uniform(cora):
    sampler = snowball_sampler(0.5)
    eta, se = inclusion_probabilities(jax.random.key(3), sampler, cora, num_draws=200)
    eta, se = np.asarray(eta), np.asarray(se)
    assert np.all(se <= np.sqrt(0.25 / 200) + 1e-6)
    # uniform sampling would give η = 0.5 everywhere: the spread is ~10x the MC noise
    assert eta.std() > 5 * np.sqrt(0.25 / 200)
    deg = np.bincount(np.asarray(cora.senders), minlength=cora.num_nodes)
    assert spearmanr(eta, deg).statistic > 0.2  # hubs are reached more often
    # nodes of small components are reached only when seeded there: far below the giant's η
    adj = coo_matrix((np.ones(cora.num_edges), (np.asarray(cora.senders), np.asarray(cora.receivers))),
                     shape=(cora.num_nodes,) * 2)
    _, comp = connected_components(adj, directed=False)
    giant = comp == np.bincount(comp).argmax()
    assert eta[~giant].mean() < eta[giant].mean() - 0.1


@pytest.mark.needs_data("cora")
def test_random_walk_exact_size_and_induced_edges(cora):
    s = _draws(random_walk_sampler(0.2), cora, 4, seed=4)
    assert set(np.asarray(s.node_mask).sum(1).tolist()) == {round(0.2 * cora.num_nodes)}
    assert np.array_equal(np.asarray(s.edge_mask[1]), np.asarray(induced_edges(cora, s.node_mask[1])))


def test_bad_sampler_arguments():
    for bad in (0.0, -0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match="ratio"):
            snowball_sampler(bad)
        with pytest.raises(ValueError, match="ratio"):
            poisson_sampler(bad)
    with pytest.raises(ValueError, match="edges"):
        snowball_sampler(0.5, edges="all")
    with pytest.raises(ValueError, match="restart"):
        random_walk_sampler(0.5, restart=1.0)


@pytest.mark.parametrize("sampler", [uniform_sampler(0.5), poisson_sampler(0.5),
                                     snowball_sampler(0.5), random_walk_sampler(0.5)])
def test_a_non_key_gets_the_library_key_message(sampler):
    """A seed or malformed key data in place of the key: the library's TypeError naming ``key``
    (not JAX's "invalid PRNG key data"); a batch of keys: a ValueError naming it; under vmap the
    batch is one key per draw, as before."""
    graph = Graph(features=jnp.ones((4, 1)), labels=jnp.array([0, 1, 0, 1]),
                  senders=jnp.array([0, 1]), receivers=jnp.array([1, 0]),
                  train_mask=jnp.zeros(4, bool), val_mask=jnp.zeros(4, bool),
                  test_mask=jnp.zeros(4, bool), num_classes=2)
    for bad in (0, np.array([1, 2, 3], np.uint32)):
        with pytest.raises(TypeError, match=r"key must be a JAX PRNG key"):
            sampler(bad, graph)
    keys = jax.random.split(jax.random.key(0), 2)
    with pytest.raises(ValueError, match=r"key must be one PRNG key"):
        sampler(keys, graph)
    assert jax.vmap(lambda k: sampler(k, graph).node_mask)(keys).shape == (2, 4)


def test_inclusion_probabilities_gets_the_library_key_message():
    graph = Graph(features=jnp.ones((4, 1)), labels=jnp.array([0, 1, 0, 1]),
                  senders=jnp.array([0, 1]), receivers=jnp.array([1, 0]),
                  train_mask=jnp.zeros(4, bool), val_mask=jnp.zeros(4, bool),
                  test_mask=jnp.zeros(4, bool), num_classes=2)
    with pytest.raises(TypeError, match=r"key must be a JAX PRNG key"):
        inclusion_probabilities(0, snowball_sampler(0.5), graph, 10)
