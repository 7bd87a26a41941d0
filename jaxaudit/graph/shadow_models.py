"""Shadow-model training: R GNNs on R independent samples in one jit-compiled call (docs/gnn_mia.md).

Layout of the computation (one XLA program): ``vmap`` over models (via
:func:`jaxaudit.sharding.vmap_chunked`, so chunks of models run one after another with
``lax.map`` and the model axis is sharded over the visible devices), and inside each model
sampling, ``lax.scan`` over the full-batch epochs, and the final query. Sparse node features are
multiplied by all models' first-layer weights in one sparse product (see
:mod:`jaxaudit.graph.propagation`).

Edge access (what the training and the query see; the three settings of Khosla, arXiv 2601.17130):

* ``"inductive"``: train on the sampler's training edges (the subgraph induced by S, or the
  discovered edges); query each member on that training graph and each non-member on the
  remaining graph (the subgraph induced by V \\ S).
* ``"full"``: train and query on every edge (labels still only from S).
* ``"none"``: no edges at all (features only), in training and query.

Score of node i under model r: the logit of the true-class probability,
``log p_y − log(1 − p_y) = z_y − logsumexp_{c≠y} z_c`` (stable, from the logits).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax

from jaxaudit._validation import (
    ArgumentTypeError,
    check_choice,
    check_graph,
    check_integer,
    check_key,
    check_nonnegative_finite,
    check_positive_finite,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.graph.dp_training import (
    CappedGCN,
    NodeDp,
    NodeMLP,
    check_private_model,
    fit_private,
    private_query_weight,
)
from jaxaudit.graph.layout import TRIAL_EPOCHS, cpu_chunk_size
from jaxaudit.graph.models import GAT, GCN, GraphSAGE
from jaxaudit.graph.propagation import SparseFeatures, sparse_features
from jaxaudit.graph.samplers import Sampler
from jaxaudit.graph.types import Graph
from jaxaudit.sharding import vmap_chunked

__all__ = [
    "EDGE_ACCESS",
    "ShadowModels",
    "ShadowTraining",
    "gnn_module",
    "prepare_inputs",
    "true_class_logit",
    "train_gnn",
    "gnn_logits",
    "train_shadow_model",
    "train_shadow_models",
]

EDGE_ACCESS = ("inductive", "full", "none")
_MODELS = {"gcn": GCN, "sage": GraphSAGE, "gat": GAT, "mlp": NodeMLP, "capped_gcn": CappedGCN}


class ShadowTraining(NamedTuple):
    """The shadow-training recipe of :func:`train_shadow_models` (docs/gnn_mia.md).

    Attributes:
      epochs: full-batch epochs (default 200).
      learning_rate: Adam's learning rate (default 0.01).
      weight_decay: L2 weight decay added to the gradient, as in ``torch.optim.Adam``
        (default 5e-4).
      edge_access: which edges training and the query see: "inductive" (default: train on the
        sample's edges, query members on them and non-members on the rest), "full" or "none"
        (module docstring).
      dp: None (default: non-private training) or a :class:`NodeDp` recipe: per-node clipped,
        noised gradients (full batch) for the models "mlp" and "capped_gcn", the training graph
        degree-capped, and every node queried on the same graph
        (:mod:`jaxaudit.graph.dp_training`).
    """

    epochs: int = 200
    learning_rate: float = 0.01
    weight_decay: float = 5e-4
    edge_access: str = "inductive"
    dp: NodeDp | None = None

    def check(self) -> ShadowTraining:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. The functions that take it call it first."""
        _check_training(self)
        return self


def _check_training(config: object) -> tuple[int, float, float, str]:
    """The recipe's fields, after checking that ``config`` is a :class:`ShadowTraining`."""
    if not isinstance(config, ShadowTraining):
        raise ArgumentTypeError(f"config must be a jaxaudit.graph.ShadowTraining, got "
                                f"{type(config).__name__}")
    check_config_fields(config)
    check_integer("epochs", config.epochs, minimum=1)
    check_positive_finite("learning_rate", config.learning_rate)
    check_nonnegative_finite("weight_decay", config.weight_decay)
    check_choice("edge_access", config.edge_access, EDGE_ACCESS)
    return config.epochs, config.learning_rate, config.weight_decay, config.edge_access


class ShadowModels(NamedTuple):
    """Output of :func:`train_shadow_models`.

    Attributes:
      masks: (R, N) bool, membership M_i of node i in model r's sample.
      scores: (R, N) float32, logit of the true-class probability of node i under model r.
    """

    masks: jax.Array
    scores: jax.Array


class Inputs(NamedTuple):
    """Device-side data the training needs: features (dense or sparse), edges, labels."""

    nodes: jax.Array | SparseFeatures
    senders: jax.Array
    receivers: jax.Array
    labels: jax.Array


def gnn_module(model: str | nn.Module, graph: Graph) -> nn.Module:
    """The flax module for ``model``: "gcn" | "sage" | "gat" | "mlp" | "capped_gcn" (sized from
    ``graph``; the last two are the node-level DP models of :mod:`jaxaudit.graph.dp_training`)
    or a module."""
    if isinstance(model, nn.Module):
        return model
    check_choice("model", model, tuple(_MODELS))
    return _MODELS[model](num_classes=graph.num_classes)


def prepare_inputs(graph: Graph, *, normalize_features: bool = True,
                   sparse: bool | None = None) -> Inputs:
    """Host-side preparation: row-normalised features, stored sparse when at most 10% of the
    entries are nonzero (or as forced by ``sparse``; the shadow engine forces ``False`` for a
    module of the user's own, see ``_module_inputs``).

    Row normalisation divides each row by its L1 norm, ``x_i / sum_f |x_if|`` (all-zero rows
    stay zero), as ``torch.nn.functional.normalize(x, p=1)`` and
    ``sklearn.preprocessing.normalize(x, norm="l1")``. For nonnegative features such as the
    Planetoid bag-of-words this is the row sum that Kipf & Welling (arXiv 1609.02907) and PyG's
    ``NormalizeFeatures`` divide by, to the bit; for signed features (z-scores, a Gaussian CSBM)
    it keeps every sign and |x| <= 1, where a signed row sum would flip a row with a negative sum
    and blow up a row whose sum is near zero ([1, -1, 1e-6] -> [1e6, -1e6, 1]).
    """
    x = np.asarray(graph.features, np.float32)
    if not np.isfinite(x).all():
        raise ValueError("graph.features must be finite")
    if normalize_features:
        x = _l1_normalize_rows(x)
    if sparse is None:
        sparse = bool(np.count_nonzero(x) <= 0.1 * x.size)
    nodes = sparse_features(x) if sparse else jnp.asarray(x)
    return Inputs(nodes, jnp.asarray(graph.senders), jnp.asarray(graph.receivers),
                  jnp.asarray(graph.labels, jnp.int32))


def _accepts_sparse(module: nn.Module) -> bool:
    """Whether ``module`` takes :class:`SparseFeatures` nodes: the built-in GCN, GraphSAGE and
    GAT do (their first layer multiplies through :func:`jaxaudit.graph.propagation.linear`); a
    module of the user's own is given dense features, which any flax layer takes."""
    return isinstance(module, GCN | GraphSAGE | GAT)


def _module_inputs(module: nn.Module, graph: Graph) -> Inputs:
    """:func:`prepare_inputs` for ``module``: features stored sparse (when at most 10% nonzero)
    only for a module that ``_accepts_sparse``; dense (N, F) for any other, so a graph that
    arrives dense reaches a custom ``nn.Dense`` GNN dense (Cora's 2708 x 1433 is 15 MB)."""
    return prepare_inputs(graph, sparse=None if _accepts_sparse(module) else False)


def _l1_normalize_rows(x: np.ndarray) -> np.ndarray:
    """``x_i / ||x_i||_1`` per row of a float32 matrix (zero rows unchanged). The norm is summed
    in float32, exactly as the plain row sum of nonnegative rows; a row whose float32 norm
    overflows (entries near 3.4e38) is divided in float64 instead."""
    with np.errstate(over="ignore"):
        norms = np.abs(x).sum(axis=1, keepdims=True)
    out = np.where(norms != 0, x / np.where(norms == 0, 1.0, norms), x)
    big = ~np.isfinite(norms[:, 0])
    if big.any():
        wide = x[big].astype(np.float64)
        out[big] = (wide / np.abs(wide).sum(axis=1, keepdims=True)).astype(np.float32)
    return out


def _graphs_tuple(inputs: Inputs, edge_weight: jax.Array | None) -> jraph.GraphsTuple:
    n = (inputs.nodes.shape if isinstance(inputs.nodes, SparseFeatures) else inputs.nodes.shape)[0]
    return jraph.GraphsTuple(
        nodes=inputs.nodes, edges=edge_weight, senders=inputs.senders, receivers=inputs.receivers,
        globals=None, n_node=jnp.asarray([n]), n_edge=jnp.asarray([inputs.senders.shape[0]]),
    )


def true_class_logit(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """``log p_y − log(1 − p_y) = z_y − logsumexp_{c≠y} z_c`` for softmax probabilities p."""
    z_y = jnp.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    others = jnp.where(jax.nn.one_hot(labels, logits.shape[-1], dtype=bool), -jnp.inf, logits)
    return z_y - jax.nn.logsumexp(others, axis=-1)


def _fit(module: nn.Module, epochs: int, learning_rate: float, weight_decay: float,
         key: jax.Array, inputs: Inputs, node_mask: jax.Array, edge_weight: jax.Array) -> Any:
    """Full-batch training of one model on the labels of ``node_mask``; returns the params."""
    k_init, k_drop = jax.random.split(key)
    graph = _graphs_tuple(inputs, edge_weight)
    params = module.init(k_init, graph)
    # torch.optim.Adam(weight_decay=wd) semantics: L2 term added to the gradient before Adam.
    opt = optax.chain(optax.add_decayed_weights(weight_decay), optax.adam(learning_rate))
    weights = node_mask.astype(jnp.float32) / jnp.maximum(jnp.sum(node_mask), 1)

    def loss_fn(p: Any, k: jax.Array) -> jax.Array:
        logits = module.apply(p, graph, training=True, rngs={"dropout": k})
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, inputs.labels)
        return jnp.sum(ce * weights)

    def step(carry: tuple[Any, optax.OptState], epoch: jax.Array
             ) -> tuple[tuple[Any, optax.OptState], None]:
        p, s = carry
        grads = jax.grad(loss_fn)(p, jax.random.fold_in(k_drop, epoch))
        updates, s = opt.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), None

    (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), jnp.arange(epochs))
    return params


def _edge_weights(edge_access: str, inputs: Inputs, node_mask: jax.Array, train_edges: jax.Array
                  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(train, query-for-members, query-for-non-members) edge weights."""
    ones = jnp.ones(inputs.senders.shape, jnp.float32)
    if edge_access == "full":
        return ones, ones, ones
    if edge_access == "none":
        return 0.0 * ones, 0.0 * ones, 0.0 * ones
    out = ~node_mask
    rest = (out[inputs.senders] & out[inputs.receivers]).astype(jnp.float32)
    train = train_edges.astype(jnp.float32)
    return train, train, rest


def _one_shadow(sampler: Sampler, module: nn.Module, epochs: int, learning_rate: float,
                weight_decay: float, edge_access: str, dp: NodeDp | None, key: jax.Array,
                graph: Graph, inputs: Inputs) -> tuple[jax.Array, jax.Array]:
    k_sample, k_train = jax.random.split(key)
    sample = sampler(k_sample, graph)
    if dp is not None:  # node-level DP: one query graph for every node (dp_training)
        params, cap = fit_private(module, epochs, learning_rate, weight_decay, dp, edge_access,
                                  k_train, jnp.asarray(inputs.nodes), inputs.senders,
                                  inputs.receivers, inputs.labels, sample.node_mask)
        logits: jax.Array = module.apply(  # type: ignore[assignment]
            params, _graphs_tuple(inputs, private_query_weight(edge_access, cap)))
        return sample.node_mask, true_class_logit(logits, inputs.labels)
    w_train, w_in, w_out = _edge_weights(edge_access, inputs, sample.node_mask, sample.edge_mask)
    params = _fit(module, epochs, learning_rate, weight_decay, k_train, inputs,
                  sample.node_mask, w_train)
    # flax types apply() as "output or (output, state)"; without ``mutable`` it is the output
    logits_in: jax.Array = module.apply(  # type: ignore[assignment]
        params, _graphs_tuple(inputs, w_in))
    score_in = true_class_logit(logits_in, inputs.labels)
    if edge_access == "inductive":
        logits_out: jax.Array = module.apply(  # type: ignore[assignment]
            params, _graphs_tuple(inputs, w_out))
        score_out = true_class_logit(logits_out, inputs.labels)
        score = jnp.where(sample.node_mask, score_in, score_out)
    else:
        score = score_in
    return sample.node_mask, score


@functools.lru_cache(maxsize=32)
def _batched_trainer(sampler: Sampler, module: nn.Module, epochs: int, learning_rate: float,
                     weight_decay: float, edge_access: str, chunk_size: int | None,
                     devices: tuple[jax.Device, ...] | None, dp: NodeDp | None = None
                     ) -> Callable[..., tuple[jax.Array, jax.Array]]:
    one = functools.partial(_one_shadow, sampler, module, epochs, learning_rate, weight_decay,
                            edge_access, dp)
    return vmap_chunked(one, chunk_size=chunk_size, devices=devices)


@functools.lru_cache(maxsize=32)
def _single_trainer(sampler: Sampler, module: nn.Module, epochs: int, learning_rate: float,
                    weight_decay: float, edge_access: str, dp: NodeDp | None = None
                    ) -> Callable[..., tuple[jax.Array, jax.Array]]:
    return jax.jit(functools.partial(_one_shadow, sampler, module, epochs, learning_rate,
                                     weight_decay, edge_access, dp))


@functools.lru_cache(maxsize=32)
def _compiled_fit(module: nn.Module, epochs: int, learning_rate: float, weight_decay: float
                  ) -> Callable[..., Any]:
    """The jitted full-batch fit of :func:`train_gnn`, cached per static recipe."""
    return jax.jit(functools.partial(_fit, module, epochs, learning_rate, weight_decay))


@functools.lru_cache(maxsize=32)
def _compiled_apply(module: nn.Module) -> Callable[..., jax.Array]:
    """The jitted ``module.apply`` of :func:`gnn_logits`, cached per module."""
    return jax.jit(module.apply)


def _check_recipe(graph: Graph, epochs: int, learning_rate: float, weight_decay: float) -> None:
    """The graph and the optimisation recipe (finite: an inf learning rate trains NaN scores)."""
    if not isinstance(graph, Graph):
        raise ArgumentTypeError(
            f"graph must be a jaxaudit.graph.Graph, got {type(graph).__name__} (a jraph "
            "GraphsTuple converts with jaxaudit.graph.from_jraph(graphs_tuple, labels))")
    check_graph(graph)
    check_integer("epochs", epochs, minimum=1)
    check_positive_finite("learning_rate", learning_rate)
    check_nonnegative_finite("weight_decay", weight_decay)


def _check_shadow(graph: Graph, sampler: Sampler, epochs: int, learning_rate: float,
                  weight_decay: float, edge_access: str) -> None:
    """:func:`_check_recipe` plus the sampler and the edge access of a shadow model."""
    _check_recipe(graph, epochs, learning_rate, weight_decay)
    if not isinstance(sampler, Sampler):
        raise ValueError(f"sampler must be callable (key, graph) -> Sample, got {sampler!r}")
    check_choice("edge_access", edge_access, EDGE_ACCESS)


def _check_trained(scores: jax.Array, learning_rate: float, weight_decay: float) -> None:
    """Refuse the scores of diverged models (NaN or ±inf: a finite model's true-class logit is
    finite), naming the recipe, so that they are never saved or attacked as if they were
    measurements."""
    bad = np.asarray(~jnp.isfinite(scores).all(axis=-1))
    if bad.any():
        raise ValueError(
            f"the training diverged: {int(bad.sum())} of {bad.size} shadow models have NaN or "
            f"infinite scores (learning_rate={float(learning_rate)!r}, "
            f"weight_decay={float(weight_decay)!r}); lower learning_rate")


def train_shadow_models(key: jax.Array, graph: Graph, sampler: Sampler, model: str | nn.Module,
                        num_models: int, config: ShadowTraining = ShadowTraining(), *,
                        chunk_size: int | None = None,
                        devices: Sequence[jax.Device] | None = None) -> ShadowModels:
    """Train R shadow GNNs on R independent samples and score every node under every model.

    Model r uses the key ``jax.random.split(key, num_models)[r]`` (split again into a sampling
    and a training key), or ``key[r]`` when ``key`` holds one key per model, so its result equals
    :func:`train_shadow_model` with that key and does not depend on ``chunk_size`` or the
    devices (up to float reassociation in batched kernels). Sweeps pass the run plan's per-model
    keys (``jaxaudit.runs.unit_keys``), so model r of a sweep is the same model however the
    sweep is chunked.
    Recipe (docs/gnn_mia.md; :class:`ShadowTraining`): Adam (lr 0.01) with L2 weight decay 5e-4
    as in ``torch.optim.Adam``, ``epochs`` full-batch epochs, cross-entropy on the sampled nodes'
    labels only, dropout 0.5 on the hidden layer, row-normalised features.

    Args:
      key: a PRNG key, or a typed key array of shape (num_models,), one key per model.
      graph: the graph (all N nodes are scored).
      sampler: ``(key, graph) -> Sample`` (e.g. :func:`uniform_sampler`).
      model: "gcn" | "sage" | "gat" (2 layers, hidden 64, GAT 8 heads) or a flax module taking
        ``(graphs_tuple, training=...)`` with edge weights in ``graphs_tuple.edges`` and dense
        (N, F) features in ``graphs_tuple.nodes`` (the built-in models take sparse ones).
      num_models: R.
      config: the training recipe, a :class:`ShadowTraining` (epochs, learning rate, weight
        decay, edge access).
      chunk_size: models trained simultaneously (vmapped); the chunks run one after another
        inside the same compiled call (``lax.map``). None: automatic — all R at once on
        accelerators; on CPU the models per device a timed trial chose for this machine and
        graph (:func:`jaxaudit.graph.layout.cpu_chunk_size`, cached; 1 with
        ``JAXAUDIT_AUTOTUNE=0``: larger chunks were slower per model on the machines measured,
        as the vmapped edge gathers and scatters fall out of cache; benchmarks/README.md).
        Lower it to bound memory.
      devices: devices to shard the model axis over (None: all visible).

    Returns:
      :class:`ShadowModels` with ``masks`` (R, N) bool and ``scores`` (R, N) float32.

    Raises:
      ValueError: bad arguments (named), or a training that diverged (a model's scores are NaN
        or infinite, e.g. a learning rate far too large).
    """
    check_key("key", key)
    epochs, learning_rate, weight_decay, edge_access = _check_training(config)
    _check_shadow(graph, sampler, epochs, learning_rate, weight_decay, edge_access)
    check_integer("num_models", num_models, minimum=1)
    per_model = jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and key.ndim == 1
    if per_model and key.shape != (int(num_models),):
        raise ValueError(f"key holds {key.shape[0]} keys, one per model; num_models is "
                         f"{num_models}")
    module = gnn_module(model, graph)
    if config.dp is not None:
        check_private_model(config.dp, module, edge_access)
    inputs = _module_inputs(module, graph)
    devs = None if devices is None else tuple(devices)
    if chunk_size is None and jax.default_backend() == "cpu":
        def trial(chunk: int, n: int) -> np.ndarray:
            t = _batched_trainer(sampler, module, TRIAL_EPOCHS, float(learning_rate),
                                 float(weight_decay), edge_access, chunk, devs, config.dp)
            return np.asarray(t(jax.random.split(jax.random.key(0), n), graph, inputs)[1])

        shape = (f"{type(module).__name__} nodes={graph.num_nodes} edges={graph.num_edges} "
                 f"features={graph.num_features} edge_access={edge_access}"
                 + ("" if config.dp is None else " dp"))
        chunk_size, _ = cpu_chunk_size(shape, trial, devices)
    trainer = _batched_trainer(sampler, module, int(epochs), float(learning_rate),
                               float(weight_decay), edge_access, chunk_size, devs, config.dp)
    keys = key if per_model else jax.random.split(key, int(num_models))
    masks, scores = trainer(keys, graph, inputs)
    _check_trained(scores, learning_rate, weight_decay)
    return ShadowModels(masks, scores)


def train_shadow_model(key: jax.Array, graph: Graph, sampler: Sampler, model: str | nn.Module,
                       config: ShadowTraining = ShadowTraining()) -> ShadowModels:
    """One shadow model, without vmap: ``masks`` (1, N) and ``scores`` (1, N).

    Reference for :func:`train_shadow_models`: model r there equals this function called with
    ``jax.random.split(key, R)[r]`` and the same :class:`ShadowTraining` ``config``.
    """
    check_key("key", key)
    epochs, learning_rate, weight_decay, edge_access = _check_training(config)
    _check_shadow(graph, sampler, epochs, learning_rate, weight_decay, edge_access)
    module = gnn_module(model, graph)
    if config.dp is not None:
        check_private_model(config.dp, module, edge_access)
    fn = _single_trainer(sampler, module, int(epochs), float(learning_rate), float(weight_decay),
                         edge_access, config.dp)
    mask, score = fn(key, graph, _module_inputs(module, graph))
    _check_trained(score[None], learning_rate, weight_decay)
    return ShadowModels(mask[None], score[None])


def train_gnn(key: jax.Array, graph: Graph, model: str | nn.Module, node_mask: jax.Array,
              edge_mask: jax.Array | None = None, *, epochs: int = 200,
              learning_rate: float = 0.01,
              weight_decay: float = 5e-4) -> tuple[nn.Module, Any]:
    """Train one GNN on the labels of ``node_mask`` with the edges of ``edge_mask`` (None: all).

    Returns ``(module, params)``; use :func:`gnn_logits` to evaluate (e.g. the standard
    Planetoid recipe: ``node_mask=graph.train_mask``, all edges).
    """
    check_key("key", key)
    _check_recipe(graph, epochs, learning_rate, weight_decay)
    n, e = graph.num_nodes, graph.num_edges
    if np.shape(node_mask) != (n,):
        raise ValueError(f"node_mask must have shape ({n},), got {np.shape(node_mask)}")
    if edge_mask is not None and np.shape(edge_mask) != (e,):
        raise ValueError(f"edge_mask must have shape ({e},), got {np.shape(edge_mask)}")
    module = gnn_module(model, graph)
    weight = jnp.ones((e,), jnp.float32) if edge_mask is None else jnp.asarray(edge_mask, jnp.float32)
    fit = _compiled_fit(module, int(epochs), float(learning_rate), float(weight_decay))
    params = fit(key, _module_inputs(module, graph), jnp.asarray(node_mask, bool), weight)
    return module, params


def gnn_logits(module: nn.Module, params: Any, graph: Graph,
               edge_mask: jax.Array | None = None) -> jax.Array:
    """(N, C) logits of a trained GNN on ``graph`` with the edges of ``edge_mask`` (None: all)."""
    inputs = _module_inputs(module, graph)
    weight = None if edge_mask is None else jnp.asarray(edge_mask, jnp.float32)
    return _compiled_apply(module)(params, _graphs_tuple(inputs, weight))
