"""Our critic or the paper's: the DV estimator with ``CriticConfig()`` and ``PAPER_CRITIC_CONFIG``
on the same scores (not a timing benchmark).

1. Gaussian scores (``--reps`` seeded repetitions, vmapped): Q = N(Δ, 1), P = N(0, 1), true
   D_α = αΔ²/2. Per configuration, size and order: mean estimate / truth, sd, RMSE
   (√(bias² + sd²)), P(estimate > truth),
   mean 95% lower bound and P(bound > truth) (must stay ≤ 5%).
2. Canary scores (``--scores DIR/scores.npz`` from ``notebooks/scripts/rdp_paper_scores.py``,
   setting ``--setting``): per configuration the DV estimate (mean ± sd over ``--splits``
   train/held-out splits, [mean held-out SE]) and the 95% lower bound, next to the accountant's
   ε_α and [31] in RDP units both ways (Kim et al.'s: mean over audits of 100 runs per world of
   α μ(ε_emp, δ)²/2, ``renyi.dp_to_rdp_gaussian``; ours: α μ_lo²/2 from all scores at once).
3. ``--unmatched-tails``: the draws of ``tests/renyi/test_bias.py``'s overshoot test (24 of
   3,000 draws of 500 per world, Q = N(−0.5, 1), with the most Q samples outside P's range):
   mean estimate / truth at α = 1.25, 2 and the acceptance mean ≤ 1.05 × truth + 2 SE.
4. ``--ideal-audits N``: Kim et al.'s [31] column on ideal scores — N audits of 100 runs per world
   of N(μ, 1) against N(0, 1), μ the accountant's GDP μ at ε = 2, 4.38, 6.57, 10 (δ = 1e−5).

Everything else (split 0.5, empirical-Bernstein bound, clip "auto", both directions) is the
estimator's default, so the two rows differ only in the critic and its training.

    python benchmarks/renyi_critic_compare.py --reps 20                       # Gaussian part
    python benchmarks/renyi_critic_compare.py --reps 0 --scores DIR/scores.npz  # canary part
    python benchmarks/renyi_critic_compare.py --reps 0 --ideal-audits 100      # [31], ideal
    python benchmarks/renyi_critic_compare.py --reps 0 --unmatched-tails --critics paper_m2
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import numpy as np

from jaxaudit.accounting import rdp_epsilons
from jaxaudit.renyi import (
    PAPER_CRITIC_CONFIG,
    CriticConfig,
    gdp_epsilon_lower_bound,
    renyi_estimator,
)
from jaxaudit.renyi.reconcile import dp_to_rdp_gaussian, gdp_mu_for_epsilon
from jaxaudit.renyi.training import PAPER_BOUNDED_CRITIC_CONFIG
from jaxaudit.stats import gdp_to_rdp

CONFIGS = {"ours": CriticConfig(), "paper": PAPER_CRITIC_CONFIG,
           # the paper's network, optimiser, minibatches and EMA with our output bound M = 2
           "paper_m2": PAPER_BOUNDED_CRITIC_CONFIG}
DELTA, CONFIDENCE, BLOCK = 1e-5, 0.95, 100


def gaussian_rows(key: jax.Array, config: CriticConfig, n: int, shift: float,
                  orders: tuple[float, ...], reps: int) -> list[tuple]:
    """(n, Δ, α, truth, mean, sd, P(est > truth), mean lower, P(lower > truth)) per order."""
    fn = jax.jit(jax.vmap(renyi_estimator(config=config), in_axes=(0, 0, 0, None)))
    k_q, k_p, k_est = jax.random.split(key, 3)
    x_q = shift + jax.random.normal(k_q, (reps, n))
    x_p = jax.random.normal(k_p, (reps, n))
    est = fn(jax.random.split(k_est, reps), x_q, x_p, np.asarray(orders, np.float32))
    point, lower = np.asarray(est.point), np.asarray(est.lower)
    rows = []
    for i, a in enumerate(orders):
        truth = a * shift**2 / 2
        rows.append((n, shift, a, truth, point[:, i].mean(), point[:, i].std(ddof=1),
                     np.mean(point[:, i] > truth), lower[:, i].mean(), np.mean(lower[:, i] > truth)))
    return rows


def kim_31_rdp(in_s: np.ndarray, out_s: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, int]:
    """Kim et al.'s "[31]" column: per audit of 100 runs per world, [31]'s ε_emp (threshold on
    all scores, one-sided 95% Clopper–Pearson each, δ = 1e−5), then α μ(ε_emp, δ)²/2; the mean
    over audits."""
    n = min(in_s.size, out_s.size) // BLOCK
    vals = []
    for b in range(n):
        sl = slice(b * BLOCK, (b + 1) * BLOCK)
        eps = gdp_epsilon_lower_bound(None, in_s[sl], out_s[sl], DELTA, confidence=0.9,
                                      selection="all").epsilon
        vals.append(dp_to_rdp_gaussian(float(eps), DELTA, orders))
    return (np.mean(vals, axis=0) if vals else np.full(orders.shape, np.nan)), n


def unmatched_tails(critics: list[str]) -> None:
    """The overshoot check of tests/renyi/test_bias.py (module docstring, part 3)."""
    reps, n, shift = 24, 500, 0.5
    alphas = np.array([1.25, 2.0], np.float32)
    rng = np.random.default_rng(7)
    q = rng.normal(size=(3000, n)) - shift
    p = rng.normal(size=(3000, n))
    outside = (q < p.min(1, keepdims=True)).sum(1) + (q > p.max(1, keepdims=True)).sum(1)
    pick = np.argsort(-outside)[:reps]
    keys = jax.random.split(jax.random.key(3), reps)
    x_q, x_p = q[pick].astype(np.float32), p[pick].astype(np.float32)
    truth = alphas * shift**2 / 2
    for name in critics:
        fn = jax.jit(jax.vmap(renyi_estimator(config=CONFIGS[name]), in_axes=(0, 0, 0, None)))
        point = np.asarray(fn(keys, x_q, x_p, alphas).point)
        mean, se = point.mean(0), point.std(0, ddof=1) / np.sqrt(reps)
        verdict = "overshoot" if np.any(mean > 1.05 * truth + 2 * se) else "ok"
        print(f"unmatched tails, {name}: truth {truth}, mean {mean.round(3)}, SE {se.round(3)}, "
              f"mean / truth {(mean / truth).round(2)}: {verdict}", flush=True)


def ideal_31_table(audits: int, seed: int, orders: np.ndarray) -> None:
    """Kim et al.'s [31] column on ideal Gaussian scores (see the module docstring, part 3)."""
    rng = np.random.default_rng(seed)
    print(f"\n[31] in RDP units on ideal scores, {audits} audits of {BLOCK} runs per world")
    print("| ε | μ | α | α μ²/2 (truth) | Kim et al.'s conversion, mean over audits | "
          "ours, all scores at once |")
    print("|---|---|---|---|---|---|")
    for eps in (2.0, 4.38, 6.57, 10.0):
        mu = float(gdp_mu_for_epsilon(eps, DELTA))
        in_s = mu + rng.standard_normal(audits * BLOCK)
        out_s = rng.standard_normal(audits * BLOCK)
        kim, _ = kim_31_rdp(in_s, out_s, orders)
        mu_all = gdp_epsilon_lower_bound(None, in_s, out_s, DELTA, confidence=0.9, selection="all").mu
        ours = gdp_to_rdp(mu_all, orders)
        for j, a in enumerate(orders):
            print(f"| {eps:g} | {mu:.3f} | {a:g} | {a * mu**2 / 2:.3f} | {kim[j]:.3f} | "
                  f"{ours[j]:.3f} |", flush=True)


def scores_table(path: str, setting: str, splits: int, orders: np.ndarray, steps: int,
                 critics: list[str]) -> None:
    data = np.load(path)
    in_s = data[f"{setting}_in"].astype(np.float64)
    out_s = data[f"{setting}_out"].astype(np.float64)
    sigma = float(data[f"{setting}_sigma"])
    acc = rdp_epsilons(noise_multiplier=sigma, sampling_rate=1.0, steps=steps, orders=orders)
    kim, audits = kim_31_rdp(in_s, out_s, orders)
    mu_all = gdp_epsilon_lower_bound(None, in_s, out_s, DELTA, confidence=0.9, selection="all").mu
    ours_31 = gdp_to_rdp(mu_all, orders)
    print(f"\n{setting}: {in_s.size} in / {out_s.size} out runs, σ = {sigma:.4f}, "
          f"[31] audits of {BLOCK} per world: {audits}")
    print("| critic | α | accountant ε_α | DV estimate ± sd [SE] | DV lower bound (95%) | "
          "[31] Kim et al. (mean over audits) | [31] ours (all scores) | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for name in critics:
        fn = jax.jit(renyi_estimator(config=CONFIGS[name], confidence=CONFIDENCE))
        t = time.time()
        ests = [fn(jax.random.key(s), in_s.astype(np.float32), out_s.astype(np.float32),
                   orders.astype(np.float32)) for s in range(splits)]
        point = np.array([np.asarray(e.point) for e in ests])
        se = np.array([np.asarray(e.point_se) for e in ests]).mean(0)
        lower = np.array([np.asarray(e.lower) for e in ests]).mean(0)
        secs = time.time() - t
        for j, a in enumerate(orders):
            print(f"| {name} | {a:g} | {acc[j]:.3f} | {point[:, j].mean():.3f} ± "
                  f"{point[:, j].std(ddof=1):.3f} [{se[j]:.3f}] | {lower[j]:.3f} | {kim[j]:.3f} | "
                  f"{ours_31[j]:.3f} | {secs:.0f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20, help="Gaussian repetitions (0: skip)")
    p.add_argument("--sizes", default="500,2000", help="runs per world of the Gaussian part")
    p.add_argument("--shifts", default="1,2", help="Δ of the Gaussian part (D_2 = Δ²)")
    p.add_argument("--orders", default="2", help="Rényi orders")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--critics", default="ours,paper",
                   help=f"comma-separated configurations among {', '.join(CONFIGS)}")
    p.add_argument("--scores", default=None, help="scores.npz of rdp_paper_scores.py")
    p.add_argument("--setting", default="paper_eps10")
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--steps", type=int, default=100, help="DP-GD steps T of the scores")
    p.add_argument("--unmatched-tails", action="store_true",
                   help="the overshoot draws of tests/renyi/test_bias.py")
    p.add_argument("--ideal-audits", type=int, default=0,
                   help="audits of 100 ideal Gaussian runs per world for the [31] table (0: skip)")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)
    orders = tuple(float(a) for a in args.orders.split(","))
    critics = args.critics.split(",")
    unknown = [c for c in critics if c not in CONFIGS]
    if unknown:
        p.error(f"--critics: unknown {unknown}; choose among {sorted(CONFIGS)}")
    if args.reps > 0:
        key = jax.random.key(args.seed)
        print("| critic | runs per world | Δ | α | true D_α | mean estimate | mean / truth | sd | "
              "RMSE | P(est > truth) | mean lower bound | P(bound > truth) | seconds |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        cases = [(int(n), float(s)) for n in args.sizes.split(",") for s in args.shifts.split(",")]
        for c, (n, shift) in enumerate(cases):
            for name in critics:
                config = CONFIGS[name]
                t = time.time()
                rows = gaussian_rows(jax.random.fold_in(key, c), config, n, shift, orders,
                                     args.reps)
                secs = time.time() - t
                for n_, s_, a, truth, mean, sd, over, low, cover in rows:
                    print(f"| {name} | {n_} | {s_:g} | {a:g} | {truth:.3f} | {mean:.3f} | "
                          f"{mean / truth:.2f} | {sd:.3f} | {np.hypot(mean - truth, sd):.2f} | "
                          f"{over:.2f} | {low:.3f} | {cover:.2f} | "
                          f"{secs:.0f} |", flush=True)
    if args.unmatched_tails:
        unmatched_tails(critics)
    if args.ideal_audits > 0:
        ideal_31_table(args.ideal_audits, args.seed, np.asarray(orders, np.float64))
    if args.scores:
        scores_table(args.scores, args.setting, args.splits, np.asarray(orders, np.float64),
                     args.steps, critics)


if __name__ == "__main__":
    main()
