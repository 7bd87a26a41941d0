"""What every pipeline shares: the run-folder lifecycle and the stored configuration, and the
shadow-model sweep that ``run_shadow`` and ``run_bmp`` both train.

The lifecycle of a pipeline with a run folder (:func:`open_run`):

1. every configuration field is checked before anything is written (errors name the field);
2. the folder is opened, or resumed when it holds the same configuration (another one is
   refused), with the configuration stored as the ``NamedTuple``'s own fields
   (:func:`stored_config`: ``config._asdict()`` without the fields that change no number, plus
   the values derived from it under the key ``"derived"``, e.g. the key rule, a file's SHA-256
   and the precision JAX computes in, ``"float32"`` or ``"float64"`` under
   ``JAX_ENABLE_X64=1``: a folder is never filled by processes of two precisions, whose chunks
   would hold different models);
3. the work units are claimed and computed through :func:`jaxaudit.runs.run_chunks`;
4. when the block fails before any unit is finished, what the call wrote into a folder it
   created is removed (:func:`jaxaudit.runs.rundir.discard_new_run`), so the corrected call can
   use the same folder instead of being refused as another configuration;
5. the pipeline renders its tables and figures through :mod:`jaxaudit.report`.
"""

from __future__ import annotations

import contextlib
import hashlib
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
    check_probability,
)
from jaxaudit.runs import KEY_RULE, Progress, RunDir
from jaxaudit.runs.files import jsonable
from jaxaudit.runs.rundir import MANIFEST, discard_new_run, read_manifest

__all__ = ["MAX_CSBM_NODES", "MAX_EPOCHS", "MAX_MODELS", "MAX_RESULT_BYTES", "MODELS",
           "SHADOW_FIELDS", "DP_FIELDS", "ShadowRun", "bounded", "check_graph_source", "check_result_size",
           "check_training", "chunk_plan", "graph_and_sampler", "graph_digest", "lira_auc",
           "load_shadow", "open_run", "shadow_derived", "shadow_result", "stored_config",
           "train_chunks"]

#: The shadow GNNs by name (the configurations' ``model``); any flax module can be passed as
#: ``model=``.
MODELS = ("gcn", "sage", "gat", "mlp", "capped_gcn")
#: Limits refused before any work.
MAX_MODELS = 100_000
MAX_EPOCHS = 100_000
#: The CSBM draws every node pair (O(N²): ~0.1 s at 2708 nodes, ~35 s at 50,000 on 2 cores).
MAX_CSBM_NODES = 50_000
#: The R × N masks and scores, their copies and LiRA's float64.
MAX_RESULT_BYTES = 8 * 2**30
BYTES_PER_SCORE = 40
#: The fields of a shadow-model sweep, shared by ``ShadowConfig`` and ``BmpConfig``.
SHADOW_FIELDS = ("dataset", "graph_file", "model", "sampler", "ratio", "snowball_edges",
                 "num_models", "epochs", "learning_rate", "weight_decay", "edge_access", "chunk",
                 "seed", "csbm_nodes")
#: The node-level DP fields of a shadow-model sweep (stored only when DP is on, so a private
#: run folder never resumes as a non-private one and the non-private folders stay as they were).
DP_FIELDS = ("dp_epsilon", "dp_noise_multiplier", "dp_clip", "dp_degree_cap", "dp_delta")


# -- the lifecycle -----------------------------------------------------------------------------
def stored_config(config: NamedTuple, derived: dict | None = None,
                  exclude: tuple[str, ...] = ()) -> dict:
    """The configuration a run folder stores: the fields of ``config`` (without ``exclude``, the
    fields that change no number), as JSON values, and under ``"derived"`` the values derived
    from them (always the key rule, :data:`jaxaudit.runs.KEY_RULE`, and this process's
    :func:`precision`)."""
    fields = {k: v for k, v in config._asdict().items() if k not in exclude}
    return jsonable(fields) | {"derived": jsonable(
        {"key_rule": KEY_RULE, **(derived or {}), "precision": precision()})}


def precision() -> str:
    """The floating-point precision JAX computes in here: ``"float64"`` when x64 is enabled
    (``JAX_ENABLE_X64=1``, ``jax.config.update("jax_enable_x64", True)`` or inside
    ``jax.enable_x64()``), else ``"float32"``."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64)).name


def _x64_setting(name: str) -> str:
    return "JAX_ENABLE_X64=1" if name == "float64" else "JAX_ENABLE_X64=0 (the default)"


def _check_precision(run_dir: str | Path, kind: str, stored: dict) -> None:
    """Refuse to resume a run folder made in another precision, naming both and the remedy."""
    try:
        manifest = read_manifest(run_dir)
    except (FileNotFoundError, ValueError):
        return  # no run yet, or RunDir.open says what is wrong
    derived = manifest["config"].get("derived")
    before = derived.get("precision") if isinstance(derived, dict) else None
    now = stored["derived"]["precision"]
    if manifest["kind"] == kind and isinstance(before, str) and before != now:
        raise ValueError(
            f"{run_dir} holds a {kind!r} run computed in {before}, but this process computes in "
            f"{now}: its chunks would mix models of two precisions. Resume it with "
            f"{_x64_setting(before)} (as every process that fills it), or choose another "
            "output folder")


@contextlib.contextmanager
def open_run(run_dir: str | Path | None, kind: str, stored: dict) -> Iterator[RunDir | None]:
    """The run folder of ``kind`` opened (created, or resumed under the same ``stored``
    configuration; None computes in memory); when the block raises before any chunk is
    finished, what it wrote into a folder this call created is removed again."""
    if run_dir is None:
        yield None
        return
    check_output_dir("run_dir", run_dir)
    existed, had_folder = (Path(run_dir) / MANIFEST).exists(), Path(run_dir).exists()
    if existed:
        _check_precision(run_dir, kind, stored)
    run = RunDir.open(run_dir, kind=kind, config=stored)
    try:
        yield run
    except BaseException:
        discard_new_run(run.path, existed, keep_folder=had_folder)
        raise


def bounded(name: str, value: Any, low: int, high: int) -> int:
    """An integer in [low, high]; ValueError naming ``name``."""
    value = check_integer(name, value, minimum=low)
    if value > high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value}")
    return value


# -- the shadow-model sweep --------------------------------------------------------------------
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


def check_graph_source(config: Any, graph: Any) -> None:
    """The fields that choose the graph (dataset, csbm_nodes) and the sampler's name."""
    from jaxaudit.datasets import GRAPH_DATASETS
    from jaxaudit.graph.samplers import SAMPLERS

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


def check_training(config: Any, model: Any, graph: Any) -> None:
    """The shadow-model fields of ``config`` (a ``ShadowConfig`` or a ``BmpConfig`` that trains
    its models), ValueError naming the field, before any work."""
    from jaxaudit.graph.shadow_models import EDGE_ACCESS

    check_graph_source(config, graph)
    bounded("num_models", config.num_models, 1, MAX_MODELS)
    bounded("epochs", config.epochs, 1, MAX_EPOCHS)
    check_integer("chunk", config.chunk, minimum=1)
    check_integer("seed", config.seed, minimum=0)
    check_positive_finite("learning_rate", config.learning_rate)
    check_nonnegative_finite("weight_decay", config.weight_decay)
    check_choice("edge_access", config.edge_access, EDGE_ACCESS)
    if model is None:
        check_choice("model", config.model, MODELS)
    else:
        from flax import linen as nn

        if not isinstance(model, nn.Module):
            raise ArgumentTypeError(f"model must be a flax.linen.Module, got "
                                    f"{type(model).__name__}")
    if graph is None and config.graph_file is None and config.dataset == "csbm":
        check_result_size(config.num_models, config.csbm_nodes)
    check_dp(config, model)


def dp_on(config: Any) -> bool:
    """Whether a shadow configuration (NamedTuple or stored dict) trains with node-level DP."""
    cfg: dict = config if isinstance(config, dict) else config._asdict()
    return cfg.get("dp_epsilon") is not None or cfg.get("dp_noise_multiplier") is not None


def dp_excluded(config: Any) -> tuple[str, ...]:
    """The DP fields left out of the stored configuration: all of them when DP is off."""
    return () if dp_on(config) else DP_FIELDS


def check_dp(config: Any, model: Any) -> None:
    """The DP fields (ValueError naming the field): ``dp_epsilon`` > 0 finite or
    ``dp_noise_multiplier`` ≥ 0 (0: clipping without noise), not both; ``dp_clip`` > 0, ``dp_degree_cap`` ≥ 1,
    ``dp_delta`` in (0, 1); with DP on, a model and edge access that support it."""
    from jaxaudit.graph.dp_training import check_private_model

    if config.dp_epsilon is not None and config.dp_noise_multiplier is not None:
        raise ValueError("dp_epsilon and dp_noise_multiplier: give one of them")
    if config.dp_epsilon is not None:
        check_positive_finite("dp_epsilon", config.dp_epsilon)
    if config.dp_noise_multiplier is not None:
        check_nonnegative_finite("dp_noise_multiplier", config.dp_noise_multiplier)
    check_positive_finite("dp_clip", config.dp_clip)
    check_integer("dp_degree_cap", config.dp_degree_cap, minimum=1)
    check_probability("dp_delta", config.dp_delta, open_low=True, open_high=True)
    if dp_on(config):
        module = model if model is not None else _named_module(config.model)
        check_private_model(node_dp(config, 1), module, config.edge_access)


def _named_module(name: str) -> Any:
    """The built-in module of a model name (sized for two classes: only its kind is read)."""
    from jaxaudit.graph import GAT, GCN, GraphSAGE
    from jaxaudit.graph.dp_training import CappedGCN, NodeMLP

    kinds = {"gcn": GCN, "sage": GraphSAGE, "gat": GAT, "mlp": NodeMLP, "capped_gcn": CappedGCN}
    return kinds[name](num_classes=2)


def node_dp(config: Any, num_nodes: int) -> Any:
    """The ``jaxaudit.graph.NodeDp`` of a shadow configuration (NamedTuple or stored dict;
    None when DP is off): σ given, or the library accountant's σ for ``dp_epsilon`` at
    ``dp_delta`` over ``epochs`` full-batch epochs; normaliser ratio × N, the expected sample."""
    from jaxaudit.graph.dp_training import NodeDp, noise_for_node_epsilon

    cfg: dict = config if isinstance(config, dict) else config._asdict()
    if not dp_on(cfg):
        return None
    sigma = cfg["dp_noise_multiplier"]
    if sigma is None:
        sigma = noise_for_node_epsilon(float(cfg["dp_epsilon"]), float(cfg["dp_delta"]),
                                       int(cfg["epochs"]))
    return NodeDp(clip_norm=float(cfg["dp_clip"]), noise_multiplier=float(sigma),
                  degree_cap=int(cfg["dp_degree_cap"]),
                  normalizer=float(cfg["ratio"]) * num_nodes)


def dp_derived(config: Any, model: Any) -> dict:
    """What a DP sweep stores beside its fields: σ, the accountant's ε at δ (add/remove node
    relation: membership is a node's addition or removal), the per-node gradients one node can
    touch N_r and the sensitivity (2 N_r − 1) C of the clipped sum."""
    from jaxaudit.graph.dp_training import gradient_count, node_dp_epsilon

    if not dp_on(config):
        return {}
    dp = node_dp(config, 1)
    module = model if model is not None else _named_module(config.model)
    touched = gradient_count(module, dp.degree_cap, config.edge_access)
    return {"dp": {"noise_multiplier": dp.noise_multiplier, "delta": config.dp_delta,
                   "epsilon": node_dp_epsilon(dp, config.epochs, config.dp_delta),
                   "relation": "add_remove", "gradients_touched": touched,
                   "sensitivity": (2 * touched - 1) * dp.clip_norm}}


def shadow_derived(config: Any, model: Any, graph: Any) -> dict:
    """What a shadow-model sweep stores beside its fields: the module passed as ``model=``
    (``flax:<repr>``: its class and fields), the in-memory graph (name, size, SHA-256) or the
    graph file's SHA-256, so that a resumed run refuses another model, graph or file."""
    derived: dict[str, Any] = {}
    if model is not None:
        derived["model"] = f"flax:{model!r}"
    if graph is not None:
        from jaxaudit.graph import Graph

        if not isinstance(graph, Graph):
            raise ArgumentTypeError(
                f"graph must be a jaxaudit.graph.Graph, got {type(graph).__name__} (a jraph "
                "GraphsTuple converts with jaxaudit.graph.from_jraph(graphs_tuple, labels))")
        derived["graph"] = {"name": graph.name, "num_nodes": graph.num_nodes,
                            "sha256": graph_digest(graph)}
    elif config.graph_file is not None:
        path = check_input_path("graph_file", config.graph_file)
        derived["graph_file_sha256"] = _sha256(path)
    return derived


def graph_and_sampler(stored: dict, data_dir: str | Path | None = None, graph: Any = None
                      ) -> tuple[Any, Any]:
    """The graph and the sampler of a stored shadow-model configuration, through the library's
    registries (:func:`jaxaudit.datasets.graph_by_name`, :func:`jaxaudit.graph.sampler_by_name`).

    Args:
      stored: a stored shadow or bmp configuration (a run folder's manifest ``config``).
      data_dir: where the Planetoid files live.
      graph: the in-memory ``Graph`` of a configuration that stores one, checked against the
        stored digest.
    """
    from jaxaudit.datasets import graph_by_name
    from jaxaudit.graph import Graph, load_graph_npz, sampler_by_name

    derived = stored.get("derived", {})
    if "graph" in derived:
        if not isinstance(graph, Graph):
            raise ValueError("graph: this run was made with an in-memory Graph; pass the same "
                             "graph as graph=")
        if graph_digest(graph) != derived["graph"]["sha256"]:
            raise ValueError("graph differs from the graph this run was made with")
    elif stored.get("graph_file") is not None:
        path = check_input_path("graph_file", stored["graph_file"])
        try:
            graph = load_graph_npz(path)
        except ValueError as err:
            raise ValueError(f"graph_file: {err}") from err
        if _sha256(path) != derived.get("graph_file_sha256"):
            raise ValueError(f"graph_file {path} changed since this run was configured")
    else:
        try:
            graph = graph_by_name(stored["dataset"], key=jax.random.key(stored["seed"]),
                                  num_nodes=stored["csbm_nodes"], data_dir=data_dir)
        except ValueError as err:  # the CSBM's one field is its size; a Planetoid set's files
            what = (f"csbm_nodes={stored['csbm_nodes']}" if stored["dataset"] == "csbm"
                    else f"dataset {stored['dataset']!r}")
            raise ValueError(f"{what}: {err}") from err
    options = {"edges": stored["snowball_edges"]} if stored["sampler"] == "snowball" else {}
    try:
        sampler = sampler_by_name(stored["sampler"], stored["ratio"], **options)
    except ValueError as err:
        raise ValueError(f"ratio {stored['ratio']} (sampler {stored['sampler']}): {err}") from err
    return graph, sampler


def chunk_plan(num_models: int, chunk: int, prefix: str) -> tuple[list[int], list[str]]:
    """Chunk sizes and names: ``chunk`` models each, the last one smaller."""
    sizes = [min(chunk, num_models - start) for start in range(0, num_models, chunk)]
    return sizes, [f"{prefix}_{c:05d}" for c in range(len(sizes))]


def train_chunks(run: RunDir | None, stored: dict, graph: Any, sampler: Any, module: Any, *,
                 prefix: str, progress: Progress | None, worker: tuple[int, int] | None,
                 sweep: dict | None = None) -> tuple[dict, list[str]]:
    """Train the sweep's models chunk by chunk (model m with ``unit_key(key(seed), m)``)
    through :func:`jaxaudit.runs.run_chunks`; returns the finished chunks and the plan's
    names."""
    from jaxaudit.graph import ShadowTraining, train_shadow_models
    from jaxaudit.runs import run_chunks, unit_keys

    chunk = int(stored["chunk"])
    sizes, names = chunk_plan(int(stored["num_models"]), chunk, prefix)
    root = jax.random.key(stored["seed"])

    def compute(name: str) -> dict:
        c = names.index(name)
        # a diverged training is refused here, before its chunk is saved
        out = train_shadow_models(unit_keys(root, c * chunk, sizes[c]), graph, sampler,
                                  module, sizes[c], ShadowTraining(
                                      epochs=stored["epochs"],
                                      learning_rate=stored["learning_rate"],
                                      weight_decay=stored["weight_decay"],
                                      edge_access=stored["edge_access"],
                                      dp=node_dp(stored, graph.num_nodes)))
        return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

    return run_chunks(run, names, compute, progress=progress, worker=worker,
                      **(sweep or {})), names


def lira_auc(masks: np.ndarray, scores: np.ndarray) -> float | None:
    """The global leave-one-out LiRA AUC (an estimate), from 4 models on."""
    from jaxaudit.mia import lira_loo, roc_auc

    if masks.shape[0] < 4:
        return None
    return float(roc_auc(lira_loo(scores, masks), masks))


# -- the result of a shadow-model sweep ---------------------------------------------------------
class ShadowRun(NamedTuple):
    """The result of :func:`jaxaudit.pipelines.run_shadow` (or :func:`load_shadow`). All fields are measurements
    or ESTIMATES; none is a bound.

    Attributes:
      masks: (R, N) bool, node i in model r's training sample.
      scores: (R, N) float32, the true-class logit of node i under model r.
      mean_inclusion: the fraction of (model, node) pairs in a sample.
      lira_global_auc: AUC of the leave-one-out LiRA over all nodes (an estimate; None below 4
        models or when chunks are missing).
      config: the stored configuration (the run folder's manifest ``config``: the fields of
        :class:`ShadowConfig` and, under ``"derived"``, the key rule, the model passed as
        ``model=``, the in-memory graph's or the graph file's SHA-256).
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


def shadow_result(results: dict, names: list[str], cfg: dict, path: Path | None) -> ShadowRun:
    """The :class:`ShadowRun` of the finished chunks ``results`` of the plan ``names``."""
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
    """A finished shadow run folder (of :func:`jaxaudit.pipelines.run_shadow` or
    ``jaxaudit shadow``).

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
    total, chunk = int(cfg["num_models"]), int(cfg["chunk"])
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
