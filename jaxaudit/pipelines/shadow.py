"""The shadow-model pipeline: R shadow GNNs trained on R sampled node sets of one graph, every
node scored under every model (Yıldırım & Khosla, arXiv 2606.04069; our recipe: docs/gnn_mia.md).

What ``jaxaudit shadow`` runs, as a function::

    from jaxaudit.pipelines import ShadowConfig, run_shadow

    run = run_shadow(ShadowConfig(dataset="csbm", csbm_nodes=300, num_models=8, epochs=20),
                     "runs/csbm_uniform")
    run.masks, run.scores          # (R, N) each

Model m of a sweep with seed s uses the run plan's key ``unit_key(s, m)``
(:mod:`jaxaudit.runs.keys`) whatever the chunking, so ``run_bmp`` training its own models with the
same seed and settings trains the same models. The models are trained ``chunk`` at a time; each
chunk is saved at once into the run folder (``chunks/chunk_00000.npz`` with ``masks`` and
``scores``), a repeated call resumes, a folder of another configuration is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxaudit._validation import (
    ArgumentTypeError,
    check_choice,
    check_input_path,
    check_integer,
    check_nonnegative_finite,
    check_output_dir,
    check_positive_finite,
)
from jaxaudit.runs import Progress

__all__ = ["MAX_CSBM_NODES", "MAX_EPOCHS", "MAX_MODELS", "MAX_RESULT_BYTES", "MODELS",
           "ShadowConfig", "ShadowRun", "check_result_size", "graph_and_sampler",
           "graph_file_config", "load_shadow", "run_shadow"]

#: The shadow GNNs by name (``ShadowConfig.model``); any flax module can be passed as ``model=``.
MODELS = ("gcn", "sage", "gat")
#: Limits refused before any work.
MAX_MODELS = 100_000
MAX_EPOCHS = 100_000
#: The CSBM draws every node pair (O(N²): ~0.1 s at 2708 nodes, ~35 s at 50,000 on 2 cores).
MAX_CSBM_NODES = 50_000
#: The R × N masks and scores, their copies and LiRA's float64.
MAX_RESULT_BYTES = 8 * 2**30
BYTES_PER_SCORE = 40


class ShadowConfig(NamedTuple):
    """What a shadow-model sweep trains (the defaults of ``jaxaudit shadow``).

    Attributes:
      dataset: a graph by name (``jaxaudit.datasets.GRAPH_DATASETS``); ignored with
        ``graph_file`` or the pipeline's ``graph=``.
      graph_file: a user's graph as an ``.npz`` (:func:`jaxaudit.graph.save_graph_npz`); stored
        with its SHA-256, so a resumed run refuses a file that changed.
      model: "gcn" | "sage" | "gat" (the pipeline's ``model=`` takes any flax module instead).
      sampler: one of ``jaxaudit.graph.SAMPLERS``; ratio: its sampling ratio in (0, 1].
      snowball_edges: the snowball sampler's edges ("discovered" | "induced").
      num_models: R; epochs, learning_rate, weight_decay: the training recipe.
      edge_access: "inductive" | "full" | "none".
      chunk: models per saved chunk (does not change any model: the key rule).
      seed: root seed of the sweep (and of the CSBM graph).
      csbm_nodes: the CSBM's size (dataset "csbm").
      data_dir: where the Planetoid files live (None: ``$JAXAUDIT_DATA``, else the cache).
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


class ShadowRun(NamedTuple):
    """The result of :func:`run_shadow` (or :func:`load_shadow`). All fields are measurements
    or ESTIMATES; none is a bound.

    Attributes:
      masks: (R, N) bool, node i in model r's training sample.
      scores: (R, N) float32, the true-class logit of node i under model r.
      mean_inclusion: the fraction of (model, node) pairs in a sample.
      lira_global_auc: AUC of the leave-one-out LiRA over all nodes (an estimate; None below 4
        models or when chunks are missing).
      config: the stored configuration (the run folder's manifest ``config``).
      path: the run folder (None: computed in memory).
      missing: chunks not finished (only with ``worker=``: the others' share); masks and scores
        then hold the finished chunks only.
    """

    masks: np.ndarray
    scores: np.ndarray
    mean_inclusion: float
    lira_global_auc: float | None
    config: dict
    path: Path | None
    missing: tuple[str, ...] = ()


@contextlib.contextmanager
def renamed(**names: str) -> Iterator[None]:
    """Re-raise a ``ValueError`` with the library's argument names replaced by the names of the
    configuration fields (``num_nodes`` -> ``csbm_nodes``)."""
    try:
        yield
    except ValueError as err:
        msg = str(err)
        for name, field in names.items():
            msg = re.sub(rf"(?<![\w'-]){name}(?![\w'])", field, msg)
        raise type(err)(msg) from err


def bounded(name: str, value: Any, low: int, high: int) -> int:
    """An integer in [low, high]; ValueError naming ``name``."""
    value = check_integer(name, value, minimum=low)
    if value > high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value}")
    return value


def check_result_size(num_models: int, num_nodes: int) -> None:
    """Refuse R × N results that would not fit in memory, before any work."""
    need = int(num_models) * int(num_nodes) * BYTES_PER_SCORE
    if need > MAX_RESULT_BYTES:
        raise ValueError(
            f"num_models {num_models} on {num_nodes} nodes: the scores need about "
            f"{need / 2**30:.1f} GiB (the limit is {MAX_RESULT_BYTES / 2**30:g} GiB, about "
            f"{BYTES_PER_SCORE} bytes per model and node); lower num_models")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def graph_file_config(path: str | Path) -> dict:
    """The stored form of a graph file: its resolved path and SHA-256, so that a resumed run
    refuses a file that changed."""
    path = check_input_path("graph_file", path)
    return {"path": str(path.resolve()), "sha256": _sha256(path)}


def graph_digest(graph: Any) -> str:
    """SHA-256 of a ``Graph``'s arrays and static fields (the stored form of an in-memory
    graph)."""
    h = hashlib.sha256()
    for name in ("features", "labels", "senders", "receivers", "train_mask", "val_mask",
                 "test_mask"):
        arr = np.ascontiguousarray(np.asarray(getattr(graph, name)))
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.tobytes())
    h.update(f"{graph.num_classes}:{graph.name}".encode())
    return h.hexdigest()


def graph_and_sampler(cfg: dict, data_dir: str | Path | None = None, graph: Any = None
                      ) -> tuple[Any, Any]:
    """The graph and the sampler of a stored configuration, through the library's registries
    (:func:`jaxaudit.datasets.graph_by_name`, :func:`jaxaudit.graph.sampler_by_name`); errors
    name the configuration fields.

    Args:
      cfg: a stored shadow or bmp configuration (a run folder's manifest ``config``).
      data_dir: where the Planetoid files live.
      graph: the in-memory ``Graph`` of a configuration that stores one (``dataset`` "graph"),
        checked against the stored digest.
    """
    from jaxaudit.datasets import graph_by_name
    from jaxaudit.graph import Graph, load_graph_npz, sampler_by_name

    if cfg.get("dataset") == "graph":
        if not isinstance(graph, Graph):
            raise ValueError("graph: this run was made with an in-memory Graph; pass the same "
                             "graph as graph=")
        if graph_digest(graph) != cfg.get("graph", {}).get("sha256"):
            raise ValueError("graph differs from the graph this run was made with")
    elif cfg.get("graph_file"):
        path = Path(cfg["graph_file"]["path"])
        with renamed(graph="graph_file"):
            graph = load_graph_npz(path)
        if _sha256(path) != cfg["graph_file"]["sha256"]:
            raise ValueError(f"graph_file {path} changed since this run was configured")
    else:
        with renamed(num_nodes="csbm_nodes"):
            graph = graph_by_name(cfg["dataset"], seed=cfg["seed"],
                                  num_nodes=cfg.get("csbm_nodes", 2708), data_dir=data_dir)
    options = {"edges": cfg.get("snowball_edges", "discovered")} \
        if cfg["sampler"] == "snowball" else {}
    try:
        sampler = sampler_by_name(cfg["sampler"], cfg["ratio"], **options)
    except ValueError as err:
        raise ValueError(f"ratio {cfg['ratio']} (sampler {cfg['sampler']}): {err}") from err
    return graph, sampler


def check_graph_source(config: Any, graph: Any) -> None:
    """The fields that choose the graph (dataset, csbm_nodes) and the sampler's name."""
    from jaxaudit.datasets import GRAPH_DATASETS
    from jaxaudit.graph import SAMPLERS

    if graph is not None and config.graph_file is not None:
        raise ValueError("graph and graph_file: give one of them")
    if graph is None and config.graph_file is None:
        check_choice("dataset", config.dataset, GRAPH_DATASETS)
        if config.dataset == "csbm":
            bounded("csbm_nodes", config.csbm_nodes, 2, MAX_CSBM_NODES)
    check_choice("sampler", config.sampler, SAMPLERS)
    check_choice("snowball_edges", config.snowball_edges, ("discovered", "induced"))
    try:
        ratio = float(config.ratio)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"ratio must be a number, got {config.ratio!r}") from None
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio must lie in (0, 1], got {config.ratio}")


def model_config(config: Any, model: Any) -> str:
    """The stored name of the shadow model: the configuration's name, or ``flax:<repr>`` of a
    module passed as ``model=`` (its class and fields)."""
    from flax import linen as nn

    if model is None:
        check_choice("model", config.model, MODELS)
        return str(config.model)
    if not isinstance(model, nn.Module):
        raise ArgumentTypeError(f"model must be a flax.linen.Module, got {type(model).__name__}")
    return f"flax:{model!r}"


def graph_config(config: Any, graph: Any, cfg: dict) -> None:
    """Store the graph's source in ``cfg`` (as ``jaxaudit shadow`` always has)."""
    if graph is not None:
        from jaxaudit.graph import Graph

        if not isinstance(graph, Graph):
            raise ArgumentTypeError(f"graph must be a jaxaudit.graph.Graph, got "
                                    f"{type(graph).__name__}")
        cfg["dataset"] = "graph"
        cfg["graph"] = {"name": graph.name, "num_nodes": graph.num_nodes,
                        "sha256": graph_digest(graph)}
    elif config.graph_file is not None:
        cfg["dataset"] = "file"
        cfg["graph_file"] = graph_file_config(config.graph_file)
    elif config.dataset == "csbm":
        cfg["csbm_nodes"] = int(config.csbm_nodes)


def _stored_config(config: ShadowConfig, model: Any, graph: Any) -> dict:
    """The manifest configuration (the keys ``jaxaudit shadow`` has always stored, so that its
    folders resume)."""
    from jaxaudit.runs import KEY_RULE

    cfg = {"dataset": config.dataset, "model": model_config(config, model),
           "sampler": config.sampler, "ratio": config.ratio,
           "models": int(config.num_models), "epochs": int(config.epochs),
           "learning_rate": config.learning_rate, "weight_decay": config.weight_decay,
           "edge_access": config.edge_access, "chunk": int(config.chunk),
           "seed": int(config.seed)}
    if config.sampler == "snowball":
        cfg["snowball_edges"] = config.snowball_edges
    graph_config(config, graph, cfg)
    cfg["key_rule"] = KEY_RULE  # model m uses unit_key(seed, m), whatever the chunking
    return cfg


def check_config(config: ShadowConfig, run_dir: str | Path | None, model: Any = None,
                 graph: Any = None) -> dict:
    """Every field of ``config`` checked (ValueError naming the field) before any work; returns
    the configuration to store."""
    from jaxaudit.graph import EDGE_ACCESS

    if not isinstance(config, ShadowConfig):
        raise ArgumentTypeError(f"config must be a ShadowConfig, got {type(config).__name__}")
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    check_graph_source(config, graph)
    bounded("num_models", config.num_models, 1, MAX_MODELS)
    bounded("epochs", config.epochs, 1, MAX_EPOCHS)
    check_integer("chunk", config.chunk, minimum=1)
    check_integer("seed", config.seed, minimum=0)
    check_positive_finite("learning_rate", config.learning_rate)
    check_nonnegative_finite("weight_decay", config.weight_decay)
    check_choice("edge_access", config.edge_access, EDGE_ACCESS)
    if graph is None and config.graph_file is None and config.dataset == "csbm":
        check_result_size(config.num_models, config.csbm_nodes)
    return _stored_config(config, model, graph)


def chunk_plan(num_models: int, chunk: int, prefix: str) -> tuple[list[int], list[str]]:
    """Chunk sizes and names: ``chunk`` models each, the last one smaller."""
    sizes = [min(chunk, num_models - start) for start in range(0, num_models, chunk)]
    return sizes, [f"{prefix}_{c:05d}" for c in range(len(sizes))]


def train_chunks(run: Any, cfg: dict, graph: Any, sampler: Any, module: Any, *,
                 prefix: str, chunk: int, progress: Progress | None,
                 worker: tuple[int, int] | None, recipe: dict,
                 sweep: dict | None = None) -> tuple[dict, list[str]]:
    """Train the sweep's models chunk by chunk (model m with ``unit_key(seed, m)``) through
    :func:`jaxaudit.runs.run_chunks`; returns the finished chunks and the plan's names."""
    from jaxaudit.graph import train_shadow_models
    from jaxaudit.runs import run_chunks, unit_keys

    sizes, names = chunk_plan(int(cfg["models"]), chunk, prefix)

    def compute(name: str) -> dict:
        c = names.index(name)
        # a diverged training is refused here, before its chunk is saved
        out = train_shadow_models(unit_keys(jax.random.key(cfg["seed"]), c * chunk, sizes[c]), graph, sampler,
                                  module, sizes[c], epochs=cfg["epochs"],
                                  edge_access=cfg["edge_access"], **recipe)
        return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

    return run_chunks(run, names, compute, progress=progress, worker=worker,
                      **(sweep or {})), names


def open_run(run_dir: str | Path | None, kind: str, cfg: dict) -> tuple[Any, bool, bool]:
    """The run folder (None in memory) and whether its manifest and the folder existed."""
    from jaxaudit.runs import RunDir

    if run_dir is None:
        return None, False, False
    existed, had_folder = (Path(run_dir) / "manifest.json").exists(), Path(run_dir).exists()
    return RunDir.open(run_dir, kind=kind, config=cfg), existed, had_folder


def lira_auc(masks: np.ndarray, scores: np.ndarray) -> float | None:
    """The global leave-one-out LiRA AUC (an estimate), from 4 models on."""
    from jaxaudit.mia import lira_loo, roc_auc

    if masks.shape[0] < 4:
        return None
    return float(roc_auc(lira_loo(scores, masks), masks))


def run_shadow(config: ShadowConfig, run_dir: str | Path | None = None, *,
               progress: Progress | None = None, worker: tuple[int, int] | None = None,
               model: Any = None, graph: Any = None, backend: str = "serial",
               ray_address: str | None = None, ray_workers: int | None = None) -> ShadowRun:
    """Train ``config.num_models`` shadow GNNs and score every node (``jaxaudit shadow``).

    Model m trains on ``sampler(k_s, graph)`` with the key ``unit_key(seed, m)`` (split into the
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
      :class:`ShadowRun`. With a run folder, ``summary.json`` is written too.

    Raises:
      ValueError: a bad configuration field (named), a folder holding another configuration, or
        a diverged training (nothing of it saved; a new folder is left reusable).
    """
    from jaxaudit.graph.shadow_models import gnn_module
    from jaxaudit.report import shadow as report
    from jaxaudit.runs.rundir import discard_new_run

    cfg = check_config(config, run_dir, model, graph)
    # the graph and the sampler first: the library checks them before any folder is written
    graph, sampler = graph_and_sampler(cfg, config.data_dir, graph)
    check_result_size(config.num_models, graph.num_nodes)
    module = gnn_module(model if model is not None else config.model, graph)
    run, existed, had_folder = open_run(run_dir, "shadow", cfg)
    try:
        results, names = train_chunks(
            run, cfg, graph, sampler, module, prefix="chunk", chunk=int(config.chunk),
            progress=progress, worker=worker,
            recipe={"learning_rate": config.learning_rate, "weight_decay": config.weight_decay},
            sweep=dict(backend=backend, ray_address=ray_address, ray_workers=ray_workers))
    except ValueError:
        if run is not None:
            discard_new_run(run.path, existed, keep_folder=had_folder)
        raise
    result = _result(results, names, cfg, None if run is None else run.path)
    _warn_short_samples(result.masks, cfg["ratio"], cfg["sampler"])
    if run is not None and not result.missing:
        run.write_json("summary.json", report.summary(result))
    return result


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


def _result(results: dict, names: list[str], cfg: dict, path: Path | None) -> ShadowRun:
    done = [n for n in names if n in results]
    if not done:
        masks, scores = np.zeros((0, 0), bool), np.zeros((0, 0), np.float32)
    else:
        masks = np.concatenate([results[n]["masks"] for n in done]).astype(bool)
        scores = np.concatenate([results[n]["scores"] for n in done]).astype(np.float32)
    missing = tuple(n for n in names if n not in results)
    return ShadowRun(masks=masks, scores=scores,
                     mean_inclusion=float(masks.mean()) if masks.size else float("nan"),
                     lira_global_auc=None if missing else lira_auc(masks, scores),
                     config=cfg, path=path, missing=missing)


def load_shadow(path: str | Path) -> ShadowRun:
    """A finished shadow run folder (of :func:`run_shadow` or ``jaxaudit shadow``).

    Raises:
      FileNotFoundError: no such folder.
      ValueError: not a shadow run, an incomplete run (chunks missing: repeat its command), or
        chunks its configuration does not plan or whose sizes disagree with it.
    """
    from jaxaudit.runs import load_results

    if not Path(path).is_dir():
        raise FileNotFoundError(f"shadow run folder not found: {path}")
    res = load_results(path)
    if res.kind != "shadow":
        raise ValueError(f"shadow run {path} must be a `jaxaudit shadow` run folder, got kind "
                         f"{res.kind!r}")
    cfg = res.config
    total, chunk = int(cfg["models"]), int(cfg["chunk"])
    _, expected = chunk_plan(total, chunk, "chunk")
    missing = [n for n in expected if n not in res.chunks]
    if missing:
        raise ValueError(
            f"shadow run {path} is incomplete: {len(expected) - len(missing)} of {len(expected)} "
            f"chunks finished (missing {', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}); repeat its `jaxaudit shadow` command (or "
            "run_shadow call) to finish it")
    extra = sorted(set(res.chunks) - set(expected))
    if extra:
        raise ValueError(f"shadow run {path} is inconsistent: it holds chunks its configuration "
                         f"does not plan ({', '.join(extra[:3])}); use the original folder")
    masks = np.concatenate([res.chunks[n]["masks"] for n in expected]).astype(bool)
    scores = np.concatenate([res.chunks[n]["scores"] for n in expected]).astype(np.float32)
    if masks.shape[0] != total or scores.shape != masks.shape:
        raise ValueError(f"shadow run {path} is inconsistent: its chunks hold {masks.shape[0]} "
                         f"models, its manifest says {total}")
    summary = res.tables.get("summary.json") or {}
    auc = summary.get("lira_global_auc") if isinstance(summary, dict) else None
    return ShadowRun(masks=masks, scores=scores, mean_inclusion=float(masks.mean()),
                     lira_global_auc=auc, config=cfg, path=Path(path))
