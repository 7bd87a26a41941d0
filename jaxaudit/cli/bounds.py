"""``jaxaudit bounds``: adversary-aware bounds on how many targets an attack can get right. E.g.::

    jaxaudit bounds --epsilon 1 --uniform 10 --targets 1000
    jaxaudit bounds --max-count 300 --uniform 10 --targets 1000      # which ε keeps v_γ ≤ 300?
    jaxaudit bounds --calibrate success=0.05 --uniform 100 --dpsgd 0.01,1000   # which σ?

Prints v_γ beside prior work, the largest ε with every β ≤ S or v_γ ≤ V, or the least DP-SGD
noise (largest ε) meeting a target risk (``jaxaudit.bounds.calibrate``; else ``run_bounds``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from jaxaudit._validation import check_output_file
from jaxaudit._validation.paths import check_read_size
from jaxaudit.cli._types import as_flags


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("bounds", help="adversary-aware DP bounds on attack success (Swanberg et al. 2025)", description=__doc__.split(" E.g.")[0] + " See docs/bounds.md.",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epsilon", type=float, help="ε of ε-DP or (ε, δ)-DP (default: none; give it or --gdp-mu)")
    privacy = p.add_mutually_exclusive_group()
    privacy.add_argument("--delta", type=float, default=0.0, help="δ of (ε, δ)-DP (default 0)")
    privacy.add_argument("--gdp-mu", type=float, dest="mu", help="μ of μ-GDP (f-DP bound; default: none)")
    prior = p.add_mutually_exclusive_group()
    prior.add_argument("--uniform", type=int, metavar="K", help="uniform prior over K values (one of the three priors is required; default: none)")
    prior.add_argument("--zipf", metavar="S,N", help="Zipf prior with exponent S over N values (default: none)")
    prior.add_argument("--priors", metavar="FILE", help="per-target baseline success p_i (.npy, or text, one per line; default: none)")
    inverse = p.add_mutually_exclusive_group()
    inverse.add_argument("--max-success", type=float, dest="max_success", metavar="S", help="print the largest ε with every target's posterior success β ≤ S (default: none)")
    inverse.add_argument("--max-count", type=int, dest="max_count", metavar="V", help="print the largest ε with count bound v_γ ≤ V, under (ε, --delta)-DP; a search over ε of tail bounds, about an hour at 10^7 targets on a 2-core AMD EPYC (default: none)")
    p.add_argument("--targets", type=int, help="number of targets n (default: length of FILE)")
    p.add_argument("--attempts", type=int, default=1, help="guesses per target (top-k mass)")
    p.add_argument("--gamma", type=float, default=0.05, help="level γ (default 0.05)")
    p.add_argument("--plot", metavar="PATH", help="save the tail bound Pr[L ≥ v] as a PNG; it is evaluated at every v = 0..n+1, about 10 minutes at 10^6 targets on a 2-core AMD EPYC (default: no plot)")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON (default: no file)")
    p.add_argument("--quiet", action="store_true", help="print only the count bound")
    inverse.add_argument("--calibrate", metavar="KIND=VALUE", type=lambda t: (t.partition("=")[0], float(t.partition("=")[2])), help="print the least noise multiplier (with --dpsgd) or largest ε meeting success=S (prior 1/K of --uniform), count=V (--targets of them), advantage=A or tpr=T (at --fpr) (default: none)")
    p.add_argument("--dpsgd", metavar="Q,T", type=lambda t: (lambda q, steps: (float(q), float(steps)))(*t.split(",")), help="DP-SGD's Poisson rate q and steps T, replace-one, for --calibrate (default: none: calibrate ε)")
    p.add_argument("--fpr", type=float, help="the FPR of --calibrate tpr=T (default: none)")
    p.set_defaults(func=run)


def config(args: argparse.Namespace) -> Any:
    """The :class:`~jaxaudit.pipelines.BoundsConfig` of the parsed flags."""
    from jaxaudit.pipelines import BoundsConfig

    prior = f"uniform:{args.uniform}" if args.uniform is not None else None if args.zipf is None else f"zipf:{args.zipf}"
    return BoundsConfig(epsilon=args.epsilon, delta=args.delta, mu=args.mu, prior=prior, priors_file=args.priors, targets=args.targets, attempts=args.attempts,
                        gamma=args.gamma, max_success=args.max_success, max_count=args.max_count, tail_curve=args.plot is not None)


SECONDS_PER_TARGET = 566e-6  #: of --plot and --max-count (566 s at 10^6 targets, 2-core AMD EPYC)


def run(args: argparse.Namespace) -> int:
    from jaxaudit.bounds.registry import PriorSpecError
    from jaxaudit.pipelines import run_bounds
    from jaxaudit.report import bounds as report

    if args.calibrate: return _calibrate(args)  # a calibration, not a bound at a given privacy  # noqa: E701
    inverse = "--max-success" if args.max_success is not None else "--max-count"
    if args.json and (args.max_success is not None or args.max_count is not None):
        raise ValueError(f"--json describes the bounds at a given ε; it does not apply to {inverse}")
    for flag, path in (("--json", args.json), ("--plot", args.plot)):
        if path:
            check_output_file(flag, path)  # before any work
    if args.priors is not None and os.path.isfile(args.priors):  # before it is read (text: 4x)
        check_read_size("--priors", args.priors, bytes_per_byte=2.0 + 2.0 * (args.priors[-4:] != ".npy"))
    prior_flag = "--uniform" if args.uniform is not None else "--zipf"
    slow = "--plot" if args.plot else "--max-count" if args.max_count is not None else None
    if slow and isinstance(args.targets, int) and args.targets >= 100_000:  # minutes: say so
        print(f"jaxaudit bounds: {slow} at {args.targets} targets takes about "
              f"{args.targets * SECONDS_PER_TARGET / 60:.0f} min (2-core AMD EPYC)…", file=sys.stderr)
    with as_flags(priors_file="--priors", prior=prior_flag,
                  max_success="--max-success", max_count="--max-count", tail_curve="--plot",
                  mu="--gdp-mu", epsilon="--epsilon", delta="--delta", gamma="--gamma",
                  targets="--targets", attempts="--attempts"):
        try:
            result = run_bounds(config(args))
        except PriorSpecError as err:  # the flag takes the parameters alone: quote those
            raise ValueError(err.for_flag(prior_flag)) from None
    print(report.text(result, quiet=args.quiet))
    if args.json:
        report.write_json(args.json, result)
    if args.plot:
        report.plot_tail(args.plot, result)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from jaxaudit.bounds import RiskTarget, calibrate
    (kind, value), k = args.calibrate, args.uniform
    q, steps = args.dpsgd or (None, None)
    if k is not None and k < 1: raise ValueError(f"--uniform must be K (e.g. --uniform 10), got '{k}'")  # noqa: E701
    with as_flags(**{"target.value": "--calibrate", "target.kind": "--calibrate", "target.prior": "--uniform", "target.targets": "--targets", "target.fpr": "--fpr", "sampling_rate": "--dpsgd", "steps": "--dpsgd", "target.gamma": "--gamma", "delta": "--delta"}):
        c = calibrate(RiskTarget(kind, value, None if k is None else 1.0 / k, args.targets, args.fpr, k is not None and kind == "success", args.gamma), sampling_rate=q, steps=steps, delta=args.delta or None)
    print("jaxaudit bounds:", f"noise multiplier σ = {c.noise:.6g}" if c.noise is not None else f"ε = {c.epsilon:.6g}", f"(σ rounded up, ε down); {kind} bound there: {c.achieved:.6g} ≤ {value:g}")
    return 0

