"""Contextual stochastic block model (CSBM): the always-available synthetic graph.

Model (Deshpande, Montanari, Mossel, Sen, NeurIPS 2018; Binkiewicz et al., 2017):

* labels: ``N`` nodes in ``C`` classes of (near-)equal size, assigned by a random permutation;
* edges: each unordered pair ``{i, j}`` (``i != j``) is an edge independently with probability
  ``p_in`` if ``y_i = y_j`` and ``p_out`` otherwise. With ``M = N * avg_degree / 2`` the expected
  number of undirected edges and ``h`` the target edge homophily,

      p_in  = h * M / P_in,        p_out = (1 - h) * M / P_out,

  where ``P_in = sum_c n_c (n_c - 1) / 2`` and ``P_out = N (N - 1) / 2 - P_in`` count the intra-
  and inter-class pairs. Hence E[#intra edges] = h M and E[#inter edges] = (1 - h) M, so the
  realised edge homophily (fraction of intra-class edges) concentrates at ``h`` with standard
  deviation about ``sqrt(h (1 - h) / M)`` (0.0055 at the Cora-like defaults);
* features: ``"gaussian"``: ``x_i = mu_{y_i} + z_i`` with ``z_i ~ N(0, I_F)`` and class means
  ``mu_c ~ N(0, (s^2 / F) I_F)`` (so ``|mu_c| ~ s = feature_signal``); ``"bernoulli"``: binary
  bag-of-words-like features ``x_{if} ~ Bernoulli(q_{y_i f})`` with class rates
  ``q_{cf} = min(1, d exp(s g_{cf} - s^2 / 2))``, ``g ~ N(0, 1)``, mean density ``d``.

The pairs are sampled exactly (a Bernoulli draw per pair) in row blocks, so memory is
``O(block * N)`` and time ``O(N^2)`` (timing at Cora's size: benchmarks/README.md).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_finite,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
)
from jaxaudit._validation.core import check_one_key
from jaxaudit.graph.types import Graph

_ROW_BLOCK = 512


def edge_homophily(graph: Graph) -> float:
    """Fraction of edges joining two nodes of the same class (Zhu et al., NeurIPS 2020)."""
    labels = np.asarray(graph.labels)
    s, r = np.asarray(graph.senders), np.asarray(graph.receivers)
    if s.size == 0:
        return float("nan")
    return float(np.mean(labels[s] == labels[r]))


def _split_sizes(num_nodes: int, num_classes: int, class_sizes: np.ndarray, train_per_class: int,
                 num_val: int, num_test: int) -> tuple[int, int, int]:
    """Planetoid-like sizes, shrunk when the graph is too small for the requested ones."""
    train_per_class = min(train_per_class, int(class_sizes.min()) // 2)
    rest = num_nodes - train_per_class * num_classes
    if num_val + num_test > rest:
        total = num_val + num_test
        num_val = rest * num_val // total if total else 0
        num_test = rest - num_val
    return train_per_class, num_val, num_test


#: Most entries of the dense (N, F) feature matrix :func:`make_csbm` builds (2^31 - 1: 8 GiB of
#: float32, and the int32 index range of the edge arrays); larger graphs are refused up front.
MAX_FEATURE_ENTRIES = 2**31 - 1


def make_csbm(
    key: jax.Array,
    num_nodes: int = 2708,
    num_classes: int = 7,
    num_features: int = 1433,
    avg_degree: float = 3.9,
    homophily: float = 0.8,
    feature_signal: float = 2.0,
    features: str = "gaussian",
    feature_density: float = 0.0127,
    split: tuple[int, int, int] = (20, 500, 1000),
) -> Graph:
    """Sample a contextual stochastic block model graph (defaults sized like Cora).

    Args:
      key: PRNG key; the graph is a deterministic function of the key and the arguments.
      num_nodes: number of nodes ``N``.
      num_classes: number of classes ``C`` (class sizes differ by at most one).
      num_features: feature dimension ``F``.
      avg_degree: expected average degree ``2 M / N`` (Cora: 3.9).
      homophily: target edge homophily ``h`` in [0, 1] (Cora: 0.81).
      feature_signal: ``s >= 0``, strength of the class signal in the features (0: none).
      features: ``"gaussian"`` or ``"bernoulli"``.
      feature_density: mean rate ``d`` of ones for Bernoulli features (Cora: 0.0127).
      split: ``(train_per_class, num_val, num_test)``, a Planetoid-like split (20 per class /
        500 / 1000);
        when the graph is too small, train is capped at half the smallest class and val/test
        shrink proportionally to the nodes left.

    Returns:
      A ``Graph`` named ``"csbm"`` (float32 features, int32 labels, undirected edges in both
      directions sorted by sender, no self-loops, disjoint masks).

    Raises:
      ValueError: invalid argument, or ``avg_degree``/``homophily`` needing an edge probability
        above 1.

    Example:
      >>> g = make_csbm(jax.random.key(0), num_nodes=300, num_classes=3, num_features=8)
      >>> g.num_nodes, g.num_classes
      (300, 3)

    References:
      Deshpande, Montanari, Mossel, Sen, "Contextual Stochastic Block Models", NeurIPS 2018.
    """
    check_one_key("key", key)
    num_nodes = check_integer("num_nodes", num_nodes, 2)
    num_classes = check_integer("num_classes", num_classes, 1)
    num_features = check_integer("num_features", num_features, 1)
    if isinstance(split, str) or len(tuple(split)) != 3:
        raise ValueError(f"split must be (train_per_class, num_val, num_test), got {split!r}")
    train_per_class, num_val, num_test = tuple(split)
    train_per_class = check_integer("train_per_class", train_per_class, 0)
    num_val = check_integer("num_val", num_val, 0)
    num_test = check_integer("num_test", num_test, 0)
    if num_classes > num_nodes:
        raise ValueError(f"num_classes must be <= num_nodes, got {num_classes} > {num_nodes}")
    if num_nodes * num_features > MAX_FEATURE_ENTRIES:
        raise ValueError(
            f"num_nodes x num_features = {num_nodes} x {num_features} exceeds "
            f"{MAX_FEATURE_ENTRIES} feature entries (an 8 GiB float32 matrix): lower num_nodes")
    check_finite("avg_degree", avg_degree)
    check_positive("avg_degree", avg_degree)
    check_probability("homophily", homophily)
    check_finite("feature_signal", feature_signal)
    check_nonnegative("feature_signal", feature_signal)
    check_probability("feature_density", feature_density, open_low=True)
    check_choice("features", features, ("gaussian", "bernoulli"))

    sizes = np.bincount(np.arange(num_nodes) % num_classes).astype(np.float64)
    num_edges = num_nodes * float(avg_degree) / 2.0
    pairs_in = float(np.sum(sizes * (sizes - 1) / 2))
    pairs_out = num_nodes * (num_nodes - 1) / 2.0 - pairs_in
    h = float(homophily)
    p_in = h * num_edges / pairs_in if pairs_in > 0 else (0.0 if h == 0 else np.inf)
    p_out = (1 - h) * num_edges / pairs_out if pairs_out > 0 else (0.0 if h == 1 else np.inf)
    if p_in > 1 or p_out > 1:
        raise ValueError(
            f"avg_degree={avg_degree} with homophily={homophily} needs edge probabilities "
            f"p_in={p_in:.3g}, p_out={p_out:.3g} above 1 for num_nodes={num_nodes}, "
            f"num_classes={num_classes}; lower avg_degree"
        )

    k_edge, k_nodes = jax.random.split(key)
    labels, x, order = _sample_nodes(
        k_nodes,
        num_nodes=num_nodes,
        num_classes=num_classes,
        num_features=num_features,
        kind=features,
        signal=np.float32(feature_signal),
        density=np.float32(feature_density),
    )
    labels = np.asarray(labels)
    order = np.asarray(order)
    senders, receivers = _sample_edges(k_edge, labels, p_in, p_out)

    t, v, te = _split_sizes(num_nodes, num_classes, sizes, train_per_class, num_val, num_test)
    train_idx = np.concatenate([order[labels[order] == c][:t] for c in range(num_classes)])
    rest = order[~np.isin(order, train_idx)]
    masks = []
    for idx in (train_idx, rest[:v], rest[v : v + te]):
        m = np.zeros(num_nodes, bool)
        m[idx] = True
        masks.append(jnp.asarray(m))

    return Graph(
        features=x,
        labels=jnp.asarray(labels),
        senders=jnp.asarray(senders),
        receivers=jnp.asarray(receivers),
        train_mask=masks[0],
        val_mask=masks[1],
        test_mask=masks[2],
        num_classes=num_classes,
        name="csbm",
    )


@jax.jit
def _edge_block(key: jax.Array, labels: jax.Array, start: int | jax.Array, p_in: ArrayLike,
                p_out: ArrayLike) -> jax.Array:
    """Bernoulli draws for the pairs (i, j), i in rows [start, start + block), j > i."""
    n = labels.shape[0]
    rows = start + jnp.arange(_ROW_BLOCK)
    cols = jnp.arange(n)
    # Explicit float32 throughout, so that the graph does not depend on the x64 flag.
    u = jax.random.uniform(key, (_ROW_BLOCK, n), dtype=jnp.float32)
    row_labels = labels[jnp.minimum(rows, n - 1)]
    prob = jnp.where(row_labels[:, None] == labels[None, :], p_in, p_out).astype(jnp.float32)
    return (u < prob) & (cols[None, :] > rows[:, None]) & (rows[:, None] < n)


def _sample_edges(key: jax.Array, labels: np.ndarray, p_in: float, p_out: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One Bernoulli draw per unordered pair i < j, in row blocks; both directions, sorted."""
    n = labels.shape[0]
    lab = jnp.asarray(labels)
    src, dst = [], []
    for b, start in enumerate(range(0, n, _ROW_BLOCK)):
        block = _edge_block(jax.random.fold_in(key, b), lab, start, np.float32(p_in),
                            np.float32(p_out))
        i, j = np.nonzero(np.asarray(block))
        src.append(i + start)
        dst.append(j)
    i = np.concatenate(src)
    j = np.concatenate(dst)
    codes = np.sort(np.concatenate([i * n + j, j * n + i]))
    return (codes // n).astype(np.int32), (codes % n).astype(np.int32)


@partial(jax.jit, static_argnames=("num_nodes", "num_classes", "num_features", "kind"))
def _sample_nodes(key: jax.Array, num_nodes: int, num_classes: int, num_features: int, kind: str,
                  signal: ArrayLike, density: ArrayLike
                  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Labels (balanced, permuted), class-conditional features and the split order."""
    k_label, k_mean, k_feat, k_split = jax.random.split(key, 4)
    labels = jax.random.permutation(k_label, jnp.arange(num_nodes, dtype=jnp.int32) % num_classes)
    order = jax.random.permutation(k_split, num_nodes)
    if kind == "gaussian":
        means = (
            signal / jnp.sqrt(num_features)
            * jax.random.normal(k_mean, (num_classes, num_features), dtype=jnp.float32)
        )
        noise = jax.random.normal(k_feat, (num_nodes, num_features), dtype=jnp.float32)
        return labels, (means[labels] + noise).astype(jnp.float32), order
    g = jax.random.normal(k_mean, (num_classes, num_features), dtype=jnp.float32)
    rates = jnp.minimum(1.0, density * jnp.exp(signal * g - signal**2 / 2)).astype(jnp.float32)
    return labels, jax.random.bernoulli(k_feat, rates[labels]).astype(jnp.float32), order
