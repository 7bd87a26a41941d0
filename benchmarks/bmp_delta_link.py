"""A/B of the centered NUTS parameterization's δ = ε − ε̂ link: e^z (before) vs softplus(z) (now).

Same posterior, different coordinates: e^z turns the half-normal prior's Gaussian tail into a
double exponential in z (curvature ε²/v), which step sizes adapted to the bulk overshoot in the
prior-driven upper tail (divergent transitions); softplus(z) keeps it Gaussian. Runs NUTS
(4 chains × (500 + 1000)) on ``N`` distinct count tuples drawn (seed 0) from a recorded count table
(fields fp, n0, fn, n1; ``bench_bmp_posterior.py --save-counts`` makes one) under each link, twice,
and prints time, divergences, ESS and leapfrog steps.

    python benchmarks/bmp_delta_link.py --counts cora_counts.npz --nodes 512
"""

import argparse
import time

import jax
import numpy as np

from jaxaudit import bmp, mia


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--counts", required=True)
    p.add_argument("--nodes", type=int, default=512)
    p.add_argument("--links", default="exp,softplus")
    args = p.parse_args(argv)
    c = np.load(args.counts)
    tab = np.unique(np.stack([c[k] for k in ("fp", "n0", "fn", "n1")], 1), axis=0)
    tab = tab[(tab[:, 1] > 0) & (tab[:, 3] > 0)]
    tab = tab[np.random.default_rng(0).choice(len(tab), size=min(args.nodes, len(tab)),
                                              replace=False)]
    counts = mia.ErrorCounts(*(tab[:, j].astype(float) for j in range(4)))
    for link in args.links.split(","):
        model = bmp.PosteriorModel(delta_link=link)  # the link is a model setting, not a global
        for rep in range(2):
            t0 = time.perf_counter()
            post = jax.block_until_ready(bmp.posterior_nuts(jax.random.key(rep), counts, model))
            dt = time.perf_counter() - t0
            div, ess = np.asarray(post.divergences), np.asarray(post.ess)
            print(f"{link} rep {rep} ({'cold' if rep == 0 else 'warm'}): {dt:.0f} s, divergences "
                  f"{div.sum()} ({1e4 * div.sum() / (div.size * 4000):.2f} per 1e4 draws, "
                  f"{int((div > 0).sum())} nodes), min ESS {ess.min():.0f}, max R-hat "
                  f"{np.asarray(post.rhat).max():.3f}, mean leapfrog steps "
                  f"{float(np.mean(post.mean_steps)):.1f}", flush=True)


if __name__ == "__main__":
    main()
