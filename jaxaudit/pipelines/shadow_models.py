"""The shadow-model sweep that ``run_shadow`` and ``run_bmp`` both train: its configuration
(:class:`ShadowConfig`, with node-level DP as one optional :class:`NodeDpConfig`), its checks, the
graph and sampler it names, its training in chunks and its result (:class:`ShadowRun`,
:func:`load_shadow`).

Model m of a sweep with seed s uses the run plan's key ``unit_key(key(s), m)``
(:mod:`jaxaudit.runs.keys`) whatever the chunking, so a shadow run and ``run_bmp`` training its own
models with the same :class:`ShadowConfig` train the same models (Yıldırım & Khosla,
arXiv 2606.04069; our recipe: docs/gnn_mia.md).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple, cast

import jax
import numpy as np

from jaxaudit._validation import (
    ArgumentTypeError,
    check_choice,
    check_input_path,
    check_integer,
    check_nonnegative_finite,
    check_positive_finite,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.pipelines.lifecycle import bounded, config_from_stored
from jaxaudit.runs import Progress, RunDir, Sweep

__all__ = ["MAX_CSBM_NODES", "MAX_EPOCHS", "MAX_MODELS", "MAX_RESULT_BYTES", "MODELS",
           "NodeDpConfig", "ShadowConfig", "ShadowRun", "check_result_size", "check_training",
           "chunk_plan", "graph_and_sampler", "graph_digest", "lira_auc", "load_shadow",
           "shadow_config", "shadow_derived", "shadow_excluded", "shadow_result",
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


class NodeDpConfig(NamedTuple):
    """Node-level DP training of the shadow models (models "mlp" and "capped_gcn" of
    :mod:`jaxaudit.graph.dp_training`; Daigavane et al., arXiv 2111.15521): the ``dp`` field of
    :class:`ShadowConfig` (None there: non-private).

    Attributes:
      epsilon: the target ε at ``delta`` (σ from the library accountant, μ = √T/σ-GDP under the
        add/remove-node relation), or
      noise_multiplier: σ itself (0: clipping without noise); give exactly one of the two.
      clip_norm: the per-node clip C (default 1).
      degree_cap: the in- and out-degree cap K of the training graph (default 5).
      delta: DP's δ of ``epsilon`` and of the stored guarantee (default 1e-5).
    """

    epsilon: float | None = None
    noise_multiplier: float | None = None
    clip_norm: float = 1.0
    degree_cap: int = 5
    delta: float = 1e-5

    def check(self) -> NodeDpConfig:
        """Every field checked (a ``ValueError`` naming it as ``dp.<field>``); returns the
        configuration."""
        check_config_fields(self, "dp")
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("dp.epsilon and dp.noise_multiplier: give one of them (dp=None: "
                             "non-private training)")
        if self.epsilon is not None:
            check_positive_finite("dp.epsilon", self.epsilon)
        if self.noise_multiplier is not None:
            check_nonnegative_finite("dp.noise_multiplier", self.noise_multiplier)
        check_positive_finite("dp.clip_norm", self.clip_norm)
        check_integer("dp.degree_cap", self.degree_cap, minimum=1)
        check_probability("dp.delta", self.delta, open_low=True, open_high=True)
        return self


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
      dp: node-level DP training (:class:`NodeDpConfig`; None, the default: non-private). Stored
        only when given, with σ and the accountant's ε (add/remove) in the stored
        ``derived["dp"]``.
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
    dp: NodeDpConfig | None = None

    def check(self) -> ShadowConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_shadow``, ``run_bmp`` and the commands call it first."""
        check_training(self, None, None)
        return self


def shadow_excluded(config: ShadowConfig, prefix: str = "") -> tuple[str, ...]:
    """The fields of ``config`` a run folder does not store: ``data_dir`` (changes no number)
    and ``dp`` when it is None (a non-private sweep stores no DP fields)."""
    return (f"{prefix}data_dir",) + ((f"{prefix}dp",) if config.dp is None else ())


def shadow_config(stored: dict) -> ShadowConfig:
    """The :class:`ShadowConfig` of a stored shadow configuration (a shadow run folder's
    manifest ``config``; ``data_dir`` None)."""
    return config_from_stored(ShadowConfig, stored)


# -- checks ------------------------------------------------------------------------------------
def check_result_size(num_models: int, num_nodes: int) -> None:
    """Refuse R × N results that would not fit in memory, before any work."""
    need = int(num_models) * int(num_nodes) * BYTES_PER_SCORE
    if need > MAX_RESULT_BYTES:
        raise ValueError(
            f"num_models {num_models} on {num_nodes} nodes: the scores need about "
            f"{need / 2**30:.1f} GiB (the limit is {MAX_RESULT_BYTES / 2**30:g} GiB, about "
            f"{BYTES_PER_SCORE} bytes per model and node); lower num_models")


def _check_graph_source(config: ShadowConfig, graph: Any) -> None:
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


def check_training(config: ShadowConfig, model: Any, graph: Any) -> None:
    """Every field of a :class:`ShadowConfig` (``dp`` included) with the pipeline's ``model=``
    and ``graph=``, ValueError naming the field, before any work."""
    from jaxaudit._validation import check_instance
    from jaxaudit.graph.shadow_models import EDGE_ACCESS

    check_instance("shadow", config, ShadowConfig)
    if config.dp is not None:
        check_instance("dp", config.dp, NodeDpConfig)
    check_config_fields(config)  # the kinds, and config.dp.check()
    _check_graph_source(config, graph)
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
    if config.dp is not None:
        from jaxaudit.graph.dp_training import check_private_model

        module = model if model is not None else _named_module(config.model)
        check_private_model(node_dp(config, 1), module, config.edge_access)


def _named_module(name: str) -> Any:
    """The built-in module of a model name (sized for two classes: only its kind is read)."""
    from jaxaudit.graph import GAT, GCN, GraphSAGE
    from jaxaudit.graph.dp_training import CappedGCN, NodeMLP

    kinds = {"gcn": GCN, "sage": GraphSAGE, "gat": GAT, "mlp": NodeMLP, "capped_gcn": CappedGCN}
    return kinds[name](num_classes=2)


def node_dp(config: ShadowConfig, num_nodes: int) -> Any:
    """The ``jaxaudit.graph.NodeDp`` of a sweep (None when ``config.dp`` is None): σ given, or
    the library accountant's σ for ``dp.epsilon`` at ``dp.delta`` over ``epochs`` full-batch
    epochs; normaliser ratio × N, the expected sample."""
    from jaxaudit.graph.dp_training import NodeDp, noise_for_node_epsilon

    dp = config.dp
    if dp is None:
        return None
    sigma = dp.noise_multiplier
    if sigma is None:  # checked: then epsilon is given
        sigma = noise_for_node_epsilon(float(cast(float, dp.epsilon)), float(dp.delta),
                                       int(config.epochs))
    return NodeDp(clip_norm=float(dp.clip_norm), noise_multiplier=float(sigma),
                  degree_cap=int(dp.degree_cap), normalizer=float(config.ratio) * num_nodes)


# -- what a sweep stores beside its fields -------------------------------------------------------
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


def shadow_derived(config: ShadowConfig, model: Any, graph: Any) -> dict:
    """What a shadow-model sweep stores beside its fields: the module passed as ``model=``
    (``flax:<repr>``: its class and fields), the in-memory graph (name, size, SHA-256) or the
    graph file's SHA-256, so that a resumed run refuses another model, graph or file; with DP,
    ``"dp"``: σ, the accountant's ε at δ (add/remove node relation: membership is a node's
    addition or removal), the per-node gradients one node can touch N_r and the sensitivity
    (2 N_r − 1) C of the clipped sum."""
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
    if config.dp is not None:
        from jaxaudit.graph.dp_training import gradient_count, node_dp_epsilon

        dp = node_dp(config, 1)
        module = model if model is not None else _named_module(config.model)
        touched = gradient_count(module, dp.degree_cap, config.edge_access)
        derived["dp"] = {"noise_multiplier": dp.noise_multiplier, "delta": config.dp.delta,
                         "epsilon": node_dp_epsilon(dp, config.epochs, config.dp.delta),
                         "relation": "add_remove", "gradients_touched": touched,
                         "sensitivity": (2 * touched - 1) * dp.clip_norm}
    return derived


# -- the graph, the sampler and the training -----------------------------------------------------
def graph_and_sampler(config: ShadowConfig, derived: dict, graph: Any = None) -> tuple[Any, Any]:
    """The graph and the sampler of a sweep, through the library's registries
    (:func:`jaxaudit.datasets.graph_by_name`, :func:`jaxaudit.graph.sampler_by_name`).

    Args:
      config: the sweep.
      derived: what its run stores beside its fields (:func:`shadow_derived`): the digest of
        an in-memory graph or of the graph file, checked here.
      graph: the in-memory ``Graph`` of a sweep that stores one, checked against the stored
        digest.
    """
    from jaxaudit.datasets import graph_by_name
    from jaxaudit.graph import Graph, load_graph_npz, sampler_by_name

    if "graph" in derived:
        if not isinstance(graph, Graph):
            raise ValueError("graph: this run was made with an in-memory Graph; pass the same "
                             "graph as graph=")
        if graph_digest(graph) != derived["graph"]["sha256"]:
            raise ValueError("graph differs from the graph this run was made with")
    elif config.graph_file is not None:
        path = check_input_path("graph_file", config.graph_file)
        try:
            graph = load_graph_npz(path)
        except ValueError as err:
            raise ValueError(f"graph_file: {err}") from err
        if _sha256(path) != derived.get("graph_file_sha256"):
            raise ValueError(f"graph_file {path} changed since this run was configured")
    else:
        try:
            graph = graph_by_name(config.dataset, key=jax.random.key(config.seed),
                                  num_nodes=config.csbm_nodes, data_dir=config.data_dir)
        except ValueError as err:  # the CSBM's one field is its size; a Planetoid set's files
            what = (f"csbm_nodes={config.csbm_nodes}" if config.dataset == "csbm"
                    else f"dataset {config.dataset!r}")
            raise ValueError(f"{what}: {err}") from err
    options = {"edges": config.snowball_edges} if config.sampler == "snowball" else {}
    try:
        sampler = sampler_by_name(config.sampler, config.ratio, **options)
    except ValueError as err:
        raise ValueError(f"ratio {config.ratio} (sampler {config.sampler}): {err}") from err
    return graph, sampler


def chunk_plan(num_models: int, chunk: int, prefix: str) -> tuple[list[int], list[str]]:
    """Chunk sizes and names: ``chunk`` models each, the last one smaller."""
    sizes = [min(chunk, num_models - start) for start in range(0, num_models, chunk)]
    return sizes, [f"{prefix}_{c:05d}" for c in range(len(sizes))]


def train_chunks(run: RunDir | None, config: ShadowConfig, graph: Any, sampler: Any,
                 module: Any, *, prefix: str, progress: Progress | None,
                 sweep: Sweep = Sweep()) -> tuple[dict, list[str]]:
    """Train the sweep's models chunk by chunk (model m with ``unit_key(key(seed), m)``)
    through :func:`jaxaudit.runs.run_chunks`; returns the finished chunks and the plan's
    names."""
    from jaxaudit.graph import ShadowTraining, train_shadow_models
    from jaxaudit.runs import run_chunks, unit_keys

    sizes, names = chunk_plan(config.num_models, config.chunk, prefix)
    root = jax.random.key(config.seed)
    training = ShadowTraining(epochs=config.epochs, learning_rate=config.learning_rate,
                              weight_decay=config.weight_decay, edge_access=config.edge_access,
                              dp=node_dp(config, graph.num_nodes))

    def compute(name: str) -> dict:
        c = names.index(name)
        # a diverged training is refused here, before its chunk is saved
        out = train_shadow_models(unit_keys(root, c * config.chunk, sizes[c]), graph, sampler,
                                  module, sizes[c], training)
        return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

    return run_chunks(run, names, compute, progress=progress, sweep=sweep), names


def lira_auc(masks: np.ndarray, scores: np.ndarray) -> float | None:
    """The global leave-one-out LiRA AUC (an estimate), from 4 models on."""
    from jaxaudit.mia import lira_loo, roc_auc

    if masks.shape[0] < 4:
        return None
    return float(roc_auc(lira_loo(scores, masks), masks))


# -- the result of a shadow-model sweep ---------------------------------------------------------
class ShadowRun(NamedTuple):
    """The result of :func:`jaxaudit.pipelines.run_shadow` (or :func:`load_shadow`). All fields
    are measurements or ESTIMATES; none is a bound.

    Attributes:
      masks: (R, N) bool, node i in model r's training sample.
      scores: (R, N) float32, the true-class logit of node i under model r.
      mean_inclusion: the fraction of (model, node) pairs in a sample.
      lira_global_auc: AUC of the leave-one-out LiRA over all nodes (an estimate; None below 4
        models or when chunks are missing).
      config: the stored configuration (the run folder's manifest ``config``: the fields of
        :class:`ShadowConfig` and, under ``"derived"``, the key rule, the model passed as
        ``model=``, the in-memory graph's or the graph file's SHA-256; :func:`shadow_config`
        gives the :class:`ShadowConfig` back).
      path: the run folder (None: computed in memory).
      missing: chunks not finished (only with a ``Sweep(worker=...)``: the others' share);
        masks and scores then hold the finished chunks only.
    """

    masks: np.ndarray
    scores: np.ndarray
    mean_inclusion: float
    lira_global_auc: float | None
    config: dict
    path: Path | None
    missing: tuple[str, ...] = ()


def shadow_result(results: dict, names: list[str], stored: dict, path: Path | None) -> ShadowRun:
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
                     config=stored, path=path, missing=missing)


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
    config = shadow_config(res.config)
    _, expected = chunk_plan(int(config.num_models), int(config.chunk), "chunk")
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
    if masks.shape[0] != config.num_models or scores.shape != masks.shape:
        raise ValueError(f"shadow run {path} is inconsistent: its chunks hold {masks.shape[0]} "
                         f"models, its manifest says {config.num_models}")
    summary = res.tables.get("summary.json") or {}
    auc = summary.get("lira_global_auc") if isinstance(summary, dict) else None
    return ShadowRun(masks=masks, scores=scores, mean_inclusion=float(masks.mean()),
                     lira_global_auc=auc, config=res.config, path=Path(path))
