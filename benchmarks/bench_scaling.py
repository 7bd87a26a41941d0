"""Scaling of shadow training over forced host devices, and the cost of checkpointing.

Part 1: shadow-GCN training throughput (models per second) on Cora with the model axis sharded
over 1, 2, 4 and 8 devices (``XLA_FLAGS=--xla_force_host_platform_device_count=D``, one
subprocess per D since the flag must be set before jax starts). On a CPU host the forced devices
share the same cores, so this measures the overhead of the sharded code path and whatever
parallelism XLA finds, not a multi-accelerator speed-up.

Part 2: checkpoint overhead of a resumable sweep: the same chunked shadow run computed with and
without ``jaxaudit.runs`` (atomic per-chunk npz + checksum), as a fraction of run time.

Part 3 (``--part backends``): one tiny-but-real shadow sweep (Cora GCNs, a few models per unit)
run by each way of spreading units: the serial driver (``run_shadow`` in one process), Ray with 1
and 2 workers (a local cluster on 127.0.0.1; the driver writes every unit), one ``jaxaudit shadow``
process, and 2 independent ``jaxaudit shadow --worker I/2`` processes on one folder plus the final
plain run that verifies it. Reported: wall seconds (median of the repeats; the first repeat,
which starts cold Ray workers and compiles, shown apart), units per second, and the per-unit
overhead ``(workers × wall − serial wall) / units``: the worker-seconds a unit costs beyond the
serial driver's (start-up, import, compilation in each worker, transfer, commit).

Usage: python benchmarks/bench_scaling.py [--models 32] [--epochs 200] [--repeats 3]
       [--part all|devices|checkpoint|backends] [--units 16] [--unit-models 2]
       [--unit-epochs 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if "JAXAUDIT_DATA" not in os.environ and _SHARED.is_dir():
    os.environ["JAXAUDIT_DATA"] = str(_SHARED)

WORKER = textwrap.dedent(
    """
    import json, sys, time
    import jax
    from jaxaudit.datasets import load_planetoid
    from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler
    models, epochs, repeats = map(int, sys.argv[1:4])
    graph = load_planetoid("cora")
    sampler = uniform_sampler(0.5)
    t0 = time.perf_counter()
    out = train_shadow_models(jax.random.key(0), graph, sampler, "gcn", models, epochs=epochs)
    out.scores.block_until_ready()
    first = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        out = train_shadow_models(jax.random.key(r + 1), graph, sampler, "gcn", models,
                                  epochs=epochs)
        out.scores.block_until_ready()
        times.append(time.perf_counter() - t0)
    shards = len({s.device.id for s in out.scores.addressable_shards})
    print(json.dumps({"devices": len(jax.devices()), "shards": shards, "first": first,
                      "times": times}))
    """
)


def scaling(models: int, epochs: int, repeats: int) -> list[dict]:
    rows = []
    for devices in (1, 2, 4, 8):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
                   JAX_PLATFORMS="cpu")
        out = subprocess.run([sys.executable, "-c", WORKER, str(models), str(epochs),
                              str(repeats)], env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"worker with {devices} devices failed:\n{out.stderr[-3000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        med = statistics.median(res["times"])
        rows.append({"devices": devices, "shards": res["shards"], "median_s": med,
                     "models_per_s": models / med, "compile_s": res["first"] - med})
    return rows


def checkpoint_overhead(models: int, epochs: int, chunks: int, repeats: int) -> dict:
    import jax
    import numpy as np

    from jaxaudit.datasets import load_planetoid
    from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler
    from jaxaudit.runs import RunDir, run_chunks

    graph = load_planetoid("cora")
    sampler = uniform_sampler(0.5)
    per_chunk = models // chunks

    def compute(name):
        key = jax.random.fold_in(jax.random.key(0), int(name[1:]))
        out = train_shadow_models(key, graph, sampler, "gcn", per_chunk, ShadowTraining(epochs=epochs))
        return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

    names = [f"c{i:03d}" for i in range(chunks)]
    compute(names[0])  # compile
    plain, saved = [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        for n in names:
            compute(n)
        plain.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir.open(f"{tmp}/run", kind="bench", config={"r": r})
            t0 = time.perf_counter()
            run_chunks(run, names, compute)
            saved.append(time.perf_counter() - t0)
    p, s = statistics.median(plain), statistics.median(saved)
    # The write cost itself, timed alone (the difference above is noisy on a shared machine).
    arrays = compute(names[0])
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.open(f"{tmp}/run", kind="bench", config={})
        t0 = time.perf_counter()
        for n in names:
            run.save_chunk(n, arrays)
        write = (time.perf_counter() - t0)
    return {"chunks": chunks, "models_per_chunk": per_chunk, "plain_s": p, "checkpointed_s": s,
            "overhead_fraction": (s - p) / p, "write_s": write, "write_fraction": write / p}


BACKENDS_WORKER = textwrap.dedent(
    """
    import json, os, resource, sys, tempfile, time
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    from jaxaudit.pipelines import ShadowConfig, run_shadow
    from jaxaudit.runs import Sweep
    backend, workers, units, unit_models, epochs, repeats = sys.argv[1:7]
    workers, units, unit_models, epochs, repeats = map(int, (workers, units, unit_models,
                                                             epochs, repeats))
    cfg = ShadowConfig(dataset="cora", num_models=units * unit_models, chunk=unit_models,
                       epochs=epochs, seed=0)
    start = 0.0
    if backend == "ray":
        import ray
        t0 = time.perf_counter()
        ray.init(address="local", num_cpus=workers, include_dashboard=False,
                 _node_ip_address="127.0.0.1", log_to_driver=False)
        start = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run_shadow(cfg, f"{tmp}/run", sweep=Sweep(backend=backend, ray_workers=workers))
            times.append(time.perf_counter() - t0)
    if backend == "ray":
        ray.shutdown()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"start": start, "times": times, "driver_rss_mib": rss}))
    """
)


def _cli_sweep(workers: int, units: int, unit_models: int, epochs: int) -> float:
    """Wall seconds of ``workers`` concurrent ``jaxaudit shadow --worker i/N`` processes on one
    folder, then the final plain run (one process, no --worker, when ``workers`` is 1)."""
    args = [sys.executable, "-m", "jaxaudit", "shadow", "--dataset", "cora", "--models",
            str(units * unit_models), "--chunk", str(unit_models), "--epochs", str(epochs),
            "--quiet"]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        extra = [[]] if workers == 1 else [["--worker", f"{i}/{workers}"] for i in range(workers)]
        procs = [subprocess.Popen([*args, "--out", f"{tmp}/run", *e], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for e in extra]
        for p in procs:
            _, err = p.communicate()
            if p.returncode:
                raise RuntimeError(f"jaxaudit shadow failed:\n{err.decode()[-3000:]}")
        if workers > 1:  # the final run: verifies every unit, computes none
            subprocess.run([*args, "--out", f"{tmp}/run"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0


def backends(units: int, unit_models: int, epochs: int, repeats: int) -> list[dict]:
    """Part 3: the same sweep through each backend (module docstring)."""
    rows = []
    for label, backend, workers in (("serial driver", "serial", 1), ("Ray, 1 worker", "ray", 1),
                                    ("Ray, 2 workers", "ray", 2)):
        out = subprocess.run([sys.executable, "-c", BACKENDS_WORKER, backend, str(workers),
                              str(units), str(unit_models), str(epochs), str(repeats)],
                             env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True,
                             text=True)
        if out.returncode:
            raise RuntimeError(f"{label} failed:\n{out.stderr[-3000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"mode": label, "workers": workers, "start_s": res["start"],
                     "first_s": res["times"][0], "wall_s": statistics.median(res["times"]),
                     "driver_rss_mib": res["driver_rss_mib"]})
    for label, workers in (("1 CLI process", 1), ("2 --worker CLI processes", 2)):
        times = [_cli_sweep(workers, units, unit_models, epochs) for _ in range(repeats)]
        rows.append({"mode": label, "workers": workers, "start_s": 0.0, "first_s": times[0],
                     "wall_s": statistics.median(times), "driver_rss_mib": float("nan")})
    serial = rows[0]["wall_s"]
    for row in rows:
        row["units_per_s"] = units / row["wall_s"]
        row["overhead_s_per_unit"] = (row["workers"] * row["wall_s"] - serial) / units
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--part", choices=("all", "devices", "checkpoint", "backends"),
                        default="all")
    parser.add_argument("--units", type=int, default=16, help="part 3: units of the sweep")
    parser.add_argument("--unit-models", type=int, default=2, help="part 3: models per unit")
    parser.add_argument("--unit-epochs", type=int, default=100, help="part 3: epochs")
    args = parser.parse_args()
    if args.part in ("all", "backends"):
        print(f"part 3: shadow sweep on Cora, {args.units} units x {args.unit_models} GCNs, "
              f"{args.unit_epochs} epochs; median of {args.repeats} (first repeat apart), "
              f"{os.cpu_count()} CPU cores")
        print("| mode | start-up s | first s | wall s | units/s | overhead s/unit "
              "| driver RSS MiB |\n|---|---|---|---|---|---|---|")
        for row in backends(args.units, args.unit_models, args.unit_epochs, args.repeats):
            print(f"| {row['mode']} | {row['start_s']:.1f} | {row['first_s']:.1f} | "
                  f"{row['wall_s']:.1f} | {row['units_per_s']:.2f} | "
                  f"{row['overhead_s_per_unit']:+.2f} | {row['driver_rss_mib']:.0f} |")
        if args.part == "backends":
            return
    if args.part == "checkpoint":
        _checkpoint_part(args)
        return

    print(f"shadow GCN training on Cora, R = {args.models}, {args.epochs} epochs, "
          f"median of {args.repeats}")
    print(f"{'devices':>7} {'shards':>6} {'s/run':>8} {'models/s':>9} {'compile s':>9}")
    for row in scaling(args.models, args.epochs, args.repeats):
        print(f"{row['devices']:>7} {row['shards']:>6} {row['median_s']:>8.2f} "
              f"{row['models_per_s']:>9.2f} {row['compile_s']:>9.2f}")
    if args.part == "all":
        _checkpoint_part(args)


def _checkpoint_part(args: argparse.Namespace) -> None:
    ov = checkpoint_overhead(args.models, args.epochs, args.chunks, args.repeats)
    print(f"\ncheckpointing: {ov['chunks']} chunks x {ov['models_per_chunk']} models: "
          f"plain {ov['plain_s']:.2f} s, with per-chunk writes {ov['checkpointed_s']:.2f} s "
          f"(difference {100 * ov['overhead_fraction']:+.1f}%); writes alone {ov['write_s']:.4f} s "
          f"= {100 * ov['write_fraction']:.2f}% of run time (target < 5%)")


if __name__ == "__main__":
    main()
