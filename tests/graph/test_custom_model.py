"""docs/gnn_mia.md's custom GNN runs as written on Cora, whose features reach a custom model as
SparseFeatures (two shadow models, three epochs)."""

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

    assert isinstance(prepare_inputs(ns["cora"]).nodes, SparseFeatures)
    scores = np.asarray(ns["shadow"].scores)
    assert scores.shape == (2, 2708) and np.all(np.isfinite(scores))
