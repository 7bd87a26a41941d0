"""``jaxaudit attack``: concrete attacks on DP mechanisms next to the adversary-aware bound.

Examples::

    jaxaudit attack secrets --prior passwords --epsilons 1,4,8,inf --num-secrets 100 \\
        --guesses 1 --out runs/secrets_pw/
    jaxaudit attack marginals --rhos 0.01,0.1,1,10 --distance 1 --seeds 5 --out runs/marg/

Each (privacy level, repetition) is one chunk of a resumable run folder; the folder gets
``table.json`` (one row per run: ε, measured successes, baseline Σ p_i, bound v_γ, ...),
``summary.md`` and ``attack.png`` (successes, baseline and bound over ε), which
``jaxaudit report DIR`` renders. Measured successes are measurements; baselines are expected
values; bounds are level-γ upper bounds. The sweeps are :func:`jaxaudit.pipelines.run_secrets`
and :func:`jaxaudit.pipelines.run_marginals`; this module parses, calls one and prints.
"""

from __future__ import annotations

import argparse
import math

from jaxaudit.cli._types import (
    add_sweep_options,
    as_flags,
    count,
    filled,
    nonnegative_int,
    positive,
    sweep_of,
)

# The library's names and limits (jaxaudit.attacks.SCORINGS, jaxaudit.pipelines.attacks.MAX_*),
# repeated here so that --help does not import JAX; tests/cli/test_attack_cli.py checks them.
SCORINGS = ("calibrated", "likelihood", "prior", "reference")
MARGINAL_ATTRIBUTES = "age,yrs_married,children,educ,religious,occupation,rate_marriage"
MARGINAL_HIDDEN = "religious,occupation,rate_marriage"
_COMMON_FLAGS = dict(run_dir="--out", repetitions="--seeds", seed="--seed", delta="--delta",
                     gamma="--gamma")
SECRETS_FLAGS = dict(
    _COMMON_FLAGS, epsilons="--epsilons", digits="--digits", candidates="--candidates",
    num_secrets="--num-secrets", guesses="--guesses", num_filler="--num-filler", steps="--steps",
    batch_size="--batch-size", clip_norm="--clip", learning_rate="--learning-rate",
    pretrain_steps="--pretrain-steps", hidden_dim="--hidden",
    records_per_user="--records-per-user", record_length="--record-length")
MARGINALS_FLAGS = dict(
    _COMMON_FLAGS, rhos="--rhos", attributes="--attributes", hidden_attributes="--hidden",
    way="--way", num_targets="--num-targets", distance="--distance")


def _levels(text: str) -> list[float]:
    """Comma-separated numbers without empty items (their range is the pipeline's check)."""
    items = [v.strip() for v in text.split(",")]
    if any(not v for v in items):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers > 0 without empty items, got {text!r}")
    try:
        return [float(v) for v in items]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from err


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _common(p: argparse.ArgumentParser, level: str) -> None:
    p.add_argument("--seeds", dest="repetitions", type=count, default=1, help=f"repetitions per {level}, at most 1000 (repetition r uses the key unit_key(seed, r) at every {level})")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="root seed of the sweep")
    p.add_argument("--gamma", type=float, default=0.05, help="level γ of the count bound, in (0, 1)")
    p.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_sweep_options(p)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("attack", help="concrete attacks (secret extraction, marginals reconstruction) vs the bound", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="attack", metavar="ATTACK", required=True)

    s = sub.add_parser("secrets", help="extract secrets from a DP-fine-tuned character LM")
    s.add_argument("--prior", choices=("digits", "passwords", "names"), default="passwords", help="secret prior: uniform digit strings, Zipf over zxcvbn's passwords, or first names with SSA frequencies")
    s.add_argument("--digits", type=count, default=4, help="length of digit secrets, 1 to 6")
    s.add_argument("--candidates", type=count, default=2000, help="candidates kept, most likely first (passwords: Zipf support; names: at most 690)")
    s.add_argument("--epsilons", type=_levels, default=[1.0, 4.0, 8.0, math.inf], help="comma-separated distinct ε values, each > 0 and at most 100 (finite) or inf = no noise; at most 100 values (default: 1,4,8,inf)")
    s.add_argument("--delta", type=float, default=1e-5, help="δ of the (ε, δ) target, in (0, 1)")
    s.add_argument("--num-secrets", type=count, default=100, help="n users, one secret each, 2 to 100000 (and n x candidates at most 89,478,485: 4 GiB of scores)")
    s.add_argument("--guesses", type=count, default=1, help="guesses per secret k")
    s.add_argument("--num-filler", type=count, default=1000, help="filler records (real text; at most the sentences available, less 1000 public ones when pretraining)")
    s.add_argument("--steps", type=count, default=200, help="DP-SGD steps, at most 1000000")
    s.add_argument("--batch-size", type=count, default=64, help="expected Poisson batch size")
    s.add_argument("--clip", dest="clip_norm", type=positive, default=1.0, help="per-example clipping norm C")
    s.add_argument("--learning-rate", type=positive, default=1e-3, help="fine-tuning Adam step, in (0, 1]")
    s.add_argument("--pretrain-steps", type=nonnegative_int, default=200, help="public pretraining steps, at most 1000000 (0: train from scratch)")
    s.add_argument("--hidden", dest="hidden_dim", type=count, default=96, help="GRU width, at most 4096")
    s.add_argument("--records-per-user", type=count, default=1, help="R records per user, 1 to 1000: the secret appears R times, DP-SGD samples users and clips each user's summed gradient (ε per user)")
    s.add_argument("--record-length", type=count, default=64, help="characters per record with BOS/EOS, at most 512 (must fit the longest secret record)")
    s.add_argument("--scoring", choices=SCORINGS, default=SCORINGS[0], help="ranking of the main table: prior x user-calibrated likelihood ratio (calibrated), prior x ratio to the public model (reference), model likelihood (likelihood) or prior only (prior); every scoring is computed on the same models and stored")
    _common(s, "ε")
    s.set_defaults(func=run_secrets)

    m = sub.add_parser("marginals", help="reconstruct hidden attributes from noisy marginals")
    m.add_argument("--rhos", type=_levels, default=[0.01, 0.1, 1.0, 10.0], help="comma-separated distinct ρ values of ρ-zCDP, each finite one in [1e-8, 1e8] (inf: no noise); at most 100 values (default: 0.01,0.1,1,10)")
    m.add_argument("--attributes", type=_names, default=MARGINAL_ATTRIBUTES, help=f"released attributes (default: {MARGINAL_ATTRIBUTES})")
    m.add_argument("--hidden", dest="hidden_attributes", type=_names, default=MARGINAL_HIDDEN, help=f"attributes to reconstruct; the attack's memory grows as n x H^2 with H the number of their value combinations, and a run needing more than 2 GiB is refused (4 hidden attributes of Fair at n = 100 fit, 5 do not) (default: {MARGINAL_HIDDEN})")
    m.add_argument("--distance", type=nonnegative_int, default=0, help="Hamming distance d of a success (0: exact), below the hidden count")
    m.add_argument("--way", type=count, default=2, help="k of the k-way marginals, at most the attribute count")
    m.add_argument("--num-targets", type=count, default=100, help="n target rows, fewer than the table's rows")
    m.add_argument("--delta", type=float, default=1e-5, help="δ of the reported (ε, δ) point, in (0, 1)")
    _common(m, "ρ")
    m.set_defaults(func=run_marginals)


def _run(args: argparse.Namespace, config_type: str, run_name: str, flags: dict) -> int:
    from jaxaudit.pipelines import attacks as pipeline
    from jaxaudit.report import attacks as report
    from jaxaudit.runs import ProgressBar

    config = filled(getattr(pipeline, config_type)(), vars(args))  # SecretsConfig.lm's fields too
    with as_flags(**flags), ProgressBar(f"attack {args.attack}", enabled=not args.quiet) as bar:
        result = getattr(pipeline, run_name)(config, args.out, progress=bar, sweep=sweep_of(args))
    print(report.text_table(result))
    print(f"wrote {args.out}")
    return 0


def run_secrets(args: argparse.Namespace) -> int:
    return _run(args, "SecretsConfig", "run_secrets", SECRETS_FLAGS)


def run_marginals(args: argparse.Namespace) -> int:
    return _run(args, "MarginalsConfig", "run_marginals", MARGINALS_FLAGS)
