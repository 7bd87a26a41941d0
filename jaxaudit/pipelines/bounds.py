"""The bounds pipeline: a prior (by name or per target from a file) and a privacy guarantee →
the count bound beside prior work (what ``jaxaudit bounds`` prints), or the inverse question:
the largest ε that keeps an attack below a target.

Swanberg et al., "Adversary-aware DP bounds" (arXiv:2507.08158): with β_i = sigmoid(ε + logit
p_i), the number L of targets attacked successfully satisfies Pr[L ≥ v] ≤ Pr[PoiBin(β) ≥ v]
+ n·δ, and v_γ is the least v with that bound ≤ γ (:func:`jaxaudit.bounds.summarize_bounds`).
The inverse: :func:`jaxaudit.bounds.epsilon_for_success` (every β_i ≤ S) and
:func:`jaxaudit.bounds.epsilon_for_count` (v_γ ≤ V). The choices are in docs/bounds.md.

Example::

    from jaxaudit.pipelines import BoundsConfig, run_bounds
    result = run_bounds(BoundsConfig(epsilon=1.0, prior="uniform:10", targets=1000))
    result.summary.count_bound   # 255
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from jaxaudit._validation import (
    ArgumentTypeError,
    check_bool,
    check_input_path,
    check_integer,
    check_nonnegative,
    check_output_dir,
    check_positive,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit._validation.paths import available_memory
from jaxaudit.bounds import (
    BoundsSummary,
    PrivacyModel,
    epsilon_for_count,
    epsilon_for_success,
    summarize_bounds,
)
from jaxaudit.bounds.registry import prior_by_name
from jaxaudit.pipelines.lifecycle import open_run, stored_config
from jaxaudit.report import bounds as report
from jaxaudit.runs import Progress, Sweep
from jaxaudit.runs.arrays import load_npy

__all__ = ["BoundsConfig", "BoundsResult", "MAX_TARGETS", "run_bounds"]

#: Most targets ever accepted (one float64 prior each, plus the engine's work arrays); fewer
#: where the machine's available memory cannot hold them (:func:`max_targets`).
MAX_TARGETS = 10**8

#: Bytes the bound engine needs per target (measured: 10^7 targets peak at 2.8 GB), with margin.
BYTES_PER_TARGET = 400


def max_targets() -> int:
    """The most targets this machine holds now: available memory / :data:`BYTES_PER_TARGET`,
    at most :data:`MAX_TARGETS`."""
    available = available_memory()
    return MAX_TARGETS if available is None else max(1, min(MAX_TARGETS,
                                                            available // BYTES_PER_TARGET))


class BoundsConfig(NamedTuple):
    """What to bound (defaults: those of ``jaxaudit bounds``).

    Attributes:
      epsilon: ε of ε-DP or (ε, δ)-DP (under μ-GDP only where β(ε, κ) is reported).
      delta: δ ∈ [0, 1) of (ε, δ)-DP.
      mu: μ > 0 of μ-GDP (f-DP bound).
      prior: a prior by name, ``"uniform:K"`` or ``"zipf:S,N"``
        (:func:`jaxaudit.bounds.registry.prior_by_name`); give it or ``priors_file``.
      priors_file: per-target baseline success p_i, ``.npy`` or text (one number per line).
      targets: n (required with ``prior``; with ``priors_file``, its length, or a single
        value repeated n times).
      attempts: guesses per target (top-k mass of a prior by name).
      gamma: level γ ∈ (0, 1) of the count bound.
      max_success: the inverse question: the largest ε with every β_i ≤ max_success.
      max_count: the inverse question: the largest ε with v_γ ≤ max_count under (ε, δ)-DP.
      tail_curve: also compute the bound on Pr[L ≥ v] for v = 0..n + 1 (for the plot).
    """

    epsilon: float | None = None
    delta: float = 0.0
    mu: float | None = None
    prior: str | None = None
    priors_file: str | None = None
    targets: int | None = None
    attempts: int = 1
    gamma: float = 0.05
    max_success: float | None = None
    max_count: int | None = None
    tail_curve: bool = False

    def check(self) -> BoundsConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_bounds`` and the command call it first."""
        return _check_config(self)


class BoundsResult(NamedTuple):
    """Result of :func:`run_bounds`.

    BOUNDS (upper bounds on attack success, valid for every attack under the guarantee):
    ``summary`` (v_γ: with probability ≥ 1 − γ fewer than v_γ targets are attacked; the
    single-target bound, β(ε, κ) and the baselines of prior work), ``tail`` (Pr[L ≥ v] ≤ tail)
    and, for the inverse question, ``epsilon`` (every ε ≤ it meets the target; rounded down).
    No ESTIMATES: ``summary.expected_baseline_successes`` is the prior's exact expectation Σ p_i.

    Attributes:
      config: the :class:`BoundsConfig`.
      prior: the prior's description.
      priors: (n,) float64 baseline success p_i of each target.
      uniform_support: K of a uniform prior by name, else None.
      summary: :class:`jaxaudit.bounds.BoundsSummary` (None for the inverse question).
      epsilon: the largest ε of the inverse question (None otherwise; ±inf: every / no ε).
      tail_v: v = 0..n + 1 (None unless ``config.tail_curve``).
      tail: the bound on Pr[L ≥ v] at ``tail_v`` (None unless ``config.tail_curve``).
    """

    config: BoundsConfig
    prior: str
    priors: np.ndarray
    uniform_support: int | None
    summary: BoundsSummary | None
    epsilon: float | None
    tail_v: np.ndarray | None
    tail: np.ndarray | None

    @property
    def inverse(self) -> bool:
        """True for the inverse question (``max_success`` or ``max_count``)."""
        return self.summary is None


def _check_config(config: BoundsConfig) -> BoundsConfig:
    """Every field, by name, before any work or folder."""
    if not isinstance(config, BoundsConfig):
        raise ArgumentTypeError(f"config must be a BoundsConfig, got {type(config).__name__}")
    check_config_fields(config)
    c = config
    inverse = c.max_success is not None or c.max_count is not None
    if c.max_success is not None and c.max_count is not None:
        raise ValueError("give max_success or max_count, not both")
    if inverse and (c.epsilon is not None or c.mu is not None):
        raise ValueError("max_success and max_count find ε: give neither epsilon nor "
                         "mu with them")
    if inverse and check_bool("tail_curve", c.tail_curve):
        raise ValueError("tail_curve describes the bounds at a given ε; it does not apply "
                         "to max_success or max_count")
    if not inverse and c.epsilon is None and c.mu is None:
        raise ValueError("give epsilon (ε-DP or (ε, δ)-DP) or mu (μ-GDP)")
    if c.mu is not None and c.delta:
        raise ValueError("delta is the δ of (ε, δ)-DP; give it or mu, not both")
    if (c.prior is None) == (c.priors_file is None):
        raise ValueError("give prior (a prior by name, e.g. 'uniform:10') or priors_file, "
                         "exactly one")
    if c.prior is not None and c.targets is None:
        raise ValueError("targets is required with prior")
    if c.targets is not None:
        limit = max_targets()
        if not 1 <= check_integer("targets", c.targets) <= limit:
            raise ValueError(f"targets must lie in [1, {limit}] (available memory at "
                             f"{BYTES_PER_TARGET} bytes per target), got {c.targets}")
    check_integer("attempts", c.attempts, minimum=1)
    if c.epsilon is not None:
        check_nonnegative("epsilon", c.epsilon)
    check_probability("delta", c.delta, open_high=True)
    if c.mu is not None:
        check_positive("mu", c.mu)
    check_probability("gamma", c.gamma, open_low=True, open_high=True)
    if c.max_success is not None:
        check_probability("max_success", c.max_success)
    if c.max_count is not None:
        check_integer("max_count", c.max_count)
    check_bool("tail_curve", c.tail_curve)
    return c


def _read_priors_file(name: str, path_text: str, targets: int | None) -> np.ndarray:
    """The p_i of a ``.npy`` (header checked against the file's size, never unpickled) or text
    file; one value is repeated ``targets`` times."""
    # before reading: the file's size (a text line is held whole, then decoded), the .npy
    # header, and at most limit + 1 rows of text
    path = check_input_path(name, path_text, bytes_per_byte=1.0 if path_text.endswith(".npy")
                            else 3.0)
    limit = max_targets()
    if path.suffix == ".npy":
        values = load_npy(path, name=f"{name} {path}", max_bytes=8 * limit)
    else:
        try:
            with warnings.catch_warnings():  # an empty file: our error below, not numpy's warning
                warnings.filterwarnings("ignore", "loadtxt: input contained no data",
                                        UserWarning)
                values = np.loadtxt(path, ndmin=1, encoding="utf-8-sig",  # a BOM is fine
                                    max_rows=limit + 1)
        except ValueError as err:
            raise ValueError(f"{name} {path} is not a text file of numbers ({err})") from None
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"{name} {path} must hold numbers, got dtype {values.dtype}")
    if values.ndim > 1:
        raise ValueError(f"{name} {path} must hold one value per target (1-D), got shape "
                         f"{values.shape}")
    values = values.astype(np.float64).ravel()
    if values.size == 0:
        raise ValueError(f"{name} {path} holds no values")
    if values.size > limit:
        raise ValueError(f"{name} {path} holds {values.size} values, more than {limit} "
                         f"(available memory at {BYTES_PER_TARGET} bytes per target)")
    if targets is not None and values.size != targets:
        if values.size != 1:
            raise ValueError(f"targets is {targets} but {name} {path} holds {values.size} values")
        values = np.full(targets, values[0])
    check_probability(name, values)
    return values


def _priors(c: BoundsConfig) -> tuple[np.ndarray, str, int | None]:
    """(p_i, the prior's description, K of a uniform prior by name or None)."""
    if c.prior is not None:
        named = prior_by_name(c.prior, attempts=c.attempts)
        priors = np.full(int(c.targets or 0), named.baseline)  # targets is checked: not None
        return priors, named.description, named.uniform_support
    path = str(c.priors_file)
    values = _read_priors_file("priors_file", path, c.targets)
    return values, f"per-target priors from {Path(path).name}", None


def _stored_config(c: BoundsConfig, priors: np.ndarray) -> dict:
    """The manifest's configuration: the fields, and the digest of the p_i read from a file
    (another file's content under the same name is another configuration)."""
    derived = {}
    if c.priors_file is not None:
        derived["priors_sha256"] = hashlib.sha256(priors.tobytes()).hexdigest()
    return stored_config(c, derived)


def _compute(c: BoundsConfig, priors: np.ndarray, prior: str,
             uniform_support: int | None) -> BoundsResult:
    if c.max_success is not None:
        eps = epsilon_for_success(priors, c.max_success)
        return BoundsResult(c, prior, priors, uniform_support, None, eps, None, None)
    if c.max_count is not None:
        eps = epsilon_for_count(priors, c.max_count, gamma=c.gamma, delta=c.delta)
        return BoundsResult(c, prior, priors, uniform_support, None, eps, None, None)
    privacy = PrivacyModel(epsilon=c.epsilon, delta=c.delta, mu=c.mu)
    summary = summarize_bounds(priors, privacy, gamma=c.gamma, uniform_support=uniform_support,
                               attempts=c.attempts)
    tail_v = tail = None
    if c.tail_curve:
        tail_v = np.arange(0, priors.size + 2)
        with jax.enable_x64(True):  # the tail's far end is below float32's resolution
            tail = np.asarray(privacy.tail(priors, tail_v, c.gamma), dtype=np.float64)
    return BoundsResult(c, prior, priors, uniform_support, summary, None, tail_v, tail)


def run_bounds(config: BoundsConfig, run_dir: str | Path | None = None, *,
               progress: Progress | None = None, sweep: Sweep = Sweep()) -> BoundsResult:
    """The bounds summary (or the inverse ε) of ``config``; with ``run_dir``, also a run folder.

    Args:
      config: :class:`BoundsConfig` (checked field by field before anything is written).
      run_dir: a run folder (kind ``"bounds"``) to write ``bounds.json`` (the JSON of
        ``jaxaudit bounds --json``), ``summary.md`` and, with ``tail_curve``, ``tail.png``
        (needs matplotlib); a folder holding another configuration is refused. The summary is
        closed-form and cheap, so a repeated call recomputes it and rewrites the same files.
        None (default): nothing is written.
      progress: ``progress(done, total)`` callback; the summary is one unit (0 of 1, then 1 of
        1).
      sweep: the :class:`jaxaudit.runs.Sweep` of the pipelines' common signature (checked); the
        one unit is deterministic, so every worker computes it (identical atomic writes).

    Returns:
      :class:`BoundsResult`.

    Raises:
      ValueError: a bad field (naming it), a prior file that is not a 1-D array of
        probabilities, a run folder holding another configuration.
      FileNotFoundError: ``priors_file`` does not exist.
    """
    c = _check_config(config)
    Sweep.check(sweep)
    priors, prior, uniform_support = _priors(c)
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    with open_run(run_dir, "bounds", _stored_config(c, priors)) as run:
        if progress is not None:
            progress(0, 1)
        result = _compute(c, priors, prior, uniform_support)
    if run is not None:
        run.write_json("bounds.json", report.as_json(result))
        run.write_text("summary.md", report.markdown(result))
        if result.tail is not None:
            report.plot_tail(run.path / "tail.png", result)
    if progress is not None:
        progress(1, 1)
    return result
