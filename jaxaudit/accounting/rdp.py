"""Rényi-DP accounting of the (Poisson-subsampled) Gaussian mechanism via dp_accounting.

These are thin wrappers over Google's ``dp_accounting`` (``RdpAccountant`` and its mechanism
calibration); the subsampled-Gaussian RDP is never re-derived here.

References:
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476).
  Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
  arXiv 1908.10530 (2019).
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_integer,
    check_orders,
    check_positive,
    check_probability,
)

__all__ = ["DEFAULT_ORDERS", "rdp_epsilons", "epsilon_for_delta", "noise_for_epsilon"]

#: Orders used when none are given (dp_accounting's default grid plus a few small ones).
DEFAULT_ORDERS: tuple[float, ...] = (
    1.1, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0,
    16.0, 20.0, 24.0, 28.0, 32.0, 64.0, 128.0, 256.0,
)


def _check_mechanism(noise_multiplier, sampling_rate, steps) -> tuple[float, float, int]:
    sigma = float(check_positive("noise_multiplier", noise_multiplier))
    q = float(check_probability("sampling_rate", sampling_rate, open_low=True))
    steps_int = check_integer("steps", steps, minimum=1)
    return sigma, q, steps_int


def _event(sigma: float, q: float, steps: int) -> dp_accounting.DpEvent:
    gaussian = dp_accounting.GaussianDpEvent(sigma)
    step = gaussian if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gaussian)
    return dp_accounting.SelfComposedDpEvent(step, steps)


def rdp_epsilons(
    *, noise_multiplier: float, sampling_rate: float, steps: int, orders: ArrayLike,
) -> np.ndarray:
    """RDP guarantee ε_α of ``steps`` rounds of the Poisson-subsampled Gaussian mechanism.

    Composes ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), T)`` in
    ``dp_accounting.rdp.RdpAccountant(orders)`` (add/remove neighbours) and reads ``.rdp``. At
    ``sampling_rate = 1`` this is exactly ε_α = α T / (2 σ²) = α μ² / 2 with μ = √T / σ.

    Args:
      noise_multiplier: σ, the noise standard deviation in units of the clipping norm (> 0).
      sampling_rate: q ∈ (0, 1], the Poisson sampling probability of each example.
      steps: T ≥ 1, the number of composed rounds.
      orders: one order α > 1 or a sequence of them (Mironov's D_α units).

    Returns:
      float64 array of ε_α with the shape of ``np.atleast_1d(orders)``.

    Examples:
      >>> float(rdp_epsilons(noise_multiplier=2.0, sampling_rate=1.0, steps=8, orders=[2.0])[0])
      2.0

    References:
      Mironov, Talwar, Zhang (2019), arXiv 1908.10530; dp_accounting ``RdpAccountant``.
    """
    sigma, q, steps = _check_mechanism(noise_multiplier, sampling_rate, steps)
    alphas = check_orders("orders", orders)
    accountant = dp_accounting.rdp.RdpAccountant(list(map(float, alphas)))
    accountant.compose(_event(sigma, q, steps))
    return np.asarray(accountant.rdp, dtype=np.float64)


def epsilon_for_delta(*, noise_multiplier: float, sampling_rate: float, steps: int,
                      delta: ArrayLike, orders: Sequence[float] | None = None) -> float:
    """(ε, δ)-DP guarantee of the same mechanism by RDP conversion (dp_accounting's own).

    Args:
      noise_multiplier: σ > 0.
      sampling_rate: q ∈ (0, 1].
      steps: T ≥ 1.
      delta: target δ ∈ (0, 1).
      orders: orders to optimise the conversion over (default :data:`DEFAULT_ORDERS`).

    Returns:
      ε such that the mechanism is (ε, δ)-DP, from ``RdpAccountant.get_epsilon(delta)``.
    """
    sigma, q, steps = _check_mechanism(noise_multiplier, sampling_rate, steps)
    delta = float(check_probability("delta", delta, open_low=True, open_high=True))
    alphas = check_orders("orders", DEFAULT_ORDERS if orders is None else orders)
    accountant = dp_accounting.rdp.RdpAccountant(list(map(float, alphas)))
    accountant.compose(_event(sigma, q, steps))
    return float(accountant.get_epsilon(delta))


ACCOUNTANTS = ("rdp", "pld")


def noise_for_epsilon(epsilon: ArrayLike, delta: ArrayLike, steps: int, sampling_rate: float, *,
                      orders: ArrayLike = None, accountant: str = "rdp") -> float:
    """Smallest noise multiplier σ for which T rounds are (ε, δ)-DP.

    Uses ``dp_accounting.calibrate_dp_mechanism`` (bracketing + bisection) with fresh
    ``RdpAccountant`` (``accountant="rdp"``) or ``PLDAccountant`` (``"pld"``) instances.
    The RDP conversion to (ε, δ) is loose: at full batch, T = 100, (10, 1e−5) it gives
    σ = 5.30 (μ = √T/σ = 1.887) where the privacy-loss-distribution accountant gives the nearly
    exact σ = 5.00 (μ = 2.000, the μ-GDP value). Annamalai & De Cristofaro (arXiv 2405.14106)
    calibrate with a PRV accountant, i.e. the tight value: use ``"pld"`` to audit at their
    noise level.

    Args:
      epsilon: target ε > 0.
      delta: target δ ∈ (0, 1).
      steps: T ≥ 1.
      sampling_rate: q ∈ (0, 1].
      orders: orders for the RDP accountant (default :data:`DEFAULT_ORDERS`).
      accountant: "rdp" (default, the bound the RDP audit compares with) or "pld" (tight).

    Returns:
      σ (float) at which the chosen accountant certifies (ε, δ) (up to the calibration
      tolerance of dp_accounting).

    Example:
      >>> round(noise_for_epsilon(10.0, 1e-5, 100, 1.0, accountant="pld"), 2)
      5.0
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    epsilon = float(check_positive("epsilon", epsilon))
    delta = float(check_probability("delta", delta, open_low=True, open_high=True))
    _, q, steps = _check_mechanism(1.0, sampling_rate, steps)
    alphas = list(map(float, check_orders("orders", DEFAULT_ORDERS if orders is None else orders)))
    make = ((lambda: dp_accounting.rdp.RdpAccountant(alphas)) if accountant == "rdp" else
            (lambda: dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)))
    # The PLD discretisation blows up for σ ≪ 1 (a grid of 10^12 losses at σ = 10^-3).
    lowest = 1e-3 if accountant == "rdp" else 0.2
    return float(
        dp_accounting.calibrate_dp_mechanism(
            make,
            lambda sigma: _event(sigma, q, steps),
            epsilon,
            delta,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(lowest, 1.0),
        )
    )
