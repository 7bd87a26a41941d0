"""How many runs per world would make the rigorous held-out DV bound informative?

A pilot audit (a few hundred runs per world) usually gives a vacuous lower confidence bound.
:func:`runs_needed` predicts, from the pilot scores, the number n of runs per world at which the
held-out bound of ``jaxaudit.renyi.confidence`` is expected to reach a given fraction of the
estimate, under a Gaussian model of the scores.

Model. Q (runs with the canary) = N(μ_in, σ²) and P (without) = N(μ_out, σ²), means from the pilot
and σ the pooled standard deviation. One σ for both worlds because (i) it is the shape of the
Gaussian mechanism and of full-batch DP-GD audits (a shift, not a change of scale), (ii) with
unequal variances log dQ/dP is quadratic and D_α of two Gaussians is infinite once
α σ_out² ≤ (α−1) σ_in², so a noisy pilot ratio of standard deviations would make the prediction
jump between finite and infinite, and (iii) a pilot of ~100 runs estimates one σ better than two.
With Δ = |μ_in − μ_out|/σ the model's divergence (the *estimate* the fraction refers to) is

    D_α(Q‖P) = D_α(P‖Q) = α Δ² / 2.

Critic. The model's optimal critic g = log dQ/dP = (μ_in − μ_out)/σ² · (x − (μ_in + μ_out)/2)
(J_α(g) = D_α), so g ~ N(Δ²/2, Δ²) under Q and N(−Δ²/2, Δ²) under P. As in the held-out protocol
(critic values clipped to pooled quantiles of its values, the clip that maximises the bound),
g is clipped to [−c, c] with c the (1 − ℓ)-quantile of the pooled (equal-weight) model
distribution of g, and ℓ is the tail probability, among 128 from 10⁻⁹ to 0.45, that maximises
the expected bound at that n (the protocol chooses among a coarser grid of them, so the
prediction is for a well-chosen clip).

Expected bound. With Y = e^{(α−1)(g − c)}, Z = e^{α(g − c)} (values in [e^{−2(α−1)c}, 1] and
[e^{−2αc}, 1]) and m = n − ⌊split·n⌋ held-out runs per world, the population moments
E Y, Var Y under Q and E Z, Var Z under P (closed forms for a clipped Gaussian: truncated normal
moment generating functions) are plugged into the radii of ``held_out_lower_bound``:

    bound(n) = α/(α−1) log max(E Y − r_Y, e^{−2(α−1)c}) − log min(E Z + r_Z, 1),
    r = sqrt(2 Var log(2/β')/m) + 7 R log(2/β')/(3(m − 1))   (empirical Bernstein, Maurer &
        Pontil 2009, Theorem 4, with the population variance), or R sqrt(log(1/β')/(2m))
        (Hoeffding),

β' = β_dir/2 per term and β_dir = β/2 per direction when both directions are audited, β =
1 − confidence the failure probability (the
default of ``estimate_renyi``). bound(n) is nondecreasing in n for every clip, hence so is its
maximum over clips, and the answer is the smallest n with bound(n) ≥ fraction · α Δ²/2, found by
bisection on a log scale up to ``max_runs``.

Limits. The prediction is as good as the Gaussian model: heavy tails or unequal spreads of the
real scores change both the divergence and the moments; Δ̂ from a small pilot is noisy (and
E Δ̂² ≈ Δ² + 1/n_in + 1/n_out is biased upwards); the learned critic of a real audit is only
close to log dQ/dP (the prediction is for the best critic, so a real audit needs more runs);
plugging the population variance into the Bernstein radius ignores the fluctuation of the
sample variance and of the means (for data from the model the mean simulated bound is within
±0.01 of the target fraction in the tests). The answer is not monotone in Δ: a larger
divergence needs larger exponential moments e^{αg} to be pinned down, so reaching the same
*fraction* of α Δ²/2 can take more runs. Use the answer as an order of magnitude.

References:
  Maurer, Pontil, "Empirical Bernstein Bounds and Sample Variance Penalization", COLT 2009
  (arXiv 0907.3740).
  Kim, Alabi, Varshney (2026), arXiv 2605.21938 (the Donsker–Varadhan Rényi audit).
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476): α Δ²/2.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike
from scipy import optimize, special

from jaxaudit._validation import (
    check_choice,
    check_finite,
    check_orders,
    check_probability,
    check_score_vector,
    plain,
)
from jaxaudit.renyi.threshold_tests import refuse_traced
from jaxaudit.stats.radii import bernstein_failure_radius, hoeffding_failure_radius

__all__ = ["RunsNeeded", "runs_needed", "format_runs_needed"]

#: Pooled tail probabilities ℓ of the clip candidates (clip to the ℓ and 1 − ℓ quantiles).
CLIP_LEVELS = tuple(np.geomspace(1e-9, 0.45, 128))

_METHODS = ("bernstein", "hoeffding")


class RunsNeeded(NamedTuple):
    """Result of :func:`runs_needed` (plain Python numbers for one order, numpy arrays for 1-D α).

    Attributes:
      runs_per_world: smallest n (runs per world, both worlds) whose expected held-out bound
        reaches ``target``; ``math.inf`` (an inf entry) where ``max_runs`` does not suffice.
      reachable: False where no n ≤ ``max_runs`` reaches the target.
      held_out_per_world: n − ⌊split·n⌋, the held-out runs per world at ``runs_per_world``.
      estimate: the model's D_α = α Δ²/2 (RDP units), the value the fraction refers to.
      target: fraction × estimate.
      expected_bound: the model's expected bound at ``runs_per_world`` (at ``max_runs`` when
        unreachable).
      pilot_bound: the model's expected bound at the pilot's own sizes.
      clip_lo: lower end of the critic's clip at ``runs_per_world`` (critic units, = −clip_hi).
      clip_hi: upper end of the clip.
      shift: Δ = |μ_in − μ_out| / σ.
      mean_in: μ_in, the pilot mean of ``in_scores``.
      mean_out: μ_out.
      sd: σ, the pooled standard deviation (denominator n_in + n_out − 2).
      orders: the order(s).
      fraction: the requested fraction of the estimate.
      confidence: the coverage of the audit's bound (failure probability β = 1 − confidence).
      both_directions: whether the audit reports both directions (β/2 each, so each
        direction's ``held_out_lower_bound`` runs at confidence 1 − β/2).
      split: training fraction of each world.
      radius: the concentration radius, "bernstein" or "hoeffding".
      max_runs: the search limit.
      model: "gaussian".
    """

    runs_per_world: object
    reachable: object
    held_out_per_world: object
    estimate: object
    target: object
    expected_bound: object
    pilot_bound: object
    clip_lo: object
    clip_hi: object
    shift: float
    mean_in: float
    mean_out: float
    sd: float
    orders: object
    fraction: float
    confidence: float
    both_directions: bool
    split: float
    radius: str
    max_runs: int
    model: str = "gaussian"

    def critic(self, scores: ArrayLike) -> np.ndarray:
        """The model critic g(x) = (μ_in − μ_out)/σ² · (x − (μ_in + μ_out)/2), unclipped."""
        x = np.asarray(scores, dtype=np.float64)
        return (self.mean_in - self.mean_out) / self.sd**2 * (
            x - 0.5 * (self.mean_in + self.mean_out))


# ----------------------------------------------------------------------------------------------
# Population moments of a clipped Gaussian and the expected bound.


def _log_ndtr_diff(a, b):
    """log(Φ(b) − Φ(a)) for a ≤ b, accurate in both tails."""
    flip = a > 0
    lo, hi = np.where(flip, -b, a), np.where(flip, -a, b)
    log_hi, log_lo = special.log_ndtr(hi), special.log_ndtr(lo)
    with np.errstate(divide="ignore"):
        return log_hi + np.log1p(-np.exp(log_lo - log_hi))


def _log_mgf(t, mean, sd, c):
    """log E exp(t (clip(G, −c, c) − c)) for G ~ N(mean, sd²), vectorised over c."""
    lower = t * (-2.0 * c) + special.log_ndtr((-c - mean) / sd)
    upper = special.log_ndtr((mean - c) / sd)
    shifted = mean + t * sd**2
    middle = (t * (mean - c) + 0.5 * (t * sd) ** 2
              + _log_ndtr_diff((-c - shifted) / sd, (c - shifted) / sd))
    return np.logaddexp(np.logaddexp(lower, upper), middle)


def _moments(t, mean, sd, c):
    """Mean and variance of exp(t (clip(G, −c, c) − c))."""
    m1, m2 = np.exp(_log_mgf(t, mean, sd, c)), np.exp(_log_mgf(2.0 * t, mean, sd, c))
    return m1, np.maximum(m2 - m1**2, 0.0)


def _radius(variance, n, value_range, delta, method):
    with jax.enable_x64(True):
        if method == "hoeffding":
            r = hoeffding_failure_radius(n, value_range, delta)
        else:
            r = bernstein_failure_radius(variance, n, value_range, delta)
        return np.asarray(r, dtype=np.float64)


class _Curve(NamedTuple):
    """Everything about one order that does not depend on n."""

    alpha: float
    c: np.ndarray          # clip half-widths (critic units)
    mean_y: np.ndarray
    var_y: np.ndarray
    mean_z: np.ndarray
    var_z: np.ndarray


def _pooled_quantile(shift, level):
    """c with P(g > c) = level for the equal mixture of N(±Δ²/2, Δ²) (symmetric about 0)."""
    m, s = 0.5 * shift**2, shift
    tail = lambda c: 0.5 * (special.ndtr((m - c) / s) + special.ndtr((-m - c) / s)) - level
    return optimize.brentq(tail, 0.0, m + 40.0 * s, xtol=1e-14 * (m + s))


def _curve(shift, alpha):
    c = np.array([_pooled_quantile(shift, level) for level in CLIP_LEVELS])
    m, s = 0.5 * shift**2, shift
    mean_y, var_y = _moments(alpha - 1.0, m, s, c)
    mean_z, var_z = _moments(alpha, -m, s, c)
    return _Curve(float(alpha), c, mean_y, var_y, mean_z, var_z)


def _held_out(n, split):
    return n - math.floor(split * n)


def _expected_bounds(curve, m_q, m_p, delta_dir, method):
    """The expected held-out bound for every clip, at m_q and m_p held-out runs."""
    a = curve.alpha
    log_y_min, log_z_min = -2.0 * (a - 1.0) * curve.c, -2.0 * a * curve.c
    r_y = _radius(curve.var_y, m_q, -np.expm1(log_y_min), delta_dir / 2.0, method)
    r_z = _radius(curve.var_z, m_p, -np.expm1(log_z_min), delta_dir / 2.0, method)
    with np.errstate(divide="ignore"):
        log_a = np.maximum(np.log(np.maximum(curve.mean_y - r_y, 0.0)), log_y_min)
    log_b = np.log(np.minimum(curve.mean_z + r_z, 1.0))
    return a / (a - 1.0) * log_a - log_b


def _best(curve, n, split, delta_dir, method, n_p=None):
    """(bound, c) of the best clip at n runs per world (n_p runs in P when given)."""
    m_q = _held_out(n, split)
    m_p = m_q if n_p is None else _held_out(n_p, split)
    values = _expected_bounds(curve, m_q, m_p, delta_dir, method)
    i = int(np.argmax(values))
    return float(values[i]), float(curve.c[i])


def _smallest_n(curve, target, n_min, max_runs, split, delta_dir, method):
    """Bisection (geometric midpoints) for the smallest n with bound(n) ≥ target."""
    if _best(curve, max_runs, split, delta_dir, method)[0] < target:
        return None
    lo, hi = n_min, max_runs
    if _best(curve, lo, split, delta_dir, method)[0] >= target:
        return lo
    while hi - lo > 1:   # bound(lo) < target ≤ bound(hi)
        mid = min(max(int(round(math.sqrt(lo * hi))), lo + 1), hi - 1)
        if _best(curve, mid, split, delta_dir, method)[0] >= target:
            hi = mid
        else:
            lo = mid
    return hi


# ----------------------------------------------------------------------------------------------
# Public functions.


def _smallest_valid_n(split):
    """Smallest n with ≥ 2 training and ≥ 2 held-out runs."""
    n = 4
    while math.floor(split * n) < 2 or _held_out(n, split) < 2:
        n += 1
    return n


def runs_needed(
    in_scores: ArrayLike, out_scores: ArrayLike, orders: ArrayLike, *, fraction: float = 0.5,
    confidence: ArrayLike = 0.95, split: float = 0.5, radius: str = "bernstein",
    max_runs: int = 10**7,
    both_directions: bool = True,
) -> RunsNeeded:
    """Runs per world at which the held-out DV lower bound is expected to reach a fraction of D_α.

    Fits Q = N(μ_in, σ²), P = N(μ_out, σ²) (pooled σ) to the pilot scores, takes the model's
    optimal critic g = log dQ/dP clipped to the best pooled-quantile range, and returns the
    smallest n (runs per world) with

        α/(α−1) log max(E Y − r_Y(m), e^{−2(α−1)c}) − log min(E Z + r_Z(m), 1)
            ≥ fraction · α Δ²/2,      m = n − ⌊split·n⌋,

    E, Var of Y = e^{(α−1)(g−c)} under Q and Z = e^{α(g−c)} under P in closed form, r the
    empirical Bernstein (Maurer & Pontil 2009) or Hoeffding radius of ``held_out_lower_bound``
    at β/2 per term, β = 1 − confidence the failure probability (β/2 per direction with
    ``both_directions``). See the module docstring for
    why one σ, the clip, and the limits of the Gaussian assumption.

    Args:
      in_scores: 1-D pilot scores of runs with the canary (Q), at least 4, not all equal.
      out_scores: 1-D pilot scores of runs without (P), at least 4.
      orders: order α > 1 or a 1-D array of orders.
      fraction: the fraction of the estimate the bound should reach, in (0, 1).
      confidence: coverage of the audit's bound, in (0, 1); its failure probability β is
        1 − confidence.
      split: training fraction of each world in the audit, in (0, 1).
      radius: the concentration radius, "bernstein" (default of ``estimate_renyi``) or
        "hoeffding".
      max_runs: largest n considered (an int ≥ the smallest n the split allows).
      both_directions: the audit reports max(D_α(Q‖P), D_α(P‖Q)) with β/2 per direction.

    Returns:
      :class:`RunsNeeded`; per-order fields are Python numbers for a scalar ``orders`` and numpy
      arrays for a 1-D one. ``runs_per_world`` is ``math.inf`` where not reachable.

    Examples:
      >>> rng = np.random.default_rng(0)
      >>> pilot = runs_needed(rng.normal(1.0, 1.0, 144), rng.normal(0.0, 1.0, 144), 2.0)
      >>> pilot.reachable, pilot.runs_per_world > 144, pilot.pilot_bound < 0.5 * pilot.estimate
      (True, True, True)
    """
    refuse_traced("runs_needed", in_scores=in_scores, out_scores=out_scores, orders=orders)
    in_scores = check_score_vector("in_scores", in_scores)
    out_scores = check_score_vector("out_scores", out_scores)
    alphas = check_finite("orders", orders)
    check_orders("orders", alphas)  # a scalar keeps its 0-d shape (and a scalar result)
    fraction = float(check_probability("fraction", fraction, open_low=True, open_high=True))
    confidence = float(check_probability("confidence", confidence, open_low=True,
                                         open_high=True))
    split = float(check_probability("split", split, open_low=True, open_high=True))
    check_choice("radius", radius, _METHODS)
    n_min = _smallest_valid_n(split)
    if (isinstance(max_runs, bool) or not isinstance(max_runs, (int, np.integer))
            or max_runs < n_min):
        raise ValueError(f"max_runs must be an int >= {n_min} (split={split}), got {plain(max_runs)}")
    max_runs = int(max_runs)
    n_in, n_out = in_scores.size, out_scores.size
    if min(_held_out(n_in, split), _held_out(n_out, split), math.floor(split * n_in),
           math.floor(split * n_out)) < 2:
        raise ValueError(f"split={split} leaves fewer than 2 pilot scores in a part")
    mean_in, mean_out = float(in_scores.mean()), float(out_scores.mean())
    sd = pooled_sd(in_scores, out_scores)
    if not sd > 0:
        raise ValueError("in_scores and out_scores have zero pooled standard deviation: the "
                         "Gaussian model needs scores that vary within a world")
    shift = abs(mean_in - mean_out) / sd
    delta_dir = _failure_per_direction(confidence, both_directions)

    fields: dict[str, list] = {k: [] for k in ("runs_per_world", "reachable", "held_out_per_world", "estimate",
                              "target", "expected_bound", "pilot_bound", "clip_lo", "clip_hi")}
    for a in np.atleast_1d(alphas):
        a = float(a)
        estimate = a * shift**2 / 2.0
        target = fraction * estimate
        if shift > 0:
            curve = _curve(shift, a)
            n = _smallest_n(curve, target, n_min, max_runs, split, delta_dir, radius)
            bound, c = _best(curve, max_runs if n is None else n, split, delta_dir, radius)
            pilot, _ = _best(curve, n_in, split, delta_dir, radius, n_p=n_out)
        else:   # identical pilot means: nothing to detect
            n, bound, c, pilot = None, 0.0, 0.0, 0.0
        fields["runs_per_world"].append(math.inf if n is None else n)
        fields["reachable"].append(n is not None)
        fields["held_out_per_world"].append(math.inf if n is None else _held_out(n, split))
        fields["estimate"].append(estimate)
        fields["target"].append(target)
        fields["expected_bound"].append(bound)
        fields["pilot_bound"].append(pilot)
        fields["clip_lo"].append(-c)
        fields["clip_hi"].append(c)
    if alphas.ndim == 0:
        per_order = {k: v[0] for k, v in fields.items()}
        alpha_out: float | np.ndarray = float(alphas)
    else:
        per_order = {k: np.asarray(v, dtype=bool if k == "reachable" else np.float64)
                     for k, v in fields.items()}
        alpha_out = alphas.copy()
    return RunsNeeded(**per_order, shift=shift, mean_in=mean_in, mean_out=mean_out, sd=sd,
                      orders=alpha_out, fraction=fraction, confidence=confidence,
                      both_directions=bool(both_directions), split=split, radius=radius,
                      max_runs=max_runs)


def _failure_per_direction(confidence: float, both_directions: bool) -> float:
    """δ of one direction's held-out bound: (1 − confidence)/2 with both directions."""
    delta = 1.0 - confidence
    return delta / 2.0 if both_directions else delta


def _about(n):
    """n rounded up to two significant digits (n ≥ 100), for "about N runs"."""
    if n < 100:
        return int(n)
    step = 10 ** (int(math.log10(n)) - 1)
    return int(math.ceil(n / step) * step)


def pooled_sd(in_scores: np.ndarray, out_scores: np.ndarray) -> float:
    """The pooled standard deviation σ of :func:`runs_needed`'s Gaussian model (denominator
    n_in + n_out − 2) of concrete 1-D scores; 0 when the scores do not vary within a world
    (then the model has nothing to fit and :func:`runs_needed` refuses). Host-side numpy."""
    n_in, n_out = in_scores.size, out_scores.size
    pooled_var = (((n_in - 1) * np.var(in_scores, ddof=1) + (n_out - 1) * np.var(out_scores, ddof=1))
                  / (n_in + n_out - 2))
    return math.sqrt(pooled_var)


def format_runs_needed(result: RunsNeeded, n_pilot: int) -> str:
    """The sentence the CLI prints, e.g. "the bound is vacuous at 72 held-out runs; about 3,900
    runs per world would make it ≥ 50% of the estimate".

    The first half is the model's expected bound at ``n_pilot`` runs per world (vacuous when
    ≤ 0); the second rounds ``runs_per_world`` up to two significant digits. For several orders
    the sentences are joined by "; " and each starts with "α = …: ".

    Args:
      result: a :class:`RunsNeeded`.
      n_pilot: runs per world of the pilot (an int ≥ 4).

    Returns:
      The sentence (str).

    Examples:
      >>> rng = np.random.default_rng(0)
      >>> r = runs_needed(rng.normal(1.0, 1.0, 144), rng.normal(0.0, 1.0, 144), 2.0)
      >>> format_runs_needed(r, 144)
      'the bound is vacuous at 72 held-out runs; about ... runs per world would make it ≥ 50% of the estimate'
    """
    if (isinstance(n_pilot, bool) or not isinstance(n_pilot, (int, np.integer))
            or n_pilot < _smallest_valid_n(result.split)):
        raise ValueError(f"n_pilot must be an int >= {_smallest_valid_n(result.split)}, "
                         f"got {n_pilot!r}")
    held = _held_out(int(n_pilot), result.split)
    alphas = np.atleast_1d(np.asarray(result.orders))
    several = np.ndim(np.asarray(result.orders)) > 0
    sentences = []
    for i, a in enumerate(alphas):
        pick = (lambda v, i=i: np.atleast_1d(v)[i]) if several else (lambda v: v)
        estimate = float(pick(result.estimate))
        if result.shift > 0:
            pilot, _ = _best(_curve(result.shift, float(a)), int(n_pilot), result.split,
                             _failure_per_direction(result.confidence, result.both_directions),
                             result.radius)
        else:
            pilot = 0.0
        if pilot <= 0 or estimate <= 0:
            first = f"the bound is vacuous at {held} held-out runs"
        else:
            first = f"the bound is about {pilot / estimate:.0%} of the estimate at {held} " \
                    "held-out runs"
        goal = f"≥ {result.fraction:.0%} of the estimate"
        if bool(pick(result.reachable)):
            n = _about(int(pick(result.runs_per_world)))
            second = f"about {n:,} runs per world would make it {goal}"
        else:
            second = f"even {result.max_runs:,} runs per world would not make it {goal}"
        sentence = f"{first}; {second}"
        sentences.append(f"α = {float(a):g}: {sentence}" if several else sentence)
    return "; ".join(sentences)
