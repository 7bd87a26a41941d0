"""``jaxaudit rdp``: black-box RDP audit of DP-GD/DP-SGD with canary runs (arXiv 2405.14106; docs/renyi.md).

Example::

    jaxaudit rdp --dataset mnist --model cnn --dataset-size 100 --epsilon 10 --delta 1e-5 \\
        --steps 100 --clip 1.0 --runs 256 --orders 1.25,1.5,2,3 --out runs/rdp_eps10/

The defaults follow the protocol of Annamalai & De Cristofaro's public code (arXiv 2405.14106),
which is what reproduces their published ε_emp (docs/renyi.md): σ from the tight PLD accountant,
SGD pretraining (lr 0.01, batch 32, 5 epochs) on all images not in D⁻, a blank canary labelled 9,
and the update θ ← θ − 1.333·10⁻⁴ · (noisy clipped sum), i.e. ``--learning-rate`` η = 1.333·10⁻⁴·|D⁻|
on the mean-gradient scale used here.

Steps: (1) the noise multiplier σ for (ε, δ) after T steps (``--accountant pld``, or ``rdp``; or
``--noise-multiplier``); (2) worst-case initialisation: the model is pretrained on a public
split disjoint from D⁻ (saved as chunk ``init``), the canary is a blank image with label
``--canary-label``; (3) R runs with and R without the canary, in chunks of
``--chunk`` runs per world (chunk c uses the key ``fold_in(key(seed), c)``; each finished chunk
is saved at once, so an interrupted run resumes); (4) the audit: ``results.json`` (one record per
order: accountant ε_α, DV point and lower bound, GDP and threshold baselines, violation flag; the
table rows; ε at δ), ``rdp_table.json`` and ``epsilon_at_delta.json`` (the two tables as lists of
records), ``summary.md`` (both tables in markdown, what ``jaxaudit report`` shows first) and
``rdp_audit.png`` (ε_α vs α). Every JSON file is strict: a non-finite number (an infinite
accountant ε_α) is written as ``null``.

The table's "DV estimate" is the DV point estimate raised to the best valid lower bound of its
order (DV or threshold-test lower bound, or 0) when it falls below it, marked ``↑bound``
(:func:`jaxaudit.renyi.reconcile_estimate`): the DV estimate is biased downwards, and its
"± SE(samp.)" is the held-out sampling spread given the critic, not that bias (docs/opacus.md).
Repeated ``--orders`` are dropped.

Scores from anywhere (Opacus, your own training code; docs/opacus.md): ``--scores IN.npy
OUT.npy`` skips steps (2)–(3) and audits the given canary scores (one 1-D float array per world,
saved with ``numpy.save``; float16 and integer scores are converted with a warning; at least
:func:`jaxaudit.cli.rdp_steps.min_scores_per_world` scores each, 14 at ``--significance 0.05``;
two different files) with the same accountant, table, files and plot; it needs ``--steps``,
``--sampling-rate`` and ``--noise-multiplier`` (or ``--epsilon`` and ``--delta`` to calibrate σ)
of that training, the same q in both worlds, and ignores the training-only options::

    jaxaudit rdp --scores in.npy out.npy --noise-multiplier 1.1 --sampling-rate 0.01 \\
        --steps 1000 --delta 1e-5 --orders 1.5,2,4 --out runs/rdp_opacus/

The run folder's configuration holds the SHA-256 of both score files and every option that
changes a number (``--accountant`` included), so other files or options are refused in the same
folder.

Every CPU core is used by default: the ``jaxaudit`` command exposes each core as a JAX CPU device
(see :func:`jaxaudit.sharding.use_all_cpu_cores`) and the runs are sharded over them.
"""

from __future__ import annotations

import argparse
from typing import Any

from jaxaudit._validation import check_output_dir
from jaxaudit.cli._types import count, finite, nonnegative_int, positive


def _orders(text: str) -> list[float]:
    tokens = [t.strip() for t in text.split(",")]
    if any(not t for t in tokens):
        raise argparse.ArgumentTypeError(f"orders must be comma-separated numbers without empty "
                                         f"entries, got {text!r}")
    # a repeated order is one row of the table (and one configuration): keep the first
    return list(dict.fromkeys(finite(t) for t in tokens))


#: ``jaxaudit.cli.rdp_steps.DATASETS`` / ``jaxaudit.dpsgd.MODELS``, spelled out so that building the parser
#: does not import jax (``jaxaudit --help`` stays instant); a test keeps them equal.
DATASETS = ("mnist", "synthetic", "cifar10")
MODELS = ("cnn", "mlp", "logreg", "cifar_cnn")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rdp",
        help="audit DP-SGD's Rényi-DP guarantee with canary runs (DV lower bounds)",
        description="Train R private models with and R without a worst-case canary (one "
        "jit-compiled vmapped call per chunk), then lower-bound ε_α with the Donsker–Varadhan "
        "estimator next to the accountant and threshold baselines; resumable. With --scores, "
        "audit canary scores saved by any training code instead (no training).",
    )
    p.add_argument("--dataset", choices=DATASETS, default="mnist",
                   help="data set (default mnist)")
    p.add_argument("--model", choices=MODELS, default="cnn",
                   help="model (default cnn, the MNIST SmallCNN; cifar_cnn for cifar10)")
    p.add_argument("--dataset-size", type=int, default=100,
                   help="|D⁻|, the private training set")
    p.add_argument("--public-size", type=nonnegative_int, default=None,
                   help="public examples for pretraining, disjoint from D⁻ (default: all the "
                   "other images of the split, 2000 for synthetic; 0: random initialisation)")
    p.add_argument("--pretrain-epochs", type=finite, default=5.0,
                   help="pretraining epochs over the public examples")
    p.add_argument("--pretrain-optimizer", choices=("sgd", "adam"), default="sgd",
                   help="pretraining optimiser")
    p.add_argument("--pretrain-lr", type=finite, default=0.01,
                   help="pretraining learning rate")
    p.add_argument("--pretrain-batch", type=int, default=32,
                   help="pretraining batch size")
    p.add_argument("--canary-label", default="9",
                   help="label of the blank canary: an integer (default 9, as in the published "
                   "code) or 'worst' (the label the pretrained model finds least likely)")
    p.add_argument("--accountant", choices=("pld", "rdp"), default="pld",
                   help="accountant that calibrates σ from --epsilon/--delta and gives the "
                   "ε-at-δ upper bound (default pld, tight; the reported ε_α is the RDP "
                   "accountant's at that σ either way)")
    p.add_argument("--epsilon", type=positive, default=None,
                   help="target ε at --delta, calibrates σ (default 10 when training)")
    p.add_argument("--delta", type=finite, default=1e-5, help="δ of the (ε, δ) target, in (0, 1)")
    p.add_argument("--noise-multiplier", type=positive, default=None,
                   help="σ (overrides --epsilon/--delta calibration; default: calibrated)")
    p.add_argument("--steps", type=count, default=None,
                   help="T (default 100 when training; required with --scores)")
    p.add_argument("--clip", type=finite, default=1.0, help="per-example clipping norm C")
    p.add_argument("--learning-rate", type=finite, default=None,
                   help="η; the update is η·(noisy clipped sum)/(q·|D⁻|) (default 1.333e-4·|D⁻|: "
                   "the published code's step of 4/30000 on the noisy sum, kept fixed for every "
                   "|D⁻|; η = 4 on the mean gradient hides the canary, see docs/renyi.md)")
    p.add_argument("--sampling-rate", type=finite, default=None,
                   help="Poisson rate q, 1: full batch (default 1 when training; required with "
                   "--scores)")
    p.add_argument("--runs", type=int, default=64, help="runs per world R (>= 2)")
    p.add_argument("--chunk", type=int, default=32, help="runs per world per saved chunk")
    p.add_argument("--orders", type=_orders, default=[1.25, 1.5, 2.0, 3.0],
                   help="Rényi orders α > 1, comma-separated, repeats dropped (default: "
                   "1.25,1.5,2,3)")
    p.add_argument("--vmap-chunk", type=count, default=None,
                   help="runs computed simultaneously inside a chunk (default: all; CPU: 2)")
    p.add_argument("--unroll", type=count, default=10,
                   help="lax.scan unroll factor over steps (CPU: rolled loops are ~2x slower)")
    p.add_argument("--significance", type=finite, default=0.05,
                   help="level of the lower confidence bounds, in (0, 1)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    p.add_argument("--data-dir", default=None,
                   help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    p.add_argument("--scores", nargs=2, metavar=("IN", "OUT"), default=None,
                   help="audit these canary scores (.npy saved with numpy.save, 1-D float: runs "
                   "with / without the canary, the same sampling rate in both; docs/opacus.md) "
                   "instead of training; training-only options are ignored (default: train)")
    p.add_argument("--out", required=True, help="run folder (created; resumed if it exists)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


#: Training defaults of the options that parse to None, so that the scores mode can tell
#: whether the user gave them.
_TRAINING_DEFAULTS = {"epsilon": 10.0, "steps": 100, "sampling_rate": 1.0}
#: Images in the split each data set's audit draws from (MNIST test split, CIFAR-10 train).
_SPLIT_SIZES = {"mnist": 10_000, "cifar10": 50_000, "synthetic": None}
#: The published step on the noisy sum: η = 4 over |D| = 30,000 (MNIST).
_LR_ON_SUM = 4.0 / 30_000


#: What the scores mode stores in its run configuration: every option that changes one of its
#: numbers (``--accountant`` calibrates σ from --epsilon and gives the ε-at-δ upper bound). The
#: training-only options are ignored in that mode; tests/cli/test_config_options.py checks both.
_SCORES_CONFIG = ("accountant", "epsilon", "delta", "noise_multiplier", "steps", "sampling_rate",
                  "orders", "significance", "seed")


def _config(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in (
        "dataset", "model", "dataset_size", "public_size", "pretrain_epochs",
        "pretrain_optimizer", "pretrain_lr", "pretrain_batch", "canary_label", "accountant",
        "epsilon", "delta", "noise_multiplier", "steps", "clip", "learning_rate", "sampling_rate",
        "runs", "chunk", "orders", "significance", "seed")}


def _check_audit_args(args: argparse.Namespace) -> None:
    """Checks shared by both modes (everything the accountant and the audit read)."""
    from jaxaudit._validation import check_orders, check_probability

    check_output_dir("--out", args.out)
    check_probability("--delta", args.delta, open_low=True, open_high=True)
    check_probability("--sampling-rate", args.sampling_rate, open_low=True)
    check_probability("--significance", args.significance, open_low=True, open_high=True)
    check_orders("--orders", args.orders)


def _noise_multiplier(args: argparse.Namespace) -> float:
    from jaxaudit.accounting import noise_for_epsilon

    if args.noise_multiplier is not None:
        return float(args.noise_multiplier)
    return float(noise_for_epsilon(args.epsilon, args.delta, args.steps, args.sampling_rate,
                                   accountant=getattr(args, "accountant", "rdp")))


def _audit_and_report(args, rundir, key, in_s, out_s, sigma, *, info, title, header) -> int:
    """The step after the scores exist, shared by both modes: audit, results.json, the plot and
    the printed table."""
    from jaxaudit.cli.rdp_steps import RAISED, _num, audit_to_rundir, records_table
    from jaxaudit.renyi import format_runs_needed, runs_needed

    acc = dict(noise_multiplier=sigma, sampling_rate=args.sampling_rate, steps=args.steps)
    title = f"{title} T={args.steps} q={args.sampling_rate:.3g} σ={sigma:.3g}"
    records, summary = audit_to_rundir(
        rundir, key, in_s, out_s, orders=args.orders, accountant_params=acc,
        significance=args.significance, delta=args.delta, info=info, title=title,
        accountant=args.accountant,
    )
    level = f"{1 - args.significance:.0%}"
    print(header)
    print(records_table(summary["rows"]))
    print(f"accountant: upper bound; DV/GDP/thr lower: lower confidence bounds at {level} each; "
          "DV point ± SE(samp.): an estimate and its held-out sampling standard error (the "
          "spread of the estimate given the critic, not its bias: the DV estimate is biased "
          "downwards); DV estimate: the DV point raised to the best valid lower bound (DV or "
          f"thr lower) when below it, marked {RAISED}")
    raised = [f"{r['order']:g}" for r in summary["rows"] if r["raised_to_bound"]]
    if raised:
        print(f"note: at α = {', '.join(raised)} the DV point estimate is below a valid lower "
              "bound, so it is too low; the DV estimate column shows the bound instead")
    print(f"ε at δ = {args.delta:g}:")
    for row in summary["epsilon_at_delta"]:
        eps = row["epsilon"]
        # bounds rounded outward: a printed lower bound is still a lower bound
        direction = "up" if row["kind"] == "upper bound" else "down"
        shown = _num(eps, 10, direction=direction) if eps == eps else "nan"
        print(f"  {row['statement']:<32} {shown:>10}  ({row['kind']})")
    if summary["violation"]:
        print("WARNING: a lower bound exceeds the accountant (privacy violation or a bug)")
    # How many runs would make the rigorous DV bound informative (Gaussian model of the scores).
    need = runs_needed(in_s, out_s, args.orders, delta=args.significance)
    print("DV lower bound (Gaussian model of these scores): "
          + format_runs_needed(need, min(len(in_s), len(out_s))))
    print(f"wrote {rundir.path / 'results.json'}, {rundir.path / 'summary.md'} and "
          f"{rundir.path / 'rdp_audit.png'}")
    return 0


#: Library argument names that error messages may carry, as the rdp flags they come from.
_FLAG_NAMES = {
    "noise_multiplier": "--noise-multiplier", "sampling_rate": "--sampling-rate",
    "dataset_size": "--dataset-size", "public_size": "--public-size",
    "learning_rate": "--learning-rate", "clip_norm": "--clip", "num_runs": "--runs",
    "chunk_size": "--vmap-chunk", "in_scores": "--scores IN", "out_scores": "--scores OUT",
    "accountant_params": "--noise-multiplier/--sampling-rate/--steps",
}


def _cli_message(text: str) -> str:
    """``text`` with the library's argument names replaced by the rdp flags they come from."""
    import re

    return re.sub(r"(?<![-\w])(" + "|".join(_FLAG_NAMES) + r")(?!\w)",
                  lambda m: _FLAG_NAMES[m.group(1)], text)


def run(args: argparse.Namespace) -> int:
    try:
        if args.scores is not None:
            return run_scores(args)
        return run_training(args)
    except ValueError as err:
        message = _cli_message(str(err))
        if message == str(err):
            raise
        raise ValueError(message) from err


def _check_score_files(args, in_path, out_path, in_s, out_s, digests) -> None:
    """The two score files are different files and each holds enough scores for the bounds."""
    from pathlib import Path

    from jaxaudit.cli.rdp_steps import min_scores_per_world

    same_path = Path(in_path).resolve() == Path(out_path).resolve()
    if same_path or digests["in_sha256"] == digests["out_sha256"]:
        same = "the same file" if same_path else "files with identical contents"
        raise ValueError(f"--scores IN and OUT are {same} ({in_path}, {out_path}): the audit "
                         "compares runs with the canary to runs without it; give one file per "
                         "world")
    need = min_scores_per_world(args.significance)
    for flag, path, scores in (("--scores IN", in_path, in_s), ("--scores OUT", out_path, out_s)):
        if scores.shape[0] < need:
            raise ValueError(f"{flag}: {path} holds {scores.shape[0]} scores; at --significance "
                             f"{args.significance:g} the lower bounds need at least {need} per "
                             "world (with fewer they show nothing even when the worlds are "
                             "perfectly separated); train more runs")


def run_scores(args: argparse.Namespace) -> int:
    """``--scores IN OUT``: audit canary scores saved by any training code."""
    import jax

    from jaxaudit.cli.rdp_steps import file_sha256, load_scores
    from jaxaudit.runs import RunDir

    missing = [f"--{name.replace('_', '-')}" for name in ("steps", "sampling_rate")
               if getattr(args, name) is None]
    if args.noise_multiplier is None and args.epsilon is None:
        missing.append("--noise-multiplier (or --epsilon with --delta)")
    if missing:
        raise ValueError(f"--scores needs the audited training's {', '.join(missing)}")
    _check_audit_args(args)
    in_path, out_path = args.scores
    in_s = load_scores(in_path, "--scores IN")
    out_s = load_scores(out_path, "--scores OUT")
    digests = {"in_sha256": file_sha256(in_path), "out_sha256": file_sha256(out_path)}
    _check_score_files(args, in_path, out_path, in_s, out_s, digests)
    config = {"scores": digests, **{k: getattr(args, k) for k in _SCORES_CONFIG}}
    rundir = RunDir.open(args.out, kind="rdp", config=config)
    sigma = _noise_multiplier(args)
    k_audit = jax.random.split(jax.random.key(args.seed), 3)[2]  # as in training mode
    info = {"epsilon": args.epsilon, "score_files": {"in": in_path, "out": out_path, **digests}}
    header = (f"noise multiplier σ = {sigma:.4f}; {len(in_s)} scores with and {len(out_s)} "
              "without the canary")
    return _audit_and_report(args, rundir, k_audit, in_s, out_s, sigma, info=info,
                             title=f"scores R={len(in_s)}/{len(out_s)}", header=header)


def _training_args(args: argparse.Namespace) -> None:
    """Fill the training defaults and check the training-only options (the scores mode ignores
    them)."""
    from jaxaudit._validation import check_integer, check_positive

    for name, default in _TRAINING_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    for name in ("chunk", "dataset_size", "pretrain_batch"):
        check_integer(f"--{name.replace('_', '-')}", getattr(args, name), minimum=1)
    check_integer("--runs", args.runs, minimum=2)  # the held-out split needs two runs
    for name in ("clip", "pretrain_epochs", "pretrain_lr"):
        check_positive(f"--{name.replace('_', '-')}", getattr(args, name))
    if args.canary_label != "worst" and not args.canary_label.isdigit():
        raise ValueError(f"--canary-label must be a non-negative integer or 'worst', "
                         f"got {args.canary_label!r}")
    if args.model == "cifar_cnn" and args.dataset != "cifar10":
        raise ValueError(f"--model cifar_cnn takes 32×32×3 images: use it with --dataset cifar10 "
                         f"(--dataset {args.dataset} has 28×28 images; use --model cnn, mlp or "
                         "logreg)")
    if args.public_size is None:
        total = _SPLIT_SIZES[args.dataset]
        args.public_size = 2000 if total is None else max(total - args.dataset_size, 0)
    if args.learning_rate is None:
        args.learning_rate = _LR_ON_SUM * args.dataset_size * args.sampling_rate
    check_positive("--learning-rate", args.learning_rate)
    _check_audit_args(args)


def _initial_params(args, rundir, model, data, public, key):
    """The worst-case initialisation θ₀, pretrained on the public split (chunk ``init``)."""
    import jax

    from jaxaudit.dpsgd import pretrain
    from jaxaudit.runs import params_from_arrays, params_to_arrays, run_chunks

    (x, _), (xp, yp) = data, public

    def compute_init(_name):
        if args.public_size > 0:
            steps = max(1, round(args.pretrain_epochs * args.public_size / args.pretrain_batch))
            params = pretrain(key, model, xp, yp, steps=steps, learning_rate=args.pretrain_lr,
                              batch_size=args.pretrain_batch, optimizer=args.pretrain_optimizer)
        else:
            params = model.init(key, x[:1])
        return params_to_arrays(params)

    stored = run_chunks(rundir, ["init"], compute_init)["init"]
    return params_from_arrays(stored, like=model.init(jax.random.key(0), x[:1]))


def _canary(args, model, init, x):
    """The blank canary and its label (``--canary-label``, or the worst case for θ₀)."""
    from jaxaudit.dpsgd import blank_canary, worst_case_label

    canary = blank_canary(x.shape[1:])
    label = (worst_case_label(model, init, canary) if args.canary_label == "worst"
             else int(args.canary_label))
    num_classes = model.apply(init, canary[None]).shape[-1]
    if not 0 <= label < num_classes:
        raise ValueError(f"--canary-label must be in [0, {num_classes}), got {label}")
    return canary, label


def _canary_scores(args, rundir, model, init, data, canary, sigma, key):
    """R runs with and R without the canary, in resumable chunks (chunk c: ``fold_in(key, c)``)."""
    import jax
    import numpy as np

    from jaxaudit.dpsgd import canary_runs
    from jaxaudit.runs import run_chunks

    chunk = min(args.chunk, args.runs)
    sizes = [min(chunk, args.runs - s) for s in range(0, args.runs, chunk)]
    names = [f"chunk_{c:05d}" for c in range(len(sizes))]

    def compute(name):
        c = names.index(name)
        in_s, out_s = canary_runs(
            jax.random.fold_in(key, c), model, init, data, canary,
            num_runs=sizes[c], noise_multiplier=sigma, clip_norm=args.clip, steps=args.steps,
            learning_rate=args.learning_rate, sampling_rate=args.sampling_rate,
            unroll=max(1, min(args.unroll, args.steps)), chunk_size=args.vmap_chunk,
        )
        return {"in_scores": in_s, "out_scores": out_s}

    results = run_chunks(rundir, names, compute, progress=not args.quiet, desc="canary runs")
    return (np.concatenate([results[n]["in_scores"] for n in names]),
            np.concatenate([results[n]["out_scores"] for n in names]))


def run_training(args: argparse.Namespace) -> int:
    """Train the canary runs (resumable), then audit their scores."""
    import jax

    from jaxaudit.cli.rdp_steps import audit_data
    from jaxaudit.dpsgd import model_by_name
    from jaxaudit.runs import RunDir

    _training_args(args)
    rundir = RunDir.open(args.out, kind="rdp", config=_config(args))
    sigma = _noise_multiplier(args)
    model = model_by_name(args.model)
    data, public = audit_data(args.dataset, args.dataset_size, args.public_size,
                              seed=args.seed, data_dir=args.data_dir)
    k_init, k_runs, k_audit = jax.random.split(jax.random.key(args.seed), 3)
    try:  # a model that cannot take these images fails here, in words, not deep inside JAX
        jax.eval_shape(model.init, k_init, data[0][:1])
    except (TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(f"--model {args.model} cannot take --dataset {args.dataset} images of "
                         f"shape {data[0].shape[1:]} ({type(err).__name__}: {err})") from None
    init = _initial_params(args, rundir, model, data, public, k_init)
    canary, label = _canary(args, model, init, data[0])
    in_s, out_s = _canary_scores(args, rundir, model, init, data, (canary, label), sigma, k_runs)
    info = {"canary_label": label, "runs_per_world": len(in_s), "epsilon": args.epsilon}
    header = f"noise multiplier σ = {sigma:.4f}; canary label {label}; {len(in_s)} runs per world"
    return _audit_and_report(args, rundir, k_audit, in_s, out_s, sigma, info=info,
                             title=f"{args.dataset} {args.model} |D|={args.dataset_size} "
                             f"R={len(in_s)}", header=header)
