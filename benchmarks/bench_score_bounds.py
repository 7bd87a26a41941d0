"""Benchmark: score-based ε lower bounds, jaxaudit against google-deepmind/jax_privacy, warm and
cold, at n = 10³ … 10⁶ scores per world.

Scores: in ~ N(1, 1), out ~ N(0, 1), n of each, from ``numpy.random.default_rng(seed)``.
The same work on both sides, at confidence 0.95 (significance 0.05) and δ = 1e−6:

* jaxaudit: ``renyi.epsilon_lower_bounds(key, in, out, delta=δ, confidence=0.95,
  bonferroni="hull")`` — Clopper–Pearson and GDP threshold bounds, the one-run bound
  (Steinke, Nasr, Jagielski, arXiv 2305.08846) and the f-DP one-run bound (Mahloujifar,
  Melis, Chaudhuri, arXiv 2410.22235) at the ROC-hull thresholds with K = the number of hull
  vertices (jax_privacy's default Bonferroni strategy).
* jax_privacy: ``CanaryScoreAuditor(in, out)`` (it computes the ROC hull) and its
  ``epsilon_one_run``, ``epsilon_one_run_fdp``, ``epsilon_clopper_pearson`` and
  ``epsilon_from_gdp`` at significance 0.05, δ = 1e−6.

The CP and GDP numbers of the two differ by design (jaxaudit chooses the threshold on a held-out
half; jax_privacy takes all thresholds with a Bonferroni correction); the one-run and f-DP one-run
ε must agree: the table gives max |ours − peer| over the two and flags a difference above 1e−5.

Timings:
* **warm**: in this process, both tools side by side: one call at that size (not timed), then
  the median of ``--repeats`` calls, ours and the peer's interleaved (fewer repeats when one call
  is long: at most ``--budget`` seconds of repeats per tool and size, at least one).
* **cold**: the first call at that size in a fresh process (a subprocess of this script, one per
  tool and size): the imports (jax, jaxaudit, jax_privacy, numpy, scipy), the generation of the
  scores and, for jaxaudit, the creation of the PRNG key (which starts JAX's CPU backend) happen
  before the clock starts; everything the call itself does — for jaxaudit any compilation it
  triggers, for jax_privacy the construction of the auditor — is inside it.

Prints a markdown table with the CPU model in its header.

Usage (jax_privacy is in the ``bench`` extra):
  python benchmarks/bench_score_bounds.py [--sizes 1000 10000 100000 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DELTA = 1e-6
CONFIDENCE = 0.95
#: Largest |ours − peer| of the one-run and f-DP one-run ε taken as agreement.
TOLERANCE = 1e-5


def cpu_model() -> str:
    """The CPU's "model name" from ``/proc/cpuinfo`` ("unknown CPU" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)


def ours_call():
    """(setup, call): setup makes the key (starts JAX's backend); call(key, in, out) returns
    (one-run ε, f-DP one-run ε)."""
    import jax

    from jaxaudit.renyi import epsilon_lower_bounds

    def setup():
        return jax.random.key(0)

    def call(key, inn, out):
        res = epsilon_lower_bounds(key, inn, out, delta=DELTA, confidence=CONFIDENCE,
                                   bonferroni="hull")
        return float(res.one_run), float(res.fdp_one_run)

    return setup, call


def peer_call():
    from jax_privacy.auditing import CanaryScoreAuditor

    def setup():
        return None

    def call(_, inn, out):
        auditor = CanaryScoreAuditor(inn, out)
        significance = 1.0 - CONFIDENCE
        one_run = auditor.epsilon_one_run(significance, DELTA)
        fdp = auditor.epsilon_one_run_fdp(significance, DELTA)
        auditor.epsilon_clopper_pearson(significance, DELTA)
        auditor.epsilon_from_gdp(significance, DELTA)
        return float(one_run), float(fdp)

    return setup, call


TOOLS = {"ours": ours_call, "peer": peer_call}


def cold_child(tool: str, n: int, seed: int) -> None:
    """Runs in a fresh process: everything but the call before the clock; prints JSON."""
    setup, call = TOOLS[tool]()
    inn, out = scores(n, seed)
    key = setup()
    start = time.perf_counter()
    values = call(key, inn, out)
    print(json.dumps({"seconds": time.perf_counter() - start, "values": values}))


def cold(tool: str, n: int, seed: int) -> float:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--cold-child", tool,
                          "--sizes", str(n), "--seed", str(seed)],
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def warm(n: int, seed: int, repeats: int, budget: float):
    """Median seconds per tool (interleaved repeats) and the values of each."""
    inn, out = scores(n, seed)
    tools = {name: make() for name, make in TOOLS.items()}
    keys = {name: setup() for name, (setup, _) in tools.items()}
    values, first = {}, {}
    for name, (_, call) in tools.items():
        start = time.perf_counter()
        values[name] = call(keys[name], inn, out)
        first[name] = time.perf_counter() - start
    runs = {name: max(1, min(repeats, int(budget // max(first[name], 1e-9)))) for name in tools}
    times: dict[str, list[float]] = {name: [] for name in tools}
    for r in range(max(runs.values())):
        for name, (_, call) in tools.items():
            if r < runs[name]:
                start = time.perf_counter()
                call(keys[name], inn, out)
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, runs, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6],
                        help="scores per world")
    parser.add_argument("--repeats", type=int, default=5, help="warm calls timed per size")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="at most this many seconds of warm repeats per tool and size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cold", action="store_true", help="skip the cold subprocesses")
    parser.add_argument("--cold-child", choices=sorted(TOOLS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child(args.cold_child, args.sizes[0], args.seed)
        return

    print(f"## Score-based ε bounds: jaxaudit vs jax_privacy ({cpu_model()})\n")
    print(f"in ~ N(1, 1), out ~ N(0, 1), n per world; confidence {CONFIDENCE}, δ = {DELTA}; "
          "one-run + f-DP one-run + Clopper–Pearson + GDP; seconds; ratio = peer / ours "
          "(> 1: ours faster)\n")
    print("| n | ours warm | peer warm | ratio | ours cold | peer cold | ratio | repeats "
          "(ours/peer) | one-run ε ours / peer | f-DP ε ours / peer | max abs diff |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | --- | --- | --- |")
    mismatches = []
    for n in args.sizes:
        medians, runs, values = warm(n, args.seed, args.repeats, args.budget)
        if args.no_cold:
            cold_ours = cold_peer = float("nan")
        else:
            cold_ours, cold_peer = cold("ours", n, args.seed), cold("peer", n, args.seed)
        diff = max(abs(a - b) for a, b in zip(values["ours"], values["peer"], strict=True))
        flag = "" if diff <= TOLERANCE else " **MISMATCH**"
        if flag:
            mismatches.append(n)
        (o1, o2), (p1, p2) = values["ours"], values["peer"]
        print(f"| {n:.0e} | {medians['ours']:.3f} | {medians['peer']:.3f} | "
              f"{medians['peer'] / medians['ours']:.2f} | {cold_ours:.3f} | {cold_peer:.3f} | "
              f"{cold_peer / cold_ours:.2f} | {runs['ours']}/{runs['peer']} | "
              f"{o1:.6f} / {p1:.6f} | {o2:.6f} / {p2:.6f} | {diff:.1e}{flag} |", flush=True)
    print()
    if mismatches:
        print(f"MISMATCH: one-run or f-DP one-run ε differ by more than {TOLERANCE:g} at n = "
              f"{', '.join(map(str, mismatches))}")
    else:
        print(f"The one-run and f-DP one-run ε agree within {TOLERANCE:g} at every n.")


if __name__ == "__main__":
    main()
