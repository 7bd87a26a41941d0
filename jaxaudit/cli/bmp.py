"""``jaxaudit bmp``: node-level Bayesian-membership-privacy audit of a GNN pipeline (Yıldırım &
Khosla, arXiv 2606.04069; :func:`jaxaudit.pipelines.run_bmp`, data flow in docs/bmp.md).

Example::

    jaxaudit bmp --dataset cora --model gcn --sampler snowball --ratio 0.5 --models 128 \\
        --edge-access inductive --out reports/cora_snowball/
    jaxaudit bmp --shadow runs/cora_uniform/ --out reports/cora_uniform/   # reuse a shadow run

Output: ``nodes.csv``, ``most_leaking.csv``, ``summary.md`` / ``summary.json`` and PNG plots
(:mod:`jaxaudit.report.bmp`); resumable.
"""

from __future__ import annotations

import argparse
from typing import Any

from jaxaudit.cli._types import bounded, count, filled, finite, positive, sweep_of
from jaxaudit.cli.shadow import FLAGS as SHADOW_FLAGS
from jaxaudit.cli.shadow import add_shadow_options, flags, print_dp, shadow_config

# The library's limits (jaxaudit.pipelines.bmp.MAX_*), here without importing jax so that
# --help stays fast (tests/cli/test_bmp_cli.py checks they agree).
MAX_PRIOR_DRAWS, MAX_NUTS_STEPS, MAX_CHAINS = 10_000_000, 1_000_000, 64
MAX_DRAW_GIB, BYTES_PER_DRAW = 4, 16
ATTACKS = ("lira", "lira_offline", "rmia")  # jaxaudit.mia.ATTACKS (checked by the tests)
#: Config field -> flag, for the library's errors.
FLAGS = dict(SHADOW_FLAGS, shadow_run="--shadow", num_prior_draws="--prior-draws",
             fix_variance="--fix-variance", attack_prior="--attack-prior",
             confidence="--confidence", prior_variance="--prior-variance",
             num_warmup="--num-warmup", num_samples="--num-samples", num_chains="--num-chains",
             min_ess="--min-ess", mp_baseline="--no-mp", chunk_size="--node-chunk",
             compare="--compare", attack="--attack")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bmp",
        help="node-level BMP audit: shadow GNNs, LOO LiRA, per-node posteriors over (eps_L, eps_R)",
        description="Audit node-level Bayesian membership privacy: shadow GNNs on sampled "
        "subgraphs, leave-one-out LiRA with prior-aware decisions, and a NUTS posterior over "
        "(eps_L, eps_R) for every node; resumable; writes CSV/JSON, PNG plots and a summary.")
    add_shadow_options(p, ratio_type=finite)
    p.add_argument("--shadow", default=None, help="reuse the shadow run folder of `jaxaudit shadow` (its configuration replaces --dataset/--model/--sampler/--ratio/--models/--epochs/--edge-access; default: train the shadow models here)")
    p.add_argument("--prior-draws", type=bounded(count, 1, MAX_PRIOR_DRAWS), default=1000, help=f"Monte Carlo draws for the priors eta when not exact, at most {MAX_PRIOR_DRAWS}")
    p.add_argument("--attack", choices=ATTACKS, default="lira", help="membership attack, leave-one-out over the shadow models (default lira)")
    p.add_argument("--fix-variance", action="store_true", help="fixed-variance LiRA")
    p.add_argument("--attack-prior", default="uniform", help="prior on the attack: 'uniform' (its strength s ~ Beta(1, 1), an attack of unknown quality), 'beta:A,B' (s ~ Beta(A, B)), 'fixed:S' (S in [0, 1)) or 'optimal' (the most powerful test, at the corner of the region; no MP baseline)")
    p.add_argument("--confidence", type=finite, default=0.95, help="joint confidence level of the certified lower bounds (default 0.95)")
    p.add_argument("--prior-variance", type=positive, default=10.0, help="variance of the half-normal priors on eps_L, eps_R")
    p.add_argument("--num-warmup", type=bounded(count, 1, MAX_NUTS_STEPS), default=500, help=f"NUTS warm-up steps per chain, at most {MAX_NUTS_STEPS}")
    p.add_argument("--num-samples", type=bounded(count, 1, MAX_NUTS_STEPS), default=1000, help=f"NUTS draws per chain, at most {MAX_NUTS_STEPS} (and --node-chunk x --num-chains x --num-samples x {BYTES_PER_DRAW} bytes at most {MAX_DRAW_GIB:g} GiB)")
    p.add_argument("--num-chains", type=bounded(count, 1, MAX_CHAINS), default=4, help=f"NUTS chains per node, 2 to {MAX_CHAINS}")
    p.add_argument("--min-ess", type=positive, default=None, help="resample (thinned) the nodes whose bulk ESS is below this (e.g. 400; default: no second pass)")
    p.add_argument("--no-mp", action="store_true", help="skip the symmetric MP baseline")
    p.add_argument("--node-chunk", type=count, default=1024, help="nodes per vmapped NUTS chunk (bounds memory; default 1024)")
    p.add_argument("--node-units", type=count, default=1024, help="distinct count tuples (their nodes) per saved posterior unit, one Ray task or --worker share each (default 1024)")
    p.add_argument("--model-chunk", type=count, default=32, help="models per saved shadow chunk")
    p.add_argument("--compare", default=None, help="another `jaxaudit bmp` report folder to plot against (e.g. uniform; its manifest.json and nodes.csv are checked before any work; default: none)")
    p.add_argument("--out", required=True, help="report folder (created; resumed if it exists)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxaudit.pipelines import BmpConfig, run_bmp
    from jaxaudit.report import bmp as report
    from jaxaudit.runs import ProgressBar

    # the audit's and NUTS's fields by their names; the shadow sweep's from the shadow options
    config = filled(BmpConfig(), dict(vars(args), shadow_run=args.shadow, chunk=args.node_units,
                    num_prior_draws=args.prior_draws, mp_baseline=not args.no_mp,
                    chunk_size=args.node_chunk))._replace(shadow=shadow_config(args, chunk=args.model_chunk))
    with flags(FLAGS), ProgressBar("bmp", enabled=not args.quiet) as bar:
        result = run_bmp(config, args.out, progress=bar, sweep=sweep_of(args))
    if not args.quiet:
        print(report.text_table(result))
        print_dp(result.config)
    return 0
