"""Thin wrappers over dp_accounting's RDP accountant (spec: renyi.md §4)."""
