"""Rendering of the Rényi/[31] audit (:func:`jaxaudit.pipelines.run_rdp`,
:func:`jaxaudit.pipelines.run_scores_audit`): the printed tables, ``summary.md``, the JSON tables
and the ε_α-vs-α figure of an rdp run folder.

Everything here takes plain rows (dicts of numbers, as :func:`jaxaudit.pipelines.rdp.audit_rows`
makes them) or a duck-typed result with the fields of :class:`jaxaudit.pipelines.RdpResult`;
nothing is computed here but formatting. Printed bounds are rounded outward (a lower bound
rounded down, an upper bound up, an estimate to nearest), so a printed bound still holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from jaxaudit.report.figures import save_figure
from jaxaudit.runs.files import dumps_strict

__all__ = ["RAISED", "epsilon_table", "markdown", "plot_audit", "records_table",
           "score_bounds_rows", "score_bounds_table", "summary_markdown", "text_table",
           "write_results"]

#: The marker of a DV estimate raised to the best valid lower bound, in every table.
RAISED = "↑bound"


def _outward(value: float, digits: int, direction: str) -> float:
    """``value`` rounded to ``digits`` decimals downwards (a lower bound: what is printed still
    holds), upwards (an upper bound) or to nearest (an estimate); exact decimal arithmetic."""
    if direction == "nearest" or not math.isfinite(value):
        return value
    rounding = ROUND_FLOOR if direction == "down" else ROUND_CEILING
    return float(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=rounding))


def _num(value: float | None, width: int, digits: int = 4, direction: str = "nearest") -> str:
    """A number of the text tables: lower bounds printed rounded down, upper bounds up (so the
    printed value is still a bound), estimates to nearest; None/NaN as n/a."""
    if value is None or not math.isfinite(value):
        return f"{'inf' if value is not None and value > 0 else 'n/a':>{width}}"
    return f"{_outward(value, digits, direction):{width}.{digits}f}"


def _md_num(value: float | None, direction: str = "nearest") -> str:
    """A number of the markdown tables (4 decimals; bounds rounded outward, see :func:`_num`)."""
    if value is None or (not math.isfinite(value) and value != math.inf):
        return "n/a"
    return "∞" if value == math.inf else f"{_outward(value, 4, direction):.4f}"


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def epsilon_table(records: Sequence[Any], *, accountant_epsilon: float, accountant: str,
                  clopper_pearson: float, delta: float) -> list[dict]:
    """ε at δ, one row per statement: the accountant's upper bound and the (ε, δ) lower bounds.

    Rows: ``accountant (<name>)`` (upper bound), ``GDP baseline`` (Nasr et al.'s threshold
    test, arXiv 2302.07956: ε at δ of μ-GDP at μ_lo, read from ``records[0]``; μ_lo is a lower
    bound, the ε an estimate, a lower bound only when the privacy profile is Gaussian; its
    ``kind`` says so with μ_lo on the same line), ``Clopper-Pearson threshold test`` (Jagielski
    et al., arXiv 2006.07709; rigorous). The DV and threshold RDP bounds have no (ε, δ) form
    (converting an RDP *lower* bound to (ε, δ) is not valid), so they are not here.
    """
    gdp = records[0].gdp_epsilon if records else float("nan")
    mu = records[0].mu if records else float("nan")
    return [
        {"statement": f"accountant ({accountant})", "kind": "upper bound", "delta": delta,
         "epsilon": accountant_epsilon},
        {"statement": "GDP baseline",
         "kind": f"estimate: ε of μ-GDP at μ = {_outward(mu, 4, 'down'):.4f}, a lower bound on "
                 "μ; ε is a bound only if the profile is Gaussian",
         "delta": delta, "epsilon": gdp},
        {"statement": "Clopper-Pearson threshold test", "kind": "lower bound", "delta": delta,
         "epsilon": clopper_pearson},
    ]


def score_bounds_rows(bounds: Any, *, delta: float) -> list[dict]:
    """The score-based ε lower bounds of :func:`jaxaudit.renyi.epsilon_lower_bounds` as rows.

    One row per method: ``method``, ``epsilon`` (ε at ``delta``), ``mu`` (the GDP parameter
    where the method gives one, else None), ``kind`` ("bound", or "estimate" for ε of μ-GDP,
    which is a bound only when the trade-off curve is Gaussian; the μ of those rows is a
    bound), ``tests`` (K, the number of thresholds tried, each at failure probability
    (1 − confidence)/K) and ``reference``.
    """
    k = int(bounds.num_tests)
    m = int(bounds.one_run_canaries)   # equal worlds: 2 min(n_in, n_out) of many-run scores
    f = float
    return [
        {"method": "Clopper-Pearson threshold test", "epsilon": f(bounds.clopper_pearson),
         "mu": None, "kind": "bound", "tests": 1, "delta": delta,
         "reference": "Jagielski et al., arXiv 2006.07709"},
        {"method": "GDP threshold test", "epsilon": f(bounds.gdp_epsilon),
         "mu": f(bounds.mu), "kind": "estimate (μ: bound)", "tests": 1, "delta": delta,
         "reference": "Nasr et al., arXiv 2302.07956 (the GDP baseline's test)"},
        {"method": "one-run audit", "epsilon": f(bounds.one_run), "mu": None,
         "kind": f"bound (m = {m} fair-coin canaries)", "tests": k, "delta": delta,
         "reference": "Steinke, Nasr, Jagielski, arXiv 2305.08846"},
        {"method": "f-DP one-run audit", "epsilon": f(bounds.fdp_one_run),
         "mu": f(bounds.fdp_one_run_mu), "kind": "estimate (μ: bound)", "tests": k,
         "delta": delta, "reference": "Mahloujifar, Melis, Chaudhuri, arXiv 2410.22235"},
    ]


def _direction(kind: str) -> str:
    return "down" if kind.startswith("bound") or kind.startswith("lower") else "nearest"


def score_bounds_table(rows: Sequence[dict]) -> str:
    """:func:`score_bounds_rows` as a fixed-width text table (method | ε at δ | μ | kind |
    tests K | reference); bounds rounded down."""
    head = f"{'method':<31} {'ε at δ':>9} {'μ':>8}  {'kind':<35} {'K':>3}  reference"
    lines = [head]
    for r in rows:
        mu = _num(r["mu"], 8, direction="down") if r["mu"] is not None else f"{'':>8}"
        lines.append(f"{r['method']:<31} {_num(r['epsilon'], 9, direction=_direction(r['kind']))} "
                     f"{mu}  {r['kind']:<35} {r['tests']:>3}  {r['reference']}")
    return "\n".join(lines)


def records_table(rows: Sequence[dict]) -> str:
    """The audit as a fixed-width text table, one row per order.

    Columns: α; the accountant's ε_α (upper bound); the DV estimate (the point estimate raised to
    the best valid lower bound, marked ``↑bound`` when raised); the DV point estimate and its
    sampling SE (spread of the held-out estimate given the critic; not its bias); the DV, GDP and
    threshold lower bounds; the violation flag. ``rows``: the dicts of
    :func:`jaxaudit.pipelines.rdp.audit_rows`.
    """
    head = (f"{'alpha':>6} {'accountant':>11} {'DV estimate':>16} {'DV point':>9} "
            f"{'± SE(samp.)':>11} {'DV lower':>9} {'GDP lower':>10} {'thr lower':>10} violation")
    lines = [head]
    for r in rows:
        mark = f" {RAISED}" if r["raised_to_bound"] else " " * (len(RAISED) + 1)
        lines.append(f"{r['order']:6.3g} {_num(r['accountant'], 11, direction='up')} "
                     f"{_num(r['dv_estimate'], 16 - len(mark))}{mark} {_num(r['dv_point'], 9)} "
                     f"{_num(r['dv_se'], 11)} {_num(r['dv_lower'], 9, direction='down')} "
                     f"{_num(r['gdp_lower'], 10, direction='down')} "
                     f"{_num(r['threshold_lower'], 10, direction='down')} "
                     f"{'YES' if r['violation'] else 'no'}")
    return "\n".join(lines)


def summary_markdown(rows: Sequence[dict], eps_rows: Sequence[dict], *, confidence: float,
                     title: str = "", score_rows: Sequence[dict] = ()) -> str:
    """The rdp tables in markdown, with what each column means (``summary.md``): ε_α per order,
    ε at δ and (when given) the score-based ε lower bounds of :func:`score_bounds_rows`."""
    level = f"{confidence:.0%}"
    table = _markdown(
        ["α", "accountant ε_α (upper)", "DV estimate", "DV point", "± SE (sampling)",
         f"DV lower ({level})", f"GDP lower ({level})", f"threshold lower ({level})", "violation"],
        [[f"{r['order']:g}", _md_num(r["accountant"], "up"),
          _md_num(r["dv_estimate"]) + (" (raised to bound)" if r["raised_to_bound"] else ""),
          _md_num(r["dv_point"]), _md_num(r["dv_se"]), _md_num(r["dv_lower"], "down"),
          _md_num(r["gdp_lower"], "down"), _md_num(r["threshold_lower"], "down"),
          "YES" if r["violation"] else "no"] for r in rows])
    eps = _markdown(["statement", "kind", "δ", "ε"],
                    [[e["statement"], e["kind"], f"{e['delta']:g}",
                      _md_num(e["epsilon"], "up" if e["kind"] == "upper bound"
                              else _direction(e["kind"]))]
                     for e in eps_rows])
    raised = [f"{r['order']:g}" for r in rows if r["raised_to_bound"]]
    notes = [
        f"# RDP audit{': ' + title if title else ''}", "",
        "## ε_α per order (RDP units)", "", table, "",
        "DV estimate: the Donsker–Varadhan point estimate raised to the best valid lower bound "
        "of its order (DV or threshold-test lower bound) when it falls below it; the DV estimate "
        "is biased downwards (a learned critic never exceeds the optimum), and an estimate below "
        "a bound that holds is too low. ± SE (sampling): the held-out standard error of the DV "
        "point estimate given the critic, i.e. its sampling spread only, not its bias.",
    ]
    if raised:
        notes += ["", f"Raised to bound at α = {', '.join(raised)}: there the DV point estimate "
                  "and its SE understate ε_α; read the estimate as at least the bound."]
    notes += ["", "## ε at δ", "", eps, ""]
    if score_rows:
        notes += ["## Score-based ε lower bounds (renyi.epsilon_lower_bounds)", "", _markdown(
            ["method", "ε at δ", "μ", "kind", "tests K", "reference"],
            [[s["method"], _md_num(s["epsilon"], _direction(s["kind"])),
              "" if s["mu"] is None else _md_num(s["mu"], "down"), s["kind"], str(s["tests"]),
              s["reference"]] for s in score_rows]), "",
            f"Each bound holds with probability ≥ {level} on its own. The one-run audits take "
            "the best of K thresholds, each at level (1 − confidence)/K. An estimate (ε of "
            "μ-GDP) is a bound only when the privacy profile is Gaussian; its μ is a bound.", ""]
    return "\n".join(notes)


def markdown(result: Any) -> str:
    """``summary.md`` of a result of :func:`jaxaudit.pipelines.run_rdp` or
    :func:`jaxaudit.pipelines.run_scores_audit`."""
    return summary_markdown(result.rows, result.epsilon_at_delta, confidence=result.confidence,
                            title=result.title, score_rows=result.score_bounds)


def text_table(result: Any) -> str:
    """What ``jaxaudit rdp`` prints: the header, the per-order table with how to read it, ε at
    δ, the score-based bounds, the violation warning and how many runs would make the DV bound
    informative."""
    level = f"{result.confidence:.0%}"
    lines = [result.header, records_table(result.rows),
             f"accountant: upper bound; DV/GDP/thr lower: lower confidence bounds at {level} "
             "each; DV point ± SE(samp.): an estimate and its held-out sampling standard error "
             "(the spread of the estimate given the critic, not its bias: the DV estimate is "
             "biased downwards); DV estimate: the DV point raised to the best valid lower bound "
             f"(DV or thr lower) when below it, marked {RAISED}"]
    raised = [f"{r['order']:g}" for r in result.rows if r["raised_to_bound"]]
    if raised:
        lines.append(f"note: at α = {', '.join(raised)} the DV point estimate is below a valid "
                     "lower bound, so it is too low; the DV estimate column shows the bound "
                     "instead")
    delta = result.epsilon_at_delta[0]["delta"] if result.epsilon_at_delta else float("nan")
    lines.append(f"ε at δ = {delta:g}:")
    for row in result.epsilon_at_delta:
        direction = "up" if row["kind"] == "upper bound" else _direction(row["kind"])
        lines.append(f"  {row['statement']:<32} {_num(row['epsilon'], 10, direction=direction)}"
                     f"  ({row['kind']})")
    if result.score_bounds:
        lines += [f"score-based ε lower bounds at δ = {delta:g} (each at {level}; "
                  "renyi.epsilon_lower_bounds):", score_bounds_table(result.score_bounds)]
    if result.violation:
        lines.append("WARNING: a lower bound exceeds the accountant (privacy violation or a bug)")
    lines.append("DV lower bound (Gaussian model of these scores): " + result.runs_needed_text)
    return "\n".join(lines)


def plot_audit(rows: Sequence[dict], path: str | Path, *, curve: tuple[Any, Any],
               title: str = "") -> str | Path:
    """ε_α vs α: the accountant's curve ``curve = (orders, ε_α)``, the DV point/lower bound and
    the GDP and threshold baselines of ``rows`` (:func:`records_table`'s rows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def nan(v: float | None) -> float:
        return float("nan") if v is None else float(v)

    orders = [r["order"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(list(curve[0]), [nan(v) for v in curve[1]], "k-", label="accountant ε_α")
    ax.plot(orders, [nan(r["dv_point"]) for r in rows], "o--", label="DV point estimate")
    ax.plot(orders, [max(nan(r["dv_lower"]), 0.0) for r in rows], "s-", label="DV lower bound")
    ax.plot(orders, [nan(r["gdp_lower"]) for r in rows], "^-", label="GDP baseline (α μ²/2)")
    ax.plot(orders, [nan(r["threshold_lower"]) for r in rows], "v-",
            label="threshold-test bound")
    ax.set_xlabel("order α")
    ax.set_ylabel("ε_α (RDP)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_results(rundir: Any, result: Any, *, curve: tuple[Any, Any]) -> None:
    """Write a result's files into its run folder (``rundir``: a :class:`jaxaudit.runs.RunDir`).

    Files (all JSON strict: a non-finite number is ``null``): ``results.json`` (``result.summary``),
    ``rdp_table.json`` (the per-order rows), ``epsilon_at_delta.json``, ``score_bounds.json``
    (the score-based bounds' rows, when computed), ``summary.md`` (:func:`markdown`) and
    ``rdp_audit.png`` (:func:`plot_audit`).
    """
    rundir.write_text("results.json", dumps_strict(result.summary, indent=2))
    rundir.write_text("rdp_table.json", dumps_strict(result.rows, indent=2))
    rundir.write_text("epsilon_at_delta.json", dumps_strict(result.epsilon_at_delta, indent=2))
    if result.score_bounds:
        rundir.write_text("score_bounds.json", dumps_strict(result.score_bounds, indent=2))
    rundir.write_text("summary.md", markdown(result))
    plot_audit(result.rows, Path(rundir.path) / "rdp_audit.png", curve=curve, title=result.title)


def one_run_text(result: Any) -> str:
    """A one-run audit (:func:`jaxaudit.pipelines.run_one_run`) as text: the accountant's ε
    beside every bound and estimate (the fields of ``OneRunResult``; docs/renyi.md)."""
    r = result
    rows = (("accountant ε at δ (RDP, upper bound)", r.accountant_epsilon),
            ("one-run ε (lower bound)", r.one_run),
            ("f-DP one-run μ (lower bound)", r.fdp_one_run_mu),
            ("f-DP one-run ε (estimate)", r.fdp_one_run),
            ("Clopper–Pearson ε (lower bound)", r.clopper_pearson),
            ("GDP μ (lower bound)", r.gdp_mu), ("GDP ε (estimate)", r.gdp_epsilon))
    head = (f"one-run audit: m = {r.included.size} canaries ({int(r.included.sum())} included), "
            f"σ = {r.noise_multiplier:.4g}, {r.minutes:.2f} min")
    note = [f"note: {r.note}"] if getattr(r, "note", "") else []
    return "\n".join([head, *note, *(f"  {label:<38} {value:.4g}" for label, value in rows)])
