"""Roofline: how close the canary runs and the shadow GCNs come to the machine's FP32 matmul peak.

Three numbers per workload (benchmarks/README.md, "Roofline"):

* peak: the machine's FP32 matmul rate measured in JAX (``jit(a @ b)``, square float32
  matrices), on one thread (``--xla_cpu_multi_thread_eigen=false``, timed by this process's CPU
  time) and with XLA's default threads (wall time);
* FLOPs per unit, counted two ways: by hand from the layer shapes (multiply-adds × 2 of the
  matmuls, elementwise work left out), and by XLA's own ``cost_analysis()`` of the compiled step;
* achieved GFLOP/s = counted FLOPs / measured time, and its fraction of the peak.

Workloads: one DP-GD step of the ``SmallCNN`` canary run (|D| = 100 + canary, as
``bench_dpsgd.py``; unit: one run-step) in each CPU layout the timed trial of ``canary_runs``
chooses among (``dpsgd.canary_training.CPU_LAYOUTS``: ghost blocks of one example or the whole
batch, one or four runs per device), with the trial's choice printed and marked; and one epoch
of a GCN shadow model on Cora (``--gcn``; unit: one model-epoch, as
``bench_shadow_training.py``) at 1, 2 and 4 models per device and at the trial's choice.

The machine may be shared: CPU time of this process (``time.process_time``) is reported next to
wall time, and it is the steadier of the two under load (it still includes cache and memory
contention). Usage::

    JAXAUDIT_DATA=/path/to/data python benchmarks/roofline.py [--steps 10] [--runs 8]
        [--repeats 3] [--gcn] [--json out.json]
    PYTHONPATH=<older checkout> python benchmarks/roofline.py --gcn-only --gcn-label before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("JAXAUDIT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))

SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def timed(fn, repeats):
    """(median CPU seconds, median wall seconds) of ``fn()`` after one warm-up call."""
    fn()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def matmul_peak(repeats, size=1024):
    """GFLOP/s of a float32 (size × size) @ (size × size) in JAX: (by CPU time, by wall time)."""
    import jax
    import jax.numpy as jnp

    a = jnp.asarray(np.random.default_rng(0).standard_normal((size, size)), jnp.float32)
    f = jax.jit(lambda x, y: x @ y)
    cpu, wall = timed(lambda: f(a, a).block_until_ready(), repeats)
    flops = 2.0 * size**3
    return flops / cpu / 1e9, flops / wall / 1e9


def smallcnn_step_flops(n):
    """Hand count of one ghost-clipping DP-GD step of SmallCNN on n examples (2 × multiply-adds
    of the matmuls; elementwise work, pooling, im2col and col2im left out)."""
    s1, k1, o1 = 24 * 24, 5 * 5 * 1, 16   # conv1 as im2col: S positions, K patch, O channels
    s2, k2, o2 = 9 * 9, 4 * 4 * 16, 32    # conv2
    d1, h1, c = 512, 32, 10               # fc1, fc2
    forward = 2 * (s1 * k1 * o1 + s2 * k2 * o2 + d1 * h1 + h1 * c)
    input_grads = 2 * (s2 * o2 * k2 + h1 * d1 + c * h1)          # conv2, fc1, fc2 inputs
    per_example_weight_grads = 2 * (o1 * s1 * k1 + o2 * s2 * k2)  # G_iᵀ P_i of both convs
    dense_norms = 2 * (d1 + h1 + h1 + c)                         # ‖a_i‖², ‖g_i‖²
    clipped_sum = 2 * (o1 * k1 + o2 * k2 + d1 * h1 + h1 * c)     # Σ_i c_i (per example)
    return n * (forward + input_grads + per_example_weight_grads + dense_norms + clipped_sum)


def xla_flops(fn, *args):
    """XLA's flop count of the compiled ``fn(*args)`` (None where the backend gives none).
    Loops are counted once per body by XLA's analysis, so the blocked step is counted on one
    whole-batch block instead."""
    import jax

    try:
        cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    except Exception:  # noqa: BLE001 - an optional cross-check
        return None
    if isinstance(cost, list):
        cost = cost[0] if cost else {}
    return float(cost.get("flops", 0.0)) or None


def dpsgd_rows(args):
    import jax
    import jax.numpy as jnp

    from jaxaudit.datasets import load_mnist
    from jaxaudit.dpsgd import DpsgdConfig, SmallCNN, canary_runs
    from jaxaudit.dpsgd.ghost import ghost_clipped_sum
    from jaxaudit.dpsgd.models import layer_program

    images, labels = load_mnist(split="test")
    x = images[:100].astype(np.float32) / 255.0
    y = labels[:100].astype(np.int32)
    canary = (np.zeros((28, 28), np.float32), 3)
    model = SmallCNN()
    params = model.init(jax.random.key(0), jnp.asarray(x[:1]))
    n = x.shape[0] + 1
    hand = smallcnn_step_flops(n)
    prepare, layers = layer_program(model)
    feats = prepare(jnp.concatenate([jnp.asarray(x), jnp.asarray(canary[0])[None]]))
    yy = jnp.concatenate([jnp.asarray(y), jnp.array([canary[1]], jnp.int32)])
    xla = xla_flops(lambda p, f, t, w: ghost_clipped_sum(layers, p, f, t, w, 1.0),
                    params, feats, yy, jnp.ones(n))
    config = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=args.steps,
                         learning_rate=1.0, unroll=10)
    from jaxaudit.dpsgd.canary_training import CPU_LAYOUTS, _layout, cpu_layout

    rows = []
    n_dev = len(jax.devices())
    configs = [(name, *_layout(name, config, n, n_dev)) for name in CPU_LAYOUTS]
    layout = cpu_layout(model, params, (x, y), canary, config)
    print(f"canary runs: the trial chose {layout.name} ({layout.trial.source}; "
          + ", ".join(f"{k} {v * 1e3:.2f} ms/run-step" for k, v in layout.trial.seconds.items())
          + (f"; the trial took {layout.trial.cost:.1f} s" if layout.trial.cost else "") + ")",
          flush=True)
    for name, cfg, chunk in configs:
        fn = lambda cfg=cfg, chunk=chunk: canary_runs(  # noqa: E731
            jax.random.key(1), model, params, (x, y), canary, cfg, num_runs=args.runs // 2,
            chunk_size=chunk)
        cpu, wall = timed(fn, args.repeats)
        units = args.runs * args.steps
        label = name + (" (the trial's choice)" if name == layout.name else "")
        rows.append(dict(workload="DP-GD step, SmallCNN, |D|=100+canary", config=label,
                         devices=n_dev, runs=args.runs, flops_hand=hand,
                         flops_xla=xla, cpu_s_per_unit=cpu / units, wall_s_per_unit=wall / units))
    return rows


def gcn_epoch_flops(graph, hidden=64):
    """Hand count of one GCN epoch on a graph (forward + backward, 2 × multiply-adds): sparse X W
    (nnz(X)·H), the two propagations Â·(E + N self-loops), the dense second layer; backward
    X^T G (sparse) and the same propagations and dense products again (twice for the dense)."""
    x = np.asarray(graph.features)
    n = x.shape[0]
    nnz = int(np.count_nonzero(x))
    c = int(np.asarray(graph.labels).max()) + 1
    edges = int(np.asarray(graph.senders).shape[0]) + n
    forward = 2 * (nnz * hidden + edges * hidden + n * hidden * c + edges * c)
    backward = 2 * (nnz * hidden + edges * hidden + 2 * n * hidden * c + edges * c)
    return forward + backward


def gcn_rows(args):
    import jax

    from jaxaudit.datasets import load_planetoid
    from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler

    graph = load_planetoid("cora")
    epochs, models = 200, args.gcn_models
    n_dev = len(jax.devices())
    try:
        from jaxaudit.graph.layout import CPU_MODELS_PER_DEVICE
        chunks = [(f"{k} model(s) per device", k * n_dev) for k in CPU_MODELS_PER_DEVICE]
        chunks.append(("the trial's choice", None))
    except ImportError:   # an older checkout (--gcn-only with PYTHONPATH)
        chunks = [(args.gcn_label, None)]
    rows = []
    for label, chunk in chunks:
        def run(chunk=chunk):
            out = train_shadow_models(jax.random.key(0), graph, uniform_sampler(0.5), "gcn",
                                      models, ShadowTraining(epochs=epochs, edge_access="full"),
                                      chunk_size=chunk)
            out.scores.block_until_ready()

        if chunk is None:
            label = _with_gcn_trial(run, label, n_dev)
        cpu, wall = timed(run, args.repeats)
        units = models * epochs
        rows.append(dict(workload="GCN shadow model epoch, Cora", config=label, devices=n_dev,
                         runs=models, flops_hand=gcn_epoch_flops(graph), flops_xla=None,
                         cpu_s_per_unit=cpu / units, wall_s_per_unit=wall / units))
    return rows


def _with_gcn_trial(run, label, n_dev):
    """Run once with the chunk size left to the trial and print what it chose (the trial is
    reached through ``graph.shadow_models.cpu_chunk_size``, wrapped here to see its answer)."""
    try:
        from jaxaudit.graph import shadow_models
    except ImportError:
        return label
    real, seen = shadow_models.cpu_chunk_size, []

    def spy(*a, **k):
        seen.append(real(*a, **k))
        return seen[-1]

    shadow_models.cpu_chunk_size = spy
    try:
        run()
    finally:
        shadow_models.cpu_chunk_size = real
    if not seen:
        return label
    chunk, trial = seen[0]
    print(f"GCN shadow models: the trial chose {chunk // n_dev} model(s) per device "
          f"({trial.source}; " + ", ".join(f"{k} {v * 1e3:.3f} ms/model-epoch"
                                            for k, v in trial.seconds.items())
          + (f"; the trial took {trial.cost:.1f} s" if trial.cost else "") + ")", flush=True)
    return f"{label}: {chunk // n_dev} per device"


def single_thread_peak(repeats):
    """The one-thread matmul peak, measured in a subprocess (the XLA flag must precede JAX)."""
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD}".strip())
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r}); import roofline; "
            f"print(roofline.matmul_peak({int(repeats)})[0])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--runs", type=int, default=8, help="canary runs per call (R, both worlds)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gcn", action="store_true", help="also the GCN shadow-model epoch")
    ap.add_argument("--gcn-models", type=int, default=4)
    ap.add_argument("--gcn-only", action="store_true",
                    help="only the GCN rows (e.g. with PYTHONPATH at an older checkout)")
    ap.add_argument("--gcn-label", default="current (chunk 1 on CPU)",
                    help="the GCN row's configuration column")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import jax

    one = single_thread_peak(args.repeats)
    _, threads = matmul_peak(args.repeats)
    print(f"FP32 matmul peak in JAX (1024², jax {jax.__version__}, {os.cpu_count()} CPUs): "
          f"{one:.0f} GFLOP/s on one thread (CPU time), {threads:.0f} GFLOP/s with XLA's "
          f"threads (wall)", flush=True)
    rows = ([] if args.gcn_only else dpsgd_rows(args)) + (
        gcn_rows(args) if args.gcn or args.gcn_only else [])
    print("\n| workload | configuration | FLOPs/unit (hand; XLA) | CPU ms/unit | wall ms/unit "
          "| GFLOP/s per CPU-second | of 1-thread peak |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        rate = r["flops_hand"] / r["cpu_s_per_unit"] / 1e9
        xla = f"{r['flops_xla'] / 1e6:.0f} M" if r["flops_xla"] else "n/a"
        print(f"| {r['workload']} | {r['config']} | {r['flops_hand'] / 1e6:.0f} M; {xla} | "
              f"{r['cpu_s_per_unit'] * 1e3:.2f} | {r['wall_s_per_unit'] * 1e3:.2f} | {rate:.1f} | "
              f"{rate / one:.0%} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(peak_one_thread=one, peak_threads_wall=threads, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
