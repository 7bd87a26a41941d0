"""Node-level DP shadow training: the degree cap, the sensitivity by enumeration, per-node
clipping, the noise scale, the σ = 0 and huge-clip limits, the accountant, and the certified
bounds held against the guarantee (jaxaudit.graph.dp_training)."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from jaxaudit.datasets import make_csbm
from jaxaudit.graph import ShadowTraining, poisson_sampler, train_shadow_models
from jaxaudit.graph.dp_training import (
    CappedGCN,
    NodeDp,
    NodeMLP,
    cap_degrees,
    clipped_node_sum,
    fit_private,
    gradient_count,
    mean_aggregate,
    node_dp_epsilon,
    node_loss,
    noise_for_node_epsilon,
    private_gradient,
    sensitivity_factor,
)
from jaxaudit.graph.shadow_models import _fit, _module_inputs, train_shadow_model


def _random_graph(seed, n=14, p=0.35):
    """A symmetric random graph (both directions of every edge), no self-loops."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < p]
    s = np.array([a for a, b in pairs] + [b for a, b in pairs], np.int32)
    r = np.array([b for a, b in pairs] + [a for a, b in pairs], np.int32)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return jnp.asarray(s), jnp.asarray(r), jnp.asarray(x)


@pytest.fixture(scope="module")
def graph():
    return make_csbm(jax.random.key(1), num_nodes=120, num_classes=3, num_features=12,
                     features="gaussian")


@pytest.mark.parametrize("seed,cap", [(0, 1), (1, 2), (2, 3)])
def test_cap_bounds_in_and_out_degree_and_is_symmetric(seed, cap):
    s, r, _ = _random_graph(seed)
    kept = np.asarray(cap_degrees(jax.random.key(seed), s, r, cap))
    n = 14
    assert np.bincount(np.asarray(s)[kept], minlength=n).max() <= cap
    assert np.bincount(np.asarray(r)[kept], minlength=n).max() <= cap
    edges = set(zip(np.asarray(s)[kept].tolist(), np.asarray(r)[kept].tolist()))
    assert all((b, a) in edges for a, b in edges)  # an undirected edge is kept both ways
    # the cap depends on the key and the edge list only: a permuted edge list keeps the same set
    perm = np.random.default_rng(seed).permutation(len(s))
    kept_p = np.asarray(cap_degrees(jax.random.key(seed), s[perm], r[perm], cap))
    assert set(zip(np.asarray(s)[perm][kept_p].tolist(),
                   np.asarray(r)[perm][kept_p].tolist())) == edges


@pytest.mark.parametrize("hops,cap", [(1, 2), (2, 2), (1, 3), (2, 3)])
def test_one_node_touches_at_most_n_r_per_node_gradients(hops, cap):
    """Enumeration: for every sample S and member j, the per-node inputs u_i (hence gradients)
    that differ between S and S minus j, plus j's own, number at most N_r = sum_i K^i."""
    s, r, x = _random_graph(10 + hops + cap)
    n = x.shape[0]
    kept = cap_degrees(jax.random.key(3), s, r, cap)
    module = CappedGCN(num_classes=2, hops=hops)
    bound = gradient_count(module, cap, "inductive")
    assert bound == sum(cap ** i for i in range(hops + 1))
    rng = np.random.default_rng(0)
    worst = 0
    for _ in range(6):
        mask = jnp.asarray(rng.random(n) < 0.7)
        w = (kept & mask[s] & mask[r]).astype(jnp.float32)
        u = np.asarray(mean_aggregate(x, s, r, w, hops))
        for j in np.flatnonzero(np.asarray(mask)):
            m2 = mask.at[j].set(False)
            w2 = (kept & m2[s] & m2[r]).astype(jnp.float32)
            u2 = np.asarray(mean_aggregate(x, s, r, w2, hops))
            changed = np.abs(u - u2).max(axis=1) > 1e-6
            touched = 1 + int((changed & np.asarray(m2)).sum())  # j's own gradient + changed
            worst = max(worst, touched)
            assert touched <= bound, (j, touched, bound)
    assert worst > 1  # the enumeration did see neighbours
    assert sensitivity_factor(module, cap, "inductive") == 2 * bound - 1
    assert gradient_count(module, cap, "none") == 1
    assert gradient_count(NodeMLP(num_classes=2), cap, "inductive") == 1


def _params(module, x, key=0):
    import jraph

    g = jraph.GraphsTuple(nodes=x, edges=None, senders=jnp.zeros(0, jnp.int32),
                          receivers=jnp.zeros(0, jnp.int32), globals=None,
                          n_node=jnp.asarray([x.shape[0]]), n_edge=jnp.asarray([0]))
    return module.init(jax.random.key(key), g)


def _flat(tree):
    return jnp.concatenate([jnp.ravel(v) for v in jax.tree.leaves(tree)])


@pytest.mark.parametrize("clip", [0.05, 1.0])
def test_each_node_clipped_to_c_against_its_own_gradient(graph, clip):
    """Single-node masks: the clipped sum is that node's own jax.grad, scaled to norm ≤ C."""
    module = NodeMLP(num_classes=3, hidden_dim=8)
    x = jnp.asarray(graph.features, jnp.float32)
    y = jnp.asarray(graph.labels, jnp.int32)
    params = _params(module, x)
    for i in (0, 7, 33):
        mask = jnp.zeros(x.shape[0], bool).at[i].set(True)
        got = _flat(clipped_node_sum(module, params, x, y, mask, clip))
        g = _flat(jax.grad(node_loss, argnums=1)(module, params, x[i], y[i]))
        want = g * min(1.0, clip / float(jnp.linalg.norm(g)))
        assert float(jnp.linalg.norm(got)) <= clip * (1 + 1e-5)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)


def test_noise_scale_is_sigma_c_times_sensitivity_over_normalizer(graph):
    """ĝ·n̄ − clipped sum is N(0, (σ C (2 N_r − 1))²) per coordinate: the sample standard
    deviation over 131 coordinates × 64 keys is within 5% (its relative standard error is
    about 1/sqrt(2·8384) < 1%, so 5% is over 6 standard errors)."""
    module = CappedGCN(num_classes=3, hidden_dim=8, hops=2)
    x = jnp.asarray(graph.features, jnp.float32)
    y = jnp.asarray(graph.labels, jnp.int32)
    params = _params(module, x)
    mask = jnp.asarray(np.random.default_rng(0).random(x.shape[0]) < 0.5)
    sigma, clip, cap, normalizer = 0.7, 0.3, 2, 25.0
    stddev = sigma * clip * sensitivity_factor(module, cap, "inductive")
    assert stddev == pytest.approx(0.7 * 0.3 * (2 * (1 + 2 + 4) - 1))
    base = _flat(clipped_node_sum(module, params, x, y, mask, clip))
    draws = jax.jit(jax.vmap(lambda k: _flat(private_gradient(
        k, module, params, x, y, mask, clip, stddev, normalizer)) * normalizer - base))(
        jax.random.split(jax.random.key(5), 64))
    assert draws.size > 8000
    assert float(jnp.std(draws)) == pytest.approx(stddev, rel=0.05)
    assert abs(float(jnp.mean(draws))) < 4 * stddev / math.sqrt(draws.size)


def _reference_fit(module, epochs, lr, wd, clip, normalizer, key, x, s, r, y, mask, kept):
    """Plain training with per-node clipping, written out: a Python loop over nodes."""
    k_init, _ = jax.random.split(key)
    import jraph

    g = jraph.GraphsTuple(nodes=x, edges=jnp.ones(s.shape), senders=s, receivers=r,
                          globals=None, n_node=jnp.asarray([x.shape[0]]),
                          n_edge=jnp.asarray([s.shape[0]]))
    params = module.init(k_init, g)
    w = (kept & mask[s] & mask[r]).astype(jnp.float32)
    u = mean_aggregate(x, s, r, w, module.hops) if module.hops else x
    opt = optax.chain(optax.add_decayed_weights(wd), optax.adam(lr))
    state = opt.init(params)
    grad = jax.jit(jax.grad(lambda p, ui, yi: node_loss(module, p, ui, yi)))
    for _ in range(epochs):
        total = jax.tree.map(jnp.zeros_like, params)
        for i in np.flatnonzero(np.asarray(mask)):
            gi = grad(params, u[i], y[i])
            norm = float(jnp.linalg.norm(_flat(gi)))
            scale = min(1.0, clip / norm)
            total = jax.tree.map(lambda t, v, c=scale: t + v * c, total, gi)
        updates, state = opt.update(jax.tree.map(lambda v: v / normalizer, total), state, params)
        params = optax.apply_updates(params, updates)
    return params


@pytest.mark.parametrize("model", ["mlp", "capped_gcn"])
def test_sigma_zero_equals_plain_clipped_training(graph, model):
    module = (NodeMLP(num_classes=3, hidden_dim=8) if model == "mlp"
              else CappedGCN(num_classes=3, hidden_dim=8, hops=1))
    inputs = _module_inputs(module, graph)
    x = jnp.asarray(inputs.nodes)
    mask = jnp.asarray(np.random.default_rng(1).random(x.shape[0]) < 0.4)
    dp = NodeDp(clip_norm=0.05, noise_multiplier=0.0, degree_cap=2, normalizer=30.0)
    key = jax.random.key(4)
    params, kept = fit_private(module, 3, 0.05, 5e-4, dp, "inductive", key, x, inputs.senders,
                               inputs.receivers, inputs.labels, mask)
    _, k_rest = jax.random.split(key)
    k_cap, _ = jax.random.split(k_rest)
    assert np.array_equal(kept, cap_degrees(k_cap, inputs.senders, inputs.receivers, 2))
    want = _reference_fit(module, 3, 0.05, 5e-4, 0.05, 30.0, key, x, inputs.senders,
                          inputs.receivers, inputs.labels, mask, kept)
    np.testing.assert_allclose(_flat(params), _flat(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", ["mlp", "capped_gcn"])
def test_huge_clip_no_noise_equals_the_non_private_fit(graph, model):
    """C → ∞, σ = 0, a cap above the largest degree and n̄ = |S|: the DP path is the plain
    full-batch fit of shadow_models (mean cross-entropy over S) on the induced subgraph."""
    module = (NodeMLP(num_classes=3, hidden_dim=8) if model == "mlp"
              else CappedGCN(num_classes=3, hidden_dim=8, hops=2))
    inputs = _module_inputs(module, graph)
    mask = jnp.asarray(np.random.default_rng(2).random(graph.num_nodes) < 0.5)
    max_degree = int(np.bincount(np.asarray(inputs.receivers)).max())
    dp = NodeDp(clip_norm=1e9, noise_multiplier=0.0, degree_cap=max_degree + 1,
                normalizer=float(mask.sum()))
    key = jax.random.key(6)
    params, kept = fit_private(module, 5, 0.01, 5e-4, dp, "inductive", key,
                               jnp.asarray(inputs.nodes), inputs.senders, inputs.receivers,
                               inputs.labels, mask)
    assert bool(kept.all())
    induced = (mask[inputs.senders] & mask[inputs.receivers]).astype(jnp.float32)
    want = _fit(module, 5, 0.01, 5e-4, key, inputs, mask, induced)
    np.testing.assert_allclose(_flat(params), _flat(want), rtol=2e-4, atol=2e-6)


def test_accountant_epsilon_is_the_gdp_epsilon_and_inverts():
    """ε from μ = √T/σ (δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ, scipy), and σ from ε."""
    dp = NodeDp(noise_multiplier=4.0)
    eps = node_dp_epsilon(dp, 64, 1e-5)
    mu = 8.0 / 4.0
    delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert delta == pytest.approx(1e-5, rel=1e-3)
    assert noise_for_node_epsilon(eps, 1e-5, 64) == pytest.approx(4.0, rel=1e-2)
    assert node_dp_epsilon(NodeDp(noise_multiplier=0.0), 10, 1e-5) == math.inf
    assert noise_for_node_epsilon(math.inf, 1e-5, 10) == 0.0


def test_refusals(graph):
    with pytest.raises(ValueError, match="clip_norm"):
        NodeDp(clip_norm=-1.0).check()
    with pytest.raises(ValueError, match="degree_cap"):
        NodeDp(degree_cap=0).check()
    training = ShadowTraining(epochs=2, dp=NodeDp())
    with pytest.raises(ValueError, match="model"):
        train_shadow_model(jax.random.key(0), graph, poisson_sampler(0.5), "gcn", training)
    with pytest.raises(ValueError, match="edge_access"):
        train_shadow_model(jax.random.key(0), graph, poisson_sampler(0.5), "mlp",
                           training._replace(edge_access="full"))


@pytest.mark.slow
def test_batched_private_models_equal_single_ones(graph):
    training = ShadowTraining(epochs=3, learning_rate=0.05, dp=NodeDp(1.0, 1.0, 2))
    key = jax.random.key(8)
    batched = train_shadow_models(key, graph, poisson_sampler(0.5), "capped_gcn", 2, training,
                                  chunk_size=2)
    for r, k in enumerate(jax.random.split(key, 2)):
        single = train_shadow_model(k, graph, poisson_sampler(0.5), "capped_gcn", training)
        assert np.array_equal(single.masks[0], batched.masks[r])
        np.testing.assert_allclose(single.scores[0], batched.scores[r], rtol=1e-4, atol=1e-4)


def _certified_exceedances(graph, num_models, epsilon, epochs, seed, confidence=0.9):
    """Nodes whose certified ε_L or ε_R lower bound exceeds the DP ε, of the nodes with runs."""
    from jaxaudit.bmp import AuditConfig, audit_attack, certified_epsilons
    from jaxaudit.mia.types import ErrorCounts

    sigma = noise_for_node_epsilon(epsilon, 1e-5, epochs)
    training = ShadowTraining(epochs=epochs, learning_rate=0.1,
                              dp=NodeDp(1.0, sigma, 2, graph.num_nodes / 2))
    runs = train_shadow_models(jax.random.key(seed), graph, poisson_sampler(0.5), "capped_gcn",
                               num_models, training, chunk_size=num_models)
    attack = audit_attack(runs.scores, runs.masks, np.full(graph.num_nodes, 0.5),
                          AuditConfig(mp_baseline=False))
    c = attack.counts
    valid = (np.asarray(c.n0) > 0) & (np.asarray(c.n1) > 0)
    cert = certified_epsilons(ErrorCounts(*(np.asarray(v)[valid] for v in c)),
                              confidence=confidence)
    above = (np.asarray(cert.epsilon_left) > epsilon) | (np.asarray(cert.epsilon_right) > epsilon)
    return int(above.sum()), int(valid.sum())


def _binomial_tolerance(n, level, p=1e-3):
    """The largest count a Bin(n, level) exceeds with probability < p (a one-sided test)."""
    return int(stats.binom.ppf(1 - p, n, level))


def test_certified_bounds_respect_the_dp_epsilon_small(graph):
    """(ε, δ)-DP with Poisson sampling: each node's certified bound (joint level 0.9) exceeds ε
    with probability ≤ 0.1 + O(δ); the count over nodes stays within a binomial tolerance."""
    above, nodes = _certified_exceedances(graph, 12, 0.5, 3, seed=0)
    assert nodes > 50
    assert above <= _binomial_tolerance(nodes, 0.1)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.25, 1.0])
def test_certified_bounds_respect_the_dp_epsilon_full(epsilon):
    graph = make_csbm(jax.random.key(2), num_nodes=400, num_classes=3, num_features=16,
                      features="gaussian")
    above, nodes = _certified_exceedances(graph, 48, epsilon, 20, seed=1)
    assert above <= _binomial_tolerance(nodes, 0.1)
