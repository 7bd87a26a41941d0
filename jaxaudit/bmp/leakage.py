"""Sampling leakage: how much the sample S itself reveals about a node's membership
(Yıldırım & Khosla, arXiv 2606.04069, the prior (sampling) bounds; derivation in docs/bmp.md).

    c_R^i = log sup_s Pr(S_{−i} = s | M_i = 1) / Pr(S_{−i} = s | M_i = 0),   c_L^i the mirror.

If the trainer Φ is node-level (ε_L^Φ, ε_R^Φ)-private given S_{−i}, the learner is
(ε_L^Φ + c_L^i, ε_R^Φ + c_R^i)-BMP; if W reveals S_{−i}, no trainer can do better than c^i.
c = 0 for Poisson sampling (independent inclusions), +inf for fixed-size uniform sampling (|S_{−i}|
reveals M_i), large and node-dependent for snowball sampling.

Exact values come from a full distribution over samples (closed forms, or enumeration on tiny
graphs, :func:`snowball_distribution`); otherwise :func:`sampling_leakage` estimates c from i.i.d.
sample draws with delta-method standard errors. On large graphs the draws never repeat a whole
S_{−i}; pass a discrete ``statistic`` of S_{−i} instead (e.g. the number of sampled neighbours of
i): by post-processing its leakage is a lower bound on c.

:func:`sampling_leakage` checks concrete arguments, then calls a ``jax.numpy`` core (float64
eagerly, as the estimate has always been computed; the default float dtype inside ``jax.jit`` /
``jax.vmap``, where the checks are skipped). Per node, the outcomes are grouped by sorting their
S_{−i} (or statistic) codes, so draws of equal codes share one probability. The samplers
(:func:`snowball_distribution`, :func:`snowball_draws`) enumerate or grow Python sets on the host
and stay host functions.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_key, check_mask, check_probability, is_traced

__all__ = [
    "LeakageEstimate",
    "poisson_leakage",
    "sampling_leakage",
    "snowball_distribution",
    "snowball_draws",
    "uniform_leakage",
]


class LeakageEstimate(NamedTuple):
    """Per-node sampling leakage (c_L, c_R), with standard errors (0 when exact, NaN when
    undefined, e.g. for an infinite estimate)."""

    c_l: np.ndarray | jax.Array
    c_r: np.ndarray | jax.Array
    c_l_se: np.ndarray | jax.Array
    c_r_se: np.ndarray | jax.Array
    exact: bool


def poisson_leakage(q: ArrayLike, num_nodes: int) -> LeakageEstimate:
    """Poisson sampling (each node independently with probability q ∈ (0, 1)): S_{−i} is
    independent of M_i, so c_L = c_R = 0 exactly."""
    check_probability("q", q, open_low=True, open_high=True)
    z = np.zeros(int(num_nodes))
    return LeakageEstimate(z, z.copy(), z.copy(), z.copy(), True)


def uniform_leakage(num_nodes: int, sample_size: int) -> LeakageEstimate:
    """Fixed-size uniform sampling of k of N nodes (0 < k < N): |S_{−i}| = k − 1 iff M_i = 1, the
    supports are disjoint, so c_L = c_R = +inf exactly."""
    if not 0 < int(sample_size) < int(num_nodes):
        raise ValueError(f"sample_size must lie in (0, num_nodes), got {sample_size} of "
                         f"{num_nodes}")
    inf = np.full(int(num_nodes), np.inf)
    return LeakageEstimate(inf, inf.copy(), np.zeros(int(num_nodes)), np.zeros(int(num_nodes)), True)


def _one_node(keys: jax.Array, member: jax.Array, weights: jax.Array, exact: bool) -> jax.Array:
    """sup log-ratios of the laws of ``keys`` ((K, C) integer codes of S_{−i}) given member /
    non-member: (c_L, c_R, se_L, se_R). Outcomes are grouped by sorting the codes (first column
    most significant, as ``np.unique`` orders them), so ties in the sup resolve alike."""
    num = keys.shape[0]
    order = jnp.lexsort(tuple(keys[:, c] for c in reversed(range(keys.shape[1]))))
    sorted_keys = keys[order]
    new_group = jnp.concatenate([jnp.ones((1,), bool),
                                 jnp.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)])
    group = jnp.cumsum(new_group) - 1
    w = weights[order]
    m = member[order]
    w1, w0 = jnp.where(m, w, 0.0), jnp.where(m, 0.0, w)
    t1, t0 = jnp.sum(w1), jnp.sum(w0)
    p1 = jax.ops.segment_sum(w1, group, num) / jnp.where(t1 > 0, t1, 1.0)
    p0 = jax.ops.segment_sum(w0, group, num) / jnp.where(t0 > 0, t0, 1.0)

    def side(num_p: jax.Array, den_p: jax.Array, n_num: jax.Array, n_den: jax.Array
            ) -> tuple[jax.Array, jax.Array]:
        pos = num_p > 0
        disjoint = jnp.any(pos & (den_p == 0))
        ratio = jnp.where(pos, jnp.log(jnp.where(pos, num_p, 1.0))
                          - jnp.log(jnp.where(den_p > 0, den_p, 1.0)), -jnp.inf)
        k = jnp.argmax(ratio)
        if exact:
            se = jnp.zeros((), ratio.dtype)
        else:
            se = jnp.sqrt((1 - num_p[k]) / (n_num * num_p[k]) + (1 - den_p[k]) / (n_den * den_p[k]))
        c = jnp.where(disjoint, jnp.inf, jnp.maximum(ratio[k], 0.0))
        se = jnp.where(disjoint, 0.0 if exact else jnp.nan, se)
        return c, se

    c_r, se_r = side(p1, p0, t1, t0)
    c_l, se_l = side(p0, p1, t0, t1)
    out = jnp.stack([c_l, c_r, se_l, se_r])
    return jnp.where((t1 > 0) & (t0 > 0), out, jnp.nan)


def _sampling_leakage(masks: ArrayLike, weights: jax.Array, statistic: ArrayLike | None = None, *,
                      exact: bool) -> jax.Array:
    """Unvalidated, traceable core of :func:`sampling_leakage`: (4, N) rows c_L, c_R, se_L, se_R.
    ``weights`` are the outcome probabilities (``exact``) or ones (draws)."""
    masks = jnp.asarray(masks).astype(bool)
    num_nodes = masks.shape[1]
    codes = masks.astype(jnp.int32)

    def node(i: jax.Array) -> jax.Array:
        if statistic is not None:
            keys = jnp.asarray(statistic)[:, i][:, None]
        else:  # the whole S_{−i}: the mask with column i blanked
            keys = jnp.where(jnp.arange(num_nodes) == i, 0, codes)
        return _one_node(keys, masks[:, i], weights, exact)

    return jax.vmap(node, out_axes=1)(jnp.arange(num_nodes))


def sampling_leakage(masks: ArrayLike, probs: ArrayLike | None = None, *,
                     statistic: ArrayLike | None = None) -> LeakageEstimate:
    """Sampling leakage (c_L, c_R) per node from a distribution over samples or from draws.

    Args:
      masks: (K, N) bool node masks. With ``probs``: the distinct outcomes of the sampler;
        without: K i.i.d. draws.
      probs: (K,) outcome probabilities (exact computation), or None (Monte Carlo).
      statistic: optional (K, N) integer array, ``statistic[k, i]`` a function of S_{−i} in draw k
        (e.g. the number of sampled neighbours of i); its leakage lower-bounds c. Default: the
        whole S_{−i} (feasible on small graphs only).

    Returns:
      :class:`LeakageEstimate`. The Monte Carlo estimate takes the empirical sup of the log
      frequency ratio (biased upwards for rare patterns) with the delta-method standard error
      sqrt((1 − p̂_1)/(n_1 p̂_1) + (1 − p̂_0)/(n_0 p̂_0)) at the maximising pattern; a pattern seen
      under one membership only gives +inf (exact for disjoint supports, e.g. fixed-size sampling).
      Eagerly the fields are float64 numpy arrays; inside ``jax.jit``/``jax.vmap`` (``probs``
      and ``statistic`` given or not: static) jax arrays of the default float dtype.
    """
    if np.ndim(masks) != 2:
        raise ValueError(f"masks must have shape (K, N), got {np.shape(masks)}")
    check_mask("masks", masks)
    num_draws = np.shape(masks)[0]
    exact = probs is not None
    if probs is not None and np.shape(probs) != (num_draws,):
        raise ValueError(f"probs must have shape ({num_draws},), got {np.shape(probs)}")
    if statistic is not None and np.shape(statistic) != np.shape(masks):
        raise ValueError(f"statistic must have shape {np.shape(masks)}, got {np.shape(statistic)}")
    if is_traced(masks, probs, statistic):
        traced = _sampling_leakage(masks, jnp.asarray(probs) if probs is not None
                                   else jnp.ones(num_draws), statistic, exact=exact)
        return LeakageEstimate(traced[0], traced[1], traced[2], traced[3], exact)
    masks = np.asarray(masks).astype(bool)
    weights = np.ones(num_draws)
    if probs is not None:
        weights = check_probability("probs", probs)
        if abs(weights.sum() - 1) > 1e-9:
            raise ValueError(f"probs must sum to 1, got {weights.sum()}")
    with jax.enable_x64(True):
        res = np.asarray(_sampling_leakage(masks, jnp.asarray(weights, jnp.float64),
                                           None if statistic is None else jnp.asarray(statistic),
                                           exact=exact), np.float64)
    return LeakageEstimate(res[0], res[1], res[2], res[3], exact)


def _adjacency(senders: ArrayLike, receivers: ArrayLike, num_nodes: int) -> list[set[int]]:
    nbrs: list[set[int]] = [set() for _ in range(num_nodes)]
    for a, b in zip(np.asarray(senders).tolist(), np.asarray(receivers).tolist()):
        if a != b:
            nbrs[a].add(b)
            nbrs[b].add(a)
    return nbrs


def _next_probs(sample: set[int], nbrs: list[set[int]], num_nodes: int, teleport: float
               ) -> dict[int, float]:
    """Law of the next recruited node: uniform on the frontier w.p. 1 − teleport, uniform on all
    unsampled nodes w.p. teleport (always, when the frontier is empty)."""
    frontier = set().union(*(nbrs[v] for v in sample)) - sample if sample else set()
    rest = sorted(set(range(num_nodes)) - sample)
    if not frontier:
        return {v: 1.0 / len(rest) for v in rest}
    probs = {v: teleport / len(rest) for v in rest}
    for v in frontier:
        probs[v] += (1 - teleport) / len(frontier)
    return probs


def _size_law(sample_size: int | ArrayLike, num_nodes: int, num_seeds: int) -> np.ndarray:
    """Law of the target size: an int (fixed) or probabilities over sizes 0..N."""
    if np.ndim(sample_size) == 0:
        law = np.zeros(num_nodes + 1)
        law[int(np.asarray(sample_size))] = 1.0
    else:
        law = check_probability("sample_size", sample_size)
        if law.shape != (num_nodes + 1,) or abs(law.sum() - 1) > 1e-9:
            raise ValueError(f"sample_size as a law must be {num_nodes + 1} probabilities "
                             "summing to 1")
    sizes = np.flatnonzero(law[1:]) + 1
    if num_seeds < 1 or (len(sizes) and sizes.min() < num_seeds):
        raise ValueError("need 1 <= num_seeds <= every positive sample size")
    return law


def snowball_distribution(senders: ArrayLike, receivers: ArrayLike, num_nodes: int,
                          sample_size: int | ArrayLike, *, num_seeds: int = 1, teleport: float = 0.0
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the frontier-growth snowball sample on a small graph, by enumeration.

    Process: draw the target size K (``sample_size``: an int, or probabilities over 0..N for a
    random size) and ``num_seeds`` distinct seeds uniformly; then, until K nodes are sampled, add
    one node drawn uniformly from the frontier (unsampled neighbours of the sample), or — with
    probability ``teleport``, and always when the frontier is empty — uniformly from all unsampled
    nodes (K = 0 is the empty sample). The growth is Markov in the current set, so dynamic
    programming over sets gives the exact law. A fixed K makes |S_{−i}| reveal M_i (c = ∞, as for
    fixed-size uniform sampling); so does pure frontier growth (sets it cannot reach); a random K
    with full support and ``teleport`` > 0 gives finite, node-dependent c.

    Returns:
      (masks (K, N) bool, probs (K,)) over the reachable samples.
    """
    law = _size_law(sample_size, num_nodes, num_seeds)
    nbrs = _adjacency(senders, receivers, num_nodes)
    from itertools import combinations
    from math import comb

    final: dict[frozenset[int], float] = {}
    if law[0] > 0:
        final[frozenset()] = law[0]
    layer = {frozenset(c): 1.0 / comb(num_nodes, num_seeds)
             for c in combinations(range(num_nodes), num_seeds)}
    for size in range(num_seeds, int(np.flatnonzero(law).max()) + 1):
        if size > num_seeds:
            nxt: dict[frozenset[int], float] = {}
            for sample, p in layer.items():
                for v, q in _next_probs(set(sample), nbrs, num_nodes, teleport).items():
                    key = sample | {v}
                    nxt[key] = nxt.get(key, 0.0) + p * q
            layer = nxt
        if law[size] > 0:
            for sample, p in layer.items():
                final[sample] = final.get(sample, 0.0) + law[size] * p
    samples = sorted(final, key=lambda x: (len(x), sorted(x)))
    masks = np.zeros((len(samples), num_nodes), bool)
    for k, sample in enumerate(samples):
        masks[k, sorted(sample)] = True
    return masks, np.asarray([final[s] for s in samples])


def snowball_draws(key: jax.Array, senders: ArrayLike, receivers: ArrayLike, num_nodes: int,
                   sample_size: int | ArrayLike, num_draws: int, *, num_seeds: int = 1,
                   teleport: float = 0.0) -> np.ndarray:
    """i.i.d. draws of the frontier-growth snowball sample of :func:`snowball_distribution`,
    simulated forward on the host: (num_draws, N) bool masks.

    The numpy generator is derived from ``key``: its key data read as one big-endian integer
    (``jax.random.key(s)`` seeds ``np.random.default_rng(s)``).
    """
    check_key("key", key)
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    host = 0
    for word in np.asarray(jax.random.key_data(key)).ravel().tolist():
        host = (host << 32) | int(word)
    law = _size_law(sample_size, num_nodes, num_seeds)
    rng = np.random.default_rng(host)
    nbrs = _adjacency(senders, receivers, num_nodes)
    out = np.zeros((num_draws, num_nodes), bool)
    for k in range(num_draws):
        target = rng.choice(num_nodes + 1, p=law)
        if target == 0:
            continue
        sample = set(rng.choice(num_nodes, size=num_seeds, replace=False).tolist())
        while len(sample) < target:
            frontier = set().union(*(nbrs[v] for v in sample)) - sample
            pool = frontier if frontier and rng.random() >= teleport else (
                set(range(num_nodes)) - sample)
            choices = sorted(pool)
            sample.add(choices[rng.integers(len(choices))])
        out[k, sorted(sample)] = True
    return out
