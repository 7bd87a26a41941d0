"""Measure, then choose: a short timed trial picks the fastest CPU configuration of a workload.

The fastest layout of a canary run or a shadow-model epoch on a CPU depends on the machine:
blocks of one example with one run per device won on the AVX-512 machines (dispatch-bound),
whole-batch ghost clipping with runs vmapped together won by 1.44× on a Zen 3 (matmul-bound;
``benchmarks/README.md``). So, as XLA autotunes its GPU kernels, an entry point that was not
given a configuration times each candidate on a reduced version of the real program (the same
shapes, a couple of steps) and keeps the fastest. What a reduced program times must be what a
job spends its time on: the per-step cost, not a call's fixed cost. A trial of one chunk of two
epochs chose a shadow-model layout that made a 200-epoch sweep 1.27× slower. Each candidate is
measured twice, in turn, so that a slow spell of the machine does not decide. The choice is
cached per machine (CPU model,
JAX and jaxlib versions, device count) and per workload shape in the user's cache directory
(``$JAXAUDIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxaudit``, else ``~/.cache/jaxaudit``;
``autotune.json``), so the trial runs once per machine and shape.

``JAXAUDIT_AUTOTUNE=0`` (or ``off``/``false``) turns the trial off: the entry points then use
their fixed defaults, for reproducible timing. A caller who fixes the configuration (a chunk
size, a block size) never triggers a trial. The candidates compute the same numbers: each entry
point's tests check that every candidate gives the same results (bit for bit where the
arithmetic is the same, to float tolerance where the layout changes the order of a sum).

Host-side only (it times compiled programs); nothing here is traced.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = ["Trial", "choose"]

#: Environment variable that turns the trial off ("0", "off", "false", "no").
ENV = "JAXAUDIT_AUTOTUNE"


class Trial(NamedTuple):
    """Which candidate a workload uses and why.

    Attributes:
      choice: the candidate's name.
      source: "trial" (timed now), "cache" (timed earlier on this machine and shape), "off"
        (``JAXAUDIT_AUTOTUNE=0``: the default) or "default" (a single candidate).
      seconds: seconds per unit of each candidate timed (empty unless timed, now or earlier).
      cost: seconds the trial took (0 unless timed now).
    """

    choice: str
    source: str
    seconds: dict[str, float]
    cost: float


def autotune_enabled() -> bool:
    """False when ``JAXAUDIT_AUTOTUNE`` is "0", "off", "false" or "no"."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def cache_file() -> Path:
    """``autotune.json`` in ``$JAXAUDIT_CACHE_DIR``, ``$XDG_CACHE_HOME/jaxaudit`` or
    ``~/.cache/jaxaudit``."""
    root = os.environ.get("JAXAUDIT_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = str(Path(xdg) / "jaxaudit") if xdg else str(Path.home() / ".cache" / "jaxaudit")
    return Path(root) / "autotune.json"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def machine_fingerprint() -> str:
    """CPU model, cores this process may use, JAX/jaxlib versions, backend and device count."""
    import jax
    import jaxlib

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{_cpu_model()} | {cores} cores | jax {jax.__version__} jaxlib {jaxlib.__version__}"
            f" | {jax.default_backend()} x{jax.local_device_count()}")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}    # no cache yet, or an unreadable one: it is rewritten


def _lookup(data: dict, *keys: str) -> object:
    """``data[k1][k2]...``, or None where a level is missing or not a dict."""
    level: object = data
    for key in keys:
        if not isinstance(level, dict):
            return None
        level = level.get(key)
    return level


def _seconds(value: object) -> float:
    """A timing as a float; NaN and non-numeric timings become +inf (never chosen)."""
    try:
        t = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(t) else t


def _write(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass         # a read-only home: the choice is simply not remembered


def seconds_per_unit(fn: Callable[[], object], units: float, repeats: int = 10,
                     enough: float = 1.0) -> float:
    """Fastest wall seconds of ``fn()`` per unit over up to ``repeats`` timed calls, after one
    call that compiles and warms up; the timing stops early once ``enough`` seconds were timed (a
    long call is its own average). The fastest, not a median: on the 2-core Zen 5 a program's
    first 1–1.5 s sometimes ran 35% slow (the whole batch at 8.5 ms per run-step, then 6.1), and a
    median of two such calls reversed a 1.4× ranking (``benchmarks/README.md``; :func:`choose`
    also times every candidate twice, in turn). ``fn`` must block until its result is ready
    (e.g. return a numpy array)."""
    fn()
    times: list[float] = []
    while len(times) < repeats and sum(times) < enough:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) / units


def choose(workload: str, shape: str, candidates: Sequence[str],
           measure: Callable[[str], float], default: str, *,
           refine: Callable[[str], Sequence[str]] | None = None, passes: int = 2) -> Trial:
    """The fastest of ``candidates`` for ``workload`` at ``shape`` on this machine.

    From the cache when this machine timed this workload and shape before; otherwise each
    candidate is timed by ``measure(name)`` (seconds per unit, e.g. :func:`seconds_per_unit`),
    the fastest is cached and returned. Each candidate is measured ``passes`` times, in turn
    (every candidate, then every candidate again), and keeps its fastest figure: a slow spell of
    the machine then hits one measurement of a candidate, not all of them (the first candidate
    timed in a process was the one it hit most). With the trial off (``JAXAUDIT_AUTOTUNE=0``) or a single
    candidate, ``default`` is returned untimed.

    Args:
      workload: the entry point, e.g. "canary_runs".
      shape: what the timing depends on besides the machine (model, data shape, devices).
      candidates: candidate names (``default`` among them).
      measure: seconds per unit of one candidate.
      default: the candidate used without a trial.
      refine: a second stage: ``refine(winner)`` names the further candidates worth timing
        once the fastest of ``candidates`` is known (each costs a compilation, so a trial times
        the neighbours of the first stage's winner instead of every combination). The fastest
        of everything timed is chosen.
    """
    if default not in candidates:
        raise ValueError(f"default {default!r} is not one of the candidates {list(candidates)}")
    valid = list(candidates) + ([n for c in candidates for n in refine(c) if n not in candidates]
                                if refine is not None else [])
    if not autotune_enabled():
        return Trial(default, "off", {}, 0.0)
    if len(candidates) == 1:
        return Trial(default, "default", {}, 0.0)
    path = cache_file()
    machine = machine_fingerprint()
    entry = _lookup(_read(path), machine, workload, shape)
    if isinstance(entry, dict) and entry.get("choice") in valid:
        cached = entry.get("seconds")
        return Trial(entry["choice"], "cache", dict(cached) if isinstance(cached, dict) else {}, 0.0)
    t0 = time.perf_counter()
    # a NaN timing (a failed trial) is never chosen: min() would keep whichever came first
    def timed(names: Sequence[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        for _ in range(max(int(passes), 1)):
            for name in names:
                out[name] = min(out.get(name, math.inf), _seconds(measure(name)))
        return out

    seconds = timed(candidates)
    if refine is not None:
        first = min(candidates, key=lambda n: seconds[n])
        seconds.update(timed([name for name in refine(first) if name not in seconds]))
    cost = time.perf_counter() - t0
    choice = min(seconds, key=lambda n: seconds[n])
    data = _read(path)
    level = data
    for key in (machine, workload):  # an edited or foreign cache: a non-dict level is replaced
        if not isinstance(level.get(key), dict):
            level[key] = {}
        level = level[key]
    level[shape] = {
        "choice": choice, "trial_seconds": round(cost, 2),
        "seconds": {n: t if math.isfinite(t) else None for n, t in seconds.items()},  # strict JSON
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _write(path, data)
    return Trial(choice, "trial", seconds, cost)
