"""Tables, markdown and the figure of an attack sweep (``jaxaudit attack secrets|marginals``).

The functions take a sweep result of :mod:`jaxaudit.pipelines.attacks` (an ``AttackSweep``, read
duck-typed: ``level_name``, ``levels``, ``repetition``, ``attack``,
``scorings``, ``scoring_successes``, ``title``) and render it:

* :func:`rows`: one dict per run (``table.json``): the privacy level, the repetition
  (``seed``), ε, the measured ``successes``, the expected ``baseline`` Σ p_i, the level-γ upper
  bound ``count_bound`` v_γ (n + 1 = vacuous), ``count_bound_approx_dp``, the single-target
  bounds and, for the language-model attack, ``successes_<scoring>`` of every scoring;
* :func:`markdown` (``summary.md``) and :func:`text_table` (what the command prints): per level,
  the mean and largest measured count, the baseline, the smallest bound over the runs and how
  many runs reached it; with several scorings, each one's mean ± sd (sample standard
  deviation over the repetitions), largest count and runs at or above v_γ;
* :func:`plot_attack` (``attack.png``): successes, baseline and bound over ε;
* :func:`write_summary`: the three files into a run folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from jaxaudit.report.figures import save_figure
from jaxaudit.runs import RunDir

__all__ = ["SCALARS", "level_text", "markdown", "plot_attack", "rows", "text_table",
           "write_summary"]

#: The per-run numbers of an ``AttackResult`` that go into a row (the per-target ``hits`` and
#: ``priors`` stay in the run's chunks).
SCALARS = ("successes", "count_bound", "baseline", "epsilon", "delta", "gamma",
           "count_bound_approx_dp", "top_prior", "top_bound", "median_prior", "median_bound",
           "noise_multiplier")
_INTEGERS = ("successes", "count_bound", "count_bound_approx_dp")
_HEADER = 4  # lines of the markdown before the table (title, blank, legend, blank)


def level_text(value: float) -> str:
    """``value`` as short as it stays exact: ``%g`` when that reads back as the same float
    (``2``, ``0.1``, ``1e+06``), else ``repr`` (``2.0000001``), so distinct values never share a
    text; ``inf`` for infinity."""
    if math.isinf(value):
        return "inf"
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


def rows(result: Any) -> list[dict]:
    """One dict per run of ``result``, in the sweep's order (the rows of ``table.json``)."""
    out = []
    levels, reps = np.asarray(result.levels), np.asarray(result.repetition)
    values = {k: np.asarray(getattr(result.attack, k)) for k in SCALARS}
    hits, by_scoring = np.asarray(result.attack.hits), np.asarray(result.scoring_successes)
    for i in range(levels.size):
        row: dict[str, Any] = {result.level_name: float(levels[i]), "seed": int(reps[i]),
                               "num_targets": int(hits[i].size)}
        for k in SCALARS:
            v = values[k][i].item()
            row[k] = int(v) if k in _INTEGERS else float(v)
        for j, sc in enumerate(result.scorings):
            row[f"successes_{sc}"] = int(by_scoring[i, j])
        out.append(row)
    return out


def markdown(result: Any) -> str:
    """``summary.md``: a legend, one line per privacy level (measured successes mean / max,
    expected baseline, smallest bound over the runs, runs that reached it) and, with several
    scorings, the same counts for each."""
    table = rows(result)
    name, scorings = result.level_name, tuple(result.scorings)
    levels = sorted({r[name] for r in table})
    lines = [f"# {result.title}", "",
             "successes: measured; baseline: expected Σ p_i without the mechanism's output; "
             "bound: level-γ count bound v_γ (n + 1 = vacuous).", "",
             f"| {name} | ε | runs | successes (mean) | max | baseline | bound v_γ | "
             "runs ≥ v_γ |", "|---|---|---|---|---|---|---|---|"]
    for lv in levels:
        sel = [r for r in table if r[name] == lv]
        succ = np.array([r["successes"] for r in sel])
        bound = min(r["count_bound"] for r in sel)
        exceed = int(sum(r["successes"] >= r["count_bound"] for r in sel))
        lines.append(f"| {level_text(lv)} | {sel[0]['epsilon']:.3g} | {len(sel)} | "
                     f"{succ.mean():.2f} | {succ.max()} | "
                     f"{np.mean([r['baseline'] for r in sel]):.2f} | {bound} | {exceed} |")
    if scorings:
        lines += ["", "Every scoring on the same trained models (successes mean ± sd / max "
                  "over seeds; runs ≥ v_γ):", "",
                  f"| {name} | " + " | ".join(scorings) + " |",
                  "|---|" + "---|" * len(scorings)]
        for lv in levels:
            sel = [r for r in table if r[name] == lv]
            cells = []
            for sc in scorings:
                got = [r[f"successes_{sc}"] for r in sel]
                over = sum(r[f"successes_{sc}"] >= r["count_bound"] for r in sel)
                sd = float(np.std(got, ddof=1)) if len(got) > 1 else 0.0
                cells.append(f"{np.mean(got):.2f} ± {sd:.2f} / {max(got)} ({over})")
            lines.append(f"| {level_text(lv)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def text_table(result: Any) -> str:
    """The tables of :func:`markdown` without its title and legend (what the command prints)."""
    return "\n".join(markdown(result).splitlines()[_HEADER:])


def plot_attack(path: str | Path, result: Any) -> bool:
    """``attack.png``: the bound v_γ (capped at n), the mean measured successes and the
    baseline over the finite ε of the sweep (log axis). Returns False (nothing written) when
    no level has a finite ε."""
    table = rows(result)
    name = result.level_name
    agg = []
    for lv in sorted({r[name] for r in table}):
        sel = [r for r in table if r[name] == lv]
        if math.isfinite(sel[0]["epsilon"]):
            agg.append((sel[0]["epsilon"], np.mean([r["successes"] for r in sel]),
                        sel[0]["baseline"], min(r["count_bound"] for r in sel)))
    if not agg:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps, succ, base, bound = (np.array(v, dtype=float) for v in zip(*agg, strict=True))
    n = table[0]["num_targets"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(eps, np.minimum(bound, n), "o-", label="bound v_γ (upper bound)")
    ax.plot(eps, succ, "s-", label="attack successes (measured, mean)")
    ax.plot(eps, base, "^--", label="baseline Σ p_i (expected)")
    ax.axhline(n, color="gray", ls=":", lw=1, label=f"n = {n}")
    ax.set_xscale("log")
    ax.set_xlabel("ε (at δ)")
    ax.set_ylabel("targets attacked")
    ax.set_title(result.title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return True


def write_summary(run: RunDir, result: Any) -> None:
    """``table.json`` (:func:`rows`), ``summary.md`` (:func:`markdown`) and ``attack.png``
    (:func:`plot_attack`) of a finished sweep, into its run folder."""
    run.write_json("table.json", rows(result))
    run.write_text("summary.md", markdown(result))
    plot_attack(run.path / "attack.png", result)
