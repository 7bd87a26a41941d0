"""Canary scores for the [31] / Kim et al. protocol on MNIST (the long runs behind rdp_audit.py).

Protocol of Annamalai & De Cristofaro (arXiv 2405.14106) as their public code runs it, on our
MNIST (the 10,000-image test split: a fixed permutation, |D⁻| = 100 private images, the other
9,900 public): SmallCNN pretrained non-privately with SGD (lr 0.01, batch 32, 5 epochs = 1547
steps); blank canary with label 9; full-batch DP-GD, C = 1, T = 100, the update
θ ← θ − 1.333·10⁻⁴ · (noisy clipped *sum*) (their η = 4 divided by their |D| = 30,000, kept
fixed when |D| = 100: our per-example-mean learning rate 0.01333); σ from the PLD accountant
(their PRV accountant); score = −CE(canary; θ_T).

Settings: ``paper`` at ε ∈ {2, 4.38, 6.57, 10} (``--runs`` per world, default 500), and at ε = 10
the ablations that explain why earlier runs fell short (``--ablation-runs`` per world, default
200): ``rdp_sigma`` (σ from the RDP accountant), ``eta4_mean`` (η = 4 on the mean gradient, the
paper's text read literally), ``worst_label`` (label the pretrained model finds least likely),
``adam_pretrain`` (300 Adam steps on 2,000 public images), ``old_cli`` (all four: the previous
CLI defaults, but η = 0.01).

Resumable: runs are made in chunks of ``--chunk`` runs per world (chunk c of a setting uses the
key ``fold_in(fold_in(key(seed), crc32(setting)), c)``); every finished chunk is appended to
``OUT/scores.npz`` (keys ``<setting>_in``, ``<setting>_out``, ``<setting>_sigma``) at once, and
a repeated call continues where the last one stopped. Settings run in the order listed (ε = 10
first, then the other ε, then the ablations), so a partial run has the most important numbers.

    JAXAUDIT_DATA=... python notebooks/scripts/rdp_paper_scores.py --out DIR [--runs 500]
"""

from __future__ import annotations

import argparse
import json
import math
import time
import zlib
from pathlib import Path

import jax
import numpy as np

from jaxaudit.accounting import noise_for_epsilon
from jaxaudit.datasets import audit_data
from jaxaudit.dpsgd import (
    DpsgdConfig,
    blank_canary,
    canary_runs,
    model_by_name,
    pretrain,
    worst_case_label,
)

EPSILONS = (2.0, 4.38, 6.57, 10.0)
LR_SUM = 4.0 / 30_000  # [31]'s η / |D| at |D| = 30,000, applied to the noisy sum


def settings(runs, ablation_runs):
    base = dict(label="nine", sigma="pld", lr="sum", pretrain="sgd", runs=runs)
    out = {f"paper_eps{e:g}": dict(base, epsilon=e) for e in (10.0, 4.38, 2.0, 6.57)}
    abl = dict(base, epsilon=10.0, runs=ablation_runs)
    out["rdp_sigma"] = dict(abl, sigma="rdp")
    out["eta4_mean"] = dict(abl, lr="mean4")
    out["worst_label"] = dict(abl, label="worst")
    out["adam_pretrain"] = dict(abl, pretrain="adam")
    out["old_cli"] = dict(abl, label="worst", sigma="rdp", lr="old", pretrain="adam")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=500)
    p.add_argument("--ablation-runs", type=int, default=200)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--only", default=None, help="comma-separated setting names")
    p.add_argument("--chunk", type=int, default=100, help="runs per world per saved chunk")
    p.add_argument("--model", default="cnn", help="cnn (the protocol) or mlp (smoke tests)")
    p.add_argument("--public-size", type=int, default=9_900,
                   help="public images for the SGD pretraining (default: all 9,900 not in D)")
    p.add_argument("--pretrain-epochs", type=float, default=5.0)
    p.add_argument("--vmap-chunk", type=int, default=None,
                   help="runs computed at once (default all; 2 on CPU is fastest)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    # Full float32 matmuls on accelerators (TF32 would perturb the per-example gradients).
    jax.config.update("jax_default_matmul_precision", "highest")
    print(f"devices: {jax.devices()}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "scores.npz"
    done = dict(np.load(store)) if store.exists() else {}
    model = model_by_name(args.model)
    size = 100
    sgd_public = args.public_size
    key = jax.random.key(args.seed)
    inits = {}
    todo = settings(args.runs, args.ablation_runs)
    if args.only:
        todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
    for name, s in todo.items():
        have = done[f"{name}_in"].size if f"{name}_in" in done else 0
        if have >= s["runs"]:
            print(f"{name}: {have} runs per world, done", flush=True)
            continue
        public = sgd_public if s["pretrain"] == "sgd" else min(2_000, sgd_public)
        (x, y), (xp, yp) = audit_data(jax.random.key(args.seed), "mnist", size, public)
        if s["pretrain"] not in inits:
            if s["pretrain"] == "sgd":
                steps = math.ceil(args.pretrain_epochs * public / 32)
                inits["sgd"] = pretrain(jax.random.fold_in(key, 1), model, xp, yp, steps=steps,
                                        learning_rate=0.01, batch_size=32, optimizer="sgd")
            else:
                inits["adam"] = pretrain(jax.random.fold_in(key, 1), model, xp, yp, steps=300)
        init = inits[s["pretrain"]]
        canary = blank_canary(x.shape[1:])
        label = 9 if s["label"] == "nine" else worst_case_label(model, init, canary)
        sigma = noise_for_epsilon(s["epsilon"], 1e-5, args.steps, 1.0, accountant=s["sigma"])
        lr = {"sum": LR_SUM * size, "mean4": 4.0, "old": 0.01}[s["lr"]]
        k_setting = jax.random.fold_in(key, zlib.crc32(name.encode()))
        while have < s["runs"]:
            t0 = time.time()
            c = have // args.chunk
            n = min(args.chunk, s["runs"] - have)
            in_s, out_s = canary_runs(jax.random.fold_in(k_setting, c), model, init, (x, y),
                                      (canary, label),
                                      DpsgdConfig(clip_norm=1.0, noise_multiplier=sigma,
                                                  learning_rate=lr, steps=args.steps),
                                      num_runs=n, chunk_size=args.vmap_chunk)
            for world, scores in (("in", in_s), ("out", out_s)):
                prev = done.get(f"{name}_{world}", np.zeros(0, np.float32))
                done[f"{name}_{world}"] = np.concatenate([prev, scores])
            done[f"{name}_sigma"] = np.asarray(sigma)
            tmp = out / "scores.tmp.npz"
            np.savez(tmp, **done)
            tmp.replace(store)
            have += n
            all_in, all_out = done[f"{name}_in"], done[f"{name}_out"]
            info = dict(name=name, chunk=c, runs=have, seconds=round(time.time() - t0, 1),
                        sigma=sigma, label=label, lr=lr, setting=s,
                        sep=float((all_in.mean() - all_out.mean()) / all_out.std()))
            print(json.dumps(info), flush=True)
            with open(out / "log.jsonl", "a") as f:
                f.write(json.dumps(info) + "\n")


if __name__ == "__main__":
    main()
