"""Data sets: Planetoid (Cora, CiteSeer), MNIST, CIFAR-10, and the synthetic CSBM.

Data directory resolution: explicit ``data_dir`` argument > ``JAXAUDIT_DATA`` environment
variable > ``~/.cache/jaxaudit``; files live in ``planetoid/``, ``mnist/`` and
``cifar10/cifar-10-batches-py/`` below it. Every known file is checked against the SHA-256
recorded in :mod:`jaxaudit.datasets._files` (the CIFAR-10 batches against their published MD5,
see :mod:`jaxaudit.datasets.cifar10`); ``download=True`` fetches missing files from their
canonical public location.
"""

from jaxaudit.datasets._files import resolve_data_dir
from jaxaudit.datasets.audit_split import AUDIT_DATASETS, audit_data
from jaxaudit.datasets.cifar10 import load_cifar10
from jaxaudit.datasets.csbm import edge_homophily, make_csbm
from jaxaudit.datasets.inventory import describe_dataset, fetch_dataset, verify_data_dir
from jaxaudit.datasets.mnist import load_mnist
from jaxaudit.datasets.planetoid import load_planetoid
from jaxaudit.datasets.registry import GRAPH_DATASETS, graph_by_name

__all__ = [
    "AUDIT_DATASETS",
    "GRAPH_DATASETS",
    "audit_data",
    "describe_dataset",
    "edge_homophily",
    "fetch_dataset",
    "graph_by_name",
    "load_cifar10",
    "load_mnist",
    "load_planetoid",
    "make_csbm",
    "resolve_data_dir",
    "verify_data_dir",
]
