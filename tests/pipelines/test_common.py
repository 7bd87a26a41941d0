"""The run lifecycle every pipeline shares (``pipelines.lifecycle``): the stored configuration
(nested configurations nested, its precision), and a run folder refused to a process of the other
precision."""

from typing import NamedTuple

import jax
import pytest

from jaxaudit.pipelines import BoundsConfig, run_bounds
from jaxaudit.pipelines.lifecycle import open_run, stored_config
from jaxaudit.runs import Sweep, load_results


class _Config(NamedTuple):
    size: int = 3


def test_the_stored_configuration_names_the_precision():
    assert stored_config(_Config())["derived"]["precision"] == "float32"
    with jax.enable_x64(True):
        assert stored_config(_Config())["derived"]["precision"] == "float64"
    # a value passed as derived cannot override it (a bmp audit copies its shadow run's)
    assert stored_config(_Config(), {"precision": "float64"})["derived"]["precision"] == "float32"


class _Outer(NamedTuple):
    inner: _Config = _Config()
    path: str | None = None
    seed: int = 0


def test_a_nested_configuration_is_stored_nested_and_hashed_so():
    """The stored form nests through ``_asdict`` (a dotted ``exclude`` leaves out a nested
    field), and the configuration hash is taken over that nested form."""
    from jaxaudit.runs.files import config_hash

    stored = stored_config(_Outer(), exclude=("path",))
    assert {k: v for k, v in stored.items() if k != "derived"} == {"inner": {"size": 3}, "seed": 0}
    assert stored_config(_Outer(), exclude=("path", "inner.size"))["inner"] == {}
    other = stored_config(_Outer(inner=_Config(size=4)), exclude=("path",))
    assert config_hash(other) != config_hash(stored)


def test_a_folder_is_never_filled_in_two_precisions(tmp_path):
    """A `--worker 1/2` share under JAX_ENABLE_X64=1 wrote float64 chunks into a folder whose
    plain run then finished it in float32, silently: chunks of different models in one run."""
    config = BoundsConfig(epsilon=1.0, prior="uniform:10", targets=100)
    folder = tmp_path / "run"
    with jax.enable_x64(True):
        run_bounds(config, folder, sweep=Sweep(worker=(1, 2)))
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
