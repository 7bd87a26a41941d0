"""Where a DP-GD step and a GCN epoch spend their time on CPU: a ``jax.profiler`` trace of the
compiled program, its XLA operations summed by kind.

``roofline.py`` says how far each workload is from the one-thread matmul peak; this script says
why. It traces a few calls of one program on one thread (``--xla_cpu_multi_thread_eigen=false``,
one host device, the roofline's single-thread setting), reads the trace back with
``jax.profiler.ProfileData`` and sums the duration of every XLA operation (the CPU thunks of the
host plane) by kind:

* ``matmul``: dots and convolutions, including the fusions XLA:CPU hands to YNNPACK (the FLOPs
  the roofline counts), with their GFLOP/s;
* ``fusion``: XLA's fused elementwise/reduction kernels (im2col, col2im, pooling gradients,
  clipping factors, the optimiser);
* ``data movement``: copies, transposes, slices, concatenations, pads, gathers and scatters;
* ``loop``: a ``while`` loop whose body the trace does not break down (the blocks-of-one step's
  scan over examples): its body's operations and their dispatch together;
* ``other``: everything else (RNG, constants, stacks), by name in ``--top``.

The gap between the summed operation time and the wall time of the call is dispatch: the
runtime's work between operations. Workloads (``--workload``): ``dpsgd-batch`` (one ghost-clipping
DP-GD step of SmallCNN on |D| = 100 + canary, the whole batch in one block: the layout the timed
trial chose on the Zen 5 EPYC), ``dpsgd-blocks1`` (blocks of one example, the fixed default) and
``gcn`` (one full-batch GCN epoch on Cora, forward and backward, the shadow models' model).
Usage::

    JAXAUDIT_DATA=/path/to/data python benchmarks/profile_step.py [--workload dpsgd-batch gcn]
        [--calls 20] [--top 12] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAXAUDIT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
# One thread and one device, as the roofline's single-thread peak, with the library's CPU flags
# (YNNPACK fusions off, as the ``jaxaudit`` command and ``bench_dpsgd.py`` run); set before JAX
# starts.
from jaxaudit._xla_flags import with_cpu_flags  # noqa: E402  (jax-free)

os.environ["XLA_FLAGS"] = with_cpu_flags(
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    " intra_op_parallelism_threads=1", None)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

MATMUL = ("dot", "convolution", "conv", "gemm", "matmul", "custom-call", "custom_call")
MOVEMENT = ("copy", "transpose", "slice", "concatenate", "pad", "gather", "scatter", "reshape",
            "broadcast", "dynamic-update", "bitcast")


def kind(name: str) -> str:
    n = name.lower()
    if any(k in n for k in MATMUL) and "fusion" not in n:
        return "matmul"
    if "fusion" in n:
        return "fusion"
    if any(k in n for k in MOVEMENT):
        return "data movement"
    return "other"


def dpsgd_program(block: str):
    """(jitted step, args, hand FLOPs): one ghost-clipped sum of SmallCNN on 101 examples."""
    import jax
    import jax.numpy as jnp
    from roofline import smallcnn_step_flops

    from jaxaudit.datasets import load_mnist
    from jaxaudit.dpsgd import SmallCNN
    from jaxaudit.dpsgd.ghost import block_features, blocked_clipped_sum, ghost_clipped_sum
    from jaxaudit.dpsgd.models import layer_program

    images, labels = load_mnist(split="test")
    x = jnp.asarray(images[:100].astype(np.float32) / 255.0)
    y = jnp.concatenate([jnp.asarray(labels[:100].astype(np.int32)), jnp.array([3], jnp.int32)])
    model = SmallCNN()
    params = model.init(jax.random.key(0), x[:1])
    prepare, layers = layer_program(model)
    feats = prepare(jnp.concatenate([x, jnp.zeros((1, 28, 28), jnp.float32)]))
    w = jnp.ones(y.shape[0])
    if block == "batch":
        fn = jax.jit(lambda p, f, t, w: ghost_clipped_sum(layers, p, f, t, w, 1.0)[0])
        args = (params, feats, y, w)
    else:
        blocked = block_features(feats, 1)
        fn = jax.jit(lambda p, b, t, w: blocked_clipped_sum(layers, p, b, t, w, 1.0)[0])
        args = (params, blocked, y, w)
    return fn, args, smallcnn_step_flops(y.shape[0])


def gcn_program(epochs: int):
    """(jitted fit, args, hand FLOPs per epoch): the shadow GCN's training on Cora as
    ``train_shadow_models`` runs it (its private ``_fit``: initialisation, the CSR set-up and
    ``epochs`` full-batch epochs in a ``lax.scan``; full edge access, half the nodes)."""
    import jax
    import jax.numpy as jnp
    from roofline import gcn_epoch_flops

    from jaxaudit.datasets import load_planetoid
    from jaxaudit.graph.shadow_models import _fit, gnn_module, prepare_inputs

    graph = load_planetoid("cora")
    module = gnn_module("gcn", graph)
    inputs = prepare_inputs(graph)
    mask = jax.random.bernoulli(jax.random.key(0), 0.5, (graph.num_nodes,))
    ones = jnp.ones(inputs.senders.shape, jnp.float32)
    fn = jax.jit(lambda key, inputs, mask, w: _fit(module, epochs, 0.01, 5e-4, key, inputs, mask, w))
    return fn, (jax.random.key(1), inputs, mask, ones), gcn_epoch_flops(graph)


def hlo_kinds(fn, args) -> dict[str, str]:
    """Each instruction of the compiled program by kind: a dot or convolution, or a fusion that
    XLA:CPU hands to YNNPACK (``__ynn_fusion``: its dots) or whose source op is a dot or a
    convolution, is ``matmul``; loops are ``loop``; the rest by name (:func:`kind`)."""
    import re

    text = fn.lower(*args).compile().as_text()
    kinds = {}
    for m in re.finditer(r"^\s*(?:ROOT )?%?([\w.\-]+) = [^\n]*$", text, flags=re.M):
        name, line = m.group(1), m.group(0)
        op = re.search(r"\} ?([\w\-]+)\(|\] ?([\w\-]+)\(", line)
        opname = (op.group(1) or op.group(2)) if op else ""
        if "__ynn_fusion" in line or opname in ("dot", "convolution") \
                or ("fusion" in opname and re.search(r'op_name="[^"]*(dot_general|conv_general)', line)):
            kinds[name] = "matmul"
        elif opname == "while":
            kinds[name] = "loop"
        else:
            kinds[name] = kind(name)
    return kinds


def profile(fn, args, calls: int) -> tuple[dict, float, dict]:
    """({op name: total ns}, wall seconds per call, {op name: kind}) over ``calls`` traced
    calls."""
    import jax

    jax.block_until_ready(fn(*args))  # compile outside the trace
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        with jax.profiler.trace(d):
            for _ in range(calls):
                jax.block_until_ready(fn(*args))
        wall = (time.perf_counter() - t0) / calls
        files = list(Path(d).rglob("*.xplane.pb"))
        data = jax.profiler.ProfileData.from_file(str(files[0]))
    totals: dict[str, float] = collections.defaultdict(float)
    for plane in data.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for ev in line.events:
                stats = dict(ev.stats)
                if "hlo_op" in stats or "hlo_module" in stats or line.name.startswith("XLA Ops"):
                    totals[ev.name] += ev.duration_ns
    return dict(totals), wall, hlo_kinds(fn, args)


KINDS = ("matmul", "fusion", "data movement", "loop", "other")
#: Epochs of the longer GCN fit (the per-epoch figures are its difference from a 1-epoch fit).
GCN_EPOCHS = 20


def by_kind(totals: dict, kinds: dict, calls: int) -> dict[str, float]:
    """ms per call of each kind."""
    out: dict[str, float] = collections.defaultdict(float)
    for name, ns in totals.items():
        out[kinds.get(name, kind(name))] += ns / calls / 1e6
    return dict(out)


def timed_wall(fn, args, repeats: int = 10) -> float:
    """Median untraced wall ms per call (the profiler itself adds time per operation), timed by
    ``roofline.timed`` after its warm-up call."""
    import jax
    from roofline import timed

    return timed(lambda: jax.block_until_ready(fn(*args)), repeats)[1] * 1e3


def table(label: str, kinds_ms: dict, traced_ms: float, wall_ms: float, flops: float) -> dict:
    """Print the kinds as a markdown table: ms per call and share of the untraced call."""
    ops_ms = sum(kinds_ms.values())
    gap = max(wall_ms - ops_ms, 0.0)
    print(f"\n{label}: {wall_ms:.2f} ms per call untraced ({traced_ms:.2f} traced); the "
          f"operations {ops_ms:.2f} ms (traced)")
    print("| kind | ms per call (traced) | of the operations' time |")
    print("|---|---|---|")
    for k in KINDS:
        print(f"| {k} | {kinds_ms.get(k, 0.0):.2f} | {kinds_ms.get(k, 0.0) / ops_ms:.0%} |")
    print(f"untraced call − traced operations (dispatch and what the trace misses): {gap:.2f} ms "
          f"({gap / wall_ms:.0%} of the call); the profiler inflates each operation, so the "
          "shares, not the sums, are the profile")
    mm = kinds_ms.get("matmul", 0.0)
    if mm > 0:
        print(f"matmuls at ≥ {flops / (mm * 1e-3) / 1e9:.1f} GFLOP/s (traced time) on the hand-counted FLOPs "
              f"({flops / 1e6:.1f} MFLOP); the whole call {flops / (wall_ms * 1e-3) / 1e9:.1f} "
              "GFLOP/s")
    return dict(workload=label, wall_ms=wall_ms, traced_ms=traced_ms, ops_ms=ops_ms,
                by_kind=kinds_ms, dispatch_ms=gap, flops=flops)


def top(totals: dict, kinds: dict, calls: int, n: int) -> None:
    print(f"top {n} operations (traced ms per call):")
    for name, ns in sorted(totals.items(), key=lambda kv: -kv[1])[:n]:
        print(f"  {ns / calls / 1e6:7.3f} ms  {kinds.get(name, kind(name)):13s} {name}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", nargs="+", default=["dpsgd-batch", "dpsgd-blocks1", "gcn"],
                   choices=["dpsgd-batch", "dpsgd-blocks1", "gcn"])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import jax
    print(f"jax {jax.__version__}, devices {jax.devices()}, XLA_FLAGS={os.environ['XLA_FLAGS']}")
    out = []
    for w in args.workload:
        if w == "gcn":
            # One epoch = (a fit of 1 + E epochs) − (a fit of 1 epoch), per kind: the set-up
            # (initialisation, the CSR sort of the edges) runs once per model, not per epoch.
            fits = {}
            for e in (1, 1 + GCN_EPOCHS):
                fn, fargs, flops = gcn_program(e)
                totals, wall, kinds = profile(fn, fargs, args.calls)
                fits[e] = (by_kind(totals, kinds, args.calls), wall * 1e3, timed_wall(fn, fargs))
            (k1, w1, u1), (k2, w2, u2) = fits[1], fits[1 + GCN_EPOCHS]
            per_epoch = {k: (k2.get(k, 0.0) - k1.get(k, 0.0)) / GCN_EPOCHS for k in KINDS}
            out.append(table(f"gcn (one epoch, from fits of 1 and {1 + GCN_EPOCHS} epochs)",
                             per_epoch, (w2 - w1) / GCN_EPOCHS, (u2 - u1) / GCN_EPOCHS, flops))
        else:
            fn, fargs, flops = dpsgd_program(w.split("-")[1])
            totals, wall, kinds = profile(fn, fargs, args.calls)
            out.append(table(w, by_kind(totals, kinds, args.calls), wall * 1e3,
                             timed_wall(fn, fargs), flops))
            top(totals, kinds, args.calls, args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
