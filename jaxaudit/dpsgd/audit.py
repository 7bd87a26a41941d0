"""Audit DP-SGD from canary scores: DV Rényi lower bounds next to the accountant and baselines.

For each order α: the accountant's ε_α (dp_accounting's RDP accountant for T rounds of the
Poisson-subsampled Gaussian, αT/(2σ²) at full batch), the Donsker–Varadhan held-out point
estimate and lower confidence bound (:func:`jaxaudit.renyi.estimate_renyi`), the GDP baseline
(Nasr et al. 2023) converted to RDP units α μ_lo²/2, and the rigorous RDP bound of a threshold
test (data processing). Any lower bound above the accountant is flagged: either the
implementation leaks more than its guarantee or there is a bug.

References:
  Kim, Alabi, Varshney, arXiv 2605.21938 (DV auditing of RDP).
  Annamalai & De Cristofaro, arXiv 2405.14106; Nasr et al., USENIX Security 2023 (GDP auditing).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, check_orders, check_probability
from jaxaudit.accounting import rdp_epsilons
from jaxaudit.renyi import (
    estimate_renyi,
    gdp_epsilon_lower_bound,
    threshold_renyi_lower_bound,
)
from jaxaudit.stats import gdp_to_rdp

__all__ = ["OrderAudit", "audit_dpsgd"]


class OrderAudit(NamedTuple):
    """One order's audit (RDP units, Mironov's ε_α).

    Attributes:
      order: α.
      accountant: the accountant's ε_α (an upper bound on the truth).
      dv_point: DV held-out point estimate (bias-corrected, direction chosen on the training split;
        an estimate, not a confidence bound).
      dv_lower: DV lower confidence bound at the call's ``confidence``.
      gdp_lower: α μ_lo²/2 from the GDP threshold baseline (its ε at δ is in ``gdp_epsilon``).
      threshold_lower: rigorous RDP lower bound of the threshold test.
      gdp_epsilon: the GDP baseline's (ε, δ) lower bound at the ``delta`` of the call (the unit
        Annamalai & De Cristofaro report).
      gdp_mu: the GDP baseline's μ lower bound (their μ_emp).
      violation: True when a rigorous lower bound (dv_lower, gdp_lower, threshold_lower) exceeds
        the accountant (beyond 1e-9 relative). Each bound holds with probability
        ``confidence`` on its own, so one flag is a false alarm with probability
        ≤ 3(1 − confidence), and "some order is flagged" over k orders with probability
        ≤ 3k(1 − confidence) (union bound): for a family-wise failure probability s, call with
        ``confidence = 1 − s / (3k)``.
      dv_se: held-out standard error of ``dv_point`` given the critic (delta method; the
        critic's training variability is not in it).
    """

    order: float
    accountant: float
    dv_point: float
    dv_lower: float
    gdp_lower: float
    threshold_lower: float
    gdp_epsilon: float
    gdp_mu: float
    violation: bool
    dv_se: float = float("nan")


def audit_dpsgd(key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike, orders: ArrayLike, *,
                accountant_params: dict, confidence: float = 0.95, delta: ArrayLike = 1e-5,
                bound: str = "bernstein", config: Any = None) -> list[OrderAudit]:
    """Lower-bound ε_α of the audited training from in/out canary scores, for each order.

    Every lower bound holds with the same probability ``confidence`` (failure probability
    1 − confidence): ``estimate_renyi(..., confidence=confidence)`` (held-out split, both
    directions), and the threshold baselines with Clopper–Pearson bounds at ``confidence``
    (threshold chosen on a separate split). The statements hold per order and per method; see
    :class:`OrderAudit` ``violation`` for the family-wise (Bonferroni) reading.

    Args:
      key: PRNG key for the DV estimator.
      in_scores: (R,) scores of runs with the canary; out_scores: (R',) without.
      orders: one order α > 1 or a sequence of them.
      accountant_params: ``dict(noise_multiplier=σ, sampling_rate=q, steps=T)``.
      confidence: coverage of every lower bound, in (0, 1).
      delta: δ of the GDP baseline's (ε, δ) statement.
      bound: DV confidence bound, "bernstein" or "hoeffding" (see ``estimate_renyi``).
      config: ``jaxaudit.renyi.CriticConfig`` for the DV critic.

    Returns:
      A list of :class:`OrderAudit`, one per order.
    """
    in_s = check_finite("in_scores", in_scores)
    out_s = check_finite("out_scores", out_scores)
    for name, arr in (("in_scores", in_s), ("out_scores", out_s)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D (one score per run), got shape {arr.shape}")
    orders_arr = check_orders("orders", orders)
    confidence = float(check_probability("confidence", confidence, open_low=True,
                                         open_high=True))
    if not isinstance(accountant_params, dict) or set(accountant_params) != {
        "noise_multiplier", "sampling_rate", "steps"
    }:
        raise ValueError("accountant_params must be dict(noise_multiplier=..., sampling_rate=..., "
                         f"steps=...), got {accountant_params!r}")
    accountant = np.asarray(rdp_epsilons(orders=orders_arr, **accountant_params), np.float64)
    est = estimate_renyi(key, in_s, out_s, orders_arr.astype(np.float32),
                         confidence=confidence,
                         bound=bound, config=config)
    dv_point = np.atleast_1d(np.asarray(jax.device_get(est.point), np.float64))
    dv_lower = np.atleast_1d(np.asarray(jax.device_get(est.lower), np.float64))
    dv_se = np.atleast_1d(np.asarray(jax.device_get(est.point_se), np.float64))
    # the threshold baselines' held-out split is drawn (on the host) from the same key
    gdp = gdp_epsilon_lower_bound(key, in_s, out_s, delta, confidence=confidence)
    thr = np.atleast_1d(threshold_renyi_lower_bound(key, in_s, out_s, orders_arr,
                                                    confidence=confidence))
    records = []
    for i, a in enumerate(orders_arr):
        gdp_rdp = float(gdp_to_rdp(gdp.mu, a))
        lowers = np.array([max(dv_lower[i], 0.0), gdp_rdp, thr[i]])
        violation = bool((lowers > accountant[i] * (1 + 1e-9) + 1e-12).any())
        records.append(OrderAudit(float(a), float(accountant[i]), float(dv_point[i]),
                                  float(dv_lower[i]), gdp_rdp, float(thr[i]), float(gdp.epsilon),
                                  float(gdp.mu), violation, float(dv_se[i])))
    return records
