"""The one statistics module: Clopper–Pearson intervals, Bernstein/Hoeffding radii and the
Gaussian-DP conversions that ``bmp``, ``renyi``, ``dpsgd``, ``bounds`` and ``attacks`` share.

  * :func:`clopper_pearson_upper`, :func:`clopper_pearson_lower` — exact binomial limits
    (``confidence`` is the one-sided coverage, e.g. 0.95).
  * :func:`hoeffding_radius`, :func:`bernstein_radius` — concentration radii of a mean.
  * :func:`gdp_epsilon`, :func:`gdp_to_rdp` — μ-GDP to (ε, δ) and to RDP.

Every function has a traceable core and works inside the user's ``jax.jit``/``jax.vmap``
(``grad`` where differentiable); naming follows docs/vocabulary.md.
"""

from jaxaudit.stats.binomial import clopper_pearson_lower, clopper_pearson_upper
from jaxaudit.stats.gdp import gdp_epsilon, gdp_to_rdp
from jaxaudit.stats.radii import bernstein_radius, hoeffding_radius

__all__ = [
    "bernstein_radius",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "gdp_epsilon",
    "gdp_to_rdp",
    "hoeffding_radius",
]
