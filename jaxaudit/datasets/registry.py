"""Graphs by name: the registry that the command line, the notebooks and the benchmarks share."""

from __future__ import annotations

import os

import jax

from jaxaudit._validation import check_choice, check_key
from jaxaudit.datasets.csbm import make_csbm
from jaxaudit.datasets.planetoid import PLANETOID_NAMES, load_planetoid
from jaxaudit.graph.types import Graph

__all__ = ["GRAPH_DATASETS", "graph_by_name"]

#: The graphs by name: the Planetoid data sets and the generated CSBM.
GRAPH_DATASETS = (*PLANETOID_NAMES, "csbm")


def graph_by_name(name: str, *, key: jax.Array | None = None, num_nodes: int = 2708,
                  data_dir: str | os.PathLike[str] | None = None) -> Graph:
    """The graph called ``name`` (one of :data:`GRAPH_DATASETS`): Cora or CiteSeer from
    ``data_dir`` (:func:`load_planetoid`), or a CSBM of ``num_nodes`` nodes with Bernoulli
    features drawn with ``key`` (:func:`make_csbm`; None: ``jax.random.key(0)``; a pipeline passes
    its root key ``jax.random.key(seed)``, the run plan's rule for generated data). A user's own
    graph: :func:`jaxaudit.graph.from_edge_index` or :func:`jaxaudit.graph.load_graph_npz`."""
    check_choice("name", name, GRAPH_DATASETS)
    if name == "csbm":
        key = jax.random.key(0) if key is None else key
        check_key("key", key)
        return make_csbm(key, num_nodes=num_nodes, features="bernoulli")
    return load_planetoid(name, data_dir=data_dir)
