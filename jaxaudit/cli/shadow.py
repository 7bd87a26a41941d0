"""``jaxaudit shadow``: train R shadow GNNs on sampled subgraphs and score every node
(:func:`jaxaudit.pipelines.run_shadow`; docs/gnn_mia.md).

Example: ``jaxaudit shadow --dataset cora --sampler uniform --models 256 --out runs/cora_uniform/``
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from jaxaudit.cli._types import (
    add_sweep_options,
    as_flags,
    bounded,
    count,
    filled,
    nonnegative,
    nonnegative_int,
    positive,
    sweep_of,
)

# The library's registries and limits (jaxaudit.datasets.GRAPH_DATASETS, jaxaudit.graph.samplers.SAMPLERS,
# jaxaudit.pipelines.shadow_models.MODELS, MAX_*), named here without importing jax so that --help
# stays fast (tests/cli/test_shadow_cli.py checks they agree).
DATASETS = ("cora", "citeseer", "csbm")
SAMPLERS = ("uniform", "poisson", "snowball", "random_walk")
MODELS = ("gcn", "sage", "gat", "mlp", "capped_gcn")
MAX_MODELS, MAX_EPOCHS, MAX_CSBM_NODES = 100_000, 100_000, 50_000
MAX_RESULT_GIB, BYTES_PER_SCORE = 8, 40

#: Config field -> flag, for the library's errors.
FLAGS = dict(num_models="--models", graph_file="--graph", csbm_nodes="--csbm-nodes",
             learning_rate="--learning-rate", weight_decay="--weight-decay", run_dir="--out",
             epochs="--epochs", ratio="--ratio", **{f"dp.{k}": f"--dp-{k.replace('_', '-')}" for k in (
                 "epsilon", "noise_multiplier", "degree_cap", "delta")}, **{"dp.clip_norm": "--dp-clip"})


@contextlib.contextmanager
def flags(names: dict[str, str]) -> Iterator[None]:
    """The library's errors (also a missing file) with config fields named as flags."""
    try:
        with as_flags(**names):
            yield
    except FileNotFoundError as err:
        with as_flags(**names):
            raise ValueError(str(err)) from err


def add_shadow_options(p: argparse.ArgumentParser, *, ratio_type: Any = float) -> None:
    """The options of the shadow models, shared by ``jaxaudit shadow`` and ``jaxaudit bmp``."""
    graph = p.add_mutually_exclusive_group()  # --graph with --dataset is refused, not ignored
    graph.add_argument("--dataset", choices=DATASETS, default=None, help="graph: a Planetoid data set or the generated CSBM (default: cora)")
    graph.add_argument("--graph", default=None, metavar="FILE.npz", help="your own graph instead of --dataset: an .npz with features (N, F), labels (N,), edge_index (2, E) and optional masks (jaxaudit.graph.save_graph_npz writes one) (default: none, use --dataset)")
    p.add_argument("--model", choices=MODELS, default="gcn", help="shadow GNN architecture (2 layers, hidden 64)")
    p.add_argument("--sampler", choices=SAMPLERS, default="uniform", help="how each shadow model's training nodes are drawn")
    p.add_argument("--ratio", type=ratio_type, default=0.5, help="sampling ratio in (0, 1] (Poisson: inclusion probability q)")
    p.add_argument("--snowball-edges", choices=("discovered", "induced"), default="discovered", help="snowball sampler: train on the edges it discovered or all induced ones")
    p.add_argument("--models", type=bounded(count, 1, MAX_MODELS), default=64, help=f"number of shadow models R, at most {MAX_MODELS} (and R x nodes x {BYTES_PER_SCORE} bytes at most {MAX_RESULT_GIB:g} GiB)")
    p.add_argument("--epochs", type=bounded(count, 1, MAX_EPOCHS), default=200, help=f"full-batch training epochs, at most {MAX_EPOCHS}")
    p.add_argument("--edge-access", choices=("inductive", "full", "none"), default="inductive", help="edges a shadow model trains on: its sample's, all, or none")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    p.add_argument("--csbm-nodes", type=bounded(int, 2, MAX_CSBM_NODES), default=2708, help=f"CSBM size in nodes, 2 to {MAX_CSBM_NODES} (dataset csbm)")
    p.add_argument("--data-dir", default=None, help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    dp = p.add_mutually_exclusive_group()  # node-level DP (models mlp, capped_gcn)
    dp.add_argument("--dp-epsilon", type=positive, default=None, help="train with node-level DP at this epsilon (add/remove, at --dp-delta; sigma from the accountant; models mlp, capped_gcn; default: off, non-private)")
    dp.add_argument("--dp-noise-multiplier", type=nonnegative, default=None, help="train with node-level DP at this noise multiplier sigma (0: clipping only; default: off)")
    p.add_argument("--dp-clip", type=positive, default=1.0, help="node-level DP: per-node gradient clip C")
    p.add_argument("--dp-degree-cap", type=count, default=5, help="node-level DP: in- and out-degree cap K of the training graph")
    p.add_argument("--dp-delta", type=positive, default=1e-5, help="node-level DP: delta of --dp-epsilon")
    add_sweep_options(p)


def shadow_config(args: argparse.Namespace, **fields: Any) -> Any:
    """The :class:`jaxaudit.pipelines.ShadowConfig` of the shadow options (and ``fields``)."""
    from jaxaudit.pipelines import NodeDpConfig, ShadowConfig

    dp = (None if args.dp_epsilon is None and args.dp_noise_multiplier is None else NodeDpConfig(
        args.dp_epsilon, args.dp_noise_multiplier, args.dp_clip, args.dp_degree_cap, args.dp_delta))
    return filled(ShadowConfig(dp=dp), dict(vars(args), graph_file=args.graph,
                                            num_models=args.models, **fields))


def print_dp(config: dict) -> None:
    """One line with the accountant's guarantee of a DP sweep (none when DP is off)."""
    if "dp" in config.get("derived", {}):
        print("node-level DP (add/remove): epsilon={epsilon:.4g} at delta={delta:g}, "
              "sigma={noise_multiplier:.4g}".format(**config["derived"]["dp"]))


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "shadow", help="train shadow GNNs on sampled subgraphs and score every node",
        description="Train R shadow GNNs (one jit-compiled vmapped call per chunk; model m uses "
        "the key fold_in(key(seed), m)) on R sampled node sets and write per-model membership "
        "masks and true-class-logit scores, chunk by chunk; resumable.")
    add_shadow_options(p, ratio_type=float)
    p.add_argument("--learning-rate", type=positive, default=0.01, help="Adam learning rate")
    p.add_argument("--weight-decay", type=nonnegative, default=5e-4, help="L2 weight decay")
    p.add_argument("--chunk", type=count, default=32, help="models per saved chunk")
    p.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxaudit.pipelines import run_shadow
    from jaxaudit.report import shadow as report
    from jaxaudit.runs import ProgressBar

    config = shadow_config(args)  # with --learning-rate, --weight-decay and --chunk
    with flags(FLAGS), ProgressBar(f"shadow {config.dataset}/{args.model}",
                                        enabled=not args.quiet) as bar:
        result = run_shadow(config, args.out, progress=bar, sweep=sweep_of(args))
    if not args.quiet:
        print(report.text_table(result))
        print_dp(result.config)
    return 0
