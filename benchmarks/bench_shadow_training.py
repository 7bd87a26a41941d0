"""Shadow-model training throughput: jaxaudit vs PyTorch Geometric on Cora (docs/gnn_mia.md).

Same GCN and recipe on both sides: 2 layers, hidden 64, ReLU, dropout 0.5 on the hidden layer,
GCN normalisation with self-loops, row-normalised features, Adam (lr 0.01, L2 weight decay
5e-4 as torch.optim.Adam), 200 full-batch epochs, cross-entropy on a uniform 50% node sample,
all edges ("full" access: PyG's usual transductive loop). jaxaudit trains the R models in one
jit-compiled call (chunks of ``--chunk-size`` vmapped models, chunks in sequence); PyG trains them
one after another (its usual loop). Reported: seconds per model (median of ``--repeats`` timed
runs after the compile), the compile time (first call minus a timed run), and PyG s/model divided
by jaxaudit s/model.

Devices: the process starts JAX with ``--host-devices`` CPU devices (default: one per core, the
configuration the ``jaxaudit`` command uses), and jaxaudit is timed once per entry of
``--device-counts`` (the model axis sharded over the first D devices; default ``1`` and all), all
in this one process, side by side with PyG.

Run:
    JAXAUDIT_DATA=/path/to/data python benchmarks/bench_shadow_training.py \
        --models 1 8 32 128 --repeats 3 --pyg-models 5 [--torch-threads 1] [--device-counts 1,2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from jaxaudit.datasets import load_planetoid
from jaxaudit.graph import Graph, ShadowTraining, train_shadow_models, uniform_sampler
from jaxaudit.sharding import cpu_core_count


def bench_jax(graph: Graph, num_models: int, epochs: int, repeats: int, edge_access: str,
              chunk_size: int | None, devices: Sequence[jax.Device]) -> tuple[float, float]:
    sampler = uniform_sampler(0.5)

    def run(seed: int) -> float:
        t = time.perf_counter()
        out = train_shadow_models(jax.random.key(seed), graph, sampler, "gcn", num_models, ShadowTraining(epochs=epochs, edge_access=edge_access), chunk_size=chunk_size, devices=devices)
        out.scores.block_until_ready()
        return time.perf_counter() - t

    first = run(0)
    times = [run(i + 1) for i in range(repeats)]
    med = statistics.median(times)
    return med / num_models, max(first - med, 0.0)


def bench_pyg(graph, num_models, epochs, threads):
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    torch.set_num_threads(threads)
    x = torch.tensor(np.asarray(graph.features), dtype=torch.float32)
    x = x / x.sum(1, keepdim=True).clamp(min=1)
    edge_index = torch.tensor(np.stack([np.asarray(graph.senders), np.asarray(graph.receivers)]),
                              dtype=torch.long)
    y = torch.tensor(np.asarray(graph.labels), dtype=torch.long)
    n = x.shape[0]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(x.shape[1], 64, cached=True)
            self.conv2 = GCNConv(64, graph.num_classes, cached=True)

        def forward(self, x, edge_index):
            h = F.relu(self.conv1(x, edge_index))
            h = F.dropout(h, p=0.5, training=self.training)
            return self.conv2(h, edge_index)

    times = []
    gen = torch.Generator().manual_seed(0)
    for _ in range(num_models):
        t = time.perf_counter()
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.randperm(n, generator=gen)[: round(0.5 * n)]] = True
        model = Net()
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        model.train()
        for _ in range(epochs):
            opt.zero_grad()
            loss = F.cross_entropy(model(x, edge_index)[mask], y[mask])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            logits = model(x, edge_index)
            z_y = logits.gather(1, y[:, None])[:, 0]
            others = logits.scatter(1, y[:, None], float("-inf"))
            _ = z_y - torch.logsumexp(others, 1)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _per_call_ms(fn: Callable[..., Any], *args: Any, reps: int = 200, repeats: int = 5
                 ) -> float:
    """Median ms per call of ``fn(*args)``, run ``reps`` times inside one jitted ``fori_loop``
    (no dispatch overhead); the first argument is perturbed by the loop carry and every output
    is summed into it, so XLA can neither hoist the work out of the loop nor drop any of it."""
    import jax.numpy as jnp

    def program(*args: Any) -> jax.Array:
        def body(i: Any, acc: jax.Array) -> jax.Array:
            out = fn(args[0] + acc * 1e-30, *args[1:])
            return acc + sum(jnp.sum(leaf) for leaf in jax.tree.leaves(out))
        return jax.lax.fori_loop(0, reps, body, jnp.float32(0))

    run = jax.jit(program)
    run(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run(*args).block_until_ready()
        times.append(time.perf_counter() - t)
    return statistics.median(times) / reps * 1e3


def bench_pieces(graph: Graph) -> dict[str, float]:
    """Per-piece timings of one GCN model-epoch on Cora (one model, no vmap), in ms."""
    import jax.numpy as jnp
    import optax

    from jaxaudit.graph.dropout import bernoulli_keep
    from jaxaudit.graph.propagation import propagate, sparse_matmul
    from jaxaudit.graph.shadow_models import prepare_inputs

    inputs = prepare_inputs(graph)
    s, r = inputs.senders, inputs.receivers
    n, f, h, c = graph.num_nodes, inputs.nodes.shape[1], 64, graph.num_classes
    rng = np.random.default_rng(0)
    w1 = jnp.asarray(rng.normal(size=(f, h)) * 0.05, jnp.float32)
    w2 = jnp.asarray(rng.normal(size=(h, c)) * 0.1, jnp.float32)
    h64 = jnp.asarray(rng.normal(size=(n, h)), jnp.float32)
    h7 = jnp.asarray(rng.normal(size=(n, c)), jnp.float32)
    deg = 1.0 + jax.ops.segment_sum(jnp.ones(s.shape), r, n)
    norm = jax.lax.rsqrt(deg)[s] * jax.lax.rsqrt(deg)[r]

    def segment(x: jax.Array, nrm: jax.Array, s: jax.Array, r: jax.Array) -> jax.Array:  # the reference (and the path below 32 features)
        return jax.ops.segment_sum(nrm[:, None] * x[s], r, x.shape[0])

    def csr(x: jax.Array, nrm: jax.Array, s: jax.Array, r: jax.Array) -> jax.Array:
        return propagate(x, s, r, nrm)

    def fwd_bwd(p: Callable[..., jax.Array]) -> Callable[..., jax.Array]:  # forward and the gradient of a loss that depends on the input
        return lambda x, *a: jax.grad(lambda x: 0.5 * jnp.sum(p(x, *a) ** 2))(x)

    params = {"w1": w1, "b1": jnp.zeros(h), "w2": w2, "b2": jnp.zeros(c)}
    opt = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(0.01))
    rows = {
        "degrees and edge norms": _per_call_ms(
            lambda w, s, r: w * jax.lax.rsqrt(1.0 + jax.ops.segment_sum(w, r, n))[s], norm, s, r),
        "X W (CSR kernel)": _per_call_ms(lambda w, x: sparse_matmul(x, w), w1, inputs.nodes),
        "X W + X^T G": _per_call_ms(
            lambda w, x: jax.grad(lambda w: 0.5 * jnp.sum(sparse_matmul(x, w) ** 2))(w),
            w1, inputs.nodes),
    }
    for name, x in (("64", h64), ("7", h7)):
        for kind, p in (("segment_sum", segment), ("propagate", csr)):
            rows[f"propagation {name} wide, {kind}, forward"] = _per_call_ms(p, x, norm, s, r)
            rows[f"propagation {name} wide, {kind}, forward + backward"] = _per_call_ms(
                fwd_bwd(p), x, norm, s, r)
    rows["dense layer 2 (N x 64 @ 64 x 7), forward + both gradients"] = _per_call_ms(
        lambda x, w: jax.grad(lambda x, w: 0.5 * jnp.sum((x @ w) ** 2), argnums=(0, 1))(x, w),
        h64, w2)
    rows["dropout 0.5 on N x 64 (packed bits)"] = _per_call_ms(
        lambda x, k: jnp.where(bernoulli_keep(jax.random.fold_in(k, (x[0, 0] > 0).astype(
            jnp.int32)), 0.5, x.shape), 2 * x, 0.0), h64, jax.random.key(0))
    rows["Adam + L2 step (92k parameters)"] = _per_call_ms(
        lambda w, p, st: optax.apply_updates(p, opt.update({**p, "w1": w}, st, p)[0]),
        w1, params, opt.init(params))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="*", default=[1, 8, 32, 128])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pyg-models", type=int, default=5,
                        help="models in PyG's sequential loop per measurement (s/model is flat in R)")
    parser.add_argument("--edge-access", default="full", choices=["full", "inductive", "none"])
    parser.add_argument("--torch-threads", type=int, default=2,
                        help="torch intra-op threads (1 avoids OpenMP spinning on a loaded machine)")
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="jaxaudit models vmapped together (default: automatic, 1 on CPU)")
    parser.add_argument("--skip-pyg", action="store_true")
    parser.add_argument("--pieces", action="store_true",
                        help="also time the pieces of one model-epoch (benchmarks/README.md)")
    parser.add_argument("--host-devices", type=int, default=cpu_core_count(),
                        help="CPU devices JAX starts with (default: one per core, as the CLI)")
    parser.add_argument("--device-counts", default=None,
                        help="comma-separated device counts to time jaxaudit on (default: 1 and "
                        "--host-devices)")
    args = parser.parse_args(argv)
    jax.config.update("jax_num_cpu_devices", args.host_devices)  # before the first computation
    counts = sorted({1, args.host_devices} if args.device_counts is None else
                    {int(c) for c in args.device_counts.split(",")})
    graph = load_planetoid("cora")
    print(f"Cora GCN, {args.epochs} epochs, uniform 50% sample, edge access {args.edge_access}; "
          f"{jax.device_count()} {jax.default_backend()} device(s), jax {jax.__version__}")
    print(f"{'R':>5} {'devices':>7} {'PyG s/model':>12} {'jaxaudit s/model':>17} {'compile s':>10} "
          f"{'ratio':>7}")
    if args.pieces:
        for name, ms in bench_pieces(graph).items():
            print(f"{name:<62} {ms * 1e3:8.0f} us", flush=True)
    for r in args.models:
        pyg = float("nan") if args.skip_pyg else bench_pyg(graph, min(r, args.pyg_models),
                                                            args.epochs, args.torch_threads)
        for d in counts:
            jx, compile_s = bench_jax(graph, r, args.epochs, args.repeats, args.edge_access,
                                      args.chunk_size, jax.devices()[:d])
            print(f"{r:>5} {d:>7} {pyg:>12.3f} {jx:>17.3f} {compile_s:>10.1f} {pyg / jx:>7.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
