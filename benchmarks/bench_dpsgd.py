"""Benchmark: seconds per canary-training run, SmallCNN, |D| = 100 (+ canary), T = 100 full-batch
DP-GD steps (Annamalai & De Cristofaro, arXiv 2405.14106; see benchmarks/README.md).

Side by side in one process on the same data (the first 100 MNIST test images + a blank canary):
  * jaxaudit: ``canary_runs`` vmapped over R ∈ {1, 16, 64} runs (R/2 per world; R = 1 is
    ``train_run``), compile time excluded (a warm-up call with the same shapes);
  * Opacus 1.6 (``GradSampleModule`` + ``DPOptimizer``: per-sample gradients by hooks, clip, sum,
    noise), one run after another;
  * torch.func (``vmap(grad(functional_call))``), one run after another;
  * with ``--baseline``, jaxaudit's earlier configuration in the same process (ghost
    clipping on the whole batch, ``block_size=101``, and all runs vmapped at once,
    ``chunk_size=None``), next to the defaults (blocks of one example and one run per device
    on CPU), so the two are compared under the same machine load;
  * jaxaudit again on D forced host devices (``--host-devices``, default 2), in a subprocess of
    this script started with ``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (the flag must
    be set before JAX starts): the configuration the ``jaxaudit`` command and
    ``jaxaudit.sharding.use_all_cpu_cores`` give by default, one CPU device per core.
Opacus and torch.func are each timed (median of the repeats) at 1 torch thread and at one per core;
the faster count is reported.

Usage::

    python benchmarks/bench_dpsgd.py [--steps 100] [--repeats 2] [--runs 1,16,64]
        [--host-devices 2] [--baseline] [--block B] [--json out.json]

Prints a table: seconds per run (median of repeats) and Opacus's s/run divided by each; the
jaxaudit rows name their device count (this process: the devices JAX sees, normally 1 on CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

os.environ.setdefault("JAXAUDIT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def torch_net():
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 5), torch.nn.MaxPool2d(2), torch.nn.Tanh(),
        torch.nn.Conv2d(16, 32, 4), torch.nn.MaxPool2d(2), torch.nn.Tanh(), torch.nn.Flatten(),
        torch.nn.Linear(512, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))


def opacus_run(x, y, steps, sigma, clip, lr):
    import torch
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(torch_net())
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=lr), noise_multiplier=sigma,
                      max_grad_norm=clip, expected_batch_size=x.shape[0], loss_reduction="sum")
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        return float(-torch.nn.functional.cross_entropy(model(x[-1:]), y[-1:]))


def torchfunc_run(x, y, steps, sigma, clip, lr):
    import torch
    from torch.func import functional_call, grad, vmap

    net = torch_net()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(net, p, (xi[None],)), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    n = x.shape[0]
    for _ in range(steps):
        g = per_example(params, x, y)
        norms = torch.sqrt(sum(v.reshape(n, -1).pow(2).sum(1) for v in g.values()))
        f = 1.0 / torch.clamp(norms / clip, min=1.0)
        params = {k: params[k] - lr / n * (torch.einsum("n,n...->...", f, g[k])
                                           + sigma * clip * torch.randn_like(params[k]))
                  for k in params}
    with torch.no_grad():
        return float(-torch.nn.functional.cross_entropy(functional_call(net, params, (x[-1:],)), y[-1:]))


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def host_device_rows(devices, args):
    """jaxaudit's rows on ``devices`` forced host devices: this script in a subprocess with
    ``--skip-torch --host-devices 0`` and the flag in ``XLA_FLAGS`` (replacing any device count
    set there). R = 1 is left out: ``train_run`` is one run on one device whatever the count."""
    runs = ",".join(v for v in args.runs.split(",") if v.strip() and int(v) > 1)
    if not runs:
        return []
    from jaxaudit._xla_flags import DEVICE_COUNT_FLAG, with_cpu_flags

    flags = re.sub(DEVICE_COUNT_FLAG + r"=\S+", "", os.environ.get("XLA_FLAGS", ""))
    if args.xla_default_fusions:
        flags = f"{flags} {DEVICE_COUNT_FLAG}={devices}".strip()
    else:  # the jaxaudit command's flags: that device count, YNNPACK fusions off
        flags = with_cpu_flags(flags, devices)
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
    print(f"[{devices} host devices] XLA_FLAGS={flags}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out_json = os.path.join(tmp, "rows.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--skip-torch", "--host-devices", "0",
               "--steps", str(args.steps), "--repeats", str(args.repeats), "--runs", runs,
               "--unroll", str(args.unroll), "--json", out_json]
        if args.chunk is not None:
            cmd += ["--chunk", str(args.chunk)]
        if args.block is not None:
            cmd += ["--block", str(args.block)]
        if args.baseline:
            cmd += ["--baseline"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"jaxaudit on {devices} host devices failed:\n{out.stderr[-3000:]}")
        for line in out.stdout.splitlines():
            if line.startswith("jaxaudit R="):
                print(f"[{devices} host devices] {line}", flush=True)
        with open(out_json) as f:
            return [(row["name"], row["runs"], row["seconds_per_run"]) for row in json.load(f)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--runs", default="1,16,64")
    ap.add_argument("--chunk", type=int, default=None, help="jaxaudit runs per vmapped chunk")
    ap.add_argument("--unroll", type=int, default=10)
    ap.add_argument("--block", type=int, default=None,
                    help="examples per ghost-clipping block (default: the library's, 1 on CPU)")
    ap.add_argument("--baseline", action="store_true",
                    help="also time the earlier configuration (block 101, all runs "
                    "vmapped together) in this process")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--host-devices", default="2",
                    help="comma-separated forced host-device counts to time jaxaudit on as well, "
                    "each in a subprocess (0: none; default 2, the all-cores configuration of a "
                    "two-core machine)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--xla-default-fusions", action="store_true",
                    help="host-device rows: XLA's own YNNPACK fusions, not the jaxaudit command's "
                    "--xla_cpu_experimental_ynn_fusion_type= (the before/after of that flag)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")

    import jax
    import jax.numpy as jnp

    from jaxaudit.datasets import load_mnist
    from jaxaudit.dpsgd import DpsgdConfig, SmallCNN, canary_runs, train_run

    images, labels = load_mnist(split="test")
    x = images[:100].astype(np.float32) / 255.0
    y = labels[:100].astype(np.int32)
    canary = (np.zeros((28, 28), np.float32), 3)
    sigma, clip, lr, T = 1.0, 1.0, 1.0, args.steps
    model = SmallCNN()
    params = model.init(jax.random.key(0), jnp.asarray(x[:1]))
    rows = []
    config = DpsgdConfig(noise_multiplier=sigma, clip_norm=clip, steps=T, learning_rate=lr,
                         unroll=args.unroll)

    if not args.skip_torch:
        import torch

        xt = torch.from_numpy(np.concatenate([x, canary[0][None]])[:, None])
        yt = torch.from_numpy(np.concatenate([y, [canary[1]]]).astype(np.int64))
        def best_of_thread_counts(run):
            """(s/run, threads): the median of the repeats at 1 torch thread and at one per
            core, whichever is faster (benchmarks/README.md: a single short timing chose the
            thread count unreliably)."""
            best = None
            for threads in sorted({1, os.cpu_count() or 1}):
                torch.set_num_threads(threads)
                run(2)  # warm-up
                t = timed(lambda: run(T), args.repeats)
                print(f"  torch threads {threads}: {t:.3f} s/run", flush=True)
                if best is None or t < best[0]:
                    best = (t, threads)
            return best

        t_opacus, threads = best_of_thread_counts(
            lambda steps: opacus_run(xt, yt, steps, sigma, clip, lr / 100))
        rows.append(("Opacus 1.6 (sequential)", 1, t_opacus))
        print(f"opacus: {t_opacus:.3f} s/run (torch threads {threads})", flush=True)
        t_func, threads = best_of_thread_counts(
            lambda steps: torchfunc_run(xt, yt, steps, sigma, clip, lr))
        rows.append(("torch.func vmap(grad) (sequential)", 1, t_func))
        print(f"torch.func: {t_func:.3f} s/run (torch threads {threads})", flush=True)

    configs = [("", args.block, args.chunk)]
    if args.baseline:  # the earlier default: whole-batch ghost clipping, all runs vmapped
        configs.append((" [before: block 101, runs vmapped together]", x.shape[0] + 1, "all"))
    for r in (int(v) for v in args.runs.split(",")):
        for label, block, chunk in configs:
            if r == 1:
                fn = lambda block=block: jax.block_until_ready(train_run(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), include_canary=True))
            elif chunk == "all":  # the old default: all 2R runs in one vmapped chunk
                fn = lambda r=r, block=block: canary_runs(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), num_runs=r // 2, chunk_size=r)
            else:
                fn = lambda r=r, block=block, chunk=chunk: canary_runs(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), num_runs=r // 2, chunk_size=chunk)
            t0 = time.perf_counter()
            fn()
            compile_and_first = time.perf_counter() - t0
            t = timed(fn, args.repeats if r < 64 else max(1, args.repeats - 1))
            devices = len(jax.devices())
            rows.append((f"jaxaudit vmapped, R = {r}, {devices} device{'s' * (devices > 1)}{label}",
                         r, t / r))
            print(f"jaxaudit R={r}{label}: {t / r:.3f} s/run (first call incl. compile "
                  f"{compile_and_first:.1f} s)", flush=True)

    for devices in (int(v) for v in args.host_devices.split(",") if v.strip()):
        if devices > 0:
            rows.extend(host_device_rows(devices, args))
    # each R's jaxaudit rows side by side: this process's device count, then the forced counts
    rows = ([row for row in rows if not row[0].startswith("jaxaudit")]
            + sorted((row for row in rows if row[0].startswith("jaxaudit")), key=lambda row: row[1]))

    ref = next((s for name, _, s in rows if name.startswith("Opacus")), None)
    print(f"\nSmallCNN, |D| = 100 + canary, T = {T} full-batch steps, {os.cpu_count()} CPUs")
    print("| implementation | runs per call | s/run | Opacus s/run ÷ this |")
    print("|---|---|---|---|")
    for name, r, s in rows:
        ratio = f"{ref / s:.2f}" if ref else "n/a"
        print(f"| {name} | {r} | {s:.3f} | {ratio} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(name=n, runs=r, seconds_per_run=s) for n, r, s in rows], f, indent=1)


if __name__ == "__main__":
    main()
