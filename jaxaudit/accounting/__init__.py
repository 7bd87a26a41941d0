"""Thin wrappers over dp_accounting's RDP accountant (Mironov, arXiv 1702.07476; Mironov, Talwar, Zhang, arXiv 1908.10530)."""

from jaxaudit.accounting.rdp import (
    DEFAULT_ORDERS,
    epsilon_for_delta,
    noise_for_epsilon,
    rdp_epsilons,
)

__all__ = ["DEFAULT_ORDERS", "epsilon_for_delta", "noise_for_epsilon", "rdp_epsilons"]
