"""A one-run audit of DP-SGD on MNIST: one training run with m canaries included by fair coins,
every score-based bound beside the accountant (:func:`jaxaudit.dpsgd.one_run_audit`; Steinke,
Nasr, Jagielski, arXiv 2305.08846; Mahloujifar, Melis, Chaudhuri, arXiv 2410.22235).

Keys: seed s is the root ``jax.random.key(s)``; the data's permutation uses
``fold_in(root, 0)``, the initialisation ``fold_in(root, 1)``, the input canaries' wrong labels
``fold_in(root, 2)`` and the audit (coins, run, bounds) ``fold_in(root, 3)``.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxaudit import dpsgd
from jaxaudit._validation import (
    check_choice,
    check_instance,
    check_integer,
    check_positive_finite,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.accounting import noise_for_epsilon
from jaxaudit.datasets.audit_split import audit_data
from jaxaudit.dpsgd import DpsgdConfig
from jaxaudit.dpsgd.config import check_dpsgd_config
from jaxaudit.dpsgd.one_run import KINDS, MIN_CANARIES
from jaxaudit.pipelines.lifecycle import bounded, open_run, stored_config
from jaxaudit.runs import Progress, Sweep

__all__ = ["OneRunAuditConfig", "OneRunResult", "run_one_run"]

#: The models a configuration names (:func:`jaxaudit.dpsgd.model_by_name`).
MODELS = ("cnn", "mlp", "logreg")
#: The published step on the noisy sum, η = 4 over |D| = 30,000 (Annamalai & De Cristofaro).
LR_ON_SUM = 4.0 / 30_000


#: The recipe of :class:`OneRunAuditConfig`: C = 1, T = 100, full batch; σ (None) calibrated from
#: ``epsilon``, η (None) the published step.
RECIPE = DpsgdConfig(clip_norm=1.0, noise_multiplier=None, learning_rate=None,  # type: ignore[arg-type]
                     steps=100)


class OneRunAuditConfig(NamedTuple):
    """Configuration of :func:`run_one_run`.

    Attributes:
      dataset: "mnist" (the 10,000-image test split) or "synthetic".
      model: "cnn" (default), "mlp" or "logreg"; randomly initialised (no pretraining).
      dataset_size: |D⁻| (default 1000).
      num_canaries: m ≥ 50 (default 100; :data:`jaxaudit.dpsgd.one_run.MIN_CANARIES`: the
        fair coins leave fewer than the 8 canaries per world the bounds need with probability
        2.1e-7 at m = 50, 0.80 at m = 16).
      kind: "gradient" (default: Dirac gradient canaries in a parameter block the model never
        reads) or "input" (m further images of the split with wrong labels, scored by −CE).
      epsilon: target ε at ``delta`` that calibrates σ (RDP accountant; default 10).
      delta: δ (default 1e-5).
      dpsgd: the DP-SGD recipe of the run (:class:`jaxaudit.dpsgd.DpsgdConfig`; default
        C = 1, T = 100, full batch): its ``noise_multiplier`` stays None (σ is
        calibrated from ``epsilon``; not stored), its ``learning_rate`` may be None (η =
        4/30000·q|D⁻|, the published step on the noisy sum); its ``unroll`` changes no number
        and is not stored.
      confidence: coverage of every bound (default 0.95).
      seed: integer root of the keys (see the module).
      data_dir: data directory (None: $JAXAUDIT_DATA, else ~/.cache/jaxaudit); not stored.
    """

    dataset: str = "mnist"
    model: str = "cnn"
    dataset_size: int = 1000
    num_canaries: int = 100
    kind: str = "gradient"
    epsilon: float = 10.0
    delta: float = 1e-5
    dpsgd: DpsgdConfig = RECIPE
    confidence: float = 0.95
    seed: int = 0
    data_dir: str | None = None

    def check(self) -> OneRunAuditConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_one_run`` and the command call it first."""
        return _check(self)


class OneRunResult(NamedTuple):
    """Result of :func:`run_one_run`.

    Bounds (each holds with probability ≥ ``confidence``): ``one_run`` (ε, Steinke et al.),
    ``fdp_one_run_mu`` (μ, Mahloujifar et al.), ``clopper_pearson`` (ε), ``gdp_mu`` (μ) are
    lower bounds; ``accountant_epsilon`` is the accountant's upper bound (RDP, at δ).
    Estimates (bounds only if the trade-off curve is exactly Gaussian): ``fdp_one_run`` and
    ``gdp_epsilon`` (ε of μ-GDP at δ).
    Also: ``scores`` (m,) and ``included`` (m,) bool, the noise multiplier σ, ``minutes`` of wall
    time of the run and its bounds, ``path`` (the run folder or None) and ``note``: empty, or
    why the run's ε differs from the target (the calibration floors σ at 0.001, so a target
    ε above what σ = 0.001 gives, e.g. 1e9, is not reached: the run is audited at the
    accountant's smaller ε; also warned about).
    """

    scores: np.ndarray
    included: np.ndarray
    noise_multiplier: float
    accountant_epsilon: float
    one_run: float
    fdp_one_run_mu: float
    fdp_one_run: float
    clopper_pearson: float
    gdp_mu: float
    gdp_epsilon: float
    minutes: float
    path: Path | None
    note: str = ""


def _check(config: Any) -> OneRunAuditConfig:
    check_instance("config", config, OneRunAuditConfig)
    recipe = check_instance("dpsgd", config.dpsgd, DpsgdConfig)
    if recipe.noise_multiplier is not None:
        raise ValueError("dpsgd.noise_multiplier: the one-run audit calibrates σ from epsilon; "
                         f"leave it None, got {recipe.noise_multiplier!r}")
    check_choice("dataset", config.dataset, ("mnist", "synthetic"))
    check_choice("model", config.model, MODELS)
    check_choice("kind", config.kind, KINDS)
    bounded("dataset_size", config.dataset_size, 1, 10_000)
    bounded("num_canaries", config.num_canaries, MIN_CANARIES, 10_000)
    if config.kind == "input" and config.dataset_size + config.num_canaries > 10_000:
        raise ValueError("dataset_size + num_canaries must be at most 10000 with kind='input' "
                         "(the canaries are further images of the split)")
    check_positive_finite("epsilon", config.epsilon)
    check_probability("delta", config.delta, open_low=True, open_high=True)
    check_positive_finite("clip_norm", recipe.clip_norm)
    check_integer("steps", recipe.steps, minimum=1)
    if recipe.learning_rate is not None:
        check_positive_finite("learning_rate", recipe.learning_rate)
    check_probability("sampling_rate", recipe.sampling_rate, open_low=True)
    check_probability("confidence", config.confidence, open_low=True, open_high=True)
    check_integer("seed", config.seed, minimum=0)
    # the whole recipe and the other fields' kinds, σ and η standing in as 0 and 1
    check_config_fields(config._replace(dpsgd=check_dpsgd_config(recipe._replace(
        noise_multiplier=0.0, learning_rate=recipe.learning_rate or 1.0), "dpsgd")))
    return config


def _target_note(epsilon: float, delta: float, sigma: float, accountant: float) -> str:
    """Empty when the accountant's ε of the calibrated run is the target (to 1%), else what
    was run instead: the calibration never goes below σ = 0.001, where a huge target (1e9)
    gives a smaller ε (5.5e7 at T = 100, q = 1, δ = 1e-5)."""
    if not accountant < 0.99 * epsilon:
        return ""
    return (f"the target ε = {epsilon:g} at δ = {delta:g} was not reached: σ = {sigma:.4g} "
            f"(the calibration's floor is 0.001) gives ε = {accountant:.4g} by the accountant, "
            "and the run is audited at that ε (a target at most that large calibrates σ)")


def run_one_run(config: OneRunAuditConfig, run_dir: str | Path | None = None, *,
                progress: Progress | None = None, sweep: Sweep = Sweep()) -> OneRunResult:
    """Train once with m canaries and audit (:func:`jaxaudit.dpsgd.one_run_audit`).

    Every field is checked before anything is written. With ``run_dir`` the configuration is
    stored (a folder of another configuration is refused), the scores and coins are saved as
    the chunk ``run`` and the result as ``result.json`` (a second call with the same
    configuration trains again and writes the same numbers).
    ``progress(done, total)`` is called once the run is trained (total 1). ``sweep`` (a
    :class:`jaxaudit.runs.Sweep`) is accepted for the pipelines' common signature and checked;
    the run is one unit, computed here.
    """
    config = _check(config)
    Sweep.check(sweep)
    root = jax.random.key(config.seed)
    m, n = config.num_canaries, config.dataset_size
    extra = m if config.kind == "input" else 0
    (x, y), _ = audit_data(jax.random.fold_in(root, 0), config.dataset, n + extra, 0,
                           data_dir=config.data_dir)
    canaries = None
    if config.kind == "input":  # further images with a wrong label each
        shift = jax.random.randint(jax.random.fold_in(root, 2), (m,), 1, 10)
        canaries = (x[n:], np.asarray((y[n:] + np.asarray(shift)) % 10, np.int32))
        x, y = x[:n], y[:n]
    model = dpsgd.model_by_name(config.model)
    params = model.init(jax.random.fold_in(root, 1), jnp.asarray(x[:1]))
    recipe = config.dpsgd
    sigma = float(noise_for_epsilon(config.epsilon, config.delta, recipe.steps,
                                    recipe.sampling_rate, accountant="rdp"))
    lr = (LR_ON_SUM * n * recipe.sampling_rate if recipe.learning_rate is None
          else float(recipe.learning_rate))
    recipe = recipe._replace(noise_multiplier=sigma, learning_rate=lr)
    audit = dpsgd.OneRunConfig(m, config.kind, config.delta, config.confidence)
    # stored without σ (None: it follows from epsilon) and the scan's unrolling (no number)
    stored = stored_config(config, exclude=("data_dir", "dpsgd.noise_multiplier", "dpsgd.unroll"))
    with open_run(run_dir, "one_run", stored) as run:
        start = time.perf_counter()
        res = dpsgd.one_run_audit(jax.random.fold_in(root, 3), model, params, (x, y), recipe,
                                  audit, canaries=canaries)
        minutes = (time.perf_counter() - start) / 60.0
        if progress is not None:
            progress(1, 1)
        b = res.bounds
        note = _target_note(config.epsilon, config.delta, sigma, res.accountant_epsilon)
        if note:
            warnings.warn(note, UserWarning, stacklevel=2)
        result = OneRunResult(res.scores, res.included, sigma, res.accountant_epsilon,
                              float(b.one_run), float(b.fdp_one_run_mu), float(b.fdp_one_run),
                              float(b.clopper_pearson), float(b.mu), float(b.gdp_epsilon),
                              minutes, None if run is None else run.path, note)
        if run is not None:
            run.plan(["run"])
            run.save_chunk("run", {"scores": res.scores, "included": res.included})
            run.write_json("result.json", {k: v for k, v in result._asdict().items()
                                           if k not in ("scores", "included", "path")})
    return result
