"""``jaxaudit attack``: concrete attacks on DP mechanisms next to the adversary-aware bound.

Examples::

    jaxaudit attack secrets --prior passwords --epsilons 1,4,8,inf --num-secrets 100 \\
        --guesses 1 --out runs/secrets_pw/
    jaxaudit attack marginals --rhos 0.01,0.1,1,10 --distance 1 --seeds 5 --out runs/marg/

Each (privacy level, seed) is one chunk of a resumable run folder; the folder gets
``table.json`` (one row per run: ε, measured successes, baseline Σ p_i, bound v_γ, ...),
``summary.md`` and ``attack.png`` (successes, baseline and bound over ε), which
``jaxaudit report DIR`` renders. Measured successes are measurements; baselines are expected
values; bounds are level-γ upper bounds.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from jaxaudit.cli._types import as_flags as _flags
from jaxaudit.cli._types import count, nonnegative_int, positive

_MARGINAL_ATTRIBUTES = "age,yrs_married,children,educ,religious,occupation,rate_marriage"
_MARGINAL_HIDDEN = "religious,occupation,rate_marriage"
# The LM attack's scorings (jaxaudit.attacks.SCORINGS, repeated here so that --help does not
# import JAX; a test checks they agree).
SCORINGS = ("calibrated", "likelihood", "prior", "reference")


# Limits refused before any work (each flag's --help says its own).
MAX_SEEDS = 1000            # --seeds: one trained model / release per (level, seed)
MAX_LEVELS = 100            # values in --epsilons / --rhos
MAX_EPSILON = 100.0         # finite --epsilons (jaxaudit.attacks.privacy.MAX_DPSGD_EPSILON)
MAX_STEPS = 1_000_000       # --steps, --pretrain-steps
MAX_LEARNING_RATE = 1.0     # --learning-rate (Adam's step; larger ones diverge)
MAX_HIDDEN = 4096           # --hidden (GRU width)
MAX_SECRETS = 100_000       # --num-secrets
MAX_SCORE_BYTES = 4 * 2**30  # n x K candidate scores of one run, all scorings
_SCORE_BYTES_PER_PAIR = 48  # float32 model and reference scores, float64 attack scores, ...
MARGINALS_MAX_GIB = 2       # jaxaudit.attacks.marginals.MAX_MEMORY_BYTES (checked by a test)


def _levels(text: str) -> list[float]:
    """Comma-separated privacy levels > 0, distinct, inf allowed (no noise); NaN, empty items
    and repeats refused (a repeated level would be one run reported twice)."""
    items = [v.strip() for v in text.split(",")]
    if not text.strip() or any(not v for v in items):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers > 0 without empty "
                                         f"items, got {text!r}")
    try:
        values = [float(v) for v in items]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from err
    for v in values:
        if not v > 0:  # also NaN
            raise argparse.ArgumentTypeError(f"every value must be > 0 (inf: no noise), got {v!r}")
    seen = set()
    for v in values:
        if v in seen:
            raise argparse.ArgumentTypeError(f"{v!r} is listed twice in {text!r}; give each value "
                                             "once (--seeds repeats runs)")
        seen.add(v)
    if len(values) > MAX_LEVELS:
        raise argparse.ArgumentTypeError(f"at most {MAX_LEVELS} values, got {len(values)}")
    return values


def _bounded(kind, limit: int):
    """``kind`` (an argparse type) with an upper limit."""
    def parse(text: str):
        value = kind(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"at most {limit}, got {value}")
        return value
    return parse


def _learning_rate(text: str) -> float:
    value = positive(text)
    if value > MAX_LEARNING_RATE:
        raise argparse.ArgumentTypeError(f"expected a step size in (0, {MAX_LEARNING_RATE:g}] "
                                         f"(Adam diverges with larger ones), got {text!r}")
    return value


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "attack",
        help="concrete attacks (secret extraction, marginals reconstruction) vs the bound",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="attack", metavar="ATTACK", required=True)

    s = sub.add_parser("secrets", help="extract secrets from a DP-fine-tuned character LM")
    s.add_argument("--prior", choices=("digits", "passwords"), default="passwords",
                   help="secret prior: uniform digit strings or Zipf over zxcvbn's passwords")
    s.add_argument("--digits", type=count, default=4, help="length of digit secrets, 1 to 6")
    s.add_argument("--candidates", type=count, default=2000,
                   help="password candidates kept (Zipf support)")
    s.add_argument("--epsilons", type=_levels, default=[1.0, 4.0, 8.0, math.inf],
                   help=f"comma-separated distinct ε values, each > 0 and at most "
                        f"{MAX_EPSILON:g} (finite) or inf = no noise; at most {MAX_LEVELS} "
                        "values (default: 1,4,8,inf)")
    s.add_argument("--delta", type=float, default=1e-5, help="δ of the (ε, δ) target, in (0, 1)")
    s.add_argument("--num-secrets", type=_bounded(count, MAX_SECRETS), default=100,
                   help=f"n users, one secret each, 2 to {MAX_SECRETS} (and n x candidates "
                        f"at most {MAX_SCORE_BYTES // _SCORE_BYTES_PER_PAIR:,}: "
                        f"{MAX_SCORE_BYTES / 2**30:g} GiB of scores)")
    s.add_argument("--guesses", type=count, default=1, help="guesses per secret k")
    s.add_argument("--num-filler", type=count, default=1000,
                   help="filler records (real text; at most the sentences available, less 1000 "
                        "public ones when pretraining)")
    s.add_argument("--steps", type=_bounded(count, MAX_STEPS), default=200,
                   help=f"DP-SGD steps, at most {MAX_STEPS}")
    s.add_argument("--batch-size", type=count, default=64, help="expected Poisson batch size")
    s.add_argument("--clip", type=positive, default=1.0, help="per-example clipping norm C")
    s.add_argument("--learning-rate", type=_learning_rate, default=1e-3,
                   help=f"fine-tuning Adam step, in (0, {MAX_LEARNING_RATE:g}]")
    s.add_argument("--pretrain-steps", type=_bounded(nonnegative_int, MAX_STEPS), default=200,
                   help=f"public pretraining steps, at most {MAX_STEPS} (0: train from scratch)")
    s.add_argument("--hidden", type=_bounded(count, MAX_HIDDEN), default=96,
                   help=f"GRU width, at most {MAX_HIDDEN}")
    s.add_argument("--pretrain-seed", type=nonnegative_int, default=0,
                   help="seed of the public pretraining (one public model for every run)")
    s.add_argument("--scoring", choices=SCORINGS, default=SCORINGS[0],
                   help="ranking of the main table: prior x user-calibrated likelihood ratio "
                        "(calibrated), prior x ratio to the public model (reference), model "
                        "likelihood (likelihood) or prior only (prior); every scoring is "
                        "computed on the same models and stored")
    s.add_argument("--seeds", type=_bounded(count, MAX_SEEDS), default=1,
                   help=f"repetitions per ε, at most {MAX_SEEDS}")
    s.add_argument("--gamma", type=float, default=0.05,
                   help="level γ of the count bound, in (0, 1)")
    s.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=run_secrets)

    m = sub.add_parser("marginals", help="reconstruct hidden attributes from noisy marginals")
    m.add_argument("--rhos", type=_levels, default=[0.01, 0.1, 1.0, 10.0],
                   help=f"comma-separated distinct ρ values of ρ-zCDP, each > 0 (inf: no "
                        f"noise); at most {MAX_LEVELS} values (default: 0.01,0.1,1,10)")
    m.add_argument("--attributes", default=_MARGINAL_ATTRIBUTES,
                   help=f"released attributes (default: {_MARGINAL_ATTRIBUTES})")
    m.add_argument("--hidden", default=_MARGINAL_HIDDEN,
                   help=f"attributes to reconstruct; the attack's memory grows as n x H^2 "
                        f"with H the number of their value combinations, and a run needing "
                        f"more than {MARGINALS_MAX_GIB:g} GiB is refused (4 hidden attributes "
                        f"of Fair at n = 100 fit, 5 do not) (default: {_MARGINAL_HIDDEN})")
    m.add_argument("--distance", type=nonnegative_int, default=0,
                   help="Hamming distance d of a success (0: exact), below the hidden count")
    m.add_argument("--way", type=count, default=2,
                   help="k of the k-way marginals, at most the attribute count")
    m.add_argument("--num-targets", type=count, default=100,
                   help="n target rows, fewer than the table's rows")
    m.add_argument("--delta", type=float, default=1e-5,
                   help="δ of the reported (ε, δ) point, in (0, 1)")
    m.add_argument("--seeds", type=_bounded(count, MAX_SEEDS), default=1,
                   help=f"repetitions per ρ, at most {MAX_SEEDS}")
    m.add_argument("--gamma", type=float, default=0.05,
                   help="level γ of the count bound, in (0, 1)")
    m.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.set_defaults(func=run_marginals)


_SCALARS = ("successes", "bound", "baseline", "epsilon", "delta", "gamma", "bound_eps_delta",
            "top_prior", "top_bound", "median_prior", "median_bound", "noise")


def _arrays(result) -> dict:
    import numpy as np

    return {k: np.asarray(v) for k, v in result._asdict().items()}


def _finish(rundir, rows: list[dict], level_name: str, title: str,
            scorings: tuple = ()) -> None:
    """table.json, summary.md and attack.png of a finished run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rundir.write_json("table.json", rows)
    levels = sorted({r[level_name] for r in rows})
    lines = [f"# {title}", "",
             "successes: measured; baseline: expected Σ p_i without the mechanism's output; "
             "bound: level-γ count bound v_γ (n + 1 = vacuous).", "",
             f"| {level_name} | ε | runs | successes (mean) | max | baseline | bound v_γ | "
             "runs ≥ v_γ |", "|---|---|---|---|---|---|---|---|"]
    agg = []
    for lv in levels:
        sel = [r for r in rows if r[level_name] == lv]
        succ = np.array([r["successes"] for r in sel])
        bound = min(r["bound"] for r in sel)
        exceed = int(sum(r["successes"] >= r["bound"] for r in sel))
        agg.append((lv, sel[0]["epsilon"], succ.mean(), sel[0]["baseline"], bound))
        lines.append(f"| {_level_text(lv)} | {sel[0]['epsilon']:.3g} | {len(sel)} | {succ.mean():.2f} | "
                     f"{succ.max()} | {np.mean([r['baseline'] for r in sel]):.2f} | {bound} | "
                     f"{exceed} |")
    if scorings:
        lines += ["", "Every scoring on the same trained models (successes mean / max over "
                  "seeds; runs ≥ v_γ):", "",
                  f"| {level_name} | " + " | ".join(scorings) + " |",
                  "|---|" + "---|" * len(scorings)]
        for lv in levels:
            sel = [r for r in rows if r[level_name] == lv]
            cells = []
            for sc in scorings:
                got = [r[f"successes_{sc}"] for r in sel if f"successes_{sc}" in r]
                over = sum(r[f"successes_{sc}"] >= r["bound"] for r in sel
                           if f"successes_{sc}" in r)
                cells.append(f"{np.mean(got):.2f} / {max(got)} ({over})" if got else "—")
            lines.append(f"| {_level_text(lv)} | " + " | ".join(cells) + " |")
    rundir.write_text("summary.md", "\n".join(lines) + "\n")
    finite = [a for a in agg if math.isfinite(a[1])]
    if finite:
        eps, succ, base, bound = (np.array(v, dtype=float) for v in zip(*[a[1:] for a in finite]))
        n = rows[0]["num_targets"]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(eps, np.minimum(bound, n), "o-", label="bound v_γ (upper bound)")
        ax.plot(eps, succ, "s-", label="attack successes (measured, mean)")
        ax.plot(eps, base, "^--", label="baseline Σ p_i (expected)")
        ax.axhline(n, color="gray", ls=":", lw=1, label=f"n = {n}")
        ax.set_xscale("log")
        ax.set_xlabel("ε (at δ)")
        ax.set_ylabel("targets attacked")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(rundir.path / "attack.png", dpi=120)
        plt.close(fig)
    print("\n".join(lines[4:]))
    print(f"wrote {rundir.path}")


def _rows(results: dict, names_levels: list, level_name: str) -> list[dict]:
    rows = []
    for name, (level, seed) in names_levels:
        r = results[name]
        row = {level_name: level, "seed": seed, "num_targets": int(r["hits"].size)}
        for k in _SCALARS:
            v = r[k].item()
            row[k] = int(v) if k in ("successes", "bound", "bound_eps_delta") else float(v)
        for k in sorted(r):
            if k.startswith("successes_"):
                row[k] = int(r[k].item())
        rows.append(row)
    return rows


def _level_text(value: float) -> str:
    """``value`` as short as it stays exact: ``%g`` when that reads back as the same float
    (``2``, ``0.1``, ``1e+06``), else ``repr`` (``2.0000001``), so distinct values never share a
    text."""
    if math.isinf(value):
        return "inf"
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


def _level_name(value: float) -> str:
    """A chunk-name-safe form of :func:`_level_text`, one-to-one (``.`` -> ``p``, ``-`` ->
    ``m``, ``+`` dropped: ``1e+06`` -> ``1e06``, ``1e-05`` -> ``1em05``)."""
    return _level_text(value).replace(".", "p").replace("-", "m").replace("+", "")


def _load_pretrained(rundir, args, prior):
    """The public pretrained model, trained once per run folder with ``--pretrain-seed`` and
    cached there (``pretrained_seed_S.msgpack`` with a checksum record bound to the run), so every
    (ε, seed) fine-tunes the same one."""
    import flax.serialization
    import jax

    from jaxaudit.attacks import CharGRU, pretrain_public

    name = f"pretrained_seed_{args.pretrain_seed}.msgpack"
    key = jax.random.fold_in(jax.random.key(args.pretrain_seed), 10**6)
    # read back only when its run-bound checksum matches (absent, corrupt or copied from another
    # run: trained again)
    cached = rundir.load_file(name)
    if cached is not None:
        model = CharGRU(hidden_dim=args.hidden)
        template = model.init(key, jax.numpy.zeros((1, 8), jax.numpy.int32))
        try:
            return model, flax.serialization.from_bytes(template, cached)
        except (ValueError, KeyError, TypeError):
            pass  # a well-formed checksum over an unreadable model: train it again
    model, params = pretrain_public(key, prior, num_filler=args.num_filler,
                                    steps=args.pretrain_steps, batch_size=args.batch_size,
                                    hidden_dim=args.hidden)
    rundir.save_file(name, flax.serialization.to_bytes(params))
    return model, params


_SECRETS_FLAGS = dict(
    num_secrets="--num-secrets", num_filler="--num-filler", steps="--steps",
    batch_size="--batch-size", clip_norm="--clip", learning_rate="--learning-rate",
    hidden_dim="--hidden", guesses="--guesses", gamma="--gamma", delta="--delta",
    epsilon="--epsilons", length="--digits", size="--candidates")


def _check_common(args, level_flag: str) -> None:
    """--out, --delta, --gamma and the levels: refused before any work."""
    from jaxaudit._validation import check_output_dir, check_probability

    check_output_dir("--out", args.out)
    check_probability("--delta", args.delta, open_low=True, open_high=True)
    check_probability("--gamma", args.gamma, open_low=True, open_high=True)
    levels = getattr(args, level_flag.lstrip("-"))
    if not levels:
        raise ValueError(f"{level_flag} must list at least one value")


def _check_secrets(args):
    """Every argument of ``attack secrets``, before the run folder is written or anything is
    trained; returns the secret prior."""
    from jaxaudit.attacks import digit_prior, dpsgd_privacy, password_prior
    from jaxaudit.attacks.corpus import filler_sentences

    _check_common(args, "--epsilons")
    too_big = [e for e in args.epsilons if math.isfinite(e) and e > MAX_EPSILON]
    if too_big:
        raise ValueError(f"--epsilons: finite values must be at most {MAX_EPSILON:g} (use inf "
                         f"for no noise), got {too_big[0]!r}")
    if args.num_secrets < 2:
        raise ValueError("--num-secrets must be >= 2: the calibrated scoring compares each "
                         f"user with the others, got {args.num_secrets}")
    if args.scoring == "reference" and not args.pretrain_steps:
        raise ValueError("--scoring reference needs a public pretrained model "
                         "(--pretrain-steps > 0)")
    with _flags(**_SECRETS_FLAGS):
        prior = (digit_prior(args.digits) if args.prior == "digits"
                 else password_prior(args.candidates))
    pairs = args.num_secrets * len(prior.candidates)
    if pairs * _SCORE_BYTES_PER_PAIR > MAX_SCORE_BYTES:
        raise ValueError(
            f"--num-secrets {args.num_secrets} x {len(prior.candidates)} candidates = {pairs} "
            f"scores need about {pairs * _SCORE_BYTES_PER_PAIR / 2**30:.1f} GiB (the limit is "
            f"{MAX_SCORE_BYTES / 2**30:g} GiB); lower --num-secrets or the candidates")
    available = len(filler_sentences()[0])
    public = ", less the 1000 public ones of the pretraining" if args.pretrain_steps else ""
    if args.pretrain_steps:
        available -= 1000  # pretrain_public's public filler follows the private one
    if args.num_filler > available:
        raise ValueError(f"--num-filler must be at most {available} (the filler sentences "
                         f"available{public}), got {args.num_filler}")
    # The noise calibration of every ε (seconds each, cached for the runs), so that an ε that
    # no noise reaches is refused now and not after the first runs.
    q = min(1.0, args.batch_size / (args.num_secrets + args.num_filler))
    with _flags(**_SECRETS_FLAGS):
        for eps in args.epsilons:
            dpsgd_privacy(epsilon=eps, delta=args.delta, steps=args.steps, sampling_rate=q)
    return prior


def run_secrets(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from jaxaudit.attacks import extraction_result, train_and_score
    from jaxaudit.runs import RunDir, run_chunks

    prior = _check_secrets(args)
    config = {k: v for k, v in vars(args).items() if k not in ("func", "out", "quiet")}
    config["epsilons"] = [str(e) for e in args.epsilons]
    existed, had_folder = (Path(args.out) / "manifest.json").exists(), Path(args.out).exists()
    rundir = RunDir.open(args.out, kind="attack-secrets", config=config)
    plan = [(f"eps_{_level_name(e)}_seed_{s}", (e, s)) for s in range(args.seeds)
            for e in args.epsilons]
    scorings = SCORINGS if args.pretrain_steps else tuple(s for s in SCORINGS
                                                          if s != "reference")
    pretrained = []

    def compute(name):
        eps, seed = dict(plan)[name]
        start = time.perf_counter()
        if args.pretrain_steps and not pretrained:
            pretrained.append(_load_pretrained(rundir, args, prior))
        with _flags(**_SECRETS_FLAGS):
            scored = train_and_score(
                jax.random.key(seed), prior=prior, num_secrets=args.num_secrets, epsilon=eps,
                delta=args.delta, num_filler=args.num_filler, steps=args.steps,
                batch_size=args.batch_size, clip_norm=args.clip,
                learning_rate=args.learning_rate,
                pretrained=pretrained[0] if pretrained else None, hidden_dim=args.hidden)
        out = _arrays(extraction_result(scored, prior, scoring=args.scoring,
                                        guesses=args.guesses, gamma=args.gamma))
        for sc in scorings:
            res = extraction_result(scored, prior, scoring=sc, guesses=args.guesses,
                                    gamma=args.gamma)
            out[f"successes_{sc}"] = np.asarray(res.successes)
            out[f"hits_{sc}"] = np.asarray(res.hits)
        # The adversary's likelihoods, so that other scorings can be evaluated later.
        out["scores"], out["secrets"] = scored.scores, scored.secrets
        if scored.reference is not None:
            out["reference_scores"] = scored.reference
        out["seconds"] = np.asarray(time.perf_counter() - start)
        return out

    try:
        results = run_chunks(rundir, [n for n, _ in plan], compute, progress=not args.quiet,
                             desc="attack secrets")
    except ValueError:  # a diverged training: let the corrected command reuse --out
        from jaxaudit.runs.rundir import discard_new_run

        discard_new_run(rundir.path, existed, keep_folder=had_folder)
        raise
    rows = _rows(results, plan, "epsilon_target")
    _finish(rundir, rows, "epsilon_target",
            f"secret extraction ({args.scoring}), {prior.source}; n = {args.num_secrets}, "
            f"k = {args.guesses}", scorings=scorings)
    return 0


_MARGINALS_FLAGS = dict(
    attributes="--attributes", hidden="--hidden", way="--way", num_targets="--num-targets",
    distance="--distance", rho="--rhos", delta="--delta", gamma="--gamma")


def run_marginals(args: argparse.Namespace) -> int:
    import jax

    from jaxaudit.attacks import load_fair, marginals_reconstruction
    from jaxaudit.attacks.marginals import check_marginals_arguments
    from jaxaudit.runs import RunDir, run_chunks

    _check_common(args, "--rhos")
    args.attributes, args.hidden = _names(args.attributes), _names(args.hidden)
    with _flags(**_MARGINALS_FLAGS):
        check_marginals_arguments(load_fair(), attributes=args.attributes, hidden=args.hidden,
                                  way=args.way, num_targets=args.num_targets,
                                  distance=args.distance)
    config = {k: v for k, v in vars(args).items() if k not in ("func", "out", "quiet")}
    config["rhos"] = [str(r) for r in args.rhos]
    rundir = RunDir.open(args.out, kind="attack-marginals", config=config)
    plan = [(f"rho_{_level_name(r)}_seed_{s}", (r, s)) for s in range(args.seeds)
            for r in args.rhos]

    def compute(name):
        rho, seed = dict(plan)[name]
        with _flags(**_MARGINALS_FLAGS):
            result = marginals_reconstruction(
                jax.random.key(seed), rho=rho, attributes=args.attributes, hidden=args.hidden,
                distance=args.distance, way=args.way, num_targets=args.num_targets,
                delta=args.delta, gamma=args.gamma)
        return _arrays(result)

    results = run_chunks(rundir, [n for n, _ in plan], compute, progress=not args.quiet,
                         desc="attack marginals")
    rows = _rows(results, plan, "rho")
    _finish(rundir, rows, "rho",
            f"marginals reconstruction (Fair), {args.way}-way, hidden {','.join(args.hidden)}, "
            f"Hamming ≤ {args.distance}; n = {args.num_targets}")
    return 0
