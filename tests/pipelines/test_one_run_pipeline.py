"""run_one_run: one DP-SGD training run with m canaries through the library, on a tiny
configuration (synthetic MNIST-shaped data, logistic regression, few steps)."""

import json

import numpy as np
import pytest

from jaxaudit.pipelines import OneRunAuditConfig, run_one_run
from jaxaudit.pipelines.one_run import RECIPE

pytestmark = pytest.mark.slow  # two tiny trainings and their score bounds: ~1 min on two cores

TINY = OneRunAuditConfig(dataset="synthetic", model="logreg", dataset_size=32, num_canaries=64,
                         epsilon=4.0, dpsgd=RECIPE._replace(steps=3))


def test_gradient_canaries_through_the_pipeline_write_the_run_folder(tmp_path):
    res = run_one_run(TINY, tmp_path / "run")
    assert res.scores.shape == (64,) and res.included.dtype == bool
    assert res.noise_multiplier > 0
    assert res.accountant_epsilon == pytest.approx(4.0, rel=1e-3)  # σ calibrated by RDP
    assert 0.0 <= res.one_run <= res.accountant_epsilon
    stored = json.loads((tmp_path / "run" / "result.json").read_text())
    assert stored["one_run"] == res.one_run and stored["noise_multiplier"] == res.noise_multiplier
    again = run_one_run(TINY, tmp_path / "run")  # same configuration, same numbers
    np.testing.assert_array_equal(again.scores, res.scores)
    with pytest.raises(ValueError):
        run_one_run(TINY._replace(dpsgd=TINY.dpsgd._replace(steps=4)), tmp_path / "run")  # another configuration


def test_input_canaries_and_checked_fields():
    res = run_one_run(TINY._replace(kind="input"))
    assert res.path is None and np.all(res.scores <= 0.0)
    with pytest.raises(ValueError, match="num_canaries"):
        run_one_run(TINY._replace(num_canaries=4))
    with pytest.raises(ValueError, match="kind"):
        run_one_run(TINY._replace(kind="label"))


def test_a_target_no_noise_reaches_is_noted_and_warned(tmp_path):
    """--epsilon 1e9: σ is floored at 0.001; the result, result.json and the warning say that
    the target was not reached and at which ε the run was audited."""
    with pytest.warns(UserWarning, match=r"target ε = 1e\+09 .* was not reached"):
        res = run_one_run(TINY._replace(epsilon=1e9), tmp_path / "run")
    assert res.noise_multiplier == pytest.approx(0.001) and res.accountant_epsilon < 1e9
    assert "not reached" in res.note
    assert json.loads((tmp_path / "run" / "result.json").read_text())["note"] == res.note
    assert run_one_run(TINY).note == ""
