"""Findings across GNN architectures and training-set sizes (docs/bmp.md, section 8).

Reads the audits that ``notebooks/scripts/bmp_findings.py`` wrote for ``jaxaudit shadow`` runs
named ``{dataset}_{model}_{sampler}_{edges}_r{ratio}_m{R}`` and writes two markdown tables and a
figure:

* ``bmp_models.md``: per data set and GNN (GCN, GraphSAGE, GAT), the findings of section 6 —
  sampler (snowball / random walk − uniform), edge access (full / features-only − inductive),
  BMP-R below MP, Spearman ρ of leakage with the node prior η and the degree, global attack AUC
  and TPR at 1% FPR against the per-node spread;
* ``bmp_ratio.md`` and ``bmp_ratio.png``: GCN, uniform and snowball sampling, leakage and attack
  strength against the sampling ratio.

Every leakage number says whether it is an ESTIMATE (Jeffreys or posterior medians, attack AUC
and TPR) or a BOUND (certified lower bound at joint confidence 0.95). Standard errors: over nodes
for the posterior medians (paired where two runs are compared, on the same NUTS node subset),
over shadow models (bootstrap) for the Jeffreys medians.

    python notebooks/scripts/bmp_sweep_tables.py --findings FINDINGS --shadow-root RUNS \\
        --out notebooks/figures
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

NAME = re.compile(r"^(?P<dataset>[a-z]+)_(?P<model>gcn|sage|gat)_(?P<sampler>uniform|snowball|"
                  r"random_walk)_(?P<edges>inductive|full|none)_r(?P<ratio>[0-9.]+)_m(?P<m>\d+)$")
MODEL_NAMES = {"gcn": "GCN", "sage": "GraphSAGE", "gat": "GAT"}


def load(findings: Path) -> dict:
    runs = {}
    for path in sorted(findings.glob("*.npz")):
        match = NAME.match(path.stem)
        if match is None:
            continue
        d = np.load(path)
        run = {k[4:]: d[k] for k in d.files if k.startswith("col_")}
        run.update(global_auc=float(d["global_auc"]), boot=d["boot_jeffreys_r_median"],
                   num_models=int(d["num_models"]))
        key = (match["dataset"], match["model"], match["sampler"], match["edges"],
               float(match["ratio"]))
        runs[key] = run
    return runs


def attack_rates(shadow_root: Path, name: str) -> tuple[float, float, float]:
    """Global LOO-LiRA AUC and TPR at 1% and 0.1% FPR (estimates) of one shadow run."""
    from jaxaudit.mia import lira_loo, roc_auc, tpr_at_fpr
    from jaxaudit.runs import load_results

    res = load_results(shadow_root / name)
    names = sorted(res["chunks"])
    masks = np.concatenate([res["chunks"][n]["masks"] for n in names]).astype(bool)
    scores = np.concatenate([res["chunks"][n]["scores"] for n in names]).astype(np.float32)
    llr = np.asarray(lira_loo(scores, masks)).ravel()
    labels = masks.ravel()
    return (float(roc_auc(llr, labels)), float(tpr_at_fpr(llr, labels, fpr=0.01)),
            float(tpr_at_fpr(llr, labels, fpr=0.001)))


def node_mean(x) -> tuple[float, float]:
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x)))


def boot_mean(run) -> tuple[float, float]:
    point = float(np.nanmean(run["jeffreys_eps_r_q50"]))
    return point, float(np.std(np.nanmean(run["boot"], axis=1), ddof=1))


def diff(a, b) -> str:
    """Paired posterior-median difference (nodes) / Jeffreys difference (bootstrap over models)."""
    both = ~np.isnan(a["bayes_eps_r_q50"]) & ~np.isnan(b["bayes_eps_r_q50"])
    d = a["bayes_eps_r_q50"][both] - b["bayes_eps_r_q50"][both]
    (ja, sa), (jb, sb) = boot_mean(a), boot_mean(b)
    return (f"{d.mean():+.2f} ± {d.std(ddof=1) / np.sqrt(both.sum()):.2f} / "
            f"{ja - jb:+.2f} ± {np.hypot(sa, sb):.2f}")


def spearman(run, col: str, against: str) -> str:
    from scipy import stats

    est = run[col]
    ok = ~np.isnan(est)
    if np.ptp(run[against][ok]) == 0:
        return "const."
    return f"{stats.spearmanr(run[against][ok], est[ok]).statistic:+.2f}"


def models_table(runs: dict, rates: dict) -> str:
    header = ("| data set | GNN | models | AUC / TPR@1% (uniform, inductive) | per-node AUC p10–p90 | "
              "posterior median ε_R p10–p50–p90 | certified ε_R > 0 | snowball − uniform | "
              "random walk − uniform | full − inductive | features-only − inductive | "
              "BMP-R ≤ MP (posterior medians) | ρ(ε_R, η) snowball | ρ(ε_R, degree) uniform |")
    lines = [header, "|" + "---|" * 14]
    for ds in ("cora", "citeseer"):
        for model in ("gcn", "sage", "gat"):
            def get(sampler, edges, ds=ds, model=model):
                return runs.get((ds, model, sampler, edges, 0.5))

            base = get("uniform", "inductive")
            if base is None:
                continue
            med = base["bayes_eps_r_q50"]
            ok = ~np.isnan(med)
            p10, p50, p90 = np.percentile(med[ok], [10, 50, 90])
            auc, tpr1, _ = rates.get((ds, model, "uniform", "inductive", 0.5), (np.nan,) * 3)
            cells = [ds, MODEL_NAMES[model], str(base["num_models"]), f"{auc:.3f} / {tpr1:.3f}",
                     f"{np.nanpercentile(base['auc'], 10):.2f}–"
                     f"{np.nanpercentile(base['auc'], 90):.2f}",
                     f"{p10:.2f}–{p50:.2f}–{p90:.2f}",
                     f"{np.nanmean(base['certified_eps_r_lower'][ok] > 0):.2f}"]
            for other in (get("snowball", "inductive"), get("random_walk", "inductive"),
                          get("uniform", "full"), get("uniform", "none")):
                cells.append("—" if other is None else diff(other, base))
            ok2 = ok & ~np.isnan(base["mp_eps_q50"])
            if ok2.any():
                p = np.mean(base["bayes_eps_r_q50"][ok2] <= base["mp_eps_q50"][ok2])
                cells.append(f"{p:.2f} ± {np.sqrt(p * (1 - p) / ok2.sum()):.2f}")
            else:
                cells.append("—")
            snow = get("snowball", "inductive")
            cells.append("—" if snow is None else spearman(snow, "jeffreys_eps_r_q50", "eta"))
            cells.append(spearman(base, "jeffreys_eps_r_q50", "degree"))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_rows(runs: dict, rates: dict) -> list[dict]:
    rows = []
    for (ds, model, sampler, edges, ratio), run in sorted(runs.items()):
        if model != "gcn" or edges != "inductive" or sampler not in ("uniform", "snowball"):
            continue
        med = run["bayes_eps_r_q50"]
        m, se = node_mean(med)
        jm, jse = boot_mean(run)
        cert = run["certified_eps_r_lower"]
        auc, tpr1, tpr01 = rates.get((ds, model, sampler, edges, ratio), (np.nan,) * 3)
        rows.append(dict(dataset=ds, sampler=sampler, ratio=ratio, models=run["num_models"],
                         eta_mean=float(np.nanmean(run["eta"])), posterior_eps_r=m,
                         posterior_se=se, jeffreys_eps_r=jm, jeffreys_se=jse,
                         certified_eps_r_mean=float(np.nanmean(cert)),
                         certified_positive=float(np.nanmean(cert[~np.isnan(cert)] > 0)),
                         auc=auc, tpr_1pct=tpr1, tpr_01pct=tpr01))
    return rows


def ratio_table(rows: list[dict]) -> str:
    lines = ["| data set | sampler | ratio | models | mean η | posterior median ε_R, mean ± SE "
             "(estimate) | Jeffreys median ε_R ± SE (estimate) | certified ε_R lower bound, mean "
             "(bound) | certified > 0 | attack AUC | TPR@1% FPR | TPR@0.1% FPR |",
             "|" + "---|" * 12]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['sampler']} | {r['ratio']:.2f} | {r['models']} | "
                     f"{r['eta_mean']:.3f} | {r['posterior_eps_r']:.2f} ± {r['posterior_se']:.2f} | "
                     f"{r['jeffreys_eps_r']:.2f} ± {r['jeffreys_se']:.2f} | "
                     f"{r['certified_eps_r_mean']:.2f} | {r['certified_positive']:.2f} | "
                     f"{r['auc']:.3f} | {r['tpr_1pct']:.3f} | {r['tpr_01pct']:.3f} |")
    return "\n".join(lines)


def ratio_figure(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ds, style in (("cora", "-"), ("citeseer", "--")):
        for sampler, color in (("uniform", "C0"), ("snowball", "C1")):
            sel = [r for r in rows if r["dataset"] == ds and r["sampler"] == sampler]
            if not sel:
                continue
            # the realised training fraction: the snowball sampler stops when the seeds'
            # components are exhausted (CiteSeer: about 0.55 of the nodes whatever the ratio)
            x = [r["eta_mean"] for r in sel]
            label = f"{ds}, {sampler}"
            axes[0].errorbar(x, [r["posterior_eps_r"] for r in sel],
                             yerr=[2 * r["posterior_se"] for r in sel], ls=style, color=color,
                             marker="o", label=label)
            axes[1].plot(x, [r["certified_eps_r_mean"] for r in sel], ls=style, color=color,
                         marker="o", label=label)
            axes[2].plot(x, [r["tpr_1pct"] for r in sel], ls=style, color=color, marker="o",
                         label=label)
    axes[0].set_ylabel("posterior median ε_R, node mean ± 2 SE (estimate)")
    axes[1].set_ylabel("certified ε_R, node mean (95% lower bound)")
    axes[2].set_ylabel("LOO-LiRA TPR at 1% FPR (estimate)")
    for ax in axes:
        ax.set_xlabel("training-set fraction (mean η)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("GCN shadow models: node-level leakage against the training-set size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--findings", required=True)
    p.add_argument("--shadow-root", required=True)
    p.add_argument("--out", default="notebooks/figures")
    args = p.parse_args(argv)
    runs = load(Path(args.findings))
    names = {k: f"{k[0]}_{k[1]}_{k[2]}_{k[3]}_r{k[4]}_m{v['num_models']}" for k, v in runs.items()}
    rates = {k: attack_rates(Path(args.shadow_root), n) for k, n in names.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    made_by = ("Made by `python notebooks/scripts/bmp_sweep_tables.py --findings FINDINGS "
               "--shadow-root RUNS` (commands: docs/bmp.md, section 8). Differences: posterior "
               "median ε_R paired over the NUTS node subset ± SE over nodes / Jeffreys median "
               "ε_R ± bootstrap SE over shadow models (estimates).\n\n")
    table = models_table(runs, rates)
    (out / "bmp_models.md").write_text(made_by + table + "\n")
    print(table)
    rows = ratio_rows(runs, rates)
    if rows:
        rt = ratio_table(rows)
        (out / "bmp_ratio.md").write_text(made_by + rt + "\n")
        print(rt)
        ratio_figure(rows, out / "bmp_ratio.png")


if __name__ == "__main__":
    main()
