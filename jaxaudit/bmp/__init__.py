"""Bayesian membership privacy: theory, NUTS posterior, end-to-end audit (spec: bmp.md)."""
