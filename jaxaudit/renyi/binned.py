"""A rigorous RDP lower bound from binned scores (data processing on a partition of the line).

For any partition of the real line into bins B_1, ..., B_k fixed before the evaluation data are
seen, the data-processing inequality gives

    D_α(Q‖P) ≥ D_α(q‖p) = 1/(α−1) log Σ_j q_j^α p_j^{1−α},   q_j = Q(B_j), p_j = P(B_j),

and likewise D_α(P‖Q) ≥ D_α(p‖q). A threshold test is the case k = 2; more bins keep more of
the likelihood ratio of a one-dimensional score, at the price of more bin probabilities to bound.

Protocol (the honest split of the threshold baselines): each world is shuffled (a numpy
generator seeded from the PRNG key) and split into a *selection* and an *evaluation* part. On the selection part only:

  * the partition: k = 2 is the best threshold test, chosen exactly as
    ``threshold_renyi_lower_bound`` chooses it; k ≥ 3 uses the k-quantiles of the pooled
    selection scores (label-free; fewer bins when scores tie);
  * for every bin the side of its likelihood ratio ("Q-heavy" when (x_j + ½)/(n_Q + 1) ≥
    (y_j + ½)/(n_P + 1)), and one bin left unconstrained (the one whose ratio is closest to 1);
  * among several candidate k, the one whose partition, built on one half of the selection part,
    has the best bound on the other half (scored on the data it was chosen on, the best
    threshold would win too often by its winner's curse); that k is then rebuilt on the whole
    selection part.

On the evaluation part (n_Q, n_P scores, bin counts x_j, y_j), one-sided Clopper–Pearson
bounds at failure probability s/m each, m = 2(k − 1) (Bonferroni over the kept bins of both
worlds; s = 1 − confidence):

    Q-heavy bin j:  q_j ≥ CP_lo(x_j; n_Q),  p_j ≤ CP_hi(y_j; n_P),
    other bins:     q_j ≤ CP_hi(x_j; n_Q),  p_j ≥ CP_lo(y_j; n_P).

With probability ≥ 1 − s the true (q, p) lies in C = (box_Q ∩ simplex) × (box_P ∩ simplex), so
min_C D_α(q‖p) and min_C D_α(p‖q), and their maximum, are lower bounds of max(D_α(Q‖P),
D_α(P‖Q)) at confidence 1 − s (one event serves both directions). The direction of each one-sided
bound is the one the minimiser pushes against (it moves q towards p), and the empirical
frequencies always lie in C, so C is never empty. With k = 2 the single kept bin of a world is
the threshold test's rate, the set is the threshold test's rectangle, and the bound is
``threshold_renyi_lower_bound``'s: max(d_α(TPR_lo‖FPR_hi), d_α(FPR_hi‖TPR_lo)), CP at s/2.

The minimisation. f(q, p) = Σ_j q_j^α p_j^{1−α} is jointly convex for α > 1 (a sum of
perspectives of x^α), so min_C f is a convex program. The returned value is a *dual* value,
which weak duality certifies whatever the optimiser did: for any multipliers (λ, μ) of the two
sum constraints,

    min_C f ≥ d(λ, μ) = λ + μ + Σ_j min_{(q_j, p_j) ∈ R_j} [q_j^α p_j^{1−α} − λ q_j − μ p_j],

with R_j the rectangle of bin j. The bracket is positively 1-homogeneous in (q_j, p_j), hence
linear on every ray from the origin, so its minimum over R_j lies on the boundary; on each of the
four edges it is a one-dimensional convex minimisation with a closed-form minimiser (q = c ·
(λ/α)^{1/(α−1)} on an edge p = c, p = a · ((α−1)/(−μ))^{1/α} on an edge q = a), so d(λ, μ) is
evaluated exactly. An optimal pair has λ ≥ 0 ≥ μ (∂f/∂q_j ≥ 0 ≥ ∂f/∂p_j), and d is maximised in
the scale-free coordinates λ = α u^{α−1}, μ = −(α−1) w^α (u, w: the optimal ratios q/p on the
two kinds of edges; u = w = r when the free bins share the ratio r) by a 41 × 41 grid over
(log u, log w) ∈ [−40, 40]² refined by 18 successive 4-fold zooms, and at the water levels
(u, w) of alternating exact minimisation over q and over p (which are the optimal multipliers
at the primal optimum, and find narrow ridges of the dual at large α that the grid misses).
Strong duality holds (convex objective, linear constraints), so the maximum is the minimum; the
search only decides how close the value gets (within 1e−8 relative of an independent primal
solution in the tests). A bound on the float64 rounding error of d is subtracted from it, and
since f ≥ 1 on the simplex (Jensen), the bound is max(log d / (α − 1), 0) ≥ 0: a value that is
never above the true minimum.

References:
  van Erven, Harremoës, "Rényi Divergence and Kullback–Leibler Divergence", IEEE Trans. Inf.
  Theory 2014 (arXiv 1206.2459): data processing and joint convexity for α > 1.
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476).
  Clopper, Pearson, "The use of confidence or fiducial limits illustrated in the case of the
  binomial", Biometrika 1934.
  Kim, Alabi, Varshney (2026), arXiv 2605.21938 (the held-out DV audit this bound complements).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_finite,
    check_orders,
    check_probability,
    check_score_vector,
    host_seed,
    plain,
)
from jaxaudit.renyi.threshold_tests import (
    _binary_renyi_np,
    _cp_lower_np,
    _cp_upper_np,
    _split,
    refuse_traced,
)

__all__ = ["DEFAULT_BINS", "binned_renyi_lower_bound"]

#: Default candidate numbers of bins (chosen per order on the selection split).
DEFAULT_BINS = (2, 3, 4, 6, 8, 12)

#: Unit roundoff of float64.
_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------------------------
# The inner minimisation: min over boxes ∩ simplex of Σ q^α p^{1−α} (certified by duality).


def _scaled_perspective(q, p, alpha, log_scale):
    """q^α p^{1−α} e^{−log_scale}, with the closure conventions 0 at q = 0 and +inf at p = 0 < q."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        value = np.exp(alpha * np.log(q) + (1.0 - alpha) * np.log(p) - log_scale)
    return np.where(q <= 0.0, 0.0, np.where(p <= 0.0, np.inf, value))


def _rectangle_minima(log_u, log_w, box_q, box_p, alpha):
    """Per bin, e^{−L} min over q ∈ [a, b], p ∈ [c, d] of q^α p^{1−α} − λ q − μ p (exact).

    λ = α u^{α−1} > 0 and μ = −(α−1) w^α < 0 are given by ``log_u``, ``log_w`` of shape (G, 1);
    L = log max(λ, −μ) keeps every term finite. Returns (minima (G, k), λ e^{−L}, μ e^{−L}, L).
    """
    (a, b), (c, d) = box_q, box_p
    log_lam = np.log(alpha) + (alpha - 1.0) * log_u
    log_mu = np.log(alpha - 1.0) + alpha * log_w
    log_scale = np.maximum(log_lam, log_mu)
    lam, mu = np.exp(log_lam - log_scale), -np.exp(log_mu - log_scale)
    u, inv_w = np.exp(log_u), np.exp(-log_w)
    values = []
    with np.errstate(invalid="ignore"):
        # Edges p = const > 0: the minimiser is q = u p (clipped); on p = 0 only q = a can be
        # finite (0 when a = 0, else +inf).
        for p in (c, d):
            q = np.where(p > 0, np.clip(p * u, a, b), a)
            values.append(_scaled_perspective(q, p, alpha, log_scale) - lam * q - mu * p)
        # Edges q = const > 0: the minimiser is p = q / w (clipped); on q = 0 the bracket is
        # −μ p, smallest at p = c.
        for q in (a, b):
            p = np.where(q > 0, np.clip(q * inv_w, c, d), c)
            values.append(_scaled_perspective(q, p, alpha, log_scale) - lam * q - mu * p)
    return np.min(np.stack(values), axis=0), lam, mu, log_scale


#: Most grid points × bins evaluated at once by :func:`_dual_log_values` (bounds its memory:
#: about a dozen float64 arrays of this many entries, ~25 MB, whatever the number of bins).
_CHUNK_ENTRIES = 2**18


def _dual_log_values(log_u, log_w, box_q, box_p, alpha):
    """log d(λ, μ) ≤ log min f over the boxes ∩ simplices (weak duality), rounding removed.

    Vectorised over 1-D ``log_u``, ``log_w`` (within [−40, 40]), in chunks of at most
    ``_CHUNK_ENTRIES`` grid points × bins; −inf where d ≤ 0 or is not finite. The float64 error
    of d is bounded and subtracted: every summed term (λ, μ and per bin q^α p^{1−α}, λq, μp;
    their absolute values add up to at most Σ_j |min_j| + (2k + 1)(|λ| + |μ|)) carries a
    relative error of at most ε (|exponent| + 2|L| + k + 10), the exponent of q^α p^{1−α} e^{−L}
    being at most (2α − 1)(G + 40) + |L| in size with G the largest |log| of a positive box
    entry; four times this bound is subtracted.
    """
    log_u, log_w = np.atleast_1d(log_u), np.atleast_1d(log_w)
    k = box_q[0].size
    rows = max(1, _CHUNK_ENTRIES // max(k, 1))
    if log_u.size > rows:
        return np.concatenate([
            _dual_log_values(log_u[i:i + rows], log_w[i:i + rows], box_q, box_p, alpha)
            for i in range(0, log_u.size, rows)])
    log_u, log_w = log_u[:, None], log_w[:, None]
    minima, lam, mu, log_scale = _rectangle_minima(log_u, log_w, box_q, box_p, alpha)
    lam, mu, log_scale = lam[:, 0], mu[:, 0], log_scale[:, 0]
    entries = np.concatenate([*box_q, *box_p])
    entries = entries[entries > 0]
    largest_log = float(np.max(np.abs(np.log(entries)))) if entries.size else 0.0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        value = lam + mu + np.sum(minima, axis=1)
        magnitude = np.sum(np.abs(minima), axis=1) + (2.0 * k + 1.0) * (np.abs(lam) + np.abs(mu))
        relative = _EPS * ((2.0 * alpha - 1.0) * (largest_log + 40.0) + 3.0 * np.abs(log_scale)
                           + k + 10.0)
        value = value - 4.0 * relative * magnitude
        log_value = log_scale + np.log(np.where(value > 0, value, 0.0))
    return np.where(np.isnan(log_value) | (log_value == np.inf), -np.inf, log_value)


def _clipped_sums(points, base, lo, hi):
    """Σ_j clip(s · base_j, lo_j, hi_j) at every s in ``points`` (≥ 0), in O((k + m) log k).

    Entries with base_j = 0 contribute lo_j. For base_j > 0, with L_j = lo_j/base_j ≤
    H_j = hi_j/base_j: hi_j where H_j ≤ s, lo_j where L_j > s, s·base_j in between
    (cumulative sums over the sorted L and H; memory linear in k, not k × m).
    """
    pos = base > 0
    constant = float(np.sum(lo[~pos]))
    b, lo, hi = base[pos], lo[pos], hi[pos]
    by_h, by_l = np.argsort(hi / b), np.argsort(lo / b)
    h_sorted, l_sorted = (hi / b)[by_h], (lo / b)[by_l]
    zero = np.zeros(1)
    hi_cum = np.concatenate([zero, np.cumsum(hi[by_h])])
    b_by_h = np.concatenate([zero, np.cumsum(b[by_h])])
    lo_cum = np.concatenate([zero, np.cumsum(lo[by_l])])
    b_by_l = np.concatenate([zero, np.cumsum(b[by_l])])
    n_h = np.searchsorted(h_sorted, points, side="right")   # H_j ≤ s
    n_l = np.searchsorted(l_sorted, points, side="right")   # L_j ≤ s
    return (constant + hi_cum[n_h] + (lo_cum[-1] - lo_cum[n_l])
            + points * (b_by_l[n_l] - b_by_h[n_h]))


def _water_fill(base, lo, hi):
    """x = clip(s · base, lo, hi) with Σ x = 1 (exact; base ≥ 0, Σ lo ≤ 1 ≤ Σ hi); (x, s).

    Σ_j clip(s base_j, lo_j, hi_j) is piecewise linear and nondecreasing in s with breakpoints
    lo_j/base_j, hi_j/base_j: find the segment where it crosses 1 and interpolate.
    """
    pos = base > 0
    points = np.unique(np.concatenate([lo[pos] / base[pos], hi[pos] / base[pos]]))
    sums = _clipped_sums(points, base, lo, hi)
    j = int(np.searchsorted(sums, 1.0))
    if j == 0 or j == points.size:
        s = points[min(j, points.size - 1)]
    else:
        s = points[j - 1] + (1.0 - sums[j - 1]) * (points[j] - points[j - 1]) / (
            sums[j] - sums[j - 1])
    return np.clip(s * base, lo, hi), float(s)


def _alternating_multipliers(box_q, box_p, alpha, iterations):
    """Dual values at the water levels of alternating (block-coordinate) primal minimisation.

    For fixed p the minimiser over q is q = clip(u p, a, b) and for fixed q the minimiser over
    p is p = clip(q / w, c, d), both with Σ = 1; at the primal optimum these water levels (u, w)
    are optimal multipliers. The multipliers converge much faster than the primal iterates, and
    on narrow ridges of the dual (large α) they find the maximum where a grid does not.
    Returns the largest log dual value met.
    """
    (a, b), (c, d) = box_q, box_p
    p, _ = _water_fill(np.ones_like(c), c, d)
    best, stale = -np.inf, 0
    for _ in range(iterations):
        q, u = _water_fill(p, a, b)
        p, t = _water_fill(q, c, d)
        if not (u > 0 and t > 0):
            break
        value = float(_dual_log_values(np.log(u), -np.log(t), box_q, box_p, alpha)[0])
        if best == -np.inf or value > best + 1e-13 * max(abs(best), 1.0):
            best, stale = value, 0
        else:
            stale += 1
            if stale >= 5:
                break
    return best


def _min_log_sum(box_q, box_p, alpha, *, zooms=18, iterations=40):
    """A certified lower value of log min Σ q^α p^{1−α} over (box_q ∩ simplex) × (box_p ∩ simplex).

    Maximises the dual over λ > 0 > μ (optimal multipliers have these signs, or are their
    limits: at the optimum ∂f/∂q_j ≥ 0 ≥ ∂f/∂p_j) in the scale-free coordinates
    λ = α u^{α−1}, μ = −(α−1) w^α: a 41 × 41 grid over (log u, log w) ∈ [−40, 40]² refined by
    successive 4-fold zooms, and the water levels of alternating primal minimisation (see
    :func:`_alternating_multipliers`); the larger value is returned. Any (λ, μ) gives a valid
    value; the search only decides how close to the minimum it gets.

    Args:
      box_q: (lower, upper) arrays of the q_j (within [0, 1]).
      box_p: (lower, upper) arrays of the p_j.
      alpha: order α > 1.
      zooms: number of grid refinements (each shrinks the grid cell 4-fold).
      iterations: most alternating-minimisation steps (0: none).

    Returns:
      The largest log dual value found (≤ 0 means a vacuous bound).
    """
    alpha = float(alpha)
    centre, half, size = np.zeros(2), 40.0, 41
    best = -np.inf
    for _ in range(zooms + 1):
        axis = np.linspace(-1.0, 1.0, size)
        gx, gy = np.meshgrid(centre[0] + half * axis, centre[1] + half * axis, indexing="ij")
        values = _dual_log_values(gx.ravel(), gy.ravel(), box_q, box_p, alpha)
        i = int(np.argmax(values))
        if values[i] > best:
            best, centre = float(values[i]), np.array([gx.ravel()[i], gy.ravel()[i]])
        half, size = 4.0 * half / (size - 1), 17
    if iterations > 0:
        best = max(best, _alternating_multipliers(box_q, box_p, alpha, iterations))
    return best


def _min_divergence(box_q, box_p, alpha, **search):
    """Certified lower bound of min D_α(q‖p) over the boxes ∩ simplices, clipped at 0."""
    return max(_min_log_sum(box_q, box_p, alpha, **search) / (alpha - 1.0), 0.0)


# ----------------------------------------------------------------------------------------------
# Confidence sets for the bin probabilities and the selection protocol.


_cp_lower = _cp_lower_np
_cp_upper = _cp_upper_np


class _Partition(NamedTuple):
    """Bins (−∞, e_1), [e_1, e_2), ..., [e_{k−1}, ∞) (or (−∞, e_1], (e_1, e_2], ... when
    ``right_closed``) and the per-bin choices made on the selection split."""

    edges: np.ndarray         # (k − 1,) increasing
    heavy: np.ndarray         # (k,) bool: q_j ≥ p_j on the selection split
    dropped: int              # the bin without a constraint
    right_closed: bool = False


def _counts(scores, part):
    side = "left" if part.right_closed else "right"
    return np.bincount(np.searchsorted(part.edges, scores, side=side),
                       minlength=part.edges.size + 1)


def _boxes(x, n_q, y, n_p, part, significance):
    """One-sided CP boxes of (q, p) per bin; the dropped bin only has [0, 1]."""
    k = x.size
    level = significance / (2.0 * (k - 1))
    heavy = part.heavy
    q_lo = np.where(heavy, _cp_lower(x, n_q, level), 0.0)
    q_hi = np.where(heavy, 1.0, _cp_upper(x, n_q, level))
    p_lo = np.where(heavy, 0.0, _cp_lower(y, n_p, level))
    p_hi = np.where(heavy, _cp_upper(y, n_p, level), 1.0)
    j = part.dropped
    q_lo[j], q_hi[j], p_lo[j], p_hi[j] = 0.0, 1.0, 0.0, 1.0
    return (q_lo, q_hi), (p_lo, p_hi)


def _partition_bound(in_scores, out_scores, part, alpha, significance, **search):
    """max over directions of the certified min D_α over the confidence set (one event)."""
    x, y = _counts(in_scores, part), _counts(out_scores, part)
    box_q, box_p = _boxes(x, in_scores.size, y, out_scores.size, part, significance)
    forward = _min_divergence(box_q, box_p, alpha, **search)
    backward = _min_divergence(box_p, box_q, alpha, **search)
    return max(forward, backward)


def _orient(x, n_q, y, n_p):
    """Likelihood-ratio side of every bin and the bin closest to ratio 1 (smoothed counts)."""
    log_ratio = np.log((x + 0.5) / (n_q + 1.0)) - np.log((y + 0.5) / (n_p + 1.0))
    return log_ratio >= 0.0, int(np.argmin(np.abs(log_ratio)))


def _quantile_partition(in_sel, out_sel, k):
    pooled = np.concatenate([in_sel, out_sel])
    edges = np.unique(np.quantile(pooled, np.arange(1, k) / k))
    # An edge at the pooled minimum would leave bin 0 empty in both worlds: drop it.
    edges = edges[edges > pooled.min()]
    if edges.size == 0:
        return None
    part = _Partition(edges, np.ones(edges.size + 1, bool), 0)
    heavy, dropped = _orient(_counts(in_sel, part), in_sel.size, _counts(out_sel, part),
                             out_sel.size)
    return _Partition(edges, heavy, dropped)


def _binary_bound(tpr_lo, fpr_hi, alpha):
    """max(d_α(TPR_lo‖FPR_hi), d_α(FPR_hi‖TPR_lo)) when TPR_lo > FPR_hi, else 0 (vectorised)."""
    powered = tpr_lo > fpr_hi
    p, q = np.where(powered, tpr_lo, 0.5), np.where(powered, fpr_hi, 0.5)
    value = np.fmax(_binary_renyi_np(p, q, alpha), _binary_renyi_np(q, p, alpha))
    return np.where(powered, np.nan_to_num(np.maximum(value, 0.0), posinf=np.inf), 0.0)


def _threshold_partition(in_sel, out_sel, alpha, significance, max_candidates=512):
    """The 2-bin partition of the best threshold test on the selection split.

    Candidates and objective are those of ``threshold_renyi_lower_bound``: thresholds t among
    the distinct pooled selection scores (512 of their quantiles when there are more), the test
    "in iff score ≥ t" or "in iff score ≤ t", scored by max(d_α(TPR_lo‖FPR_hi),
    d_α(FPR_hi‖TPR_lo)) at one-sided Clopper–Pearson bounds (significance/2 each); ties go to
    the first test, the "≥" side and, on the "≤" side, the larger t.
    """
    pooled = np.unique(np.concatenate([in_sel, out_sel]))
    values = pooled
    if values.size > max_candidates:
        values = np.unique(np.quantile(values, np.linspace(0.0, 1.0, max_candidates)))
    # "score ≥ t": the upper bin of [t, ∞) (t = min would leave the other bin empty);
    # "score ≤ t": the lower bin of (−∞, t] (t = max likewise).
    up_edges, low_edges = values[values > pooled[0]], values[values < pooled[-1]]
    if up_edges.size == 0:
        return None
    n_q, n_p = in_sel.size, out_sel.size
    sorted_q, sorted_p = np.sort(in_sel), np.sort(out_sel)
    at_least = lambda x, t: x.size - np.searchsorted(x, t, side="left")
    at_most = lambda x, t: np.searchsorted(x, t, side="right")
    level = significance / 2.0
    upper = _binary_bound(_cp_lower(at_least(sorted_q, up_edges), n_q, level),
                          _cp_upper(at_least(sorted_p, up_edges), n_p, level), alpha)
    lower = _binary_bound(_cp_lower(at_most(sorted_q, low_edges), n_q, level),
                          _cp_upper(at_most(sorted_p, low_edges), n_p, level), alpha)
    i_up = int(np.argmax(upper))
    i_low = lower.size - 1 - int(np.argmax(lower[::-1]))
    if upper[i_up] >= lower[i_low]:
        return _Partition(up_edges[i_up:i_up + 1], np.array([False, True]), 0)
    return _Partition(low_edges[i_low:i_low + 1], np.array([True, False]), 1, right_closed=True)


def _check_bins(bins, n_scores: int) -> tuple[int, ...]:
    """Candidate numbers of bins: ints in [2, n_scores], n_scores the size of the smaller world
    (more bins than scores leave bins empty by construction, and the dual search's cost grows
    with the number of bins)."""
    arr = np.asarray(bins)
    if arr.ndim > 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"bins must be an int or a 1-D array of ints >= 2, got {plain(bins)}")
    if (arr < 2).any():
        raise ValueError(f"bins must be >= 2, got {plain(bins)}")
    if (arr > n_scores).any():
        raise ValueError(f"bins must be <= {n_scores}, the number of scores in the smaller "
                         f"world, got {plain(int(arr.max()))}")
    return tuple(int(k) for k in np.unique(arr))


def _candidate(in_sel, out_sel, k, alpha, significance):
    if k == 2:
        return _threshold_partition(in_sel, out_sel, alpha, significance)
    return _quantile_partition(in_sel, out_sel, k)


def _select(in_sel, out_sel, alpha, candidates, significance):
    """The partition for the best candidate k, compared on the selection split."""
    if len(candidates) == 1:
        return _candidate(in_sel, out_sel, candidates[0], alpha, significance)
    # Build each candidate on one half of the selection split and compare the candidates on the
    # other half (scored on the data it was chosen on, the best threshold would be favoured by
    # its winner's curse); then build the chosen k on the whole selection split.
    h_in, h_out = in_sel.size // 2, out_sel.size // 2
    fit_in, score_in = in_sel[:h_in], in_sel[h_in:]
    fit_out, score_out = out_sel[:h_out], out_sel[h_out:]
    best_k, best_value = None, -np.inf
    for k in candidates:
        part = _candidate(fit_in, fit_out, k, alpha, significance)
        if part is None:
            continue
        value = _partition_bound(score_in, score_out, part, alpha, significance, zooms=4,
                                 iterations=0)
        if value > best_value:
            best_k, best_value = k, value
    return None if best_k is None else _candidate(in_sel, out_sel, best_k, alpha, significance)


def binned_renyi_lower_bound(key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike,
                             orders: ArrayLike, *, bins: int | tuple[int, ...] = DEFAULT_BINS,
                             confidence: float = 0.95,
                             selection_fraction: float = 0.5) -> np.ndarray:
    """Rigorous RDP lower bound from binned scores: min of D_α(q‖p) over a confidence set.

    D_α(Q‖P) ≥ D_α(q‖p) = 1/(α−1) log Σ_j q_j^α p_j^{1−α} for the bin probabilities of a
    partition fixed on a selection split; on the evaluation split the bin probabilities lie in
    one-sided Clopper–Pearson boxes (Bonferroni over 2(k−1) bins at total failure
    probability 1 − ``confidence``), and the bound is the certified minimum over the boxes ∩ simplices,
    the larger of the two directions (see the module docstring for the protocol and the
    duality certificate). With ``bins=2`` it is the threshold bound of
    ``threshold_renyi_lower_bound`` (same threshold choice, same levels; equal up to ~1e−9
    relative, the certified float64 margin). Cost: one small dual solve per order (timing in
    benchmarks/README.md).

    With probability ≥ ``confidence`` over the evaluation split,
    max(D_α(in‖out), D_α(out‖in)) ≥ the returned value, for each order separately.

    Args:
      key: PRNG key of the selection/evaluation split (a numpy generator seeded from its key
        data; ``jax.random.key(s)`` splits as the seed ``s``).
      in_scores: 1-D scores of runs with the canary (Q), at least 4.
      out_scores: 1-D scores of runs without (P), at least 4.
      orders: order α > 1, or a 1-D array of orders (the partition is chosen per order).
      bins: number of bins k ≥ 2, or a 1-D int array of candidates (the one with the best bound
        on the selection split is used, per order); at most the number of scores of the smaller
        world, else ValueError (memory stays linear in k: the dual grid is evaluated in
        chunks). The default candidates above that number are skipped. k = 2 uses the best threshold; k ≥ 3 the
        k-quantiles of the pooled selection scores (fewer bins when scores tie).
      confidence: joint coverage in (0, 1) (total failure probability 1 − confidence).
      selection_fraction: fraction of each world used to choose the partition, in (0, 1).

    Returns:
      float64 array of lower bounds (≥ 0) with the shape of ``orders``.

    Examples:
      >>> rng = np.random.default_rng(0)
      >>> a, b = rng.normal(1.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000)
      >>> import jax
      >>> lower = binned_renyi_lower_bound(jax.random.key(0), a, b, [1.5, 2.0])
      >>> bool((lower > 0).all() and (lower <= [0.75, 1.0]).all())
      True
    """
    refuse_traced("binned_renyi_lower_bound", key=key, in_scores=in_scores,
                  out_scores=out_scores, orders=orders)
    seed = host_seed(key)
    in_scores = check_score_vector("in_scores", in_scores)
    out_scores = check_score_vector("out_scores", out_scores)
    alphas = check_finite("orders", orders)
    check_orders("orders", alphas)  # a scalar keeps its 0-d shape (and a scalar result)
    n_scores = min(in_scores.size, out_scores.size)
    if bins is DEFAULT_BINS:   # the library's default: only the candidates the data allow
        bins = tuple(k for k in DEFAULT_BINS if k <= n_scores)
    candidates = _check_bins(bins, n_scores)
    confidence = float(check_probability("confidence", confidence, open_low=True,
                                         open_high=True))
    significance = 1.0 - confidence
    selection_fraction = float(check_probability("selection_fraction", selection_fraction,
                                                 open_low=True, open_high=True))
    rng = np.random.default_rng(seed)
    in_sel, in_eval = _split(rng, in_scores, selection_fraction)
    out_sel, out_eval = _split(rng, out_scores, selection_fraction)
    out = []
    for a in np.atleast_1d(alphas):
        part = _select(in_sel, out_sel, float(a), candidates, significance)
        out.append(0.0 if part is None else
                   _partition_bound(in_eval, out_eval, part, float(a), significance))
    return np.asarray(out, dtype=np.float64).reshape(alphas.shape)
