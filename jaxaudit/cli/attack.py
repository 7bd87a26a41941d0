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

_MARGINAL_ATTRIBUTES = "age,yrs_married,children,educ,religious,occupation,rate_marriage"
_MARGINAL_HIDDEN = "religious,occupation,rate_marriage"
# The LM attack's scorings (jaxaudit.attacks.SCORINGS, repeated here so that --help does not
# import JAX; a test checks they agree).
SCORINGS = ("calibrated", "likelihood", "prior", "reference")


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from err


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
    s.add_argument("--digits", type=int, default=4, help="length of digit secrets")
    s.add_argument("--candidates", type=int, default=2000,
                   help="password candidates kept (Zipf support)")
    s.add_argument("--epsilons", type=_floats, default=[1.0, 4.0, 8.0, math.inf],
                   help="comma-separated ε values, inf = no noise (default: 1,4,8,inf)")
    s.add_argument("--delta", type=float, default=1e-5, help="δ of the (ε, δ) target")
    s.add_argument("--num-secrets", type=int, default=100, help="n users, one secret each")
    s.add_argument("--guesses", type=int, default=1, help="guesses per secret k")
    s.add_argument("--num-filler", type=int, default=1000, help="filler records (real text)")
    s.add_argument("--steps", type=int, default=200, help="DP-SGD steps")
    s.add_argument("--batch-size", type=int, default=64, help="expected Poisson batch size")
    s.add_argument("--clip", type=float, default=1.0, help="per-example clipping norm C")
    s.add_argument("--learning-rate", type=float, default=1e-3, help="fine-tuning Adam step")
    s.add_argument("--pretrain-steps", type=int, default=200,
                   help="public pretraining steps (0: train from scratch)")
    s.add_argument("--hidden", type=int, default=96, help="GRU width")
    s.add_argument("--pretrain-seed", type=int, default=0,
                   help="seed of the public pretraining (one public model for every run)")
    s.add_argument("--scoring", choices=SCORINGS, default=SCORINGS[0],
                   help="ranking of the main table: prior x user-calibrated likelihood ratio "
                        "(calibrated), prior x ratio to the public model (reference), model "
                        "likelihood (likelihood) or prior only (prior); every scoring is "
                        "computed on the same models and stored")
    s.add_argument("--seeds", type=int, default=1, help="repetitions per ε")
    s.add_argument("--gamma", type=float, default=0.05, help="level γ of the count bound")
    s.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=run_secrets)

    m = sub.add_parser("marginals", help="reconstruct hidden attributes from noisy marginals")
    m.add_argument("--rhos", type=_floats, default=[0.01, 0.1, 1.0, 10.0],
                   help="comma-separated ρ values of ρ-zCDP (default: 0.01,0.1,1,10)")
    m.add_argument("--attributes", default=_MARGINAL_ATTRIBUTES,
                   help=f"released attributes (default: {_MARGINAL_ATTRIBUTES})")
    m.add_argument("--hidden", default=_MARGINAL_HIDDEN,
                   help=f"attributes to reconstruct (default: {_MARGINAL_HIDDEN})")
    m.add_argument("--distance", type=int, default=0,
                   help="Hamming distance d of a success (0: exact)")
    m.add_argument("--way", type=int, default=2, help="k of the k-way marginals")
    m.add_argument("--num-targets", type=int, default=100, help="n target rows")
    m.add_argument("--delta", type=float, default=1e-5, help="δ of the reported (ε, δ) point")
    m.add_argument("--seeds", type=int, default=1, help="repetitions per ρ")
    m.add_argument("--gamma", type=float, default=0.05, help="level γ of the count bound")
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
        lines.append(f"| {lv:g} | {sel[0]['epsilon']:.3g} | {len(sel)} | {succ.mean():.2f} | "
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
            lines.append(f"| {lv:g} | " + " | ".join(cells) + " |")
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


def _level_name(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:g}".replace(".", "p").replace("-", "m")


def _load_pretrained(rundir, args, prior):
    """The public pretrained model, trained once per run folder with ``--pretrain-seed`` and
    cached there (``pretrained_seed_S.msgpack``), so every (ε, seed) fine-tunes the same one."""
    import flax.serialization
    import jax

    from jaxaudit.attacks import CharGRU, pretrain_public
    from jaxaudit.runs.rundir import atomic_write_bytes

    path = rundir.path / f"pretrained_seed_{args.pretrain_seed}.msgpack"
    key = jax.random.fold_in(jax.random.key(args.pretrain_seed), 10**6)
    if path.is_file():
        model = CharGRU(hidden_dim=args.hidden)
        template = model.init(key, jax.numpy.zeros((1, 8), jax.numpy.int32))
        return model, flax.serialization.from_bytes(template, path.read_bytes())
    model, params = pretrain_public(key, prior, num_filler=args.num_filler,
                                    steps=args.pretrain_steps, batch_size=args.batch_size,
                                    hidden_dim=args.hidden)
    atomic_write_bytes(path, flax.serialization.to_bytes(params))
    return model, params


def run_secrets(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from jaxaudit._validation import check_integer
    from jaxaudit.attacks import (
        digit_prior,
        extraction_result,
        password_prior,
        train_and_score,
    )
    from jaxaudit.runs import RunDir, run_chunks

    for name in ("num_secrets", "guesses", "num_filler", "steps", "batch_size", "hidden",
                 "seeds"):
        check_integer(f"--{name.replace('_', '-')}", getattr(args, name), minimum=1)
    check_integer("--pretrain-steps", args.pretrain_steps, minimum=0)
    check_integer("--pretrain-seed", args.pretrain_seed, minimum=0)
    if not args.epsilons or any(not e > 0 for e in args.epsilons):
        raise ValueError(f"--epsilons must be > 0, got {args.epsilons}")
    if args.scoring == "reference" and not args.pretrain_steps:
        raise ValueError("--scoring reference needs a public pretrained model "
                         "(--pretrain-steps > 0)")
    prior = digit_prior(args.digits) if args.prior == "digits" else password_prior(args.candidates)
    config = {k: v for k, v in vars(args).items() if k not in ("func", "out", "quiet")}
    config["epsilons"] = [str(e) for e in args.epsilons]
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
        scored = train_and_score(
            jax.random.key(seed), prior=prior, num_secrets=args.num_secrets, epsilon=eps,
            delta=args.delta, num_filler=args.num_filler, steps=args.steps,
            batch_size=args.batch_size, clip_norm=args.clip, learning_rate=args.learning_rate,
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

    results = run_chunks(rundir, [n for n, _ in plan], compute, progress=not args.quiet,
                         desc="attack secrets")
    rows = _rows(results, plan, "epsilon_target")
    _finish(rundir, rows, "epsilon_target",
            f"secret extraction ({args.scoring}), {prior.source}; n = {args.num_secrets}, "
            f"k = {args.guesses}", scorings=scorings)
    return 0


def run_marginals(args: argparse.Namespace) -> int:
    import jax

    from jaxaudit._validation import check_integer
    from jaxaudit.attacks import marginals_reconstruction
    from jaxaudit.runs import RunDir, run_chunks

    for name in ("num_targets", "way", "seeds"):
        check_integer(f"--{name.replace('_', '-')}", getattr(args, name), minimum=1)
    if not args.rhos or any(not r > 0 for r in args.rhos):
        raise ValueError(f"--rhos must be > 0, got {args.rhos}")
    args.attributes, args.hidden = _names(args.attributes), _names(args.hidden)
    config = {k: v for k, v in vars(args).items() if k not in ("func", "out", "quiet")}
    config["rhos"] = [str(r) for r in args.rhos]
    rundir = RunDir.open(args.out, kind="attack-marginals", config=config)
    plan = [(f"rho_{_level_name(r)}_seed_{s}", (r, s)) for s in range(args.seeds)
            for r in args.rhos]

    def compute(name):
        rho, seed = dict(plan)[name]
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
