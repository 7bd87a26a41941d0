"""``jaxaudit bmp``: node-level Bayesian-membership-privacy audit of a GNN pipeline (bmp.md §4).

Example::

    jaxaudit bmp --dataset cora --model gcn --sampler snowball --ratio 0.5 --models 128 \\
        --edge-access inductive --out reports/cora_snowball/
    jaxaudit bmp --shadow runs/cora_uniform/ --out reports/cora_uniform/   # reuse a shadow run

Resumable: the shadow models (unless ``--shadow`` names a ``jaxaudit shadow`` run folder, whose
``masks``/``scores`` chunks are reused), the priors η and the per-node posteriors are saved chunk by
chunk in the report folder; re-running the same command continues where it stopped, and a folder
holding a different configuration is refused. Output: ``nodes.csv`` / ``nodes.json`` (per node:
η, degree, counts, ε_L/ε_R/MP quantiles, AUC, R-hat), ``summary.md`` / ``summary.json``, and PNG
plots (ε_R vs η, ε_R vs degree, histograms, BMP vs MP, and this run vs ``--compare`` another
report, e.g. uniform vs snowball sampling).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxaudit._validation import check_input_path, check_output_dir
from jaxaudit.cli._types import count, finite, nonnegative_int, positive

DATASETS = ("cora", "citeseer", "csbm")
SAMPLERS = ("uniform", "poisson", "snowball", "random_walk")
_SHADOW_KEYS = ("dataset", "model", "sampler", "ratio", "models", "epochs", "edge_access", "seed",
                "csbm_nodes", "snowball_edges")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bmp",
        help="node-level BMP audit: shadow GNNs, LOO LiRA, per-node posteriors over (eps_L, eps_R)",
        description="Audit node-level Bayesian membership privacy: shadow GNNs on sampled "
        "subgraphs, leave-one-out LiRA with prior-aware decisions, and a NUTS posterior over "
        "(eps_L, eps_R) for every node; resumable; writes CSV/JSON, PNG plots and a summary.",
    )
    p.add_argument("--dataset", choices=DATASETS, default="cora",
                   help="graph: a Planetoid data set or the generated CSBM")
    p.add_argument("--model", choices=("gcn", "sage", "gat"), default="gcn",
                   help="shadow GNN architecture (2 layers, hidden 64)")
    p.add_argument("--sampler", choices=SAMPLERS, default="uniform",
                   help="how each shadow model's training nodes are drawn")
    p.add_argument("--ratio", type=finite, default=0.5,
                   help="sampling ratio in (0, 1] (Poisson: inclusion probability q)")
    p.add_argument("--snowball-edges", choices=("discovered", "induced"), default="discovered",
                   help="snowball sampler: train on the edges it discovered or all induced ones")
    p.add_argument("--models", type=count, default=64, help="number of shadow models R")
    p.add_argument("--epochs", type=count, default=200, help="full-batch training epochs")
    p.add_argument("--edge-access", choices=("inductive", "full", "none"), default="inductive",
                   help="edges a shadow model trains on: its sample's, all, or none")
    p.add_argument("--shadow", default=None,
                   help="reuse the shadow run folder of `jaxaudit shadow` (its configuration "
                   "replaces --dataset/--model/--sampler/--ratio/--models/--epochs/--edge-access; "
                   "default: train the shadow models here)")
    p.add_argument("--prior-draws", type=count, default=1000,
                   help="Monte Carlo draws for the priors eta when not exact")
    p.add_argument("--fix-variance", action="store_true", help="fixed-variance LiRA")
    p.add_argument("--attack-strength", type=finite, default=None,
                   help="fix the attack strength s in [0, 1) (default: s ~ Beta(1, 1))")
    p.add_argument("--prior-variance", type=positive, default=10.0,
                   help="variance of the half-normal priors on eps_L, eps_R")
    p.add_argument("--num-warmup", type=count, default=500, help="NUTS warm-up steps per chain")
    p.add_argument("--num-samples", type=count, default=1000, help="NUTS draws per chain")
    p.add_argument("--num-chains", type=count, default=4, help="NUTS chains per node (>= 2)")
    p.add_argument("--no-mp", action="store_true", help="skip the symmetric MP baseline")
    p.add_argument("--node-chunk", type=count, default=1024, help="nodes per saved posterior chunk")
    p.add_argument("--model-chunk", type=count, default=32, help="models per saved shadow chunk")
    p.add_argument("--compare", default=None,
                   help="another `jaxaudit bmp` report folder to plot against (e.g. uniform; "
                   "default: none)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed")
    p.add_argument("--csbm-nodes", type=int, default=2708,
                   help="CSBM size in nodes, >= 2 (dataset csbm)")
    p.add_argument("--data-dir", default=None,
                   help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    p.add_argument("--out", required=True, help="report folder (created; resumed if it exists)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _check(args) -> None:
    """What must be refused before any work (the library checks the rest when called)."""
    check_output_dir("--out", args.out)
    if args.compare is not None:
        check_input_path("--compare", args.compare, folder=True)
        for name in ("nodes.json", "manifest.json"):
            if not (Path(args.compare) / name).is_file():
                raise FileNotFoundError(f"--compare folder {args.compare} holds no {name}: not "
                                        "a `jaxaudit bmp` report folder")
    if not 0.0 < args.ratio <= 1.0:
        raise ValueError(f"--ratio must lie in (0, 1], got {args.ratio}")
    if args.num_chains < 2:
        raise ValueError(f"--num-chains must be >= 2, got {args.num_chains}")
    if args.attack_strength is not None and not 0.0 <= args.attack_strength < 1.0:
        raise ValueError(f"--attack-strength must lie in [0, 1), got {args.attack_strength}")
    if args.prior_variance <= 0:
        raise ValueError(f"--prior-variance must be > 0, got {args.prior_variance}")


def _load_shadow(path):
    from jaxaudit.runs import load_results

    if not Path(path).is_dir():
        raise FileNotFoundError(f"--shadow folder not found: {path}")
    res = load_results(path)
    if res["kind"] != "shadow":
        raise ValueError(f"--shadow must be a `jaxaudit shadow` run folder, got kind "
                         f"{res['kind']!r}")
    cfg = res["config"]
    total, chunk = int(cfg["models"]), int(cfg["chunk"])
    expected = [f"chunk_{c:05d}" for c in range(-(-total // chunk))]
    done = [n for n in expected if n in res["chunks"]]
    if len(done) < len(expected):
        missing = [n for n in expected if n not in res["chunks"]]
        raise ValueError(
            f"--shadow run {path} is incomplete: {len(done)} of {len(expected)} chunks finished "
            f"(missing {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); repeat its "
            "`jaxaudit shadow` command to finish it")
    extra = sorted(set(res["chunks"]) - set(expected))
    if extra:
        raise ValueError(f"--shadow run {path} is inconsistent: it holds chunks its configuration "
                         f"does not plan ({', '.join(extra[:3])}); use the original folder")
    import numpy as np

    masks = np.concatenate([res["chunks"][n]["masks"] for n in expected]).astype(bool)
    scores = np.concatenate([res["chunks"][n]["scores"] for n in expected]).astype(np.float32)
    if masks.shape[0] != total or scores.shape != masks.shape:
        raise ValueError(f"--shadow run {path} is inconsistent: its chunks hold {masks.shape[0]} "
                         f"models, its manifest says {total}")
    return cfg, masks, scores


def _graph_and_sampler(cfg, data_dir):
    import jax

    from jaxaudit.datasets import load_planetoid, make_csbm
    from jaxaudit.graph import (
        poisson_sampler,
        random_walk_sampler,
        snowball_sampler,
        uniform_sampler,
    )

    if cfg["dataset"] == "csbm":
        graph = make_csbm(jax.random.key(cfg["seed"]), num_nodes=cfg["csbm_nodes"],
                          features="bernoulli")
    else:
        graph = load_planetoid(cfg["dataset"], data_dir=data_dir)
    ratio = cfg["ratio"]
    sampler = {
        "uniform": lambda: uniform_sampler(ratio),
        "poisson": lambda: poisson_sampler(ratio),
        "snowball": lambda: snowball_sampler(ratio, edges=cfg.get("snowball_edges",
                                                                  "discovered")),
        "random_walk": lambda: random_walk_sampler(ratio),
    }[cfg["sampler"]]()
    return graph, sampler


def run(args: argparse.Namespace) -> int:
    _check(args)
    import jax
    import numpy as np

    from jaxaudit.bmp import (
        ErrorCounts,
        jeffreys_estimate,
        node_degrees,
        posterior_nuts,
        posterior_quantiles,
    )
    from jaxaudit.graph import inclusion_probabilities, train_shadow_models
    from jaxaudit.mia import bayes_decision, error_counts, lira_loo, roc_auc
    from jaxaudit.runs import RunDir, config_hash, run_chunks

    shadow = None
    if args.shadow is not None:
        shadow_cfg, masks, scores = _load_shadow(args.shadow)
        cfg = {k: shadow_cfg[k] for k in _SHADOW_KEYS if k in shadow_cfg}
        cfg.setdefault("csbm_nodes", args.csbm_nodes)
        cfg["shadow_run"] = {"path": str(Path(args.shadow).resolve()),
                             "config_sha256": config_hash(shadow_cfg),
                             "num_models": int(masks.shape[0])}
        shadow = (masks, scores)
    else:
        cfg = {k: getattr(args, k) for k in _SHADOW_KEYS}
        cfg["model_chunk"] = args.model_chunk
    cfg.update({k: getattr(args, k) for k in (
        "prior_draws", "fix_variance", "attack_strength", "prior_variance", "num_warmup",
        "num_samples", "num_chains", "node_chunk")})
    cfg["mp_baseline"] = not args.no_mp
    run_dir = RunDir.open(args.out, kind="bmp", config=cfg)
    graph, sampler = _graph_and_sampler(cfg, args.data_dir)
    root = jax.random.key(cfg["seed"])
    progress = not args.quiet

    if shadow is None:
        total, chunk = cfg["models"], cfg["model_chunk"]
        sizes = [min(chunk, total - s) for s in range(0, total, chunk)]
        names = [f"shadow_{c:05d}" for c in range(len(sizes))]

        def train(name):
            c = names.index(name)
            out = train_shadow_models(jax.random.fold_in(jax.random.fold_in(root, 1), c), graph,
                                      sampler, cfg["model"], sizes[c], epochs=cfg["epochs"],
                                      edge_access=cfg["edge_access"])
            return {"masks": np.asarray(out.masks), "scores": np.asarray(out.scores)}

        res = run_chunks(run_dir, names, train, progress=progress, desc="shadow models")
        masks = np.concatenate([res[n]["masks"] for n in names]).astype(bool)
        scores = np.concatenate([res[n]["scores"] for n in names])
    else:
        masks, scores = shadow
    if masks.shape[1] != graph.num_nodes:
        raise ValueError(f"shadow runs cover {masks.shape[1]} nodes, the graph has "
                         f"{graph.num_nodes}")

    def prior(_):
        eta, se = inclusion_probabilities(jax.random.fold_in(root, 2), sampler, graph,
                                          num_draws=cfg["prior_draws"])
        return {"eta": np.clip(np.asarray(eta, float), 0, 1), "eta_se": np.asarray(se, float)}

    pri = run_chunks(run_dir, ["prior"], prior, progress=False)["prior"]
    eta, eta_se = pri["eta"], pri["eta_se"]
    llr = lira_loo(scores, masks, fix_variance=cfg["fix_variance"])
    decisions = bayes_decision(llr, eta.astype(np.float32))
    counts = ErrorCounts(*(np.asarray(c) for c in error_counts(decisions, masks)))
    auc = np.asarray(roc_auc(llr, masks, axis=0))
    global_auc = float(roc_auc(np.asarray(llr).ravel(), masks.ravel()))
    valid = np.flatnonzero((counts.n0 > 0) & (counts.n1 > 0))
    blocks = [valid[i:i + cfg["node_chunk"]] for i in range(0, len(valid), cfg["node_chunk"])]
    post_names = [f"posterior_{b:05d}" for b in range(len(blocks))]
    kw = dict(attack_strength=cfg["attack_strength"], prior_variance=cfg["prior_variance"],
              num_warmup=cfg["num_warmup"], num_samples=cfg["num_samples"],
              num_chains=cfg["num_chains"], chunk_size=cfg["node_chunk"])

    def posterior(name):
        b = post_names.index(name)
        idx = blocks[b]
        sub = ErrorCounts(*(c[idx] for c in counts))
        key = jax.random.fold_in(jax.random.fold_in(root, 3), b)
        post = posterior_nuts(key, sub, **kw)
        out = {"nodes": idx,
               "eps_l": np.asarray(posterior_quantiles(post.eps_l)),
               "eps_r": np.asarray(posterior_quantiles(post.eps_r)),
               "rhat": np.asarray(post.rhat), "ess": np.asarray(post.ess),
               "divergences": np.asarray(post.divergences)}
        if cfg["mp_baseline"] and cfg["attack_strength"] is None:
            mp = posterior_nuts(jax.random.fold_in(key, 1), sub, symmetric=True, **kw)
            out["eps_mp"] = np.asarray(posterior_quantiles(mp.eps_l))
        return out

    post = run_chunks(run_dir, post_names, posterior, progress=progress, desc="posteriors")
    n = graph.num_nodes
    table = {k: np.full((3, n), np.nan) for k in ("eps_l", "eps_r", "eps_mp")}
    rhat, ess, div = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, int)
    for name in post_names:
        p = post[name]
        idx = p["nodes"].astype(int)
        for k in table:
            if k in p:
                table[k][:, idx] = p[k]
        rhat[idx], ess[idx], div[idx] = p["rhat"], p["ess"], p["divergences"]
    # optimal-attack Jeffreys 5% quantiles: the conservative lower reading (the posterior's 5%
    # quantile is not a frequentist bound when the attack is optimal, see posterior_nuts)
    table["jeffreys_l"], table["jeffreys_r"] = np.full((1, n), np.nan), np.full((1, n), np.nan)
    if len(valid):
        jeff = jeffreys_estimate(jax.random.fold_in(root, 4),
                                 ErrorCounts(*(c[valid] for c in counts)), q=(0.05,))
        table["jeffreys_l"][:, valid], table["jeffreys_r"][:, valid] = jeff.eps_l, jeff.eps_r
    degree = node_degrees(graph)
    rows = _write_tables(run_dir, eta, eta_se, degree, counts, table, auc, rhat, ess, div)
    summary = _summary(cfg, rows, table, global_auc, rhat, valid, masks.shape[0])
    run_dir.write_json("summary.json", summary)
    _plots(run_dir, eta, degree, table, args.compare)
    run_dir.write_text("summary.md", _markdown(cfg, summary))
    if not args.quiet:
        print(_markdown(cfg, summary))
    return 0


def _write_tables(run_dir, eta, eta_se, degree, counts, table, auc, rhat, ess, div):
    import csv
    import io

    cols = ["node", "eta", "eta_se", "degree", "fp", "n0", "fn", "n1",
            "eps_l_q05", "eps_l_q50", "eps_l_q95", "eps_r_q05", "eps_r_q50", "eps_r_q95",
            "eps_mp_q05", "eps_mp_q50", "eps_mp_q95", "jeffreys_l_q05", "jeffreys_r_q05", "auc", "rhat", "ess", "divergences"]
    rows = []
    for i in range(len(eta)):
        vals = [i, eta[i], eta_se[i], int(degree[i]), int(counts.fp[i]), int(counts.n0[i]),
                int(counts.fn[i]), int(counts.n1[i]), *table["eps_l"][:, i], *table["eps_r"][:, i],
                *table["eps_mp"][:, i], *table["jeffreys_l"][:, i], *table["jeffreys_r"][:, i],
                auc[i], rhat[i], ess[i], int(div[i])]
        rows.append({c: (None if isinstance(v, float) and v != v else
                         (float(v) if not isinstance(v, int) else v)) for c, v in zip(cols, vals)})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    run_dir.write_text("nodes.csv", buf.getvalue())
    run_dir.write_text("nodes.json", json.dumps(rows))
    return rows


def _summary(cfg, rows, table, global_auc, rhat, valid, num_models):
    import numpy as np

    med_r, med_l, med_mp = table["eps_r"][1], table["eps_l"][1], table["eps_mp"][1]
    ok = ~np.isnan(med_r)
    mp_ok = ok & ~np.isnan(med_mp)
    return {
        "num_nodes": len(rows), "num_models": int(num_models), "nodes_with_posterior": int(ok.sum()),
        "global_attack_auc": global_auc,
        "median_eps_r": float(np.nanmedian(med_r)) if ok.any() else None,
        "median_eps_l": float(np.nanmedian(med_l)) if ok.any() else None,
        "eps_r_q50_p10_p90": ([float(np.nanpercentile(med_r, 10)), float(np.nanpercentile(med_r, 90))]
                              if ok.any() else None),
        "median_eps_mp": float(np.nanmedian(med_mp)) if mp_ok.any() else None,
        "fraction_bmp_r_below_mp": float(np.mean(med_r[mp_ok] <= med_mp[mp_ok])) if mp_ok.any()
        else None,
        "fraction_rhat_le_1.05": float(np.mean(rhat[valid] <= 1.05)) if len(valid) else None,
    }


def _markdown(cfg, s) -> str:
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
    lines = [
        f"# BMP audit: {cfg['dataset']} / {cfg['model']} / {cfg['sampler']} "
        f"(ratio {cfg['ratio']}, {s['num_models']} models, edges {cfg['edge_access']})", "",
        "| quantity | value |", "|---|---|",
        f"| nodes (with a posterior) | {s['num_nodes']} ({s['nodes_with_posterior']}) |",
        f"| global LOO-LiRA AUC | {fmt(s['global_attack_auc'])} |",
        f"| median over nodes of posterior-median eps_R | {fmt(s['median_eps_r'])} |",
        f"| median over nodes of posterior-median eps_L | {fmt(s['median_eps_l'])} |",
        f"| 10th / 90th percentile of eps_R medians | "
        f"{' / '.join(fmt(v) for v in (s['eps_r_q50_p10_p90'] or [None, None]))} |",
        f"| median MP eps (symmetric fit) | {fmt(s['median_eps_mp'])} |",
        f"| fraction of nodes with BMP-R median <= MP median | "
        f"{fmt(s['fraction_bmp_r_below_mp'])} |",
        f"| fraction of nodes with R-hat <= 1.05 | {fmt(s['fraction_rhat_le_1.05'])} |", "",
        "Upper posterior quantiles are prior-driven with one operating point per node; read the "
        "medians and 5% quantiles. Plots: eps_r_vs_eta.png, eps_r_vs_degree.png, "
        "eps_hist.png, bmp_vs_mp.png (and compare.png with --compare).", ""]
    return "\n".join(lines)


def _plots(run_dir, eta, degree, table, compare):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    med_r, med_l, med_mp = table["eps_r"][1], table["eps_l"][1], table["eps_mp"][1]
    ok = ~np.isnan(med_r)
    figs = {}
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(eta[ok], med_r[ok], s=4, alpha=0.5)
    ax.set(xlabel="prior inclusion probability η", ylabel="posterior median ε_R",
           title="ε_R vs prior")
    figs["eps_r_vs_eta.png"] = fig
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(np.maximum(degree[ok], 0.5), med_r[ok], s=4, alpha=0.5)
    ax.set(xscale="log", xlabel="degree", ylabel="posterior median ε_R", title="ε_R vs degree")
    figs["eps_r_vs_degree.png"] = fig
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.hist([med_l[ok], med_r[ok]], bins=40, label=["ε_L", "ε_R"], alpha=0.7)
    ax.set(xlabel="posterior median", ylabel="nodes", title="per-node ε")
    ax.legend()
    figs["eps_hist.png"] = fig
    fig, ax = plt.subplots(figsize=(5, 4))
    mp_ok = ok & ~np.isnan(med_mp)
    if mp_ok.any():
        ax.scatter(med_mp[mp_ok], med_r[mp_ok], s=4, alpha=0.5)
        hi = float(max(med_mp[mp_ok].max(), med_r[mp_ok].max()))
        ax.plot([0, hi], [0, hi], "k--", lw=1)
    ax.set(xlabel="MP ε (symmetric)", ylabel="BMP-R ε_R", title="BMP vs MP (posterior medians)")
    figs["bmp_vs_mp.png"] = fig
    if compare is not None:
        other = json.loads((Path(compare) / "nodes.json").read_text())
        other_r = np.array([np.nan if r["eps_r_q50"] is None else r["eps_r_q50"] for r in other])
        other_cfg = json.loads((Path(compare) / "manifest.json").read_text()).get("config", {})
        fig, ax = plt.subplots(figsize=(5, 4))
        bins = np.linspace(0, float(np.nanmax(np.concatenate([med_r, other_r]))), 40)
        ax.hist(other_r[~np.isnan(other_r)], bins=bins, alpha=0.6,
                label=str(other_cfg.get("sampler", "compare")))
        ax.hist(med_r[ok], bins=bins, alpha=0.6, label="this run")
        ax.set(xlabel="posterior median ε_R", ylabel="nodes", title="sampler comparison")
        ax.legend()
        figs["compare.png"] = fig
    for name, fig in figs.items():
        fig.tight_layout()
        fig.savefig(run_dir.path / name, dpi=110)
        plt.close(fig)
