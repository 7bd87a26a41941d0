"""Benchmark: Poisson-binomial upper tails, jaxaudit vs scipy.stats.poisson_binom vs fast-poibin.

For each n, p_i ~ Uniform(0, 0.2) (seeded) and v = ceil(mean + 10 sd): the time of one tail
evaluation Pr[S ≥ v] (median of repeats, all three libraries side by side in this process; the
first call, which includes jit compilation or FFT plan set-up, is reported separately) and the
relative error |x / exact − 1|.

The "exact" value:
  * n ≤ 1000: mpmath exact convolution at 60 significant digits;
  * n ≤ 10^4: jaxaudit's exact log-space recursion (method="recursion"), cross-checked against
    the tilted FFT path;
  * larger n: jaxaudit's tilted FFT engine in a *different configuration* from the default one
    (leaf blocks of 64 instead of 16 Bernoullis, tilted mean at v + 1 sd instead of v), so the
    block recursions, FFT sizes and tilt all differ; the "ref. check" column repeats the relative
    difference between the reference and the default configuration.

Usage:
  python benchmarks/bench_poisson_binomial.py [--sizes 1000 10000 100000 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np


def _timed(fn, repeats):
    start = time.perf_counter()
    value = fn()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return value, first, statistics.median(times) if times else first


def _mpmath_log_tail(q, v, dps=60):
    import mpmath

    with mpmath.workdps(dps):
        pmf = [mpmath.mpf(1)]
        for qi in q:
            qi = mpmath.mpf(float(qi))
            new = [pmf[0] * (1 - qi)]
            new += [pmf[k] * (1 - qi) + pmf[k - 1] * qi for k in range(1, len(pmf))]
            new.append(pmf[-1] * qi)
            pmf = new
        return float(mpmath.log(mpmath.fsum(pmf[v:])))


def _engine_log_tail(q, v, leaf, shift_sd):
    """Our tilted-FFT engine with a given leaf size and tilt (for the reference cross-check)."""
    from jaxaudit.bounds import poisson_binomial as pb

    prep = pb._Prepared(q)
    old = pb.LEAF
    pb.LEAF = leaf
    try:
        s = prep.q
        sd = math.sqrt(float((s * (1 - s)).sum()))
        theta = pb._solve_tilt(prep.logit_q, min(v + shift_sd * sd, prep.m - 0.5))
        tilt = pb._Tilt(prep.logit_q, prep.log_1mq, theta)
        return float(tilt.logsf()[v])
    finally:
        pb.LEAF = old


def _exact(q, v):
    from jaxaudit.bounds import poisson_binomial_tail

    n = q.size
    if n <= 1000:
        return _mpmath_log_tail(q, v), "mpmath (60 digits)", None
    if n <= 10_000:
        rec = float(poisson_binomial_tail(q, v, log=True, method="recursion"))
        fft = _engine_log_tail(q, v, 64, 1.0)
        return rec, "jaxaudit recursion", abs(math.expm1(fft - rec))
    a = _engine_log_tail(q, v, 16, 0.0)  # the configuration jaxaudit uses by default
    b = _engine_log_tail(q, v, 64, 1.0)
    return b, "FFT leaf 64, tilt v+1sd", abs(math.expm1(b - a))


def _rel_err(log_value, log_exact):
    if log_value is None or not np.isfinite(log_value):
        return float("inf")
    return abs(math.expm1(log_value - log_exact))


def _log(x):
    return math.log(x) if x > 0 else -math.inf


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scipy-max-n", type=int, default=100_000,
                        help="skip scipy above this n (O(n^2))")
    args = parser.parse_args(argv)

    import fast_poibin
    import scipy.stats

    from jaxaudit.bounds import poisson_binomial_tail

    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(n)
        q = rng.uniform(0.0, 0.2, n)
        mean, sd = q.sum(), math.sqrt((q * (1 - q)).sum())
        v = int(math.ceil(mean + 10 * sd))
        exact, how, check = _exact(q, v)

        ours, ours_first, ours_t = _timed(
            lambda q=q, v=v: float(poisson_binomial_tail(q, v, log=True)), args.repeats)
        fp, fp_first, fp_t = _timed(
            lambda q=q, v=v: _log(float(fast_poibin.PoiBin(q).pmf[v:].sum())), args.repeats)
        if n <= args.scipy_max_n:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reps = args.repeats if n <= 10_000 else 1
                sp, sp_first, sp_t = _timed(
                    lambda q=q, v=v: _log(float(scipy.stats.poisson_binom.sf(v - 1, q))), reps)
        else:
            sp, sp_t = None, float("nan")
        rows.append(dict(n=n, v=v, exact=exact, how=how, check=check, ours_t=ours_t,
                         ours_first=ours_first, ours_err=_rel_err(ours, exact), sp_t=sp_t,
                         sp_err=_rel_err(sp, exact) if sp is not None else float("nan"),
                         sp_val=sp, fp_t=fp_t, fp_err=_rel_err(fp, exact), fp_val=fp))

    print("Poisson-binomial tail Pr[S >= v], p ~ U(0, 0.2), v = ceil(mean + 10 sd); "
          f"times: median of {args.repeats} (scipy at n > 1e4: 1 run), seconds")
    header = ("| n | v | log10 exact | exact from (ref. check) | jaxaudit s (first call) | "
              "jaxaudit rel err | scipy s | scipy rel err | fast-poibin s | fast-poibin rel err "
              "| speed-up vs scipy | time / fast-poibin |")
    print(header)
    print("|" + "---|" * 12)
    for r in rows:
        check = "" if r["check"] is None else f" ({r['check']:.1e})"
        speed = r["sp_t"] / r["ours_t"] if np.isfinite(r["sp_t"]) else float("nan")
        sp_err = "n/a" if r["sp_val"] is None and not np.isfinite(r["sp_err"]) else (
            f"{r['sp_err']:.1e}" + (" (returned 0)" if r["sp_val"] == -math.inf else ""))
        fp_err = f"{r['fp_err']:.1e}" + (" (returned 0)" if r["fp_val"] == -math.inf else "")
        print(f"| {r['n']:.0e} | {r['v']} | {r['exact'] / math.log(10):.3f} | {r['how']}{check} "
              f"| {r['ours_t']:.4f} ({r['ours_first']:.3f}) | {r['ours_err']:.1e} "
              f"| {r['sp_t']:.3f} | {sp_err} | {r['fp_t']:.4f} | {fp_err} "
              f"| {speed:.0f}x | {r['ours_t'] / r['fp_t']:.2f} |")


if __name__ == "__main__":
    main()
