"""The one statistics module: Clopper–Pearson intervals, Bernstein/Hoeffding radii and the
Gaussian-DP conversions that ``bmp``, ``renyi``, ``dpsgd``, ``bounds`` and ``attacks`` share."""

__all__: list[str] = []
