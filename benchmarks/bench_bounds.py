"""The single-target success under μ-GDP for 10^4 (μ, p) pairs: jaxaudit against riskcal.

riskcal (Kulynych et al., arXiv 2407.06496; ``pip install riskcal``, the ``bench`` extra) computes
one route, 1 − f(p) = Φ(Φ⁻¹(p) + μ), in numpy/scipy. jaxaudit computes the least of the valid
routes (:func:`jaxaudit.bounds.single_target_success`: that route, inf_ε β(ε, p) + δ_μ(ε) by
Newton's method, and with an alphabet size the uniform fixed point) as one jitted, vmapped call.
Both run in this process, interleaved, float64; each row is the median of ``--repeats`` timed
calls after a warm-up (compilation excluded), and the ratio is ours / riskcal's.

    uv run python benchmarks/bench_bounds.py [--pairs 10000] [--repeats 30]
    uv run python benchmarks/bench_bounds.py --tables    # docs/bounds.md's tables, with riskcal

``--tables`` prints the before → after table of the single-target number on the μ-GDP grid
(the old f-DP tail on its default ε grid, 1 − f(p), the uniform fixed point, the least of the
routes, its mpmath value, riskcal) and the calibration table (σ for a target risk, ours and
riskcal's, q = 0.01, T = 1000).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from jaxaudit.bounds import PrivacyModel, single_target_success  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tables", action="store_true")
    args = parser.parse_args()
    if args.tables:
        tables()
        return
    from riskcal.analysis import get_beta_from_gdp

    rng = np.random.default_rng(0)
    mus = rng.uniform(0.1, 3.0, args.pairs)
    ps = 10.0 ** rng.uniform(-6, np.log10(0.5), args.pairs)
    mus_j, ps_j = jnp.asarray(mus), jnp.asarray(ps)

    ours = jax.jit(jax.vmap(lambda m, p: single_target_success(p, PrivacyModel(mu=m)).bound))
    ours_k = jax.jit(jax.vmap(lambda m, p: single_target_success(
        p, PrivacyModel(mu=m), exact_match=True).bound))
    rows = {
        "riskcal 1 - f(p)": lambda: 1.0 - get_beta_from_gdp(mus, ps),
        "ours, least of 2 routes": lambda: ours(mus_j, ps_j).block_until_ready(),
        "ours, least of 3 routes (exact match)": lambda: ours_k(mus_j, ps_j).block_until_ready(),
    }
    # interleave the repeats of the rows so that a noisy neighbour slows all of them alike
    for fn in rows.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.repeats):
        for name, fn in rows.items():
            t = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t)
    base = float(np.median(samples["riskcal 1 - f(p)"]))
    print(f"{args.pairs} (μ, p) pairs, float64, median of {args.repeats} "
          f"({jax.devices()[0].platform}, {jax.device_count()} device(s))")
    for name, ts in samples.items():
        med = float(np.median(ts))
        print(f"  {name:<36} {med * 1e3:9.3f} ms   ratio {med / base:6.2f}")
    ours_np = np.asarray(ours(mus_j, ps_j))
    theirs = 1.0 - get_beta_from_gdp(mus, ps)
    print(f"  ours ≤ riskcal on {np.mean(ours_np <= theirs * (1 + 1e-12)):.1%} of the pairs; "
          f"median ratio ours/riskcal {np.median(ours_np / theirs):.4f}, "
          f"least {np.min(ours_np / theirs):.4f}")


def _mp_routes(p: float, mu: float, k: int | None) -> float:
    """The least of the routes in mpmath (60 digits): 1 − f(p), the fixed point, and the
    posterior route minimised by findroot on its derivative."""
    import mpmath as mp

    mp.mp.dps = 60
    phi = mp.ncdf
    x = mp.mpf(p)
    z = mp.findroot(lambda z: mp.log(phi(z)) - mp.log(x), -mp.sqrt(-2 * mp.log(x)) if p < 0.5 else 0)
    kgk = phi(z + mu)

    def post(e):
        beta = mp.e**e * x / (1 + (mp.e**e - 1) * x)
        return beta + phi(-e / mu + mu / 2) - mp.e**e * phi(-e / mu - mu / 2)

    from jaxaudit.bounds.summary import PrivacyModel as Model

    start = float(single_target_success(p, Model(mu=mu)).epsilon)
    try:
        e = mp.findroot(lambda e: mp.diff(post, e), max(start, 1e-2))
        best = min(post(e), post(0), 1)
    except (ValueError, ZeroDivisionError):
        best = min(post(0), 1)
    out = min(best, kgk)
    if k is not None:
        zk = mp.findroot(lambda z: mp.log(phi(-z - mu)) - mp.log(k - 1) - mp.log(phi(z)),
                         -mu / 2 if k == 2 else float(np.log(1.0 / k)))
        out = min(out, phi(zk + mu))
    return float(out)


def tables() -> None:
    from riskcal.analysis import get_beta_from_gdp, get_beta_from_pld

    from jaxaudit.bounds import calibrate, gdp_delta, success_tail_fdp
    from jaxaudit.bounds.calibrate import RiskTarget
    from jaxaudit.bounds.single_target import ROUTES

    print("| μ | p | before: f-DP tail, default ε grid | posterior, ε continuous | "
          "1 − f(p) (KGK+) | after: least, any success set (route) | fixed point "
          "(exact match; uniform K = 1/p) | its mpmath value | riskcal 1 − f(p) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for mu in (0.5, 1.0, 2.0):
        for p in (1e-4, 0.01, 0.1, 0.5):
            k = round(1 / p)
            old = float(success_tail_fdp([p], lambda e, mu=mu: gdp_delta(e, mu), 1))
            r = single_target_success(p, PrivacyModel(mu=mu))
            x = single_target_success(p, PrivacyModel(mu=mu), exact_match=True)
            riskcal = 1.0 - float(get_beta_from_gdp(mu, p))
            print(f"| {mu:g} | {p:g} | {old:.4g} | {float(r.posterior):.4g} | "
                  f"{float(r.kgk_plus):.4g} | {float(r.bound):.4g} ({ROUTES[int(r.route)]}) | "
                  f"{float(x.fixed_point):.4g} | {_mp_routes(p, mu, k):.4g} | {riskcal:.4g} |")

    def riskcal_sigma(target_success: float, p: float) -> float:
        """σ with riskcal's 1 − f(p) ≤ target on the replace-one PLD (bisection to 1e−3)."""
        from dp_accounting import NeighboringRelation
        from dp_accounting.pld import privacy_loss_distribution as pld

        def met(s):
            composed = pld.from_gaussian_mechanism(
                s, sampling_prob=0.01, value_discretization_interval=1e-3,
                neighboring_relation=NeighboringRelation.REPLACE_ONE).self_compose(1000)
            return 1.0 - float(get_beta_from_pld(composed, alpha=p)) <= target_success

        lo, hi = 0.5, 2.0
        while hi / lo > 1.001:
            mid = (lo * hi) ** 0.5
            lo, hi = (lo, mid) if met(mid) else (mid, hi)
        return hi

    print("\n| target (q = 0.01, T = 1000, replace-one) | ours: σ | route | riskcal: σ (1 − f(p)) |")
    print("|---|---:|---|---:|")
    for s_max, p, k in ((0.05, 0.01, None), (0.05, 0.01, 100), (0.01, 1e-3, None), (0.2, 0.1, 10)):
        c = calibrate(RiskTarget("success", s_max, prior=p, exact_match=k is not None),
                      sampling_rate=0.01, steps=1000)
        route = ROUTES[int(single_target_success(p, c.privacy, exact_match=k is not None).route)]
        prior = f"p = {p:g}" + (f", uniform over K = {k}" if k else "")
        print(f"| success ≤ {s_max:g} at {prior} | {c.noise:.4g} | {route} | "
              f"{riskcal_sigma(s_max, p):.4g} |")


if __name__ == "__main__":
    main()
