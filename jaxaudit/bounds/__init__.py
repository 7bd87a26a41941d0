"""Adversary-aware DP bounds (spec: bounds.md). Filled in by the bounds issue."""
