"""jraph GNN shadow models, graph samplers and the ``Graph`` type (Yıldırım & Khosla, arXiv
2606.04069; our choices: docs/gnn_mia.md)."""

from jaxaudit.graph.build import (
    from_edge_index,
    from_networkx,
    from_pyg,
    load_graph_npz,
    save_graph_npz,
)
from jaxaudit.graph.models import GAT, GCN, GraphSAGE
from jaxaudit.graph.propagation import SparseFeatures, sparse_features, sparse_matmul
from jaxaudit.graph.samplers import (
    SAMPLERS,
    ExactSampler,
    Sample,
    Sampler,
    inclusion_probabilities,
    induced_edges,
    poisson_sampler,
    random_walk_sampler,
    sampler_by_name,
    snowball_sampler,
    uniform_sampler,
)
from jaxaudit.graph.shadow_models import (
    EDGE_ACCESS,
    ShadowModels,
    ShadowTraining,
    gnn_logits,
    train_gnn,
    train_shadow_model,
    train_shadow_models,
    true_class_logit,
)
from jaxaudit.graph.types import Graph, node_degrees

__all__ = [
    "EDGE_ACCESS",
    "SAMPLERS",
    "ExactSampler",
    "GAT",
    "GCN",
    "Graph",
    "GraphSAGE",
    "Sample",
    "Sampler",
    "ShadowModels",
    "ShadowTraining",
    "from_edge_index",
    "from_networkx",
    "from_pyg",
    "SparseFeatures",
    "gnn_logits",
    "inclusion_probabilities",
    "induced_edges",
    "load_graph_npz",
    "node_degrees",
    "poisson_sampler",
    "random_walk_sampler",
    "snowball_sampler",
    "sampler_by_name",
    "save_graph_npz",
    "sparse_features",
    "sparse_matmul",
    "train_gnn",
    "train_shadow_model",
    "train_shadow_models",
    "true_class_logit",
    "uniform_sampler",
]
