"""``jaxaudit rdp``: black-box RDP audit of DP-GD/DP-SGD with canary runs (arXiv 2405.14106).

Parses, builds a :class:`jaxaudit.pipelines.RdpConfig` (``--scores IN OUT``: a
:class:`jaxaudit.pipelines.ScoresAuditConfig`; ``--one-run``: a ``OneRunAuditConfig``), calls
:func:`jaxaudit.pipelines.run_rdp` (``run_scores_audit``; ``run_one_run``) and prints the table
of :mod:`jaxaudit.report.rdp`. Steps, files and keys: docs/renyi.md; other training code's
scores: docs/opacus.md. Example::

    jaxaudit rdp --dataset mnist --model cnn --dataset-size 100 --epsilon 10 --delta 1e-5 \\
        --steps 100 --clip 1.0 --runs 256 --orders 1.25,1.5,2,3 --out runs/rdp_eps10/
    jaxaudit rdp --scores in.npy out.npy --noise-multiplier 1.1 --sampling-rate 0.01 \\
        --steps 1000 --delta 1e-5 --orders 1.5,2,4 --out runs/rdp_opacus/
    jaxaudit rdp --one-run --canaries 1000 --dataset-size 1000 --epsilon 4 --out runs/one/
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from jaxaudit._validation.paths import check_read_size
from jaxaudit.cli._types import (
    add_sweep_options,
    as_flags,
    count,
    finite,
    nonnegative_int,
    positive,
    sweep_kwargs,
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
FLAGS = dict(noise_multiplier="--noise-multiplier", sampling_rate="--sampling-rate",
             dataset_size="--dataset-size", public_size="--public-size",
             learning_rate="--learning-rate", clip_norm="--clip", num_runs="--runs",
             vmap_chunk="--vmap-chunk", in_scores="--scores IN", out_scores="--scores OUT",
             canary_label="--canary-label", pretrain_epochs="--pretrain-epochs",
             pretrain_lr="--pretrain-lr", pretrain_batch="--pretrain-batch", orders="--orders",
             chunk="--chunk", delta="--delta", epsilon="--epsilon", steps="--steps",
             model="--model", dataset="--dataset", seed="--seed", run_dir="--out",
             confidence="confidence (1 − --significance)")
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
    add("--pretrain-lr", type=finite, default=0.01, help="pretraining learning rate")
    add("--pretrain-batch", type=int, default=32, help="pretraining batch size")
    add("--canary-label", default="9", help="label of the blank canary: an integer (default 9, as in the published code) or 'worst' (the label the pretrained model finds least likely)")
    add("--accountant", choices=("pld", "rdp"), default="pld", help="accountant that calibrates σ from --epsilon/--delta and gives the ε-at-δ upper bound (default pld, tight; the reported ε_α is the RDP accountant's at that σ either way)")
    add("--epsilon", type=positive, default=None, help="target ε at --delta, calibrates σ (default 10 when training; --one-run: RDP accountant)")
    add("--delta", type=finite, default=1e-5, help="δ of the (ε, δ) target, in (0, 1)")
    add("--noise-multiplier", type=positive, default=None, help="σ (overrides --epsilon/--delta calibration; default: calibrated)")
    add("--steps", type=count, default=None, help="T (default 100 when training; required with --scores)")
    add("--clip", type=finite, default=1.0, help="per-example clipping norm C")
    add("--learning-rate", type=finite, default=None, help="η; the update is η·(noisy clipped sum)/(q·|D⁻|) (default 1.333e-4·q·|D⁻|: the published code's step of 4/30000 on the noisy sum; see docs/renyi.md)")
    add("--sampling-rate", type=finite, default=None, help="Poisson rate q, 1: full batch (default 1 when training; required with --scores)")
    add("--runs", type=int, default=64, help="runs per world R (>= 2)")
    add("--chunk", type=int, default=32, help="runs per world per saved chunk")
    add("--orders", type=_orders, default=[1.25, 1.5, 2.0, 3.0], help="Rényi orders α > 1, comma-separated, repeats dropped (default: 1.25,1.5,2,3)")
    add("--vmap-chunk", type=count, default=None, help="runs computed simultaneously inside a chunk (default: all; CPU: 2)")
    add("--unroll", type=count, default=10, help="lax.scan unroll factor over steps (CPU: rolled loops are ~2x slower)")
    add("--significance", type=finite, default=0.05, help="level of the lower confidence bounds, in (0, 1)")
    add("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    add("--data-dir", default=None, help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    add("--scores", nargs=2, metavar=("IN", "OUT"), default=None, help="audit these canary scores (.npy saved with numpy.save, 1-D float: runs with / without the canary, the same sampling rate in both; docs/opacus.md) instead of training; training-only options are ignored (default: train)")
    add("--one-run", action="store_true", help="audit in ONE training run instead: --canaries m canaries, each included by a fair coin from --seed, then the one-run and f-DP one-run bounds beside the accountant (Steinke, Nasr, Jagielski arXiv 2305.08846; Mahloujifar, Melis, Chaudhuri arXiv 2410.22235; datasets mnist and synthetic, models cnn, mlp and logreg, random initialisation)")
    add("--canaries", type=count, default=100, help="--one-run: m, the number of canaries (16 to 10000)")
    add("--canary-kind", choices=CANARY_KINDS, default="gradient", help="--one-run: gradient (a Dirac gradient in a coordinate the data never uses, the tightest audit) or input (further images of the split with wrong labels)")
    add("--out", required=True, help="run folder (created; resumed if it exists)")
    add("--quiet", action="store_true", help="no progress bar")
    add_sweep_options(p)  # training mode only
    p.set_defaults(func=run)


def _common(args: argparse.Namespace) -> dict:
    return dict(accountant=args.accountant, epsilon=args.epsilon, delta=args.delta,
                noise_multiplier=args.noise_multiplier, orders=tuple(args.orders),
                confidence=1.0 - args.significance, seed=args.seed)


def run_scores(args: argparse.Namespace) -> int:
    """``--scores IN OUT``: audit canary scores saved by any training code."""
    from jaxaudit.pipelines import ScoresAuditConfig, run_scores_audit
    from jaxaudit.report.rdp import text_table

    for flag, path in zip(("--scores IN", "--scores OUT"), args.scores, strict=True):
        if os.path.isfile(path):  # before it is read (a missing file: the pipeline's error)
            check_read_size(flag, path, bytes_per_byte=2.0)  # and its float64 copy
    config = ScoresAuditConfig(args.scores[0], args.scores[1], sampling_rate=args.sampling_rate, steps=args.steps,
                               **_common(args))
    result = run_scores_audit(config, args.out)
    print(text_table(result))
    print(f"wrote results.json, summary.md and rdp_audit.png into {args.out}")
    return 0


def run_training(args: argparse.Namespace) -> int:
    """Train the canary runs (resumable), then audit their scores."""
    from jaxaudit.pipelines import RdpConfig, run_rdp
    from jaxaudit.report.rdp import text_table
    from jaxaudit.runs import ProgressBar

    given = dict(dataset=args.dataset, model=args.model, dataset_size=args.dataset_size,
                 public_size=args.public_size, pretrain_epochs=args.pretrain_epochs,
                 pretrain_optimizer=args.pretrain_optimizer, pretrain_lr=args.pretrain_lr,
                 pretrain_batch=args.pretrain_batch, canary_label=args.canary_label,
                 steps=args.steps, clip_norm=args.clip, learning_rate=args.learning_rate,
                 sampling_rate=args.sampling_rate, num_runs=args.runs, chunk=args.chunk,
                 data_dir=args.data_dir, vmap_chunk=args.vmap_chunk, unroll=args.unroll,
                 **_common(args))
    config = RdpConfig(**{k: v for k, v in given.items() if v is not None})  # None: default
    with ProgressBar("canary runs", enabled=not args.quiet) as bar:
        result = run_rdp(config, args.out, progress=bar, **sweep_kwargs(args))
    if not result.complete:  # a --worker share: the audit waits for the other workers' chunks
        print(f"{len(result.in_scores)} runs per world so far in {args.out}; audited when every chunk is done")
        return 0
    print(text_table(result))
    print(f"wrote results.json, summary.md and rdp_audit.png into {args.out}")
    return 0


def run_one_run(args: argparse.Namespace) -> int:
    """``--one-run``: train once with m canaries, print the bounds beside the accountant."""
    from jaxaudit.pipelines import OneRunAuditConfig
    from jaxaudit.pipelines import run_one_run as pipeline
    from jaxaudit.report.rdp import one_run_text
    from jaxaudit.runs import ProgressBar

    given = dict(dataset=args.dataset, model=args.model, dataset_size=args.dataset_size,
                 num_canaries=args.canaries, kind=args.canary_kind, epsilon=args.epsilon,
                 delta=args.delta, clip_norm=args.clip, steps=args.steps,
                 learning_rate=args.learning_rate, sampling_rate=args.sampling_rate,
                 confidence=1.0 - args.significance, seed=args.seed, data_dir=args.data_dir)
    config = OneRunAuditConfig(**{k: v for k, v in given.items() if v is not None})
    with ProgressBar("one run", enabled=not args.quiet) as bar:
        print(one_run_text(pipeline(config, args.out, progress=bar)))
    print(f"wrote result.json into {args.out}")
    return 0


def run(args: argparse.Namespace) -> int:
    mode = "--scores" if args.scores is not None else "--one-run" if args.one_run else None
    if args.one_run and (args.scores is not None or args.noise_multiplier is not None):
        raise ValueError("--one-run calibrates σ from --epsilon; it takes no --scores or "
                         "--noise-multiplier")
    sweep = [flag for flag, given in (("--worker", args.worker), ("--ray-address", args.ray_address),
                                      ("--backend ray", args.backend == "ray")) if given]
    if mode and sweep:  # refused, not ignored
        raise ValueError(f"{sweep[0]} does not apply to {mode} (one process, no sweep of runs)")
    with as_flags(**(ONE_RUN_FLAGS if args.one_run else FLAGS)):
        if args.one_run:
            return run_one_run(args)
        return run_scores(args) if args.scores is not None else run_training(args)
