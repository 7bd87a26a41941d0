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

from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_finite, check_orders, check_probability
from jaxaudit.accounting import RdpCurve
from jaxaudit.renyi import (
    estimate_renyi,
    gdp_epsilon_lower_bound,
    threshold_renyi_lower_bound,
)
from jaxaudit.stats import gdp_to_rdp

if TYPE_CHECKING:
    from jaxaudit.renyi import CriticConfig

__all__ = ["DpsgdAudit", "audit_dpsgd"]


class DpsgdAudit(NamedTuple):
    """The audit at K orders (RDP units, Mironov's ε_α): every field a float64 numpy array of
    shape (K,), entry i for ``order[i]`` (:meth:`per_order` gives one row per order).

    Attributes:
      order: α.
      accountant: the accountant's ε_α (an upper bound on the truth).
      dv_point: DV held-out point estimate (bias-corrected, direction chosen on the training split;
        an estimate, not a confidence bound).
      dv_lower: DV lower confidence bound at the call's ``confidence``.
      gdp_lower: α μ_lo²/2 from the GDP threshold baseline (its ε at δ is in ``gdp_epsilon``).
      threshold_lower: rigorous RDP lower bound of the threshold test.
      gdp_epsilon: the GDP baseline's (ε, δ) lower bound at the ``delta`` of the call (the unit
        Annamalai & De Cristofaro report; the same at every order).
      mu: the GDP baseline's μ lower bound (their μ_emp; the same at every order).
      violation: True when a rigorous lower bound (dv_lower, gdp_lower, threshold_lower) exceeds
        the accountant (beyond 1e-9 relative). Each bound holds with probability
        ``confidence`` on its own, so one flag is a false alarm with probability
        ≤ 3(1 − confidence), and "some order is flagged" over k orders with probability
        ≤ 3k(1 − confidence) (union bound): for a family-wise failure probability s, call with
        ``confidence = 1 − s / (3k)``.
      dv_se: held-out standard error of ``dv_point`` given the critic (delta method; the
        critic's training variability is not in it).
    """

    order: np.ndarray
    accountant: np.ndarray
    dv_point: np.ndarray
    dv_lower: np.ndarray
    gdp_lower: np.ndarray
    threshold_lower: np.ndarray
    gdp_epsilon: np.ndarray
    mu: np.ndarray
    violation: np.ndarray
    dv_se: np.ndarray

    def per_order(self) -> list[DpsgdAudit]:
        """One :class:`DpsgdAudit` per order, its fields Python numbers (a table's rows)."""
        return [DpsgdAudit(*(np.asarray(f)[i].item() for f in self))
                for i in range(np.size(self.order))]


def audit_dpsgd(key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike,
                accountant: RdpCurve, *, confidence: float = 0.95, delta: ArrayLike = 1e-5,
                radius: str = "bernstein", critic: CriticConfig | None = None) -> DpsgdAudit:
    """Lower-bound ε_α of the audited training from in/out canary scores, at each order of the
    guarantee it claims.

    Every lower bound holds with the same probability ``confidence`` (failure probability
    1 − confidence): ``estimate_renyi(..., confidence=confidence)`` (held-out split, both
    directions), and the threshold baselines with Clopper–Pearson bounds at ``confidence``
    (threshold chosen on a separate split). The statements hold per order and per method; see
    :class:`DpsgdAudit` ``violation`` for the family-wise (Bonferroni) reading.

    Args:
      key: PRNG key for the DV estimator.
      in_scores: (R,) scores of runs with the canary; out_scores: (R',) without.
      accountant: the audited guarantee, the accountant's add/remove RDP curve at the orders
        to audit (α > 1), e.g. ``RdpCurve(orders, rdp_epsilons(orders=orders,
        noise_multiplier=σ, sampling_rate=q, steps=T), "add_remove")``.
      confidence: coverage of every lower bound, in (0, 1).
      delta: δ of the GDP baseline's (ε, δ) statement (DP's δ).
      radius: the DV bound's concentration radius, "bernstein" or "hoeffding" (see
        ``estimate_renyi``).
      critic: ``jaxaudit.renyi.CriticConfig`` for the DV critic (default: its defaults).

    Returns:
      A :class:`DpsgdAudit`, arrays of shape (K,) over the curve's orders.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxaudit.accounting import RdpCurve, rdp_epsilons
      >>> from jaxaudit.dpsgd import audit_dpsgd
      >>> orders = np.array([2.0, 4.0])
      >>> curve = RdpCurve(orders, rdp_epsilons(orders=orders, noise_multiplier=1.0,
      ...                                       sampling_rate=1.0, steps=1), "add_remove")
      >>> rng = np.random.default_rng(0)
      >>> audit = audit_dpsgd(jax.random.key(0), rng.normal(1.0, 1.0, 400),
      ...                     rng.normal(0.0, 1.0, 400), curve)
      >>> audit.order.shape, bool(audit.violation.any())
      ((2,), False)
    """
    in_s = check_finite("in_scores", in_scores)
    out_s = check_finite("out_scores", out_scores)
    for name, arr in (("in_scores", in_s), ("out_scores", out_s)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D (one score per run), got shape {arr.shape}")
    if not isinstance(accountant, RdpCurve):
        raise TypeError(f"accountant must be a jaxaudit.accounting.RdpCurve (the audited "
                        f"guarantee), got {type(accountant).__name__}")
    if accountant.relation != "add_remove":
        raise ValueError(f"accountant.relation must be 'add_remove' (a canary is added or "
                         f"removed), got {accountant.relation!r}")
    accountant.validate()
    orders_arr = np.atleast_1d(check_orders("accountant.orders", accountant.orders))
    upper = np.atleast_1d(np.asarray(accountant.epsilons, np.float64))
    confidence = float(check_probability("confidence", confidence, open_low=True,
                                         open_high=True))
    est = estimate_renyi(key, in_s, out_s, orders_arr.astype(np.float32),
                         confidence=confidence, radius=radius, config=critic)
    dv_point = np.atleast_1d(np.asarray(jax.device_get(est.point), np.float64))
    dv_lower = np.atleast_1d(np.asarray(jax.device_get(est.lower), np.float64))
    dv_se = np.atleast_1d(np.asarray(jax.device_get(est.point_se), np.float64))
    # the threshold baselines' held-out split is drawn (on the host) from the same key
    gdp = gdp_epsilon_lower_bound(key, in_s, out_s, delta, confidence=confidence)
    thr = np.atleast_1d(np.asarray(threshold_renyi_lower_bound(
        key, in_s, out_s, orders_arr, confidence=confidence), np.float64))
    order = orders_arr.astype(np.float64)
    gdp_rdp = np.array([float(gdp_to_rdp(gdp.mu, a)) for a in order], np.float64)
    lowers = np.stack([np.maximum(dv_lower, 0.0), gdp_rdp, thr])
    violation = np.asarray((lowers > upper * (1 + 1e-9) + 1e-12).any(axis=0))
    k = order.shape[0]
    return DpsgdAudit(order, upper, dv_point, dv_lower, gdp_rdp, thr,
                      np.full(k, float(gdp.epsilon)), np.full(k, float(gdp.mu)), violation, dv_se)
