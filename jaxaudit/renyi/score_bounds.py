"""Every score-based ε lower bound side by side (docs/renyi.md, "Score-based ε bounds").

Input: canary scores from many audits, ``in_scores`` (runs trained with the canary) and
``out_scores`` (without); a test says "in" when the score is high, so scores must be oriented
"higher = member" (e.g. the negated loss of the canary, not the loss). Scores whose in-world
values rank below the out-world ones beyond chance (:func:`warn_if_reversed`) draw a
``UserWarning``: the one-run audits guess "in" only for the top scores and give 0 on reversed
scores.

  * Clopper–Pearson threshold bound (Jagielski, Ullman, Oprea, arXiv 2006.07709) and the GDP
    threshold method (Nasr et al., arXiv 2302.07956): reused from
    :mod:`jaxaudit.renyi.threshold_tests` (held-out threshold selection).
  * One-run audit (Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training Run",
    arXiv 2305.08846, Theorem 3.1 / Proposition 5.2 with δ): the m = n_in + n_out scores are m
    canaries, each included with probability 1/2 (the in-world scores are the included ones).
    Guessing "in" for the r top-scored canaries, v of them correctly, the (ε, δ)-DP claim is
    rejected with failure probability β when

        p(ε) = P[Bin(r, q) ≥ v] + 2 m δ max_{1≤i≤v} P[v − i ≤ Bin(r, q) < v] / i ≤ β,
        q = e^ε / (1 + e^ε);

    the bound is the largest such ε (bisection; p increases with ε).
  * f-DP one-run audit (Mahloujifar, Melis, Chaudhuri, "Auditing f-Differential Privacy in One
    Run", arXiv 2410.22235, Algorithm "audit_rh_with_cap") for the Gaussian family
    f = G_μ (f⁻¹-blow-up x ↦ Φ(Φ⁻¹(x) − μ)): the largest rejected μ, then ε = ε_μ(δ).

Both one-run audits are one-sided (guesses only "in", k₋ = 0) and take the best of K tests
with a Bonferroni correction β/K: by default (``bonferroni="grid"``) top-r guesses for r on a
fixed geometric grid (K ≤ 40; valid); or the thresholds at the vertices of the ROC's concave
hull, as google-deepmind/jax_privacy's ``CanaryScoreAuditor`` does, with K = m + 1 (``"all"``;
valid) or K = the number of hull vertices (``"hull"``, jax_privacy's default, which reproduces
its published numbers). The traceable cores
(:func:`_one_run_p_value`, :func:`_one_run_epsilon`, :func:`_fdp_one_run_objective`,
:func:`_fdp_one_run_mu`) work under jit/vmap in float64. The driver
(:func:`epsilon_lower_bounds`) is host-side (the hull and the threshold-side bounds have
data-dependent sizes) and evaluates the same formulas in float64 numpy/scipy
(``_*_host`` twins of the cores, checked against them), so it compiles nothing per size.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp_special
from jax.scipy.stats import norm
from jax.typing import ArrayLike
from scipy import special as sp_special

from jaxaudit._validation import (
    as_scalar,
    check_choice,
    check_orders,
    check_probability,
    check_score_vector,
    host_seed,
)
from jaxaudit._validation.core import check_one_key
from jaxaudit.renyi.binned import binned_renyi_lower_bound
from jaxaudit.renyi.threshold_tests import (
    clopper_pearson_epsilon_lower_bound,
    gdp_epsilon_lower_bound,
    refuse_traced,
    threshold_renyi_lower_bound,
)
from jaxaudit.stats.gdp import gdp_epsilon_host

__all__ = ["ScoreBounds", "epsilon_lower_bounds", "warn_if_reversed"]

#: Minimum number of scores per world (the threshold methods split each world in two).
MIN_SCORES = 8
#: Bisection steps of the one-run cores (float64; brackets below).
_STEPS = 64
#: Upper ends of the bisection brackets: ε ≤ 100 for the one-run audit, μ ≤ 40 for the f-DP
#: one (Φ(z − 40) underflows in float64); a bound at the cap is reported as the cap.
_EPS_CAP = 100.0
_MU_CAP = 40.0


class ScoreBounds(NamedTuple):
    """Result of :func:`epsilon_lower_bounds` (0-d float64 arrays; ``orders`` 1-d).

    Bounds (hold with probability ≥ ``confidence`` each, for any mechanism):
      clopper_pearson: ε at δ from a held-out threshold test (Jagielski et al.).
      one_run: ε at δ from the one-run audit (Steinke et al.).
      mu: μ lower bound of the GDP parameter (Nasr et al.'s threshold method).
      fdp_one_run_mu: μ lower bound of the GDP parameter from the f-DP one-run audit.
      threshold_rdp, binned_rdp: ε_α lower bounds (RDP units) at ``orders`` (NaN-free; empty
      arrays when ``include_rdp=False``).

    Estimates (bounds only if the mechanism's trade-off curve is exactly Gaussian, e.g. the
    Gaussian mechanism or full-batch DP-GD; otherwise an (ε, δ)-DP mechanism can be far from
    μ-GDP and these can exceed its true ε):

      gdp_epsilon: ε at δ of μ-GDP with μ = ``mu``.
      fdp_one_run: ε at δ of μ-GDP with μ = ``fdp_one_run_mu``.

    Also: orders (the Rényi orders of the RDP fields), num_tests (K: the one-run audits take
    the best of their thresholds, each at failure probability (1 − confidence)/K; see
    ``bonferroni``),
    one_run_canaries (m, the number of scores the one-run audits count as canaries, each taken
    as included by an independent fair coin: 2 min(n_in, n_out) for ``inclusion="fixed"``,
    n_in + n_out for ``inclusion="coin"``).
    """

    clopper_pearson: np.ndarray
    one_run: np.ndarray
    mu: np.ndarray
    gdp_epsilon: np.ndarray
    fdp_one_run_mu: np.ndarray
    fdp_one_run: np.ndarray
    orders: np.ndarray
    threshold_rdp: np.ndarray
    binned_rdp: np.ndarray
    num_tests: np.ndarray
    one_run_canaries: np.ndarray


# ----------------------------------------------------------------------------- traceable cores


def _one_run_p_value(m, n_guess, n_correct, eps, delta, length):
    """p(ε) of the one-run audit (module docstring). Unvalidated, traceable (float64 advised).

    ``length`` (static, :func:`_pmf_length`) is the size of the pmf window k = lo..lo+length−1;
    the window term max_i P[v − i ≤ X < v]/i is max_{k<v} R(k)/(v − k) with R the upper
    cumulative sum of the pmf restricted to k < v (summed from the top, so small tails stay
    accurate). Outside g q ± (20 √g + 2) the pmf is below e^−800 (Hoeffding: P[|X − g q| ≥ t]
    ≤ 2 e^{−2t²/g}), i.e. exactly 0 in float64, so a window of that width (ending at v at the
    latest) gives the sum over all k: memory O(√m) per threshold instead of O(m).
    """
    g = jnp.asarray(n_guess)
    v = jnp.asarray(n_correct)
    dtype = jnp.result_type(eps, float)
    log_q = -jax.nn.softplus(-eps)
    log_1mq = -jax.nn.softplus(eps)
    q = jnp.exp(log_q)
    gf, vf = g.astype(dtype), v.astype(dtype)
    # P[X ≥ v] = I_q(v, g − v + 1) for 1 ≤ v ≤ g; 1 for v = 0.
    tail = jsp_special.betainc(jnp.maximum(vf, 1.0), jnp.maximum(gf - vf + 1.0, 1.0), q)
    beta = jnp.where(v <= 0, jnp.ones_like(tail), tail)
    half = jnp.ceil(20.0 * jnp.sqrt(gf)) + 2.0
    lo = jnp.maximum(jnp.minimum(jnp.floor(gf * q) - half, vf - length), 0.0)
    k = lo + jnp.arange(length, dtype=dtype)
    log_pmf = (jsp_special.gammaln(gf + 1.0) - jsp_special.gammaln(k + 1.0)
               - jsp_special.gammaln(jnp.maximum(gf - k, 0.0) + 1.0)
               + k * log_q + (gf - k) * log_1mq)
    below = k < vf
    pmf = jnp.where(below & (k <= gf), jnp.exp(log_pmf), 0.0)
    upper = jnp.cumsum(pmf[::-1])[::-1]
    ratio = jnp.where(below, upper / jnp.maximum(vf - k, 1.0), 0.0)
    alpha = jnp.max(ratio)
    return jnp.minimum(beta + 2.0 * m * delta * alpha, 1.0)


def _bisect(reject, cap, dtype):
    """The final bracket (lo, hi) of ``_STEPS`` bisection steps on [0, cap] for the point where
    ``reject`` stops holding: lo only moves to rejected points, hi only to accepted ones (the
    ends 0 and cap are not evaluated; the callers decide them). Traceable."""
    def step(_, bracket):
        lo, hi = bracket
        mid = (lo + hi) / 2.0
        ok = reject(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return jax.lax.fori_loop(0, _STEPS, step, (jnp.zeros((), dtype), jnp.asarray(cap, dtype)))


def _need_float64(dtype) -> None:
    """Refuse (at trace time) a one-run core evaluated below float64: in float32 the incomplete
    beta and the pmf sums round either way, and the bisection then returned bounds up to 9·10⁻³
    above the float64 value (3.34154 against 3.33241 at n = 10⁴ per world, μ = 4), i.e. not
    bounds. Run them under ``jax.enable_x64(True)``; the public entry uses the float64 host
    twins."""
    if jnp.dtype(dtype) != jnp.float64:
        raise TypeError(f"the one-run cores need float64 inputs, got {jnp.dtype(dtype)}: "
                        "evaluate them under jax.enable_x64(True) (a float32 bound can exceed "
                        "the exact one)")


def _largest_rejected(reject, cap, dtype):
    """The largest x in [0, cap] with ``reject(x)`` (rejected below a root), by ``_STEPS``
    bisection steps: the lower end of the final bracket, so never above the root; ``cap`` when
    even it is rejected, 0 when nothing is. Traceable; float64 only (:func:`_need_float64`)."""
    _need_float64(dtype)
    lo, _ = _bisect(reject, cap, dtype)
    cap = jnp.asarray(cap, dtype)
    lo = jnp.where(reject(cap), cap, lo)
    return jnp.where(reject(jnp.zeros((), dtype)), lo, jnp.zeros_like(lo))


def _one_run_epsilon(m, n_guess, n_correct, significance, delta, length):
    """Largest ε ∈ [0, 100] with p(ε) ≤ significance (0 when p(0) > significance).

    64 bisection steps on [0, 100]; the lower end of the final bracket is returned, where the
    claim is still rejected, so the result never exceeds the exact root. Traceable.
    """
    dtype = jnp.result_type(significance, delta, float)
    reject = lambda e: _one_run_p_value(m, n_guess, n_correct, e, delta, length) <= significance
    return _largest_rejected(reject, _EPS_CAP, dtype)


def _fdp_one_run_objective(m, n_guess, n_correct, significance, mu):
    """Mahloujifar et al.'s rejection statistic for G_μ; positive means "not μ-GDP".

    r ← β v/m, h ← β (g − v)/m; for i = v−1, …, 0: h' = max(h, Φ(Φ⁻¹(r) − μ)),
    r ← min(r + i/(g − i)·(h' − h), 1), h ← h' (stops once h no longer moves: then nothing
    changes afterwards); the statistic is r + h − g/m. Traceable (a while loop).
    """
    dtype = jnp.result_type(significance, mu, float)
    g = jnp.asarray(n_guess).astype(dtype)
    v = jnp.asarray(n_correct).astype(dtype)
    r0 = significance * v / m
    h0 = significance * (g - v) / m

    def cond(state):
        i, _, _, moving = state
        return moving & (i >= 0)

    def body(state):
        i, r, h, _ = state
        h_new = jnp.maximum(h, norm.cdf(jsp_special.ndtri(r) - mu))
        moving = h_new != h
        r_new = jnp.minimum(r + i / jnp.maximum(g - i, 1.0) * (h_new - h), 1.0)
        return i - 1.0, jnp.where(moving, r_new, r), h_new, moving

    _, r, h, _ = jax.lax.while_loop(cond, body, (v - 1.0, r0, h0, jnp.asarray(True)))
    return r + h - g / m


def _fdp_one_run_mu(m, n_guess, n_correct, significance):
    """Largest μ ∈ [0, 40] whose G_μ claim is rejected (0 if none). 64 bisection steps; the
    lower end of the final bracket (still rejected). Traceable."""
    dtype = jnp.result_type(significance, float)
    reject = lambda mu: _fdp_one_run_objective(m, n_guess, n_correct, significance, mu) > 0

    return _largest_rejected(reject, _MU_CAP, dtype)


def _one_run_tail_epsilon(n_guess, n_correct, significance):
    """Largest ε with P[Bin(r, σ(ε)) ≥ v] ≤ significance: the δ = 0 one-run bound, an upper
    bound of the δ > 0 one (p only grows with δ). Cheap (no pmf vector); traceable."""
    dtype = jnp.result_type(significance, float)
    _need_float64(dtype)
    g = jnp.asarray(n_guess).astype(dtype)
    v = jnp.asarray(n_correct).astype(dtype)
    reject = lambda e: jnp.where(
        v <= 0, False,
        jsp_special.betainc(jnp.maximum(v, 1.0), jnp.maximum(g - v + 1.0, 1.0),
                            jax.nn.sigmoid(e)) <= significance)

    _, hi = _bisect(reject, _EPS_CAP, dtype)
    cap = jnp.asarray(_EPS_CAP, dtype)
    return jnp.where(reject(cap), cap, jnp.where(reject(jnp.zeros((), dtype)), hi, jnp.zeros_like(hi)))


# ----------------------------------------------------------------------------- host side
#
# The driver runs on concrete scores, so it evaluates the formulas of the cores above in float64
# numpy/scipy (scipy's betainc, gammaln, ndtr, ndtri): nothing is compiled, so a first call, and a
# call with numbers of scores never seen before, costs what a later one does (the jitted batches
# this replaces compiled for 18-30 s per new size bucket). The cores stay the traceable
# definition; tests/renyi/test_score_bounds_host.py checks the two against each other.


def _upper_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Ascending indices of the strict vertices of the upper concave hull of integer points
    sorted by x (ties by y ascending); the first and last points are always vertices, collinear
    and lower points are not (the set Andrew's monotone chain keeps).

    Vectorised QuickHull in exact integer arithmetic: a point can only be a strict vertex if it
    turns strictly clockwise against its two neighbours (one pass over all points); then, per
    level, each chord between two known vertices takes the point strictly above it that is
    farthest from it (the first of equals) as a new vertex, and points on or below their chord
    are dropped. cross(a, b, j) = (x_b − x_a)(y_j − y_a) − (y_b − y_a)(x_j − x_a) > 0 means j
    lies strictly above the chord a–b.
    """
    n = x.size
    if n <= 2:
        return np.arange(n)
    x, y = x.astype(np.int64), y.astype(np.int64)
    dx0, dy0 = x[1:-1] - x[:-2], y[1:-1] - y[:-2]
    dx1, dy1 = x[2:] - x[:-2], y[2:] - y[:-2]
    convex = dx1 * dy0 - dy1 * dx0 > 0          # strictly above the chord of its neighbours
    idx = np.flatnonzero(convex) + 1
    a = np.zeros(idx.size, np.int64)
    b = np.full(idx.size, n - 1, np.int64)
    vertex = np.zeros(n, bool)
    vertex[[0, n - 1]] = True
    while idx.size:
        cross = (x[b] - x[a]) * (y[idx] - y[a]) - (y[b] - y[a]) * (x[idx] - x[a])
        above = cross > 0
        idx, a, b, cross = idx[above], a[above], b[above], cross[above]
        if not idx.size:
            break
        starts = np.flatnonzero(np.concatenate([[True], a[1:] != a[:-1]]))   # one per chord
        chord = np.repeat(np.arange(starts.size), np.diff(np.append(starts, idx.size)))
        at_max = np.flatnonzero(cross == np.maximum.reduceat(cross, starts)[chord])
        first = at_max[np.concatenate([[True], chord[at_max[1:]] != chord[at_max[:-1]]])]
        new = idx[first][chord]
        vertex[idx[first]] = True
        left, right = idx < new, idx > new
        a, b = np.where(right, new, a), np.where(left, new, b)
        keep = left | right
        idx, a, b = idx[keep], a[keep], b[keep]
    return np.flatnonzero(vertex)


def roc_hull_counts(in_scores: np.ndarray, out_scores: np.ndarray):
    """(true-positive, false-positive) counts of the "score ≥ t" tests at the vertices of the
    concave hull of the ROC staircase (t over the distinct scores and +∞); collinear and
    dominated points dropped (:func:`_upper_hull`, the vertices Andrew's monotone chain keeps).
    Host-side numpy, no Python loop over the scores."""
    thresholds = np.concatenate([np.union1d(in_scores, out_scores), [np.inf]])
    fn = np.searchsorted(np.sort(in_scores), thresholds, side="left")
    tn = np.searchsorted(np.sort(out_scores), thresholds, side="left")
    idx = _upper_hull(fn, tn)
    tp = in_scores.size - fn[idx]
    fp = out_scores.size - tn[idx]
    return tp, fp


def _bucket(n: int) -> int:
    """Next power of two ≥ n (limits recompilation to one per bucket)."""
    return 1 << max(int(n - 1).bit_length(), 0)


#: Smallest window of :func:`_one_run_p_value`: every m < 4096 shares one compiled program.
_MIN_LENGTH = 4096


def _pmf_length(m: int) -> int:
    """Static window length of :func:`_one_run_p_value` for m canaries: the whole support
    0..m or, when shorter, the width 2 (⌈20 √m⌉ + 2) + 2 that holds every non-zero float64 pmf
    value of Bin(g, q), g ≤ m; bucketed to a power of two ≥ :data:`_MIN_LENGTH` (one compiled
    program per bucket; a longer window only adds zeros, so the value is the same)."""
    need = min(m + 1, 2 * (math.ceil(20.0 * math.sqrt(m)) + 2) + 2)
    return _bucket(max(need, _MIN_LENGTH))


#: How many thresholds (the best by the δ = 0 bound) the f-DP audit is evaluated at.
_CHUNK = 16
#: Width of the one-run brackets of the first pass of :func:`one_run_bounds`.
_COARSE = 1e-3


def _one_run_p_value_host(m: float, g: int, v: int, eps: float, delta: float) -> float:
    """:func:`_one_run_p_value` in float64 numpy/scipy for one threshold (1 ≤ v ≤ g).

    The same terms: the tail I_q(v, g − v + 1) and the window max_{k<v} R(k)/(v − k), R the
    upper cumulative sum of the pmf over k < v; the pmf is summed over
    [g q − (⌈20 √g⌉ + 2), g q + (⌈20 √g⌉ + 2)] ∩ [0, v), outside which it is exactly 0 in float64
    (the core's window, not padded to a static length).
    """
    log_q, log_1mq = -np.logaddexp(0.0, -eps), -np.logaddexp(0.0, eps)
    q = math.exp(log_q)
    beta = float(sp_special.betainc(v, g - v + 1.0, q))
    half = math.ceil(20.0 * math.sqrt(g)) + 2.0
    center = math.floor(g * q)
    lo, hi = max(center - half, 0.0), min(float(v), center + half + 1.0)
    alpha = 0.0
    if lo < hi:
        k = np.arange(lo, hi)
        log_pmf = (sp_special.gammaln(g + 1.0) - sp_special.gammaln(k + 1.0)
                   - sp_special.gammaln(g - k + 1.0) + k * log_q + (g - k) * log_1mq)
        upper = np.cumsum(np.exp(log_pmf)[::-1])[::-1]
        alpha = float(np.max(upper / (v - k)))
    return min(beta + 2.0 * m * delta * alpha, 1.0)


def _largest_rejected_host(reject, cap: float, known: float | None = None) -> float:
    """:func:`_largest_rejected` on the host for one monotone predicate: the same 64 bisection
    steps on [0, cap] and the same ends, with ``reject`` not evaluated at points ≤ ``known``
    when the caller has found ``known`` rejected (the predicate holds below a root, so the
    bisection takes the path it would take evaluating them)."""
    test = lambda x: (known is not None and x <= known) or reject(x)
    lo, hi = 0.0, cap
    for _ in range(_STEPS):
        mid = (lo + hi) / 2.0
        if test(mid):
            lo = mid
        else:
            hi = mid
    if test(cap):
        lo = cap
    return lo if test(0.0) else 0.0


def _one_run_tail_epsilons_host(n_guess: np.ndarray, n_correct: np.ndarray,
                                level: float) -> np.ndarray:
    """The δ = 0 one-run bound at each threshold, raised by a rounding margin: an upper bound of
    the δ > 0 bound, used to order and prune the thresholds.

    P[Bin(g, q) ≥ v] = I_q(v, g − v + 1) increases in q, so the largest ε with
    P[Bin(g, σ(ε)) ≥ v] ≤ level is logit(I⁻¹(level; v, g − v + 1)) in closed form (scipy's
    betaincinv), clipped to [0, 100]; the margin ε (1 + 10⁻⁹) + 10⁻⁹ keeps it above the bound
    whatever the rounding of the two incomplete-beta routines (v ≥ 1).
    """
    q = sp_special.betaincinv(n_correct.astype(np.float64),
                              (n_guess - n_correct).astype(np.float64) + 1.0, level)
    with np.errstate(divide="ignore"):
        eps = np.log(q) - np.log1p(-q)
    return np.clip(eps * (1.0 + 1e-9) + 1e-9, 0.0, _EPS_CAP)


def _fdp_one_run_objective_host(m: float, g: int, v: int, level: float, mu: float) -> float:
    """:func:`_fdp_one_run_objective` for one threshold in float64 scalars (scipy's ndtr and
    ndtri): the same recursion, stopping once h no longer moves (a few hundred steps near the
    root, one far above it; about 4 µs a step, where a numpy vector step costs over 50)."""
    r, h = level * v / m, level * (g - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, sp_special.ndtr(sp_special.ndtri(r) - mu))
        if h_new == h:
            break
        r = min(r + i / max(g - i, 1) * (h_new - h), 1.0)
        h = h_new
    return float(r + h - g / m)


def _fdp_one_run_mu_host(m: float, n_guess: np.ndarray, n_correct: np.ndarray,
                         level: float) -> float:
    """max over the thresholds of :func:`_fdp_one_run_mu` (64 bisection steps on [0, 40], the
    lower end of the final bracket; 40 when even 40 is rejected, 0 when 0 is not). A threshold
    whose statistic does not reject the best μ so far cannot beat it (rejection holds below a
    root) and costs one evaluation."""
    best = 0.0
    for g, v in zip(n_guess.tolist(), n_correct.tolist(), strict=True):
        reject = lambda mu, g=g, v=v: _fdp_one_run_objective_host(m, g, v, level, mu) > 0.0
        if best > 0.0 and not reject(best):
            continue
        known = best if best > 0.0 else None
        best = max(best, _largest_rejected_host(reject, _MU_CAP, known=known))
    return best


#: Thresholds and Bonferroni counts of the one-run audits: a fixed grid of guess counts
#: ("grid", valid), the ROC-hull thresholds with every guess count 0..m counted ("all", valid)
#: or with the hull vertices counted ("hull", jax_privacy's; data-dependent, docs/renyi.md).
BONFERRONI = ("grid", "all", "hull")


#: Number of points of the fixed geometric grid of guess counts (``bonferroni="grid"``).
GRID_POINTS = 40


def grid_counts(in_scores: np.ndarray, out_scores: np.ndarray, tie_seed: int = 0):
    """(correct, wrong) guesses when guessing "in" for the r top-scored canaries, r over the
    fixed grid unique(round(geomspace(1, m, 40))) — it depends on m only, not on the scores.
    Ties are broken by a random permutation seeded by ``tie_seed`` (never by the labels).
    Host-side numpy."""
    m = in_scores.size + out_scores.size
    scores = np.concatenate([in_scores, out_scores])
    is_in = np.concatenate([np.ones(in_scores.size, bool), np.zeros(out_scores.size, bool)])
    perm = np.random.default_rng(tie_seed).permutation(m)
    order = perm[np.argsort(-scores[perm], kind="stable")]
    hits = np.concatenate([[0], np.cumsum(is_in[order])])
    r = np.unique(np.round(np.geomspace(1, m, GRID_POINTS)).astype(np.int64))
    return hits[r], r - hits[r]


def one_run_bounds(in_scores: np.ndarray, out_scores: np.ndarray, delta: float, *,
                   confidence: float, bonferroni: str = "grid", tie_seed: int = 0
                   ) -> tuple[float, float, float, int]:
    """(one-run ε, f-DP μ, f-DP ε, K) on concrete validated scores. Host-side driver (float64
    numpy/scipy; compiles nothing).

    ``delta`` is DP's δ; ``confidence`` the coverage; ``tie_seed`` the host seed of the grid's
    tie-breaking permutation. Failure probability (1 − confidence)/K at each threshold: the
    K ≤ 40 guess counts of the fixed grid
    (``"grid"``), or the hull thresholds with K = m + 1 (``"all"``) or K = the number of hull
    vertices (``"hull"``). The one-run maximum is exact:
    thresholds are visited in decreasing order of their δ = 0 bound (an upper bound of the
    δ > 0 one) until that bound is below the best so far; a threshold whose p-value at the best
    ε so far exceeds the failure probability cannot beat it (p increases with ε) and costs one evaluation;
    one that beats it gets a bracket of width 10⁻³ (its lower end the new best), and only the
    brackets that can still hold the maximum get the full 64-step bisection.
    The f-DP audit is evaluated (searched the same way) at the
    16 thresholds with the largest δ = 0 bounds only: a maximum over fewer thresholds at the
    same Bonferroni failure probability, so never above the full one (sound; it reproduced jax_privacy's
    values, whose search prunes too).
    """
    significance = 1.0 - confidence
    m = float(in_scores.size + out_scores.size)
    if bonferroni == "grid":
        tp, fp = grid_counts(in_scores, out_scores, tie_seed)
        n_tests = int(tp.size)
    else:
        tp, fp = roc_hull_counts(in_scores, out_scores)
        n_tests = int(m) + 1 if bonferroni == "all" else int(tp.size)
    guesses, correct = tp + fp, tp
    keep = (guesses > 0) & (correct > 0)
    guesses, correct = guesses[keep], correct[keep]
    if guesses.size == 0:
        return 0.0, 0.0, 0.0, n_tests
    level = significance / n_tests
    tail = _one_run_tail_epsilons_host(guesses, correct, level)
    order = np.argsort(-tail, kind="stable")
    rejects = {j: (lambda e, g=int(guesses[j]), v=int(correct[j]):
                   _one_run_p_value_host(m, g, v, e, delta) <= level) for j in order.tolist()}
    # Pass 1: brackets [lo_j, hi_j] of width ≤ _COARSE for the thresholds that beat the best
    # lower end so far (the others have ε_j below it); pass 2: the exact search, visiting the
    # brackets by decreasing upper end until one is below the best exact value.
    coarse, best = [], 0.0
    for j in order.tolist():
        if tail[j] <= best:
            break
        reject = rejects[j]
        if not reject(best):
            continue
        lo, hi = best, float(tail[j])
        while hi - lo > _COARSE:
            mid = (lo + hi) / 2.0
            lo, hi = (mid, hi) if reject(mid) else (lo, mid)
        coarse.append((hi, j))
        best = lo
    best = 0.0
    for hi, j in sorted(coarse, reverse=True):
        if hi <= best:
            break
        reject = rejects[j]
        if best > 0.0 and not reject(best):
            continue
        known = best if best > 0.0 else None
        best = max(best, _largest_rejected_host(reject, _EPS_CAP, known=known))
    idx = order[:_CHUNK]
    mu = _fdp_one_run_mu_host(m, guesses[idx], correct[idx], level)
    return best, mu, gdp_epsilon_host(mu, delta), n_tests


#: How each score's world was decided (``inclusion=``): fixed numbers of runs per world, or an
#: independent fair coin per canary.
INCLUSION = ("fixed", "coin")


def equal_worlds(in_scores: np.ndarray, out_scores: np.ndarray, seed: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The two worlds cut to n = min(n_in, n_out) scores each: the larger world subsampled
    without replacement by a permutation from ``seed`` (never looking at the scores), the
    smaller one whole. Both worlds are unchanged when their sizes are equal.

    The one-run theorems (Steinke, Nasr, Jagielski, arXiv 2305.08846, Thm 3.1; Mahloujifar,
    Melis, Chaudhuri, arXiv 2410.22235) take the baseline of a guess "in" to be 1/2: each
    canary included by a fair coin. Scores of runs drawn i.i.d. within each world stay i.i.d.
    under a score-blind subsample, so equal worlds are what an experimenter who had run n of
    each would hold; unequal ones would credit the base rate n_in/(n_in + n_out) ≠ 1/2 of a
    blind guess to leakage. Host-side numpy.
    """
    n = min(in_scores.size, out_scores.size)
    rng = np.random.default_rng([seed, 1])   # a stream of its own: the ties use seed alone

    def cut(x: np.ndarray) -> np.ndarray:
        return x if x.size == n else x[np.sort(rng.permutation(x.size)[:n])]

    return cut(in_scores), cut(out_scores)


#: How many null standard errors below 1/2 the AUC of the scores may fall before
#: :func:`warn_if_reversed` warns (a one-sided test at about 0.13% false alarms).
REVERSED_SE = 3.0


def warn_if_reversed(in_scores: np.ndarray, out_scores: np.ndarray, function: str) -> float:
    """Warn (``UserWarning`` naming the fix) when the in-world scores rank below the out-world
    ones beyond chance; returns the AUC.

    The AUC is the Mann–Whitney statistic U/(n_in n_out) (ties count one half): the
    probability that an in-world score exceeds an out-world one. Under the null of identical
    score laws it has mean 1/2 and standard error sqrt((n_in + n_out + 1)/(12 n_in n_out))
    (Mann & Whitney, Ann. Math. Statist. 1947); the warning fires at AUC < 1/2 −
    :data:`REVERSED_SE` standard errors. U is counted exactly in integers from the sorted
    out-world scores (no ranking of the pooled scores). Host-side numpy on concrete 1-D scores.
    """
    n_in, n_out = in_scores.size, out_scores.size
    out_sorted, in_sorted = np.sort(out_scores), np.sort(in_scores)  # sorted queries: cache
    below = np.searchsorted(out_sorted, in_sorted, side="left")     # out-world scores < x
    tied = np.searchsorted(out_sorted, in_sorted, side="right") - below
    auc = (2 * int(below.sum()) + int(tied.sum())) / (2.0 * n_in * n_out)
    se = np.sqrt((n_in + n_out + 1) / (12.0 * n_in * n_out))
    if auc < 0.5 - REVERSED_SE * se:
        warnings.warn(
            f"{function}: the in-world scores rank below the out-world ones (AUC {auc:.3f}, "
            f"{(0.5 - auc) / se:.1f} standard errors below 1/2): scores must be oriented "
            "\"higher = member\"; pass the negated scores (e.g. -loss instead of the loss), or "
            "check that in_scores and out_scores are not swapped", UserWarning, stacklevel=3)
    return float(auc)


def epsilon_lower_bounds(key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike, *,
                         delta: float, confidence: float = 0.95, include_rdp: bool = False,
                         orders: ArrayLike | Sequence[float] = (2.0, 4.0, 8.0, 16.0, 32.0),
                         bonferroni: str = "grid", inclusion: str = "fixed") -> ScoreBounds:
    """What ε do these canary scores show? Every score-based lower bound side by side.

    Fields and whether each is a bound or an estimate: :class:`ScoreBounds`. Each bound holds
    with probability ≥ ``confidence`` on its own (no correction across the fields).

    Scores must be oriented "higher = member": the one-run audits guess "in" for the
    top-scored canaries only. In-world scores that rank below the out-world ones beyond chance
    (AUC more than 3 null standard errors below 1/2, :func:`warn_if_reversed`) draw a
    ``UserWarning``: negate them (e.g. -loss) or check that the two worlds are not swapped.

    * clopper_pearson: ε ≥ max{log((TPR_lo − δ)/FPR_hi), log((TNR_lo − δ)/FNR_hi)}
      (:func:`clopper_pearson_epsilon_lower_bound`, held-out threshold split drawn from ``key``).
    * mu / gdp_epsilon: μ_lo = Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi), ε_{μ_lo}(δ)
      (:func:`gdp_epsilon_lower_bound`).
    * one_run: largest ε with P[Bin(r, σ(ε)) ≥ v] + 2mδ·max_i P[v−i ≤ Bin(r, σ(ε)) < v]/i ≤
      (1 − confidence)/K at some threshold guessing r canaries with v correct
      (Steinke, Nasr, Jagielski, arXiv 2305.08846); m = len(in_scores) + len(out_scores).
    * fdp_one_run_mu / fdp_one_run: largest μ rejected by Mahloujifar, Melis, Chaudhuri's
      f-DP audit of G_μ (arXiv 2410.22235) at failure probability (1 − confidence)/K, and
      ε_μ(δ).
    * threshold_rdp / binned_rdp (``include_rdp=True``; host-side and slower):
      :func:`threshold_renyi_lower_bound`, :func:`binned_renyi_lower_bound` at ``orders``.

    Args:
      key: PRNG key of the held-out splits of the threshold methods and of the grid's
        tie-breaking (numpy generators seeded from its key data; ``jax.random.key(s)`` draws
        as the seed ``s``).
      in_scores: 1-D finite scores (≥ 8) of runs with the canary; higher means "in".
      out_scores: 1-D finite scores (≥ 8) of runs without.
      delta: δ ∈ (0, 1) of the (ε, δ) statements.
      confidence: coverage of each bound, in (0, 1).
      include_rdp: also compute the threshold and binned RDP bounds at ``orders``.
      orders: Rényi orders > 1 for the RDP fields (numbers; checked even when unused).
      bonferroni: which thresholds the one-run audits try and how they are corrected.
        "grid" (default): guess the r top-scored canaries for r on a fixed geometric grid of
        K ≤ 40 counts (ties broken at random from ``key``), each at failure probability
        (1 − confidence)/K — valid. "all": the ROC-hull thresholds, each at
        (1 − confidence)/(m + 1), one per possible guess count — valid but costly (with δ > 0
        the 2mδ term often exceeds this failure probability and the one-run bound is 0).
        "hull": the ROC-hull thresholds at (1 − confidence)/K, K the number of hull vertices,
        as jax_privacy's ``CanaryScoreAuditor`` (reproduces its published numbers; K is
        data-dependent, so this coverage is not guaranteed).
      inclusion: how each score's world was decided, which the one-run audits need (their
        theorems assume each canary included by an independent fair coin, so that guessing "in"
        succeeds half the time without leakage). "fixed" (default): the scores come from runs
        whose numbers per world were fixed in advance (many-run audits, ``jaxaudit rdp
        --scores``); when the worlds differ in size, the larger one is subsampled without
        replacement to the size of the smaller (drawn from ``key``, independently of the
        scores), so the one-run audits see n = min(n_in, n_out) scores per world — with 1,000
        in-world scores against 50 out-world ones, guessing "in" alone would be right 95% of
        the time and read as leakage. "coin": each score's world was drawn by an independent
        fair coin (one training run with m canaries, :func:`jaxaudit.dpsgd.one_run_audit`):
        all scores are used. ``one_run_canaries`` reports the m the audits counted. The
        threshold, GDP and RDP bounds estimate each world's rates separately and use every
        score in both cases.

    Returns:
      :class:`ScoreBounds`. Host-side (the threshold selections and the hull have
      data-dependent sizes); the one-run cores themselves are traceable.

    Examples:
      >>> import jax, numpy as np
      >>> rng = np.random.default_rng(0)
      >>> res = epsilon_lower_bounds(jax.random.key(0), rng.normal(2.0, 1.0, 2000),
      ...                            rng.normal(0.0, 1.0, 2000), delta=1e-5)
      >>> bool(0 < res.one_run < res.fdp_one_run)
      True
    """
    refuse_traced("epsilon_lower_bounds", key=key, in_scores=in_scores, out_scores=out_scores,
                  delta=delta, confidence=confidence)
    check_one_key("key", key)
    tie_seed = host_seed(key)
    in_np = check_score_vector("in_scores", in_scores, minimum=MIN_SCORES)
    out_np = check_score_vector("out_scores", out_scores, minimum=MIN_SCORES)
    delta = float(check_probability("delta", as_scalar("delta", delta), open_low=True,
                                    open_high=True))
    confidence = float(check_probability("confidence", as_scalar("confidence", confidence),
                                         open_low=True, open_high=True))
    orders_np = check_orders("orders", orders)
    check_choice("bonferroni", bonferroni, BONFERRONI)
    check_choice("inclusion", inclusion, INCLUSION)
    warn_if_reversed(in_np, out_np, "epsilon_lower_bounds")
    cp = clopper_pearson_epsilon_lower_bound(key, in_np, out_np, delta, confidence=confidence)
    gdp = gdp_epsilon_lower_bound(key, in_np, out_np, delta, confidence=confidence)
    run_in, run_out = ((in_np, out_np) if inclusion == "coin"
                       else equal_worlds(in_np, out_np, tie_seed))
    one_run, fdp_mu, fdp_eps, n_tests = one_run_bounds(
        run_in, run_out, delta, confidence=confidence, bonferroni=bonferroni, tie_seed=tie_seed)
    if include_rdp:
        t_rdp = np.asarray(threshold_renyi_lower_bound(key, in_np, out_np, orders_np,
                                                       confidence=confidence), dtype=np.float64)
        b_rdp = np.asarray(binned_renyi_lower_bound(key, in_np, out_np, orders_np,
                                                    confidence=confidence), dtype=np.float64)
    else:
        orders_np = t_rdp = b_rdp = np.zeros((0,), np.float64)
    f = lambda x: np.asarray(x, dtype=np.float64)
    return ScoreBounds(f(cp), f(one_run), f(gdp.mu), f(gdp.epsilon), f(fdp_mu), f(fdp_eps),
                       orders_np, t_rdp, b_rdp, np.asarray(n_tests),
                       np.asarray(run_in.size + run_out.size))
