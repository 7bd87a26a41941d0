"""Data sets: Planetoid (Cora, CiteSeer), MNIST test split, and the synthetic CSBM.

Data directory resolution: explicit ``data_dir`` argument > ``JAXAUDIT_DATA`` environment
variable > ``~/.cache/jaxaudit``; files live in ``planetoid/`` and ``mnist/`` below it.
"""

from jaxaudit.datasets.graph import Graph

__all__ = ["Graph"]
