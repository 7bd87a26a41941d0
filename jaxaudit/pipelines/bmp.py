"""The node-level BMP audit pipeline (Yıldırım & Khosla, arXiv 2606.04069; data flow and our
choices: docs/bmp.md): shadow GNNs (trained here, or a finished shadow run) → leave-one-out LiRA
with prior-aware decisions → per-node error counts → certified bounds, Jeffreys estimates and a
NUTS posterior over (ε_L, ε_R) for every node. What ``jaxaudit bmp`` runs, as a function::

    from jaxaudit.pipelines import BmpConfig, ShadowConfig, run_bmp

    shadow = ShadowConfig(dataset="csbm", csbm_nodes=300, num_models=8, epochs=20)
    result = run_bmp(BmpConfig(shadow=shadow), "reports/csbm_uniform")
    result.table["certified_eps_r_lower"]

The configuration nests the library's: the shadow-model sweep (``shadow``, a
:class:`jaxaudit.pipelines.ShadowConfig`) and the audit (``audit``, a
:class:`jaxaudit.bmp.AuditConfig` with its :class:`jaxaudit.bmp.NutsConfig`), beside the
pipeline's own fields. :func:`run_bmp` reads top to bottom: check the configuration, open the
report folder, compute the resumable work units (saved as chunks): the shadow models (unless
``shadow_run`` names a shadow run), the priors η ("prior"), the attack on all nodes ("attack":
statistic, decisions, counts, AUC, TPR at low FPR) and the per-node posteriors over units of
``chunk`` distinct count tuples ("posterior-00000", …; certified bounds, Jeffreys, NUTS); then
assemble the audit and write the report. A repeated call continues where it stopped, a folder of
another configuration is refused, and the posterior units run on Ray or as independent workers
like the shadow chunks (a :class:`jaxaudit.runs.Sweep`). Model m uses ``unit_key(key(seed), m)``
(:mod:`jaxaudit.runs.keys`), the priors the stream "priors", and node i the key
``fold_in(stream_key(key(seed), "audit"), j)`` (j the first node with node i's counts), so a
shadow run followed by ``run_bmp(shadow_run=...)`` and ``run_bmp`` training its own models with
the same ``shadow`` give the same audit on every node, whatever ``chunk``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxaudit._validation import check_instance, check_integer, check_output_dir
from jaxaudit._validation.core import check_config_fields
from jaxaudit.bmp import AuditConfig, NutsConfig, PosteriorModel
from jaxaudit.pipelines.lifecycle import bounded, open_run, stored_config
from jaxaudit.pipelines.shadow_models import (
    ShadowConfig,
    ShadowRun,
    check_result_size,
    check_training,
    graph_and_sampler,
    load_shadow,
    shadow_config,
    shadow_derived,
    shadow_excluded,
    train_chunks,
)
from jaxaudit.runs import Progress, Sweep

__all__ = ["BmpConfig", "BmpResult", "run_bmp"]

#: Limits refused before any work.
MAX_PRIOR_DRAWS = 10_000_000   # one PRNG key and one sample each
MAX_NUTS_STEPS = 1_000_000     # num_warmup, num_samples
MAX_CHAINS = 64
MAX_DRAW_BYTES = 4 * 2**30     # the posterior draws of one node chunk
BYTES_PER_DRAW = 16            # (eps_L, eps_R) in float32, with the sampler's copies
#: The audit of ``jaxaudit bmp``: the library's, with the "uniform" attack prior named and NUTS
#: in vmapped chunks of 1024 nodes (bounds memory).
DEFAULT_AUDIT = AuditConfig(model=PosteriorModel(attack_prior="uniform"),
                            nuts=NutsConfig(chunk_size=1024))


class BmpConfig(NamedTuple):
    """A BMP audit (the defaults of ``jaxaudit bmp``).

    Attributes:
      shadow: the shadow-model sweep (:class:`jaxaudit.pipelines.ShadowConfig`); with
        ``shadow_run`` the shadow run's stored configuration replaces it (its ``data_dir``
        kept).
      audit: the audit (:class:`jaxaudit.bmp.AuditConfig`: the attack, the attack prior, the
        confidence of the certified bounds, the MP baseline, and NUTS per node in ``nuts``,
        whose ``chunk_size`` is the nodes per vmapped NUTS chunk). Default: the library's, with
        the "uniform" attack prior and ``nuts.chunk_size`` 1024.
      shadow_run: a finished shadow run folder, or the :class:`jaxaudit.pipelines.ShadowRun`
        that ``run_shadow``/``load_shadow`` returned (None: the models are trained here).
      num_prior_draws: Monte Carlo draws for the priors η when the sampler has no exact law.
      chunk: distinct count tuples per saved posterior unit ("posterior-<k>", one Ray task or
        worker share each; nodes with identical counts share a tuple and its draws; Cora's 2708
        nodes, about 2000 tuples, make 2 units by default). Changes no number; a unit's tuples
        are padded to ``audit.nuts.chunk_size`` × a power of two, so that is the size that
        wastes no work.
      compare: another bmp report folder to plot against (read before any work; changes no
        number, so it is not stored).
    """

    shadow: ShadowConfig = ShadowConfig()
    audit: AuditConfig = DEFAULT_AUDIT
    shadow_run: str | Path | ShadowRun | None = None
    num_prior_draws: int = 1000
    chunk: int = 1024
    compare: str | Path | None = None

    def check(self) -> BmpConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_bmp`` and the command call it first."""
        _check(self, None, None)
        return self


class BmpResult(NamedTuple):
    """The result of :func:`run_bmp`.

    Attributes:
      audit: the ``jaxaudit.bmp.BmpAudit``: ``certified_left``/``certified_right`` are BOUNDS
        (jointly per node at ``confidence``, whatever the attack); ``epsilon_left``/
        ``epsilon_right`` (posterior quantiles under the attack prior), ``epsilon_mp``,
        ``jeffreys_left``/``jeffreys_right``, ``auc``,
        ``global_auc``, ``global_tpr`` (TPR at 1% and 0.1% FPR of ``attack``) are ESTIMATES;
        ``counts`` are the measured error counts. None only with a ``Sweep(worker=...)`` while
        shadow chunks or posterior units are missing.
      table: the per-node table (``nodes.csv``), ``bmp.audit_table(audit)``.
      summary: ``summary.json``: ``bmp.audit_summary(audit)`` and the attack prior.
      config: the stored configuration; path: the report folder (None in memory).
      missing: shadow chunks or posterior units not finished (a ``Sweep(worker=...)`` only).
    """

    audit: Any
    table: dict[str, np.ndarray] | None
    summary: dict | None
    config: dict
    path: Path | None
    missing: tuple[str, ...] = ()


#: The arrays of the "attack" unit.
_ATTACK_ARRAYS = ("auc", "global_auc", "global_tpr", "key_node")


def unit_names(num_distinct: int, chunk: int) -> list[str]:
    """The posterior units of a graph whose nodes have ``num_distinct`` distinct count tuples:
    "posterior-<k>" holds the nodes of tuples ``k·chunk … (k + 1)·chunk − 1`` (the tuples in
    the order of the first node that has each)."""
    return [f"posterior-{k:05d}" for k in range(-(-int(num_distinct) // int(chunk)))]


def _check(config: BmpConfig, model: Any, graph: Any) -> None:
    """Every field (ValueError naming the field), before any work: the shadow sweep's (unless a
    shadow run replaces it), the audit's (:meth:`jaxaudit.bmp.AuditConfig.check`, ``nuts``
    included) within the pipeline's limits, and the pipeline's own."""
    check_instance("config", config, BmpConfig)
    check_instance("shadow", config.shadow, ShadowConfig)
    check_instance("audit", config.audit, AuditConfig)
    # the kinds of the pipeline's own fields; the nested ones are checked below with the
    # pipeline's model= and graph= (the sweep) and its limits (the audit)
    check_config_fields(config._replace(shadow=None, audit=None))  # type: ignore[arg-type]
    if config.shadow_run is None:
        check_training(config.shadow, model, graph)
    audit = config.audit.check()
    nuts = audit.nuts
    bounded("num_warmup", nuts.num_warmup, 1, MAX_NUTS_STEPS)
    bounded("num_samples", nuts.num_samples, 1, MAX_NUTS_STEPS)
    bounded("num_chains", nuts.num_chains, 2, MAX_CHAINS)
    bounded("num_prior_draws", config.num_prior_draws, 1, MAX_PRIOR_DRAWS)
    check_integer("chunk", config.chunk, minimum=1)
    if nuts.chunk_size is not None:
        draws = nuts.chunk_size * nuts.num_chains * nuts.num_samples * BYTES_PER_DRAW
        if draws > MAX_DRAW_BYTES:
            raise ValueError(
                f"chunk_size {nuts.chunk_size} x num_chains {nuts.num_chains} x num_samples "
                f"{nuts.num_samples} posterior draws need about {draws / 2**30:.1f} GiB per "
                f"chunk (the limit is {MAX_DRAW_BYTES / 2**30:g} GiB); lower chunk_size or "
                "num_samples")
    if config.compare is not None and not isinstance(config.compare, str | Path):
        raise ValueError(f"compare must be a folder, got {config.compare!r}")


def _configured(config: BmpConfig, run_dir: str | Path | None, model: Any, graph: Any
                ) -> tuple[BmpConfig, dict, ShadowRun | None]:
    """Every field checked before any work; the configuration with the shadow run's sweep in
    ``shadow`` (when it has one), the configuration to store and the shadow run.

    Stored: the fields of ``config``, nested (without ``shadow_run``, ``compare`` and
    ``shadow.data_dir``, which change no number); with a shadow run, ``derived`` holds its
    derived values, digest, folder and size."""
    from jaxaudit.runs.files import config_hash

    _check(config, model, graph)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    exclude = ("shadow_run", "compare")
    if config.shadow_run is None:
        derived = shadow_derived(config.shadow, model, graph)
        return config, stored_config(config, derived, exclude + shadow_excluded(
            config.shadow, "shadow.")), None
    if config.shadow.graph_file is not None:
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
    derived = dict(shadow.config["derived"])
    derived["shadow_run"] = {"path": None if where is None else str(Path(where).resolve()),
                             "config_sha256": config_hash(shadow.config),
                             "num_models": int(shadow.masks.shape[0])}
    trained = shadow_config(shadow.config)._replace(data_dir=config.shadow.data_dir)
    config = config._replace(shadow=trained)
    return config, stored_config(config, derived, exclude + shadow_excluded(
        trained, "shadow.")), shadow


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
            progress: Progress | None = None, sweep: Sweep = Sweep(), model: Any = None,
            graph: Any = None) -> BmpResult:
    """The node-level BMP audit of a GNN pipeline (``jaxaudit bmp``; arXiv 2606.04069).

    Per node i: η_i (the sampler's inclusion probability, exact or Monte Carlo), the leave-one-out
    attack statistic of each shadow model (``config.audit.attack``), the Bayes decision at prior
    η_i, the error counts (fp, n0, fn, n1) — the "attack" unit, on all nodes, with the AUCs and
    the global TPR at 1% and 0.1% FPR (:func:`jaxaudit.bmp.audit.audit_attack`); then, in units
    of ``config.chunk`` distinct count tuples (their nodes), the certified Clopper–Pearson lower
    bounds on (ε_L, ε_R), the Jeffreys estimate and the NUTS posterior
    (:func:`jaxaudit.bmp.audit.audit_nodes`). The numbers equal
    :func:`jaxaudit.bmp.audit_from_scores`' with the key ``stream_key(key(seed), "audit")``
    whatever ``config.chunk`` and the sweep.

    Args:
      config: the audit (:class:`BmpConfig`).
      run_dir: the report folder (created; resumed when it holds this configuration); it
        receives ``nodes.csv``, ``most_leaking.csv``, ``summary.json``, ``summary.md`` and the
        PNG plots (:mod:`jaxaudit.report.bmp`). None: in memory, no files.
      progress: ``progress(done, total)`` over the stages: the shadow chunks, the priors, the
        attack, the posterior units.
      sweep: where the shadow chunks and the posterior units run (:class:`jaxaudit.runs.Sweep`:
        ``backend="ray"`` for one Ray task per unit; ``worker=(index, count)`` to train only
        this worker's share of the shadow chunks, then (once every chunk is finished) compute
        this worker's share of the posterior units, the result having ``audit=None`` and
        ``missing`` until every unit is finished). It does not change the numbers.
      model: any flax module as the shadow model instead of ``config.shadow.model``.
      graph: an in-memory ``jaxaudit.graph.Graph`` instead of ``config.shadow.dataset`` (also
        the graph of a ``shadow_run`` made from one).

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

    # check: everything that can be refused is refused before the report folder is written
    compare = None if config.compare is None else report.read_compare(config.compare)
    config, stored, shadow = _configured(config, run_dir, model, graph)
    graph, sampler = graph_and_sampler(config.shadow, stored["derived"], graph)
    num_models = config.shadow.num_models if shadow is None else shadow.masks.shape[0]
    check_result_size(num_models, graph.num_nodes)
    if shadow is not None and shadow.masks.shape[1] != graph.num_nodes:
        raise ValueError(f"shadow_run runs cover {shadow.masks.shape[1]} nodes, the graph has "
                         f"{graph.num_nodes}")
    root, audit_config = jax.random.key(config.shadow.seed), config.audit
    num_chunks = 0 if shadow is not None else -(-config.shadow.num_models // config.shadow.chunk)
    # at most this many units (fewer when nodes share counts: known after the attack)
    stages = _Stages(progress, num_chunks + 2 + len(unit_names(graph.num_nodes, config.chunk)))

    # open the run and compute in chunks: the shadow models, the priors, the attack, the nodes
    with open_run(run_dir, "bmp", stored) as run:
        path = None if run is None else run.path
        if shadow is None:
            module = gnn_module(model if model is not None else config.shadow.model, graph)
            res, names = train_chunks(run, config.shadow, graph, sampler, module,
                                      prefix="shadow", progress=stages.stage(num_chunks),
                                      sweep=sweep)
            missing = tuple(n for n in names if n not in res)
            if missing:
                return BmpResult(None, None, None, stored, path, missing)
            masks = np.concatenate([res[n]["masks"] for n in names]).astype(bool)
            scores = np.concatenate([res[n]["scores"] for n in names])
        else:
            masks, scores = shadow.masks, shadow.scores

        def prior(_: str) -> dict:
            eta, se = inclusion_probabilities(stream_key(root, "priors"), sampler, graph,
                                              num_draws=config.num_prior_draws)
            return {"eta": np.clip(np.asarray(eta, float), 0, 1), "eta_se": np.asarray(se, float)}

        pri = run_chunks(run, ["prior"], prior, progress=stages.stage(1))["prior"]

        def attack_unit(_: str) -> dict:
            attacked = audit_attack(scores, masks, pri["eta"], audit_config)
            out = {k: np.asarray(getattr(attacked, k)) for k in _ATTACK_ARRAYS}
            return out | {f"counts_{k}": np.asarray(v)
                          for k, v in attacked.counts._asdict().items()}

        att = run_chunks(run, ["attack"], attack_unit, progress=stages.stage(1))["attack"]
        counts = ErrorCounts(*(att[f"counts_{k}"] for k in ErrorCounts._fields))
        key_node = att["key_node"]

        # unit k: the nodes whose count tuple is among the distinct tuples k·chunk … (k + 1)·chunk
        # − 1 (in order of their first node): each unit samples `chunk` distinct tuples, none twice
        distinct = np.unique(key_node)
        unit_of = np.searchsorted(distinct, key_node) // config.chunk
        units = unit_names(distinct.size, config.chunk)
        stages.total = stages.offset + len(units)

        def posterior_unit(name: str) -> dict:
            nodes = np.flatnonzero(unit_of == int(name.rsplit("-", 1)[1]))
            part = audit_nodes(stream_key(root, "audit"),
                               ErrorCounts(*(c[nodes] for c in counts)),
                               key_node[nodes], audit_config)
            return {k: np.asarray(v) for k, v in part._asdict().items()} | {"nodes": nodes}

        done = run_chunks(run, units, posterior_unit, progress=stages.stage(len(units)),
                          sweep=sweep)
    missing = tuple(n for n in units if n not in done)
    if missing:
        return BmpResult(None, None, None, stored, path, missing)

    # assemble: the nodes in graph order, the attack unit as stored, the audit and its tables
    joined = concat_nodes([BmpNodes(**{f: done[n][f] for f in BmpNodes._fields})
                           for n in units])
    where = np.empty(graph.num_nodes, int)  # the units' node lists are a permutation
    where[np.concatenate([done[n]["nodes"] for n in units])] = np.arange(graph.num_nodes)
    nodes = BmpNodes(**{f: np.asarray(v)[..., where] for f, v in joined._asdict().items()})
    # the stored attack unit (its (R, N) statistic is not stored: assemble_audit does not read it)
    attacked = BmpAttack(attack=audit_config.attack, statistic=np.zeros((0, graph.num_nodes)),
                         counts=counts, auc=att["auc"], global_auc=att["global_auc"],
                         global_tpr=att["global_tpr"], key_node=key_node)
    audit = assemble_audit(scores, masks, pri["eta"], attacked, nodes, audit_config,
                           eta_se=pri["eta_se"], degree=node_degrees(graph))
    table = bmp.audit_table(audit)
    summary = bmp.audit_summary(audit) | {"attack_prior": bmp.likelihood.as_attack_prior(
        audit_config.model.attack_prior).describe()}
    result = BmpResult(audit, table, summary, stored, path)
    if run is not None:
        report.write_report(run, result, bmp.most_leaking(audit, 20), compare)
    return result
