"""``jaxaudit rdp``: black-box Rényi-DP audit of DP-SGD (arXiv 2405.14106; docs/renyi.md). Three
modes, a module each (``run(args)``): canary runs in both worlds (``rdp_runs``, the default),
scores from any training code (``--scores``: ``rdp_scores``), one run with m canaries
(``--one-run``: ``rdp_one_run``). Here: the flags they share, the mode, the configuration."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from jaxaudit.cli._types import (
    add_sweep_options,
    as_flags,
    count,
    filled,
    finite,
    nonnegative_int,
    positive,
)


def _orders(text: str) -> list[float]:
    tokens = [t.strip() for t in text.split(",")]
    if any(not t for t in tokens):
        raise argparse.ArgumentTypeError(f"orders must be comma-separated numbers without empty "
                                         f"entries, got {text!r}")
    return list(dict.fromkeys(finite(t) for t in tokens))  # a repeated order is one row


#: ``jaxaudit.datasets.audit_split.AUDIT_DATASETS`` / ``jaxaudit.dpsgd.MODELS``, spelled out so
#: that building the parser does not import jax; a test keeps them equal.
DATASETS = ("mnist", "synthetic", "cifar10")
MODELS = ("cnn", "mlp", "logreg", "cifar_cnn")
#: Config fields as the flags they come from (error messages name the flag).
FLAGS = {field: "--" + field.replace("_", "-") for field in (
    "noise_multiplier", "sampling_rate", "dataset_size", "public_size", "learning_rate",
    "canary_label", "pretrain_epochs", "orders", "chunk", "delta", "epsilon", "steps", "model",
    "dataset", "seed")}
FLAGS.update(clip_norm="--clip", num_runs="--runs", in_scores="--scores IN", run_dir="--out",
             out_scores="--scores OUT", confidence="confidence (1 − --significance)",
             chunk_size="--vmap-chunk", pretrain_learning_rate="--pretrain-lr", pretrain_batch_size="--pretrain-batch")
ONE_RUN_FLAGS = dict(FLAGS, num_canaries="--canaries", kind="--canary-kind")
CANARY_KINDS = ("gradient", "input")  # jaxaudit.dpsgd.one_run.KINDS (a test keeps them equal)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rdp", help="audit DP-SGD's Rényi-DP guarantee with canary runs (DV lower bounds)",
        description="Train R private models with and R without a worst-case canary, then lower-bound ε_α with the Donsker–Varadhan estimator next to the accountant, the threshold baselines and every score-based ε lower bound; resumable. With --scores, audit canary scores saved by any training code instead (no training).")
    add = p.add_argument
    add("--dataset", choices=DATASETS, default="mnist", help="data set (default mnist)")
    add("--model", choices=MODELS, default="cnn", help="model (default cnn, the MNIST SmallCNN; cifar_cnn for cifar10)")
    add("--dataset-size", type=int, default=None, help="|D⁻|, the private training set (default 100; 1000 with --one-run)")
    add("--public-size", type=nonnegative_int, default=None, help="public examples for pretraining, disjoint from D⁻ (default: all the other images of the split, 2000 for synthetic; 0: random initialisation)")
    add("--pretrain-epochs", type=finite, default=5.0, help="pretraining epochs over the public examples")
    add("--pretrain-optimizer", choices=("sgd", "adam"), default="sgd", help="pretraining optimiser")
    add("--pretrain-lr", dest="pretrain_learning_rate", type=finite, default=0.01, help="pretraining learning rate")
    add("--pretrain-batch", dest="pretrain_batch_size", type=int, default=32, help="pretraining batch size")
    add("--canary-label", default="9", help="label of the blank canary: an integer (default 9, as in the published code) or 'worst' (the label the pretrained model finds least likely)")
    add("--accountant", choices=("pld", "rdp"), default="pld", help="accountant that calibrates σ from --epsilon/--delta and gives the ε-at-δ upper bound (default pld, tight; the reported ε_α is the RDP accountant's at that σ either way)")
    add("--epsilon", type=positive, default=None, help="target ε at --delta, calibrates σ (default 10 when training; --one-run: RDP accountant)")
    add("--delta", type=finite, default=1e-5, help="δ of the (ε, δ) target, in (0, 1)")
    add("--noise-multiplier", type=positive, default=None, help="σ (overrides --epsilon/--delta calibration; default: calibrated)")
    add("--steps", type=count, default=None, help="T (default 100 when training; required with --scores)")
    add("--clip", dest="clip_norm", type=finite, default=1.0, help="per-example clipping norm C")
    add("--learning-rate", type=finite, default=None, help="η; the update is η·(noisy clipped sum)/(q·|D⁻|) (default 1.333e-4·q·|D⁻|: the published code's step of 4/30000 on the noisy sum; see docs/renyi.md)")
    add("--sampling-rate", type=finite, default=None, help="Poisson rate q, 1: full batch (default 1 when training; required with --scores)")
    add("--runs", dest="num_runs", type=int, default=None, help="runs per world R, >= 2 (default 64; not with --one-run)")
    add("--chunk", type=int, default=32, help="runs per world per saved chunk")
    add("--orders", type=_orders, default=[1.25, 1.5, 2.0, 3.0], help="Rényi orders α > 1, comma-separated, repeats dropped (default: 1.25,1.5,2,3)")
    add("--vmap-chunk", dest="chunk_size", type=count, default=None, help="runs computed simultaneously inside a chunk (default: all; CPU: 2)")
    add("--unroll", type=count, default=10, help="lax.scan unroll factor over steps (CPU: rolled loops are ~2x slower)")
    add("--significance", type=finite, default=0.05, help="level of the lower confidence bounds, in (0, 1)")
    add("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    add("--data-dir", default=None, help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    add("--scores", nargs=2, metavar=("IN", "OUT"), default=None, help="audit these canary scores (.npy saved with numpy.save, 1-D float: runs with / without the canary, the same sampling rate in both; docs/opacus.md) instead of training; training-only options are ignored (default: train)")
    add("--one-run", action="store_true", help="audit in ONE training run instead: --canaries m canaries, each included by a fair coin from --seed, then the one-run and f-DP one-run bounds beside the accountant (Steinke, Nasr, Jagielski arXiv 2305.08846; Mahloujifar, Melis, Chaudhuri arXiv 2410.22235; datasets mnist and synthetic, models cnn, mlp and logreg, random initialisation)")
    add("--canaries", dest="num_canaries", type=count, default=100, help="--one-run: m, the number of canaries (50 to 10000: with fewer, the fair coins too often leave fewer than the 8 per world the bounds need)")
    add("--canary-kind", dest="kind", choices=CANARY_KINDS, default="gradient", help="--one-run: gradient (a Dirac gradient in a coordinate the data never uses, the tightest audit) or input (further images of the split with wrong labels)")
    add("--out", required=True, help="run folder (created; resumed if it exists)")
    add("--quiet", action="store_true", help="no progress bar")
    add_sweep_options(p)  # training mode only
    p.set_defaults(func=run)


#: The module of each mode (``--scores``, ``--one-run``, neither); each has ``run(args)``.
MODES = {"--scores": "rdp_scores", "--one-run": "rdp_one_run", None: "rdp_runs"}


def config(cls: Any, args: argparse.Namespace) -> Any:
    """The configuration ``cls`` from the flags, ``dpsgd``'s fields too (None: the default)."""
    values = dict(vars(args), orders=tuple(args.orders), confidence=1 - args.significance,
                  **dict(zip(("in_scores", "out_scores"), args.scores or (None, None), strict=True)))
    return filled(cls(**dict.fromkeys(set(cls._fields) - set(cls._field_defaults))), values)


def run(args: argparse.Namespace) -> int:
    mode = "--scores" if args.scores is not None else "--one-run" if args.one_run else None
    if args.one_run and (args.scores is not None or args.noise_multiplier is not None):
        raise ValueError("--one-run calibrates σ from --epsilon; it takes no --scores or "
                         "--noise-multiplier")
    if args.one_run and args.num_runs is not None:  # refused, not ignored
        raise ValueError("--runs does not apply to --one-run (one training run; its canaries "
                         "are --canaries)")
    sweep = [flag for flag, given in (("--worker", args.worker), ("--ray-address", args.ray_address),
                                      ("--backend ray", args.backend == "ray")) if given]
    if mode and sweep:  # refused, not ignored
        raise ValueError(f"{sweep[0]} does not apply to {mode} (one process, no sweep of runs)")
    with as_flags(**(ONE_RUN_FLAGS if args.one_run else FLAGS)):
        return int(importlib.import_module(f"jaxaudit.cli.{MODES[mode]}").run(args))
