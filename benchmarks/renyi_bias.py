"""Bias of the DV point estimate on Gaussian scores at audit sizes (not a timing benchmark).

Q = N(Δ, 1), P = N(0, 1), true D_α = αΔ²/2. For each size n (runs per world) and order α, the
estimator (``jaxaudit.renyi.renyi_estimator``, default settings) runs on ``--reps`` independent
draws (vmapped, seeded) and the table reports mean(point)/truth, the sd, and the mean lower
bound, for each of the point estimate's critic clips (``clip="auto"``, the default, which is
``"observed"`` below 2,000 runs per world and ``"range"`` from there on). Acceptance in the issue: mean ≤ 1.05 × truth for α ≤ 2 at every size, and within 20% at
α = 3, Δ = 1.5, n = 2·10⁴.

    python benchmarks/renyi_bias.py --reps 50                # the table in docs/renyi.md
    python benchmarks/renyi_bias.py --critic paper           # Kim et al.'s critic and EMA
    python benchmarks/renyi_bias.py --critic paper_m2        # ... with our output bound M = 2

``--critic paper`` runs the same study with ``renyi.PAPER_CRITIC_CONFIG`` (both critics side by
side on the same draws: ``benchmarks/renyi_critic_compare.py``).
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from jaxaudit.renyi import (
    PAPER_CRITIC_CONFIG,
    CriticConfig,
    renyi_estimator,
)
from jaxaudit.renyi.training import PAPER_BOUNDED_CRITIC_CONFIG

CRITICS = {"ours": CriticConfig(), "paper": PAPER_CRITIC_CONFIG,
           "paper_m2": PAPER_BOUNDED_CRITIC_CONFIG}


def bias_rows(key, n, shift, alphas, reps, clip="observed", config=CriticConfig()):
    fn = jax.jit(jax.vmap(renyi_estimator(clip=clip, config=config), in_axes=(0, 0, 0, None)))
    k_q, k_p, k_est = jax.random.split(key, 3)
    x_q = shift + jax.random.normal(k_q, (reps, n))
    x_p = jax.random.normal(k_p, (reps, n))
    est = fn(jax.random.split(k_est, reps), x_q, x_p, np.asarray(alphas, np.float32))
    point, lower = np.asarray(est.point), np.asarray(est.lower)
    rows = []
    for i, a in enumerate(alphas):
        truth = a * shift**2 / 2
        rows.append((clip, n, shift, a, truth, point[:, i].mean(), point[:, i].std(ddof=1),
                     np.mean(point[:, i] > truth), lower[:, i].mean()))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--large-reps", type=int, default=10, help="repetitions at n = 2,000 and 2·10⁴")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--clips", default="auto,observed,range",
                   help="comma-separated point-estimate clips to tabulate (default: all three)")
    p.add_argument("--critic", default="ours", choices=sorted(CRITICS),
                   help="critic configuration: ours (CriticConfig()), paper (PAPER_CRITIC_CONFIG) or "
                        "paper_m2 (PAPER_BOUNDED_CRITIC_CONFIG)")
    args = p.parse_args(argv)
    key = jax.random.key(args.seed)
    config = CRITICS[args.critic]
    cases = [(72, 1.0, (1.25, 1.5, 2.0, 3.0), args.reps), (250, 1.0, (1.25, 1.5, 2.0, 3.0), args.reps),
             (500, 1.0, (1.25, 1.5, 2.0, 3.0), args.reps), (2_000, 1.0, (1.25, 1.5, 2.0), args.large_reps),
             (20_000, 1.5, (3.0,), args.large_reps)]
    print("| clip | runs per world | Δ | α | true D_α | mean estimate | mean / truth | sd | P(est > truth) "
          "| mean lower bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for clip in args.clips.split(","):
        for c, (n, shift, alphas, reps) in enumerate(cases):
            t = time.time()
            for clip_, n_, s_, a, truth, mean, sd, over, low in bias_rows(
                    jax.random.fold_in(key, c), n, shift, alphas, reps, clip, config):
                print(f"| {clip_} | {n_} | {s_:g} | {a:g} | {truth:.3f} | {mean:.3f} | {mean / truth:.2f} | "
                      f"{sd:.3f} | {over:.2f} | {low:.3f} |", flush=True)
            print(f"<!-- {clip}, n={n}: {reps} reps in {time.time() - t:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
