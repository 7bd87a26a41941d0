"""The shadow-model pipeline: R shadow GNNs trained on R sampled node sets of one graph, every
node scored under every model (Yıldırım & Khosla, arXiv 2606.04069; our recipe: docs/gnn_mia.md).

What ``jaxaudit shadow`` runs, as a function::

    from jaxaudit.pipelines import ShadowConfig, run_shadow

    run = run_shadow(ShadowConfig(dataset="csbm", csbm_nodes=300, num_models=8, epochs=20),
                     "runs/csbm_uniform")
    run.masks, run.scores          # (R, N) each

The configuration, its checks and the training in chunks are the shadow-model sweep's
(:mod:`jaxaudit.pipelines.shadow_models`), which ``run_bmp`` trains too. The function reads top to
bottom: check, open the run folder, train chunk by chunk (each chunk saved at once as
``chunks/chunk_00000.npz`` with ``masks`` and ``scores``; a repeated call resumes, a folder of
another configuration is refused), assemble the :class:`ShadowRun`, write the attack it supports.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from jaxaudit._validation import check_instance, check_output_dir
from jaxaudit.pipelines.lifecycle import open_run, stored_config
from jaxaudit.pipelines.shadow_models import (
    ShadowConfig,
    ShadowRun,
    check_result_size,
    check_training,
    graph_and_sampler,
    shadow_derived,
    shadow_excluded,
    shadow_result,
    train_chunks,
)
from jaxaudit.runs import Progress, Sweep

__all__ = ["run_shadow"]


def run_shadow(config: ShadowConfig, run_dir: str | Path | None = None, *,
               progress: Progress | None = None, sweep: Sweep = Sweep(), model: Any = None,
               graph: Any = None) -> ShadowRun:
    """Train ``config.num_models`` shadow GNNs and score every node (``jaxaudit shadow``).

    Model m trains on ``sampler(k_s, graph)`` with the key ``unit_key(key(seed), m)`` (split into the
    sampling and the training key), ``epochs`` full-batch Adam epochs on the sampled nodes'
    labels (arXiv 2606.04069, Sec. 5; recipe in docs/gnn_mia.md), and scores every node by its
    true-class logit ``z_y − logsumexp_{c≠y} z_c``.

    Args:
      config: the sweep (:class:`jaxaudit.pipelines.ShadowConfig`).
      run_dir: the run folder (created; resumed when it holds this configuration; another
        configuration is refused); None computes in memory.
      progress: ``progress(done, total)`` over the chunks (e.g. ``jaxaudit.runs.ProgressBar``).
      sweep: where the chunks run (:class:`jaxaudit.runs.Sweep`: ``backend="ray"`` for one Ray
        task per chunk, ``worker=(index, count)`` to train only chunks ``index, index + count,
        …`` — several processes on one folder; the result then holds the finished chunks and
        ``missing``). It does not change the numbers.
      model: any flax module taking ``(graphs_tuple, training=...)`` instead of
        ``config.model`` (stored as its repr).
      graph: an in-memory ``jaxaudit.graph.Graph`` instead of ``config.dataset`` (stored by its
        SHA-256).

    Returns:
      :class:`jaxaudit.pipelines.ShadowRun`. With a run folder, ``summary.json`` is written too
      and, from 4 models on, the membership attack the sweep supports (:func:`attack_metrics`:
      ``summary.md``, the log–log ROC and per-node advantage in ``attack.png``, ``roc.json``,
      ``node_advantage.json``; :func:`jaxaudit.report.shadow.write_attack`).

    Raises:
      ValueError: a bad configuration field (named), a folder holding another configuration, or
        a diverged training (nothing of it saved; a new folder is left reusable).
    """
    from jaxaudit.graph.shadow_models import gnn_module
    from jaxaudit.report import shadow as report

    check_instance("config", config, ShadowConfig)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    check_training(config, model, graph)
    derived = shadow_derived(config, model, graph)
    # the graph and the sampler first: the library checks them before any folder is written
    graph, sampler = graph_and_sampler(config, derived, graph)
    check_result_size(config.num_models, graph.num_nodes)
    module = gnn_module(model if model is not None else config.model, graph)
    stored = stored_config(config, derived, exclude=shadow_excluded(config))
    with open_run(run_dir, "shadow", stored) as run:
        results, names = train_chunks(run, config, graph, sampler, module, prefix="chunk",
                                      progress=progress, sweep=sweep)
    result = shadow_result(results, names, stored, None if run is None else run.path)
    _warn_short_samples(result.masks, config.ratio, config.sampler)
    if run is not None and not result.missing:
        if result.lira_global_auc is None:  # fewer than 4 models: no attack to report
            run.write_json("summary.json", report.summary(result))
        else:
            report.write_attack(run, result, attack_metrics(result.masks, result.scores))
    return result


def attack_metrics(masks: np.ndarray, scores: np.ndarray, num_points: int = 60) -> dict:
    """The leave-one-out LiRA over every (model, node) pair of a sweep, measured with
    :mod:`jaxaudit.mia` (estimates, not bounds): ``auc``; ``tpr_at_1pct`` and
    ``tpr_at_0_1pct`` (:func:`jaxaudit.mia.tpr_at_fpr`); the ROC curve ``roc_fpr``/``roc_tpr``
    at ``num_points`` FPRs spaced evenly in log from 1/#OUT pairs to 1; ``node_advantage``
    (N,) (None where a node is never or always in a sample): each node's TPR − FPR at the one
    global threshold of the attack's largest advantage on that curve (its FPR:
    ``advantage_fpr``; :func:`jaxaudit.mia.fixed_fpr_decision`,
    :func:`jaxaudit.mia.membership_advantage`), with its ``advantage_quantiles``
    (:data:`jaxaudit.report.shadow.ADVANTAGE_QUANTILES`), ``nodes_scored`` and
    ``nodes_above_half`` (advantage > 0.5). Needs 4 models or more (the leave-one-out fit)."""
    from jaxaudit.mia import (
        fixed_fpr_decision,
        lira_loo,
        membership_advantage,
        roc_auc,
        tpr_at_fpr,
    )
    from jaxaudit.report.shadow import ADVANTAGE_QUANTILES

    masks = np.asarray(masks, bool)
    stat = np.asarray(lira_loo(scores, masks))
    out_pairs = max(int((~masks).sum()), 1)
    fprs = np.unique(np.geomspace(1.0 / out_pairs, 1.0, num_points))
    roc = [float(tpr_at_fpr(stat, masks, float(f))) for f in fprs]
    best = float(fprs[int(np.argmax(np.asarray(roc) - fprs))])  # the largest global advantage
    advantage = np.asarray(membership_advantage(
        fixed_fpr_decision(stat, masks, best, per_node=False), masks, axis=0), np.float64)
    scored = advantage[np.isfinite(advantage)]
    quantiles = (np.quantile(scored, ADVANTAGE_QUANTILES) if scored.size
                 else np.full(len(ADVANTAGE_QUANTILES), np.nan))
    return {"auc": float(roc_auc(stat, masks)),
            "tpr_at_1pct": float(tpr_at_fpr(stat, masks, 0.01)),
            "tpr_at_0_1pct": float(tpr_at_fpr(stat, masks, 0.001)),
            "roc_fpr": [float(f) for f in fprs], "roc_tpr": roc,
            "advantage_fpr": best,
            "node_advantage": [float(a) if np.isfinite(a) else None for a in advantage],
            "advantage_quantiles": [float(q) for q in quantiles],
            "nodes_scored": int(scored.size), "nodes_above_half": int((scored > 0.5).sum())}


def _warn_short_samples(masks: np.ndarray, ratio: float, sampler: str) -> None:
    """RuntimeWarning when the samples hold clearly fewer nodes than ``ratio`` asks.

    A snowball sampler grows from its seeds through their connected components and stops when
    they are exhausted (on CiteSeer, at about 55% of the nodes); a random walk gives up after
    ``max_stall`` steps without a new node. The audit is then of a smaller training set than the
    configuration names (its priors η come from the realised samples, so it stays correct).
    "Clearly": the realised fraction m̄ (over all models and nodes) is below ``ratio`` by more
    than 0.01 and by more than four binomial standard errors sqrt(ratio (1 − ratio) / masks.size),
    so Poisson sampling's own spread does not warn.
    """
    masks = np.asarray(masks)
    if not masks.size:
        return
    ratio = float(ratio)
    realised = float(masks.mean())
    slack = max(0.01, 4.0 * float(np.sqrt(ratio * (1.0 - ratio) / masks.size)))
    if realised < ratio - slack:
        warnings.warn(
            f"the {sampler} samples hold {realised:.3f} of the nodes on average, less than the "
            f"ratio {ratio:g} asks: the sampler ran out of reachable nodes (snowball growth stops "
            "when its seeds' connected components are exhausted). The audit is of the realised "
            "training-set size; ask for a ratio the sampler can reach, or use more seeds",
            RuntimeWarning, stacklevel=3)
