"""``jaxaudit bounds``: adversary-aware bounds on how many targets an attack can get right.

Example::

    jaxaudit bounds --epsilon 1 --uniform 10 --targets 1000
    jaxaudit bounds --gdp-mu 1 --zipf 0.9,10000000 --targets 1000 --json out.json --plot out.png

Prints the level-γ count bound v_γ (with probability ≥ 1 − γ fewer than v_γ of the targets are
attacked successfully), the aggregate and per-target gain over the prior, and the single-target
baselines of prior work (KGK+, Balle et al. ReRo, MMC and Steinke et al. where they apply) side by
side.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bounds",
        help="adversary-aware DP bounds on attack success (Swanberg et al. 2025)",
        description=__doc__.split("\n\n")[0] + " Spec: bounds.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--epsilon", type=float, help="ε of ε-DP or (ε, δ)-DP")
    privacy = p.add_mutually_exclusive_group()
    privacy.add_argument("--delta", type=float, default=0.0, help="δ of (ε, δ)-DP (default 0)")
    privacy.add_argument("--gdp-mu", type=float, dest="gdp_mu", help="μ of μ-GDP (f-DP bound)")
    prior = p.add_mutually_exclusive_group(required=True)
    prior.add_argument("--uniform", type=int, metavar="K", help="uniform prior over K values")
    prior.add_argument("--zipf", metavar="S,N", help="Zipf prior with exponent S over N values")
    prior.add_argument("--priors", metavar="FILE",
                       help="per-target baseline success p_i (.npy, or text, one per line)")
    p.add_argument("--targets", type=int, help="number of targets n (default: length of FILE)")
    p.add_argument("--attempts", type=int, default=1, help="guesses per target (top-k mass)")
    p.add_argument("--gamma", type=float, default=0.05, help="level γ (default 0.05)")
    p.add_argument("--plot", metavar="PATH", help="save the tail bound Pr[L ≥ v] as a PNG")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON")
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
            s, support = float(s_text), int(float(n_text))
        except ValueError as err:
            raise ValueError(f"--zipf must be S,N (e.g. 0.9,10000000), got {args.zipf!r}") from err
        k = min(args.attempts, support)
        masses = zipf_prior(s, support, np.arange(1, k + 1))
        kappa = float(masses.sum())
        return np.full(args.targets, kappa), f"Zipf(s={s:g}) over {support} values"
    path = Path(args.priors)
    if not path.is_file():
        raise FileNotFoundError(f"--priors file not found: {path}")
    values = np.load(path) if path.suffix == ".npy" else np.loadtxt(path, ndmin=1)
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError(f"--priors file {path} holds no values")
    if args.targets is not None and values.size != args.targets:
        if values.size != 1:
            raise ValueError(f"--targets {args.targets} but {path} holds {values.size} priors")
        values = np.full(args.targets, values[0])
    return values, f"per-target priors from {path.name}"


def run(args) -> int:
    import jax
    import numpy as np

    from jaxaudit._validation import check_probability
    from jaxaudit.bounds import (
        balle_rero_pure,
        balle_rero_zcdp,
        gdp_delta,
        inverse_blowup_gdp,
        inverse_blowup_pure,
        kgk_bound_approx,
        kgk_bound_gdp,
        kgk_bound_pure,
        mmc_threshold,
        posterior_success,
        steinke_p_value,
        success_count_bound,
        success_count_bound_fdp,
        success_tail,
        success_tail_fdp,
    )

    if args.epsilon is None and args.gdp_mu is None:
        raise ValueError("give --epsilon (ε-DP or (ε, δ)-DP) or --gdp-mu (μ-GDP)")
    if args.targets is not None and args.targets < 1:
        raise ValueError(f"--targets must be >= 1, got {args.targets}")
    if args.attempts < 1:
        raise ValueError(f"--attempts must be >= 1, got {args.attempts}")
    if args.uniform is not None and args.uniform < 2:
        raise ValueError(f"--uniform must be >= 2, got {args.uniform}")
    check_probability("--gamma", args.gamma, open_low=True, open_high=True)
    priors, prior_desc = _priors(args)
    n = priors.size
    kappa = float(priors.max())
    gdp = args.gdp_mu is not None
    if gdp and args.gdp_mu <= 0:
        raise ValueError(f"--gdp-mu must be > 0, got {args.gdp_mu}")

    with jax.enable_x64(True):
        if gdp:
            mu = args.gdp_mu
            delta_fn = lambda e: gdp_delta(e, mu)
            v_gamma = success_count_bound_fdp(priors, delta_fn, args.gamma)
            tail_fn = lambda v: success_tail_fdp(priors, delta_fn, v, gamma=args.gamma)
            privacy = f"{mu:g}-GDP (f-DP bound, minimised over an ε grid)"
            per_target = {
                "kgk_plus": float(kgk_bound_gdp(kappa, mu)),
                "balle_rero_zcdp": float(balle_rero_zcdp(kappa, mu**2 / 2.0)),
            }
            inverse_blowup = inverse_blowup_gdp(mu)
            eps_point = args.epsilon
            # Single target under f-DP: inf_ε β(ε, κ) + δ_f(ε) (n = 1 in the tail bound).
            ours_single = float(success_tail_fdp([kappa], delta_fn, 1, gamma=args.gamma))
        else:
            eps, delta = args.epsilon, args.delta
            v_gamma = success_count_bound(priors, eps, delta, args.gamma)
            tail_fn = lambda v: success_tail(priors, eps, v, delta)
            privacy = f"({eps:g}, {delta:g})-DP" if delta else f"{eps:g}-DP"
            per_target = {
                "kgk_plus": float(kgk_bound_approx(kappa, eps, delta) if delta
                                  else kgk_bound_pure(kappa, eps)),
                "balle_rero": float(balle_rero_pure(kappa, eps)) if not delta else None,
            }
            inverse_blowup = inverse_blowup_pure(eps) if not delta else None
            eps_point = eps
            ours_single = float(success_tail([kappa], eps, 1, delta))

        result = {
            "privacy": privacy,
            "prior": prior_desc,
            "targets": n,
            "gamma": args.gamma,
            "count_bound": v_gamma,
            "vacuous": v_gamma > n,
            "expected_baseline_successes": float(priors.sum()),
            "aggregate_gain": (min(v_gamma, n) - float(priors.sum())) / n,
            "max_prior": kappa,
            "single_target_bound": ours_single,
        }
        if eps_point is not None:
            beta = float(posterior_success(kappa, eps_point))
            result["per_target"] = {"epsilon": eps_point, "beta": beta, "gain": beta - kappa,
                                    "ratio": beta / kappa if kappa > 0 else math.exp(eps_point)}
        result["baselines"] = {k: v for k, v in per_target.items() if v is not None}
        if args.uniform is not None and inverse_blowup is not None:
            result["baselines"]["mmc_threshold"] = mmc_threshold(
                n, n, args.uniform, inverse_blowup, args.gamma)
        if args.uniform == 2 and not gdp and args.attempts == 1:
            lo, hi = 0, n + 1  # Steinke et al. one-run threshold: smallest v with p-value ≤ γ
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if steinke_p_value(n, n, mid, args.epsilon, args.delta) <= args.gamma:
                    hi = mid
                else:
                    lo = mid
            result["baselines"]["steinke_threshold"] = hi

        if args.plot:
            vs = np.arange(0, n + 2)
            tail = np.asarray(tail_fn(vs))

    if args.quiet:
        print(v_gamma)
    else:
        print(f"jaxaudit bounds: {privacy}; {prior_desc}; n = {n} targets; γ = {args.gamma:g}")
        vac = "  (vacuous: no v ≤ n qualifies)" if v_gamma > n else ""
        print(f"  count bound v_γ           : {v_gamma}{vac}  "
              f"(Pr[≥ v_γ targets attacked] ≤ {args.gamma:g})")
        print(f"  baseline successes Σ p_i  : {result['expected_baseline_successes']:.6g}")
        print(f"  aggregate gain            : {result['aggregate_gain']:.6g}")
        print(f"  single target (κ = {kappa:.6g}):")
        print(f"    ours                    : {ours_single:.6g}")
        if "per_target" in result:
            pt = result["per_target"]
            print(f"    ours β(ε = {pt['epsilon']:g}, κ)      : {pt['beta']:.6g}  (gain "
                  f"{pt['gain']:.6g}, ratio {pt['ratio']:.6g})")
        names = {"kgk_plus": "KGK+ 1 − f(κ)", "balle_rero": "Balle et al. ReRo",
                 "balle_rero_zcdp": "Balle et al. ReRo (zCDP ρ = μ²/2)"}
        for key, label in names.items():
            if key in result["baselines"]:
                print(f"    {label:<24}: {result['baselines'][key]:.6g}")
        if "mmc_threshold" in result["baselines"]:
            print(f"  MMC one-run threshold     : {result['baselines']['mmc_threshold']} correct")
        if "steinke_threshold" in result["baselines"]:
            print(f"  Steinke et al. threshold  : {result['baselines']['steinke_threshold']} correct")

    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        positive = tail > 0
        ax.semilogy(vs[positive], tail[positive], label="bound on Pr[L ≥ v]")
        ax.axhline(args.gamma, color="gray", ls=":", label=f"γ = {args.gamma:g}")
        if v_gamma <= n:
            ax.axvline(v_gamma, color="C3", ls="--", label=f"v_γ = {v_gamma}")
        ax.set_xlabel("v (targets attacked successfully)")
        ax.set_ylabel("upper bound")
        ax.set_title(f"{privacy}; {prior_desc}", fontsize=9)
        ax.legend()
        fig.tight_layout()
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=120)
        plt.close(fig)
    return 0
