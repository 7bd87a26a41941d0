"""Data sets: Planetoid (Cora, CiteSeer), MNIST, and the synthetic CSBM.

Data directory resolution: explicit ``data_dir`` argument > ``JAXAUDIT_DATA`` environment
variable > ``~/.cache/jaxaudit``; files live in ``planetoid/`` and ``mnist/`` below it. Every
known file is checked against the SHA-256 recorded in :mod:`jaxaudit.datasets._files`;
``download=True`` fetches missing files from their canonical public location.
"""

from jaxaudit.datasets._files import FileStatus, resolve_data_dir, verify_files
from jaxaudit.datasets.csbm import edge_homophily, make_csbm
from jaxaudit.datasets.graph import Graph
from jaxaudit.datasets.mnist import load_mnist
from jaxaudit.datasets.planetoid import load_planetoid

__all__ = [
    "FileStatus",
    "Graph",
    "edge_homophily",
    "load_mnist",
    "load_planetoid",
    "make_csbm",
    "resolve_data_dir",
    "verify_files",
]
