"""Parameter pytrees stored as named arrays in a run folder and read back."""

import jax
import numpy as np
import pytest

from jaxaudit.dpsgd import SmallCNN
from jaxaudit.runs import RunDir, params_from_arrays, params_to_arrays, run_chunks


@pytest.mark.slow
def test_flax_params_round_trip_through_a_run_folder(tmp_path):
    model = SmallCNN()
    params = model.init(jax.random.key(0), np.zeros((1, 28, 28), np.float32))
    rundir = RunDir.open(tmp_path / "run", kind="test", config={"a": 1})
    stored = run_chunks(rundir, ["init"], lambda _name: params_to_arrays(params))["init"]
    assert sorted(stored) == [f"leaf_{i:03d}" for i in range(len(jax.tree.leaves(params)))]
    # a fresh template with another key: only its structure is used
    back = params_from_arrays(stored, like=model.init(jax.random.key(1), np.zeros((1, 28, 28))))
    assert jax.tree.structure(back) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_mismatched_names_are_refused():
    tree = {"w": np.ones(2), "b": np.zeros(())}
    arrays = params_to_arrays(tree)
    with pytest.raises(ValueError, match="arrays must hold"):
        params_from_arrays({"leaf_000": arrays["leaf_000"]}, like=tree)
    with pytest.raises(ValueError, match="arrays must hold"):
        params_from_arrays({**arrays, "extra": np.ones(1)}, like=tree)
