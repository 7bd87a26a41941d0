"""Black-box DP-SGD audit (spec: renyi.md §4)."""
