"""What a BMP audit reports (the result of :func:`jaxaudit.pipelines.run_bmp`, read by its
fields): the per-node CSV tables, the markdown summary that ``jaxaudit bmp`` prints and writes
as ``summary.md``, the PNG plots, and the reading of another report for ``compare``."""

from __future__ import annotations

import csv
import io
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from jaxaudit._validation import check_input_path
from jaxaudit.report.figures import save_figure
from jaxaudit.runs.rundir import NOT_COVERED, RunDir, RunFolderWarning, read_manifest

__all__ = ["COMPARE_COLUMN", "csv_text", "markdown", "plot_bmp", "read_compare", "text_table",
           "write_csv", "write_report"]

#: The column of ``nodes.csv`` that ``compare`` plots against this run's.
COMPARE_COLUMN = "bayes_eps_r_q50"
#: How the summary names each attack (all leave-one-out over the shadow models).
ATTACK_LABELS = {"lira": "LOO-LiRA", "lira_offline": "LOO offline LiRA", "rmia": "LOO RMIA"}


def read_compare(path: str | Path) -> tuple[np.ndarray, str]:
    """The per-node posterior medians of ε_R of another bmp report folder (NaN where it has
    none) and its sampler's name.

    Raises:
      FileNotFoundError: no such folder, or no ``nodes.csv``/``manifest.json`` in it.
      ValueError: naming ``compare``, when its manifest or ``nodes.csv`` is not a bmp report's,
        or ``nodes.csv`` does not match its checksum record (edited); a ``nodes.csv`` no record
        covers is read with a :class:`~jaxaudit.runs.rundir.RunFolderWarning`.
    """
    check_input_path("compare", path, folder=True)
    for name in ("nodes.csv", "manifest.json"):
        if not (Path(path) / name).is_file():
            raise FileNotFoundError(f"compare folder {path} holds no {name}: not "
                                    "a `jaxaudit bmp` report folder")
    try:
        manifest = read_manifest(path)
    except ValueError as err:
        raise ValueError(f"compare: {err}") from None
    if manifest.get("kind") != "bmp":
        raise ValueError(f"compare {path} holds a {manifest.get('kind')!r} run, not a "
                         "`jaxaudit bmp` report")
    nodes = Path(path) / "nodes.csv"
    status = RunDir(Path(path), manifest).output_status(["nodes.csv"])["nodes.csv"]
    if status == NOT_COVERED:
        warnings.warn(f"compare: {nodes} is {NOT_COVERED}", RunFolderWarning, stacklevel=2)
    elif status:
        raise ValueError(f"compare: {nodes} is not usable: {status}")
    values = []
    try:
        with open(nodes, newline="") as f:
            reader = csv.DictReader(f)
            if COMPARE_COLUMN not in (reader.fieldnames or []):
                raise ValueError(f"compare: {nodes} has no {COMPARE_COLUMN} column: not a "
                                 "`jaxaudit bmp` nodes table")
            for line, row in enumerate(reader, start=2):
                cell = (row.get(COMPARE_COLUMN) or "").strip()
                try:
                    v = float(cell) if cell else math.nan
                except ValueError:
                    raise ValueError(f"compare: {nodes} line {line}: {COMPARE_COLUMN} "
                                     f"{cell!r} is not a number") from None
                if math.isinf(v) or v < 0:
                    raise ValueError(f"compare: {nodes} line {line}: {COMPARE_COLUMN} must "
                                     f"be a finite ε >= 0 or empty, got {cell!r}")
                values.append(v)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"compare: {nodes} cannot be read ({err})") from None
    if not values:
        raise ValueError(f"compare: {nodes} holds no nodes")
    label = str(manifest.get("config", {}).get("shadow", {}).get("sampler", "compare"))
    return np.asarray(values, dtype=float), label


def csv_text(table: dict[str, np.ndarray]) -> str:
    """A column table as CSV: integers as such, floats with 6 significant digits, NaN empty."""
    cols = list(table)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(cols)
    for i in range(len(table[cols[0]])):
        row: list[Any] = []
        for c in cols:
            v = table[c][i]
            if np.issubdtype(np.asarray(v).dtype, np.integer):
                row.append(int(v))
            else:
                row.append("" if np.isnan(v) else f"{float(v):.6g}")
        w.writerow(row)
    return buf.getvalue()


def write_csv(run_dir: Any, name: str, table: dict[str, np.ndarray]) -> None:
    """Write ``table`` as CSV into a run folder (``jaxaudit.runs.RunDir``), atomically."""
    run_dir.write_text(name, csv_text(table))


def markdown(result: Any) -> str:
    """The summary of a BMP audit (``summary.md``; what ``jaxaudit bmp`` prints): each finding
    labelled as a bound, an estimate or a Bayesian quantity."""
    cfg, s = result.config, result.summary
    sweep = cfg["shadow"]  # the stored shadow-model sweep (BmpConfig.shadow)
    model = cfg.get("derived", {}).get("model", sweep["model"])
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
    pair = lambda v: " / ".join(fmt(x) for x in (v or [None, None]))
    conf = f"{100 * s['confidence']:g}%"
    attack = ATTACK_LABELS.get(s.get("attack", "lira"), str(s.get("attack")))
    tpr = s.get("global_tpr_at_fpr") or {}
    lines = [
        f"# BMP audit: {sweep['dataset']} / {model} / {sweep['sampler']} "
        f"(ratio {sweep['ratio']}, {s['num_models']} models, edges {sweep['edge_access']})", "",
        "| finding | value | kind |", "|---|---|---|",
        f"| nodes (with counts) | {s['num_nodes']} ({s['nodes_with_estimate']}) | |",
        f"| global {attack} AUC | {fmt(s['global_attack_auc'])} | estimate |",
        f"| global {attack} TPR at 1% FPR | {fmt(tpr.get('0.01'))} | estimate |",
        f"| global {attack} TPR at 0.1% FPR | {fmt(tpr.get('0.001'))} | estimate |",
        f"| per-node AUC, 10th / 90th percentile | {pair(s['per_node_auc_p10_p90'])} | estimate |",
        f"| largest certified eps_R (eps_L) | {fmt(s['certified_eps_r_max'])} "
        f"({fmt(s['certified_eps_l_max'])}) | {conf} lower bound per node |",
        f"| nodes with certified eps_R > 0 | {fmt(s['fraction_certified_eps_r_positive'])} | "
        f"{conf} lower bound per node |",
        f"| median over nodes of the posterior median eps_R (eps_L) | "
        f"{fmt(s['bayes_eps_r_median'])} ({fmt(s['bayes_eps_l_median'])}) | Bayesian, "
        f"attack prior {s['attack_prior']} |",
        f"| 10th / 90th percentile of the posterior medians of eps_R | "
        f"{pair(s['bayes_eps_r_p10_p90'])} | Bayesian |",
        f"| median MP eps (symmetric fit) | {fmt(s['mp_eps_median'])} | Bayesian baseline |",
        f"| nodes with BMP-R median <= MP median | {fmt(s['fraction_bmp_r_below_mp'])} | |",
        f"| NUTS: R-hat <= 1.05 / min ESS / divergences | {fmt(s['fraction_rhat_le_1_05'])} / "
        f"{fmt(s['min_ess'])} / {s['divergences']} | diagnostics |", "",
        "Certified bounds hold (jointly per node, at the stated level) whatever the attack; "
        "posterior quantiles are Bayesian under the attack prior (upper tails are prior-driven "
        "with one operating point per node). Full table: nodes.csv; top 20: most_leaking.csv.",
        ""]
    return "\n".join(lines)


def text_table(result: Any) -> str:
    """What ``jaxaudit bmp`` prints: the markdown summary."""
    return markdown(result)


def plot_bmp(folder: str | Path, table: dict[str, np.ndarray],
         compare: tuple[np.ndarray, str] | None = None) -> list[Path]:
    """The PNG plots of a BMP audit into ``folder``: ε_R vs η, ε_R vs degree (posterior medians
    with 5–95% intervals beside the certified lower bounds), the histograms, BMP vs MP and (with
    ``compare``, from :func:`read_compare`) this run against another report."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    med_r, lo_r, hi_r = (table[f"bayes_eps_r_q{q}"] for q in ("50", "05", "95"))
    cert_r, med_mp = table["certified_eps_r_lower"], table["mp_eps_q50"]
    eta, degree = table["eta"], table["degree"]
    ok = ~np.isnan(med_r)
    figs = {}

    def with_intervals(ax: Any, x: np.ndarray) -> None:
        ax.errorbar(x[ok], med_r[ok], yerr=[med_r[ok] - lo_r[ok], hi_r[ok] - med_r[ok]],
                    fmt="o", ms=2, lw=0.3, alpha=0.3, label="posterior median, 5–95% (Bayesian)")
        ax.scatter(x[ok], cert_r[ok], s=3, c="C3", alpha=0.6, label="certified lower bound")
        ax.legend(fontsize=7)

    fig, ax = plt.subplots(figsize=(5.5, 4))
    with_intervals(ax, eta)
    ax.set(xlabel="prior inclusion probability η", ylabel="ε_R", title="ε_R vs prior")
    figs["eps_r_vs_eta.png"] = fig
    fig, ax = plt.subplots(figsize=(5.5, 4))
    with_intervals(ax, np.maximum(degree, 0.5).astype(float))
    ax.set(xscale="log", xlabel="degree", ylabel="ε_R", title="ε_R vs degree")
    figs["eps_r_vs_degree.png"] = fig
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.hist([table["bayes_eps_l_q50"][ok], med_r[ok], cert_r[ok]], bins=40,
            label=["ε_L posterior median", "ε_R posterior median", "ε_R certified bound"],
            alpha=0.7)
    ax.set(xlabel="ε", ylabel="nodes", title="per-node leakage")
    ax.legend(fontsize=7)
    figs["eps_hist.png"] = fig
    fig, ax = plt.subplots(figsize=(5, 4))
    mp_ok = ok & ~np.isnan(med_mp)
    if mp_ok.any():
        ax.scatter(med_mp[mp_ok], med_r[mp_ok], s=4, alpha=0.5)
        hi = float(max(med_mp[mp_ok].max(), med_r[mp_ok].max()))
        ax.plot([0, hi], [0, hi], "k--", lw=1)
    ax.set(xlabel="MP ε (symmetric fit), posterior median", ylabel="BMP-R ε_R, posterior median",
           title="BMP vs MP (Bayesian estimates)")
    figs["bmp_vs_mp.png"] = fig
    if compare is not None:
        other_r, other_label = compare
        fig, ax = plt.subplots(figsize=(5, 4))
        both = np.concatenate([med_r, other_r])
        top = float(both[np.isfinite(both)].max()) if np.isfinite(both).any() else 1.0
        bins = np.linspace(0, max(top, 1e-9), 40).tolist()
        ax.hist(other_r[~np.isnan(other_r)], bins=bins, alpha=0.6, label=other_label)
        ax.hist(med_r[ok], bins=bins, alpha=0.6, label="this run")
        ax.set(xlabel="posterior median ε_R (Bayesian)", ylabel="nodes",
               title="sampler comparison")
        ax.legend()
        figs["compare.png"] = fig
    written = []
    for name, fig in figs.items():
        fig.tight_layout()
        save_figure(fig, Path(folder) / name, dpi=110)
        plt.close(fig)
        written.append(Path(folder) / name)
    return written


def write_report(run_dir: Any, result: Any, top: np.ndarray,
                 compare: tuple[np.ndarray, str] | None = None) -> None:
    """Everything a BMP report folder holds besides its chunks: ``nodes.csv``,
    ``most_leaking.csv`` (the rows ``top``), ``summary.json``, the plots and ``summary.md``."""
    table = result.table
    write_csv(run_dir, "nodes.csv", table)
    write_csv(run_dir, "most_leaking.csv", {k: v[top] for k, v in table.items()})
    run_dir.write_json("summary.json", result.summary)
    plot_bmp(run_dir.path, table, compare)
    run_dir.write_text("summary.md", markdown(result))
