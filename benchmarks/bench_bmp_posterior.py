"""Benchmark: per-node BMP posteriors for every node of Cora vs privacy-estimates.

jaxaudit: :func:`jaxaudit.bmp.posterior_nuts` on all nodes' counts at once, 4 chains × (500 warm-up
+ 1000) NUTS draws (``--warmup``, ``--samples``), vmapped over nodes (one jit-compiled call); reported cold (with compilation)
and warm (median of ``--repeats``), seconds per node, and the sampler's health: the fraction of
nodes with R-hat ≤ 1.05, the smallest bulk ESS and the fraction of nodes with ESS ≥ 400, and the
divergent transitions (total, and per 10⁴ draws after warm-up).
privacy-estimates (Zanella-Béguelin et al., "Bayesian estimation of differential privacy",
ICML 2023; ``pip install privacy-estimates``): ``compute_eps_lo_hi(..., method="joint-beta")`` on
the same counts, one node at a time (its per-estimate time on a few nodes, median).

Counts: LOO LiRA with prior-aware Bayes decisions on R shadow GCNs trained on Cora with uniform
50% sampling (``--shadow DIR`` reuses a ``jaxaudit shadow`` run; ``--counts FILE.npz`` a recorded
count table with fields fp, n0, fn, n1; otherwise R = ``--models`` models are trained first and the
table is saved to ``--save-counts``).

    python benchmarks/bench_bmp_posterior.py --models 64 --save-counts /tmp/cora_counts.npz
    python benchmarks/bench_bmp_posterior.py --counts /tmp/cora_counts.npz

The nodes are sharded over one JAX CPU device per core by default, as the ``jaxaudit`` command
does (``--devices 1`` for a single device).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _counts_from_shadow(masks, scores, eta):
    from jaxaudit.mia import bayes_decision, error_counts, lira_loo

    llr = lira_loo(scores, masks)
    dec = bayes_decision(llr, np.asarray(eta, np.float32))
    return {k: np.asarray(v) for k, v in error_counts(dec, masks)._asdict().items()}


def load_counts(args):
    if args.counts:
        d = np.load(args.counts)
        return {k: d[k] for k in ("fp", "n0", "fn", "n1")}
    if args.shadow:
        from jaxaudit.runs import load_results

        res = load_results(args.shadow)
        names = sorted(res.chunks)
        masks = res.concat("masks", names).astype(bool)
        scores = res.concat("scores", names)
        counts = _counts_from_shadow(masks, scores, masks.mean(0) * 0 + res.config["ratio"])
    else:
        import jax

        from jaxaudit.datasets import load_planetoid
        from jaxaudit.graph import train_shadow_models, uniform_sampler

        graph = load_planetoid("cora")
        t0 = time.perf_counter()
        sh = train_shadow_models(jax.random.key(0), graph, uniform_sampler(0.5), "gcn",
                                 args.models, chunk_size=32)
        print(f"trained {args.models} shadow GCNs in {time.perf_counter() - t0:.1f} s")
        counts = _counts_from_shadow(np.asarray(sh.masks), np.asarray(sh.scores),
                                     np.full(graph.num_nodes, 0.5))
    if args.save_counts:
        np.savez(args.save_counts, **counts)
    return counts


def bench_jaxaudit(counts, args):
    import jax

    from jaxaudit.bmp import NutsConfig, posterior_nuts
    from jaxaudit.mia import ErrorCounts

    valid = (counts["n0"] > 0) & (counts["n1"] > 0)
    c = ErrorCounts(*(counts[k][valid].astype(float) for k in ("fp", "n0", "fn", "n1")))
    rows = []
    for rep in range(args.repeats + 1):
        t0 = time.perf_counter()
        config = NutsConfig(num_warmup=args.warmup, num_samples=args.samples, num_chains=4,
                            max_num_doublings=args.max_num_doublings, min_ess=args.min_ess)
        post = posterior_nuts(jax.random.key(rep), c, config=config,
                              deduplicate=not args.no_dedupe)
        jax.block_until_ready(post)
        dt = time.perf_counter() - t0
        rhat, ess = np.asarray(post.rhat), np.asarray(post.ess)
        div = np.asarray(post.divergences)
        draws = div.size * 4 * args.samples
        rows.append(dict(seconds=dt, frac_rhat=float(np.mean(rhat <= 1.05)),
                         frac_rhat_101=float(np.mean(rhat <= 1.01)),
                         divergences=int(div.sum()), div_per_1e4=1e4 * float(div.sum()) / draws,
                         nodes_with_div=int((div > 0).sum()), min_ess=float(ess.min()),
                         frac_ess_400=float(np.mean(ess >= 400)),
                         mean_steps=float(np.asarray(post.mean_steps).mean())))
        print(f"  jaxaudit rep {rep} ({'cold' if rep == 0 else 'warm'}): {dt:.1f} s, "
              f"R-hat<=1.05 {rows[-1]['frac_rhat']:.3f}, min ESS {rows[-1]['min_ess']:.0f}, "
              f"divergences {rows[-1]['divergences']}", flush=True)
        if rep == 0 and args.diagnose:
            worst = np.argsort(-div)[:10]
            print("  most divergent count tuples (fp, n0, fn, n1): divergences, ESS")
            for i in worst:
                print(f"    ({int(c.fp[i])}, {int(c.n0[i])}, {int(c.fn[i])}, {int(c.n1[i])}): "
                      f"{int(div[i])}, {ess[i]:.0f}")
    return int(valid.sum()), len(np.unique(np.stack([c.fp, c.n0, c.fn, c.n1], 1), axis=0)), rows


def bench_privacy_estimates(counts, args):
    try:
        from privacy_estimates import AttackResults, compute_eps_lo_hi
    except ImportError as err:  # reported, not hidden
        return None, f"privacy-estimates not importable: {err}"
    rng = np.random.default_rng(0)
    valid = np.flatnonzero((counts["n0"] > 0) & (counts["n1"] > 0))
    times = []
    for i in rng.choice(valid, size=min(args.pe_nodes, len(valid)), replace=False):
        fp, n0, fn, n1 = (int(counts[k][i]) for k in ("fp", "n0", "fn", "n1"))
        res = AttackResults(FN=fn, FP=fp, TN=n0 - fp, TP=n1 - fn)
        t0 = time.perf_counter()
        compute_eps_lo_hi(count=res, delta=0.0, alpha=0.1, method="joint-beta")
        times.append(time.perf_counter() - t0)
        print(f"  privacy-estimates node {i}: {times[-1]:.2f} s", flush=True)
    return float(np.median(times)), None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--counts", default=None)
    p.add_argument("--shadow", default=None)
    p.add_argument("--models", type=int, default=64)
    p.add_argument("--save-counts", default=None)
    p.add_argument("--repeats", type=int, default=1, help="warm repeats after the cold run")
    p.add_argument("--pe-nodes", type=int, default=3, help="nodes timed with privacy-estimates")
    p.add_argument("--diagnose", action="store_true",
                   help="print the count tuples with the most divergent transitions")
    p.add_argument("--no-dedupe", action="store_true",
                   help="sample every node even when count tuples repeat")
    p.add_argument("--devices", type=int, default=0,
                   help="JAX CPU devices to shard the nodes over (0: one per core, what the "
                        "jaxaudit command uses; 1: a single device)")
    p.add_argument("--min-ess", type=float, default=None,
                   help="posterior_nuts's min_ess: rerun (thinned) the count sets whose bulk ESS "
                        "is below it")
    p.add_argument("--warmup", type=int, default=500, help="NUTS warm-up steps per chain")
    p.add_argument("--samples", type=int, default=1000, help="NUTS draws kept per chain")
    p.add_argument("--max-num-doublings", type=int, default=None,
                   help="NUTS tree-depth cap (default: posterior_nuts's)")
    args = p.parse_args(argv)
    if args.devices != 1:  # before JAX initialises its backend
        import os
        import re

        from jaxaudit.sharding import DEVICE_COUNT_FLAG, cpu_core_count

        n = args.devices or cpu_core_count()
        flags = re.sub(DEVICE_COUNT_FLAG + r"=\S+", "", os.environ.get("XLA_FLAGS", ""))
        os.environ["XLA_FLAGS"] = f"{flags} {DEVICE_COUNT_FLAG}={n}".strip()
    counts = load_counts(args)
    n_valid, n_unique, rows = bench_jaxaudit(counts, args)
    pe, pe_err = bench_privacy_estimates(counts, args)
    warm = float(np.median([r["seconds"] for r in rows[1:]])) if len(rows) > 1 else None
    cold = rows[0]["seconds"]
    print()
    import jax

    cap = args.max_num_doublings or "default"
    print(f"Cora counts: {n_valid} nodes with IN and OUT runs, {n_unique} distinct count tuples; "
          f"4 chains x ({args.warmup} + {args.samples}) NUTS draws; tree-depth cap {cap}; "
          f"min ESS rerun {args.min_ess}; "
          f"{len(jax.devices())} JAX CPU device(s)")
    print("| method | total s | s / node | R-hat<=1.05 | min ESS | ESS>=400 | divergences "
          "(per 1e4 draws) | mean leapfrog |")
    print("|---|---|---|---|---|---|---|---|")
    for label, r in (("jaxaudit cold (with compile)", rows[0]),) + tuple(
            (f"jaxaudit warm #{k}", r) for k, r in enumerate(rows[1:], 1)):
        print(f"| {label} | {r['seconds']:.1f} | {r['seconds'] / n_valid * 1e3:.1f} ms | "
              f"{r['frac_rhat']:.3f} | {r['min_ess']:.0f} | {r['frac_ess_400']:.3f} | "
              f"{r['divergences']} ({r['div_per_1e4']:.2f}) | {r['mean_steps']:.1f} |")
    if warm is not None:
        print(f"| jaxaudit warm, median of {len(rows) - 1} | {warm:.1f} | "
              f"{warm / n_valid * 1e3:.1f} ms | | | | | |")
    if pe is None:
        print(f"| privacy-estimates joint-beta | n/a | n/a | | | | | | ({pe_err})")
    else:
        print(f"| privacy-estimates joint-beta (per estimate, median of {args.pe_nodes}) | "
              f"{pe * n_valid:.0f} (extrapolated) | {pe * 1e3:.0f} ms | | | | | |")
        best = warm if warm is not None else cold
        print(f"\nspeed-up per estimate: {pe / (best / n_valid):.0f}x (warm), "
              f"{pe / (cold / n_valid):.0f}x (cold)")


if __name__ == "__main__":
    main()
