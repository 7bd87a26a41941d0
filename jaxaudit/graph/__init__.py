"""jraph GNN shadow models, graph samplers and the ``Graph`` type (Yıldırım & Khosla, arXiv
2606.04069; our choices: docs/gnn_mia.md).

Helpers stay in their modules: the sparse feature products (:mod:`jaxaudit.graph.propagation`:
``sparse_features``, ``sparse_matmul``, ``linear``), the sampler registry and protocols
(:mod:`jaxaudit.graph.samplers`: ``SAMPLERS``, ``ExactSampler``, ``induced_edges``), the shadow
engine's pieces (:mod:`jaxaudit.graph.shadow_models`: ``EDGE_ACCESS``, ``ShadowModels``,
``train_shadow_model``, ``true_class_logit``), the node-level DP training
(:mod:`jaxaudit.graph.dp_training`: ``NodeMLP``, ``CappedGCN``, ``cap_degrees``,
``noise_for_node_epsilon``) and ``jaxaudit.graph.types.node_degrees``."""

from jaxaudit.graph.build import (
    from_edge_index,
    from_jraph,
    from_networkx,
    from_pyg,
    load_graph_npz,
    save_graph_npz,
)
from jaxaudit.graph.dp_training import NodeDp, node_dp_epsilon
from jaxaudit.graph.models import GAT, GCN, GraphSAGE
from jaxaudit.graph.propagation import SparseFeatures
from jaxaudit.graph.samplers import (
    Sample,
    Sampler,
    inclusion_probabilities,
    poisson_sampler,
    random_walk_sampler,
    sampler_by_name,
    snowball_sampler,
    uniform_sampler,
)
from jaxaudit.graph.shadow_models import (
    ShadowTraining,
    gnn_logits,
    train_gnn,
    train_shadow_models,
)
from jaxaudit.graph.types import Graph

__all__ = [
    "GAT",
    "GCN",
    "Graph",
    "GraphSAGE",
    "NodeDp",
    "Sample",
    "Sampler",
    "ShadowTraining",
    "SparseFeatures",
    "from_edge_index",
    "from_jraph",
    "from_networkx",
    "from_pyg",
    "gnn_logits",
    "inclusion_probabilities",
    "load_graph_npz",
    "node_dp_epsilon",
    "poisson_sampler",
    "random_walk_sampler",
    "sampler_by_name",
    "save_graph_npz",
    "snowball_sampler",
    "train_gnn",
    "train_shadow_models",
    "uniform_sampler",
]
