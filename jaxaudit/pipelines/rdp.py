"""The Rényi/[31] audit as library pipelines: canary runs in both worlds → one score per run →
the audit table (``jaxaudit rdp``), and the audit of scores from any training code
(``jaxaudit rdp --scores IN OUT``).

:func:`run_rdp` trains R private models with and R without a worst-case canary (Annamalai & De
Cristofaro, arXiv 2405.14106: θ₀ pretrained on public data disjoint from D⁻, a blank canary,
DP-GD/DP-SGD), in resumable chunks, then audits the scores. :func:`run_scores_audit` starts from
the scores. Both end in the same audit step: the DV lower bounds of ε_α next to the accountant
and the threshold and GDP baselines (Kim, Alabi & Varshney, arXiv 2605.21938;
:func:`jaxaudit.dpsgd.audit_dpsgd`), ε at δ (accountant, GDP baseline, Clopper–Pearson threshold
test, Jagielski et al., arXiv 2006.07709) and every score-based ε lower bound
(:func:`jaxaudit.renyi.epsilon_lower_bounds`: one-run, Steinke et al., arXiv 2305.08846; f-DP
one-run, Mahloujifar et al., arXiv 2410.22235).

Keys (:mod:`jaxaudit.runs.keys`): unit u (the pair of runs u, with and without the canary) of
seed s uses ``unit_key(key(s), u)``; the pretraining uses the stream ``"init"``, the DV estimator
and the held-out splits the stream ``"audit"``. A chunked, resumed or worker-split sweep
therefore gives the serial sweep's scores, and the scores mode with the training's seed gives
the training mode's records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, cast

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit import dpsgd
from jaxaudit._validation import (
    check_choice,
    check_instance,
    check_integer,
    check_orders,
    check_output_dir,
    check_positive_finite,
    check_probability,
    check_score_vector,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.accounting import RdpCurve, noise_for_epsilon, rdp_epsilons
from jaxaudit.datasets.audit_split import AUDIT_DATASETS, audit_data
from jaxaudit.dpsgd import DpsgdConfig
from jaxaudit.dpsgd.config import check_dpsgd_config
from jaxaudit.dpsgd.models import MODELS
from jaxaudit.dpsgd.scores import accountant_epsilon, file_sha256, load_scores, min_scores_per_world
from jaxaudit.pipelines.lifecycle import open_run, stored_config
from jaxaudit.renyi.score_bounds import MIN_SCORES as SCORE_BOUNDS_MIN
from jaxaudit.report import rdp as report
from jaxaudit.runs import (
    Progress,
    RunDir,
    Sweep,
    params_from_arrays,
    params_to_arrays,
    run_chunks,
    stream_key,
    unit_keys,
)

__all__ = ["PUBLISHED_RECIPE", "RdpConfig", "RdpResult", "ScoresAuditConfig", "audit_rows",
           "audit_scores", "run_rdp", "run_scores_audit"]

#: Images in the split each data set's audit draws from (MNIST test split, CIFAR-10 train).
_SPLIT_SIZES = {"mnist": 10_000, "cifar10": 50_000, "synthetic": None}
#: The published step on the noisy sum: η = 4 over |D| = 30,000 (MNIST).
LR_ON_SUM = 4.0 / 30_000


#: The published recipe of :class:`RdpConfig` (C = 1, T = 100, full batch, ``lax.scan`` unrolled
#: 10 times); its σ (None) is calibrated from ``epsilon`` and its η (None) is the published step.
PUBLISHED_RECIPE = DpsgdConfig(
    clip_norm=1.0, noise_multiplier=None, learning_rate=None,  # type: ignore[arg-type]
    steps=100, unroll=10)


class RdpConfig(NamedTuple):
    """Configuration of :func:`run_rdp` (defaults: ``jaxaudit rdp``'s, the published protocol).

    Attributes:
      dataset: "mnist", "synthetic" or "cifar10".
      model: "cnn", "mlp", "logreg" or "cifar_cnn" (:func:`jaxaudit.dpsgd.model_by_name`).
      dataset_size: |D⁻|, the private training set.
      public_size: public examples for pretraining, disjoint from D⁻ (None: every other image of
        the split, 2000 for synthetic; 0: random initialisation).
      pretrain_epochs, pretrain_optimizer ("sgd"/"adam"), pretrain_learning_rate,
        pretrain_batch_size: the pretraining of θ₀.
      canary_label: label of the blank canary, an int or "worst" (the least likely for θ₀).
      accountant: "pld" (tight) or "rdp": calibrates σ from ``epsilon`` and gives the ε-at-δ
        upper bound (the reported ε_α is the RDP accountant's at that σ either way).
      epsilon: target ε at ``delta`` that calibrates σ (None: 10, unless
        ``dpsgd.noise_multiplier`` is given).
      delta: δ of the (ε, δ) statements, in (0, 1).
      dpsgd: the DP-SGD recipe of every canary run (:class:`jaxaudit.dpsgd.DpsgdConfig`: C
        ``clip_norm``, σ ``noise_multiplier``, η ``learning_rate`` on the mean-gradient scale,
        T ``steps``, Poisson rate q ``sampling_rate`` (1: full batch), the per-example gradient
        ``method`` and ``block_size``, the ``lax.scan`` ``unroll`` over the steps, which changes
        no number and is not stored). Two fields may be None here: ``noise_multiplier`` (σ
        calibrated from ``epsilon``) and ``learning_rate`` (1.333e−4·q·|D⁻|, the published step
        of 4/30000 on the noisy sum); :meth:`check` fills in η. Default:
        ``PUBLISHED_RECIPE``.
      num_runs: R runs per world (≥ 2).
      chunk: runs per world per saved chunk.
      orders: Rényi orders α > 1 (repeats dropped).
      confidence: coverage of every lower bound, in (0, 1).
      seed: the integer root of the key rule (units, streams, the data's permutation).
      data_dir: data directory (None: $JAXAUDIT_DATA, else ~/.cache/jaxaudit).
      chunk_size: runs computed simultaneously inside a chunk (None: all).
      score_bounds: also compute :func:`jaxaudit.renyi.epsilon_lower_bounds` (skipped with
        fewer than 8 runs per world).
    """

    dataset: str = "mnist"
    model: str = "cnn"
    dataset_size: int = 100
    public_size: int | None = None
    pretrain_epochs: float = 5.0
    pretrain_optimizer: str = "sgd"
    pretrain_learning_rate: float = 0.01
    pretrain_batch_size: int = 32
    canary_label: int | str = 9
    accountant: str = "pld"
    epsilon: float | None = None
    delta: float = 1e-5
    dpsgd: DpsgdConfig = PUBLISHED_RECIPE
    num_runs: int = 64
    chunk: int = 32
    orders: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0)
    confidence: float = 0.95
    seed: int = 0
    data_dir: str | None = None
    chunk_size: int | None = None
    score_bounds: bool = True

    def check(self) -> RdpConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns it with its defaults filled in. ``run_rdp`` and the command call it first."""
        return _resolve(self)


class ScoresAuditConfig(NamedTuple):
    """Configuration of :func:`run_scores_audit`: canary scores from any training code.

    Attributes:
      in_scores: scores of the runs with the canary: a ``.npy`` file saved with ``numpy.save``
        (:func:`jaxaudit.dpsgd.scores.load_scores`) or a 1-D array.
      out_scores: scores of the runs without it (a file or an array).
      noise_multiplier: σ of that training (None: calibrated from ``epsilon`` and ``delta``).
      sampling_rate: its Poisson rate q, the same in both worlds (required).
      steps: its T (required).
      epsilon: ε at ``delta`` to calibrate σ from when ``noise_multiplier`` is None.
      delta, accountant, orders, confidence, seed, score_bounds: as in :class:`RdpConfig`.
    """

    in_scores: Any
    out_scores: Any
    noise_multiplier: float | None = None
    sampling_rate: float | None = None
    steps: int | None = None
    epsilon: float | None = None
    delta: float = 1e-5
    accountant: str = "pld"
    orders: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0)
    confidence: float = 0.95
    seed: int = 0
    score_bounds: bool = True

    def check(self) -> ScoresAuditConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns it (the scores are read by ``run_scores_audit``, which calls it first)."""
        check_config_fields(self)
        return _check_common(self, self.noise_multiplier, self.sampling_rate, self.steps)


class RdpResult(NamedTuple):
    """Result of :func:`run_rdp` and :func:`run_scores_audit`.

    BOUNDS: ``records[i].accountant`` and the ``accountant`` rows (upper bounds); the DV,
    threshold and GDP lower bounds of ``records``/``rows`` (``dv_lower``, ``threshold_lower``,
    ``gdp_lower``: each at ``confidence``; GDP assumes a Gaussian profile); the lower-bound rows
    of ``epsilon_at_delta`` and ``score_bounds`` (their ``kind`` says which).
    ESTIMATES: ``dv_point`` (± ``dv_se``, its sampling SE given the critic), ``dv_estimate``
    (the point raised to the best valid bound), the ε of μ-GDP rows of ``score_bounds``.

    Attributes:
      in_scores, out_scores: (R,) scores of the runs with and without the canary.
      noise_multiplier: σ of the audited training.
      canary_label: the canary's label (None in the scores mode).
      records: one :class:`jaxaudit.dpsgd.DpsgdAudit` per order (empty when ``complete`` is
        False).
      rows: one dict per order (:func:`audit_rows`).
      epsilon_at_delta: the ε-at-δ rows (:func:`jaxaudit.report.rdp.epsilon_table`).
      score_bounds: the rows of :func:`jaxaudit.report.rdp.score_bounds_rows` (empty when not
        computed).
      violation: some lower bound exceeds the accountant.
      runs_needed_text: how many runs per world would make the DV bound informative (Gaussian
        model of the scores, :func:`jaxaudit.renyi.runs_needed`), or "skipped: " and why when
        the scores do not vary within a world (``summary["skipped"]`` says the same).
      confidence: the coverage of the bounds.
      header, title: the printed header and the plot's title.
      summary: what ``results.json`` holds.
      complete: False when a worker stopped before every chunk was finished (no audit yet).
    """

    in_scores: np.ndarray
    out_scores: np.ndarray
    noise_multiplier: float
    canary_label: int | None
    records: tuple
    rows: list
    epsilon_at_delta: list
    score_bounds: list
    violation: bool
    runs_needed_text: str
    confidence: float
    header: str
    title: str
    summary: dict
    complete: bool = True


# ------------------------------------------------------------------------------ the audit step
def audit_rows(records: Any) -> list[dict]:
    """One table row per order: the records plus the reconciled DV estimate.

    ``dv_estimate`` is the DV point estimate raised to the best valid lower bound of the order
    (max of the DV and threshold-test lower bounds and 0; the GDP baseline is left out, it
    assumes a Gaussian privacy profile), and ``raised_to_bound`` says whether it was raised
    (:func:`jaxaudit.renyi.reconcile_estimate`). ``dv_se`` is the held-out standard error of
    ``dv_point`` given the trained critic: the sampling spread of the estimator, not its bias
    (the DV estimate is biased downwards), so it says nothing about ``dv_estimate`` once raised.
    """
    from jaxaudit.renyi import reconcile_estimate

    records = list(records)
    if not records:
        return []
    point = np.array([r.dv_point for r in records], np.float64)
    bounds = np.array([[r.dv_lower for r in records], [r.threshold_lower for r in records],
                       [0.0] * len(records)], np.float64)
    # an undefined estimate or bound (NaN) is "none": the bound, or the estimate, stands alone
    point, bounds = np.nan_to_num(point, nan=-np.inf), np.nan_to_num(bounds, nan=-np.inf)
    with jax.enable_x64(True):  # the table's numbers in float64, as audit_dpsgd gives them
        rec = jax.device_get(reconcile_estimate(point, bounds))
    rows = []
    for r, est, raised in zip(records, np.asarray(rec.estimate), np.asarray(rec.raised)):
        rows.append({"order": r.order, "accountant": r.accountant, "dv_point": r.dv_point,
                     "dv_se": r.dv_se, "dv_estimate": float(est), "raised_to_bound": bool(raised),
                     "dv_lower": r.dv_lower, "threshold_lower": r.threshold_lower,
                     "gdp_lower": r.gdp_lower, "violation": r.violation})
    return rows


def _accountant_curve(orders: np.ndarray, acc: dict) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(max(1.01, float(orders.min()) * 0.9), float(orders.max()) * 1.1, 60)
    return grid, np.asarray(rdp_epsilons(orders=grid, **acc), np.float64)


def audit_scores(key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike, *, orders: Any,
                 accountant_params: dict, confidence: float = 0.95, delta: float = 1e-5,
                 accountant: str = "rdp", score_bounds: bool = True, info: dict | None = None,
                 title: str = "", header: str = "", canary_label: int | None = None,
                 rundir: RunDir | None = None) -> RdpResult:
    """The audit step shared by both pipelines: the scores exist; audit them (and write the
    run folder's files when ``rundir`` is given, :func:`jaxaudit.report.rdp.write_results`).

    The DV estimator and every held-out split (the threshold tests of ``records``, the
    Clopper–Pearson row and :func:`jaxaudit.renyi.epsilon_lower_bounds`) use the stream key
    ``"audit"`` of the root ``key``: the GDP baseline and the score-based GDP threshold test are
    the same test, with the same number.
    ``accountant_params``: ``dict(noise_multiplier=σ, sampling_rate=q, steps=T)``. Inputs are
    assumed checked (the pipelines check their configurations).
    """
    from jaxaudit.renyi import (
        clopper_pearson_epsilon_lower_bound,
        epsilon_lower_bounds,
        runs_needed,
    )
    from jaxaudit.renyi.planning import format_runs_needed, pooled_sd

    significance = 1.0 - confidence  # shown only; exact for confidence in [0.5, 1) (Sterbenz)
    in_s, out_s = np.asarray(in_scores), np.asarray(out_scores)
    orders_arr = np.asarray(orders, np.float64)
    # one key for every held-out split: the GDP baseline of the ε-at-δ table and the GDP
    # threshold test of the score-based bounds are then one test with one number
    audit_key = stream_key(key, "audit")
    records = dpsgd.audit_dpsgd(audit_key, in_s, out_s, RdpCurve(orders_arr, rdp_epsilons(
        orders=orders_arr, **accountant_params), "add_remove"), confidence=confidence,
                                delta=delta).per_order()
    upper = accountant_epsilon(**accountant_params, delta=delta, accountant=accountant)
    cp = clopper_pearson_epsilon_lower_bound(audit_key, in_s, out_s, delta,
                                             confidence=confidence)
    eps_rows = report.epsilon_table(records, accountant_epsilon=upper, accountant=accountant,
                                    clopper_pearson=cp, delta=delta)
    rows = audit_rows(records)
    bounds: list[dict] = []
    if score_bounds and min(in_s.size, out_s.size) >= SCORE_BOUNDS_MIN:
        bounds = report.score_bounds_rows(epsilon_lower_bounds(
            audit_key, in_s, out_s, delta=delta, confidence=confidence), delta=delta)
    skipped: dict[str, str] = {}
    if pooled_sd(in_s, out_s) > 0:
        runs_text = format_runs_needed(runs_needed(in_s, out_s, orders_arr,
                                                   confidence=confidence),
                                       min(in_s.size, out_s.size))
    else:   # e.g. a deterministic run: every bound above holds; only the model fit needs a spread
        skipped["runs_needed"] = ("the scores do not vary within a world (pooled standard "
                                  "deviation 0): the Gaussian model of the scores has nothing "
                                  "to fit; every other bound is computed")
        runs_text = "skipped: " + skipped["runs_needed"]
    violation = any(r.violation for r in records)
    summary = {
        **(info or {}), **accountant_params, "accountant": accountant, "delta": delta,
        "confidence": confidence, "significance": float(f"{significance:.15g}"),  # shown
        "num_in_scores": int(in_s.size), "num_out_scores": int(out_s.size),
        "records": [r._asdict() for r in records], "rows": rows, "epsilon_at_delta": eps_rows,
        "score_bounds": bounds, "violation": violation, "skipped": skipped,
    }
    result = RdpResult(
        in_scores=in_s, out_scores=out_s, noise_multiplier=float(accountant_params[
            "noise_multiplier"]), canary_label=canary_label, records=tuple(records), rows=rows,
        epsilon_at_delta=eps_rows, score_bounds=bounds, violation=violation,
        runs_needed_text=runs_text,
        confidence=confidence, header=header, title=title, summary=summary)
    if rundir is not None:
        report.write_results(rundir, result, curve=_accountant_curve(orders_arr,
                                                                     accountant_params))
    return result


# ------------------------------------------------------------------------------- configurations
def _unique_orders(name: str, orders: Any) -> tuple[float, ...]:
    arr = check_orders(name, orders)
    return tuple(dict.fromkeys(float(a) for a in np.asarray(arr)))


def _check_common(config: Any, noise_multiplier: Any, sampling_rate: Any, steps: Any) -> Any:
    """Checks shared by both modes (everything the accountant and the audit read): σ, q and T
    are the audited training's (a ``ScoresAuditConfig``'s fields, an ``RdpConfig``'s recipe)."""
    check_choice("accountant", config.accountant, ("pld", "rdp"))
    check_probability("delta", config.delta, open_low=True, open_high=True)
    check_probability("confidence", config.confidence, open_low=True, open_high=True)
    check_integer("seed", config.seed, minimum=0)
    if not isinstance(config.score_bounds, bool):
        raise ValueError(f"score_bounds must be True or False, got {config.score_bounds!r}")
    for name, value in (("epsilon", config.epsilon), ("noise_multiplier", noise_multiplier)):
        if value is not None:
            check_positive_finite(name, value)
    if sampling_rate is not None:
        check_probability("sampling_rate", sampling_rate, open_low=True)
    if steps is not None:
        check_integer("steps", steps, minimum=1)
    return config._replace(orders=_unique_orders("orders", config.orders),
                           confidence=float(config.confidence), delta=float(config.delta))


def _noise_multiplier(config: Any, noise_multiplier: float | None, sampling_rate: Any,
                      steps: Any) -> float:
    """σ given, or calibrated from ``config.epsilon`` at ``config.delta`` (its accountant)."""
    if noise_multiplier is not None:
        return float(noise_multiplier)
    return float(noise_for_epsilon(config.epsilon, config.delta, steps, sampling_rate,
                                   accountant=config.accountant))


def _resolve(config: RdpConfig) -> RdpConfig:
    """``config`` checked (ValueError naming the field) with its defaults filled in (ε 10 when
    neither ε nor σ is given, the public size, the published η in ``dpsgd.learning_rate``)."""
    check_instance("config", config, RdpConfig)
    recipe = check_instance("dpsgd", config.dpsgd, DpsgdConfig)
    if config.epsilon is None and recipe.noise_multiplier is None:
        config = config._replace(epsilon=10.0)
    config = _check_common(config, recipe.noise_multiplier, recipe.sampling_rate, recipe.steps)
    check_choice("dataset", config.dataset, AUDIT_DATASETS)
    check_choice("model", config.model, MODELS)
    check_choice("pretrain_optimizer", config.pretrain_optimizer, ("sgd", "adam"))
    for name in ("chunk", "dataset_size", "pretrain_batch_size"):
        check_integer(name, getattr(config, name), minimum=1)
    check_integer("unroll", recipe.unroll, minimum=1)
    check_integer("num_runs", config.num_runs, minimum=2)  # the held-out split needs two runs
    if config.chunk_size is not None:
        check_integer("chunk_size", config.chunk_size, minimum=1)
    for name, value in (("clip_norm", recipe.clip_norm), ("pretrain_epochs", config.pretrain_epochs),
                        ("pretrain_learning_rate", config.pretrain_learning_rate)):
        check_positive_finite(name, value)
    label = config.canary_label
    if isinstance(label, str) and label.isdigit():
        label = int(label)
    if label != "worst" and (isinstance(label, bool) or not isinstance(label, int | np.integer)
                             or label < 0):
        raise ValueError(f"canary_label must be a non-negative integer or 'worst', got {label!r}")
    if config.model == "cifar_cnn" and config.dataset != "cifar10":
        raise ValueError(f"model cifar_cnn takes 32×32×3 images: use it with dataset cifar10 "
                         f"(dataset {config.dataset} has 28×28 images; use model cnn, mlp or "
                         "logreg)")
    public = config.public_size
    if public is None:
        total = _SPLIT_SIZES[config.dataset]
        public = 2000 if total is None else max(total - config.dataset_size, 0)
    check_integer("public_size", public, minimum=0)
    lr = recipe.learning_rate
    if lr is None:
        lr = LR_ON_SUM * config.dataset_size * recipe.sampling_rate
    check_positive_finite("learning_rate", lr)
    # the whole recipe, σ standing in as 0 while it waits for its calibration
    sigma = recipe.noise_multiplier
    checked = check_dpsgd_config(recipe._replace(
        learning_rate=lr, noise_multiplier=0.0 if sigma is None else sigma), "dpsgd")
    check_config_fields(config._replace(dpsgd=checked))  # the other fields' kinds
    return config._replace(canary_label=label if label == "worst" else int(label),
                           public_size=int(public),
                           dpsgd=checked._replace(noise_multiplier=sigma))


#: Fields of RdpConfig that change no number (not stored in the run configuration).
_NOT_STORED = ("data_dir", "chunk_size", "dpsgd.unroll")


def _stored_config(config: RdpConfig) -> dict:
    return stored_config(config, exclude=_NOT_STORED)


# ---------------------------------------------------------------------------------- run_rdp
def _initial_params(config: RdpConfig, rundir: RunDir | None, model: Any, data: tuple,
                    public: tuple) -> Any:
    """The worst-case initialisation θ₀, pretrained on the public split (chunk ``init``)."""
    (x, _), (xp, yp) = data, public
    key = stream_key(jax.random.key(config.seed), "init")
    public_size = cast(int, config.public_size)  # resolved: never None

    def compute_init(_name: str) -> dict:
        if public_size > 0:
            steps = max(1, round(config.pretrain_epochs * public_size
                                 / config.pretrain_batch_size))
            params = dpsgd.pretrain(key, model, xp, yp, steps=steps,
                                    learning_rate=config.pretrain_learning_rate,
                                    batch_size=config.pretrain_batch_size,
                                    optimizer=config.pretrain_optimizer)
        else:
            params = model.init(key, x[:1])
        return params_to_arrays(params)

    stored = run_chunks(rundir, ["init"], compute_init)["init"]
    return params_from_arrays(stored, like=model.init(jax.random.key(0), x[:1]))


def _canary(config: RdpConfig, model: Any, init: Any, x: np.ndarray) -> tuple[Any, int]:
    """The blank canary and its label (``canary_label``, or the worst case for θ₀)."""
    canary = dpsgd.blank_canary(x.shape[1:])
    label = (dpsgd.worst_case_label(model, init, canary) if config.canary_label == "worst"
             else int(config.canary_label))
    num_classes = model.apply(init, canary[None]).shape[-1]
    if not 0 <= label < num_classes:
        raise ValueError(f"canary_label must be in [0, {num_classes}), got {label}")
    return canary, label


def _chunks(config: RdpConfig) -> list[tuple[str, int, int]]:
    """(name, first unit, units) of each saved chunk."""
    size = min(config.chunk, config.num_runs)
    return [(f"chunk_{c:05d}", s, min(size, config.num_runs - s))
            for c, s in enumerate(range(0, config.num_runs, size))]


def run_rdp(config: RdpConfig, run_dir: str | Path | None = None, *,
            progress: Progress | None = None, sweep: Sweep = Sweep()) -> RdpResult:
    """Canary runs in both worlds, their scores and the audit (``jaxaudit rdp``).

    Steps: (1) σ for (ε, δ) after T steps (``config.accountant``), or ``noise_multiplier``;
    (2) θ₀ pretrained on a public split disjoint from D⁻ (chunk ``init``), the blank canary with
    ``canary_label``; (3) R runs with and R without the canary in chunks of ``chunk`` units
    (unit u: the pair of runs u, key ``unit_key(key(seed), u)``; each chunk saved when done, so an
    interrupted run resumes and several workers may share the folder); (4) the audit
    (:func:`audit_scores`). With ``run_dir`` the folder holds the chunks and the files of
    :func:`jaxaudit.report.rdp.write_results`; it resumes under the same configuration and
    refuses another.

    Args:
      config: the :class:`RdpConfig` (checked before any folder is created; a bad field is a
        ``ValueError`` naming it).
      run_dir: run folder (None: everything in memory).
      progress: ``progress(done, total)`` over the canary chunks.
      sweep: where the chunks run (:class:`jaxaudit.runs.Sweep`: ``backend="ray"`` for one Ray
        task per chunk; ``worker=(index, count)`` to compute only chunks ``index, index + count,
        …``, the audit then done once every chunk is finished, otherwise the result has
        ``complete=False``). It does not change the numbers.

    Returns:
      :class:`RdpResult`.
    """
    config = _resolve(config)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    recipe = config.dpsgd
    sigma = _noise_multiplier(config, recipe.noise_multiplier, recipe.sampling_rate, recipe.steps)
    # the recipe every run trains with: σ calibrated, the unrolling at most the steps
    recipe = recipe._replace(noise_multiplier=sigma, unroll=max(1, min(recipe.unroll,
                                                                       recipe.steps)))
    model = dpsgd.model_by_name(config.model)
    data, public = audit_data(jax.random.key(config.seed), config.dataset, config.dataset_size,
                              cast(int, config.public_size), data_dir=config.data_dir)
    try:  # a model that cannot take these images fails here, in words, not deep inside JAX
        jax.eval_shape(model.init, jax.random.key(0), data[0][:1])
    except (TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(f"model {config.model} cannot take dataset {config.dataset} images of "
                         f"shape {data[0].shape[1:]} ({type(err).__name__}: {err})") from None
    with open_run(run_dir, "rdp", _stored_config(config)) as rundir:
        init = _initial_params(config, rundir, model, data, public)
        canary, label = _canary(config, model, init, data[0])
        chunks = _chunks(config)

        def compute(name: str) -> dict:
            _, start, size = next(c for c in chunks if c[0] == name)
            in_s, out_s = dpsgd.canary_runs(
                unit_keys(jax.random.key(config.seed), start, size), model, init, data,
                (canary, label), recipe, num_runs=size, chunk_size=config.chunk_size)
            return {"in_scores": in_s, "out_scores": out_s}

        names = [c[0] for c in chunks]
        results = run_chunks(rundir, names, compute, progress=progress, sweep=sweep)
    in_s = np.concatenate([results[n]["in_scores"] for n in names if n in results])
    out_s = np.concatenate([results[n]["out_scores"] for n in names if n in results])
    header = (f"noise multiplier σ = {sigma:.4f}; canary label {label}; {len(in_s)} runs per "
              "world")
    acc = dict(noise_multiplier=sigma, sampling_rate=recipe.sampling_rate, steps=recipe.steps)
    title = (f"{config.dataset} {config.model} |D|={config.dataset_size} R={len(in_s)} "
             f"T={recipe.steps} q={recipe.sampling_rate:.3g} σ={sigma:.3g}")
    if len(results) < len(names):  # a worker that stopped before the others finished
        return RdpResult(in_s, out_s, sigma, label, (), [], [], [], False, "", config.confidence,
                         header, title, {}, complete=False)
    info = {"canary_label": label, "runs_per_world": len(in_s), "epsilon": config.epsilon}
    return audit_scores(jax.random.key(config.seed), in_s, out_s, orders=config.orders,
                        accountant_params=acc,
                        confidence=config.confidence, delta=config.delta,
                        accountant=config.accountant, score_bounds=config.score_bounds,
                        info=info, title=title, header=header, canary_label=label,
                        rundir=rundir)


# ------------------------------------------------------------------------- run_scores_audit
def _scores(value: Any, name: str) -> tuple[np.ndarray, str, str | None]:
    """(scores, SHA-256 digest, path or None) of a score file or array."""
    import hashlib

    if isinstance(value, str | Path):
        return load_scores(value, name), file_sha256(value), str(value)
    arr = np.asarray(check_score_vector(name, value, minimum=4), np.float64)
    return arr, hashlib.sha256(arr.tobytes()).hexdigest(), None


def run_scores_audit(config: ScoresAuditConfig, run_dir: str | Path | None = None, *,
                     progress: Progress | None = None, sweep: Sweep = Sweep()) -> RdpResult:
    """Audit canary scores saved by any training code (``jaxaudit rdp --scores IN OUT``).

    The scores enter at the arrow "one score per run" of :func:`run_rdp` and go through the same
    audit (:func:`audit_scores`) with the accountant of the training that made them (σ, q, T;
    the same q in both worlds). The two inputs must differ (two files with identical contents
    are refused) and hold at least :func:`jaxaudit.dpsgd.scores.min_scores_per_world` scores
    each. The run configuration holds the SHA-256 of both inputs, so other scores are refused
    in the same folder.

    Args:
      config: the :class:`ScoresAuditConfig`.
      run_dir: run folder for the files (None: nothing written).
      progress: ``progress(done, total)``: (0, 1) before the audit, (1, 1) after.
      sweep: accepted for symmetry with the other pipelines (checked); the audit is one unit.

    Returns:
      :class:`RdpResult` (``canary_label`` None).
    """
    check_instance("config", config, ScoresAuditConfig)
    Sweep.check(sweep)
    missing = [name for name in ("steps", "sampling_rate") if getattr(config, name) is None]
    if config.noise_multiplier is None and config.epsilon is None:
        missing.append("noise_multiplier (or epsilon with delta)")
    if missing:
        raise ValueError(f"the scores audit needs the audited training's {', '.join(missing)}")
    check_config_fields(config)
    config = _check_common(config, config.noise_multiplier, config.sampling_rate, config.steps)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    in_s, in_sha, in_path = _scores(config.in_scores, "in_scores")
    out_s, out_sha, out_path = _scores(config.out_scores, "out_scores")
    same_path = (in_path is not None and out_path is not None
                 and Path(in_path).resolve() == Path(out_path).resolve())
    if same_path or in_sha == out_sha:
        same = "the same file" if same_path else "inputs with identical contents"
        raise ValueError(f"in_scores and out_scores are {same} ({in_path or 'an array'}, "
                         f"{out_path or 'an array'}): the audit compares runs with the canary "
                         "to runs without it; give one per world")
    need = min_scores_per_world(confidence=config.confidence)
    for name, path, scores in (("in_scores", in_path, in_s), ("out_scores", out_path, out_s)):
        if scores.shape[0] < need:
            raise ValueError(f"{name}: {path or 'the array'} holds {scores.shape[0]} scores; at "
                             f"confidence {config.confidence:g} the lower bounds need at least "
                             f"{need} per world (with fewer they show nothing even when the "
                             "worlds are perfectly separated); train more runs")
    sigma = _noise_multiplier(config, config.noise_multiplier, config.sampling_rate,
                              config.steps)
    digests = {"in_sha256": in_sha, "out_sha256": out_sha}
    # the score inputs are stored by their digests (a path or an array is not the scores)
    stored = stored_config(config, {"scores": digests}, exclude=("in_scores", "out_scores"))
    with open_run(run_dir, "rdp", stored) as rundir:
        if progress is not None:
            progress(0, 1)
        info = {"epsilon": config.epsilon,
                "score_files": {"in": in_path, "out": out_path, **digests}}
        header = (f"noise multiplier σ = {sigma:.4f}; {len(in_s)} scores with and {len(out_s)} "
                  "without the canary")
        title = (f"scores R={len(in_s)}/{len(out_s)} T={config.steps} "
                 f"q={config.sampling_rate:.3g} σ={sigma:.3g}")
        acc = dict(noise_multiplier=sigma, sampling_rate=config.sampling_rate, steps=config.steps)
        result = audit_scores(jax.random.key(config.seed), in_s, out_s, orders=config.orders,
                              accountant_params=acc,
                              confidence=config.confidence, delta=config.delta,
                              accountant=config.accountant, score_bounds=config.score_bounds,
                              info=info, title=title, header=header, rundir=rundir)
        if progress is not None:
            progress(1, 1)
    return result
