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
# # Concrete attacks against the adversary-aware bound (Swanberg et al., arXiv 2507.08158)
#
# Two attacks on mechanisms that were really run, each next to the level-γ count bound v_γ
# (with probability ≥ 1 − γ fewer than v_γ targets are attacked successfully) and the
# baseline Σ p_i (what the best guess without the mechanism's output expects):
#
# 1. **Secret extraction** from a character GRU DP-fine-tuned on real text with n inserted
#    secrets ("user k's password is X_k"), for a Zipf prior over zxcvbn's ranked passwords and
#    for uniform 4-digit canaries (`jaxaudit attack secrets`), with three rankings of the
#    candidates on the same models: prior × user-calibrated likelihood ratio (default), model
#    likelihood, and the prior alone.
# 2. **Reconstruction from noisy marginals** of Fair's affairs survey, ρ-zCDP Gaussian 2-way
#    marginals, informed Bayes adversary, exact vs within Hamming distance 1
#    (`jaxaudit attack marginals`).
# 3. **Soundness**: over seeded repetitions the measured count reaches v_γ in at most a γ
#    fraction of runs, on a table where the Bayes attack is the optimal test.
#
# With `JAXAUDIT_ATTACK_RUNS` pointing at a folder holding the run folders `secrets_pw`,
# `secrets_digits`, `marg_d0`, `marg_d1` made by the commands in `docs/attacks.md`, the figures
# are drawn from them; otherwise (and with `JAXAUDIT_NOTEBOOK_FAST=1`, used by the tests) the
# notebook runs small versions itself. Figures go to `$JAXAUDIT_FIGURES` (default `figures/`).

# %%
import json
import math
import os
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import binom, norm

from jaxaudit.attacks import (
    Table,
    digit_prior,
    extraction_result,
    marginals_reconstruction,
    password_prior,
    train_and_score,
)

FAST = os.environ.get("JAXAUDIT_NOTEBOOK_FAST") == "1"
FIGURES = Path(os.environ.get("JAXAUDIT_FIGURES", "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)
RUNS = os.environ.get("JAXAUDIT_ATTACK_RUNS")
RUNS = Path(RUNS) if RUNS and not FAST else None


def mean_by(rows, level):
    """Per level: ε, mean measured successes, baseline, smallest bound, n."""
    out = []
    for lv in sorted({r[level] for r in rows}):
        sel = [r for r in rows if r[level] == lv]
        out.append((sel[0]["epsilon"], np.mean([r["successes"] for r in sel]),
                    np.mean([r["baseline"] for r in sel]), min(r["bound"] for r in sel),
                    sel[0]["num_targets"]))
    return [o for o in out if math.isfinite(o[0])]


def result_row(result, level_name, level):
    row = {level_name: level, "num_targets": int(result.hits.size)}
    for k in ("successes", "bound", "baseline", "epsilon"):
        row[k] = float(getattr(result, k))
    return row


# %% [markdown]
# ## 1. Secret extraction from a DP-fine-tuned language model
#
# Every trained model is attacked with each scoring (`jaxaudit.attacks.attack_scores`): the
# default ranks each user's candidates by the prior times the model's user-calibrated
# likelihood ratio, log D(x) + ℓ_k(x) − mean_{j≠k} ℓ_j(x); "likelihood" is the Secret Sharer's
# ranking by ℓ_k(x) alone; "prior" ignores the model (the baseline's guesses, on the same
# secrets). Points are means over the seeds.

# %%
_computed = {}
SCORING_STYLE = {"calibrated": "s-", "likelihood": "v:", "prior": "x--"}


def secrets_rows(name, prior, guesses, epsilons):
    if RUNS is not None and (RUNS / name / "table.json").exists():
        # secrets_pw_b holds more ε values of the same configuration (docs/attacks.md).
        return [r for folder in (name, f"{name}_b") if (RUNS / folder / "table.json").exists()
                for r in json.loads((RUNS / folder / "table.json").read_text())]
    memo = (prior.source, guesses, tuple(epsilons))  # FAST: both panels use the same toy run
    if memo in _computed:
        return _computed[memo]
    rows = _computed[memo] = []
    for eps in epsilons:
        scored = train_and_score(jax.random.key(0), prior=prior,
                                 num_secrets=3 if FAST else 30, epsilon=eps,
                                 num_filler=5 if FAST else 300, steps=2 if FAST else 100,
                                 batch_size=4 if FAST else 32, hidden_dim=8 if FAST else 64)
        r = extraction_result(scored, prior, guesses=guesses)
        row = result_row(r, "epsilon_target", eps)
        for sc in SCORING_STYLE:
            row[f"successes_{sc}"] = int(
                extraction_result(scored, prior, scoring=sc, guesses=guesses).successes)
        rows.append(row)
    return rows


def style_count_axes(ax, eps, n, xlabel, ylabel, title, legend_size):
    """Shared look of the success-count panels: log ε axis at the measured ε, n as a ceiling."""
    ax.axhline(n[0], color="gray", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xticks(eps, [f"{e:.3g}" for e in eps])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=legend_size)


EPS = [2.0] if FAST else [1.0, 4.0, 8.0]
panels = [("secrets_pw", "passwords (Zipf over zxcvbn ranks), k = 1",
           digit_prior(1) if FAST else password_prior(2000), 1),
          ("secrets_digits", "uniform 4-digit canaries, k = 10",
           digit_prior(1) if FAST else digit_prior(4), 1 if FAST else 10)]
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, (name, title, prior, k) in zip(axes, panels):
    rows = secrets_rows(name, prior, k, EPS)
    agg = mean_by(rows, "epsilon_target")
    eps, succ, base, bound, n = (np.array(v, dtype=float) for v in zip(*agg))
    ax.plot(eps, np.minimum(bound, n), "o-", label="bound v_γ (upper bound)")
    for sc, style in SCORING_STYLE.items():
        if all(f"successes_{sc}" in r for r in rows):
            means = [np.mean([r[f"successes_{sc}"] for r in rows if r["epsilon"] == e])
                     for e in eps]
            ax.plot(eps, means, style, label=f"attack: {sc} (measured, mean)")
    ax.plot(eps, base, "^--", label="baseline Σ p_i (expected)")
    style_count_axes(ax, eps, n, "ε (δ = 1e−5, replace-one)",
                     f"secrets extracted of n = {int(n[0])}", title, legend_size=7)
fig.tight_layout()
fig.savefig(FIGURES / "attacks_secrets.png", dpi=120)

# %% [markdown]
# ## 2. Reconstruction from noisy marginals: exact vs approximate

# %%
ATTR = ["age", "yrs_married", "children", "educ", "religious", "occupation", "rate_marriage"]
HIDDEN = ["religious", "occupation", "rate_marriage"]


def marginal_rows(name, distance, rhos):
    if RUNS is not None and (RUNS / name / "table.json").exists():
        return json.loads((RUNS / name / "table.json").read_text())
    rows = []
    for rho in rhos:
        for seed in range(1 if FAST else 5):
            r = marginals_reconstruction(
                jax.random.key(seed), rho=rho, attributes=ATTR[-4:] if FAST else ATTR,
                hidden=HIDDEN[:2], distance=distance, num_targets=20 if FAST else 100)
            rows.append(result_row(r, "rho", rho))
    return rows


RHOS = [0.1] if FAST else [0.001, 0.01, 0.1, 1.0, 10.0]
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, (name, d) in zip(axes, [("marg_d0", 0), ("marg_d1", 1)]):
    agg = mean_by(marginal_rows(name, d, RHOS), "rho")
    eps, succ, base, bound, n = (np.array(v, dtype=float) for v in zip(*agg))
    ax.plot(eps, np.minimum(bound, n), "o-", label="bound v_γ (upper bound)")
    ax.plot(eps, succ, "s-", label="Bayes attack (measured, mean)")
    ax.plot(eps, base, "^--", label="baseline Σ p_i (expected)")
    style_count_axes(ax, eps, n, "ε at δ = 1e−5 (μ-GDP, μ = √(2ρ))",
                     f"targets reconstructed of n = {int(n[0])}",
                     "exact reconstruction" if d == 0 else "within Hamming distance 1",
                     legend_size=8)
fig.tight_layout()
fig.savefig(FIGURES / "attacks_marginals.png", dpi=120)

# %% [markdown]
# ## 3. Soundness over seeded repetitions
#
# A table where every row has its own quasi-identifier and one balanced hidden bit: each
# target's cells are its own, the Bayes attack is the optimal test between N(+1, σ²) and
# N(−1, σ²), and its success count is Binomial(n, Φ(μ/2)). The measured counts must reach v_γ
# in at most a γ fraction of the runs.

# %%
rng = np.random.default_rng(0)
rows_n = 400
table = Table(("qi", "bit"),
              np.stack([np.arange(rows_n), rng.permutation(np.arange(rows_n) % 2)], 1)
              .astype(np.int32), (tuple(range(rows_n)), (0, 1)))
rho, n, reps = 0.125, 150, 10 if FAST else 200
res = [marginals_reconstruction(jax.random.key(s), rho=rho, attributes=["qi", "bit"],
                                hidden=["bit"], num_targets=n, table=table) for s in range(reps)]
succ = np.array([int(r.successes) for r in res])
v_gamma = int(res[0].bound)
q = norm.cdf(math.sqrt(2 * rho) / 2)
print(f"v_γ = {v_gamma}; runs reaching it: {(succ >= v_gamma).mean():.3f} (γ = 0.05); "
      f"mean successes {succ.mean():.1f} vs n Φ(μ/2) = {n * q:.1f}")
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(succ, bins=np.arange(succ.min() - 1, succ.max() + 2), density=True, alpha=0.6,
        label=f"measured over {reps} seeds")
xs = np.arange(int(n * q - 4 * math.sqrt(n)), int(n * q + 4 * math.sqrt(n)))
ax.plot(xs, binom.pmf(xs, n, q), "k-", lw=1, label="Binomial(n, Φ(μ/2)) (optimal attack)")
ax.axvline(v_gamma, color="C3", ls="--", label=f"bound v_γ = {v_gamma}")
ax.set_xlabel("targets attacked successfully")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(FIGURES / "attacks_soundness.png", dpi=120)
