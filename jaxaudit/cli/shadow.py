"""``jaxaudit shadow``: train R shadow GNNs on sampled subgraphs and score every node (docs/gnn_mia.md).

Example::

    jaxaudit shadow --dataset cora --model gcn --sampler uniform --ratio 0.5 --models 256 \\
        --epochs 200 --edge-access inductive --out runs/cora_uniform/

The models are trained in chunks of ``--chunk`` models (one jit-compiled call each; chunk c uses
the key ``fold_in(key(seed), c)``); every finished chunk is saved at once (``chunks/chunk_00000.npz`` with
``masks`` (r, N) and ``scores`` (r, N)), so an interrupted run resumes where it stopped. A folder
that already holds a run with a different configuration is refused. At the end ``summary.json``
holds the sizes and the global leave-one-out LiRA AUC.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from jaxaudit._validation import check_output_dir
from jaxaudit.cli._types import as_flags, bounded, count, nonnegative, nonnegative_int, positive  # noqa: F401

# The library's registries (jaxaudit.datasets.GRAPH_DATASETS, jaxaudit.graph.SAMPLERS), named
# here without importing jax so that --help stays fast (tests/cli/test_shadow_cli.py checks they
# agree).
DATASETS = ("cora", "citeseer", "csbm")
SAMPLERS = ("uniform", "poisson", "snowball", "random_walk")

# Limits refused before any work (each flag's --help says its own).
MAX_MODELS = 100_000        # --models
MAX_EPOCHS = 100_000        # --epochs
MAX_CSBM_NODES = 50_000     # --csbm-nodes: the CSBM draws every node pair (O(N^2): ~0.1 s at
                            # 2708 nodes, ~35 s at 50,000 on 2 cores), then trains on it
MAX_RESULT_BYTES = 8 * 2**30  # the R x N masks and scores, their copies and LiRA's float64
_BYTES_PER_SCORE = 40


models_type = bounded(count, 1, MAX_MODELS)
epochs_type = bounded(count, 1, MAX_EPOCHS)
csbm_nodes_type = bounded(int, 2, MAX_CSBM_NODES)
CSBM_NODES_HELP = f"CSBM size in nodes, 2 to {MAX_CSBM_NODES} (dataset csbm)"


def check_result_size(num_models: int, num_nodes: int) -> None:
    """Refuse R x N results that would not fit in memory, before any work."""
    need = int(num_models) * int(num_nodes) * _BYTES_PER_SCORE
    if need > MAX_RESULT_BYTES:
        raise ValueError(
            f"--models {num_models} on {num_nodes} nodes: the scores need about "
            f"{need / 2**30:.1f} GiB (the limit is {MAX_RESULT_BYTES / 2**30:g} GiB, about "
            f"{_BYTES_PER_SCORE} bytes per model and node); lower --models")



def add_shadow_options(p: argparse.ArgumentParser, *, ratio_type=float) -> None:
    """The options that describe the shadow models (graph, GNN, sampler, R, epochs), shared by
    ``jaxaudit shadow`` and ``jaxaudit bmp``."""
    p.add_argument("--dataset", choices=DATASETS, default="cora",
                   help="graph: a Planetoid data set or the generated CSBM")
    p.add_argument("--graph", default=None, metavar="FILE.npz",
                   help="your own graph instead of --dataset: an .npz with features (N, F), "
                        "labels (N,), edge_index (2, E) and optional masks "
                        "(jaxaudit.graph.save_graph_npz writes one) (default: none, use "
                        "--dataset)")
    p.add_argument("--model", choices=("gcn", "sage", "gat"), default="gcn",
                   help="shadow GNN architecture (2 layers, hidden 64)")
    p.add_argument("--sampler", choices=SAMPLERS, default="uniform",
                   help="how each shadow model's training nodes are drawn")
    p.add_argument("--ratio", type=ratio_type, default=0.5,
                   help="sampling ratio in (0, 1] (Poisson: inclusion probability q)")
    p.add_argument("--snowball-edges", choices=("discovered", "induced"), default="discovered",
                   help="snowball sampler: train on the edges it discovered or all induced ones")
    p.add_argument("--models", type=models_type, default=64,
                   help=f"number of shadow models R, at most {MAX_MODELS} (and R x nodes x "
                        f"{_BYTES_PER_SCORE} bytes at most {MAX_RESULT_BYTES / 2**30:g} GiB)")
    p.add_argument("--epochs", type=epochs_type, default=200,
                   help=f"full-batch training epochs, at most {MAX_EPOCHS}")

def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "shadow",
        help="train shadow GNNs on sampled subgraphs and score every node",
        description="Train R shadow GNNs (one jit-compiled vmapped call per chunk) on R sampled "
        "node sets and write per-model membership masks and true-class-logit scores; resumable.",
    )
    add_shadow_options(p, ratio_type=float)
    p.add_argument("--learning-rate", type=positive, default=0.01, help="Adam learning rate")
    p.add_argument("--weight-decay", type=nonnegative, default=5e-4, help="L2 weight decay")
    p.add_argument("--edge-access", choices=("inductive", "full", "none"), default="inductive",
                   help="edges a shadow model trains on: its sample's, all, or none")
    p.add_argument("--chunk", type=count, default=32, help="models per saved chunk")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    p.add_argument("--csbm-nodes", type=csbm_nodes_type, default=2708, help=CSBM_NODES_HELP)
    p.add_argument("--data-dir", default=None,
                   help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    p.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def graph_file_config(path) -> dict:
    """The stored form of ``--graph FILE``: its resolved path and SHA-256, so a resumed run
    refuses a file that changed."""
    import hashlib

    from jaxaudit._validation import check_input_path

    path = check_input_path("--graph", path)
    return {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def graph_and_sampler(cfg: dict, data_dir):
    """The graph (``--graph`` file, or ``--dataset`` by name) and the sampler of a stored
    configuration, through the library's registries; errors name the flags."""
    import hashlib

    from jaxaudit.datasets import graph_by_name
    from jaxaudit.graph import load_graph_npz, sampler_by_name

    if cfg.get("graph_file"):
        path = Path(cfg["graph_file"]["path"])
        with as_flags(graph="--graph"):
            graph = load_graph_npz(path)
        if hashlib.sha256(path.read_bytes()).hexdigest() != cfg["graph_file"]["sha256"]:
            raise ValueError(f"--graph {path} changed since this run was configured")
    else:
        with as_flags(num_nodes="--csbm-nodes"):
            graph = graph_by_name(cfg["dataset"], seed=cfg["seed"],
                                  num_nodes=cfg.get("csbm_nodes", 2708), data_dir=data_dir)
    options = {"edges": cfg.get("snowball_edges", "discovered")} \
        if cfg["sampler"] == "snowball" else {}
    try:
        sampler = sampler_by_name(cfg["sampler"], cfg["ratio"], **options)
    except ValueError as err:
        raise ValueError(f"--ratio {cfg['ratio']} (--sampler {cfg['sampler']}): {err}") from err
    return graph, sampler


def _config(args: argparse.Namespace) -> dict:
    cfg = {k: getattr(args, k) for k in (
        "dataset", "model", "sampler", "ratio", "models", "epochs", "learning_rate",
        "weight_decay", "edge_access", "chunk", "seed")}
    if args.sampler == "snowball":
        cfg["snowball_edges"] = args.snowball_edges
    if args.graph is not None:
        cfg["dataset"] = "file"
        cfg["graph_file"] = graph_file_config(args.graph)
    elif args.dataset == "csbm":
        cfg["csbm_nodes"] = args.csbm_nodes
    from jaxaudit.runs.keys import KEY_RULE

    cfg["key_rule"] = KEY_RULE  # model m uses unit_key(seed, m), whatever the chunking
    return cfg


def run(args: argparse.Namespace) -> int:

    import numpy as np

    from jaxaudit.graph import train_shadow_models
    from jaxaudit.mia import lira_loo, roc_auc
    from jaxaudit.runs import RunDir, dumps_strict, run_chunks, unit_keys

    check_output_dir("--out", args.out)
    if args.dataset == "csbm" and args.graph is None:
        check_result_size(args.models, args.csbm_nodes)
    # the graph and the sampler first: the library checks their arguments before any work
    cfg = _config(args)
    graph, sampler = graph_and_sampler(cfg, args.data_dir)
    check_result_size(args.models, graph.num_nodes)
    existed, had_folder = (Path(args.out) / "manifest.json").exists(), Path(args.out).exists()
    run_dir = RunDir.open(args.out, kind="shadow", config=cfg)
    sizes = [min(args.chunk, args.models - start) for start in range(0, args.models, args.chunk)]
    names = [f"chunk_{c:05d}" for c in range(len(sizes))]

    def compute(name: str) -> dict:
        c = names.index(name)
        # a diverged training is refused here, before its chunk is saved
        with as_flags(learning_rate="--learning-rate", weight_decay="--weight-decay",
                      epochs="--epochs"):
            out = train_shadow_models(
                unit_keys(args.seed, c * args.chunk, sizes[c]), graph, sampler, args.model,
                sizes[c],
                epochs=args.epochs, learning_rate=args.learning_rate,
                weight_decay=args.weight_decay, edge_access=args.edge_access)
        return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

    try:
        results = run_chunks(run_dir, names, compute, progress=not args.quiet,
                             desc=f"shadow {args.dataset}/{args.model}")
    except ValueError:
        from jaxaudit.runs.rundir import discard_new_run

        discard_new_run(run_dir.path, existed, keep_folder=had_folder)
        raise
    masks = np.concatenate([results[n]["masks"] for n in names]).astype(bool)
    scores = np.concatenate([results[n]["scores"] for n in names])
    summary = {"num_models": int(masks.shape[0]), "num_nodes": int(masks.shape[1]),
               "mean_inclusion": float(masks.mean()), "chunks": names}
    if masks.shape[0] >= 4:
        summary["lira_global_auc"] = float(roc_auc(lira_loo(scores, masks), masks))
    run_dir.write_json("summary.json", summary)
    if not args.quiet:
        print(dumps_strict(summary | {"out": str(run_dir.path)}, indent=1))
    return 0
