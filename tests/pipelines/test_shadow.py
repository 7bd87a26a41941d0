"""`run_shadow` as a library call: the key rule against the trainer, resume and refusal,
progress, any flax module, an in-memory graph, and bad configuration fields named."""

import json
import warnings

import flax.linen as nn
import jax
import numpy as np
import pytest

from jaxaudit.graph import ShadowTraining, from_edge_index, train_shadow_models, uniform_sampler
from jaxaudit.pipelines import ShadowConfig, ShadowRun, load_shadow, run_shadow
from jaxaudit.runs import Sweep, load_results, unit_keys

SMALL = ShadowConfig(dataset="csbm", csbm_nodes=60, num_models=4, chunk=2, epochs=2, seed=3)


def _own_graph(n=40, seed=0):
    """A two-class graph with dense features (written by the test, not a data set)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    x = np.eye(2)[y] + 0.5 * rng.normal(size=(n, 2))
    edges = np.stack(np.nonzero(np.triu(rng.random((n, n)) < 0.1, 1)))
    return from_edge_index(x, y, edges, name="mine")


class TinyMLP(nn.Module):
    """A user's own shadow model: ignores the edges."""

    num_classes: int = 2
    hidden: int = 8

    @nn.compact
    def __call__(self, graph, training: bool = False):
        return nn.Dense(self.num_classes)(nn.relu(nn.Dense(self.hidden)(graph.nodes)))


@pytest.mark.slow  # trains shadow models (compilation: ~10-60 s on two busy cores)
def test_run_shadow_follows_the_key_rule_resumes_and_refuses(tmp_path):
    calls = []
    out = tmp_path / "run"
    result = run_shadow(SMALL, out, progress=lambda done, total: calls.append((done, total)))
    assert isinstance(result, ShadowRun) and result.path == out and result.missing == ()
    assert calls[0] == (0, 2) and calls[-1] == (2, 2) and len(calls) == 3
    # model m uses unit_key(seed, m) whatever the chunking: the trainer with those keys
    from jaxaudit.datasets import graph_by_name

    graph = graph_by_name("csbm", key=jax.random.key(3), num_nodes=60)
    ref = train_shadow_models(unit_keys(jax.random.key(3), 0, 4), graph, uniform_sampler(0.5), "gcn", 4, ShadowTraining(epochs=2))
    np.testing.assert_array_equal(result.masks, np.asarray(ref.masks))
    np.testing.assert_allclose(result.scores, np.asarray(ref.scores), rtol=1e-5, atol=1e-5)
    assert set(result.masks.sum(1).tolist()) == {30} and result.mean_inclusion == 0.5
    assert 0.0 <= result.lira_global_auc <= 1.0
    # the folder: chunks, summary, manifest keys of `jaxaudit shadow`
    loaded = load_results(out)
    assert sorted(loaded.chunks) == ["chunk_00000", "chunk_00001"] and not loaded.missing
    assert loaded.chunks["chunk_00000"]["masks"].shape == (2, 60)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_models"] == 4 and summary["num_nodes"] == 60
    assert summary["chunks"] == ["chunk_00000", "chunk_00001"]
    assert summary["lira_global_auc"] == pytest.approx(result.lira_global_auc)
    # node-level DP (the field dp) is stored only when on (tests/pipelines/test_shadow_dp.py)
    assert set(ShadowConfig._fields) - {"data_dir", "dp"} | {"derived"} == set(loaded.config)
    assert loaded.config["derived"]["key_rule"] == "unit-fold-in-v1"
    again = load_shadow(out)
    np.testing.assert_array_equal(again.masks, result.masks)
    np.testing.assert_array_equal(again.scores, result.scores)

    # interrupted: the second chunk lost; only it is recomputed
    (out / "chunks" / "chunk_00001.npz").unlink()
    mtime = (out / "chunks" / "chunk_00000.npz").stat().st_mtime_ns
    calls.clear()
    resumed = run_shadow(SMALL, out, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (1, 2) and calls[-1] == (2, 2)
    assert (out / "chunks" / "chunk_00000.npz").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(resumed.masks, result.masks)
    np.testing.assert_allclose(resumed.scores, result.scores, rtol=1e-5, atol=1e-5)

    # another configuration in the same folder is refused
    with pytest.raises(ValueError, match="different configuration"):
        run_shadow(SMALL._replace(ratio=0.4), out)

    # in memory, chunked otherwise: the same models, nothing written
    memory = run_shadow(SMALL._replace(chunk=3))
    assert memory.path is None
    np.testing.assert_array_equal(memory.masks, result.masks)
    np.testing.assert_allclose(memory.scores, result.scores, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # trains shadow models (compilation: ~10-60 s on two busy cores)
def test_workers_share_the_chunks(tmp_path):
    out = tmp_path / "run"
    first = run_shadow(SMALL, out, sweep=Sweep(worker=(0, 2)))
    assert first.missing == ("chunk_00001",) and first.masks.shape == (2, 60)
    assert not (out / "summary.json").exists()
    second = run_shadow(SMALL, out, sweep=Sweep(worker=(1, 2)))
    assert second.missing == () and second.masks.shape == (4, 60)
    assert (out / "summary.json").is_file()
    whole = run_shadow(SMALL)
    np.testing.assert_array_equal(second.masks, whole.masks)


@pytest.mark.slow  # trains shadow models (compilation: ~10-60 s on two busy cores)
def test_any_flax_module_and_an_in_memory_graph(tmp_path):
    graph = _own_graph()
    config = ShadowConfig(num_models=3, chunk=2, epochs=3, seed=1)
    out = tmp_path / "mlp"
    result = run_shadow(config, out, model=TinyMLP(), graph=graph)
    ref = train_shadow_models(unit_keys(jax.random.key(1), 0, 3), graph, uniform_sampler(0.5), TinyMLP(), 3, ShadowTraining(epochs=3))
    np.testing.assert_array_equal(result.masks, np.asarray(ref.masks))
    np.testing.assert_allclose(result.scores, np.asarray(ref.scores), rtol=1e-5, atol=1e-5)
    cfg = load_results(out).config
    assert cfg["derived"]["model"].startswith("flax:TinyMLP")
    assert cfg["derived"]["graph"]["num_nodes"] == 40
    run_shadow(config, out, model=TinyMLP(), graph=graph)             # resumes
    with pytest.raises(ValueError, match="different configuration"):
        run_shadow(config, out, model=TinyMLP(hidden=16), graph=graph)
    with pytest.raises(ValueError, match="different configuration"):
        run_shadow(config, out, model=TinyMLP(), graph=_own_graph(seed=1))
    with pytest.raises(ValueError, match="model must be a flax"):
        run_shadow(config, model="gcn-like")


@pytest.mark.slow  # trains shadow models (compilation: ~10-60 s on two busy cores)
def test_graph_file_is_stored_with_its_hash(tmp_path):
    from jaxaudit.graph import save_graph_npz

    path = save_graph_npz(tmp_path / "g.npz", _own_graph())
    config = ShadowConfig(graph_file=path, num_models=2, epochs=1)
    result = run_shadow(config, tmp_path / "run")
    assert result.config["graph_file"] == str(path)
    assert len(result.config["derived"]["graph_file_sha256"]) == 64
    with pytest.raises(ValueError, match="graph and graph_file"):
        run_shadow(config, graph=_own_graph())


@pytest.mark.parametrize(("field", "value"), [
    ("num_models", 0), ("num_models", 10**12), ("epochs", 0), ("ratio", 1.5), ("ratio", 0.0),
    ("dataset", "mnist"), ("model", "resnet"), ("sampler", "bfs"), ("learning_rate", float("inf")),
    ("weight_decay", -1.0), ("seed", -1), ("chunk", 0), ("csbm_nodes", 1),
    ("edge_access", "some"), ("snowball_edges", "all"), ("graph_file", "/no/such.npz"),
])
def test_bad_field_named_before_any_folder(tmp_path, field, value):
    config = SMALL._replace(**{field: value})
    with pytest.raises(ValueError if field != "graph_file" else FileNotFoundError,
                       match=field):
        run_shadow(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_result_size_and_run_dir_checked(tmp_path):
    with pytest.raises(ValueError, match="num_models .* GiB"):
        run_shadow(SMALL._replace(num_models=100_000, csbm_nodes=50_000), tmp_path / "a")
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ValueError, match="run_dir .* is a file"):
        run_shadow(SMALL, afile)


@pytest.mark.slow  # trains shadow models (compilation: ~10-60 s on two busy cores)
def test_diverged_training_leaves_the_folder_reusable(tmp_path):
    out = tmp_path / "run"
    tiny = ShadowConfig(dataset="csbm", csbm_nodes=60, num_models=2, epochs=1)
    with pytest.raises(ValueError, match="diverged.*learning_rate"):
        run_shadow(tiny._replace(learning_rate=1e30), out)
    assert not out.exists()
    assert np.isfinite(run_shadow(tiny, out).scores).all()


def test_cli_limits_and_names_agree_with_the_library():
    from jaxaudit.cli import shadow as cli
    from jaxaudit.pipelines import shadow_models as lib

    assert cli.MODELS == lib.MODELS
    assert (cli.MAX_MODELS, cli.MAX_EPOCHS, cli.MAX_CSBM_NODES) == (
        lib.MAX_MODELS, lib.MAX_EPOCHS, lib.MAX_CSBM_NODES)
    assert cli.MAX_RESULT_GIB * 2**30 == lib.MAX_RESULT_BYTES
    assert cli.BYTES_PER_SCORE == lib.BYTES_PER_SCORE


def test_a_sampler_that_falls_short_of_its_ratio_is_reported():
    from jaxaudit.pipelines.shadow import _warn_short_samples

    rng = np.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match=r"snowball samples hold 0\.550 of the nodes"):
        _warn_short_samples(np.arange(1000) % 20 < 11, 0.8, "snowball")  # 0.55 of 0.8
    exact = rng.permutation(np.arange(64 * 100).reshape(64, 100) % 2 == 0)
    poisson = rng.random((1, 40)) < 0.5  # one small Poisson sample: its own spread, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_short_samples(exact, 0.5, "uniform")
        _warn_short_samples((np.arange(40) < 18)[None], 0.5, "poisson")  # 0.45: 1.3 SE short
        _warn_short_samples(poisson, 0.5, "poisson")
        _warn_short_samples(np.zeros((0, 0), bool), 0.5, "uniform")


@pytest.mark.slow  # trains shadow models
def test_run_shadow_warns_when_the_snowball_cannot_reach_the_ratio():
    # 30 connected nodes and 30 isolated ones: the snowball grows through the seeds' components
    # only, so it can never hold 90% of the nodes
    n = 60
    y = np.arange(n) % 2
    x = np.eye(2)[y]
    ring = np.stack([np.arange(29), np.arange(1, 30)])
    graph = from_edge_index(x, y, ring, name="islands")
    config = ShadowConfig(num_models=2, chunk=2, epochs=2, seed=0, sampler="snowball", ratio=0.9)
    with pytest.warns(RuntimeWarning, match="ran out of reachable nodes"):
        result = run_shadow(config, model=TinyMLP(), graph=graph)
    assert result.mean_inclusion < 0.8
