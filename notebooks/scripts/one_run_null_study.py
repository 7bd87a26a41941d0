"""The null study of the one-run audits on unequal worlds (docs/renyi.md, "Unequal worlds").

Same-law N(0, 1) scores, ratio·n against n (half of the draws with the larger world in, half
out), through ``renyi.epsilon_lower_bounds`` at confidence 0.95, δ = 1e−5: the fraction of
draws where each bound claims leakage (> 0, the truth being 0), with ``inclusion="fixed"`` (the
larger world subsampled to the smaller one's size) and ``inclusion="coin"`` (every score taken as
a canary with a fair coin: what the audits did before, not valid for scores of fixed worlds).

    python notebooks/scripts/one_run_null_study.py --draws 400
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from jaxaudit import renyi

FIELDS = ("one_run", "fdp_one_run_mu", "clopper_pearson", "mu")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=400)
    p.add_argument("--ratios", default="1,2,10,50,250")
    args = p.parse_args(argv)
    print("| ratio | n_in : n_out | inclusion | " + " | ".join(FIELDS) + " |")
    print("|---" * (3 + len(FIELDS)) + "|")
    for ratio in (int(r) for r in args.ratios.split(",")):
        n_small = 8 if ratio >= 10 else 200
        for inclusion in ("fixed", "coin"):
            rng = np.random.default_rng(ratio)
            hits = dict.fromkeys(FIELDS, 0)
            for t in range(args.draws):
                big, small = rng.normal(size=ratio * n_small), rng.normal(size=n_small)
                inn, out = (big, small) if t % 2 == 0 else (small, big)
                res = renyi.epsilon_lower_bounds(jax.random.key(t), inn, out, delta=1e-5,
                                                 inclusion=inclusion)
                for name in FIELDS:
                    hits[name] += float(getattr(res, name)) > 0.0
            rates = " | ".join(f"{hits[f] / args.draws:.3f}" for f in FIELDS)
            print(f"| {ratio} | {ratio * n_small}:{n_small} and {n_small}:{ratio * n_small} | "
                  f"{inclusion} | {rates} |", flush=True)


if __name__ == "__main__":
    main()
