"""What a shadow-model sweep reports: its ``summary.json`` and the summary ``jaxaudit shadow``
prints (the result of :func:`jaxaudit.pipelines.run_shadow`, read by its fields)."""

from __future__ import annotations

from typing import Any

from jaxaudit.runs.files import dumps_strict

__all__ = ["summary", "text_table"]


def summary(result: Any) -> dict:
    """``summary.json`` of a shadow run: sizes, the mean inclusion, the chunk names and (from 4
    models on) the global leave-one-out LiRA AUC (an estimate)."""
    num_models, num_nodes = (int(n) for n in result.masks.shape)
    chunk = int(result.config.get("chunk", max(num_models, 1)))
    out = {"num_models": num_models, "num_nodes": num_nodes,
           "mean_inclusion": float(result.mean_inclusion),
           "chunks": [f"chunk_{c:05d}" for c in range(-(-num_models // chunk))]}
    if result.lira_global_auc is not None:
        out["lira_global_auc"] = float(result.lira_global_auc)
    return out


def text_table(result: Any) -> str:
    """What ``jaxaudit shadow`` prints: the summary and the run folder, as strict JSON."""
    extra = {} if result.path is None else {"out": str(result.path)}
    return dumps_strict(summary(result) | extra, indent=1)
