"""``jaxaudit shadow``: writes chunks, resumes, refuses a different configuration."""

import json

import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.runs import load_results

ARGS = ["shadow", "--dataset", "csbm", "--csbm-nodes", "200", "--model", "gcn", "--sampler",
        "uniform", "--ratio", "0.5", "--models", "4", "--chunk", "2", "--epochs", "5",
        "--edge-access", "inductive", "--quiet"]


@pytest.mark.slow
def test_shadow_cli_resume_and_refuse(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(ARGS + ["--out", str(out)]) == 0
    results = load_results(out)
    assert sorted(results.chunks) == ["chunk_00000", "chunk_00001"]
    first = results.chunks["chunk_00000"]
    assert first["masks"].shape == (2, 200) and first["scores"].shape == (2, 200)
    assert results.chunks["chunk_00001"]["masks"].shape == (2, 200)
    assert set(first["masks"].sum(1).tolist()) == {100}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_models"] == 4 and 0.0 <= summary["lira_global_auc"] <= 1.0

    # interrupted run: drop the second chunk; the rerun recomputes only that one
    (out / "chunks" / "chunk_00001.npz").unlink()
    mtime = (out / "chunks" / "chunk_00000.npz").stat().st_mtime_ns
    assert main(ARGS + ["--out", str(out)]) == 0
    assert (out / "chunks" / "chunk_00000.npz").stat().st_mtime_ns == mtime
    again = load_results(out).chunks
    np.testing.assert_array_equal(again["chunk_00001"]["masks"],
                                  results.chunks["chunk_00001"]["masks"])
    np.testing.assert_allclose(again["chunk_00001"]["scores"],
                               results.chunks["chunk_00001"]["scores"], rtol=1e-5, atol=1e-5)

    # a different configuration in the same folder is refused with a clean error
    capsys.readouterr()
    bad = [a if a != "0.5" else "0.4" for a in ARGS]
    assert main(bad + ["--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err


def test_shadow_cli_bad_ratio(tmp_path, capsys):
    bad = [a if a != "0.5" else "1.5" for a in ARGS]
    assert main(bad + ["--out", str(tmp_path / "x")]) == 2
    assert "--ratio" in capsys.readouterr().err


@pytest.mark.slow
def test_shadow_diverged_training_refused_before_saving(tmp_path, capsys):
    """--learning-rate 1e30 saved NaN chunks, then failed without naming the
    cause. Now nothing is saved, the error names --learning-rate and the divergence, and the
    corrected command can use the same folder."""
    out = tmp_path / "run"
    tiny = ["shadow", "--dataset", "csbm", "--csbm-nodes", "60", "--models", "2", "--epochs", "1",
            "--quiet", "--out", str(out)]
    assert main([*tiny, "--learning-rate", "1e30"]) == 2
    err = capsys.readouterr().err
    assert "diverged" in err and "--learning-rate" in err and "Traceback" not in err
    assert not out.exists()
    assert main(tiny) == 0
    scores = load_results(out).chunks["chunk_00000"]["scores"]
    assert np.isfinite(scores).all()


def test_non_finite_scores_name_the_learning_rate():
    """The library check behind the command's: one diverged model of three is refused."""
    from jaxaudit.graph.shadow_models import _check_trained

    ok = np.zeros((3, 4), np.float32)
    _check_trained(ok, 0.01, 5e-4)
    for bad in (np.nan, np.inf, -np.inf):
        scores = ok.copy()
        scores[1, 2] = bad
        with pytest.raises(ValueError, match=r"1 of 3 shadow models .*learning_rate=1e\+30"):
            _check_trained(scores, 1e30, 5e-4)


def test_cli_names_agree_with_the_library_registries():
    from jaxaudit.cli.shadow import DATASETS, SAMPLERS
    from jaxaudit.datasets import GRAPH_DATASETS
    from jaxaudit.graph.samplers import SAMPLERS as LIBRARY_SAMPLERS

    assert DATASETS == GRAPH_DATASETS and SAMPLERS == LIBRARY_SAMPLERS


@pytest.mark.slow
def test_own_graph_file_through_shadow_and_bmp(tmp_path, capsys):
    """`--graph FILE.npz`: a user's graph (written by the test) trains shadow models, feeds
    `bmp --shadow`, is stored with its SHA-256, and a changed file is refused on resume."""
    import numpy as np

    from jaxaudit.graph import from_edge_index, save_graph_npz

    rng = np.random.default_rng(0)
    n = 40
    y = rng.integers(0, 2, size=n)
    x = np.eye(2)[y] + 0.5 * rng.normal(size=(n, 2))
    edges = np.stack(np.nonzero(np.triu(rng.random((n, n)) < 0.1, 1)))
    path = save_graph_npz(tmp_path / "mine.npz", from_edge_index(x, y, edges))
    out = tmp_path / "shadow"
    argv = ["shadow", "--graph", str(path), "--models", "4", "--epochs", "2", "--chunk", "4",
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["graph_file"] == str(path)
    assert len(manifest["config"]["derived"]["graph_file_sha256"]) == 64
    scores = np.load(next((out / "chunks").glob("*.npz")))["scores"]
    assert scores.shape == (4, n)
    bmp_out = tmp_path / "bmp"
    assert main(["bmp", "--shadow", str(out), "--out", str(bmp_out), "--num-warmup", "20",
                 "--num-samples", "20", "--num-chains", "2", "--prior-draws", "20", "--no-mp",
                 "--quiet"]) == 0
    assert (bmp_out / "nodes.csv").read_text().count("\n") == n + 1
    save_graph_npz(path, from_edge_index(x, y, edges[:, :-1]))      # the file changes
    assert main(argv) == 2
    assert "different configuration" in capsys.readouterr().err
    assert main(["bmp", "--graph", str(path), "--shadow", str(out), "--out",
                 str(tmp_path / "both")]) == 2
    assert "--graph and --shadow" in capsys.readouterr().err


def test_shadow_cli_builds_the_config_and_prints_the_summary(tmp_path, capsys, monkeypatch):
    """The command parses its flags into a ShadowConfig, calls run_shadow once with a progress
    bar and prints report.shadow's summary (no training here: the pipeline is replaced)."""
    import jaxaudit.pipelines as pipelines
    from jaxaudit.pipelines import ShadowRun
    from jaxaudit.runs import ProgressBar

    seen = {}

    def fake(config, run_dir, *, progress=None, sweep=None):
        seen.update(config=config, run_dir=run_dir, progress=progress)
        masks = np.array([[True, False], [False, True], [True, True], [False, False]])
        return ShadowRun(masks, np.zeros((4, 2), np.float32), 0.5, 0.625, {"chunk": 2},
                         tmp_path)

    monkeypatch.setattr(pipelines, "run_shadow", fake)
    argv = [a for a in ARGS if a != "--quiet"]
    assert main([*argv, "--seed", "7", "--learning-rate", "0.02", "--out", str(tmp_path)]) == 0
    config = seen["config"]
    assert (config.dataset, config.csbm_nodes, config.num_models, config.chunk, config.epochs,
            config.seed, config.learning_rate) == ("csbm", 200, 4, 2, 5, 7, 0.02)
    assert seen["run_dir"] == str(tmp_path) and isinstance(seen["progress"], ProgressBar)
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"num_models": 4, "num_nodes": 2, "mean_inclusion": 0.5,
                       "chunks": ["chunk_00000", "chunk_00001"], "lira_global_auc": 0.625,
                       "out": str(tmp_path)}
