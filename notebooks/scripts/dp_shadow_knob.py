"""Node-level DP as the privacy knob of GNN shadow models, and the BMP audit held against it.

For the features-only MLP and the degree-capped GCN (:mod:`jaxaudit.graph.dp_training`) on Cora,
at each target ε (add/remove node-level, δ = 1e−5; ∞ = clipping without noise) this trains R
shadow models with Poisson(q) node sampling (so the sampling leaks nothing, c^i = 0, and the DP
guarantee is a (ε, ε)-BMP guarantee up to δ), and writes one JSON row per (model, ε) to
``--out/rows.jsonl`` as soon as it is done (a repeated call skips the rows present, and each
configuration's scores are kept in ``--out/<model>_eps<ε>.npz``):

* σ from ε by the library's accountant (``noise_for_node_epsilon``; μ = √T/σ-GDP) and the ε
  the accountant then reports (``node_dp_epsilon``);
* test accuracy of model 0 on its non-members (the OUT nodes, queried on the capped full graph);
* the leave-one-out LiRA AUC and TPR at 1% / 0.1% FPR (``jaxaudit.pipelines.shadow``'s
  ``attack_metrics``, pooled over (model, node) pairs);
* per node, the prior-aware Bayes counts and the certified (ε_L, ε_R) lower bounds (joint level
  ``--confidence``) on every node, and the fraction of nodes whose certified bound exceeds ε:
  if the training is (ε, δ)-DP each node's bound exceeds ε with probability at most
  1 − confidence (+ a δ term), so the fraction should stay at or below that level;
* the NUTS posterior medians of (ε_L, ε_R) on ``--posterior-nodes`` nodes (drawn once, seed 0).

    JAXAUDIT_DATA=/path/to/data python notebooks/scripts/dp_shadow_knob.py \\
        --out runs/dp_knob --models 32 --epochs 20
    python notebooks/scripts/dp_shadow_knob.py --out runs/dp_knob,runs/dp_knob_k1 --table
        # the markdown table, the compact JSON and the figure, from one or more --out folders
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, math.inf)
DELTA = 1e-5


def _module(name, graph, hidden):
    from jaxaudit.graph.dp_training import CappedGCN, NodeMLP

    if name == "mlp":
        return NodeMLP(num_classes=graph.num_classes, hidden_dim=hidden)
    return CappedGCN(num_classes=graph.num_classes, hidden_dim=hidden, hops=1)


def _accuracy(key, graph, sampler, module, training):
    """Accuracy on the OUT nodes of the first model of the sweep (same key: same model)."""
    import jax
    import jax.numpy as jnp

    from jaxaudit.graph.dp_training import fit_private, private_query_weight
    from jaxaudit.graph.shadow_models import _graphs_tuple, _module_inputs

    inputs = _module_inputs(module, graph)
    k_sample, k_train = jax.random.split(key)
    mask = sampler(k_sample, graph).node_mask
    params, cap = fit_private(module, training.epochs, training.learning_rate,
                              training.weight_decay, training.dp, training.edge_access, k_train,
                              jnp.asarray(inputs.nodes), inputs.senders, inputs.receivers,
                              inputs.labels, mask)
    logits = module.apply(params, _graphs_tuple(inputs, private_query_weight(
        training.edge_access, cap)))
    correct = np.asarray(jnp.argmax(logits, -1) == inputs.labels)
    out = ~np.asarray(mask)
    return float(correct[out].mean())


def run(args):
    import jax

    from jaxaudit.bmp import AuditConfig, NutsConfig, audit_attack, audit_nodes
    from jaxaudit.datasets import graph_by_name
    from jaxaudit.graph import ShadowTraining, poisson_sampler, train_shadow_models
    from jaxaudit.graph.dp_training import (
        NodeDp,
        gradient_count,
        node_dp_epsilon,
        noise_for_node_epsilon,
    )
    from jaxaudit.pipelines.shadow import attack_metrics
    from jaxaudit.runs import unit_keys

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    done = set()
    if rows_path.exists():
        done = {(r["model"], r["target_epsilon"]) for r in map(json.loads, rows_path.open())}
    graph = graph_by_name("cora")
    sampler = poisson_sampler(args.ratio)
    nodes = np.sort(np.random.default_rng(0).choice(graph.num_nodes, args.posterior_nodes,
                                                    replace=False))
    audit = AuditConfig(mp_baseline=False, confidence=args.confidence,
                        nuts=NutsConfig(num_warmup=200, num_samples=400, num_chains=2))
    for name in args.model:
        module = _module(name, graph, args.hidden)
        for eps in EPSILONS:
            label = None if math.isinf(eps) else eps
            if (name, label) in done:
                continue
            t0 = time.time()
            sigma = noise_for_node_epsilon(eps, DELTA, args.epochs)
            dp = NodeDp(clip_norm=args.clip, noise_multiplier=sigma, degree_cap=args.degree_cap,
                        normalizer=args.ratio * graph.num_nodes)
            training = ShadowTraining(epochs=args.epochs, learning_rate=args.learning_rate,
                                      weight_decay=args.weight_decay, edge_access="inductive",
                                      dp=dp)
            keys = unit_keys(jax.random.key(args.seed), 0, args.models)
            cache = out / f"{name}_eps{eps}.npz"
            if cache.exists():
                with np.load(cache) as z:
                    masks, scores = z["masks"], z["scores"]
            else:
                sweep = train_shadow_models(keys, graph, sampler, module, args.models, training,
                                            chunk_size=args.chunk)
                masks, scores = np.asarray(sweep.masks), np.asarray(sweep.scores)
                np.savez(cache, masks=masks, scores=scores)
            train_min = (time.time() - t0) / 60
            accuracy = _accuracy(keys[0], graph, sampler, module, training)
            metrics = attack_metrics(masks, scores)
            attack = audit_attack(scores, masks, np.full(graph.num_nodes, args.ratio), audit)
            counts = attack.counts
            from jaxaudit.bmp import certified_epsilons
            from jaxaudit.mia.types import ErrorCounts

            valid = (np.asarray(counts.n0) > 0) & (np.asarray(counts.n1) > 0)
            cert = certified_epsilons(ErrorCounts(*(np.asarray(c)[valid] for c in counts)),
                                      confidence=args.confidence)
            cert_l, cert_r = np.asarray(cert.epsilon_left), np.asarray(cert.epsilon_right)
            sub = ErrorCounts(*(np.asarray(c)[nodes] for c in counts))
            post = audit_nodes(jax.random.key(args.seed), sub, attack.key_node[nodes], audit)
            med_l, med_r = post.epsilon_left[1], post.epsilon_right[1]
            row = {
                "model": name, "target_epsilon": label, "delta": DELTA,
                "noise_multiplier": sigma,
                "accountant_epsilon": node_dp_epsilon(dp, args.epochs, DELTA),
                "gradients_touched": gradient_count(module, args.degree_cap, "inductive"),
                "test_accuracy": accuracy, "auc": metrics["auc"],
                "tpr_at_1pct": metrics["tpr_at_1pct"], "tpr_at_0_1pct": metrics["tpr_at_0_1pct"],
                "median_eps_l": float(np.nanmedian(med_l)),
                "median_eps_r": float(np.nanmedian(med_r)),
                "max_certified_l": float(cert_l.max()), "max_certified_r": float(cert_r.max()),
                "mean_certified_r": float(cert_r.mean()),
                "frac_certified_above_eps": (
                    float(np.mean((cert_l > eps) | (cert_r > eps))) if label else None),
                "nodes_certified": int(valid.sum()),
                "posterior_eps_l_median": [float(v) for v in med_l],
                "posterior_eps_r_median": [float(v) for v in med_r],
                "train_minutes": train_min, "minutes": (time.time() - t0) / 60,
                "settings": vars(args) | {"model": name},
            }
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{name} eps={eps}: sigma={sigma:.3g} acc={accuracy:.3f} "
                  f"auc={metrics['auc']:.3f} med_r={row['median_eps_r']:.3f} "
                  f"max_cert={row['max_certified_r']:.3f} {row['minutes']:.1f} min", flush=True)


def _fmt(v, digits=3):
    return "∞" if v is None else f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def table(args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for out in args.out.split(",")
            for line in (Path(out) / "rows.jsonl").open()]
    for r in rows:  # the capped GCN's rows name their degree cap
        if r["model"] == "capped_gcn":
            r["model"] = f"capped_gcn K={r['settings']['degree_cap']}"
    head = ("| model | ε (δ=1e−5) | σ | test acc | AUC | TPR@1% | TPR@0.1% | median ε_L | "
            "median ε_R | max cert. ε_L | max cert. ε_R | frac. cert. > ε | min |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        lines.append("| " + " | ".join([
            r["model"], _fmt(r["target_epsilon"]), _fmt(r["noise_multiplier"]),
            _fmt(r["test_accuracy"]), _fmt(r["auc"]), _fmt(r["tpr_at_1pct"]),
            _fmt(r["tpr_at_0_1pct"]), _fmt(r["median_eps_l"]), _fmt(r["median_eps_r"]),
            _fmt(r["max_certified_l"]), _fmt(r["max_certified_r"]),
            "—" if r["frac_certified_above_eps"] is None else _fmt(r["frac_certified_above_eps"]),
            f"{r['minutes']:.1f}"]) + " |")
    figs = Path(args.figures)
    figs.mkdir(parents=True, exist_ok=True)
    (figs / "dp_shadow_knob.md").write_text("\n".join(lines) + "\n")
    compact = [{k: v for k, v in r.items() if not k.startswith("posterior_")} for r in rows]
    (figs / "dp_shadow_knob.json").write_text(json.dumps(compact, indent=1) + "\n")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name, marker in zip(dict.fromkeys(r["model"] for r in rows), "os^v"):
        sel = [r for r in rows if r["model"] == name]
        xs = [r["target_epsilon"] or 16.0 for r in sel]
        line, = ax.plot(xs, [r["median_eps_r"] for r in sel], "-", marker=marker,
                        label=f"{name}: posterior median ε_R (median over nodes)")
        ax.plot(xs, [r["median_eps_l"] for r in sel], "--", marker=marker,
                color=line.get_color(), alpha=0.6, label=f"{name}: same for ε_L")
        ax.plot(xs, [max(r["max_certified_r"], r["max_certified_l"], 0.02) for r in sel], ":",
                marker=marker, color=line.get_color(), mfc="none",
                label=f"{name}: largest certified bound (0.02 = none)")
    grid = np.geomspace(0.5, 8, 20)
    ax.plot(grid, grid, ":", color="grey", label="ε = DP ε")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([0.5, 1, 2, 4, 8, 16], ["0.5", "1", "2", "4", "8", "∞"])
    ax.set_xlabel("node-level DP ε (δ = 1e−5)")
    ax.set_ylabel("ε estimate or bound")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(figs / "dp_shadow_knob.png", dpi=120)
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/dp_knob")
    p.add_argument("--figures", default="notebooks/figures")
    p.add_argument("--model", nargs="+", default=["mlp", "capped_gcn"])
    p.add_argument("--models", type=int, default=32)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--degree-cap", type=int, default=5)
    p.add_argument("--ratio", type=float, default=0.5)
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--posterior-nodes", type=int, default=32)
    p.add_argument("--chunk", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--table", action="store_true")
    args = p.parse_args()
    table(args) if args.table else run(args)


if __name__ == "__main__":
    main()
