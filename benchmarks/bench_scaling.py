"""Scaling of shadow training over forced host devices, and the cost of checkpointing.

Part 1: shadow-GCN training throughput (models per second) on Cora with the model axis sharded
over 1, 2, 4 and 8 devices (``XLA_FLAGS=--xla_force_host_platform_device_count=D``, one
subprocess per D since the flag must be set before jax starts). On a CPU host the forced devices
share the same cores, so this measures the overhead of the sharded code path and whatever
parallelism XLA finds, not a multi-accelerator speed-up.

Part 2: checkpoint overhead of a resumable sweep: the same chunked shadow run computed with and
without ``jaxaudit.runs`` (atomic per-chunk npz + checksum), as a fraction of run time.

Usage: python benchmarks/bench_scaling.py [--models 32] [--epochs 200] [--repeats 3]
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
    from jaxaudit.graph import train_shadow_models, uniform_sampler
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
    from jaxaudit.graph import train_shadow_models, uniform_sampler
    from jaxaudit.runs import RunDir, run_chunks

    graph = load_planetoid("cora")
    sampler = uniform_sampler(0.5)
    per_chunk = models // chunks

    def compute(name):
        key = jax.random.fold_in(jax.random.key(0), int(name[1:]))
        out = train_shadow_models(key, graph, sampler, "gcn", per_chunk, epochs=epochs)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=8)
    args = parser.parse_args()

    print(f"shadow GCN training on Cora, R = {args.models}, {args.epochs} epochs, "
          f"median of {args.repeats}")
    print(f"{'devices':>7} {'shards':>6} {'s/run':>8} {'models/s':>9} {'compile s':>9}")
    for row in scaling(args.models, args.epochs, args.repeats):
        print(f"{row['devices']:>7} {row['shards']:>6} {row['median_s']:>8.2f} "
              f"{row['models_per_s']:>9.2f} {row['compile_s']:>9.2f}")
    ov = checkpoint_overhead(args.models, args.epochs, args.chunks, args.repeats)
    print(f"\ncheckpointing: {ov['chunks']} chunks x {ov['models_per_chunk']} models: "
          f"plain {ov['plain_s']:.2f} s, with per-chunk writes {ov['checkpointed_s']:.2f} s "
          f"(difference {100 * ov['overhead_fraction']:+.1f}%); writes alone {ov['write_s']:.4f} s "
          f"= {100 * ov['write_fraction']:.2f}% of run time (target < 5%)")


if __name__ == "__main__":
    main()
