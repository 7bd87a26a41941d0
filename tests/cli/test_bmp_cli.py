"""`jaxaudit bmp`: reuse of a `jaxaudit shadow` run, outputs, resumption, refusal of a different
configuration, bad options."""

import csv
import json

import numpy as np
import pytest

from jaxaudit.cli.main import main

# module-scoped fixtures train shadow models and run NUTS: the whole module is a slow study
pytestmark = pytest.mark.slow

NODES = 120
# the NUTS settings and node chunk of tests/bmp/bmp_shared.py's AUDIT_NUTS: with a fixed chunk
# every call runs one program of fixed shape, compiled once per test process
NUTS = ["--num-warmup", "150", "--num-samples", "200", "--num-chains", "2", "--node-chunk", "128"]
POST = [*NUTS, "--prior-draws", "50", "--no-mp", "--quiet"]


@pytest.fixture(scope="module")
def shadow_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shadow")
    rc = main(["shadow", "--dataset", "csbm", "--csbm-nodes", str(NODES), "--models", "8",
               "--epochs", "5", "--chunk", "4", "--sampler", "uniform", "--out", str(out),
               "--quiet"])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def report(shadow_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "bmp"
    rc = main(["bmp", "--shadow", str(shadow_dir), "--out", str(out), *POST])
    assert rc == 0
    return out


@pytest.mark.slow
def test_report_files(report):
    for name in ("nodes.csv", "most_leaking.csv", "summary.md", "summary.json", "eps_r_vs_eta.png",
                 "eps_r_vs_degree.png", "eps_hist.png", "bmp_vs_mp.png", "manifest.json"):
        assert (report / name).is_file(), name
    rows = list(csv.DictReader((report / "nodes.csv").open()))
    assert len(rows) == NODES
    num = lambda r, k: float(r[k]) if r[k] != "" else np.nan
    n0 = np.array([int(r["n0"]) for r in rows])
    n1 = np.array([int(r["n1"]) for r in rows])
    np.testing.assert_array_equal(n0 + n1, 8)
    summary = json.loads((report / "summary.json").read_text())
    assert summary["num_models"] == 8 and summary["num_nodes"] == NODES
    with_post = [r for r in rows if r["bayes_eps_r_q50"] != ""]
    assert len(with_post) == summary["nodes_with_estimate"] > 0
    assert all(num(r, "bayes_eps_r_q05") <= num(r, "bayes_eps_r_q50") <= num(r, "bayes_eps_r_q95")
               for r in with_post)
    # the certified bounds, the posterior (Bayesian) and the baselines sit side by side, labelled
    for r in with_post:
        assert num(r, "certified_eps_r_lower") >= 0 and num(r, "certified_eps_l_lower") >= 0
        assert not np.isnan(num(r, "jeffreys_eps_r_q05"))
    md = (report / "summary.md").read_text()
    assert "lower bound" in md and "Bayesian" in md
    assert "| global LOO-LiRA TPR at 1% FPR |" in md and "| global LOO-LiRA TPR at 0.1% FPR |" in md
    assert set(summary["global_tpr_at_fpr"]) == {"0.01", "0.001"} and summary["attack"] == "lira"
    top = list(csv.DictReader((report / "most_leaking.csv").open()))
    assert len(top) == 20
    cert = [max(num(r, "certified_eps_l_lower"), num(r, "certified_eps_r_lower")) for r in top]
    assert cert == sorted(cert, reverse=True)
    manifest = json.loads((report / "manifest.json").read_text())
    assert manifest["kind"] == "bmp" and manifest["config"]["shadow"]["sampler"] == "uniform"


def test_resume_reuses_chunks(report, shadow_dir, monkeypatch):
    import jaxaudit.bmp as bmp_mod
    import jaxaudit.bmp.audit as audit_mod

    def boom(*a, **k):
        raise AssertionError("audit recomputed on resume")

    monkeypatch.setattr(bmp_mod, "audit_from_scores", boom)
    monkeypatch.setattr(audit_mod, "audit_attack", boom)
    monkeypatch.setattr(audit_mod, "audit_nodes", boom)
    before = (report / "nodes.csv").read_text()
    rc = main(["bmp", "--shadow", str(shadow_dir), "--out", str(report), *POST])
    assert rc == 0
    assert (report / "nodes.csv").read_text() == before


def test_different_config_refused(report, shadow_dir, capsys):
    changed = [*POST]
    changed[changed.index("--num-warmup") + 1] = "151"
    rc = main(["bmp", "--shadow", str(shadow_dir), "--out", str(report), *changed])
    assert rc == 2
    assert "different configuration" in capsys.readouterr().err


def test_bad_options(tmp_path, capsys):
    assert main(["bmp", "--ratio", "1.5", "--out", str(tmp_path / "x")]) == 2
    assert "--ratio" in capsys.readouterr().err
    assert main(["bmp", "--attack", "bogus", "--out", str(tmp_path / "w")]) == 2
    assert "--attack" in capsys.readouterr().err
    assert main(["bmp", "--node-units", "0", "--out", str(tmp_path / "v")]) == 2
    assert "--node-units" in capsys.readouterr().err
    assert main(["bmp", "--shadow", str(tmp_path / "missing"), "--out", str(tmp_path / "y")]) == 2
    assert main(["bmp", "--num-chains", "1", "--out", str(tmp_path / "z")]) == 2


def test_incomplete_or_padded_shadow_run_is_refused(shadow_dir, tmp_path, capsys):
    """Hostile 2: a shadow run killed after 1 of its 2 chunks gave exit 0 and an audit on 4 of
    the 8 models its manifest promises; a chunk copied in (12 models) was used too."""
    import shutil

    partial = tmp_path / "partial"
    shutil.copytree(shadow_dir, partial)
    for suffix in (".npz", ".npz.sha256"):
        (partial / "chunks" / f"chunk_00001{suffix}").unlink()
    assert main(["bmp", "--shadow", str(partial), "--out", str(tmp_path / "a"), *POST]) == 2
    err = capsys.readouterr().err
    # its results were written when both chunks were done, so the folder is now inconsistent
    assert "inconsistent" in err and "chunk_00001" in err and "missing" in err
    assert not (tmp_path / "a").exists()  # refused before any work

    padded = tmp_path / "padded"
    shutil.copytree(shadow_dir, padded)
    for suffix in (".npz", ".npz.sha256"):
        shutil.copy(padded / "chunks" / f"chunk_00000{suffix}",
                    padded / "chunks" / f"chunk_00002{suffix}")
    (padded / "chunks" / "chunk_00002.npz.sha256").write_text(
        (padded / "chunks" / "chunk_00000.npz.sha256").read_text().split()[0] + "\n")
    assert main(["bmp", "--shadow", str(padded), "--out", str(tmp_path / "b"), *POST]) == 2
    assert "inconsistent" in capsys.readouterr().err


def test_html_report_shows_certified_and_bayesian_columns(report):
    """`jaxaudit report` on a bmp run: the findings (summary) come first, the top-20 table shows
    the certified bounds next to the Bayesian quantiles, and the full table is linked."""
    from jaxaudit.report import render_report

    html_path, _ = render_report(report)
    text = html_path.read_text()
    assert text.index("<h2>Findings</h2>") < text.index("<h2>Tables</h2>")
    top = text[text.index("<h3>most_leaking.csv</h3>"):]
    top = top[: top.index("</table>")]
    for column in ("certified_eps_l_lower", "certified_eps_r_lower", "bayes_eps_r_q05",
                   "bayes_eps_r_q50", "mp_eps_q50"):
        assert f"<th>{column}</th>" in top
    assert '<a href="nodes.csv">full table: nodes.csv' in text


def test_compare_folder_read_before_work(report):
    """--compare is parsed (manifest and nodes.csv) before the audit; a valid
    report gives its posterior medians (NaN where it has none) and its sampler."""
    from jaxaudit.report.bmp import read_compare

    values, label = read_compare(report)
    rows = list(csv.DictReader((report / "nodes.csv").open()))
    want = np.array([float(r["bayes_eps_r_q50"]) if r["bayes_eps_r_q50"] else np.nan
                     for r in rows])
    np.testing.assert_array_equal(values, want)
    assert label == "uniform"


# test_same_seed_same_models_in_shadow_and_bmp: now a library test,
# tests/pipelines/test_bmp.py (run_shadow then run_bmp(shadow_run=...) against run_bmp).


def test_bmp_cli_builds_the_config_and_prints_the_summary(tmp_path, capsys, monkeypatch):
    """The command parses its flags into a BmpConfig (--no-mp as mp_baseline, --shadow as
    shadow_run, --model-chunk), calls run_bmp once and prints report.bmp's markdown (no training
    here: the pipeline is replaced)."""
    from types import SimpleNamespace

    import jaxaudit.pipelines as pipelines
    import jaxaudit.report.bmp as report_bmp

    seen = {}

    def fake(config, run_dir, *, progress=None, sweep=None):
        seen.update(config=config, run_dir=run_dir)
        return SimpleNamespace(config={}, summary={})

    monkeypatch.setattr(pipelines, "run_bmp", fake)
    monkeypatch.setattr(report_bmp, "text_table", lambda result: "the summary")
    assert main(["bmp", "--shadow", str(tmp_path), "--model-chunk", "8", "--no-mp",
                 "--attack-prior", "optimal", "--confidence", "0.9", "--attack", "rmia",
                 "--node-units", "7", "--out", str(tmp_path / "r")]) == 0
    config = seen["config"]
    assert config.audit.attack == "rmia" and config.chunk == 7 and config.num_prior_draws == 1000
    assert config.shadow_run == str(tmp_path) and config.shadow.chunk == 8
    assert config.audit.mp_baseline is False and config.audit.model.attack_prior == "optimal"
    assert config.audit.confidence == 0.9 and seen["run_dir"] == str(tmp_path / "r")
    assert config.audit.nuts.chunk_size == 1024 and config.audit.nuts.num_warmup == 500
    assert capsys.readouterr().out.strip() == "the summary"


def test_cli_attack_names_are_the_library_s():
    """--attack's choices (a tuple in the CLI, so that --help imports no jax) are
    jaxaudit.mia.ATTACKS."""
    from jaxaudit.cli import bmp as cli
    from jaxaudit.mia import ATTACKS

    assert cli.ATTACKS == ATTACKS
