"""Node-level membership inference: LiRA, decisions, error counts, metrics (spec: bmp.md §4.4–4.5)."""
