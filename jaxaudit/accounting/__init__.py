"""Rényi-DP accounting of the Poisson-subsampled Gaussian mechanism (Mironov, arXiv 1702.07476;
Mironov, Talwar, Zhang, arXiv 1908.10530): our exact jnp RDP at every order, dp_accounting's
(ε, δ) conversion rule and its PLD accountant for the tight calibration."""

from jaxaudit.accounting.rdp import (
    DEFAULT_ORDERS,
    epsilon_for_delta,
    noise_for_epsilon,
    rdp_epsilons,
)
from jaxaudit.accounting.sampled_gaussian import sampled_gaussian_rdp

__all__ = ["DEFAULT_ORDERS", "epsilon_for_delta", "noise_for_epsilon", "rdp_epsilons",
           "sampled_gaussian_rdp"]
