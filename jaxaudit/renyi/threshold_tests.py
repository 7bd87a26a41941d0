"""Baseline ε lower bounds from two samples of attack scores (threshold tests).

Every baseline follows the same honest protocol by default (``selection="held_out"``): the
scores of each world are shuffled (by a numpy generator derived from the PRNG ``key``) and
split; the threshold (and which side counts as "member") is chosen on the *selection* part; the
error rates at that threshold are bounded on the *evaluation* part with one-sided
Clopper–Pearson intervals (``scipy.stats.beta``), at failure probability (1 − confidence)/2
for each of the two rates.

``selection="all"`` is Annamalai & De Cristofaro's protocol (arXiv 2405.14106, §4; their code
takes the best of all thresholds on all scores): the threshold is chosen on all scores and the
rates are bounded on the same scores. Taking the maximum over thresholds of bounds computed on
the data that chose the threshold is optimistic — the stated confidence no longer holds (the paper
says a held-out set would be better); use it only to compare with their published numbers.
Their per-rate confidence is one-sided 95%, i.e. ``confidence=0.9`` here (the total
failure probability 1 − confidence is split in two halves, one per rate).
With no signal the chosen test has TPR ≈ FPR and every baseline returns ε = 0 (up to its
failure probability), never a spurious positive value.

Convention: ``in_scores`` are observations from the world with the canary, ``out_scores`` without;
a test says "in" when ``sign · score ≥ threshold``. TPR = P_in(say in), FPR = P_out(say in),
FNR = 1 − TPR.

References:
  Nasr et al., "Tight Auditing of Differentially Private Machine Learning", USENIX Security 2023
  (GDP method). Jagielski, Ullman, Oprea, "Auditing Differentially Private Machine Learning: How
  Private is Private SGD?", NeurIPS 2020 (Clopper–Pearson ε). Dong, Roth, Su, "Gaussian
  Differential Privacy", JRSS-B 2022 (δ(ε) of μ-GDP; μ-GDP ⇒ (α, αμ²/2)-RDP). Annamalai &
  De Cristofaro, NeurIPS 2024 (arXiv 2405.14106).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp_special
from jax.typing import ArrayLike
from scipy import special

from jaxaudit._validation import (
    check_broadcast,
    check_choice,
    check_finite,
    check_order_limits,
    check_orders,
    check_probability,
    check_score_vector,
    host_seed,
    is_traced,
)
from jaxaudit.stats.binomial import cp_lower_host, cp_upper_host
from jaxaudit.stats.gdp import gdp_epsilon_host
from jaxaudit.stats.numerics import float_arrays

__all__ = [
    "ThresholdTest",
    "GdpLowerBound",
    "gdp_epsilon_lower_bound",
    "clopper_pearson_epsilon_lower_bound",
    "threshold_renyi_lower_bound",
    "binary_renyi",
]


class ThresholdTest(NamedTuple):
    """A threshold test and its rate bounds on the evaluation split.

    Attributes:
      threshold: t; the test says "in" when ``sign · score ≥ t``.
      sign: +1 (members score higher) or −1.
      tpr_lo: Clopper–Pearson lower bound of TPR (failure probability (1 − confidence)/2).
      fpr_hi: Clopper–Pearson upper bound of FPR (failure probability (1 − confidence)/2).
    """

    threshold: float
    sign: int
    tpr_lo: float
    fpr_hi: float


class GdpLowerBound(NamedTuple):
    """Result of :func:`gdp_epsilon_lower_bound`.

    Attributes:
      epsilon: ε lower bound at the requested δ (≥ 0).
      mu: μ lower bound of the GDP parameter (≥ 0); α μ²/2 is the implied RDP lower bound.
      test: the :class:`ThresholdTest` used.
    """

    epsilon: float
    mu: float
    test: ThresholdTest


#: Host-side float64 limits at a failure probability (scipy), for the threshold searches.
_cp_upper_np = cp_upper_host
_cp_lower_np = cp_lower_host


def _split(rng, x, fraction):
    x = rng.permutation(x)
    k = int(np.floor(fraction * x.size))
    if k < 2 or x.size - k < 2:
        raise ValueError(f"selection_fraction={fraction} leaves fewer than 2 scores in a split")
    return x[:k], x[k:]


def _rates(in_scores, out_scores, sign, thresholds):
    """Counts of 'say in' (sign·score ≥ t) among in and out scores, for each threshold."""
    s_in = np.sort(sign * in_scores)
    s_out = np.sort(sign * out_scores)
    tp = s_in.size - np.searchsorted(s_in, thresholds, side="left")
    fp = s_out.size - np.searchsorted(s_out, thresholds, side="left")
    return tp, fp


def _candidates(in_sel, out_sel, sign, max_candidates=512):
    values = np.unique(np.concatenate([sign * in_sel, sign * out_sel]))
    if values.size > max_candidates:
        values = np.unique(np.quantile(values, np.linspace(0.0, 1.0, max_candidates)))
    return values


SELECTIONS = ("held_out", "all")


def _threshold_test(in_scores, out_scores, failure, objective, selection_fraction, seed,
                    selection="held_out"):
    """Choose (sign, threshold) maximising ``objective(tpr_lo, fpr_hi)`` on the selection split,
    then bound the rates on the evaluation split (both are all scores for ``"all"``)."""
    if selection == "all":
        in_sel = in_eval = in_scores
        out_sel = out_eval = out_scores
    else:
        rng = np.random.default_rng(seed)
        in_sel, in_eval = _split(rng, in_scores, selection_fraction)
        out_sel, out_eval = _split(rng, out_scores, selection_fraction)
    level = failure / 2.0
    best = (-np.inf, 1, np.inf)
    for sign in (1, -1):
        thresholds = _candidates(in_sel, out_sel, sign)
        tp, fp = _rates(in_sel, out_sel, sign, thresholds)
        tpr_lo = _cp_lower_np(tp, in_sel.size, level)
        fpr_hi = _cp_upper_np(fp, out_sel.size, level)
        values = objective(tpr_lo, fpr_hi)
        i = int(np.argmax(values))
        if values[i] > best[0]:
            best = (float(values[i]), sign, float(thresholds[i]))
    _, sign, threshold = best
    tp, fp = _rates(in_eval, out_eval, sign, np.array([threshold]))
    tpr_lo = float(_cp_lower_np(tp, in_eval.size, level)[0])
    fpr_hi = float(_cp_upper_np(fp, out_eval.size, level)[0])
    return ThresholdTest(threshold, sign, tpr_lo, fpr_hi)


def _mu_from_rates(tpr_lo, fpr_hi):
    """μ_lo = Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u) = Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi), clipped at 0."""
    with np.errstate(invalid="ignore"):
        mu = special.ndtri(tpr_lo) - special.ndtri(fpr_hi)
    return np.where(np.isnan(mu), 0.0, np.maximum(mu, 0.0))


#: Why the threshold-test baselines, the binned bound and the run planner stay on the host.
HOST_SIDE_REASON = (
    "its selection is data-dependent: a numpy split drawn from the key, a candidate set of "
    "distinct scores "
    "(thinned to quantiles), exact float64 beta quantiles and a search whose length depends on "
    "the data")


def refuse_traced(function: str, **values) -> None:
    """TypeError naming ``function`` when any of ``values`` is traced (inside jit/vmap/grad),
    instead of a tracer-conversion error from deep inside numpy."""
    traced = [name for name, value in values.items() if is_traced(value)]
    if traced:
        raise TypeError(f"{function} is host-side ({HOST_SIDE_REASON}); call it outside "
                        f"jax.jit/jax.vmap/jax.grad with concrete values (traced: "
                        f"{', '.join(traced)})")


def _split_seed(key, selection: str) -> int | None:
    """The split's host seed; ``None`` for ``selection="all"`` (no split: ``key`` may be None)."""
    if selection == "all" and key is None:
        return None
    return host_seed(key)


def _common_checks(key, in_scores, out_scores, confidence, selection_fraction,
                   selection="held_out", function="this function"):
    """Checked scores, the failure probability 1 − confidence, the fraction and the split's
    host seed."""
    refuse_traced(function, key=key, in_scores=in_scores, out_scores=out_scores)
    check_choice("selection", selection, SELECTIONS)
    seed = _split_seed(key, selection)
    in_scores = check_score_vector("in_scores", in_scores)
    out_scores = check_score_vector("out_scores", out_scores)
    confidence = float(check_probability("confidence", confidence, open_low=True,
                                         open_high=True))
    selection_fraction = float(check_probability("selection_fraction", selection_fraction,
                                                 open_low=True, open_high=True))
    return in_scores, out_scores, 1.0 - confidence, selection_fraction, seed


def gdp_epsilon_lower_bound(key: jax.Array | None, in_scores: ArrayLike, out_scores: ArrayLike,
                            delta: ArrayLike, *, confidence: float = 0.95,
                            selection_fraction: float = 0.5,
                            selection: str = "held_out") -> GdpLowerBound:
    """Nasr et al. (2023) GDP auditing: ε lower bound at δ from a threshold test.

    μ_lo = Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u) with Clopper–Pearson upper bounds at failure probability
    (1 − confidence)/2 each
    (threshold chosen on a separate split to maximise μ_lo there), then ε solving
    δ(ε; μ_lo) = δ. In RDP units use :func:`gdp_to_rdp` (α μ_lo²/2).

    Level: μ_lo is a rigorous lower bound (probability ≥ confidence) on the smallest μ for
    which the mechanism is μ-GDP. The ε and α μ_lo²/2 derived from it are lower bounds of the
    mechanism's (ε, δ) and ε_α only under Nasr et al.'s assumption that its privacy profile is
    exactly Gaussian (true for the Gaussian mechanism and full-batch DP-GD).

    Args:
      key: PRNG key of the held-out split (a numpy generator seeded from its key data;
        ``jax.random.key(s)`` splits as the seed ``s``). May be None for ``selection="all"``.
      in_scores: 1-D scores of runs with the canary.
      out_scores: 1-D scores of runs without.
      delta: δ ∈ (0, 1) of the (ε, δ) statement.
      confidence: joint coverage in (0, 1): the bound holds with this probability.
      selection_fraction: fraction of each world used to choose the threshold.
      selection: "held_out" (default, valid at the stated level) or "all" (Annamalai & De
        Cristofaro's protocol: threshold and rates on all scores; optimistic, see the module
        docstring; their setting is ``selection="all", confidence=0.9``).

    Returns:
      :class:`GdpLowerBound` (epsilon at δ, mu, test). With no signal, epsilon = mu = 0.

    Examples:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> out = rng.normal(size=2000); inn = 2.0 + rng.normal(size=2000)
      >>> res = gdp_epsilon_lower_bound(None, inn, out, 1e-5, confidence=0.9, selection="all")
      >>> bool(res.mu > 1.7 and res.epsilon > 5)   # true μ = 2; "all" can overshoot it
      True
    """
    in_scores, out_scores, failure, selection_fraction, seed = _common_checks(
        key, in_scores, out_scores, confidence, selection_fraction, selection,
        "gdp_epsilon_lower_bound")
    delta = float(check_probability("delta", delta, open_low=True, open_high=True))
    test = _threshold_test(in_scores, out_scores, failure, _mu_from_rates,
                           selection_fraction, seed, selection)
    mu = float(_mu_from_rates(test.tpr_lo, test.fpr_hi))
    return GdpLowerBound(gdp_epsilon_host(mu, delta), mu, test)


def _cp_epsilon(tpr_lo, fpr_hi, delta):
    """max{log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo))}, clipped at 0."""
    tpr_lo, fpr_hi = np.asarray(tpr_lo), np.asarray(fpr_hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.log(np.maximum(tpr_lo - delta, 0.0)) - np.log(fpr_hi)
        second = np.log(np.maximum(1.0 - fpr_hi - delta, 0.0)) - np.log(1.0 - tpr_lo)
    eps = np.fmax(first, second)
    return np.where(np.isnan(eps), 0.0, np.clip(eps, 0.0, None))


def clopper_pearson_epsilon_lower_bound(key: jax.Array | None, in_scores: ArrayLike,
                                        out_scores: ArrayLike, delta: ArrayLike, *,
                                        confidence: float = 0.95,
                                        selection_fraction: float = 0.5,
                                        selection: str = "held_out") -> float:
    """Jagielski et al. (2020): ε ≥ max{log((TPR − δ)/FPR), log((TNR − δ)/FNR)} at CP bounds.

    (ε, δ)-DP implies TPR ≤ e^ε FPR + δ and TNR ≤ e^ε FNR + δ; plugging in the lower bound of
    TPR (TNR) and upper bound of FPR (FNR) from Clopper–Pearson intervals (failure probability
    (1 − confidence)/2 each) gives an ε lower bound holding with probability ≥ confidence.

    Args:
      key: PRNG key of the held-out split (a numpy generator seeded from its key data;
        ``jax.random.key(s)`` splits as the seed ``s``). May be None for ``selection="all"``.
      in_scores: 1-D scores with the canary.
      out_scores: 1-D scores without.
      delta: δ ∈ [0, 1).
      confidence: joint coverage in (0, 1).
      selection_fraction: fraction used to choose the threshold.
      selection: "held_out" (default) or "all" (optimistic; see the module docstring).

    Returns:
      ε lower bound (float, ≥ 0; 0 when the test has no power).
    """
    in_scores, out_scores, failure, selection_fraction, seed = _common_checks(
        key, in_scores, out_scores, confidence, selection_fraction, selection,
        "clopper_pearson_epsilon_lower_bound")
    delta = float(check_probability("delta", delta, open_high=True))
    objective = lambda tpr_lo, fpr_hi: _cp_epsilon(tpr_lo, fpr_hi, delta)
    test = _threshold_test(in_scores, out_scores, failure, objective, selection_fraction,
                           seed, selection)
    return float(_cp_epsilon(test.tpr_lo, test.fpr_hi, delta))


def _binary_renyi_in(xp: Any, xlogy: Callable, p: Any, q: Any, alpha: Any) -> Any:
    """D_α(Ber(p) ‖ Ber(q)) for α ∈ [1, ∞] in the array module ``xp`` (jnp or np).

    α > 1: 1/(α−1) log[p^α q^{1−α} + (1−p)^α (1−q)^{1−α}] in log space (xlogy; a term with
    p = 0 or 1 − p = 0 is 0); α = 1: KL = p log(p/q) + (1−p) log((1−p)/(1−q)); α = ∞:
    log max over the support of Ber(p) of the ratio, max(log(p/q), log((1−p)/(1−q))).
    """
    is_one, is_inf = alpha == 1, xp.isinf(alpha)
    a = xp.where(is_one | is_inf, xp.full_like(alpha, 2.0), alpha)
    t1 = xlogy(a, p) + xlogy(1.0 - a, q)
    t2 = xlogy(a, 1.0 - p) + xlogy(1.0 - a, 1.0 - q)
    t1 = xp.where(p == 0, -xp.inf, t1)
    t2 = xp.where(p == 1, -xp.inf, t2)
    general = xp.logaddexp(t1, t2) / (a - 1.0)
    kl = xlogy(p, p) - xlogy(p, q) + xlogy(1.0 - p, 1.0 - p) - xlogy(1.0 - p, 1.0 - q)
    r1 = xp.where(p > 0, xp.log(p) - xp.log(q), -xp.inf)
    r2 = xp.where(p < 1, xp.log1p(-p) - xp.log1p(-q), -xp.inf)
    return xp.where(is_one, kl, xp.where(is_inf, xp.maximum(r1, r2), general))


def _binary_renyi(p, q, alpha):
    """:func:`_binary_renyi_in` in jnp. Unvalidated, traceable."""
    return _binary_renyi_in(jnp, jsp_special.xlogy, p, q, alpha)


def _binary_renyi_np(p, q, alpha) -> np.ndarray:
    """:func:`_binary_renyi_in` in float64 numpy on concrete values (host side, no validation).

    numpy rather than the jnp version under x64 because the threshold searches call it on
    arrays of data-dependent sizes, and every new size would compile every jnp primitive again
    (tests/composition/test_renyi.py checks that they agree).
    """
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(_binary_renyi_in(np, special.xlogy, p, q, alpha))


def binary_renyi(p: ArrayLike, q: ArrayLike, order: ArrayLike) -> jax.Array | np.ndarray:
    """D_α(Ber(p) ‖ Ber(q)) = 1/(α−1) log[p^α q^{1−α} + (1−p)^α (1−q)^{1−α}], α ∈ [1, ∞].

    α = 1 is the limit KL(Ber(p)‖Ber(q)) = p log(p/q) + (1−p) log((1−p)/(1−q)) and α = ∞ the
    max-divergence max(log(p/q), log((1−p)/(1−q))) over the support of Ber(p) (van Erven &
    Harremoës, arXiv 1206.2459, Theorems 5 and 6). ∞ where q puts no mass on part of p's
    support.

    Args:
      p: probability in [0, 1].
      q: probability in [0, 1].
      order: order α ∈ [1, ∞] (the three broadcast together).

    Returns:
      Concrete inputs: a float64 numpy array (computed under x64). Traced inputs: a jax array
      in their dtype (differentiable where finite).

    Examples:
      >>> round(float(binary_renyi(0.7, 0.2, 2.0)), 6)   # log(0.49/0.2 + 0.09/0.8)
      0.940983
    """
    if is_traced(p, q, order):
        return _binary_renyi(*float_arrays(p, q, order))
    check_probability("p", p)
    check_probability("q", q)
    check_order_limits("order", order)
    check_broadcast(p=p, q=q, order=order)
    return _binary_renyi_np(p, q, order)


def _threshold_renyi(tpr_lo, fpr_hi, alpha):
    """max over directions of the binary divergence at the conservative rates, 0 if no power."""
    tpr_lo, fpr_hi = np.asarray(tpr_lo), np.asarray(fpr_hi)
    powered = tpr_lo > fpr_hi
    p = np.where(powered, tpr_lo, 0.5)
    q = np.where(powered, fpr_hi, 0.5)
    value = np.maximum(_binary_renyi_np(p, q, alpha), _binary_renyi_np(q, p, alpha))
    return np.where(powered & np.isfinite(value), np.maximum(value, 0.0),
                    np.where(powered, np.inf, 0.0))


def threshold_renyi_lower_bound(key: jax.Array | None, in_scores: ArrayLike,
                                out_scores: ArrayLike, orders: ArrayLike, *,
                                confidence: float = 0.95, selection_fraction: float = 0.5,
                                selection: str = "held_out") -> np.ndarray:
    """Rigorous RDP lower bound of a threshold test (data processing for Rényi divergences).

    For the test "say in iff sign·score ≥ t", D_α(in‖out) ≥ d_α(TPR‖FPR) and D_α(out‖in) ≥
    d_α(FPR‖TPR) with d_α the binary Rényi divergence. For TPR > FPR, d_α(p‖q) increases in p and
    decreases in q (and symmetrically), so evaluating at TPR_lo, FPR_hi (Clopper–Pearson,
    failure probability (1 − confidence)/2 each) gives ε_α ≥ max of the two with probability ≥
    confidence.
    The threshold is chosen per order on the selection split.

    Args:
      key: PRNG key of the held-out split (a numpy generator seeded from its key data;
        ``jax.random.key(s)`` splits as the seed ``s``). May be None for ``selection="all"``.
      in_scores: 1-D scores with the canary.
      out_scores: 1-D scores without.
      orders: order α > 1, or a 1-D array of orders.
      confidence: joint coverage in (0, 1).
      selection_fraction: fraction used to choose the threshold.
      selection: "held_out" (default) or "all" (optimistic; see the module docstring).

    Returns:
      float64 array of ε_α lower bounds (≥ 0) with the shape of ``orders``.
    """
    in_scores, out_scores, failure, selection_fraction, seed = _common_checks(
        key, in_scores, out_scores, confidence, selection_fraction, selection,
        "threshold_renyi_lower_bound")
    alphas = check_finite("orders", orders)
    check_orders("orders", alphas)  # a scalar keeps its 0-d shape (and a scalar result)
    out = []
    for a in np.atleast_1d(alphas):
        objective = lambda tpr_lo, fpr_hi, a=a: _threshold_renyi(tpr_lo, fpr_hi, a)
        test = _threshold_test(in_scores, out_scores, failure, objective,
                               selection_fraction, seed, selection)
        out.append(float(_threshold_renyi(test.tpr_lo, test.fpr_hi, a)))
    return np.asarray(out).reshape(alphas.shape)
