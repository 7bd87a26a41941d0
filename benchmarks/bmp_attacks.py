"""Table: node-level membership attacks side by side on finished shadow runs.

For every ``--shadow`` run folder (``jaxaudit shadow ... --out DIR``) and every attack of
:func:`jaxaudit.mia.attack_statistic` — LiRA online (per-node and fixed variance), LiRA offline
(per-node and fixed variance), RMIA calibrated by per-node Gaussians and by per-node kernel
density estimates (the options given; the defaults are the ones tuned in docs/gnn_mia.md) — the global ROC AUC over all (model, node) pairs and the TPR at 1% and 0.1%
FPR (:func:`jaxaudit.mia.roc_auc`, :func:`jaxaudit.mia.tpr_at_fpr`), leave-one-out (each model
the target, the others its shadows), plus the error of the Bayes decision at the run's mean
inclusion probability (what the BMP audit counts) and the seconds the statistic took.

    export JAXAUDIT_DATA=/path/to/data   # filled by `jaxaudit data download`
    nice -n 19 jaxaudit shadow --dataset cora --sampler uniform --ratio 0.5 --models 64 \\
        --epochs 200 --edge-access inductive --seed 0 --out runs/rmia/cora_gcn_m64_s0
    python benchmarks/bmp_attacks.py --shadow runs/rmia/cora_gcn_m64_s0
    python benchmarks/bmp_attacks.py --shadow DIR --rmia-gamma 2 --rmia-a 0.3   # other options
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxaudit.mia import attack_statistic, bayes_decision, roc_auc, tpr_at_fpr
from jaxaudit.mia.rmia import CALIBRATIONS, rmia_score
from jaxaudit.pipelines import load_shadow

CALIBRATION_LABELS = {"node": "Gaussian per node", "kde": "KDE per node",
                      "global": "one linear fit"}


def variants(rmia_options: dict[str, Any], rmia_calibrations: Sequence[str]
             ) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, attack, options) of every row of the table."""
    return [
        ("LiRA online", "lira", {}),
        ("LiRA online, fixed variance", "lira", {"fix_variance": True}),
        ("LiRA offline", "lira_offline", {}),
        ("LiRA offline, fixed variance", "lira_offline", {"fix_variance": True}),
    ] + [(f"RMIA, {CALIBRATION_LABELS[c]}", "rmia", {**rmia_options, "calibration": c})
         for c in rmia_calibrations]


def measure(stat: jnp.ndarray, masks: jnp.ndarray, eta: float) -> dict[str, float]:
    """AUC, TPR at 1% and 0.1% FPR (global) and the Bayes decision's error at prior ``eta``."""
    return {
        "auc": float(roc_auc(stat, masks)),
        "tpr@1%": float(tpr_at_fpr(stat, masks, 1e-2)),
        "tpr@0.1%": float(tpr_at_fpr(stat, masks, 1e-3)),
        "bayes_error": float(jnp.mean(bayes_decision(stat, eta) != masks)),
    }


def table(folder: str, rmia_options: dict[str, Any], rmia_calibrations: Sequence[str],
          raw: bool) -> list[dict[str, Any]]:
    run = load_shadow(folder)
    scores, masks = jnp.asarray(run.scores), jnp.asarray(run.masks, bool)
    eta = float(np.mean(run.masks))
    rows = []
    for label, attack, options in variants(rmia_options, rmia_calibrations):
        start = time.perf_counter()
        stat = attack_statistic(scores, masks, attack=attack, **options)
        stat.block_until_ready()
        seconds = time.perf_counter() - start
        rows.append({"attack": label, "models": scores.shape[0], **options,
                     **measure(stat, masks, eta), "seconds": seconds})
    if raw:  # the paper's uncalibrated score (a fraction; no LLR scale, so no Bayes error)
        keep = {k: v for k, v in rmia_options.items() if k != "fix_variance"}
        stat = rmia_score(scores, masks, **keep)
        rows.append({"attack": "RMIA score (uncalibrated)", "models": scores.shape[0], **keep,
                     **measure(stat, masks, eta), "bayes_error": float("nan"), "seconds": 0.0})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shadow", action="append", required=True, metavar="DIR",
                        help="a finished shadow run folder (repeat for several)")
    parser.add_argument("--rmia-gamma", type=float, default=1.0)
    parser.add_argument("--rmia-a", type=float, default=None, help="offline factor (None: online)")
    parser.add_argument("--rmia-calibration", action="append", choices=CALIBRATIONS,
                        help="RMIA calibration(s) to tabulate (default: node and kde)")
    parser.add_argument("--rmia-fix-variance", action="store_true")
    parser.add_argument("--raw", action="store_true", help="also the uncalibrated RMIA score")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    rmia_options: dict[str, Any] = {"gamma": args.rmia_gamma, "a": args.rmia_a,
                                    "fix_variance": args.rmia_fix_variance}
    calibrations = args.rmia_calibration or ["node", "kde"]
    every = []
    print("| run | attack | models | AUC | TPR@1%FPR | TPR@0.1%FPR | Bayes error | s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for folder in args.shadow:
        for row in table(folder, rmia_options, calibrations, args.raw):
            row["run"] = folder
            every.append(row)
            print(f"| {folder.rstrip('/').split('/')[-1]} | {row['attack']} | {row['models']} | "
                  f"{row['auc']:.3f} | {row['tpr@1%']:.3f} | {row['tpr@0.1%']:.3f} | "
                  f"{row['bayes_error']:.3f} | {row['seconds']:.1f} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(every, fh, indent=1)


if __name__ == "__main__":
    main()
