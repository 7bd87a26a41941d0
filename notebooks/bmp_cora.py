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
# # Node-level Bayesian membership privacy on Cora (Yıldırım & Khosla, arXiv 2606.04069)
#
# The audit of `jaxaudit.bmp.audit_bmp`: shadow GCNs trained on sampled subgraphs of Cora
# (uniform vs snowball sampling at the same ratio), leave-one-out LiRA with prior-aware Bayes
# decisions, and a NUTS posterior over (ε_L, ε_R) for every node. Pictures:
#
# 1. the BMP error region and its band (the attack-point model of the posterior);
# 2. posterior median ε_R against the node prior η and against degree;
# 3. uniform vs snowball sampling (snowball leaks more), BMP-R vs the symmetric MP fit;
# 4. sampling leakage c_R on a 6-node graph (exact enumeration vs Monte Carlo).
#
# `JAXAUDIT_NOTEBOOK_FAST=1` runs a reduced size on a 240-node CSBM instead of Cora (used by the
# test suite); figures go to
# `$JAXAUDIT_FIGURES` (default `notebooks/figures/`).

# %%
import os
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from jaxaudit import bmp
from jaxaudit.datasets import load_planetoid, make_csbm
from jaxaudit.graph import snowball_sampler, uniform_sampler

FAST = os.environ.get("JAXAUDIT_NOTEBOOK_FAST") == "1"
FIG = Path(os.environ.get("JAXAUDIT_FIGURES", Path("notebooks") / "figures"))
FIG.mkdir(parents=True, exist_ok=True)
if FAST:  # smoke-test size: a 240-node CSBM stands in for Cora (same pipeline, same figures)
    SIZES = dict(num_models=12, epochs=20, num_prior_draws=100, num_warmup=80, num_samples=80,
                 num_chains=2, mp_baseline=False, chunk_size=128)
else:
    SIZES = dict(num_models=32, epochs=100, num_prior_draws=1000, num_warmup=300,
                 num_samples=500, num_chains=4, mp_baseline=True, chunk_size=1024)
print("fast mode" if FAST else "full mode", SIZES)

# %% [markdown]
# ## 1. The error region and the attack band
#
# R(ε_L, ε_R) is cut out by e^{ε_R} α + β ≥ 1 and α + e^{ε_L} β ≥ 1 (below the diagonal) and
# their mirror images; the posterior model places the attack point uniformly on the band
# R(ε) \ R(sε) below the diagonal.

# %%
alpha = np.linspace(0, 1, 400)
fig, ax = plt.subplots(figsize=(4.5, 4.5))
for (el, er), style in (((0.7, 2.0), "-"), ((0.35, 1.0), "--")):
    ax.plot(alpha, np.asarray(bmp.tradeoff_curve(alpha, el, er)), style,
            label=f"β_min, ε=({el}, {er})")
ax.fill_between(alpha, np.asarray(bmp.tradeoff_curve(alpha, 0.7, 2.0)),
                np.asarray(bmp.tradeoff_curve(alpha, 0.35, 1.0)), alpha=0.3, label="band, s=0.5")
ax.plot([0, 1], [1, 0], "k:", lw=1)
a_star, b_star = bmp.region_corner(0.7, 2.0)
ax.plot([a_star], [b_star], "ko", ms=4)
ax.set(xlabel="α (FPR)", ylabel="β (FNR)", title="BMP region (lower half)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(FIG / "bmp_region.png", dpi=110)

# %% [markdown]
# ## 2. The audit on Cora, uniform vs snowball sampling (ratio 0.5)

# %%
if FAST:
    graph = make_csbm(jax.random.key(0), num_nodes=240, num_classes=4, num_features=64,
                      avg_degree=4.0, homophily=0.9, features="gaussian", train_per_class=10,
                      num_val=40, num_test=80)
    snowball = snowball_sampler(0.5, seeds_per_class=2)
else:
    graph = load_planetoid("cora")
    snowball = snowball_sampler(0.5)
audits = {}
for name, sampler in (("uniform", uniform_sampler(0.5)), ("snowball", snowball)):
    audits[name] = bmp.audit_bmp(jax.random.key(0), graph, sampler, "gcn", **SIZES)
    res = audits[name]
    print(f"{name}: global LOO-LiRA AUC {res.global_auc:.3f}, median ε_R "
          f"{np.nanmedian(res.eps_r[1]):.3f}, median ε_L {np.nanmedian(res.eps_l[1]):.3f}, "
          f"R-hat<=1.05 {np.nanmean(res.rhat <= 1.05):.3f}")

# %%
res = audits["snowball"]
ok = ~np.isnan(res.eps_r[1])
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
axes[0].scatter(res.eta[ok], res.eps_r[1][ok], s=3, alpha=0.4)
axes[0].set(xlabel="prior η_i (snowball)", ylabel="posterior median ε_R", title="ε_R vs prior")
axes[1].scatter(np.maximum(res.degree[ok], 0.5), res.eps_r[1][ok], s=3, alpha=0.4)
axes[1].set(xscale="log", xlabel="degree", ylabel="posterior median ε_R", title="ε_R vs degree")
fig.tight_layout()
fig.savefig(FIG / "bmp_eps_vs_prior_degree.png", dpi=110)

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
top = max(np.nanmax(a.eps_r[1]) for a in audits.values())
bins = np.linspace(0, top, 40)
for name, a in audits.items():
    axes[0].hist(a.eps_r[1][~np.isnan(a.eps_r[1])], bins=bins, alpha=0.6, label=name)
axes[0].set(xlabel="posterior median ε_R", ylabel="nodes", title="uniform vs snowball")
axes[0].legend()
a = audits["uniform"]
mp_ok = ~np.isnan(a.eps_mp[1]) & ~np.isnan(a.eps_r[1])
if mp_ok.any():
    axes[1].scatter(a.eps_mp[1][mp_ok], a.eps_r[1][mp_ok], s=3, alpha=0.4)
    hi = float(np.nanmax(a.eps_mp[1][mp_ok]))
    axes[1].plot([0, hi], [0, hi], "k--", lw=1)
    print(f"BMP-R median <= MP median for {np.mean(a.eps_r[1][mp_ok] <= a.eps_mp[1][mp_ok]):.1%}"
          " of nodes (uniform)")
axes[1].set(xlabel="MP ε (symmetric fit)", ylabel="BMP-R ε_R", title="BMP vs MP (uniform)")
fig.tight_layout()
fig.savefig(FIG / "bmp_uniform_vs_snowball.png", dpi=110)

# %% [markdown]
# ## 3. Sampling itself leaks: c_R on a 6-node graph
#
# Snowball (frontier-growth, teleport 0.3) sampling of a random number of the 6 nodes: the exact
# law by enumeration against a Monte Carlo estimate from forward simulation. Fixed-size uniform
# (or fixed-size snowball) sampling has c = ∞ and Poisson sampling c = 0.

# %%
senders = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 1])
receivers = np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 4])
law = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05])
masks, probs = bmp.snowball_distribution(senders, receivers, 6, law, teleport=0.3)
exact = bmp.sampling_leakage(masks, probs)
draws = bmp.snowball_draws(0, senders, receivers, 6, law, 4000 if FAST else 40000, teleport=0.3)
mc = bmp.sampling_leakage(draws)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(np.arange(6) - 0.2, exact.c_r, 0.4, label="exact")
ax.bar(np.arange(6) + 0.2, mc.c_r, 0.4, yerr=2 * mc.c_r_se, label="Monte Carlo ± 2 se")
ax.set(xlabel="node", ylabel="c_R", title="snowball sampling leakage")
ax.legend()
fig.tight_layout()
fig.savefig(FIG / "bmp_sampling_leakage.png", dpi=110)
print("exact c_R", np.round(exact.c_r, 3), "\nMC    c_R", np.round(mc.c_r, 3))
