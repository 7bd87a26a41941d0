"""``jaxaudit bounds``: adversary-aware bounds on how many targets an attack can get right.

Example::

    jaxaudit bounds --epsilon 1 --uniform 10 --targets 1000
    jaxaudit bounds --gdp-mu 1 --zipf 0.9,10000000 --targets 1000 --json out.json --plot out.png
    jaxaudit bounds --max-count 300 --uniform 10 --targets 1000      # which ε keeps v_γ ≤ 300?

Prints the level-γ count bound v_γ (with probability ≥ 1 − γ fewer than v_γ of the targets are
attacked successfully), the aggregate and per-target gain over the prior, and the single-target
baselines of prior work (KGK+, Balle et al. ReRo, MMC and Steinke et al. where they apply) side by
side. With ``--max-success S`` or ``--max-count V`` it answers the inverse question instead: the
largest ε under which every target's posterior success stays ≤ S, or the count bound v_γ ≤ V
(:func:`jaxaudit.bounds.epsilon_for_success`, :func:`jaxaudit.bounds.epsilon_for_count`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from jaxaudit._validation import check_input_path, check_integer, check_output_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bounds",
        help="adversary-aware DP bounds on attack success (Swanberg et al. 2025)",
        description=__doc__.split("\n\n")[0] + " See docs/bounds.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--epsilon", type=float, help="ε of ε-DP or (ε, δ)-DP (default: none; give it or --gdp-mu)")
    privacy = p.add_mutually_exclusive_group()
    privacy.add_argument("--delta", type=float, default=0.0, help="δ of (ε, δ)-DP (default 0)")
    privacy.add_argument("--gdp-mu", type=float, dest="gdp_mu", help="μ of μ-GDP (f-DP bound; default: none)")
    prior = p.add_mutually_exclusive_group(required=True)
    prior.add_argument("--uniform", type=int, metavar="K", help="uniform prior over K values (one of the three priors is required; default: none)")
    prior.add_argument("--zipf", metavar="S,N", help="Zipf prior with exponent S over N values (default: none)")
    prior.add_argument("--priors", metavar="FILE",
                       help="per-target baseline success p_i (.npy, or text, one per line; "
                       "default: none)")
    inverse = p.add_mutually_exclusive_group()
    inverse.add_argument("--max-success", type=float, dest="max_success", metavar="S",
                         help="print the largest ε with every target's posterior success β ≤ S "
                         "(default: none)")
    inverse.add_argument("--max-count", type=int, dest="max_count", metavar="V",
                         help="print the largest ε with count bound v_γ ≤ V, under (ε, --delta)-DP "
                         "(default: none)")
    p.add_argument("--targets", type=int, help="number of targets n (default: length of FILE)")
    p.add_argument("--attempts", type=int, default=1, help="guesses per target (top-k mass)")
    p.add_argument("--gamma", type=float, default=0.05, help="level γ (default 0.05)")
    p.add_argument("--plot", metavar="PATH", help="save the tail bound Pr[L ≥ v] as a PNG (default: no plot)")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON (default: no file)")
    p.add_argument("--quiet", action="store_true", help="print only the count bound")
    p.set_defaults(func=run)


def _priors(args):
    import numpy as np

    from jaxaudit.bounds import uniform_prior, zipf_prior

    if args.uniform is not None:
        if args.targets is None:
            raise ValueError("--targets is required with --uniform")
        kappa = uniform_prior(args.uniform, args.attempts)
        return np.full(args.targets, kappa), f"uniform over {args.uniform} values"
    if args.zipf is not None:
        if args.targets is None:
            raise ValueError("--targets is required with --zipf")
        try:
            s_text, n_text = args.zipf.split(",")
            s, n_float = float(s_text), float(n_text)
        except ValueError as err:
            raise ValueError(f"--zipf must be S,N (e.g. 0.9,10000000), got {args.zipf!r}") from err
        if not (math.isfinite(n_float) and n_float == int(n_float) and n_float >= 1):
            raise ValueError(f"--zipf: N must be a whole number of values >= 1, got {n_text!r}")
        support = int(n_float)
        k = min(args.attempts, support)
        try:
            masses = zipf_prior(s, support, np.arange(1, k + 1))
        except ValueError as err:
            raise ValueError(f"--zipf {args.zipf}: {err}") from err
        kappa = float(masses.sum())
        return np.full(args.targets, kappa), f"Zipf(s={s:g}) over {support} values"
    path = check_input_path("--priors", args.priors)
    if path.suffix == ".npy":
        from jaxaudit.runs import load_npy

        # header checked against the file's size before loading, never unpickled
        values = load_npy(path, name=f"--priors file {path}")
    else:
        try:
            values = np.loadtxt(path, ndmin=1)
        except ValueError as err:
            raise ValueError(f"--priors file {path} is not a text file of numbers "
                             f"({err})") from None
    if np.asarray(values).dtype.kind not in "biuf":
        raise ValueError(f"--priors file {path} must hold numbers, got dtype "
                         f"{np.asarray(values).dtype}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim > 1:
        raise ValueError(f"--priors file {path} must hold one value per target (1-D), got "
                         f"shape {values.shape}")
    values = values.ravel()
    if values.size == 0:
        raise ValueError(f"--priors file {path} holds no values")
    if args.targets is not None and values.size != args.targets:
        if values.size != 1:
            raise ValueError(f"--targets {args.targets} but {path} holds {values.size} priors")
        values = np.full(args.targets, values[0])
    return values, f"per-target priors from {path.name}"


#: Most targets the command holds in memory (one float64 prior each, plus the engine's work
#: arrays): beyond it ``--targets`` is refused instead of failing with a MemoryError.
MAX_TARGETS = 10**8


def _check_args(args) -> None:
    """What only the command knows: the flags' combinations, the memory limit, the output paths
    (before any work). The numbers themselves are checked by the library functions."""
    inverse = args.max_success is not None or args.max_count is not None
    if inverse and (args.epsilon is not None or args.gdp_mu is not None):
        raise ValueError("--max-success and --max-count find ε: give neither --epsilon nor "
                         "--gdp-mu with them")
    if inverse and (args.plot or args.json):
        raise ValueError("--plot and --json describe the bounds at a given ε; they do not apply "
                         "to --max-success or --max-count")
    if not inverse and args.epsilon is None and args.gdp_mu is None:
        raise ValueError("give --epsilon (ε-DP or (ε, δ)-DP) or --gdp-mu (μ-GDP)")
    if args.targets is not None and not 1 <= args.targets <= MAX_TARGETS:
        raise ValueError(f"--targets must lie in [1, {MAX_TARGETS}] (memory), got {args.targets}")
    check_integer("--attempts", args.attempts, minimum=1)  # k of the Zipf top-k mass below
    if args.json:
        check_output_file("--json", args.json)
    if args.plot:
        check_output_file("--plot", args.plot)


def _results(args, priors, prior_desc: str) -> tuple[dict, object]:
    """The JSON the command writes: :func:`jaxaudit.bounds.summarize_bounds` and the prior's
    description."""
    from jaxaudit.bounds import PrivacyModel, summarize_bounds

    privacy = PrivacyModel(epsilon=args.epsilon, delta=args.delta, gdp_mu=args.gdp_mu)
    summary = summarize_bounds(priors, privacy, gamma=args.gamma, uniform_support=args.uniform,
                               attempts=args.attempts)._asdict()
    per_target = summary.pop("per_target")
    baselines = summary.pop("baselines")
    result = {"privacy": summary.pop("privacy"), "prior": prior_desc, **summary}
    if per_target is not None:
        result["per_target"] = per_target._asdict()
    result["baselines"] = baselines
    return result, privacy


_BASELINE_LABELS = {"kgk_plus": "KGK+ 1 − f(κ)", "balle_rero": "Balle et al. ReRo",
                    "balle_rero_zcdp": "Balle et al. ReRo (zCDP ρ = μ²/2)"}


def _print_summary(result: dict) -> None:
    n, gamma, v_gamma = result["targets"], result["gamma"], result["count_bound"]
    print(f"jaxaudit bounds: {result['privacy']}; {result['prior']}; n = {n} targets; "
          f"γ = {gamma:g}")
    vac = "  (vacuous: no v ≤ n qualifies)" if result["vacuous"] else ""
    print(f"  count bound v_γ           : {v_gamma}{vac}  "
          f"(Pr[≥ v_γ targets attacked] ≤ {gamma:g})")
    print(f"  baseline successes Σ p_i  : {result['expected_baseline_successes']:.6g}")
    print(f"  aggregate gain            : {result['aggregate_gain']:.6g}")
    print(f"  single target (κ = {result['max_prior']:.6g}):")
    pt = result.get("per_target")
    if pt is not None and math.isclose(result["single_target_bound"], pt["beta"], rel_tol=1e-9):
        # pure ε-DP: the single-target bound is β(ε, κ) itself; one row with its gain
        label = f"ours β(ε = {pt['epsilon']:g}, κ)"
        print(f"    {label:<24}: {pt['beta']:.6g}  (gain {pt['gain']:.6g}, ratio "
              f"{pt['ratio']:.6g})")
    else:
        print(f"    {'ours':<24}: {result['single_target_bound']:.6g}")
        if pt is not None:
            label = f"β(ε = {pt['epsilon']:g}, κ)"
            print(f"    {label:<24}: {pt['beta']:.6g}  (gain {pt['gain']:.6g}, ratio "
                  f"{pt['ratio']:.6g})")
    baselines = result["baselines"]
    for key, label in _BASELINE_LABELS.items():
        if key in baselines:
            print(f"    {label:<24}: {baselines[key]:.6g}")
    if "mmc_threshold" in baselines:
        print(f"  MMC one-run threshold     : {baselines['mmc_threshold']} correct")
    if "steinke_threshold" in baselines:
        print(f"  Steinke et al. threshold  : {baselines['steinke_threshold']} correct")


def _print_inverse(args, priors, prior_desc: str) -> int:
    """The largest ε for --max-success or --max-count (one library call), printed."""
    from jaxaudit.bounds import epsilon_for_count, epsilon_for_success

    if args.max_success is not None:
        eps = epsilon_for_success(priors, args.max_success)
        target = f"every target's posterior success β(ε, p_i) ≤ {args.max_success:g}"
    else:
        eps = epsilon_for_count(priors, args.max_count, gamma=args.gamma, delta=args.delta)
        dp = f"(ε, {args.delta:g})-DP" if args.delta else "ε-DP"
        target = (f"count bound v_γ ≤ {args.max_count} under {dp} (γ = {args.gamma:g}: with "
                  f"probability ≥ {1 - args.gamma:g} fewer than {args.max_count} targets attacked)")
    if args.quiet:
        print(f"{eps:.6g}")
        return 0
    print(f"jaxaudit bounds: {prior_desc}; n = {priors.size} targets")
    print(f"  largest ε with {target}: {eps:.6g}")
    if eps == -float("inf"):
        print("  (no ε ≥ 0 meets the target: even ε = 0 leaves the prior above it)")
    elif eps == float("inf"):
        print("  (every ε meets the target)")
    return 0


def _plot_tail(path: str, vs, tail, result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gamma, v_gamma = result["gamma"], result["count_bound"]
    fig, ax = plt.subplots(figsize=(6, 4))
    positive = tail > 0
    ax.semilogy(vs[positive], tail[positive], label="bound on Pr[L ≥ v]")
    ax.axhline(gamma, color="gray", ls=":", label=f"γ = {gamma:g}")
    if v_gamma <= result["targets"]:
        ax.axvline(v_gamma, color="C3", ls="--", label=f"v_γ = {v_gamma}")
    ax.set_xlabel("v (targets attacked successfully)")
    ax.set_ylabel("upper bound")
    ax.set_title(f"{result['privacy']}; {result['prior']}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    _check_args(args)
    priors, prior_desc = _priors(args)
    if args.max_success is not None or args.max_count is not None:
        return _print_inverse(args, priors, prior_desc)
    result, privacy = _results(args, priors, prior_desc)
    if args.plot:
        vs = np.arange(0, priors.size + 2)
        with jax.enable_x64(True):
            tail = np.asarray(privacy.tail(priors, vs, args.gamma))

    if args.quiet:
        print(result["count_bound"])
    else:
        _print_summary(result)
    if args.json:
        from jaxaudit.runs import dumps_strict

        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(dumps_strict(result, indent=2) + "\n")  # inf/NaN as null
    if args.plot:
        _plot_tail(args.plot, vs, tail, result)
    return 0
