"""docs/gnn_mia.md's custom GNN runs as written on Cora (two shadow models, three epochs), and a
plain ``nn.Dense`` GNN of the user's own trains on a dense graph of the user's own: a custom model
receives dense features (the built-in models take Cora's as SparseFeatures)."""

import re
from pathlib import Path

import numpy as np
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "gnn_mia.md"


@pytest.mark.slow  # 10-37 s of compilation on two cores: the slow suite, which CI also runs
@pytest.mark.needs_data("cora")
def test_docs_custom_gnn_trains_on_cora_sparse_features():
    text = DOC.read_text()
    section = text.split("*What a custom model receives.*", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    ns: dict = {}
    exec(compile(block, str(DOC), "exec"), ns)  # noqa: S102
    from jaxaudit.graph import SparseFeatures
    from jaxaudit.graph.shadow_models import prepare_inputs

    assert isinstance(prepare_inputs(ns["cora"]).nodes, SparseFeatures)  # the built-in models'
    from jaxaudit.graph.shadow_models import _module_inputs
    assert not isinstance(_module_inputs(ns["MeanGNN"](7), ns["cora"]).nodes, SparseFeatures)
    scores = np.asarray(ns["shadow"].scores)
    assert scores.shape == (2, 2708) and np.all(np.isfinite(scores))


@pytest.mark.slow  # 7 s of compilation on two quiet cores
def test_custom_dense_gnn_trains_on_a_dense_bag_of_words_graph():
    """A graph of the user's own (from_edge_index, 400 x 1433 bag-of-words, 1% nonzero) reaches
    a plain ``nn.Dense`` GNN as a dense array, as the docs say: the sparse storage that the
    built-in models take is not forced on a module of the user's own."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    from jaxaudit.graph import ShadowTraining, from_edge_index, train_shadow_models, uniform_sampler

    rng = np.random.default_rng(0)
    n, f = 400, 1433
    y = rng.integers(0, 2, size=n)
    x = (rng.random((n, f)) < 0.01).astype(np.float32)
    x[np.arange(n), y] = 1.0
    edges = np.stack([rng.integers(0, n, 800), rng.integers(0, n, 800)])
    graph = from_edge_index(x, y, edges, name="mine")
    seen = []

    class DenseGNN(nn.Module):  # h = relu(Dense(x)); mean with the in-neighbours; Dense
        @nn.compact
        def __call__(self, g, training: bool = False):
            seen.append(type(g.nodes))
            h = nn.relu(nn.Dense(8)(g.nodes))
            weight = jnp.ones(g.senders.shape, h.dtype) if g.edges is None else g.edges
            total = jax.ops.segment_sum(h[g.senders] * weight[:, None], g.receivers, n)
            return nn.Dense(2)(h + total)

    shadow = train_shadow_models(jax.random.key(0), graph, uniform_sampler(0.5), DenseGNN(), 2,
                                 ShadowTraining(epochs=1))
    assert shadow.scores.shape == (2, n) and np.all(np.isfinite(np.asarray(shadow.scores)))
    assert seen and all(not t.__name__ == "SparseFeatures" for t in seen)
