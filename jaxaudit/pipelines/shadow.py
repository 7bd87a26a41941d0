"""The shadow-model pipeline: R shadow GNNs trained on R sampled node sets of one graph, every
node scored under every model (Yıldırım & Khosla, arXiv 2606.04069; our recipe: docs/gnn_mia.md).

What ``jaxaudit shadow`` runs, as a function::

    from jaxaudit.pipelines import ShadowConfig, run_shadow

    run = run_shadow(ShadowConfig(dataset="csbm", csbm_nodes=300, num_models=8, epochs=20),
                     "runs/csbm_uniform")
    run.masks, run.scores          # (R, N) each

Model m of a sweep with seed s uses the run plan's key ``unit_key(key(s), m)``
(:mod:`jaxaudit.runs.keys`) whatever the chunking, so ``run_bmp`` training its own models with the
same seed and settings trains the same models. The models are trained ``chunk`` at a time; each
chunk is saved at once into the run folder (``chunks/chunk_00000.npz`` with ``masks`` and
``scores``), a repeated call resumes, a folder of another configuration is refused.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxaudit._validation import check_instance, check_output_dir
from jaxaudit._validation.core import check_config_fields
from jaxaudit.pipelines.common import (
    ShadowRun,
    check_result_size,
    check_training,
    dp_derived,
    dp_excluded,
    graph_and_sampler,
    load_shadow,
    open_run,
    shadow_derived,
    shadow_result,
    stored_config,
    train_chunks,
)
from jaxaudit.runs import Progress

__all__ = ["ShadowConfig", "ShadowRun", "load_shadow", "run_shadow"]


class ShadowConfig(NamedTuple):
    """What a shadow-model sweep trains (the defaults of ``jaxaudit shadow``).

    Attributes:
      dataset: a graph by name (``jaxaudit.datasets.GRAPH_DATASETS``); ignored with
        ``graph_file`` or the pipeline's ``graph=``.
      graph_file: a user's graph as an ``.npz`` (:func:`jaxaudit.graph.save_graph_npz`); stored
        with its SHA-256, so a resumed run refuses a file that changed.
      model: "gcn" | "sage" | "gat", or "mlp" | "capped_gcn" (the node-level DP models of
        :mod:`jaxaudit.graph.dp_training`) (the pipeline's ``model=`` takes any flax module
        instead).
      sampler: one of ``jaxaudit.graph.samplers.SAMPLERS``; ratio: its sampling ratio in (0, 1].
      snowball_edges: the snowball sampler's edges ("discovered" | "induced").
      num_models: R; epochs, learning_rate, weight_decay: the training recipe.
      edge_access: "inductive" | "full" | "none".
      chunk: models per saved chunk (does not change any model: the key rule).
      seed: the integer root of the key rule: model m uses ``unit_key(key(seed), m)``; the CSBM
        graph is drawn with ``key(seed)``.
      csbm_nodes: the CSBM's size (dataset "csbm").
      data_dir: where the Planetoid files live (None: ``$JAXAUDIT_DATA``, else the cache;
        changes no number, so it is not stored).
      dp_epsilon, dp_noise_multiplier: node-level DP training (models "mlp", "capped_gcn"):
        the target ε at ``dp_delta`` (σ from the library accountant, μ = √T/σ-GDP) or σ itself
        (0: clipping without noise); at most one (both None, the default: non-private).
      dp_clip, dp_degree_cap, dp_delta: the per-node clip C, the degree cap K and DP's δ. The
        DP fields are stored only when DP is on, with σ and the accountant's ε (add/remove) in
        the stored ``derived["dp"]``.
    """

    dataset: str = "cora"
    graph_file: str | Path | None = None
    model: str = "gcn"
    sampler: str = "uniform"
    ratio: float = 0.5
    snowball_edges: str = "discovered"
    num_models: int = 64
    epochs: int = 200
    learning_rate: float = 0.01
    weight_decay: float = 5e-4
    edge_access: str = "inductive"
    chunk: int = 32
    seed: int = 0
    csbm_nodes: int = 2708
    data_dir: str | Path | None = None
    dp_epsilon: float | None = None
    dp_noise_multiplier: float | None = None
    dp_clip: float = 1.0
    dp_degree_cap: int = 5
    dp_delta: float = 1e-5

    def check(self) -> ShadowConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_shadow`` and the command call it first."""
        check_instance("config", self, ShadowConfig)
        check_config_fields(self)
        check_training(self, None, None)
        return self


def run_shadow(config: ShadowConfig, run_dir: str | Path | None = None, *,
               progress: Progress | None = None, worker: tuple[int, int] | None = None,
               model: Any = None, graph: Any = None, backend: str = "serial",
               ray_address: str | None = None, ray_workers: int | None = None) -> ShadowRun:
    """Train ``config.num_models`` shadow GNNs and score every node (``jaxaudit shadow``).

    Model m trains on ``sampler(k_s, graph)`` with the key ``unit_key(key(seed), m)`` (split into the
    sampling and the training key), ``epochs`` full-batch Adam epochs on the sampled nodes'
    labels (arXiv 2606.04069, Sec. 5; recipe in docs/gnn_mia.md), and scores every node by its
    true-class logit ``z_y − logsumexp_{c≠y} z_c``.

    Args:
      config: the sweep (:class:`ShadowConfig`).
      run_dir: the run folder (created; resumed when it holds this configuration; another
        configuration is refused); None computes in memory.
      progress: ``progress(done, total)`` over the chunks (e.g. ``jaxaudit.runs.ProgressBar``).
      worker: ``(index, count)``: train only chunks ``index, index + count, …`` (several
        processes on one folder); the result then holds the finished chunks and ``missing``.
      model: any flax module taking ``(graphs_tuple, training=...)`` instead of
        ``config.model`` (stored as its repr).
      graph: an in-memory ``jaxaudit.graph.Graph`` instead of ``config.dataset`` (stored by its
        SHA-256).
      backend: ``"serial"`` or ``"ray"`` (one Ray task per chunk; see
        :func:`jaxaudit.runs.run_chunks`), ``ray_address`` its cluster (None: a local one),
        ``ray_workers`` the chunks in flight. They do not change the numbers.

    Returns:
      :class:`ShadowRun`. With a run folder, ``summary.json`` is written too and, from 4 models
      on, the membership attack the sweep supports (:func:`attack_metrics`: ``summary.md``, the
      log–log ROC and per-node advantage in ``attack.png``, ``roc.json``,
      ``node_advantage.json``; :func:`jaxaudit.report.shadow.write_attack`).

    Raises:
      ValueError: a bad configuration field (named), a folder holding another configuration, or
        a diverged training (nothing of it saved; a new folder is left reusable).
    """
    from jaxaudit.graph.shadow_models import gnn_module
    from jaxaudit.report import shadow as report

    check_instance("config", config, ShadowConfig)
    check_config_fields(config)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    check_training(config, model, graph)
    stored = stored_config(config, shadow_derived(config, model, graph)
                           | dp_derived(config, model), exclude=("data_dir",) + dp_excluded(config))
    # the graph and the sampler first: the library checks them before any folder is written
    graph, sampler = graph_and_sampler(stored, config.data_dir, graph)
    check_result_size(config.num_models, graph.num_nodes)
    module = gnn_module(model if model is not None else config.model, graph)
    with open_run(run_dir, "shadow", stored) as run:
        results, names = train_chunks(
            run, stored, graph, sampler, module, prefix="chunk", progress=progress,
            worker=worker,
            sweep=dict(backend=backend, ray_address=ray_address, ray_workers=ray_workers))
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
