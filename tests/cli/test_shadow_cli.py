"""``jaxaudit shadow``: writes chunks, resumes, refuses a different configuration."""

import json

import numpy as np

from jaxaudit.cli.main import main
from jaxaudit.runs import load_results

ARGS = ["shadow", "--dataset", "csbm", "--csbm-nodes", "200", "--model", "gcn", "--sampler",
        "uniform", "--ratio", "0.5", "--models", "4", "--chunk", "2", "--epochs", "5",
        "--edge-access", "inductive", "--quiet"]


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
