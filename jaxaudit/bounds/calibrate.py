"""Calibration: the least noise (or the largest ε) that keeps an attack below a target risk.

The question a practitioner asks is not "which ε?" but "which σ keeps the success of an attack
with prior 1% below 5%?". :func:`calibrate` answers it for four targets, each computed from the
whole privacy curve (:class:`~jaxaudit.bounds.PrivacyModel`), never from one (ε, δ) point:

* ``"success"``: the single-target success bound (:func:`~jaxaudit.bounds.single_target_success`,
  the least of the valid routes) at prior p (``exact_match``: one exact-match guess, p the
  largest prior mass, e.g. 1/K for a uniform prior over K values);
* ``"count"``: the count bound v_γ over n targets of prior p;
* ``"advantage"``: the largest TPR − FPR of any membership test, δ(0);
* ``"tpr"``: the largest TPR at a given FPR, 1 − f(FPR).

Noise (DP-SGD with Poisson rate q, T steps, under ``relation``): every metric is non-increasing in
σ, so σ is bracketed by doubling or halving from 1 and then bisected geometrically to a relative
1e−3; the returned σ is the *upper* end of the final bracket, where the target was checked to
hold (the answer never undershoots: at the returned σ the bound is met, computed by the same
pessimistic PLD the bounds use). The PLD's discretisation makes the metric monotone in σ only
to about 1e−4 relative, so the σ returned is the least to within about 1% (checked in the
tests), not to the bracket's 0.1%. ε (ε-DP or (ε, δ)-DP): the metrics are non-decreasing in ε;
bisection on [0, 64], the *lower* end returned, where the target was checked to hold.

Compare riskcal (Kulynych, Gomez, Kaissis, du Pin Calmon, Troncoso, "Attack-Aware Noise
Calibration for Differential Privacy", NeurIPS 2024, arXiv:2407.06496), which calibrates to the
advantage and to (FPR, TPR) from the PLD's trade-off curve; the success target here is at most
riskcal's (1 − f(p) is one of the routes) and the count target is not in riskcal.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from jaxaudit._validation import (
    check_bool,
    check_choice,
    check_integer,
    check_nonnegative,
    check_probability,
)
from jaxaudit.accounting.guarantees import check_relation
from jaxaudit.bounds.summary import PrivacyModel, single_target_success

__all__ = ["KINDS", "RiskTarget", "Calibration", "calibrate"]

#: The kinds of :class:`RiskTarget`.
KINDS = ("success", "count", "advantage", "tpr")
_REL_TOL = 1e-3
_EPSILON_MAX = 64.0
_EPSILON_STEPS = 40


class RiskTarget(NamedTuple):
    """What must stay at or below ``value``.

    Attributes:
      kind: ``"success"``, ``"count"``, ``"advantage"`` or ``"tpr"`` (:data:`KINDS`).
      value: the largest allowed success probability, count v_γ, advantage or TPR.
      prior: the targets' baseline success p (``"success"``, ``"count"``).
      targets: n (``"count"``).
      fpr: the FPR at which the TPR is bounded (``"tpr"``).
      exact_match: ``"success"`` of one exact-match guess (p the largest prior mass).
      gamma: level γ of the count bound.
    """

    kind: str
    value: float
    prior: float | None = None
    targets: int | None = None
    fpr: float | None = None
    exact_match: bool = False
    gamma: float = 0.05


class Calibration(NamedTuple):
    """Result of :func:`calibrate`.

    Attributes:
      noise: σ, the noise multiplier (None when calibrating ε).
      epsilon: the calibrated ε; in noise mode, the ε of the curve at ``delta`` (rounded up,
        None without ``delta``).
      achieved: the target's metric at the returned parameter (a BOUND, ≤ ``target.value``).
      privacy: the :class:`~jaxaudit.bounds.PrivacyModel` at the returned parameter.
    """

    noise: float | None
    epsilon: float | None
    achieved: float
    privacy: PrivacyModel


def _check_target(target: RiskTarget) -> RiskTarget:
    if not isinstance(target, RiskTarget):
        raise ValueError(f"target must be a RiskTarget, got {type(target).__name__}")
    check_choice("target.kind", target.kind, KINDS)
    check_bool("target.exact_match", target.exact_match)
    if target.kind == "count":
        check_integer("target.value", target.value, minimum=0)
        check_integer("target.targets", target.targets, minimum=1)
        check_probability("target.gamma", target.gamma, open_low=True, open_high=True)
    else:
        check_probability("target.value", target.value)
    if target.kind in ("success", "count"):
        if target.prior is None:
            raise ValueError(f"target.prior is required for kind={target.kind!r}")
        check_probability("target.prior", target.prior)
    if target.kind == "tpr":
        if target.fpr is None:
            raise ValueError("target.fpr is required for kind='tpr'")
        check_probability("target.fpr", target.fpr)
    return target


def _described(target: RiskTarget) -> str:
    """The target named by ``target.value`` (which the command line maps to its flag):
    "target.value=0.001 of kind 'success' (prior 0.01)"."""
    extra = {"success": ("prior",), "count": ("prior", "targets", "gamma"), "tpr": ("fpr",)}
    fields = ", ".join(f"{f} {getattr(target, f)!r}" for f in extra.get(target.kind, ()))
    return f"target.value={target.value!r} of kind {target.kind!r}" + (f" ({fields})" if fields else "")


def _metric(target: RiskTarget, model: PrivacyModel) -> float:
    """The target's bound under ``model`` (float64)."""
    if target.kind == "success":
        return float(single_target_success(float(target.prior or 0.0), model,
                                           exact_match=target.exact_match).bound)
    if target.kind == "count":
        n, p = int(target.targets or 0), float(target.prior or 0.0)  # checked: both given
        return float(model.count_bound(np.full(n, p), target.gamma))
    if target.kind == "advantage":
        return model.advantage()
    return float(model.tpr_at_fpr(float(target.fpr or 0.0)))


def calibrate(target: RiskTarget, *, sampling_rate: float | None = None,
              steps: float | None = None, relation: str = "replace_one",
              delta: float | None = None) -> Calibration:
    """The least DP-SGD noise σ (given q and T), or the largest ε, that meets ``target``.

    Args:
      target: the :class:`RiskTarget`.
      sampling_rate: Poisson rate q ∈ (0, 1] (with ``steps``: calibrate σ).
      steps: T ≥ 1.
      relation: ``"replace_one"`` (the attack bounds' game) or ``"add_remove"`` (membership
        targets ``"advantage"`` and ``"tpr"`` only).
      delta: noise mode: report the curve's ε at this δ; ε mode: calibrate (ε, δ)-DP.

    Returns:
      :class:`Calibration` (σ rounded up, or ε rounded down: the target holds at the value
      returned).

    Raises:
      ValueError: a bad target or parameter, or no σ ≤ 1024 (no ε ≥ 0) meets the target.

    Examples:
      >>> c = calibrate(RiskTarget("success", 0.05, prior=0.01), sampling_rate=0.01, steps=1000)
      >>> 0.9 < c.noise < 1.0 and c.achieved <= 0.05
      True
    """
    _check_target(target)
    check_relation("relation", relation)
    if relation != "replace_one" and target.kind in ("success", "count"):
        raise ValueError("relation must be 'replace_one' for the attack targets 'success' and "
                         f"'count' (the game replaces one target's value), got {relation!r}")
    if delta is not None:
        check_probability("delta", delta, open_high=True)
    meets = lambda m: _metric(target, m) <= target.value  # noqa: E731
    if sampling_rate is None and steps is None:
        return _calibrate_epsilon(target, meets, 0.0 if delta is None else float(delta))
    if sampling_rate is None or steps is None:
        raise ValueError("give both sampling_rate and steps (noise), or neither (ε)")
    check_probability("sampling_rate", sampling_rate, open_low=True)
    steps = check_integer("steps", steps, minimum=1)

    def model(sigma: float) -> PrivacyModel:
        return PrivacyModel.from_dpsgd(sampling_rate=sampling_rate, noise_multiplier=sigma,
                                       steps=steps, relation=relation)

    hi = 1.0
    m_hi = model(hi)
    while not meets(m_hi):  # double until the target holds
        hi *= 2.0
        if hi > 1024.0:
            raise ValueError(f"no noise multiplier up to 1024 meets {_described(target)}")
        m_hi = model(hi)
    lo = hi / 2.0
    while meets(model(lo)):  # halve until it fails
        hi, lo = lo, lo / 2.0
        if lo < 1e-3:
            break
    m_hi = model(hi)
    while hi / lo > 1.0 + _REL_TOL:  # invariant: met at hi, not at lo
        mid = math.sqrt(lo * hi)
        m_mid = model(mid)
        if meets(m_mid):
            hi, m_hi = mid, m_mid
        else:
            lo = mid
    eps = None
    if delta is not None:
        grid, deltas = np.asarray(m_hi.epsilons), np.asarray(m_hi.deltas)
        ok = np.flatnonzero(deltas <= delta)
        eps = float(grid[ok[0]]) if ok.size else math.inf
    return Calibration(hi, eps, _metric(target, m_hi), m_hi)


def _calibrate_epsilon(target: RiskTarget, meets, delta: float) -> Calibration:
    """The largest ε ∈ [0, 64] of (ε, δ)-DP meeting the target (bisection, lower end)."""
    model = lambda e: PrivacyModel(epsilon=e, delta=delta)  # noqa: E731
    lo, hi = 0.0, _EPSILON_MAX
    if not meets(model(lo)):
        raise ValueError(f"no ε ≥ 0 meets {_described(target)} (with delta={delta!r})")
    if meets(model(hi)):
        lo = hi
    else:
        for _ in range(_EPSILON_STEPS):  # invariant: met at lo, not at hi
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if meets(model(mid)) else (lo, mid)
    check_nonnegative("epsilon", lo)
    m = model(lo)
    return Calibration(None, lo, _metric(target, m), m)
