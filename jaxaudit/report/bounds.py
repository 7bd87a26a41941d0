"""Rendering of a bounds result (:func:`jaxaudit.pipelines.run_bounds`): the JSON of
``jaxaudit bounds --json``, the printed summary, a markdown table and the tail plot.

The functions take the result duck-typed (``config``, ``prior``, ``priors``, ``summary``,
``epsilon``, ``tail_v``, ``tail``), so this module imports no numerics. Numbers are shown to 6
significant digits as computed (the bounds are already rounded outward by the library where it
matters: v_γ is an integer, the inverse ε is rounded down, and printed rounded down too, so that
the printed ε still meets its target).
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from jaxaudit.report.figures import save_figure
from jaxaudit.runs.files import atomic_write_bytes, dumps_strict

__all__ = ["as_json", "markdown", "plot_tail", "text", "write_json"]

_BASELINE_LABELS = {"kgk_plus": "KGK+ 1 − f(κ)", "balle_rero": "Balle et al. ReRo",
                    "balle_rero_zcdp": "Balle et al. ReRo (zCDP ρ = μ²/2)"}


_TIGHTEST = {"ours": "ours", "mmc": "MMC", "steinke": "Steinke et al.",
             "kgk_plus": "KGK+ by Markov's inequality"}


def _inverse_question(result: Any) -> str:
    c = result.config
    if c.max_success is not None:
        return f"every target's posterior success β(ε, p_i) ≤ {c.max_success:g}"
    dp = f"(ε, {c.delta:g})-DP" if c.delta else "ε-DP"
    return (f"count bound v_γ ≤ {c.max_count} under {dp} (γ = {c.gamma:g}: with probability "
            f"≥ {1 - c.gamma:g} fewer than {c.max_count} targets attacked)")


def _rounded_down(x: float, digits: int = 6) -> str:
    """x to ``digits`` significant digits, rounded toward −∞ (``f"{x:.6g}"`` rounds to nearest):
    a printed largest protecting ε is never above the computed one, so it still meets the
    target it is printed for."""
    if not math.isfinite(x) or x == 0:
        return f"{x:.{digits}g}"
    exact = Decimal(x)  # the float's exact binary value
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return f"{float(exact.quantize(step, rounding=ROUND_FLOOR)):.{digits}g}"


def _why_no_epsilon(result: Any) -> str:
    """Why no ε ≥ 0 answers the inverse question (its ε is −inf)."""
    c, n = result.config, result.priors.size
    if c.max_success is not None:
        return "no ε ≥ 0 meets the target: even ε = 0 leaves the prior above it"
    if n * c.delta >= c.gamma:
        return (f"no ε meets the target: n·δ = {n * c.delta:g} ≥ γ = {c.gamma:g}, the (ε, δ) "
                "bound's additive n·δ alone reaches γ; lower delta or raise gamma")
    return (f"no ε ≥ 0 meets the target: even at ε = 0, Pr[≥ {c.max_count} successes from the "
            "prior alone] + n·δ > γ")


def as_json(result: Any) -> dict:
    """The result as the JSON object of ``jaxaudit bounds --json``: ``privacy``, ``prior``, the
    fields of :class:`~jaxaudit.bounds.BoundsSummary`, ``per_target`` (when reported) and
    ``baselines``; for the inverse question ``prior``, ``targets``, the question's field
    (``max_success`` or ``max_count`` with ``gamma`` and ``delta``) and ``epsilon``."""
    if result.summary is None:
        c = result.config
        question = ({"max_success": c.max_success} if c.max_success is not None else
                    {"max_count": c.max_count, "gamma": c.gamma, "delta": c.delta})
        return {"prior": result.prior, "targets": int(result.priors.size), **question,
                "epsilon": result.epsilon}
    summary = result.summary._asdict()
    per_target, baselines = summary.pop("per_target"), summary.pop("baselines")
    out = {"privacy": summary.pop("privacy"), "prior": result.prior, **summary}
    if per_target is not None:
        out["per_target"] = per_target._asdict()
    out["baselines"] = baselines
    return out


def write_json(path: str | Path, result: Any) -> Path:
    """Write :func:`as_json` as strict JSON (non-finite numbers as ``null``), atomically."""
    path = Path(path)
    atomic_write_bytes(path, (dumps_strict(as_json(result), indent=2) + "\n").encode())
    return path


def _summary_lines(r: dict) -> list[str]:
    n, gamma, v_gamma = r["targets"], r["gamma"], r["count_bound"]
    vac = "  (vacuous: no v ≤ n qualifies)" if r["vacuous"] else ""
    lines = [f"jaxaudit bounds: {r['privacy']}; {r['prior']}; n = {n} targets; γ = {gamma:g}",
             f"  count bound v_γ           : {v_gamma}{vac}  "
             f"(Pr[≥ v_γ targets attacked] ≤ {gamma:g})",
             f"  baseline successes Σ p_i  : {r['expected_baseline_successes']:.6g}",
             f"  aggregate gain            : {r['aggregate_gain']:.6g}",
             f"  single target (κ = {r['max_prior']:.6g}):"]
    pt = r.get("per_target")
    if pt is not None and math.isclose(r["single_target_bound"], pt["beta"], rel_tol=1e-9):
        # pure ε-DP: the single-target bound is β(ε, κ) itself; one row with its gain
        label = f"ours β(ε = {pt['epsilon']:g}, κ)"
        lines.append(f"    {label:<24}: {pt['beta']:.6g}  (gain {pt['gain']:.6g}, ratio "
                     f"{pt['ratio']:.6g})")
    else:
        lines.append(f"    {'ours':<24}: {r['single_target_bound']:.6g}")
        if pt is not None:
            label = f"β(ε = {pt['epsilon']:g}, κ)"
            lines.append(f"    {label:<24}: {pt['beta']:.6g}  (gain {pt['gain']:.6g}, ratio "
                         f"{pt['ratio']:.6g})")
    baselines = r["baselines"]
    lines += [f"    {label:<24}: {baselines[key]:.6g}"
              for key, label in _BASELINE_LABELS.items() if key in baselines]
    if "mmc_threshold" in baselines:
        lines.append(f"  MMC one-run threshold     : {baselines['mmc_threshold']} correct")
    if "steinke_threshold" in baselines:
        lines.append(f"  Steinke et al. threshold  : {baselines['steinke_threshold']} correct")
    if "tightest_bound" in r:
        lines.append(f"  tightest valid count bound: {r['tightest_bound']}  "
                     f"({_TIGHTEST.get(r['tightest'], r['tightest'])})")
    return lines


def text(result: Any, *, quiet: bool = False) -> str:
    """What ``jaxaudit bounds`` prints: the summary table (v_γ, Σ p_i, the aggregate gain, the
    single-target bounds beside prior work, the one-run thresholds), or the inverse question's
    ε; with ``quiet`` only v_γ (or only ε)."""
    if result.summary is None:
        eps = result.epsilon
        if quiet:
            return _rounded_down(eps)
        lines = [f"jaxaudit bounds: {result.prior}; n = {result.priors.size} targets",
                 f"  largest ε with {_inverse_question(result)}: {_rounded_down(eps)}"]
        if eps == -math.inf:
            lines.append(f"  ({_why_no_epsilon(result)})")
        elif eps == math.inf:
            lines.append("  (every ε meets the target)")
        return "\n".join(lines)
    if quiet:
        return str(result.summary.count_bound)
    return "\n".join(_summary_lines(as_json(result)))


def _md(text_: str) -> str:
    return text_.replace("|", "\\|")


def markdown(result: Any) -> str:
    """A markdown summary: the bounds (or the inverse ε) as a two-column table."""
    if result.summary is None:
        rows = [("prior", result.prior), ("targets", result.priors.size),
                (f"largest ε with {_inverse_question(result)}", _rounded_down(result.epsilon))]
        title = "Bounds: the largest ε"
    else:
        r = as_json(result)
        rows = [("privacy", r["privacy"]), ("prior", r["prior"]), ("targets n", r["targets"]),
                ("γ", f"{r['gamma']:g}"),
                ("count bound v_γ (upper bound)", r["count_bound"]
                 if not r["vacuous"] else f"{r['count_bound']} (vacuous)"),
                ("baseline successes Σ p_i", f"{r['expected_baseline_successes']:.6g}"),
                ("aggregate gain (upper bound)", f"{r['aggregate_gain']:.6g}"),
                (f"single target, κ = {r['max_prior']:.6g} (upper bound)",
                 f"{r['single_target_bound']:.6g}")]
        if r.get("per_target") is not None:
            pt = r["per_target"]
            rows.append((f"β(ε = {pt['epsilon']:g}, κ) (upper bound)", f"{pt['beta']:.6g}"))
        rows += [(label, f"{r['baselines'][key]:.6g}") for key, label in _BASELINE_LABELS.items()
                 if key in r["baselines"]]
        for key, label in (("mmc_threshold", "MMC one-run threshold"),
                           ("steinke_threshold", "Steinke et al. one-run threshold")):
            if key in r["baselines"]:
                rows.append((label, f"{r['baselines'][key]} correct"))
        if "tightest_bound" in r:
            rows.append(("tightest valid count bound",
                         f"{r['tightest_bound']} ({_TIGHTEST.get(r['tightest'], r['tightest'])})"))
        title = "Bounds on attack success (Swanberg et al., arXiv:2507.08158)"
    body = "\n".join(f"| {_md(str(k))} | {_md(str(v))} |" for k, v in rows)
    return f"# {title}\n\n| quantity | value |\n|---|---|\n{body}\n"


def plot_tail(path: str | Path, result: Any) -> Path:
    """Save the tail bound Pr[L ≥ v] against v (log scale) with γ and v_γ marked, as a PNG
    (matplotlib, imported here; written atomically). Needs ``result.tail``
    (``BoundsConfig(tail_curve=True)``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if result.tail is None:
        raise ValueError("result holds no tail curve: run it with tail_curve=True")
    s = result.summary
    vs, tail = np.asarray(result.tail_v), np.asarray(result.tail)
    fig, ax = plt.subplots(figsize=(6, 4))
    positive = tail > 0
    ax.semilogy(vs[positive], tail[positive], label="bound on Pr[L ≥ v]")
    ax.axhline(s.gamma, color="gray", ls=":", label=f"γ = {s.gamma:g}")
    if s.count_bound <= s.targets:
        ax.axvline(s.count_bound, color="C3", ls="--", label=f"v_γ = {s.count_bound}")
    ax.set_xlabel("v (targets attacked successfully)")
    ax.set_ylabel("upper bound")
    ax.set_title(f"{s.privacy}; {result.prior}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    path = save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
