"""Coverage of the BMP lower readings: how often each 5% quantile / bound lies below the truth.

For every true (ε_L, ε_R) in {(1, 2), (0.5, 0.5), (2, 1)}, N0 = N1 = N in {100, 1000} and two kinds
of attack — *optimal* (the corner of R(ε), the most powerful test the mechanism allows) and
*model-drawn* (s ~ U(0, 1), the operating point uniform on the band R(ε) \\ R(sε)) — draw
``--reps`` seeded count sets and record the fraction of repetitions in which

* the posterior 5% quantile of ε_L (of ε_R; of both) lies below the truth, for every attack prior
  of ``--priors`` (NUTS, 4 chains × (``--warmup`` + ``--samples``));
* the Jeffreys (optimal-attack) estimator's 5% quantile does;
* the certified 95% lower bounds do (joint);
* with ``--grid-priors``, the exact grid posterior's 5% quantiles do (no sampler: it separates
  what the model says from how well NUTS samples it).

Each prior is one resumable chunk of the run folder; the table goes to coverage.md/coverage.json.

    python benchmarks/bmp_coverage.py --out runs/coverage --reps 100
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

TRUTHS = ((1.0, 2.0), (0.5, 0.5), (2.0, 1.0))
SIZES = (100, 1000)
ATTACKS = ("optimal", "model")


def simulate(reps: int, seed: int):
    """Count sets for every (truth, N, attack) cell, stacked; and the cell labels."""
    import jax

    from jaxaudit import bmp

    rng = np.random.default_rng(seed)
    rows, cells = [], []
    logit = lambda p: np.log(p) - np.log1p(-p)
    for eps_l, eps_r in TRUTHS:
        for n in SIZES:
            for attack in ATTACKS:
                if attack == "optimal":
                    a, b = (float(x) for x in bmp.region.region_corner(eps_l, eps_r))
                    alpha, beta = np.full(reps, a), np.full(reps, b)
                else:
                    s, u, v = rng.uniform(1e-6, 1 - 1e-6, size=(3, reps))
                    with jax.enable_x64(True):
                        pos = np.stack([np.full(reps, np.log(eps_l)), np.full(reps, np.log(eps_r)),
                                        logit(u), logit(v), logit(s)], -1)
                        point = bmp.likelihood.constrain_noncentered(pos)
                        alpha, beta = np.asarray(point.alpha), np.asarray(point.beta)
                fp = rng.binomial(n, alpha).astype(float)
                fn = rng.binomial(n, beta).astype(float)
                rows.append(np.stack([fp, np.full(reps, n), fn, np.full(reps, n)], 1))
                cells.append(dict(eps_l=eps_l, eps_r=eps_r, n=n, attack=attack))
    return np.concatenate(rows), cells


def rates(lo_l, lo_r, cells, reps):
    out = []
    for c, cell in enumerate(cells):
        sl = slice(c * reps, (c + 1) * reps)
        bl, br = lo_l[sl] <= cell["eps_l"], lo_r[sl] <= cell["eps_r"]
        out.append(dict(cell, l=float(bl.mean()), r=float(br.mean()), both=float((bl & br).mean())))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--samples", type=int, default=600)
    p.add_argument("--parameterization", default=None,
                   help="NUTS coordinates (default: posterior_nuts's choice per prior)")
    p.add_argument("--priors", default="uniform;beta:20,1;fixed:0.95;optimal")
    p.add_argument("--grid-priors", default="",
                   help="priors (same syntax) whose posterior is also computed exactly on the "
                        "grid (posterior_grid, one call per distinct count set; slow): the "
                        "sampler-free check of the posterior rows")
    p.add_argument("--grid-attacks", default="optimal",
                   help="attacks whose cells the grid rows cover (comma-separated)")
    p.add_argument("--render-only", action="store_true",
                   help="only rewrite coverage.md from the recorded coverage.json")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.render_only:
        render(out, json.loads((out / "coverage.json").read_text()), args.reps)
        return

    import jax

    from jaxaudit import bmp, mia

    out.mkdir(parents=True, exist_ok=True)
    table, cells = simulate(args.reps, args.seed)
    counts = mia.ErrorCounts(*(table[:, j] for j in range(4)))
    results = json.loads((out / "coverage.json").read_text()) if (out / "coverage.json").is_file() \
        else {}
    if "certified" not in results:
        cert = bmp.certified_epsilons(counts, confidence=0.95)
        results["certified"] = rates(np.asarray(cert.epsilon_left), np.asarray(cert.epsilon_right), cells,
                                     args.reps)
        jeff = bmp.jeffreys_estimate(jax.random.key(1), counts, q=(0.05,))
        results["jeffreys"] = rates(np.asarray(jeff.epsilon_left[0]), np.asarray(jeff.epsilon_right[0]), cells,
                                    args.reps)
    for spec in args.priors.split(";"):
        name = "posterior " + bmp.likelihood.as_attack_prior(spec).describe()
        if args.parameterization:
            name += f" ({args.parameterization})"
        if name in results:
            continue
        t0 = time.perf_counter()
        post = bmp.posterior_nuts(jax.random.key(7), counts,
                                  bmp.PosteriorModel(attack_prior=spec,
                                                     parameterization=args.parameterization),
                                  bmp.NutsConfig(num_warmup=args.warmup, num_samples=args.samples))
        q_l = np.asarray(bmp.posterior_quantiles(post.epsilon_left, (0.05,)))[0]
        q_r = np.asarray(bmp.posterior_quantiles(post.epsilon_right, (0.05,)))[0]
        results[name] = rates(q_l, q_r, cells, args.reps)
        rhat = np.asarray(post.rhat)
        results[name + " diagnostics"] = dict(
            seconds=time.perf_counter() - t0, frac_rhat_le_1_05=float(np.mean(rhat <= 1.05)),
            divergences=int(np.asarray(post.divergences).sum()),
            min_ess=float(np.asarray(post.ess).min()))
        (out / "coverage.json").write_text(json.dumps(results, indent=1))
        print(name, f"{time.perf_counter() - t0:.0f} s", flush=True)
    for spec in filter(None, args.grid_priors.split(";")):
        name = "grid posterior " + bmp.likelihood.as_attack_prior(spec).describe()
        if name in results:
            continue
        t0 = time.perf_counter()
        results[name] = grid_rates(table, cells, args.reps, spec,
                                   set(args.grid_attacks.split(",")))
        results[name + " diagnostics"] = dict(seconds=time.perf_counter() - t0)
        (out / "coverage.json").write_text(json.dumps(results, indent=1))
        print(name, f"{time.perf_counter() - t0:.0f} s", flush=True)
    (out / "coverage.json").write_text(json.dumps(results, indent=1))
    render(out, results, args.reps)


def grid_rates(table, cells, reps, spec, attacks):
    """Coverage of the exact (grid) posterior's 5% quantiles, for the cells of ``attacks``; one
    posterior_grid call per distinct count set."""
    from jaxaudit import bmp, mia

    out = []
    for c, cell in enumerate(cells):
        if cell["attack"] not in attacks:
            continue
        rows = table[c * reps:(c + 1) * reps]
        uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        q = np.empty((len(uniq), 2))
        for i, r in enumerate(uniq):
            # the corner model's posterior is data-pinned (no prior-driven upper tail): a finer grid
            num_eps = 800 if bmp.likelihood.as_attack_prior(spec).optimal else 160
            g = bmp.posterior_grid(mia.ErrorCounts(*(float(x) for x in r)),
                                   bmp.PosteriorModel(attack_prior=spec), num_epsilons=num_eps)
            q[i] = g.quantile("l", 0.05), g.quantile("r", 0.05)
        q = q[inverse.ravel()]
        bl, br = q[:, 0] <= cell["eps_l"], q[:, 1] <= cell["eps_r"]
        out.append(dict(cell, l=float(bl.mean()), r=float(br.mean()),
                        both=float((bl & br).mean()), distinct=len(uniq)))
        print(f"  {cell}: {out[-1]['l']:.2f} / {out[-1]['r']:.2f} ({len(uniq)} distinct)",
              flush=True)
    return out


def render(out: Path, results: dict, reps: int) -> None:
    """coverage.md: one row per reading and attack, one column per (truth, N); cells
    "ε_L / ε_R / both" = fraction of repetitions with the lower reading below the truth."""
    cols = [c for c in results["certified"] if c["attack"] == "optimal"]
    lines = [f"Fraction of {reps} seeded repetitions per cell in which the lower reading (5% "
             "quantile; certified: 95% bound) lies below the truth: ε_L / ε_R / both.", "",
             "| reading | attack | " + " | ".join(
                 f"({c['eps_l']:g}, {c['eps_r']:g}), N={c['n']}" for c in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for name, rows in results.items():
        if name.endswith("diagnostics"):
            continue
        for attack in ATTACKS:
            vals = [f"{r['l']:.2f} / {r['r']:.2f} / {r['both']:.2f}" for r in rows
                    if r["attack"] == attack]
            if vals:
                lines.append(f"| {name} | {attack} | " + " | ".join(vals) + " |")
    diag = [f"- {k[:-len(' diagnostics')]}: {v['seconds']:.0f} s, R-hat ≤ 1.05 for "
            f"{v['frac_rhat_le_1_05']:.2f} of count sets, min ESS {v['min_ess']:.0f}, "
            f"{v['divergences']} divergences" if "min_ess" in v else
            f"- {k[:-len(' diagnostics')]}: {v['seconds']:.0f} s (exact grid, no sampler)"
            for k, v in results.items() if k.endswith("diagnostics")]
    (out / "coverage.md").write_text("\n".join(lines + ["", *diag]) + "\n")
    print("\n".join(lines + ["", *diag]))


if __name__ == "__main__":
    main()
