"""The shadow-run report shows the attack the sweep supports, not only bookkeeping: the ROC on
log–log axes, the AUC, the TPR at 1% and 0.1% FPR and the per-node advantage distribution,
all measured with jaxaudit.mia."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from jaxaudit.mia import lira_loo, roc_auc, tpr_at_fpr
from jaxaudit.pipelines.shadow import attack_metrics
from jaxaudit.report import render_report
from jaxaudit.report import shadow as report
from jaxaudit.runs import RunDir


def _sweep(num_models=16, num_nodes=120, seed=0):
    """Masks and scores of a leaky sweep: a member's score is raised by a per-node amount."""
    rng = np.random.default_rng(seed)
    masks = rng.random((num_models, num_nodes)) < 0.5
    leak = rng.exponential(1.0, num_nodes)
    scores = rng.normal(size=(num_models, num_nodes)) + masks * leak
    return masks, scores.astype(np.float32)


def _handmade(masks):
    """An attack dict of the pipeline's form, without JAX (fast)."""
    fpr = np.geomspace(1e-3, 1.0, 20)
    adv = np.linspace(-0.2, 0.9, masks.shape[1])
    return {"auc": 0.75, "tpr_at_1pct": 0.05, "tpr_at_0_1pct": 0.011,
            "roc_fpr": fpr.tolist(), "roc_tpr": np.sqrt(fpr).tolist(), "advantage_fpr": 0.2,
            "node_advantage": adv.tolist(),
            "advantage_quantiles": np.quantile(adv, report.ADVANTAGE_QUANTILES).tolist(),
            "nodes_scored": masks.shape[1], "nodes_above_half": int((adv > 0.5).sum())}


@pytest.fixture(scope="module")
def attack():
    masks, scores = _sweep()
    return masks, scores, _handmade(masks)


@pytest.mark.slow  # compiles the LiRA and the metrics: ~8 s on two shared cores
def test_attack_metrics_are_the_mia_metrics():
    masks, scores = _sweep()
    a = attack_metrics(masks, scores)
    stat = lira_loo(scores, masks)
    assert a["auc"] == pytest.approx(float(roc_auc(stat, masks)))
    assert a["tpr_at_1pct"] == pytest.approx(float(tpr_at_fpr(stat, masks, 0.01)))
    assert a["tpr_at_0_1pct"] == pytest.approx(float(tpr_at_fpr(stat, masks, 0.001)))
    fpr, tpr = np.asarray(a["roc_fpr"]), np.asarray(a["roc_tpr"])
    assert fpr[0] == pytest.approx(1 / (~masks).sum()) and fpr[-1] == 1.0
    assert np.all(np.diff(fpr) > 0) and np.all(np.diff(tpr) >= 0) and tpr[-1] == 1.0
    adv = np.array([np.nan if v is None else v for v in a["node_advantage"]])
    assert adv.shape == (masks.shape[1],) and np.all(np.abs(adv[np.isfinite(adv)]) <= 1)
    assert a["advantage_quantiles"] == pytest.approx(
        np.quantile(adv[np.isfinite(adv)], report.ADVANTAGE_QUANTILES).tolist())
    assert 0.5 < a["auc"] and a["tpr_at_1pct"] > 0.01  # the planted leak is found


def test_shadow_report_shows_roc_auc_tpr_and_per_node_advantage(attack, tmp_path):
    """The shadow-run report showed configuration, provenance and checksums but no result."""
    masks, scores, a = attack
    run = RunDir.open(tmp_path / "shadow", kind="shadow", config={"num_models": 16})
    result = SimpleNamespace(masks=masks, scores=scores, mean_inclusion=float(masks.mean()),
                             lira_global_auc=a["auc"], config={"chunk": 16}, path=run.path)
    report.write_attack(run, result, a)
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["lira_tpr_at_1pct_fpr"] == a["tpr_at_1pct"]
    assert summary["lira_tpr_at_0.1pct_fpr"] == a["tpr_at_0_1pct"]
    assert list(summary["node_advantage_quantiles"]) == ["q0", "q0.05", "q0.25", "q0.5",
                                                         "q0.75", "q0.95", "q1"]
    assert json.loads((run.path / "roc.json").read_text())["tpr"] == a["roc_tpr"]
    html_path, md_path = render_report(run.path)
    md = md_path.read_text()
    findings = md[md.index("## Findings"):md.index("## Configuration")]
    for text in ("TPR at 1% FPR", "TPR at 0.1% FPR", f"| AUC | {a['auc']:.4f} |",
                 "## Per-node advantage", "| advantage |", "attack.png"):
        assert text in findings, text
    assert md.index("## Findings") < md.index("## Configuration")
    html = html_path.read_text()
    assert 'alt="attack.png"' in html and "data:image/png;base64," in html
    # the figure is a run file like the others: covered by a checksum
    assert "| attack.png | ok |" in md


def test_the_roc_panel_is_log_log(attack, tmp_path, monkeypatch):
    import matplotlib.axes

    scales = []
    original = matplotlib.axes.Axes.loglog

    def spy(self, *args, **kwargs):
        scales.append(True)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "loglog", spy)
    report.plot_attack(tmp_path / "attack.png", attack[2])
    assert scales and (tmp_path / "attack.png").read_bytes().startswith(b"\x89PNG")
