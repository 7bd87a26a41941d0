"""The node-level BMP audit pipeline (Yıldırım & Khosla, arXiv 2606.04069; data flow and our
choices: docs/bmp.md): shadow GNNs (trained here, or a finished shadow run) → leave-one-out LiRA
with prior-aware decisions → per-node error counts → certified bounds, Jeffreys estimates and a
NUTS posterior over (ε_L, ε_R) for every node. What ``jaxaudit bmp`` runs, as a function::

    from jaxaudit.pipelines import BmpConfig, run_bmp

    result = run_bmp(BmpConfig(dataset="csbm", csbm_nodes=300, num_models=8, epochs=20),
                     "reports/csbm_uniform")
    result.table["certified_eps_r_lower"]

Resumable work units, saved as chunks in the report folder: the shadow models (unless
``shadow_run`` names a shadow run folder), the priors η ("prior"), the attack on all nodes
("attack": statistic, decisions, counts, AUC, TPR at low FPR) and the per-node posteriors over
node chunks of ``node_units`` distinct count tuples ("posterior-00000", …; certified bounds,
Jeffreys, NUTS). A
repeated call continues where it stopped, a folder of another configuration is refused, and the
posterior units run on Ray or as independent workers like the shadow chunks. Model m uses
``unit_key(key(seed), m)`` (:mod:`jaxaudit.runs.keys`), the priors the stream "priors", and node
i the key ``fold_in(stream_key(key(seed), "audit"), j)`` (j the first node with node i's counts), so a
shadow run followed by ``run_bmp(shadow_run=...)`` and ``run_bmp`` training its own models with
the same seed and settings give the same audit on every node, whatever ``node_units``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxaudit._validation import (
    ArgumentTypeError,
    check_bool,
    check_instance,
    check_integer,
    check_output_dir,
    check_positive_finite,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.pipelines.common import (
    DP_FIELDS,
    SHADOW_FIELDS,
    ShadowRun,
    bounded,
    check_result_size,
    check_training,
    dp_derived,
    dp_excluded,
    graph_and_sampler,
    load_shadow,
    open_run,
    shadow_derived,
    stored_config,
    train_chunks,
)
from jaxaudit.runs import Progress

__all__ = ["BmpConfig", "BmpResult", "run_bmp"]

#: Limits refused before any work.
MAX_PRIOR_DRAWS = 10_000_000   # one PRNG key and one sample each
MAX_NUTS_STEPS = 1_000_000     # num_warmup, num_samples
MAX_CHAINS = 64
MAX_DRAW_BYTES = 4 * 2**30     # the posterior draws of one node chunk
BYTES_PER_DRAW = 16            # (eps_L, eps_R) in float32, with the sampler's copies

class BmpConfig(NamedTuple):
    """A BMP audit (the defaults of ``jaxaudit bmp``).

    The shadow-model fields (``dataset`` … ``csbm_nodes``) are those of
    :class:`jaxaudit.pipelines.ShadowConfig`; with ``shadow_run`` (a finished shadow run folder, or the :class:`ShadowRun` that
    ``run_shadow``/``load_shadow`` returned) its stored configuration replaces them.

    Attributes:
      prior_draws: Monte Carlo draws for the priors η when the sampler has no exact law.
      fix_variance: fixed-variance LiRA.
      attack_prior: "uniform" | "beta:A,B" | "fixed:S" | "optimal" (docs/bmp.md).
      confidence: joint confidence level of each node's certified lower bounds.
      prior_variance: variance of the half-normal priors on ε_L, ε_R.
      num_warmup, num_samples, num_chains: NUTS per node (chains 2 to 64).
      min_ess: resample (thinned) the nodes whose bulk ESS is below this (None: no second pass).
      mp_baseline: also fit the symmetric MP baseline.
      node_chunk: nodes per vmapped NUTS chunk (bounds memory).
      attack: the membership attack (``jaxaudit.mia.ATTACKS``; "lira" is LOO LiRA).
      node_units: distinct count tuples per saved posterior unit ("posterior-<k>", one Ray task
        or worker share each; nodes with identical counts share a tuple and its draws; Cora's
        2708 nodes, about 2000 tuples, make 2 units by default). Changes no number; a unit's
        tuples are padded to ``node_chunk`` × a power of two, so that is the size that wastes
        no work.
      compare: another bmp report folder to plot against (read before any work; changes no
        number, so it is not stored).
      data_dir: where the Planetoid files live (changes no number, so it is not stored).
      dp_epsilon, dp_noise_multiplier, dp_clip, dp_degree_cap, dp_delta: node-level DP
        training of the shadow models, as in :class:`jaxaudit.pipelines.ShadowConfig` (with
        ``shadow_run``, the shadow run's own).
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
    shadow_run: str | Path | ShadowRun | None = None
    prior_draws: int = 1000
    fix_variance: bool = False
    attack_prior: str = "uniform"
    confidence: float = 0.95
    prior_variance: float = 10.0
    num_warmup: int = 500
    num_samples: int = 1000
    num_chains: int = 4
    min_ess: float | None = None
    mp_baseline: bool = True
    node_chunk: int = 1024
    compare: str | Path | None = None
    data_dir: str | Path | None = None
    attack: str = "lira"
    node_units: int = 1024
    dp_epsilon: float | None = None
    dp_noise_multiplier: float | None = None
    dp_clip: float = 1.0
    dp_degree_cap: int = 5
    dp_delta: float = 1e-5

    def check(self) -> BmpConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_bmp`` and the command call it first."""
        check_integer("seed", self.seed, minimum=0)
        _check_audit(self)
        if self.shadow_run is None:
            check_training(self, None, None)
        return self


class BmpResult(NamedTuple):
    """The result of :func:`run_bmp`.

    Attributes:
      audit: the ``jaxaudit.bmp.BmpAudit``: ``certified_left``/``certified_right`` are BOUNDS
        (jointly per node at ``confidence``, whatever the attack); ``epsilon_left``/
        ``epsilon_right`` (posterior quantiles under the attack prior), ``epsilon_mp``,
        ``jeffreys_left``/``jeffreys_right``, ``auc``,
        ``global_auc``, ``global_tpr`` (TPR at 1% and 0.1% FPR of ``attack``) are ESTIMATES;
        ``counts`` are the measured error counts. None only with ``worker=`` while shadow
        chunks or posterior units are missing.
      table: the per-node table (``nodes.csv``), ``bmp.audit_table(audit)``.
      summary: ``summary.json``: ``bmp.audit_summary(audit)`` and the attack prior.
      config: the stored configuration; path: the report folder (None in memory).
      missing: shadow chunks or posterior units not finished (``worker=`` only).
    """

    audit: Any
    table: dict[str, np.ndarray] | None
    summary: dict | None
    config: dict
    path: Path | None
    missing: tuple[str, ...] = ()


#: The arrays of the "attack" unit.
_ATTACK_ARRAYS = ("auc", "global_auc", "global_tpr", "key_node")


def unit_names(num_distinct: int, node_units: int) -> list[str]:
    """The posterior units of a graph whose nodes have ``num_distinct`` distinct count tuples:
    "posterior-<k>" holds the nodes of tuples ``k·node_units … (k + 1)·node_units − 1`` (the
    tuples in the order of the first node that has each)."""
    return [f"posterior-{k:05d}" for k in range(-(-int(num_distinct) // int(node_units)))]


def _check_audit(config: BmpConfig) -> None:
    """The audit's fields (ValueError naming the field), before any work."""
    check_config_fields(config)
    from jaxaudit.bmp.likelihood import as_attack_prior

    bounded("prior_draws", config.prior_draws, 1, MAX_PRIOR_DRAWS)
    bounded("num_warmup", config.num_warmup, 1, MAX_NUTS_STEPS)
    bounded("num_samples", config.num_samples, 1, MAX_NUTS_STEPS)
    bounded("num_chains", config.num_chains, 2, MAX_CHAINS)
    check_integer("node_chunk", config.node_chunk, minimum=1)
    check_integer("node_units", config.node_units, minimum=1)
    from jaxaudit.mia import ATTACKS

    if not isinstance(config.attack, str) or config.attack not in ATTACKS:
        raise ValueError(f"attack must be one of {list(ATTACKS)}, got {config.attack!r}")
    check_bool("fix_variance", config.fix_variance)
    check_bool("mp_baseline", config.mp_baseline)
    draws = config.node_chunk * config.num_chains * config.num_samples * BYTES_PER_DRAW
    if draws > MAX_DRAW_BYTES:
        raise ValueError(
            f"node_chunk {config.node_chunk} x num_chains {config.num_chains} x num_samples "
            f"{config.num_samples} posterior draws need about {draws / 2**30:.1f} GiB per chunk "
            f"(the limit is {MAX_DRAW_BYTES / 2**30:g} GiB); lower node_chunk or num_samples")
    try:
        as_attack_prior(config.attack_prior)
    except ValueError as err:
        raise ValueError(f"attack_prior: {err}") from None
    try:
        confidence = float(config.confidence)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"confidence must be a number, got {config.confidence!r}") from None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {config.confidence}")
    check_positive_finite("prior_variance", config.prior_variance)
    if config.min_ess is not None:
        check_positive_finite("min_ess", config.min_ess)


def _stored_config(config: BmpConfig, run_dir: str | Path | None, model: Any, graph: Any
                   ) -> tuple[dict, ShadowRun | None]:
    """Every field checked before any work; the configuration to store and the shadow run.

    Stored: the fields of ``config`` (without ``shadow_run``, ``compare`` and ``data_dir``, which
    change no number); with a shadow run, its stored shadow-model fields replace this
    configuration's, and ``derived`` holds its digest, folder and size."""
    from jaxaudit.runs.files import config_hash

    check_instance("config", config, BmpConfig)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    check_integer("seed", config.seed, minimum=0)
    _check_audit(config)
    exclude = ("shadow_run", "compare", "data_dir")
    if config.shadow_run is None:
        check_training(config, model, graph)
        return stored_config(config, shadow_derived(config, model, graph)
                             | dp_derived(config, model), exclude + dp_excluded(config)), None
    if config.graph_file is not None:
        raise ValueError("graph_file and shadow_run: the shadow run fixes the graph; give "
                         "one of them")
    if model is not None:
        raise ValueError("model and shadow_run: the shadow run's models are trained; give "
                         "one of them")
    if isinstance(config.shadow_run, ShadowRun):
        shadow = config.shadow_run
        if shadow.missing:
            raise ValueError(f"shadow_run is incomplete: chunks {list(shadow.missing[:3])} "
                             "are not finished")
        where: str | Path | None = shadow.path
    else:
        shadow = load_shadow(config.shadow_run)
        where = config.shadow_run
    trained = {k: shadow.config[k] for k in SHADOW_FIELDS}
    trained |= {k: shadow.config.get(k, BmpConfig._field_defaults[k]) for k in DP_FIELDS}
    derived = dict(shadow.config["derived"])
    derived["shadow_run"] = {"path": None if where is None else str(Path(where).resolve()),
                             "config_sha256": config_hash(shadow.config),
                             "num_models": int(shadow.masks.shape[0])}
    config = config._replace(**trained)
    return stored_config(config, derived, exclude + dp_excluded(config)), shadow


class _Stages:
    """One progress callback over the stages (shadow chunks, priors, audit)."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.offset = progress, total, 0

    def stage(self, size: int) -> Progress | None:
        if self.progress is None:
            return None
        offset, callback = self.offset, self.progress
        self.offset += size
        return lambda done, _total: callback(offset + done, self.total)


def run_bmp(config: BmpConfig, run_dir: str | Path | None = None, *,
            progress: Progress | None = None, worker: tuple[int, int] | None = None,
            model: Any = None, graph: Any = None, backend: str = "serial",
            ray_address: str | None = None, ray_workers: int | None = None) -> BmpResult:
    """The node-level BMP audit of a GNN pipeline (``jaxaudit bmp``; arXiv 2606.04069).

    Per node i: η_i (the sampler's inclusion probability, exact or Monte Carlo), the leave-one-out
    attack statistic of each shadow model (``config.attack``), the Bayes decision at prior η_i,
    the error counts (fp, n0, fn, n1) — the "attack" unit, on all nodes, with the AUCs and the
    global TPR at 1% and 0.1% FPR (:func:`jaxaudit.bmp.audit.audit_attack`); then, in units of
    ``node_units`` distinct count tuples (their nodes), the certified Clopper–Pearson lower
    bounds on (ε_L, ε_R), the Jeffreys estimate and the NUTS posterior (:func:`jaxaudit.bmp.audit.audit_nodes`). The numbers equal
    :func:`jaxaudit.bmp.audit_from_scores`' with the key ``stream_key(key(seed), "audit")`` whatever
    ``node_units``, the backend and the workers.

    Args:
      config: the audit (:class:`BmpConfig`).
      run_dir: the report folder (created; resumed when it holds this configuration); it
        receives ``nodes.csv``, ``most_leaking.csv``, ``summary.json``, ``summary.md`` and the
        PNG plots (:mod:`jaxaudit.report.bmp`). None: in memory, no files.
      progress: ``progress(done, total)`` over the stages: the shadow chunks, the priors, the
        attack, the posterior units.
      worker: ``(index, count)``: train only this worker's share of the shadow chunks, then (once
        every chunk is finished) compute this worker's share of the posterior units; the result
        has ``audit=None`` and ``missing`` until every unit is finished.
      model: any flax module as the shadow model instead of ``config.model``.
      graph: an in-memory ``jaxaudit.graph.Graph`` instead of ``config.dataset`` (also the graph
        of a ``shadow_run`` made from one).
      backend: ``"serial"`` or ``"ray"`` (one Ray task per shadow chunk and per posterior unit;
        see :func:`jaxaudit.runs.run_chunks`), ``ray_address`` its cluster (None: a local one),
        ``ray_workers`` the units in flight. They do not change the numbers.

    Returns:
      :class:`BmpResult`.

    Raises:
      ValueError: a bad configuration field (named) or ``compare`` folder, an incomplete or
        inconsistent ``shadow_run``, a folder of another configuration or layout;
        FileNotFoundError: a missing ``shadow_run`` or ``compare`` folder.
    """
    from jaxaudit import bmp
    from jaxaudit.bmp.audit import (
        BmpAttack,
        BmpNodes,
        assemble_audit,
        audit_attack,
        audit_nodes,
        concat_nodes,
    )
    from jaxaudit.graph import inclusion_probabilities
    from jaxaudit.graph.shadow_models import gnn_module
    from jaxaudit.graph.types import node_degrees
    from jaxaudit.mia import ErrorCounts
    from jaxaudit.report import bmp as report
    from jaxaudit.runs import run_chunks, stream_key

    compare = None if config.compare is None else report.read_compare(config.compare)
    cfg, shadow = _stored_config(config, run_dir, model, graph)
    root = jax.random.key(cfg["seed"])
    # everything that can be refused is checked before the report folder is written
    graph, sampler = graph_and_sampler(cfg, config.data_dir, graph)
    num_models = cfg["num_models"] if shadow is None else shadow.masks.shape[0]
    check_result_size(num_models, graph.num_nodes)
    if shadow is not None and shadow.masks.shape[1] != graph.num_nodes:
        raise ValueError(f"shadow_run runs cover {shadow.masks.shape[1]} nodes, the graph has "
                         f"{graph.num_nodes}")
    num_chunks = 0 if shadow is not None else -(-int(cfg["num_models"]) // int(cfg["chunk"]))
    # at most this many units (fewer when nodes share counts: known after the attack)
    stages = _Stages(progress, num_chunks + 2 + len(unit_names(graph.num_nodes,
                                                             cfg["node_units"])))
    sweep: dict[str, Any] = dict(backend=backend, ray_address=ray_address,
                                 ray_workers=ray_workers)

    with open_run(run_dir, "bmp", cfg) as run:
        path = None if run is None else run.path
        if shadow is None:
            module = gnn_module(model if model is not None else config.model, graph)
            res, names = train_chunks(run, cfg, graph, sampler, module, prefix="shadow",
                                      progress=stages.stage(num_chunks), worker=worker,
                                      sweep=sweep)
            missing = tuple(n for n in names if n not in res)
            if missing:
                return BmpResult(None, None, None, cfg, path, missing)
            masks = np.concatenate([res[n]["masks"] for n in names]).astype(bool)
            scores = np.concatenate([res[n]["scores"] for n in names])
        else:
            masks, scores = shadow.masks, shadow.scores

        def prior(_: str) -> dict:
            eta, se = inclusion_probabilities(stream_key(root, "priors"), sampler, graph,
                                              num_draws=cfg["prior_draws"])
            return {"eta": np.clip(np.asarray(eta, float), 0, 1), "eta_se": np.asarray(se, float)}

        pri = run_chunks(run, ["prior"], prior, progress=stages.stage(1))["prior"]
        audit_config = bmp.AuditConfig(
            attack=cfg["attack"], fix_variance=cfg["fix_variance"],
            model=bmp.PosteriorModel(attack_prior=cfg["attack_prior"],
                                     prior_variance=cfg["prior_variance"]),
            confidence=cfg["confidence"], mp_baseline=cfg["mp_baseline"],
            nuts=bmp.NutsConfig(num_warmup=cfg["num_warmup"], num_samples=cfg["num_samples"],
                                num_chains=cfg["num_chains"], chunk_size=cfg["node_chunk"],
                                min_ess=cfg["min_ess"]))

        def attack_unit(_: str) -> dict:
            attacked = audit_attack(scores, masks, pri["eta"], audit_config)
            out = {k: np.asarray(getattr(attacked, k)) for k in _ATTACK_ARRAYS}
            return out | {f"counts_{k}": np.asarray(v)
                          for k, v in attacked.counts._asdict().items()}

        att = run_chunks(run, ["attack"], attack_unit, progress=stages.stage(1))["attack"]
        counts = ErrorCounts(*(att[f"counts_{k}"] for k in ErrorCounts._fields))
        key_node, size = att["key_node"], int(cfg["node_units"])

        # unit k: the nodes whose count tuple is among the distinct tuples k·size … (k + 1)·size
        # − 1 (in order of their first node): each unit samples `size` distinct tuples, none twice
        distinct = np.unique(key_node)
        unit_of = np.searchsorted(distinct, key_node) // size
        units = unit_names(distinct.size, size)
        stages.total = stages.offset + len(units)

        def posterior_unit(name: str) -> dict:
            nodes = np.flatnonzero(unit_of == int(name.rsplit("-", 1)[1]))
            part = audit_nodes(stream_key(root, "audit"),
                               ErrorCounts(*(c[nodes] for c in counts)),
                               key_node[nodes], audit_config)
            return {k: np.asarray(v) for k, v in part._asdict().items()} | {"nodes": nodes}

        done = run_chunks(run, units, posterior_unit, progress=stages.stage(len(units)),
                          worker=worker, **sweep)
    missing = tuple(n for n in units if n not in done)
    if missing:
        return BmpResult(None, None, None, cfg, path, missing)
    joined = concat_nodes([BmpNodes(**{f: done[n][f] for f in BmpNodes._fields})
                           for n in units])
    where = np.empty(graph.num_nodes, int)  # the units' node lists are a permutation
    where[np.concatenate([done[n]["nodes"] for n in units])] = np.arange(graph.num_nodes)
    nodes = BmpNodes(**{f: np.asarray(v)[..., where] for f, v in joined._asdict().items()})
    # the stored attack unit (its (R, N) statistic is not stored: assemble_audit does not read it)
    attacked = BmpAttack(attack=cfg["attack"], statistic=np.zeros((0, graph.num_nodes)),
                         counts=counts, auc=att["auc"], global_auc=att["global_auc"],
                         global_tpr=att["global_tpr"], key_node=key_node)
    audit = assemble_audit(scores, masks, pri["eta"], attacked, nodes, audit_config,
                           eta_se=pri["eta_se"], degree=node_degrees(graph))
    table = bmp.audit_table(audit)
    summary = bmp.audit_summary(audit) | {"attack_prior": bmp.likelihood.as_attack_prior(
        cfg["attack_prior"]).describe()}
    result = BmpResult(audit, table, summary, cfg, path)
    if run is not None:
        top = bmp.most_leaking(audit, 20)
        report.write_report(run, result, top, compare)
    return result
