"""Multi-attribute reconstruction from Gaussian-noised k-way marginals (Swanberg et al. App. E).

Game. A categorical table; the release is every k-way marginal (contingency table) over the
chosen ``attributes``, each cell plus N(0, σ²) noise. n targets (random rows) have their
``hidden`` attributes h_i drawn from the adversary's prior D_i; their other released
attributes (quasi-identifiers q_i) are known. The adversary is *informed* (Balle et al.'s ReRo
threat model): it knows every non-target row.

Prior (population prior, our choice): the conditional frequency of the hidden values given the
target's quasi-identifiers among the non-target rows, smoothed toward the hidden marginal,

    D_i(h) = (c(h, q_i) + α P(h)) / (c(q_i) + α),   α = 1.

Bayes attack. Write the release as Y = C_rest + Σ_j e(h_j, q_j) + Z, with e(h, q) the 0/1
vector of the cells the record (h, q) falls in (one per marginal) and Z ~ N(0, σ² I). For one
target, the other targets' contributions are replaced by a Gaussian with their prior mean
Ē_j = E_{D_j}[e(h_j, q_j)] and per-cell variance Ē_j(1 − Ē_j) (exact for n = 1, a
moment-matched approximation otherwise), giving per-cell variance v_i[c] = σ² + Σ_{j≠i}
Ē_j[c](1 − Ē_j[c]) and the posterior

    log π_i(h) = log D_i(h) + Σ_{cells c of (h, q_i)} (r_i[c] − 1/2) / v_i[c] + const,
    r_i = Y − C_rest − Σ_{j≠i} Ē_j

(−(r − 1)²/2v + r²/2v = (r − 1/2)/v: only the cells the record falls in depend on h). For
n = 1 this is the exact Bayes posterior ⟨r, e(h, q)⟩/σ² + log D(h) + const. Success within Hamming
distance d of the truth: the guess z_i maximises the posterior mass of the ball B_d(z) over all
hidden combinations z; the exact-match case is d = 0 (the MAP).

Bound. p_i = max_z D_i(B_d(z)) (the best ball's prior mass; exact sup over the hidden
space), privacy from :func:`jaxaudit.accounting.gaussian_marginals_privacy` (replace-one, Δ =
√(2m), μ-GDP with μ = √(2ρ)), count bound as in :mod:`jaxaudit.attacks.result`.

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, arXiv 2507.08158, Appendix E.
  Balle, Cherubin, Hayes, "Reconstructing Training Data with Informed Adversaries",
  S&P 2022, arXiv 2201.04845.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    as_scalar,
    check_integer,
    check_nonnegative_finite,
    check_positive,
    check_probability,
)
from jaxaudit._validation.core import check_one_key
from jaxaudit.accounting import gaussian_marginals_privacy
from jaxaudit.attacks.result import AttackResult, attack_result
from jaxaudit.attacks.tabular import Table, check_table, load_fair

__all__ = [
    "MAX_MEMORY_BYTES",
    "MarginalsGame",
    "check_marginals_arguments",
    "marginals_memory",
    "marginals_game",
    "release_marginals",
    "marginals_posterior",
    "hamming_guess",
    "marginals_reconstruction",
]

PRIOR_SMOOTHING = 1.0

#: Largest working memory (bytes) of one attack (:func:`marginals_memory`); larger games are
#: refused before any work. The posterior compares every pair of hidden values for every
#: target, so memory grows as n·H² with H the number of hidden combinations: five or more
#: hidden attributes of the Fair table reach tens to hundreds of GiB.
MAX_MEMORY_BYTES = 2 * 2**30


class MarginalsGame(NamedTuple):
    """Everything the informed adversary knows, and the truth (numpy arrays).

    Attributes:
      sizes: (A,) number of levels of each released attribute.
      subsets: (m, k) attribute positions of each marginal.
      offsets: (m,) start of each marginal in the flat release vector.
      release_size: length of the flat release vector.
      hidden_values: (H, |hidden|) every combination of the hidden attributes' codes.
      target_cells: (n, H, m) flat cell index of target i's record when its hidden value is h.
      rest_counts: (release_size,) exact marginals of the non-target rows.
      log_prior: (n, H) log D_i(h).
      truth: (n,) index in ``hidden_values`` of each target's hidden value.
    """

    sizes: np.ndarray
    subsets: np.ndarray
    offsets: np.ndarray
    release_size: int
    hidden_values: np.ndarray
    target_cells: np.ndarray
    rest_counts: np.ndarray
    log_prior: np.ndarray
    truth: np.ndarray


def _cells(codes: np.ndarray, sizes, subsets, offsets) -> np.ndarray:
    """(..., m) flat cell index of records ``codes`` (..., A) in every marginal."""
    out = []
    for s, off in zip(subsets, offsets):
        idx = np.zeros(codes.shape[:-1], dtype=np.int64)
        for a in s:
            idx = idx * sizes[a] + codes[..., a]
        out.append(idx + off)
    return np.stack(out, axis=-1)


def marginals_memory(sizes, num_hidden: int, way: int, num_targets: int,
                     hidden_values: int) -> int:
    """Estimated peak working memory (bytes) of one attack: the (n, H, H) boolean comparison
    in :func:`marginals_posterior` and the einsum's buffer (2nH²), the (n, H, m) cells and
    their expected values (16nHm), the (n, H, A) records (8nHA) and the (H, H) Hamming balls
    (H²(h + 16)), with n targets, H hidden combinations, h hidden attributes, A released
    attributes and m marginals. Within a factor 1.3 above the measured peak at H = 720 and
    3.4 GiB measured for the smallest five hidden attributes of Fair at n = 100
    (tests/attacks/test_marginals_attack.py checks it against tracemalloc)."""
    a = len(sizes)
    m = math.comb(a, int(way))
    n, big_h = int(num_targets), int(hidden_values)
    return (2 * n * big_h**2 + 16 * n * big_h * m + 8 * n * big_h * a
            + big_h**2 * (int(num_hidden) + 16))


def _check_names(**names: Sequence[str]) -> None:
    """Refuse a bare string where a sequence of column names is expected ("age" is not the
    columns "a", "g", "e")."""
    for name, value in names.items():
        if isinstance(value, str | bytes):
            raise ArgumentTypeError(f"{name} must be a sequence of column names, not a string: "
                                    f"got {value!r} (write [{value!r}] for one column)")


def check_marginals_arguments(table: Table, *, attributes: Sequence[str],
                              hidden_attributes: Sequence[str], way: int = 2,
                              num_targets: int = 100, distance: int = 0) -> None:
    """Every check of the game's arguments, before any work (no game is built): the table
    (:func:`jaxaudit.attacks.tabular.check_table`), the names, ``way``, ``num_targets``,
    ``distance`` and the working memory (:func:`marginals_memory` ≤ :data:`MAX_MEMORY_BYTES`).

    Raises:
      TypeError: ``table`` is not a :class:`Table`; ``attributes`` or ``hidden_attributes`` is
        a string.
      ValueError: naming the argument (for the table: the column and the bad code).
    """
    check_table(table)
    _check_names(attributes=attributes, hidden_attributes=hidden_attributes)
    attributes, hidden = list(attributes), list(hidden_attributes)
    for name in attributes:
        if name not in table.columns:
            raise ValueError(f"attributes: unknown column {name!r}; columns are {table.columns}")
    if len(set(attributes)) != len(attributes):
        raise ValueError(f"attributes must be distinct, got {attributes}")
    if not hidden or not set(hidden) <= set(attributes) or len(set(hidden)) != len(hidden):
        raise ValueError(f"hidden_attributes must be a non-empty set of distinct released columns, "
                         f"got {hidden} (attributes: {attributes})")
    way = check_integer("way", way, minimum=1)
    if way > len(attributes):
        raise ValueError(f"way must be an integer in [1, {len(attributes)}], got {way!r}")
    n_rows = np.shape(table.codes)[0]
    num_targets = check_integer("num_targets", num_targets, minimum=1)
    if num_targets >= n_rows:
        raise ValueError(f"num_targets must be an integer in [1, {n_rows - 1}], got {num_targets!r}")
    distance = check_integer("distance", distance, minimum=0)
    if distance >= len(hidden):
        raise ValueError(f"distance must be below the number of hidden columns "
                         f"(hidden_attributes: {len(hidden)}), got {distance}: every guess "
                         "would succeed")
    sizes = [len(table.levels[table.columns.index(a)]) for a in attributes]
    combos = math.prod(len(table.levels[table.columns.index(h)]) for h in hidden)
    need = marginals_memory(sizes, len(hidden), way, num_targets, combos)
    if need > MAX_MEMORY_BYTES:
        raise ValueError(
            f"hidden_attributes {hidden} have {combos} value combinations: the attack on {num_targets} "
            f"targets needs about {need / 2**30:.1f} GiB (the limit is "
            f"{MAX_MEMORY_BYTES / 2**30:g} GiB; memory grows as num_targets x combinations^2); "
            "hide fewer columns or lower num_targets")


def marginals_game(key: jax.Array, table: Table, *, attributes: Sequence[str],
                   hidden_attributes: Sequence[str], way: int = 2,
                   num_targets: int = 100) -> MarginalsGame:
    """Pick n target rows, draw their hidden values from D_i, and set up the release.

    Args:
      key: PRNG key (targets, then their hidden values).
      table: a :class:`jaxaudit.attacks.Table`.
      attributes: names of the released attributes (the marginals range over them).
      hidden_attributes: names of the attributes to reconstruct (a subset of ``attributes``).
      way: k of the k-way marginals (1 ≤ k ≤ len(attributes)).
      num_targets: n.

    Returns:
      :class:`MarginalsGame`.
    """
    check_one_key("key", key)
    _check_names(attributes=attributes, hidden_attributes=hidden_attributes)
    attributes, hidden = list(attributes), list(hidden_attributes)
    check_marginals_arguments(table, attributes=attributes, hidden_attributes=hidden, way=way,
                              num_targets=num_targets)
    way, num_targets = int(way), int(num_targets)
    n_rows = np.shape(table.codes)[0]
    col = [table.columns.index(a) for a in attributes]
    codes = np.asarray(table.codes)[:, col].astype(np.int64)
    sizes = np.array([len(table.levels[c]) for c in col])
    hid = np.array([attributes.index(h) for h in hidden])
    qi = np.array([a for a in range(len(attributes)) if a not in hid], dtype=np.int64)
    subsets = np.array(list(itertools.combinations(range(len(attributes)), int(way))))
    widths = np.array([np.prod(sizes[s]) for s in subsets])
    offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
    hidden_values = np.array(list(itertools.product(*[range(sizes[h]) for h in hid])))
    n_hid = hidden_values.shape[0]

    k_targets, k_hidden = jax.random.split(key)
    targets = np.sort(np.asarray(jax.random.choice(k_targets, n_rows, (int(num_targets),),
                                                   replace=False)))
    rest = np.ones(n_rows, bool)
    rest[targets] = False
    rest_codes = codes[rest]

    # Population prior from the non-target rows.
    def hid_index(c):
        idx = np.zeros(c.shape[:-1], np.int64)
        for h in hid:
            idx = idx * sizes[h] + c[..., h]
        return idx

    def qi_key(c):
        idx = np.zeros(c.shape[:-1], np.int64)
        for a in qi:
            idx = idx * sizes[a] + c[..., a]
        return idx

    marginal_h = np.bincount(hid_index(rest_codes), minlength=n_hid).astype(np.float64)
    marginal_h /= marginal_h.sum()
    rest_q, rest_h = qi_key(rest_codes), hid_index(rest_codes)
    target_q = qi_key(codes[targets])
    cond = np.zeros((len(targets), n_hid))
    for i, qk in enumerate(target_q):
        sel = rest_q == qk
        cond[i] = np.bincount(rest_h[sel], minlength=n_hid)
    prior = (cond + PRIOR_SMOOTHING * marginal_h) / (cond.sum(1, keepdims=True) + PRIOR_SMOOTHING)
    # hidden_values is in the same (row-major) order as hid_index.

    u = np.asarray(jax.random.uniform(k_hidden, (len(targets),), dtype=np.float32),
                   dtype=np.float64)
    truth = np.minimum((np.cumsum(prior, axis=1) < u[:, None]).sum(1), n_hid - 1)

    base = np.repeat(codes[targets][:, None, :], n_hid, axis=1)  # (n, H, A)
    base[:, :, hid] = hidden_values[None, :, :]
    target_cells = _cells(base, sizes, subsets, offsets)
    release_size = int(widths.sum())
    rest_counts = np.bincount(_cells(rest_codes, sizes, subsets, offsets).ravel(),
                              minlength=release_size).astype(np.float64)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    return MarginalsGame(sizes, subsets, offsets, release_size, hidden_values, target_cells,
                         rest_counts, log_prior, truth.astype(np.int64))


def release_marginals(key: jax.Array, game: MarginalsGame, noise_multiplier: float
                      ) -> np.ndarray:
    """The noisy release: exact marginals of rest + targets (with their true hidden values) plus
    N(0, σ²) per cell, σ = ``noise_multiplier`` (a cell count's sensitivity is 1, so σ is the
    per-cell standard deviation). Returns a (release_size,) float64 vector.

    Raises:
      ValueError: ``noise_multiplier`` negative, NaN or infinite (TypeError: not a number).
    """
    check_one_key("key", key)
    sigma = as_scalar("noise_multiplier", noise_multiplier)
    check_nonnegative_finite("noise_multiplier", sigma)
    n = game.truth.shape[0]
    cells = game.target_cells[np.arange(n), game.truth]  # (n, m)
    counts = game.rest_counts + np.bincount(cells.ravel(), minlength=game.release_size)
    noise = np.asarray(jax.random.normal(key, (game.release_size,), dtype=np.float32),
                       dtype=np.float64)
    return counts + float(sigma) * noise


def marginals_posterior(game: MarginalsGame, release: ArrayLike, noise_multiplier: float
                        ) -> np.ndarray:
    """log π_i(h), normalised, for every target and hidden value: (n, H) (see module docstring).

    σ = ``noise_multiplier`` (the per-cell standard deviation); σ = 0 (no noise) is evaluated
    as the limit σ → 0 (σ² = 1e−12).

    Raises:
      ValueError: ``noise_multiplier`` negative, NaN or infinite (TypeError: not a number).
    """
    sigma = as_scalar("noise_multiplier", noise_multiplier)
    check_nonnegative_finite("noise_multiplier", sigma)
    sigma2 = max(float(sigma) ** 2, 1e-12)
    y = np.asarray(release, dtype=np.float64)
    prior = np.exp(game.log_prior)  # (n, H)
    m = game.target_cells.shape[2]
    weights = np.broadcast_to(prior[:, :, None], game.target_cells.shape)
    mean_total = np.zeros(game.release_size)
    np.add.at(mean_total, game.target_cells, weights)
    # Per-cell variance of the other targets' contributions: Σ_j Ē_j[c](1 − Ē_j[c]).
    var_total = np.zeros(game.release_size)
    n = prior.shape[0]
    own = np.empty(game.target_cells.shape)  # Ē_i at target i's cells
    for s in range(m):
        cells = game.target_cells[:, :, s]  # (n, H)
        same = cells[:, :, None] == cells[:, None, :]
        own[:, :, s] = np.einsum("ihk,ik->ih", same, prior)
    # Ē_i(1 − Ē_i) summed over each target's distinct cells (each cell counted once).
    for i in range(n):
        c, first = np.unique(game.target_cells[i].ravel(), return_index=True)
        e = own[i].ravel()[first]
        var_total[c] += e * (1.0 - e)
    resid = y - game.rest_counts - mean_total  # r_i without the +Ē_i correction
    logits = game.log_prior.copy()
    for s in range(m):
        cells = game.target_cells[:, :, s]
        e_i = own[:, :, s]
        v = sigma2 + np.maximum(var_total[cells] - e_i * (1.0 - e_i), 0.0)
        logits += (resid[cells] + e_i - 0.5) / v
    logits -= logits.max(axis=1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def _balls(hidden_values: np.ndarray, distance: int) -> np.ndarray:
    ham = (hidden_values[:, None, :] != hidden_values[None, :, :]).sum(-1)
    return (ham <= distance).astype(np.float64)  # (H, H), symmetric


def hamming_guess(log_post: ArrayLike, hidden_values: ArrayLike, distance: int) -> np.ndarray:
    """argmax_z Σ_{h: Ham(h, z) ≤ d} π(h) for every row of ``log_post`` (z over all H values)."""
    balls = _balls(np.asarray(hidden_values), int(distance))
    return np.argmax(np.exp(np.asarray(log_post)) @ balls, axis=1)


def marginals_reconstruction(key: jax.Array, *, rho: float, attributes: Sequence[str],
                             hidden_attributes: Sequence[str], distance: int = 0,
                             way: int = 2, num_targets: int = 100, delta: float = 1e-5,
                             gamma: float = 0.05, table: Table | None = None) -> AttackResult:
    """Release ρ-zCDP Gaussian k-way marginals and reconstruct the targets' hidden attributes.

    Args:
      key: PRNG key (targets and their hidden values; the noise).
      rho: ρ > 0 of zCDP (inf: no noise).
      attributes: released attribute names (marginals over all ``way``-subsets of them).
      hidden_attributes: attribute names to reconstruct (subset of ``attributes``); the others
        are the
        targets' known quasi-identifiers.
      distance: d ≥ 0: success when the guess is within Hamming distance d of the truth
        (0 = exact reconstruction).
      way: k of the k-way marginals.
      num_targets: n.
      delta: δ of the reported (ε, δ) point.
      gamma: level of the count bound.
      table: a :class:`jaxaudit.attacks.Table` (default :func:`jaxaudit.attacks.load_fair`).

    Returns:
      :class:`AttackResult` (priors p_i = best Hamming-ball prior mass of each target).

    Raises:
      ValueError: bad arguments (named).

    Examples:
      >>> import jax
      >>> r = marginals_reconstruction(jax.random.key(0), rho=1.0,
      ...     attributes=["age", "educ", "religious", "occupation"],
      ...     hidden_attributes=["religious", "occupation"], num_targets=20)
      >>> bool(r.successes <= 20)
      True
    """
    check_one_key("key", key)
    check_positive("rho", rho)
    check_probability("delta", delta, open_low=True, open_high=True)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    table = load_fair() if table is None else table
    check_marginals_arguments(table, attributes=attributes, hidden_attributes=hidden_attributes,
                              way=way, num_targets=num_targets, distance=distance)
    distance = int(distance)
    k_game, k_noise = jax.random.split(key)
    game = marginals_game(k_game, table, attributes=attributes,
                          hidden_attributes=hidden_attributes, way=way, num_targets=num_targets)
    profile = gaussian_marginals_privacy(rho=rho, num_tables=len(game.subsets), delta=delta)
    release = release_marginals(k_noise, game, profile.noise_multiplier)
    log_post = marginals_posterior(game, release, profile.noise_multiplier)
    guess = hamming_guess(log_post, game.hidden_values, int(distance))
    balls = _balls(game.hidden_values, int(distance))
    hits = balls[guess, game.truth] > 0
    priors = np.minimum(1.0, (np.exp(game.log_prior) @ balls).max(axis=1))
    return attack_result(hits, priors, profile, gamma=gamma, top_prior=float(priors.max()),
                         median_prior=float(np.median(priors)))
