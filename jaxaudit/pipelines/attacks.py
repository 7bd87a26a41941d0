"""The attack sweeps: concrete attacks on DP mechanisms at several privacy levels, each run next
to the adversary-aware count bound (docs/attacks.md).

* :func:`run_secrets` (``jaxaudit attack secrets``): for every target ε and repetition r, draw
  n secrets, DP-fine-tune a character GRU (from one public pretrained model shared by every run,
  cached in the run folder), score every candidate of every user, rank by each scoring and count
  the secrets found within k guesses (:func:`jaxaudit.attacks.train_and_score`,
  :func:`jaxaudit.attacks.extraction_result`).
* :func:`run_marginals` (``jaxaudit attack marginals``): for every ρ and repetition r, release
  ρ-zCDP noisy k-way marginals of Fair's table and reconstruct the targets' hidden attributes
  (:func:`jaxaudit.attacks.marginals_reconstruction`).

Keys (:mod:`jaxaudit.runs.keys`): repetition r is unit r of the root ``seed``; its runs at every
privacy level use ``unit_key(key(seed), r)``, so the levels are compared on the same secrets (the
same targets): a paired design. The public pretrained model uses ``stream_key(key(seed),
"init")``. The configuration stores the key rule, so a folder written under another rule is
refused rather than mixed.

Each (level, repetition) is one chunk of a resumable run folder (``eps_<ε>_seed_<r>``,
``rho_<ρ>_seed_<r>``); a finished sweep writes ``table.json``, ``summary.md`` and ``attack.png``
(:mod:`jaxaudit.report.attacks`).

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, "A Unified Framework for Adversary-Aware
  Differential Privacy Bounds", arXiv 2507.08158 (count bound; Fig. 2; Appendix E).
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", arXiv 1802.08232.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxaudit._validation import (
    check_choice,
    check_instance,
    check_integer,
    check_output_dir,
    check_positive_finite,
    check_probability,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.accounting.replace_one import MAX_DPSGD_EPSILON
from jaxaudit.attacks import SCORINGS, AttackResult, LmConfig
from jaxaudit.pipelines.lifecycle import open_run, stored_config
from jaxaudit.report import attacks as report
from jaxaudit.runs import Progress, RunDir, Sweep, run_chunks, stream_key, unit_key

__all__ = ["AttackSweep", "MarginalsConfig", "SecretsConfig", "check_marginals_config",
           "check_secrets_config", "level_name", "run_marginals", "run_secrets"]

# Limits refused before any work.
MAX_REPETITIONS = 1000       # repetitions: one trained model / release per (level, repetition)
MAX_LEVELS = 100             # values in epsilons / rhos
#: finite ρ of ρ-zCDP: beyond these the Gaussian noise scale under- or overflows the
#: attack's score statistics (σ ≈ 1/√(2ρ); inf is still "no noise")
MIN_RHO, MAX_RHO = 1e-8, 1e8
MAX_EPSILON = MAX_DPSGD_EPSILON  # finite epsilons (σ calibration; the bound is 1 long before)
MAX_STEPS = 1_000_000        # steps, pretrain_steps
MAX_LEARNING_RATE = 1.0      # Adam's step; larger ones diverge
MAX_HIDDEN_DIM = 4096        # GRU width
MAX_SECRETS = 100_000        # num_secrets
MAX_RECORDS_PER_USER = 1000  # records_per_user
MAX_RECORD_LENGTH = 512      # record_length (characters per record, BOS and EOS included)
MAX_SCORE_BYTES = 4 * 2**30  # n x K candidate scores of one run, all scorings
SCORE_BYTES_PER_PAIR = 48    # float32 model and reference scores, float64 attack scores, ...
PUBLIC_FILLER = 1000         # filler sentences the public pretraining takes after the private

#: Secret priors of ``SecretsConfig.prior``.
PRIORS = ("digits", "passwords", "names")

MARGINAL_ATTRIBUTES = ("age", "yrs_married", "children", "educ", "religious", "occupation",
                       "rate_marriage")
MARGINAL_HIDDEN = ("religious", "occupation", "rate_marriage")


class SecretsConfig(NamedTuple):
    """Secret extraction from a DP-fine-tuned character LM (``jaxaudit attack secrets``).

    Attributes:
      prior: ``"passwords"`` (Zipf over zxcvbn's ranked list), ``"digits"`` (uniform) or
        ``"names"`` (first names with their SSA frequencies, :func:`jaxaudit.attacks.name_prior`;
        the template is ``"user k's name is X"``).
      digits: length of digit secrets, 1 to 6 (``prior="digits"``).
      candidates: candidates kept, the most likely first: the Zipf support of
        ``prior="passwords"``; with ``prior="names"`` at most the 690 first names.
      epsilons: distinct target ε of DP-SGD under replace-one neighbours, each > 0 and at most
        100 when finite (inf: no noise); at most 100 values.
      lm: the LM recipe (:class:`jaxaudit.attacks.LmConfig`): n users ``num_secrets`` (2 to
        100,000; n × candidates scores ≤ 4 GiB), ``num_filler`` filler records of real text,
        ``record_length`` characters per record with BOS and EOS (filler sentences are wrapped
        to fit; every secret record must fit; at most 512), ``records_per_user`` R (1 to 1000:
        user k's secret record appears R times and the filler is cut into users of R sentences;
        DP-SGD samples users and clips each user's summed gradient, so ε is per user, the unit
        the bound counts, docs/attacks.md), ``hidden_dim`` the GRU width (≤ 4096), DP-SGD's
        ``steps`` T (≤ 10⁶), ``batch_size`` (expected, Poisson), ``clip_norm`` C, the Adam
        ``learning_rate`` in (0, 1] and the target's ``delta`` δ ∈ (0, 1). Default: the
        library's, with 200 steps at learning rate 1e-3.
      guesses: k guesses per secret.
      pretrain_steps: public pretraining steps (0: fine-tune from scratch; ≤ 10⁶).
      scoring: the ranking of the main columns, one of ``jaxaudit.attacks.SCORINGS``; every
        scoring is computed on the same models.
      repetitions: runs per ε (units 0 … repetitions − 1 of ``seed``; ≤ 1000).
      seed: the integer root of the key rule: repetition r uses ``unit_key(key(seed), r)``, the
        public pretraining (one public model for every run) ``stream_key(key(seed), "init")``.
      gamma: level γ ∈ (0, 1) of the count bound.
    """

    prior: str = "passwords"
    digits: int = 4
    candidates: int = 2000
    epsilons: Sequence[float] = (1.0, 4.0, 8.0, math.inf)
    lm: LmConfig = LmConfig(steps=200, learning_rate=1e-3)
    guesses: int = 1
    pretrain_steps: int = 200
    scoring: str = SCORINGS[0]
    repetitions: int = 1
    seed: int = 0
    gamma: float = 0.05

    def check(self) -> SecretsConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_secrets`` and the command call it first."""
        check_secrets_config(self)
        return self


class MarginalsConfig(NamedTuple):
    """Reconstruction of hidden attributes from noisy marginals (``jaxaudit attack marginals``).

    Attributes:
      rhos: distinct ρ of ρ-zCDP, each finite one in [1e-8, 1e8] (inf: no noise); at most
        100 values.
      attributes: released columns of Fair's table (marginals over all ``way``-subsets).
      hidden_attributes: columns to reconstruct (a subset of ``attributes``); memory grows as n × H² with
        H their value combinations, and a run needing more than 2 GiB is refused.
      distance: Hamming distance d of a success (0: exact), below the hidden count.
      way: k of the k-way marginals, at most the attribute count.
      num_targets: n target rows, fewer than the table's rows.
      delta: δ ∈ (0, 1) of the reported (ε, δ) point.
      repetitions: runs per ρ (units 0 … repetitions − 1 of ``seed``; ≤ 1000).
      seed: the integer root of the key rule: repetition r uses ``unit_key(key(seed), r)``.
      gamma: level γ ∈ (0, 1) of the count bound.
    """

    rhos: Sequence[float] = (0.01, 0.1, 1.0, 10.0)
    attributes: Sequence[str] = MARGINAL_ATTRIBUTES
    hidden_attributes: Sequence[str] = MARGINAL_HIDDEN
    distance: int = 0
    way: int = 2
    num_targets: int = 100
    delta: float = 1e-5
    repetitions: int = 1
    seed: int = 0
    gamma: float = 0.05

    def check(self) -> MarginalsConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. ``run_marginals`` and the command call it first."""
        check_marginals_config(self)
        return self


class AttackSweep(NamedTuple):
    """Every run of an attack sweep (R runs, in the order (repetition, level)): the result of
    :func:`run_secrets` and of :func:`run_marginals`.

    Attributes:
      level_name: the name of ``levels`` in the tables: ``"epsilon_target"`` (secrets) or
        ``"rho"`` (marginals).
      levels: (R,) the privacy level (target ε, or ρ) of each run.
      repetition: (R,) int, the repetition r of each run (its key is ``unit_key(key(seed), r)``).
      attack: the :class:`jaxaudit.attacks.AttackResult` of the main attack (for secrets: of the
        main ``scoring``), every field stacked over the runs (leading axis R): ``successes`` are
        MEASURED counts, ``baseline`` the EXPECTED count without the model, ``count_bound`` and
        ``count_bound_approx_dp`` level-γ UPPER BOUNDS v_γ on the count, ``top_bound``/
        ``median_bound`` single-target posterior UPPER BOUNDS; ``epsilon``,
        ``noise_multiplier`` the mechanism's.
      scorings: the scorings computed on every model (secrets; ``"reference"`` only with
        pretraining); ``()`` for marginals.
      scoring_successes: (R, len(scorings)) int, MEASURED successes of each scoring.
      title: the caption of the tables and the figure.
    """

    level_name: str
    levels: jax.Array
    repetition: jax.Array
    attack: AttackResult
    scorings: tuple[str, ...]
    scoring_successes: jax.Array
    title: str


def level_name(value: float) -> str:
    """A chunk-name-safe form of :func:`jaxaudit.report.attacks.level_text`, one-to-one (``.``
    -> ``p``, ``-`` -> ``m``, ``+`` dropped: ``1e+06`` -> ``1e06``, ``1e-05`` -> ``1em05``)."""
    return report.level_text(value).replace(".", "p").replace("-", "m").replace("+", "")


def _check_levels(name: str, values: Any, maximum: float | None = None,
                  minimum: float | None = None) -> list[float]:
    """Privacy levels: a non-empty sequence of distinct numbers > 0 (inf allowed, NaN refused),
    at most :data:`MAX_LEVELS`, finite ones in [``minimum``, ``maximum``]."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a sequence of numbers > 0, got {values!r}")
    try:
        levels = [float(v) for v in values]
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of numbers > 0, got {values!r}") from err
    if not levels:
        raise ValueError(f"{name} must list at least one value")
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"{name}: at most {MAX_LEVELS} values, got {len(levels)}")
    for v in levels:
        if not v > 0:  # also NaN
            raise ValueError(f"{name}: every value must be > 0 (inf: no noise), got {v!r}")
        if maximum is not None and math.isfinite(v) and v > maximum:
            raise ValueError(f"{name}: finite values must be at most {maximum:g} (use inf for "
                             f"no noise), got {v!r}")
        if minimum is not None and v < minimum:
            raise ValueError(f"{name}: every value must be at least {minimum:g}, got {v!r}")
    if len(set(levels)) != len(levels):
        twice = next(v for v in levels if levels.count(v) > 1)
        raise ValueError(f"{name}: {twice!r} is listed twice; give each value once "
                         "(repetitions repeat runs)")
    return levels


def _check_at_most(name: str, value: Any, minimum: int, maximum: int) -> int:
    value = check_integer(name, value, minimum=minimum)
    if value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _check_common(config: SecretsConfig | MarginalsConfig, run_dir: Any, delta: float) -> None:
    if run_dir is not None:
        check_output_dir("run_dir", run_dir)
    check_probability("delta", delta, open_low=True, open_high=True)
    check_probability("gamma", config.gamma, open_low=True, open_high=True)
    _check_at_most("repetitions", config.repetitions, 1, MAX_REPETITIONS)
    check_integer("seed", config.seed, minimum=0)
    check_config_fields(config)  # the other fields' kinds; a nested LmConfig's own check


def check_secrets_config(config: SecretsConfig, run_dir: str | Path | None = None) -> Any:
    """Every check of a :class:`SecretsConfig` (and of the run folder), before anything is
    written or trained, including the noise calibration of every ε (seconds each, cached for
    the runs); returns the secret prior (a :class:`jaxaudit.attacks.SecretPrior`).

    Raises:
      ValueError: naming the config field.
    """
    from jaxaudit.accounting import dpsgd_privacy
    from jaxaudit.attacks import digit_prior, name_prior, password_prior
    from jaxaudit.attacks.corpus import filler_sentences, secret_field, secret_prefix

    check_instance("config", config, SecretsConfig)
    lm = check_instance("lm", config.lm, LmConfig)
    # the recipe's fields by their own names first (the LM's check, nested, then finds them good)
    num_secrets = check_integer("num_secrets", lm.num_secrets, minimum=1)
    if num_secrets < 2:
        raise ValueError("num_secrets must be >= 2: the calibrated scoring compares each user "
                         f"with the others, got {num_secrets}")
    _check_at_most("num_secrets", num_secrets, 2, MAX_SECRETS)
    for name in ("num_filler", "batch_size"):
        check_integer(name, getattr(lm, name), minimum=1)
    _check_at_most("steps", lm.steps, 1, MAX_STEPS)
    _check_at_most("hidden_dim", lm.hidden_dim, 1, MAX_HIDDEN_DIM)
    per_user = _check_at_most("records_per_user", lm.records_per_user, 1,
                              MAX_RECORDS_PER_USER)
    length = _check_at_most("record_length", lm.record_length, 3, MAX_RECORD_LENGTH)
    lr = float(check_positive_finite("learning_rate", lm.learning_rate))
    if lr > MAX_LEARNING_RATE:
        raise ValueError(f"learning_rate must be in (0, {MAX_LEARNING_RATE:g}] (Adam diverges "
                         f"above it), got {lm.learning_rate!r}")
    check_positive_finite("clip_norm", lm.clip_norm)
    _check_common(config, run_dir, lm.delta)
    _check_levels("epsilons", config.epsilons, MAX_EPSILON)
    check_choice("prior", config.prior, PRIORS)
    check_choice("scoring", config.scoring, SCORINGS)
    check_integer("guesses", config.guesses, minimum=1)
    pretrain = _check_at_most("pretrain_steps", config.pretrain_steps, 0, MAX_STEPS)
    if config.scoring == "reference" and not pretrain:
        raise ValueError("scoring 'reference' needs a public pretrained model "
                         "(pretrain_steps > 0)")
    field, value = ("digits", config.digits) if config.prior == "digits" else \
        ("candidates", config.candidates)
    try:
        if config.prior == "digits":
            prior = digit_prior(config.digits)
        elif config.prior == "passwords":
            prior = password_prior(config.candidates)
        else:
            prior = name_prior(config.candidates)
    except ValueError as err:
        raise ValueError(f"{field}={value!r}: {err}") from err
    if config.guesses >= len(prior.candidates):
        raise ValueError(f"guesses must be fewer than the {len(prior.candidates)} candidate "
                         f"secrets (with {config.guesses} guesses every secret is found), got "
                         f"{config.guesses}")
    pairs = num_secrets * len(prior.candidates)
    if pairs * SCORE_BYTES_PER_PAIR > MAX_SCORE_BYTES:
        raise ValueError(
            f"num_secrets {num_secrets} x {len(prior.candidates)} candidate secrets = {pairs} scores "
            f"need about {pairs * SCORE_BYTES_PER_PAIR / 2**30:.1f} GiB (the limit is "
            f"{MAX_SCORE_BYTES / 2**30:g} GiB); lower num_secrets or the candidates")
    # the last private user's id, or the public pretraining's last (ids 10^6 to 10^6 + 499)
    last_user = 10**6 + 499 if pretrain else num_secrets - 1
    longest = (len(secret_prefix(last_user, secret_field(prior)))
               + max(len(c) for c in prior.candidates) + 2)
    if length < longest:
        raise ValueError(f"record_length must be at least {longest} (the longest secret record "
                         f"with BOS and EOS), got {length}")
    available = len(filler_sentences(length - 2)[0]) - (PUBLIC_FILLER if pretrain else 0)
    if lm.num_filler > available:
        public = f", less the {PUBLIC_FILLER} public ones of the pretraining" if pretrain else ""
        raise ValueError(f"num_filler must be at most {available} (the filler sentences "
                         f"available{public}), got {lm.num_filler}")
    # Every ε's noise calibration now, so that an ε no noise reaches is refused before the runs.
    q = min(1.0, lm.batch_size / (num_secrets + -(-lm.num_filler // per_user)))
    for eps in config.epsilons:
        try:
            dpsgd_privacy(epsilon=eps, delta=lm.delta, steps=lm.steps, sampling_rate=q)
        except ValueError as err:
            raise ValueError(f"epsilons={eps:g}: {err}") from err
    return prior


def check_marginals_config(config: MarginalsConfig, run_dir: str | Path | None = None) -> None:
    """Every check of a :class:`MarginalsConfig` (and of the run folder) before any work,
    including the attack's memory (:func:`jaxaudit.attacks.marginals.check_marginals_arguments`).

    Raises:
      ValueError: naming the config field.
    """
    from jaxaudit.attacks import load_fair
    from jaxaudit.attacks.marginals import check_marginals_arguments

    check_instance("config", config, MarginalsConfig)
    _check_common(config, run_dir, config.delta)
    _check_levels("rhos", config.rhos, MAX_RHO, MIN_RHO)
    check_marginals_arguments(load_fair(), attributes=config.attributes,
                              hidden_attributes=config.hidden_attributes,
                              way=config.way, num_targets=config.num_targets,
                              distance=config.distance)


def _sweep(kind: str, config: SecretsConfig | MarginalsConfig, levels: str, prefix: str, run_dir: Any,
           compute: Callable[[float, int, RunDir | None], dict], progress: Progress | None,
           sweep: Sweep) -> tuple[RunDir | None, list[tuple[str, tuple[float, int]]], dict[str, dict]]:
    """Open the run folder (the configuration's fields stored, the levels as text so that inf
    survives strict JSON), compute every missing (level, repetition) chunk and return the
    folder, the plan and the chunks; a failed first chunk leaves the folder reusable."""
    plan = [(f"{prefix}_{level_name(v)}_seed_{r}", (float(v), r))
            for r in range(int(config.repetitions)) for v in getattr(config, levels)]
    where = dict(plan)
    stored = stored_config(config)
    stored[levels] = [str(float(v)) for v in getattr(config, levels)]
    with open_run(run_dir, kind, stored) as run:
        chunks = run_chunks(run, [n for n, _ in plan], lambda n: compute(*where[n], run),
                            progress=progress or False, sweep=sweep)
    return run, plan, chunks


def _stack(chunks: dict[str, dict], plan: list, scorings: tuple[str, ...] = (),
           ) -> tuple[jax.Array, jax.Array, AttackResult, jax.Array]:
    """The finished runs of ``plan`` as arrays over the runs (float64 kept, as in
    :class:`jaxaudit.attacks.AttackResult`): levels, repetitions, the stacked
    ``AttackResult`` and the (R, len(scorings)) successes of each scoring."""
    done = [(n, lv) for n, lv in plan if n in chunks]
    fields: list[np.ndarray] = [
        np.stack([np.asarray(chunks[n][f]) for n, _ in done]) if done else np.zeros((0,))
        for f in AttackResult._fields]
    by_scoring = np.array([[int(chunks[n][f"successes_{sc}"]) for sc in scorings]
                           for n, _ in done], dtype=np.int32).reshape(len(done), len(scorings))
    with jax.enable_x64(True):
        return (jnp.asarray([v for _, (v, _) in done], dtype=jnp.float64),
                jnp.asarray([r for _, (_, r) in done], dtype=jnp.int32),
                AttackResult(*(jnp.asarray(f) for f in fields)), jnp.asarray(by_scoring))


def _pretrained(run: RunDir | None, config: SecretsConfig, prior: Any) -> tuple[Any, Any]:
    """The public pretrained model, trained once per run folder with ``stream_key(key(seed),
    "init")`` and cached there (``pretrained.msgpack`` with a checksum record bound to the run),
    so every run fine-tunes the same one; read back only when that record matches."""
    import flax.serialization

    from jaxaudit.attacks import CharGRU, pretrain_public

    name = "pretrained.msgpack"
    key = stream_key(jax.random.key(config.seed), "init")
    cached = run.load_file(name) if run is not None else None
    if cached is not None:
        model = CharGRU(hidden_dim=config.lm.hidden_dim)
        template = model.init(key, jax.numpy.zeros((1, 8), jax.numpy.int32))
        try:
            return model, flax.serialization.from_bytes(template, cached)
        except (ValueError, KeyError, TypeError):
            pass  # a well-formed checksum over an unreadable model: train it again
    model, params = pretrain_public(key, prior, config.lm, steps=config.pretrain_steps)
    if run is not None:
        run.save_file(name, flax.serialization.to_bytes(params))
    return model, params


def run_secrets(config: SecretsConfig, run_dir: str | Path | None = None, *,
                progress: Progress | None = None, sweep: Sweep = Sweep()) -> AttackSweep:
    """Secret extraction at every ε of ``config``, ``config.repetitions`` times each.

    Run (ε, r): draw n secrets from the prior with ``unit_key(key(seed), r)`` (the same secrets at
    every ε), DP-fine-tune the public pretrained model (σ calibrated so that DP-SGD is (ε, δ)-DP
    under replace-one neighbours), compute every user's candidate log-likelihoods, and count the
    secrets among the top ``guesses`` of each scoring next to the baseline (top-k prior mass)
    and the count bound v_γ from the run's PLD profile.

    Args:
      config: :class:`SecretsConfig`.
      run_dir: run folder (created; resumed when it holds this configuration, refused when it
        holds another); None computes in memory. A finished sweep writes ``table.json``,
        ``summary.md``, ``attack.png``; each chunk holds the run's ``AttackResult`` fields,
        ``successes_<scoring>``/``hits_<scoring>``, the score matrices ``scores`` (n, K),
        ``reference_scores`` (with pretraining), ``secrets`` and ``seconds``.
      progress: a :data:`jaxaudit.runs.Progress` callback ``(done, total)``.
      sweep: where the chunks run (:class:`jaxaudit.runs.Sweep`: ``backend="ray"`` for one Ray
        task per chunk; ``worker=(index, count)`` to compute only this worker's chunks, the
        result then holding the runs finished so far and the summary files written once every
        run is). It does not change the numbers.

    Returns:
      :class:`AttackSweep` (``level_name`` ``"epsilon_target"``).

    Raises:
      ValueError: a bad config field (named) or run folder (``run_dir``), before anything is
        written; a diverged training (the folder is left reusable when no run had finished).

    References:
      Swanberg et al., arXiv 2507.08158 (Fig. 2); Carlini et al., arXiv 1802.08232.
    """
    from jaxaudit.attacks import extraction_result, train_and_score

    prior = check_secrets_config(config, run_dir)
    scorings = tuple(s for s in SCORINGS if config.pretrain_steps or s != "reference")
    pretrained: list = []

    def compute(eps: float, rep: int, run: RunDir | None) -> dict:
        start = time.perf_counter()
        if config.pretrain_steps and not pretrained:
            pretrained.append(_pretrained(run, config, prior))
        scored = train_and_score(unit_key(jax.random.key(config.seed), rep), prior,
                                 config.lm, epsilon=eps,
                                 pretrained=pretrained[0] if pretrained else None)
        main = extraction_result(scored, prior, scoring=config.scoring, guesses=config.guesses,
                                 gamma=config.gamma)
        out = {k: np.asarray(v) for k, v in main._asdict().items()}
        for sc in scorings:
            res = extraction_result(scored, prior, scoring=sc, guesses=config.guesses,
                                    gamma=config.gamma)
            out[f"successes_{sc}"] = np.asarray(res.successes)
            out[f"hits_{sc}"] = np.asarray(res.hits)
        # The adversary's likelihoods, so that other scorings can be evaluated later.
        out["scores"], out["secrets"] = scored.scores, scored.secrets
        if scored.reference is not None:
            out["reference_scores"] = scored.reference
        out["seconds"] = np.asarray(time.perf_counter() - start)
        return out

    run, plan, chunks = _sweep("attack-secrets", config, "epsilons", "eps", run_dir, compute,
                               progress, sweep)
    levels, reps, attack, by_scoring = _stack(chunks, plan, scorings)
    result = AttackSweep(
        "epsilon_target", levels, reps, attack, scorings, by_scoring,
        f"secret extraction ({config.scoring}), {prior.source}; n = {config.lm.num_secrets}, "
        f"k = {config.guesses}")
    if run is not None and len(levels) == len(plan):
        report.write_summary(run, result)
    return result


def run_marginals(config: MarginalsConfig, run_dir: str | Path | None = None, *,
                  progress: Progress | None = None, sweep: Sweep = Sweep()) -> AttackSweep:
    """Reconstruction from noisy marginals at every ρ of ``config``, ``repetitions`` times each.

    Run (ρ, r): with ``unit_key(key(seed), r)`` (the same targets at every ρ) draw the targets,
    release every ``way``-way marginal of ``attributes`` with ρ-zCDP Gaussian noise, and let an
    informed Bayes adversary guess the hidden columns (success within Hamming ``distance``),
    next to the baseline Σ p_i and the count bound v_γ from the μ-GDP profile (μ = √(2ρ)).

    Args:
      config: :class:`MarginalsConfig`.
      run_dir: run folder (created, resumed or refused as in :func:`run_secrets`); None
        computes in memory. A finished sweep writes ``table.json``, ``summary.md``,
        ``attack.png``; each chunk holds the run's ``AttackResult`` fields.
      progress: a :data:`jaxaudit.runs.Progress` callback ``(done, total)``.
      sweep: as in :func:`run_secrets`.

    Returns:
      :class:`AttackSweep` (``level_name`` ``"rho"``, no scorings).

    Raises:
      ValueError: a bad config field (named) or run folder (``run_dir``), before any work.

    References:
      Swanberg et al., arXiv 2507.08158 (Appendix E).
    """
    from jaxaudit.attacks import marginals_reconstruction

    check_marginals_config(config, run_dir)

    def compute(rho: float, rep: int, run: RunDir | None) -> dict:
        result = marginals_reconstruction(
            unit_key(jax.random.key(config.seed), rep), rho=rho, attributes=list(config.attributes),
            hidden_attributes=list(config.hidden_attributes), distance=config.distance, way=config.way,
            num_targets=config.num_targets, delta=config.delta, gamma=config.gamma)
        return {k: np.asarray(v) for k, v in result._asdict().items()}

    run, plan, chunks = _sweep("attack-marginals", config, "rhos", "rho", run_dir, compute,
                               progress, sweep)
    levels, reps, attack, by_scoring = _stack(chunks, plan)
    result = AttackSweep(
        "rho", levels, reps, attack, (), by_scoring,
        f"marginals reconstruction (Fair), {config.way}-way, hidden "
        f"{','.join(config.hidden_attributes)}, Hamming ≤ {config.distance}; n = {config.num_targets}")
    if run is not None and len(levels) == len(plan):
        report.write_summary(run, result)
    return result
