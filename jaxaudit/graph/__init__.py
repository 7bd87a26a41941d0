"""jraph GNN shadow models and graph samplers (spec: bmp.md §4.1–4.3)."""
