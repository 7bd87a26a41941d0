"""Secret extraction over ε with a configuration that memorises (docs/attacks.md).

Runs (``--run``, resumable) and tabulates three sweeps of :func:`jaxaudit.pipelines.run_secrets`,
one per prior, with the same small memorising configuration (docs/attacks.md, "The ε curve"):
10 users, 10 filler sentences, full batches (q = 1), 200 steps of Adam 2e−2, GRU width 64, no
public pretraining, records of 36 characters, ε ∈ {0.5, 1, 2, 4, 8, 16, ∞}, 5 seeds:

* passwords (Zipf over 2,000 zxcvbn passwords), k = 1 guess;
* 4-digit canaries (uniform over 10^4), k = 10 guesses;
* first names (SSA frequencies, faker's en_US tables, all 690), k = 1 guess.

For every prior and ε it prints a markdown table: σ, runs finished, every scoring's measured
successes (mean ± sample sd over the seeds), the expected prior baseline Σ p_i, the count bound
v_γ (γ = 0.05), the runs of any scoring at or above v_γ, and seconds per run; and it draws the
three curves into one figure (``--figure``). The same runs from the command line::

    jaxaudit attack secrets --prior passwords --guesses 1 --epsilons 0.5,1,2,4,8,16,inf \\
        --seeds 5 --num-secrets 10 --num-filler 10 --steps 200 --batch-size 20 \\
        --learning-rate 0.02 --hidden 64 --pretrain-steps 0 --record-length 36 \\
        --out runs/secrets_curve_passwords

(``--prior digits --guesses 10``, ``--prior names --candidates 690`` for the others).

Usage::

    nice -n 19 uv run python notebooks/scripts/secrets_curve.py --runs runs \\
        [--run passwords,digits,names [--large]] \
        [--figure notebooks/figures/attacks_secrets_curve.png]

Folders ``secrets_curve_<prior>_large`` (ε = 32, 64, 100, ``--large``) are read when present.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from jaxaudit.attacks import LmConfig
from jaxaudit.pipelines import SecretsConfig, run_secrets
from jaxaudit.runs import load_results

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf)
#: Larger finite ε, in a second folder per prior (``secrets_curve_<prior>_large``): where the
#: noise of this small full-batch training becomes small enough to leave something.
LARGE_EPSILONS = (32.0, 64.0, 100.0)
COMMON = SecretsConfig(epsilons=EPSILONS, repetitions=5, pretrain_steps=0, lm=LmConfig(
    num_secrets=10, num_filler=10, steps=200, batch_size=20, learning_rate=0.02, hidden_dim=64,
    record_length=36))
CONFIGS = {
    "passwords": COMMON._replace(prior="passwords", guesses=1),
    "digits": COMMON._replace(prior="digits", digits=4, guesses=10),
    "names": COMMON._replace(prior="names", candidates=690, guesses=1),
}
LARGE = {p: c._replace(epsilons=LARGE_EPSILONS) for p, c in CONFIGS.items()}
SCORINGS = ("likelihood", "calibrated", "prior")


def folder(runs: Path, prior: str, large: bool = False) -> Path:
    return runs / f"secrets_curve_{prior}{'_large' if large else ''}"


def rows(path: Path) -> list[dict]:
    """One dict per finished run of a folder: ε, seed, σ, every scoring's successes, the
    baseline, v_γ and the seconds."""
    res = load_results(path)
    out = []
    for name, chunk in res.chunks.items():
        level = name.split("_seed_")[0][len("eps_"):].replace("p", ".").replace("m", "-")
        out.append(dict(eps=float(level), seed=int(name.split("_seed_")[1]),
                        noise=float(chunk["noise_multiplier"]), baseline=float(chunk["baseline"]),
                        bound=int(chunk["count_bound"]), seconds=float(chunk["seconds"]),
                        n=int(np.asarray(chunk["hits"]).size),
                        **{sc: int(chunk[f"successes_{sc}"]) for sc in SCORINGS}))
    return out


def _mean_sd(values: list[int]) -> str:
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    return f"{np.mean(values):.1f} ± {sd:.1f}"


def table(prior: str, found: list[dict]) -> str:
    head = ("| ε | σ | runs | " + " | ".join(SCORINGS) + " | baseline Σp_i | bound v_γ | "
            "runs ≥ v_γ | s per run |")
    lines = [f"**{prior}** (n = {found[0]['n'] if found else '?'}, "
             f"k = {CONFIGS[prior].guesses})", "", head, "|---" * (len(SCORINGS) + 7) + "|"]
    for eps in sorted(set(EPSILONS) | {r["eps"] for r in found}):
        sel = [r for r in found if r["eps"] == eps]
        if not sel:
            lines.append(f"| {eps:g} | | 0 |" + " |" * (len(SCORINGS) + 4))
            continue
        bounds = sorted({r["bound"] for r in sel})
        over = sum(r[sc] >= r["bound"] for r in sel for sc in SCORINGS)
        lines.append(
            f"| {eps:g} | {sel[0]['noise']:.2f} | {len(sel)} | "
            + " | ".join(_mean_sd([r[sc] for r in sel]) for sc in SCORINGS)
            + f" | {sel[0]['baseline']:.2f} | {'–'.join(map(str, bounds))} | {over} | "
            f"{np.mean([r['seconds'] for r in sel]):.0f} |")
    return "\n".join(lines)


def figure(path: Path, found: dict[str, list[dict]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every = sorted(set(EPSILONS) | {r["eps"] for rs in found.values() for r in rs})
    top = max([e for e in every if math.isfinite(e)], default=16.0)
    xs = {eps: (2.0 * top if math.isinf(eps) else eps) for eps in every}
    fig, axes = plt.subplots(1, len(found), figsize=(4.2 * len(found), 3.6), squeeze=False)
    for ax, (prior, rs) in zip(axes[0], found.items(), strict=True):
        levels = [e for e in every if any(r["eps"] == e for r in rs)]
        x = np.array([xs[e] for e in levels])
        n = rs[0]["n"] if rs else 1
        for sc, marker in zip(SCORINGS, "so^", strict=True):
            vals = [[r[sc] for r in rs if r["eps"] == e] for e in levels]
            ax.errorbar(x, [np.mean(v) for v in vals],
                        yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for v in vals],
                        marker=marker, capsize=3, label=f"{sc} (measured)")
        ax.plot(x, [min(n, min(r["bound"] for r in rs if r["eps"] == e)) for e in levels],
                "k-", lw=2, label="bound v_γ (capped at n)")
        ax.plot(x, [next(r["baseline"] for r in rs if r["eps"] == e) for e in levels], "k:",
                label="baseline Σp_i (expected)")
        ax.set_xscale("log")
        ax.set_xticks([xs[e] for e in every],
                      ["∞" if math.isinf(e) else f"{e:g}" for e in every], fontsize=7,
                      rotation=45)
        ax.minorticks_off()
        ax.set_xlabel("ε (δ = 1e-5)")
        ax.set_ylabel(f"secrets extracted of n = {n}")
        ax.set_title(f"{prior}, k = {CONFIGS[prior].guesses}", fontsize=10)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--run", default="", help="priors to run (resumable) before tabulating")
    ap.add_argument("--figure", type=Path, default=None)
    ap.add_argument("--large", action="store_true",
                    help="with --run: also ε = 32, 64, 100 (secrets_curve_<prior>_large)")
    args = ap.parse_args()
    for prior in filter(None, args.run.split(",")):
        run_secrets(CONFIGS[prior], folder(args.runs, prior))
        if args.large:
            run_secrets(LARGE[prior], folder(args.runs, prior, large=True))
    found = {p: [r for large in (False, True)
                 if (folder(args.runs, p, large) / "manifest.json").exists()
                 for r in rows(folder(args.runs, p, large))]
             for p in CONFIGS if (folder(args.runs, p) / "manifest.json").exists()}
    for prior, rs in found.items():
        print(table(prior, rs), end="\n\n")
    if args.figure is not None and found:
        figure(args.figure, found)
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
