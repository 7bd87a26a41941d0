# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Node-level Bayesian membership privacy on Cora and CiteSeer (Yıldırım & Khosla, arXiv 2606.04069)
#
# Shadow GCNs trained on sampled subgraphs (uniform vs snowball vs random-walk sampling at ratio
# 0.5; inductive vs full edge access), leave-one-out LiRA with prior-aware Bayes decisions, and per
# node: the **certified** 95% lower bounds on (ε_L, ε_R), the **Bayesian** posterior (median, 5%
# quantile), the symmetric MP fit and the Jeffreys estimate (`jaxaudit.bmp.audit_from_scores`).
# The paper's claims, each checked with the numbers below:
#
# 1. leakage varies strongly across nodes, and the global attack AUC hides that spread;
# 2. snowball sampling leaks more than uniform sampling;
# 3. BMP-R (ε_R) is usually below the symmetric MP ε;
# 4. ε against the node prior η_i and against degree.
#
# Full mode reads the per-run audits made by
# `python notebooks/scripts/bmp_findings.py --shadow-root RUNS --out FINDINGS` from
# `jaxaudit shadow` runs named `{dataset}_{sampler}_{edges}_m{R}` (set `JAXAUDIT_BMP_FINDINGS`).
# `JAXAUDIT_NOTEBOOK_FAST=1` instead audits a 240-node CSBM in-process (used by the test suite).
# Figures go to `$JAXAUDIT_FIGURES` (default `notebooks/figures/`).

# %%
import os
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from jaxaudit import bmp, mia
from jaxaudit.datasets import make_csbm
from jaxaudit.graph import ShadowTraining, snowball_sampler, uniform_sampler

FAST = os.environ.get("JAXAUDIT_NOTEBOOK_FAST") == "1"
FIG = Path(os.environ.get("JAXAUDIT_FIGURES", Path("notebooks") / "figures"))
FIG.mkdir(parents=True, exist_ok=True)
FINDINGS = Path(os.environ.get("JAXAUDIT_BMP_FINDINGS", "runs/bmp_findings"))
print("fast mode" if FAST else f"full mode, audits from {FINDINGS}")

# %% [markdown]
# ## 1. The error region and the attack band
#
# R(ε_L, ε_R) is cut out by e^{ε_R} α + β ≥ 1 and α + e^{ε_L} β ≥ 1 (below the diagonal) and
# their mirror images; the posterior model places the attack point uniformly on the band
# R(ε) \ R(sε) below the diagonal, s the attack's strength.

# %%
alpha = np.linspace(0, 1, 400)
fig, ax = plt.subplots(figsize=(4.5, 4.5))
for (el, er), style in (((0.7, 2.0), "-"), ((0.35, 1.0), "--")):
    ax.plot(alpha, np.asarray(bmp.region.tradeoff_curve(alpha, el, er)), style,
            label=f"β_min, ε=({el}, {er})")
ax.fill_between(alpha, np.asarray(bmp.region.tradeoff_curve(alpha, 0.7, 2.0)),
                np.asarray(bmp.region.tradeoff_curve(alpha, 0.35, 1.0)), alpha=0.3, label="band, s=0.5")
ax.plot([0, 1], [1, 0], "k:", lw=1)
a_star, b_star = bmp.region.region_corner(0.7, 2.0)
ax.plot([a_star], [b_star], "ko", ms=4)
ax.set(xlabel="α (FPR)", ylabel="β (FNR)", title="BMP region (lower half)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(FIG / "bmp_region.png", dpi=110)

# %% [markdown]
# ## 2. The audits
#
# One table per run: per-node columns of `bmp.audit_table` (η, degree, counts,
# `certified_eps_*_lower`, `bayes_eps_*_q05/q50/q95`, `mp_eps_*`, `jeffreys_eps_*`, AUC), the
# global AUC with the TPR at 1% and 0.1% FPR (pooled over all (model, node) pairs; full mode
# reads them from the audits' `global_tpr` when recorded, else NaN) and, in full mode, a bootstrap over shadow models of the per-node Jeffreys medians of
# ε_R (the run-to-run standard error from having finitely many shadow models).

# %%
runs = {}


def global_tpr(scores, masks):
    """TPR at 1% and 0.1% FPR of the audit's attack (LOO LiRA), pooled over (model, node)."""
    llr = mia.attack_statistic(scores, masks, attack="lira")
    return np.array([float(mia.tpr_at_fpr(llr, masks, fpr)) for fpr in (1e-2, 1e-3)])


if FAST:
    graph = make_csbm(jax.random.key(0), num_nodes=240, num_classes=4, num_features=64,
                      avg_degree=4.0, homophily=0.9, features="gaussian", split=(10, 40, 80))
    for name, sampler in (("csbm_uniform_inductive", uniform_sampler(0.5)),
                          ("csbm_snowball_inductive", snowball_sampler(0.5, seeds_per_class=2))):
        config = bmp.AuditConfig(mp_baseline="uniform" in name, nuts=bmp.NutsConfig(
            num_warmup=80, num_samples=80, num_chains=2, chunk_size=128))
        audit = bmp.audit_bmp(jax.random.key(0), graph, sampler, "gcn", 12, config,
                              training=ShadowTraining(epochs=20), num_prior_draws=100)
        runs[name] = dict(bmp.audit_table(audit), global_auc=float(audit.global_auc),
                          global_tpr=global_tpr(audit.scores, audit.masks),
                          boot=None, num_models=12)
else:
    for path in sorted(FINDINGS.glob("*.npz")):
        d = np.load(path)
        name = path.stem.rsplit("_m", 1)[0]
        runs[name] = {k[4:]: d[k] for k in d.files if k.startswith("col_")}
        runs[name].update(global_auc=float(d["global_auc"]), boot=d["boot_jeffreys_r_median"],
                          num_models=int(d["num_models"]),
                          global_tpr=(d["global_tpr"] if "global_tpr" in d.files
                                      else np.full(2, np.nan)))
print(sorted(runs))


def node_mean(x):
    """Mean over nodes with an estimate and its standard error over nodes."""
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    return x.mean(), x.std(ddof=1) / np.sqrt(len(x))


def boot_mean(run):
    """Mean over nodes of the Jeffreys median ε_R and its bootstrap-over-models standard error."""
    point = np.nanmean(run["jeffreys_eps_r_q50"])
    if run["boot"] is None:
        return point, np.nan
    return point, float(np.std(np.nanmean(run["boot"], axis=1), ddof=1))


rows = []
for name, r in runs.items():
    med = r["bayes_eps_r_q50"]
    ok = ~np.isnan(med)
    m, se = node_mean(med)
    jm, jse = boot_mean(r)
    rows.append(dict(
        run=name, models=r["num_models"], nodes=int(ok.sum()), global_auc=r["global_auc"],
        tpr_at_1pct_fpr=r["global_tpr"][0], tpr_at_0_1pct_fpr=r["global_tpr"][1],
        auc_p10=np.nanpercentile(r["auc"], 10), auc_p90=np.nanpercentile(r["auc"], 90),
        bayes_eps_r_p10=np.percentile(med[ok], 10), bayes_eps_r_p50=np.percentile(med[ok], 50),
        bayes_eps_r_p90=np.percentile(med[ok], 90), bayes_eps_r_mean=m, bayes_eps_r_se=se,
        jeffreys_eps_r_mean=jm, jeffreys_eps_r_boot_se=jse,
        certified_eps_r_mean=np.nanmean(r["certified_eps_r_lower"]),
        certified_eps_r_max=np.nanmax(r["certified_eps_r_lower"]),
        certified_positive=np.nanmean(r["certified_eps_r_lower"][ok] > 0)))
header = list(rows[0])
lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
for row in rows:
    lines.append("| " + " | ".join(str(v) if isinstance(v, int | str) else f"{float(v):.3f}"
                                   for v in row.values()) + " |")
per_run = "\n".join(lines)
print(per_run)

# %% [markdown]
# ## 3. The paper's claims, with the numbers
#
# Differences between runs: mean over nodes of the per-node estimate, with two standard errors —
# over nodes (paired: the same nodes under both settings) and over shadow models (bootstrap of
# the Jeffreys medians; runs are independent, so the two runs' errors add in quadrature).

# %%
claims = []


def compare(a, b, label):
    if a not in runs or b not in runs:
        return
    ra, rb = runs[a], runs[b]
    both = ~np.isnan(ra["bayes_eps_r_q50"]) & ~np.isnan(rb["bayes_eps_r_q50"])
    diff = ra["bayes_eps_r_q50"][both] - rb["bayes_eps_r_q50"][both]
    d_node, se_node = diff.mean(), diff.std(ddof=1) / np.sqrt(both.sum())
    (ja, sa), (jb, sb) = boot_mean(ra), boot_mean(rb)
    cert = np.nanmean(ra["certified_eps_r_lower"]) - np.nanmean(rb["certified_eps_r_lower"])
    claims.append(f"| {label} | {d_node:+.3f} ± {se_node:.3f} | {ja - jb:+.3f} ± "
                  f"{np.hypot(sa, sb):.3f} | {cert:+.3f} | "
                  f"{np.mean(diff > 0):.2f} |")


prefixes = sorted({n.split("_")[0] for n in runs})
for ds in prefixes:
    for edges in ("inductive", "full"):
        compare(f"{ds}_snowball_{edges}", f"{ds}_uniform_{edges}", f"{ds} {edges}: snowball − uniform")
        compare(f"{ds}_random_walk_{edges}", f"{ds}_uniform_{edges}",
                f"{ds} {edges}: random walk − uniform")
    for sampler in ("uniform", "snowball", "random_walk"):
        compare(f"{ds}_{sampler}_full", f"{ds}_{sampler}_inductive", f"{ds} {sampler}: full − inductive")
claims_table = "\n".join(
    ["| comparison | Bayesian median ε_R, mean diff ± SE (nodes) | Jeffreys median ε_R, diff ± SE "
     "(models) | certified ε_R, mean diff | fraction of nodes higher |", "|---|---|---|---|---|",
     *claims])
print(claims_table)

mp_lines = []
for name, r in runs.items():
    # point readings: the symmetric fit is max(ε_L, ε_R), so BMP-R is strictly below it exactly
    # where the attack's evidence is larger on the left side
    jl, jr = r["jeffreys_eps_l_q50"], r["jeffreys_eps_r_q50"]
    okj = ~np.isnan(jr)
    pj = np.mean(jr[okj] < jl[okj])
    cl, cr = r["certified_eps_l_lower"], r["certified_eps_r_lower"]
    okc = ~np.isnan(cr) & (np.fmax(cl, cr) > 0)
    pc = np.mean(cr[okc] < cl[okc]) if okc.any() else np.nan
    ok = ~np.isnan(r["bayes_eps_r_q50"]) & ~np.isnan(r["mp_eps_q50"])
    if ok.any():
        below = r["bayes_eps_r_q50"][ok] <= r["mp_eps_q50"][ok]
        p = below.mean()
        bayes = (f"{p:.3f} ± {np.sqrt(p * (1 - p) / ok.sum()):.3f} "
                 f"(medians {np.median(r['bayes_eps_r_q50'][ok]):.2f} vs "
                 f"{np.median(r['mp_eps_q50'][ok]):.2f})")
    else:
        bayes = "not fitted"
    mp_lines.append(f"| {name} | {pj:.3f} ± {np.sqrt(pj * (1 - pj) / okj.sum()):.3f} | "
                    f"{pc:.3f} ({okc.sum()} nodes) | {bayes} |")
mp_table = "\n".join([
    "| run | Jeffreys median: ε_R < ε_MP = max(ε_L, ε_R) (fraction ± SE) | certified: ε_R⁻ < "
    "max(ε_L⁻, ε_R⁻) (nodes with a positive bound) | Bayesian: posterior median ε_R ≤ MP-fit "
    "median (fraction ± SE) |", "|---|---|---|---|", *mp_lines])
print(mp_table)

corr_lines = []
for name, r in runs.items():
    cells = []
    for col in ("jeffreys_eps_r_q50", "bayes_eps_r_q50"):
        est = r[col]
        ok = ~np.isnan(est)
        rho_d = stats.spearmanr(r["degree"][ok], est[ok])
        cell = f"{rho_d.statistic:+.3f} (p={rho_d.pvalue:.1e})"
        if np.ptp(r["eta"][ok]) > 0:
            rho_e = stats.spearmanr(r["eta"][ok], est[ok])
            cell += f" / {rho_e.statistic:+.3f} (p={rho_e.pvalue:.1e})"
        else:
            cell += " / η constant"
        cells.append(f"{cell}, {ok.sum()} nodes")
    corr_lines.append(f"| {name} | " + " | ".join(cells) + " |")
corr_table = "\n".join([
    "| run | Spearman ρ with degree / with η: Jeffreys median ε_R (all nodes) | same: Bayesian "
    "median ε_R (NUTS subset) |", "|---|---|---|", *corr_lines])
print(corr_table)
MADE_BY = ("Made by `JAXAUDIT_BMP_FINDINGS=FINDINGS python notebooks/bmp_planetoid.py` from the "
           "audits of `notebooks/scripts/bmp_findings.py` (commands and reading: docs/bmp.md, section 6). "
           "Bayesian columns: NUTS on a fixed node subset; Jeffreys and certified: every node.")
(FIG / "bmp_findings.md").write_text("\n\n".join([MADE_BY, per_run, claims_table, mp_table,
                                                  corr_table]) + "\n")

# %% [markdown]
# ## 4. Figures: ε against η and degree (with intervals), sampler comparison, BMP vs MP

# %%
for ds in prefixes:
    names = [n for n in runs if n.startswith(ds + "_") and n.endswith("inductive")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for k, name in enumerate(sorted(names)):
        r = runs[name]
        est = r["jeffreys_eps_r_q50"]  # every node (the Bayesian medians cover a subset)
        ok = ~np.isnan(est)
        label = name[len(ds) + 1:].replace("_inductive", "")
        axes[0].scatter(r["eta"][ok], est[ok], s=2, alpha=0.3, c=f"C{k}", label=label)
        deg = np.maximum(r["degree"][ok], 0.5).astype(float)
        bins = np.unique(np.round(np.logspace(0, np.log10(deg.max() + 1), 12)))
        idx = np.digitize(deg, bins)
        centers, means, ses = [], [], []
        for b in np.unique(idx):
            sel = idx == b
            if sel.sum() >= 5:
                centers.append(np.median(deg[sel]))
                vals = est[ok][sel]
                means.append(vals.mean())
                ses.append(vals.std(ddof=1) / np.sqrt(sel.sum()))
        axes[1].errorbar(centers, means, yerr=2 * np.asarray(ses), marker="o", ms=3, c=f"C{k}",
                         label=label)
    axes[0].set(xlabel="prior η_i", ylabel="Jeffreys median ε_R (estimate)",
                title=f"{ds}: ε_R vs node prior (inductive)")
    axes[1].set(xscale="log", xlabel="degree", ylabel="mean Jeffreys median ε_R ± 2 SE",
                title=f"{ds}: ε_R vs degree (inductive)")
    axes[0].legend(markerscale=4)
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(FIG / f"bmp_{ds}_eps_vs_prior_degree.png", dpi=110)

# %%
fig, axes = plt.subplots(1, len(prefixes), figsize=(5 * len(prefixes), 3.8), squeeze=False)
for ax, ds in zip(axes[0], prefixes):
    names = sorted(n for n in runs if n.startswith(ds + "_"))
    data = [runs[n]["bayes_eps_r_q50"][~np.isnan(runs[n]["bayes_eps_r_q50"])] for n in names]
    cert = [runs[n]["certified_eps_r_lower"][~np.isnan(runs[n]["certified_eps_r_lower"])]
            for n in names]
    pos = np.arange(len(names))
    ax.boxplot(data, positions=pos - 0.2, widths=0.35, showfliers=False)
    ax.boxplot(cert, positions=pos + 0.2, widths=0.35, showfliers=False,
               boxprops=dict(color="C3"), medianprops=dict(color="C3"))
    ax.set_xticks(pos, [n[len(ds) + 1:].replace("_", "\n") for n in names], fontsize=7)
    ax.set(ylabel="ε_R per node", title=f"{ds}: Bayesian median (black), certified (red)")
fig.tight_layout()
fig.savefig(FIG / "bmp_samplers.png", dpi=110)

# %% [markdown]
# ## 5. Sampling itself leaks: c_R on a 6-node graph
#
# Snowball (frontier-growth, teleport 0.3) sampling of a random number of the 6 nodes: the exact
# law by enumeration against a Monte Carlo estimate from forward simulation. Fixed-size uniform
# (or fixed-size snowball) sampling has c = ∞ and Poisson sampling c = 0.

# %%
senders = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 1])
receivers = np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 4])
law = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05])
masks, probs = bmp.leakage.snowball_distribution(senders, receivers, 6, law, teleport=0.3)
exact = bmp.leakage.sampling_leakage(masks, probs)
draws = bmp.leakage.snowball_draws(jax.random.key(0), senders, receivers, 6, law, 4000 if FAST else 40000, teleport=0.3)
mc = bmp.leakage.sampling_leakage(draws)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(np.arange(6) - 0.2, exact.c_r, 0.4, label="exact")
ax.bar(np.arange(6) + 0.2, mc.c_r, 0.4, yerr=2 * mc.c_r_se, label="Monte Carlo ± 2 se")
ax.set(xlabel="node", ylabel="c_R", title="snowball sampling leakage")
ax.legend()
fig.tight_layout()
fig.savefig(FIG / "bmp_sampling_leakage.png", dpi=110)
print("exact c_R", np.round(exact.c_r, 3), "\nMC    c_R", np.round(mc.c_r, 3))
