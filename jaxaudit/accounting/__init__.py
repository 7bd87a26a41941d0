"""Thin wrappers over dp_accounting's RDP accountant (spec: renyi.md §4)."""

from jaxaudit.accounting.rdp import (
    DEFAULT_ORDERS,
    epsilon_for_delta,
    noise_for_epsilon,
    rdp_epsilons,
)

__all__ = ["DEFAULT_ORDERS", "epsilon_for_delta", "noise_for_epsilon", "rdp_epsilons"]
