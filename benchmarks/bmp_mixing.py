"""Is the fixed-strength NUTS posterior's ε_L median as precise as its diagnostics
say? A fixed s (``--strength``, 0.5), counts FP/N0 = 35/200 and FN/N1 = 82/200, 4 chains ×
(``--warmup`` + 1000) draws, ``--keys`` independent runs (one compiled call, one lane per key,
``deduplicate=False``; the first ``--scalar-keys`` also as separate scalar calls with keys 0, 1, …),
against the exact grid posterior (``posterior_grid``, 400 cells).

Prints every run's ε_L median, R-hat, bulk ESS and median MCSE, then the spread of the medians
against what the diagnostics predict: √(0.25/ESS)/p(m) from the bulk ESS and the grid density p at
the grid median m, and the MCSE of the median (``NutsPosterior.mcse_median``), as
T/K = Σ_k (median_k − m)² / (K · mean σ_k²), ≈ 1 (χ²_K/K) when the diagnostics are honest.

    python benchmarks/bmp_mixing.py --keys 64 --scalar-keys 8
"""

import argparse
import time
import warnings

import jax
import numpy as np

from jaxaudit import bmp, mia


def _report(name, medians, ess, mcse, m, dens):
    k = len(medians)
    sig_ess = np.sqrt(0.25 / ess) / dens
    print(f"{name}: {k} runs, medians {[round(float(x), 2) for x in medians]}")
    print(f"  sd of medians {medians.std(ddof=1):.3f} (rms deviation from the grid "
          f"{np.sqrt(np.mean((medians - m) ** 2)):.3f}); predicted from the bulk ESS "
          f"{np.sqrt(np.mean(sig_ess ** 2)):.3f} (T/K {np.mean((medians - m) ** 2) / np.mean(sig_ess ** 2):.2f}), "
          f"mean mcse_median {np.sqrt(np.mean(mcse ** 2)):.3f} "
          f"(T/K {np.mean((medians - m) ** 2) / np.mean(mcse ** 2):.2f}); bulk ESS "
          f"{ess.min():.0f}-{ess.max():.0f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keys", type=int, default=32)
    p.add_argument("--scalar-keys", type=int, default=4)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--strength", type=float, default=0.5)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    counts = mia.ErrorCounts(35.0, 200.0, 82.0, 200.0)
    config = bmp.NutsConfig(num_warmup=args.warmup, num_samples=1000, num_chains=4)
    model = bmp.PosteriorModel(attack_prior=args.strength)
    grid = bmp.posterior_grid(counts, model, num_epsilons=400)
    m = float(grid.quantile("l", 0.5))
    dens = float(grid.density_at("l", m))
    print(f"grid: eps_l median {m:.3f}, density there {dens:.3f}, "
          f"P(eps_l < eps_hat_l/s) = {float(grid.cdf('l', 0.699 / args.strength)):.2f}; "
          f"eps_r median {float(grid.quantile('r', 0.5)):.3f}", flush=True)
    meds, ess, mcse = [], [], []
    for k in range(args.scalar_keys):
        post = bmp.posterior_nuts(jax.random.key(k), counts, model, config)
        meds.append(float(np.median(np.asarray(post.epsilon_left))))
        ess.append(float(post.ess))
        mcse.append(float(post.mcse_median))
        print(f"key {k}: eps_l median {meds[-1]:.2f}, R-hat {float(post.rhat):.3f}, bulk ESS "
              f"{ess[-1]:.0f}, mcse_median {mcse[-1]:.3f}, divergences "
              f"{int(post.divergences)}", flush=True)
    if args.scalar_keys > 1:
        _report("scalar calls", np.array(meds), np.array(ess), np.array(mcse), m, dens)
    if args.keys > 1:
        batch = mia.ErrorCounts(*(np.full(args.keys, float(c)) for c in counts))
        t0 = time.perf_counter()
        post = bmp.posterior_nuts(jax.random.key(100), batch, model, config, deduplicate=False)
        medians = np.median(np.asarray(post.epsilon_left).reshape(args.keys, -1), axis=1)
        print(f"batch: {time.perf_counter() - t0:.0f} s, max R-hat "
              f"{float(np.max(post.rhat)):.3f}, divergences {int(np.sum(post.divergences))}")
        _report("one call, a lane per key", medians, np.asarray(post.ess),
                np.asarray(post.mcse_median), m, dens)


if __name__ == "__main__":
    main()
