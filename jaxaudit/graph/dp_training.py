"""Node-level differentially private shadow training: per-node clipped, noised gradients.

A shadow model trained with a :class:`NodeDp` recipe runs full-batch DP gradient descent on
per-node examples. Node i's example is its input row u_i and its label y_i, and the loss of
node i depends on the parameters θ through u_i only:

* ``"mlp"`` (:class:`NodeMLP`, features only): u_i = x_i, so each node is one example;
* ``"capped_gcn"`` (:class:`CappedGCN`): u = P^r X with P = D̃⁻¹Ã the random-walk normalised
  adjacency with self-loops of the *degree-capped* training graph (mean aggregation, row i
  depends on i's own in-degree only), r = ``hops`` parameter-free steps, then an MLP. Each step
  mixes only along edges, so x_j reaches u_i only if i is within r hops downstream of j.

Every epoch releases one Gaussian sum (Abadi et al., arXiv 1607.00133; the clip and the noise
are :func:`jaxaudit.dpsgd.private_aggregate.clip_and_sum` and ``add_gaussian_noise``, the
library's one copy):

    ĝ = (Σ_{i∈S} clip_C(∇_θ ℓ(θ; u_i, y_i)) + N(0, (σ Δ)² I)) / n̄,   then Adam (with L2 decay).

**Degree cap** (Daigavane et al., "Node-Level Differentially Private Graph Neural Networks",
arXiv 2111.15521): before training, every edge of the *whole* graph gets a keyed random
priority (shared by the two directions of an undirected edge); a directed edge s → r is kept iff
it is among the K highest-priority out-edges of s *and* among the K highest-priority in-edges of r.
So every node has in- and out-degree at most K, and the cap depends on the key and the
population graph only, not on the sample S. The training graph is the cap intersected with the
subgraph induced by S, so S and S ∪ {j} give training graphs that differ in node j and its at
most 2K capped edges.

**Sensitivity** (add/remove of one node j, the relation of membership inference, M_j ∈ {0, 1}):
with out-degree ≤ K, the nodes within r hops downstream of j number at most

    N_r = Σ_{i=0}^{r} K^i   (N_0 = 1: the MLP, or no edges),

and only their inputs u_i change (row i of P changes only when i's in-degree does, i.e. when j
is an in-neighbour of i). Adding j adds one clipped gradient (norm ≤ C) and changes at most
N_r − 1 others (each by ≤ 2C), so the clipped sum moves by at most

    Δ = C + 2C (N_r − 1) = (2 N_r − 1) C,

and the noise is σΔ (σ the noise multiplier relative to Δ, as in :mod:`jaxaudit.dpsgd`). Under
replace-one neighbours (j's data replaced) all N_r gradients may change: Δ = 2 N_r C; we use
add/remove because membership of a node *is* its addition or removal.

**Accounting.** Each epoch is the Gaussian mechanism with sensitivity Δ and noise σΔ, i.e.
1/σ-GDP; T full-batch epochs compose to μ = √T/σ-GDP exactly (Dong, Roth, Su, arXiv 1905.02383,
Cor. 3.3), converted to (ε, δ) by :class:`jaxaudit.accounting.GaussianDP` (Cor. 2.13). No
sampling amplification is claimed (every member is in every step). With independent (Poisson)
node sampling, (ε, δ)-DP of the training makes the pipeline (ε, ε)-BMP up to δ
(docs/bmp.md); under other samplers the sampling leakage c^i adds.

**Query.** The scores of a private model are read on the same graph for every node (the capped
full graph; no edges for ``edge_access="none"``), so they are post-processing of the released
weights. The non-private ``"inductive"`` query (members on the training graph, non-members on
the rest) would reveal membership through the query graph whatever the training.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax

from jaxaudit._clipped_sum import add_gaussian_noise, clip_and_sum, per_example_gradients
from jaxaudit._validation import (
    ArgumentTypeError,
    check_integer,
    check_nonnegative_finite,
    check_positive_finite,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields

__all__ = ["NodeDp", "NodeMLP", "CappedGCN", "cap_degrees", "mean_aggregate",
           "gradient_count", "sensitivity_factor", "node_dp_mu", "node_dp_epsilon",
           "noise_for_node_epsilon", "node_loss", "clipped_node_sum", "private_gradient",
           "fit_private", "private_query_weight"]

#: nodes whose per-node gradients are materialised together (bounds memory; changes no number
#: beyond float reassociation)
_BLOCK = 128


class NodeDp(NamedTuple):
    """A node-level DP recipe for :class:`jaxaudit.graph.ShadowTraining` (``dp=``).

    Full-batch DP gradient descent on per-node examples: each epoch the per-node gradients are
    clipped to ``clip_norm``, summed over the sampled nodes, noised with
    N(0, (σ (2 N_r − 1) C)² I) and divided by ``normalizer``; N_r = Σ_{i≤r} K^i is the number of
    per-node gradients one node can touch (module :mod:`jaxaudit.graph.dp_training`). Works with
    the models "mlp" and "capped_gcn" and edge access "inductive" or "none".

    Attributes:
      clip_norm: C > 0, the per-node gradient clip (default 1.0).
      noise_multiplier: σ ≥ 0, the noise relative to the sensitivity (default 1.0; 0: clipping
        only, no privacy).
      degree_cap: K ≥ 1, the maximum in- and out-degree of the training graph (default 5).
      normalizer: n̄ > 0, the constant the noisy sum is divided by (None, the default: half the
        number of nodes, the expected sample of a ratio-0.5 sampler); never the realised
        sample size, which would depend on the data.
    """

    clip_norm: float = 1.0
    noise_multiplier: float = 1.0
    degree_cap: int = 5
    normalizer: float | None = None

    def check(self) -> NodeDp:
        """Every field checked (a ``ValueError`` naming it, an ``ArgumentTypeError`` for a
        value of the wrong kind); returns the recipe."""
        check_config_fields(self)
        check_positive_finite("clip_norm", self.clip_norm)
        check_nonnegative_finite("noise_multiplier", self.noise_multiplier)
        check_integer("degree_cap", self.degree_cap, minimum=1)
        if self.normalizer is not None:
            check_positive_finite("normalizer", self.normalizer)
        return self


class _Head(nn.Module):
    """Dense(hidden_dim) → ReLU → Dense(num_classes), applied row by row."""

    num_classes: int
    hidden_dim: int

    @nn.compact
    def __call__(self, u: jax.Array) -> jax.Array:
        h = nn.relu(nn.Dense(self.hidden_dim)(u))
        return nn.Dense(self.num_classes)(h)


class _AggregateThenHead(nn.Module):
    """The call shared by :class:`NodeMLP` and :class:`CappedGCN`: the parameter-free inputs of
    each node (:func:`node_inputs`, ``hops`` rounds of mean aggregation) through a one-hidden-layer
    head. Subclasses declare ``num_classes``, ``hidden_dim`` and ``hops``."""

    def setup(self) -> None:
        self.head = _Head(self.num_classes, self.hidden_dim)  # type: ignore[attr-defined]

    def __call__(self, graph: jraph.GraphsTuple, training: bool = False) -> jax.Array:
        del training
        return self.head(node_inputs(self, graph.nodes, graph.senders, graph.receivers,
                                     _weight(graph)))


class NodeMLP(_AggregateThenHead):
    """Features-only MLP: logits_i = MLP(x_i) (edges ignored); each node is one example.

    Attributes:
      num_classes: outputs per node; hidden_dim: width of the hidden layer (default 64).
    """

    num_classes: int
    hidden_dim: int = 64
    hops: int = 0


class CappedGCN(_AggregateThenHead):
    """Aggregate-then-MLP GCN for node-level DP: logits = MLP((D̃⁻¹Ã)^r X).

    The aggregation is parameter-free mean aggregation with a self-loop,
    u_i ← (u_i + Σ_{j→i} w_ji u_j) / (1 + Σ_{j→i} w_ji), applied ``hops`` times (r), as in SGC
    (Wu et al., arXiv 1902.07153) with the row normalisation, so that row i depends on i's own
    in-degree only and one node's data reaches at most N_r = Σ_{i≤r} K^i rows on a graph of
    out-degree ≤ K (Daigavane et al., arXiv 2111.15521). Trained privately the edges are capped
    first (:func:`cap_degrees`).

    Attributes:
      num_classes: outputs per node; hidden_dim: MLP width (default 64); hops: r ≥ 1 (default 1).
    """

    num_classes: int
    hidden_dim: int = 64
    hops: int = 1


def _weight(graph: jraph.GraphsTuple) -> jax.Array:
    if graph.edges is None:
        return jnp.ones(graph.senders.shape, jnp.float32)
    return jnp.asarray(graph.edges, jnp.float32)


def mean_aggregate(x: jax.Array, senders: jax.Array, receivers: jax.Array, weight: jax.Array,
                   hops: int) -> jax.Array:
    """(D̃⁻¹Ã)^r x: ``hops`` steps of u_i ← (u_i + Σ_{e: r_e=i} w_e u_{s_e}) / (1 + Σ w_e)."""
    n = x.shape[0]
    deg = 1.0 + jax.ops.segment_sum(weight, receivers, n)
    u = x
    for _ in range(int(hops)):
        u = (u + jax.ops.segment_sum(weight[:, None] * u[senders], receivers, n)) / deg[:, None]
    return u


def node_inputs(module: nn.Module, x: jax.Array, senders: jax.Array, receivers: jax.Array,
                weight: jax.Array) -> jax.Array:
    """The per-node examples u (N, F) of a :class:`NodeMLP` (x) or :class:`CappedGCN`."""
    hops = int(getattr(module, "hops", 0))
    return x if hops == 0 else mean_aggregate(x, senders, receivers, weight, hops)


def _ranks(group: jax.Array, priority: jax.Array) -> jax.Array:
    """Rank of each edge among the edges of its group, by decreasing priority (0 = highest)."""
    order = jnp.lexsort((-priority, group))
    sorted_group = group[order]
    start = jnp.searchsorted(sorted_group, sorted_group, side="left")
    rank_sorted = jnp.arange(group.shape[0]) - start
    return jnp.zeros_like(rank_sorted).at[order].set(rank_sorted)


def cap_degrees(key: jax.Array, senders: jax.Array, receivers: jax.Array,
                degree_cap: int) -> jax.Array:
    """(E,) bool: the edges kept so that every node has in- and out-degree ≤ ``degree_cap``.

    Each edge gets the priority ``uniform(fold_in(fold_in(key, min(s, r)), max(s, r)))``, the
    same for both directions of an undirected edge; s → r is kept iff it ranks among the K
    highest of s's out-edges and of r's in-edges (on a symmetric graph the kept set is
    symmetric). Depends on the key and the edge list only (Daigavane et al., arXiv 2111.15521).
    """
    lo, hi = jnp.minimum(senders, receivers), jnp.maximum(senders, receivers)
    priority = jax.vmap(lambda a, b: jax.random.uniform(
        jax.random.fold_in(jax.random.fold_in(key, a), b)))(lo, hi)
    k = int(degree_cap)
    return (_ranks(receivers, priority) < k) & (_ranks(senders, priority) < k)


def gradient_count(module: nn.Module, degree_cap: int, edge_access: str) -> int:
    """N_r = Σ_{i=0}^{r} K^i: per-node gradients one node can change (1 without edges)."""
    hops = 0 if edge_access == "none" else int(getattr(module, "hops", 0))
    return sum(int(degree_cap) ** i for i in range(hops + 1))


def sensitivity_factor(module: nn.Module, degree_cap: int, edge_access: str) -> int:
    """Δ/C = 2 N_r − 1: the add/remove L2 sensitivity of the clipped sum in units of C."""
    return 2 * gradient_count(module, degree_cap, edge_access) - 1


def node_dp_mu(dp: NodeDp, epochs: int) -> float:
    """μ = √T/σ: T full-batch Gaussian releases, each 1/σ-GDP (Dong, Roth, Su, arXiv
    1905.02383, Cor. 3.3); ∞ at σ = 0."""
    sigma = float(dp.noise_multiplier)
    return float("inf") if sigma == 0 else float(np.sqrt(int(epochs)) / sigma)


def node_dp_epsilon(dp: NodeDp, epochs: int, delta: float) -> float:
    """The node-level (add/remove) ε at δ of a shadow model trained ``epochs`` epochs with ``dp``.

    ε is the smallest value with δ_μ(ε) ≤ δ for μ = √T/σ (:class:`jaxaudit.accounting.GaussianDP`,
    rounded up); ∞ when σ = 0. The sensitivity (2 N_r − 1)C is in the noise, so ε does not depend
    on the model or the degree cap.

    Args:
      dp: the recipe (:class:`NodeDp`).
      epochs: T, the number of full-batch epochs.
      delta: DP's δ in (0, 1).

    Returns:
      ε (float).

    Examples:
      >>> from jaxaudit.graph import NodeDp, node_dp_epsilon
      >>> round(node_dp_epsilon(NodeDp(noise_multiplier=10.0), 100, 1e-5), 3)
      4.377
    """
    from jaxaudit.accounting import GaussianDP

    dp = _check_dp(dp)
    check_integer("epochs", epochs, minimum=1)
    check_probability("delta", delta, open_low=True, open_high=True)
    mu = node_dp_mu(dp, epochs)
    if not np.isfinite(mu):
        return float("inf")
    return float(np.asarray(GaussianDP(mu, "add_remove").to_approx(delta).epsilon))


def noise_for_node_epsilon(epsilon: float, delta: float, epochs: int) -> float:
    """The noise multiplier σ at which T full-batch epochs are (ε, δ)-DP: the library's tight
    accountant (:func:`jaxaudit.accounting.noise_for_epsilon` with ``accountant="pld"``,
    sampling rate 1), whose value is μ-GDP's; ∞ → 0 (no noise)."""
    from jaxaudit.accounting import noise_for_epsilon

    if epsilon == float("inf"):
        return 0.0
    return float(noise_for_epsilon(epsilon, delta, int(epochs), 1.0, accountant="pld"))


def _check_dp(dp: object) -> NodeDp:
    if not isinstance(dp, NodeDp):
        raise ArgumentTypeError(f"dp must be a jaxaudit.graph.NodeDp, got {type(dp).__name__}")
    return dp.check()


def check_private_model(dp: object, module: nn.Module, edge_access: str) -> NodeDp:
    """The recipe checked, after a ValueError unless the module and edge access support
    node-level DP training."""
    if not isinstance(module, NodeMLP | CappedGCN):
        raise ValueError(f"model: node-level DP training needs per-node examples: model 'mlp' "
                         f"or 'capped_gcn', got {type(module).__name__} (a message-passing "
                         "GNN's node loss depends on parameters through every neighbour)")
    if edge_access not in ("inductive", "none"):
        raise ValueError(f"edge_access: node-level DP training supports 'inductive' or 'none', "
                         f"got {edge_access!r} ('full' trains on non-members' features)")
    return _check_dp(dp)


def private_query_weight(edge_access: str, cap: jax.Array) -> jax.Array:
    """The edges every node is queried on: the capped full graph (none under "none")."""
    w = cap.astype(jnp.float32)
    return 0.0 * w if edge_access == "none" else w


def node_loss(module: nn.Module, params: Any, u_i: jax.Array, y_i: jax.Array) -> jax.Array:
    """ℓ(θ; u_i, y_i): the softmax cross-entropy of one node's example under the module's head."""
    logits = module.apply(params, u_i[None], method=lambda m, v: m.head(v))
    return optax.softmax_cross_entropy_with_integer_labels(logits, y_i[None])[0]


def clipped_node_sum(module: nn.Module, params: Any, u: jax.Array, labels: jax.Array,
                     node_mask: jax.Array, clip_norm: float | jax.Array) -> Any:
    """Σ_i m_i clip_C(∇_θ ℓ(θ; u_i, y_i)): per-node gradients by
    :func:`jaxaudit.dpsgd.per_example_gradients`, clipped and summed by
    :func:`jaxaudit.dpsgd.private_aggregate.clip_and_sum`, ``_BLOCK`` nodes at a time (the
    blocks one after another; the same sum up to float reassociation)."""
    n = u.shape[0]
    blocks = -(-n // _BLOCK)
    pad = blocks * _BLOCK - n
    ub = jnp.pad(u, ((0, pad), (0, 0))).reshape(blocks, _BLOCK, -1)
    yb = jnp.pad(labels, (0, pad)).reshape(blocks, _BLOCK)
    mb = jnp.pad(node_mask.astype(jnp.float32), (0, pad)).reshape(blocks, _BLOCK)

    def loss(p: Any, ui: jax.Array, yi: jax.Array) -> jax.Array:
        return node_loss(module, p, ui, yi)

    def block(total: Any, b: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[Any, None]:
        grads = per_example_gradients(loss, params, b[0], b[1])
        return jax.tree.map(jnp.add, total, clip_and_sum(grads, clip_norm, b[2])), None

    zero = jax.tree.map(jnp.zeros_like, params)
    return jax.lax.scan(block, zero, (ub, yb, mb))[0]


def private_gradient(key: jax.Array, module: nn.Module, params: Any, u: jax.Array,
                     labels: jax.Array, node_mask: jax.Array, clip_norm: float | jax.Array,
                     stddev: float | jax.Array, normalizer: float | jax.Array) -> Any:
    """ĝ = (Σ_i m_i clip_C(∇ℓ_i) + N(0, stddev² I)) / n̄, the noise drawn from ``key`` by
    :func:`jaxaudit.dpsgd.private_aggregate.add_gaussian_noise`; stddev = σ (2 N_r − 1) C."""
    summed = clipped_node_sum(module, params, u, labels, node_mask, clip_norm)
    noisy = add_gaussian_noise(key, summed, stddev)
    return jax.tree.map(lambda v: v / normalizer, noisy)


def fit_private(module: nn.Module, epochs: int, learning_rate: float, weight_decay: float,
                dp: NodeDp, edge_access: str, key: jax.Array, x: jax.Array, senders: jax.Array,
                receivers: jax.Array, labels: jax.Array, node_mask: jax.Array
                ) -> tuple[Any, jax.Array]:
    """Train one model with per-node clipped, noised gradients; returns (params, cap).

    Key use: ``k_init, k_rest = split(key)`` (``k_init`` initialises exactly as the non-private
    fit does), ``k_cap, k_noise = split(k_rest)``; epoch t's noise uses ``fold_in(k_noise, t)``.
    """
    n = x.shape[0]
    k_init, k_rest = jax.random.split(key)
    k_cap, k_noise = jax.random.split(k_rest)
    ones = jnp.ones(senders.shape, jnp.float32)
    init_graph = jraph.GraphsTuple(nodes=x, edges=ones, senders=senders, receivers=receivers,
                                   globals=None, n_node=jnp.asarray([n]),
                                   n_edge=jnp.asarray([senders.shape[0]]))
    params = module.init(k_init, init_graph)
    cap = cap_degrees(k_cap, senders, receivers, dp.degree_cap)
    induced = node_mask[senders] & node_mask[receivers]
    w_train = (cap & induced).astype(jnp.float32)
    if edge_access == "none":
        w_train = 0.0 * w_train
    u = node_inputs(module, x, senders, receivers, w_train)
    stddev = (dp.noise_multiplier * dp.clip_norm
              * sensitivity_factor(module, dp.degree_cap, edge_access))
    normalizer = n / 2 if dp.normalizer is None else dp.normalizer

    opt = optax.chain(optax.add_decayed_weights(weight_decay), optax.adam(learning_rate))

    def step(carry: tuple[Any, optax.OptState], epoch: jax.Array
             ) -> tuple[tuple[Any, optax.OptState], None]:
        p, s = carry
        g = private_gradient(jax.random.fold_in(k_noise, epoch), module, p, u, labels,
                             node_mask, dp.clip_norm, stddev, normalizer)
        updates, s = opt.update(g, s, p)
        return (optax.apply_updates(p, updates), s), None

    (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), jnp.arange(epochs))
    return params, cap
