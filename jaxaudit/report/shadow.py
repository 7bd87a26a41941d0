"""What a shadow-model sweep reports: its ``summary.json``, the summary ``jaxaudit shadow``
prints, and the membership attack the sweep supports (the result of
:func:`jaxaudit.pipelines.run_shadow`, read by its fields).

The attack is the leave-one-out LiRA over every (model, node) pair, with the metrics of
:mod:`jaxaudit.mia` (computed by the pipeline; nothing is computed here but formatting): the ROC
curve on log–log axes (the low-FPR regime is what matters: Carlini et al., arXiv 2112.03570,
Sec. 3), the AUC, the TPR at 1% and 0.1% FPR, and the distribution over nodes of each node's
membership advantage TPR_i − FPR_i at the one global threshold of the attack's largest advantage
(``summary.md``,
``roc.json``, ``node_advantage.json``, ``attack.png``). Every number is an ESTIMATE from the
shadow runs, none a bound.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from jaxaudit.report.figures import save_figure
from jaxaudit.runs.files import dumps_strict

__all__ = ["ADVANTAGE_QUANTILES", "markdown", "plot_attack", "summary", "text_table",
           "write_attack"]

#: The quantiles of the per-node advantage that the summary shows.
ADVANTAGE_QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


def summary(result: Any, attack: dict | None = None) -> dict:
    """``summary.json`` of a shadow run: sizes, the mean inclusion, the chunk names and (from 4
    models on) the global leave-one-out LiRA AUC (an estimate); with ``attack`` (the pipeline's
    attack metrics) also the TPR at 1% and 0.1% FPR and the quantiles of the per-node
    advantage."""
    num_models, num_nodes = (int(n) for n in result.masks.shape)
    chunk = int(result.config.get("chunk", max(num_models, 1)))
    out = {"num_models": num_models, "num_nodes": num_nodes,
           "mean_inclusion": float(result.mean_inclusion),
           "chunks": [f"chunk_{c:05d}" for c in range(-(-num_models // chunk))]}
    if result.lira_global_auc is not None:
        out["lira_global_auc"] = float(result.lira_global_auc)
    if attack is not None:
        out["lira_tpr_at_1pct_fpr"] = float(attack["tpr_at_1pct"])
        out["lira_tpr_at_0.1pct_fpr"] = float(attack["tpr_at_0_1pct"])
        out["node_advantage_fpr"] = float(attack["advantage_fpr"])
        out["node_advantage_quantiles"] = dict(zip(
            [f"q{q:g}" for q in ADVANTAGE_QUANTILES], attack["advantage_quantiles"],
            strict=True))
    return out


def text_table(result: Any, attack: dict | None = None) -> str:
    """What ``jaxaudit shadow`` prints: the summary and the run folder, as strict JSON."""
    extra = {} if result.path is None else {"out": str(result.path)}
    return dumps_strict(summary(result, attack) | extra, indent=1)


def _pct(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:.2f}%"


def markdown(result: Any, attack: dict) -> str:
    """``summary.md``: the attack's headline numbers, the per-node advantage distribution and
    what each is."""
    num_models, num_nodes = (int(n) for n in result.masks.shape)
    q = dict(zip(ADVANTAGE_QUANTILES, attack["advantage_quantiles"], strict=True))
    head = ["| metric | value |", "|---|---|",
            f"| AUC | {float(result.lira_global_auc):.4f} |",
            f"| TPR at 1% FPR | {_pct(attack['tpr_at_1pct'])} |",
            f"| TPR at 0.1% FPR | {_pct(attack['tpr_at_0_1pct'])} |",
            f"| nodes with advantage > 0.5 | {attack['nodes_above_half']} of "
            f"{attack['nodes_scored']} |"]
    dist = ["| quantile | " + " | ".join(f"{p:g}" for p in ADVANTAGE_QUANTILES) + " |",
            "|---|" + "---|" * len(ADVANTAGE_QUANTILES),
            "| advantage | " + " | ".join(f"{q[p]:.3f}" for p in ADVANTAGE_QUANTILES) + " |"]
    return "\n".join([
        "# Membership inference on the shadow models", "",
        f"The leave-one-out LiRA attack over every (model, node) pair: {num_models} models, "
        f"{num_nodes} nodes, each node in about {100 * float(result.mean_inclusion):.0f}% of the "
        "models' training samples. Estimates from these shadow runs, not bounds.", "",
        *head, "",
        "## Per-node advantage", "",
        "Each node's membership advantage TPR_i − FPR_i over its own models, at the one global "
        "threshold of the attack's largest advantage (false-positive rate "
        f"{_pct(attack['advantage_fpr'])} over all (model, node) pairs; Yeom et al., arXiv "
        "1709.01604): how unevenly the attack exposes the nodes.", "",
        *dist, "",
        "The ROC curve on log–log axes is in attack.png (left) and roc.json; the advantage of "
        "every node in node_advantage.json and its histogram in attack.png (right).", ""])


def plot_attack(path: str | Path, attack: dict) -> Path:
    """``attack.png``: the ROC curve on log–log axes (with the chance diagonal) and the
    histogram of the per-node advantage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fpr, tpr = np.asarray(attack["roc_fpr"]), np.asarray(attack["roc_tpr"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    keep = (fpr > 0) & (tpr > 0)
    left.loglog(fpr[keep], tpr[keep], "C0-", label="leave-one-out LiRA")
    low = float(fpr[fpr > 0].min()) if (fpr > 0).any() else 1e-5
    left.loglog([low, 1], [low, 1], "k:", label="chance")
    left.set_xlabel("false-positive rate")
    left.set_ylabel("true-positive rate")
    left.set_title(f"ROC (AUC {attack['auc']:.3f})", fontsize=9)
    left.legend(fontsize=7)
    adv = np.asarray(attack["node_advantage"], float)
    right.hist(adv[np.isfinite(adv)], bins=40, color="C1")
    right.set_xlabel("per-node advantage TPR − FPR")
    right.set_ylabel("nodes")
    right.set_title(f"one global threshold, at {_pct(attack['advantage_fpr'])} FPR", fontsize=9)
    fig.tight_layout()
    path = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_attack(run: Any, result: Any, attack: dict) -> None:
    """``summary.json`` (:func:`summary`), ``summary.md`` (:func:`markdown`), ``roc.json``
    (the ROC curve's FPR and TPR), ``node_advantage.json`` (one advantage per node, null for a
    node never or always in a sample) and ``attack.png`` (:func:`plot_attack`) into the run
    folder ``run`` (a :class:`jaxaudit.runs.RunDir`)."""
    run.write_json("summary.json", summary(result, attack))
    run.write_text("summary.md", markdown(result, attack))
    run.write_json("roc.json", {"fpr": attack["roc_fpr"], "tpr": attack["roc_tpr"]})
    run.write_json("node_advantage.json", {"node": list(range(len(attack["node_advantage"]))),
                                           "advantage": attack["node_advantage"]})
    plot_attack(Path(run.path) / "attack.png", attack)
