"""What every pipeline shares (``pipelines.common``): the stored configuration's precision, and
a run folder refused to a process of the other precision."""

from typing import NamedTuple

import jax
import pytest

from jaxaudit.pipelines import BoundsConfig, run_bounds
from jaxaudit.pipelines.common import open_run, stored_config
from jaxaudit.runs import load_results


class _Config(NamedTuple):
    size: int = 3


def test_the_stored_configuration_names_the_precision():
    assert stored_config(_Config())["derived"]["precision"] == "float32"
    with jax.enable_x64(True):
        assert stored_config(_Config())["derived"]["precision"] == "float64"
    # a value passed as derived cannot override it (a bmp audit copies its shadow run's)
    assert stored_config(_Config(), {"precision": "float64"})["derived"]["precision"] == "float32"


def test_a_folder_is_never_filled_in_two_precisions(tmp_path):
    """A `--worker 1/2` share under JAX_ENABLE_X64=1 wrote float64 chunks into a folder whose
    plain run then finished it in float32, silently: chunks of different models in one run."""
    config = BoundsConfig(epsilon=1.0, prior="uniform:10", targets=100)
    folder = tmp_path / "run"
    with jax.enable_x64(True):
        run_bounds(config, folder, worker=(1, 2))
    with pytest.raises(ValueError, match=r"computed in float64, but this process computes in "
                                         r"float32.*JAX_ENABLE_X64=1.*another output folder"):
        run_bounds(config, folder)
    with jax.enable_x64(True):
        run_bounds(config, folder)                              # the same precision resumes
    assert load_results(folder).config["derived"]["precision"] == "float64"
    other = tmp_path / "other"
    with open_run(other, "test", stored_config(_Config())):
        pass
    with jax.enable_x64(True), pytest.raises(ValueError, match=r"'test' run computed in "
                                                               r"float32.*JAX_ENABLE_X64=0"):
        with open_run(other, "test", stored_config(_Config())):
            pass
