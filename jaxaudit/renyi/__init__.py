"""Rényi-DP auditing with a Donsker–Varadhan critic (spec: renyi.md §1–3)."""
