"""Benchmark: Poisson-binomial upper tails, jaxaudit (XLA) vs its former host engine vs
scipy.stats.poisson_binom vs fast-poibin.

For each n, p_i ~ Uniform(0, 0.2) (seeded) and v = ceil(mean + 10 sd): the time of one tail
evaluation Pr[S ≥ v] (median of repeats, all libraries side by side in this process, jaxaudit's
and the host engine's repeats interleaved; the first call, which includes jit compilation or FFT
plan set-up, is reported separately) and the relative error |x / exact − 1|.

"jaxaudit" is the current engine (tilted FFT divide and conquer in jnp, float64, no host round
trip); "host (old)" is the numpy/scipy.fft engine it replaced, loaded from git history
(``--old-commit``, default the last commit that had it), so the two are timed on the same
machine in the same run.

The "exact" value:
  * n ≤ 1000: mpmath exact convolution at 60 significant digits;
  * n ≤ 10^4: jaxaudit's exact log-space recursion (method="recursion"), cross-checked against
    the FFT path;
  * larger n: the old host engine in a *different configuration* from jaxaudit's (leaf blocks of
    64 instead of 16 Bernoullis, tilted mean at v + 1 sd instead of v, scipy's FFT sizes), so the
    block recursions, FFT sizes, tilt and FFT library all differ; the "ref. check" column is the
    relative difference between that reference and the old engine's default configuration.

Usage (fast-poibin is in the ``bench`` extra, or: ``uv run --with fast-poibin python ...``):
  python benchmarks/bench_poisson_binomial.py [--sizes 1000 10000 100000 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

#: The last commit with the host (numpy/scipy.fft) engine.
OLD_COMMIT = "8062299"


def _load_old_engine(commit: str):
    """jaxaudit/bounds/poisson_binomial.py as of ``commit``, imported as its own module."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{commit}:jaxaudit/bounds/poisson_binomial.py"],
                            cwd=root, capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "poisson_binomial_host.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("poisson_binomial_host", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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


def _timed_pair(fn_a, fn_b, repeats):
    """_timed for two functions with their repeats interleaved (a, b, a, b, ...), so that a
    change in the machine's load during the run affects both alike."""
    values, firsts, times = [], [], ([], [])
    for fn in (fn_a, fn_b):
        start = time.perf_counter()
        values.append(fn())
        firsts.append(time.perf_counter() - start)
    for _ in range(repeats):
        for fn, ts in zip((fn_a, fn_b), times, strict=True):
            start = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - start)
    return [(value, first, statistics.median(ts) if ts else first)
            for value, first, ts in zip(values, firsts, times, strict=True)]


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


def _host_log_tail(old, q, v, leaf, shift_sd):
    """The old host engine with a given leaf size and tilt (for the reference cross-check)."""
    prep = old._Prepared(q)
    saved = old.LEAF
    old.LEAF = leaf
    try:
        s = prep.q
        sd = math.sqrt(float((s * (1 - s)).sum()))
        theta = old._solve_tilt(prep.logit_q, min(v + shift_sd * sd, prep.m - 0.5))
        tilt = old._Tilt(prep.logit_q, prep.log_1mq, theta)
        return float(tilt.logsf()[v])
    finally:
        old.LEAF = saved


def _exact(old, q, v):
    from jaxaudit.bounds import poisson_binomial_tail

    n = q.size
    if n <= 1000:
        return _mpmath_log_tail(q, v), "mpmath (60 digits)", None
    if n <= 10_000:
        rec = float(poisson_binomial_tail(q, v, log=True, method="recursion"))
        fft = float(poisson_binomial_tail(q, v, log=True, method="fft"))
        return rec, "jaxaudit recursion", abs(math.expm1(fft - rec))
    a = _host_log_tail(old, q, v, 16, 0.0)  # the old engine's default configuration
    b = _host_log_tail(old, q, v, 64, 1.0)
    return b, "host FFT leaf 64, tilt v+1sd", abs(math.expm1(b - a))


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
    parser.add_argument("--old-commit", default=OLD_COMMIT,
                        help="git commit holding the host engine (default %(default)s)")
    args = parser.parse_args(argv)

    import fast_poibin
    import scipy.stats

    from jaxaudit.bounds import poisson_binomial_tail

    old = _load_old_engine(args.old_commit)
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(n)
        q = rng.uniform(0.0, 0.2, n)
        mean, sd = q.sum(), math.sqrt((q * (1 - q)).sum())
        v = int(math.ceil(mean + 10 * sd))
        exact, how, check = _exact(old, q, v)

        (ours, ours_first, ours_t), (host, host_first, host_t) = _timed_pair(
            lambda q=q, v=v: float(poisson_binomial_tail(q, v, log=True)),
            lambda q=q, v=v: float(old.poisson_binomial_tail(q, v, log=True)), args.repeats)
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
                         ours_first=ours_first, ours_err=_rel_err(ours, exact), host_t=host_t,
                         host_first=host_first, host_err=_rel_err(host, exact), sp_t=sp_t,
                         sp_err=_rel_err(sp, exact) if sp is not None else float("nan"),
                         sp_val=sp, fp_t=fp_t, fp_err=_rel_err(fp, exact), fp_val=fp))

    print("Poisson-binomial tail Pr[S >= v], p ~ U(0, 0.2), v = ceil(mean + 10 sd); "
          f"times: median of {args.repeats} (scipy at n > 1e4: 1 run), seconds")
    header = ("| n | v | log10 exact | exact from (ref. check) | jaxaudit s (first call) | "
              "jaxaudit rel err | host (old) s (first call) | host rel err | scipy s | "
              "scipy rel err | fast-poibin s | fast-poibin rel err | host / jaxaudit | "
              "jaxaudit / fast-poibin |")
    print(header)
    print("|" + "---|" * 14)
    for r in rows:
        check = "" if r["check"] is None else f" ({r['check']:.1e})"
        sp_err = "n/a" if r["sp_val"] is None and not np.isfinite(r["sp_err"]) else (
            f"{r['sp_err']:.1e}" + (" (returned 0)" if r["sp_val"] == -math.inf else ""))
        fp_err = f"{r['fp_err']:.1e}" + (" (returned 0)" if r["fp_val"] == -math.inf else "")
        print(f"| {r['n']:.0e} | {r['v']} | {r['exact'] / math.log(10):.3f} | {r['how']}{check} "
              f"| {r['ours_t']:.4f} ({r['ours_first']:.2f}) | {r['ours_err']:.1e} "
              f"| {r['host_t']:.4f} ({r['host_first']:.2f}) | {r['host_err']:.1e} "
              f"| {r['sp_t']:.3f} | {sp_err} | {r['fp_t']:.4f} | {fp_err} "
              f"| {r['host_t'] / r['ours_t']:.2f} | {r['ours_t'] / r['fp_t']:.2f} |")


if __name__ == "__main__":
    main()
