"""Node samplers of the randomized learner A = (S, Φ) and their inclusion priors (docs/gnn_mia.md).

Every sampler is a frozen dataclass (hashable, so it can be a static jit argument) and a pure
function ``sampler(key, graph) -> Sample(node_mask, edge_mask)`` with static shapes: ``node_mask``
(N,) bool marks the sampled nodes S, ``edge_mask`` (E,) bool the training edges (the subgraph
induced by S, or for snowball sampling optionally only the edges along which S was discovered).
The prior of node i is η_i = Pr(M_i = 1), M_i = 1{i ∈ S}; :func:`inclusion_probabilities`
returns it exactly where a closed form exists, else a Monte Carlo estimate with its standard
error sqrt(η(1 − η)/K).

References:
  Yıldırım & Khosla, arXiv 2606.04069 (the randomized learner and node priors); Khosla,
  arXiv 2601.17130 (random vs snowball sampling).
  Leskovec & Faloutsos, "Sampling from Large Graphs", KDD 2006 (random-walk sampling).
  Goodman, "Snowball Sampling", Ann. Math. Statist. 1961.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from jaxaudit._validation import as_scalar, check_choice, check_positive, check_probability, plain
from jaxaudit._validation.core import check_one_key
from jaxaudit.graph.types import Graph

__all__ = [
    "Sample",
    "Sampler",
    "ExactSampler",
    "PoissonSampler",
    "UniformSampler",
    "SnowballSampler",
    "RandomWalkSampler",
    "poisson_sampler",
    "uniform_sampler",
    "snowball_sampler",
    "random_walk_sampler",
    "SAMPLERS",
    "sampler_by_name",
    "induced_edges",
    "inclusion_probabilities",
]


class Sample(NamedTuple):
    """One draw of the sampler: node mask (N,) bool and training-edge mask (E,) bool."""

    node_mask: jax.Array
    edge_mask: jax.Array


@runtime_checkable
class Sampler(Protocol):
    """A node sampler S of the randomized learner: ``sampler(key, graph) -> Sample``.

    Implementations must be hashable (they are static arguments of the compiled training
    function), e.g. frozen dataclasses like the four built in here.
    """

    def __call__(self, key: jax.Array, graph: Graph) -> Sample: ...

    if TYPE_CHECKING:  # for the type checker only: isinstance checks stay as they were
        def __hash__(self) -> int: ...


@runtime_checkable
class ExactSampler(Sampler, Protocol):
    """A :class:`Sampler` whose inclusion probabilities η_i have a closed form."""

    def exact_inclusion(self, graph: Graph) -> np.ndarray: ...


def induced_edges(graph: Graph, node_mask: jax.Array) -> jax.Array:
    """Edges with both endpoints in ``node_mask`` (the induced subgraph), (E,) bool."""
    return node_mask[graph.senders] & node_mask[graph.receivers]


def _check_ratio(ratio: Any) -> float:
    return float(check_probability("ratio", as_scalar("ratio", ratio), open_low=True))


def _target_size(ratio: float, num_nodes: int) -> int:
    return max(1, min(num_nodes, int(round(ratio * num_nodes))))


@dataclasses.dataclass(frozen=True)
class PoissonSampler:
    """Poisson sampling: each node independently with probability ``q``; η_i = q exactly."""

    q: float

    def __call__(self, key: jax.Array, graph: Graph) -> Sample:
        check_one_key("key", key)
        node_mask = jax.random.uniform(key, (graph.num_nodes,)) < self.q
        return Sample(node_mask, induced_edges(graph, node_mask))

    def exact_inclusion(self, graph: Graph) -> np.ndarray:
        return np.full((graph.num_nodes,), self.q)


@dataclasses.dataclass(frozen=True)
class UniformSampler:
    """Fixed-size uniform sampling of n = round(ratio·N) nodes; η_i = n/N exactly."""

    ratio: float

    def __call__(self, key: jax.Array, graph: Graph) -> Sample:
        check_one_key("key", key)
        n = _target_size(self.ratio, graph.num_nodes)
        ranks = jnp.argsort(jnp.argsort(jax.random.uniform(key, (graph.num_nodes,))))
        node_mask = ranks < n
        return Sample(node_mask, induced_edges(graph, node_mask))

    def exact_inclusion(self, graph: Graph) -> np.ndarray:
        return np.full((graph.num_nodes,), _target_size(self.ratio, graph.num_nodes) / graph.num_nodes)


#: while-loop carries: snowball (in S, frontier, parent, key); random walk (in S, |S|, start,
#: current node, steps without a new node, key)
_SnowballState = tuple[jax.Array, jax.Array, jax.Array, jax.Array]
_WalkState = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]


def _segment_rank(segment_ids: jax.Array, priority: jax.Array) -> jax.Array:
    """Rank of each item among the items of its segment, by increasing priority."""
    order = jnp.lexsort((priority, segment_ids))
    sorted_seg = segment_ids[order]
    pos = jnp.arange(segment_ids.shape[0])
    is_start = jnp.concatenate([jnp.array([True]), sorted_seg[1:] != sorted_seg[:-1]])
    seg_start = jax.lax.cummax(jnp.where(is_start, pos, 0))
    return jnp.zeros_like(pos).at[order].set(pos - seg_start)


@dataclasses.dataclass(frozen=True)
class SnowballSampler:
    """Snowball sampling from ``seeds_per_class`` random seeds of every class.

    Waves: every node of the frontier recruits at most ``max_neighbors`` of its not yet sampled
    neighbours, chosen uniformly at random; the recruited nodes form the next frontier. The last
    wave is thinned uniformly at random so that |S| = n = round(ratio·N) exactly, unless the
    seeds' connected components hold fewer nodes (then S is the whole of them; the growth stops
    when the frontier is empty). Training edges: ``edges="discovered"`` keeps only the edges along
    which a node was recruited (both directions), ``"induced"`` the induced subgraph. No closed
    form for η: use :func:`inclusion_probabilities` (Monte Carlo).
    """

    ratio: float
    seeds_per_class: int = 10
    max_neighbors: int = 3
    edges: str = "discovered"

    def __call__(self, key: jax.Array, graph: Graph) -> Sample:
        check_one_key("key", key)
        n_nodes, n_edges = graph.num_nodes, graph.num_edges
        target = _target_size(self.ratio, n_nodes)
        k_seed, k_sub, k_loop = jax.random.split(key, 3)
        # seeds: the seeds_per_class lowest random priorities within every class
        seed_rank = _segment_rank(graph.labels, jax.random.uniform(k_seed, (n_nodes,)))
        seeds = seed_rank < self.seeds_per_class
        # if there are more seeds than the target, keep a random subset of them
        sub_pri = jnp.where(seeds, jax.random.uniform(k_sub, (n_nodes,)), 2.0)
        seeds = seeds & (_segment_rank(jnp.zeros(n_nodes, jnp.int32), sub_pri) < target)
        senders, receivers = graph.senders, graph.receivers

        def cond(state: _SnowballState) -> jax.Array:
            in_s, frontier, _, _ = state
            return (jnp.sum(in_s) < target) & jnp.any(frontier)

        def body(state: _SnowballState) -> _SnowballState:
            in_s, frontier, parent, k = state
            k, k_edge, k_node = jax.random.split(k, 3)
            eligible = frontier[senders] & ~in_s[receivers]
            priority = jnp.where(eligible, jax.random.uniform(k_edge, (n_edges,)), 2.0)
            picked = eligible & (_segment_rank(senders, priority) < self.max_neighbors)
            recruited = jnp.zeros(n_nodes, bool).at[receivers].max(picked)
            # thin the wave to hit the target size exactly
            room = target - jnp.sum(in_s)
            node_pri = jnp.where(recruited, jax.random.uniform(k_node, (n_nodes,)), 2.0)
            node_rank = jnp.zeros(n_nodes, jnp.int32).at[jnp.argsort(node_pri)].set(jnp.arange(n_nodes))
            recruited = recruited & (node_rank < room)
            # the parent of a recruited node: its picked in-edge of lowest priority
            edge_pri = jnp.where(picked & recruited[receivers], priority, 2.0)
            first = picked & recruited[receivers] & (_segment_rank(receivers, edge_pri) == 0)
            parent = parent.at[receivers].max(jnp.where(first, senders, -1))
            return in_s | recruited, recruited, parent, k

        init = (seeds, seeds, jnp.full(n_nodes, -1, senders.dtype), k_loop)
        node_mask, _, parent, _ = jax.lax.while_loop(cond, body, init)
        if self.edges == "induced":
            edge_mask = induced_edges(graph, node_mask)
        else:  # both directions of every (parent, child) edge
            edge_mask = (parent[receivers] == senders) | (parent[senders] == receivers)
        return Sample(node_mask, edge_mask)


@dataclasses.dataclass(frozen=True)
class RandomWalkSampler:
    """Random-walk sampling with restarts (Leskovec & Faloutsos 2006).

    A walk starts at a uniformly random node; each step moves to a uniformly random neighbour,
    or with probability ``restart`` back to the start node. Visited nodes join S until
    |S| = n = round(ratio·N). When no new node was visited for ``max_stall`` steps (or the node
    has no neighbour) the walk jumps to a uniformly random node and continues from there.
    Training edges: the induced subgraph. No closed form for η (Monte Carlo).
    """

    ratio: float
    restart: float = 0.15
    max_stall: int = 100

    def __call__(self, key: jax.Array, graph: Graph) -> Sample:
        check_one_key("key", key)
        n_nodes = graph.num_nodes
        target = _target_size(self.ratio, n_nodes)
        order = jnp.argsort(graph.senders)
        nbrs = graph.receivers[order]
        deg = jnp.zeros(n_nodes, jnp.int32).at[graph.senders].add(1)
        offsets = jnp.cumsum(deg) - deg
        k_start, k_loop = jax.random.split(key)
        start = jax.random.randint(k_start, (), 0, n_nodes)
        in_s = jnp.zeros(n_nodes, bool).at[start].set(True)

        def cond(state: _WalkState) -> jax.Array:
            return state[1] < target

        def body(state: _WalkState) -> _WalkState:
            in_s, count, start, cur, stall, k = state
            k, k1, k2, k3 = jax.random.split(k, 4)
            d = deg[cur]
            pick = nbrs[offsets[cur] + jnp.floor(jax.random.uniform(k1) * d).astype(jnp.int32).clip(0, jnp.maximum(d - 1, 0))]
            jump = (stall >= self.max_stall) | (d == 0)
            new_start = jnp.where(jump, jax.random.randint(k3, (), 0, n_nodes), start)
            nxt = jnp.where(jump, new_start, jnp.where(jax.random.uniform(k2) < self.restart, start, pick))
            new = ~in_s[nxt]
            return (in_s.at[nxt].set(True), count + new, new_start, nxt,
                    jnp.where(new | jump, 0, stall + 1), k)

        state = (in_s, jnp.int32(1), start, start, jnp.int32(0), k_loop)
        node_mask = jax.lax.while_loop(cond, body, state)[0]
        return Sample(node_mask, induced_edges(graph, node_mask))


def poisson_sampler(q: float) -> PoissonSampler:
    """Poisson sampler with inclusion probability ``q`` in (0, 1]."""
    return PoissonSampler(_check_ratio(q))


def uniform_sampler(ratio: float) -> UniformSampler:
    """Uniform fixed-size sampler of round(ratio·N) nodes, ``ratio`` in (0, 1]."""
    return UniformSampler(_check_ratio(ratio))


def snowball_sampler(ratio: float, seeds_per_class: int = 10, max_neighbors: int = 3,
                     edges: str = "discovered") -> SnowballSampler:
    """Snowball sampler (see :class:`SnowballSampler`)."""
    check_positive("seeds_per_class", seeds_per_class)
    check_positive("max_neighbors", max_neighbors)
    check_choice("edges", edges, ("discovered", "induced"))
    return SnowballSampler(_check_ratio(ratio), int(seeds_per_class), int(max_neighbors), edges)


def random_walk_sampler(ratio: float, restart: float = 0.15, max_stall: int = 100) -> RandomWalkSampler:
    """Random-walk-with-restart sampler (see :class:`RandomWalkSampler`)."""
    r = float(restart)
    if not 0.0 <= r < 1.0:
        raise ValueError(f"restart must lie in [0, 1), got {plain(restart)}")
    check_positive("max_stall", max_stall)
    return RandomWalkSampler(_check_ratio(ratio), r, int(max_stall))


def inclusion_probabilities(key: jax.Array, sampler: Sampler, graph: Graph,
                            num_draws: int = 1000) -> tuple[jax.Array, jax.Array]:
    """Prior inclusion probabilities η_i = Pr(i ∈ S) of a sampler, with standard errors.

    Exact (standard error 0) for samplers with a closed form (Poisson: q; uniform: n/N); else the
    Monte Carlo frequency over ``num_draws`` independent draws, η̂_i = (1/K) Σ_k M_i^{(k)}, with
    standard error sqrt(η̂_i (1 − η̂_i) / K).

    Returns:
      ``(eta, stderr)``, two (N,) float arrays.
    """
    check_one_key("key", key)
    check_positive("num_draws", num_draws)
    if isinstance(sampler, ExactSampler):
        eta = jnp.asarray(sampler.exact_inclusion(graph), jnp.float32)
        return eta, jnp.zeros_like(eta)
    num_draws = int(num_draws)
    keys = jax.random.split(key, num_draws)
    eta = _mc_inclusion(sampler, keys, graph)
    return eta, jnp.sqrt(eta * (1.0 - eta) / num_draws)


@jax.jit(static_argnums=0)
def _mc_inclusion(sampler: Sampler, keys: jax.Array, graph: Graph) -> jax.Array:
    batch = 50
    num = keys.shape[0]
    pad = (-num) % batch
    padded = jnp.concatenate([keys, keys[:pad]]) if pad else keys
    chunks = padded.reshape((-1, batch) + keys.shape[1:])
    counts = jax.lax.map(
        lambda ks: jnp.sum(jax.vmap(lambda k: sampler(k, graph).node_mask)(ks), 0, dtype=jnp.int32),
        chunks,
    )
    total = jnp.sum(counts, 0)
    if pad:
        total = total - jnp.sum(jax.vmap(lambda k: sampler(k, graph).node_mask)(keys[:pad]), 0, dtype=jnp.int32)
    return total / num


#: The samplers by name (``sampler_by_name``; the CLI's ``--sampler`` choices).
SAMPLERS = ("uniform", "poisson", "snowball", "random_walk")


def sampler_by_name(name: str, ratio: float, **options: Any) -> Sampler:
    """The sampler called ``name`` (one of :data:`SAMPLERS`) at sampling ratio ``ratio``, with
    that sampler's keyword ``options`` (e.g. ``edges="induced"`` for the snowball sampler).

    Examples:
      >>> type(sampler_by_name("snowball", 0.5, edges="induced")).__name__
      'SnowballSampler'
    """
    check_choice("name", name, SAMPLERS)
    factories: dict[str, Callable[..., Sampler]] = {
        "uniform": uniform_sampler, "poisson": poisson_sampler, "snowball": snowball_sampler,
        "random_walk": random_walk_sampler}
    factory = factories[name]
    try:
        return factory(ratio, **options)
    except TypeError as err:
        raise ValueError(f"sampler {name!r} does not take the options {sorted(options)} "
                         f"({err})") from None
