"""The trends table, the grid and the verdicts of docs/renyi.md ("The paper's trends and the grid"),
computed from the committed canary scores (``results/scores/renyi_grid``, made by
``renyi_grid_scores.py``) and nothing else.

Per configuration (|D⁻|, C, ε): runs per world and where they ran; the accountant's ε at δ = 1e−5
and ε_α; the score-based ε bounds of ``renyi.epsilon_lower_bounds`` (Clopper–Pearson threshold,
GDP, one-run, f-DP one-run); [31]'s ε_emp (Annamalai & De Cristofaro, arXiv 2405.14106: a
threshold chosen on all scores, one-sided 90% Clopper–Pearson rates each, per audit of 100 runs
per world; mean ± SE over the audits) and Kim et al.'s conversion of it to RDP units; the DV point
estimate ± SE and its 95% lower bound (``dpsgd.audit_dpsgd``, our critic) and the threshold-RDP
bound at α ∈ {1.25, 1.5, 2, 3}. Then the three claims of the Rényi paper, each decided by a
two-standard-error rule on the numbers printed. Deterministic: every key is fixed, so the same
scores print the same tables (``tests/test_renyi_tables.py`` checks docs/renyi.md against it).

    python notebooks/scripts/renyi_tables.py                 # print
    python notebooks/scripts/renyi_tables.py --write-doc     # with the critics, into the doc
    python notebooks/scripts/renyi_tables.py --critics       # + ours vs the paper's critics
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import warnings
from pathlib import Path

import numpy as np

from jaxaudit._xla_flags import with_cpu_flags

# The jaxaudit command's XLA:CPU configuration (YNNPACK fusions off), as tests/conftest.py sets
# it, before JAX starts: the DV critics' float32 training rounds with the flags, and with the
# same flags the block this script writes is what tests/test_renyi_tables.py recomputes, to
# the bit, on the machine that wrote it (one critic estimate differed by 8% without them).
os.environ["XLA_FLAGS"] = with_cpu_flags(os.environ.get("XLA_FLAGS", ""), None)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "renyi.md"
BEGIN, END = "<!-- renyi-grid:begin -->", "<!-- renyi-grid:end -->"
ORDERS = (1.25, 1.5, 2.0, 3.0)
DELTA = 1e-5
BLOCK = 100          # [31]'s audits: 100 runs per world each
MIN_RUNS = 100       # a configuration enters the tables from one [31] audit on
#: One-run audits of DP-GD on MNIST at |D⁻| = 1,000, m = 1,000 canaries, ε = 10, C = 1 (the table of
#: docs/renyi.md "A one-run audit of DP-SGD", ``one_run_mnist.py``): one-run ε per canary kind.
ONE_RUN_D1000 = {"gradient": 2.47, "input": 0.00}
#: [31]'s published ε_emp (Annamalai & De Cristofaro, arXiv 2405.14106, MNIST, |D⁻| = 100, C = 1
#: unless named): by configuration.
PUBLISHED = {"d100_c1_eps1": 0.08, "d100_c1_eps2": 0.54, "d100_c1_eps4": 1.89,
             "d100_c1_eps10": 7.41, "d1000_c1_eps10": 7.21}


def _grid_module():
    spec = importlib.util.spec_from_file_location(
        "renyi_grid_scores", Path(__file__).with_name("renyi_grid_scores.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")


def _pm(mean: float, se: float, digits: int = 2) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.{digits}f}" if math.isnan(se) else f"{mean:.{digits}f} ± {se:.{digits}f}"


def audit_configuration(name: str, s: dict, config=None) -> dict:
    """Every number of one configuration's rows (fixed keys: deterministic)."""
    import jax

    from jaxaudit.accounting import RdpCurve, rdp_epsilons
    from jaxaudit.dpsgd import audit_dpsgd
    from jaxaudit.dpsgd.scores import accountant_epsilon
    from jaxaudit.renyi import epsilon_lower_bounds, gdp_epsilon_lower_bound
    from jaxaudit.renyi.reconcile import dp_to_rdp_gaussian

    in_s, out_s = s["in"].astype(np.float64), s["out"].astype(np.float64)
    sigma = s["sigma"]
    acc = dict(noise_multiplier=sigma, sampling_rate=1.0, steps=s["config"]["steps"])
    orders = np.asarray(ORDERS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = RdpCurve(orders, rdp_epsilons(orders=orders, **acc), "add_remove")
        records = audit_dpsgd(jax.random.key(0), in_s, out_s, curve, confidence=0.95,
                              delta=DELTA, critic=config).per_order()
        bounds = epsilon_lower_bounds(jax.random.key(0), in_s, out_s, delta=DELTA)
    audits = min(in_s.size, out_s.size) // BLOCK
    emp, emp_rdp = [], []
    for b in range(audits):
        sl = slice(b * BLOCK, (b + 1) * BLOCK)
        e = float(gdp_epsilon_lower_bound(None, in_s[sl], out_s[sl], DELTA, confidence=0.9,
                                          selection="all").epsilon)
        emp.append(e)
        emp_rdp.append(np.asarray(dp_to_rdp_gaussian(e, DELTA, orders), np.float64))
    emp_rdp_arr = np.asarray(emp_rdp).reshape(audits, orders.size)
    return dict(
        name=name, runs=int(in_s.size), device=s["device"], sigma=sigma, cfg=s["config"],
        accountant=float(accountant_epsilon(**acc, delta=DELTA, accountant="pld")),
        cp=float(bounds.clopper_pearson), gdp_mu=float(bounds.mu),
        gdp_eps=float(bounds.gdp_epsilon), one_run=float(bounds.one_run),
        fdp_one_run=float(bounds.fdp_one_run), audits=audits, emp=_mean_se(emp),
        emp_rdp=[_mean_se(emp_rdp_arr[:, i]) for i in range(orders.size)],
        orders=[dict(order=r.order, accountant=r.accountant, dv=(r.dv_point, r.dv_se),
                     dv_lower=r.dv_lower, threshold=r.threshold_lower, gdp=r.gdp_lower)
                for r in records])


def trends_table(rows: list[dict]) -> str:
    head = ("| configuration | \\|D⁻\\| | C | ε (accountant, PLD) | σ | runs per world | ran on | "
            "CP ε (bound) | [31] ε_emp, mean ± SE (audits) | published [31] | GDP μ (bound) / ε "
            "(estimate) | one-run ε (bound) | f-DP one-run ε (estimate) |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        c = r["cfg"]
        pub = PUBLISHED.get(r["name"])
        lines.append(
            f"| {r['name']} | {c['size']} | {c['clip']:g} | {r['accountant']:.2f} | "
            f"{r['sigma']:.3f} | {r['runs']} | {r['device']} | {r['cp']:.2f} | "
            f"{_pm(*r['emp'])} ({r['audits']}) | {'—' if pub is None else f'{pub:.2f}'} | "
            f"{r['gdp_mu']:.2f} / {r['gdp_eps']:.2f} | {r['one_run']:.2f} | "
            f"{r['fdp_one_run']:.2f} |")
    return "\n".join(lines)


def grid_table(rows: list[dict]) -> str:
    head = ("| configuration | α | accountant ε_α (upper bound) | DV point ± SE (estimate) | "
            "DV lower (bound) | threshold-RDP (bound) | GDP α μ_lo²/2 (bound if Gaussian) | "
            "[31] in RDP units, mean ± SE (bound if Gaussian, per audit) |")
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        for i, o in enumerate(r["orders"]):
            lines.append(
                f"| {r['name']} | {o['order']:g} | {o['accountant']:.3f} | "
                f"{_pm(*o['dv'], digits=3)} | {o['dv_lower']:.3f} | {o['threshold']:.3f} | "
                f"{o['gdp']:.3f} | {_pm(*r['emp_rdp'][i], digits=3)} |")
    return "\n".join(lines)


def estimate_checks(rows: list[dict]) -> str:
    """Every row where a number contradicts what is known: a bound above the accountant's ε_α
    (an upper bound on the true D_α: a soundness defect), a DV point estimate above it, and a DV
    point estimate falling as α grows (D_α is non-decreasing in α; van Erven & Harremoës,
    arXiv 1206.2459, Thm 3) by more than two standard errors of the difference (the two SEs
    combined as if independent). docs/renyi.md explains the estimates that are listed."""
    above, falls, bound_above = [], [], []
    for r in rows:
        orders = r["orders"]
        for o in orders:
            for label in ("dv_lower", "threshold", "gdp"):
                if o[label] > o["accountant"]:
                    bound_above.append(f"{r['name']} α = {o['order']:g} {label} "
                                       f"{o[label]:.3f} > {o['accountant']:.3f}")
            p, se = o["dv"]
            if not math.isnan(p) and p > o["accountant"]:
                z = (p - o["accountant"]) / se if se > 0 else float("inf")
                above.append(f"{r['name']} α = {o['order']:g}: {_pm(p, se, 3)} against "
                             f"{o['accountant']:.3f} ({z:.1f} SE above)")
        for a, b in zip(orders, orders[1:]):
            (pa, sa), (pb, sb) = a["dv"], b["dv"]
            if math.isnan(pa) or math.isnan(pb):
                continue
            se = math.hypot(sa, sb)
            if pa - pb > 2 * se:
                falls.append(f"{r['name']} α = {a['order']:g} → {b['order']:g}: "
                             f"{pa:.3f} → {pb:.3f} ({(pa - pb) / se:.1f} SE)")
    return "\n".join([
        "**Checks against the accountant and the order** (the DV point is an estimate; the "
        "DV lower, threshold-RDP and GDP columns are bounds):",
        "- a bound above the accountant's ε_α (would be a soundness defect): "
        + ("; ".join(bound_above) or "none") + ".",
        "- a DV point estimate above the accountant's ε_α: " + ("; ".join(above) or "none") + ".",
        "- a DV point estimate falling in α by more than 2 SE: " + ("; ".join(falls) or "none") + "."])


def _decide(diff: float, se: float) -> str:
    if math.isnan(diff) or math.isnan(se):
        return "too few runs to decide"
    if diff > 2 * se:
        return "holds"
    if diff < -2 * se:
        return "does not hold"
    return "not resolved at this many runs"


#: The verdict of a comparison resting on a DV point estimate above the accountant's ε_α (an
#: upper bound on the true D_α): the estimate is known to be too high, so it decides nothing.
ABOVE = "not evidence (the DV point is above the accountant's ε_α)"


def verdicts(rows: list[dict]) -> str:
    by = {r["name"]: r for r in rows}
    out = []

    def emp(name):
        return by[name]["emp"] if name in by else (float("nan"), float("nan"))

    def dv2(name):
        if name not in by:
            return float("nan"), float("nan")
        o = [x for x in by[name]["orders"] if x["order"] == 2.0][0]
        return o["dv"]

    def above2(*names):
        """Whether the DV point at α = 2 of any of ``names`` is above its accountant."""
        return any(o["dv"][0] > o["accountant"] for n in names if n in by
                   for o in by[n]["orders"] if o["order"] == 2.0)

    # 1. a smaller training set makes the audit tighter: |D⁻| = 100 against 1,000 at C = 1, ε = 10
    out.append("**Claim 1: a smaller training set makes the audit tighter** (|D⁻| = 100 against "
               "1,000; difference ± its SE, two SEs decide):")
    for c in ("1", "0.1", "10"):
        small, large = f"d100_c{c}_eps10", f"d1000_c{c}_eps10"
        (a, sa), (b, sb) = emp(small), emp(large)
        (p, sp), (q, sq) = dv2(small), dv2(large)
        d1, s1 = a - b, math.hypot(sa, sb)
        d2, s2 = p - q, math.hypot(sp, sq)
        out.append(f"- C = {c}: [31] ε_emp {_pm(a, sa)} vs {_pm(b, sb)}, difference "
                   f"{_pm(d1, s1)}: {_decide(d1, s1)}; DV point at α = 2 {_pm(p, sp, 3)} vs "
                   f"{_pm(q, sq, 3)}, difference {_pm(d2, s2, 3)}: "
                   f"{ABOVE if above2(small, large) else _decide(d2, s2)}.")
    # 2. a larger clipping norm makes the canary less detectable
    out.append("")
    out.append("**Claim 2: a larger clipping norm makes the canary less detectable** (C = 0.1 "
               "against 1 against 10 at ε = 10):")
    for size in ("100", "1000"):
        names = [f"d{size}_c{c}_eps10" for c in ("0.1", "1", "10")]
        e = [emp(n) for n in names]
        parts = []
        for (lo, hi), (x, y) in zip(((0, 1), (1, 2)), (("0.1", "1"), ("1", "10")), strict=True):
            d, s = e[lo][0] - e[hi][0], math.hypot(e[lo][1], e[hi][1])
            parts.append(f"C = {x} minus C = {y}: {_pm(d, s)}, {_decide(d, s)}")
        out.append(f"- |D⁻| = {size}: [31] ε_emp " + ", ".join(_pm(*v) for v in e) + "; "
                   + "; ".join(parts) + ".")
    # 3. DV gives higher lower bounds than [31], most at α ∈ (1, 2] and small ε
    out.append("")
    out.append("**Claim 3: the DV auditor gives higher lower bounds than [31]** (|D⁻| = 100, "
               "C = 1; [31] is the mean over audits of 100 runs per world of Kim et al.'s "
               "conversion α μ(ε_emp, δ)²/2 ± its SE; first our DV point estimate ± SE against "
               "it, then our DV 95% lower bound on all runs against it):")
    for eps in ("1", "2", "4", "10", "17.85"):
        name = f"d100_c1_eps{eps}"
        if name not in by:
            out.append(f"- ε = {eps}: no scores yet.")
            continue
        r = by[name]
        parts = []
        for i, o in enumerate(r["orders"]):
            m, s = r["emp_rdp"][i]
            (p, sp), low = o["dv"], o["dv_lower"]
            d_point, s_point = p - m, math.hypot(sp, s)
            point_verdict = ABOVE if p > o["accountant"] else _decide(d_point, s_point)
            parts.append(f"α = {o['order']:g}: [31] {_pm(m, s, 3)}; DV point {_pm(p, sp, 3)}, "
                         f"{point_verdict}; DV lower {low:.3f}, "
                         f"{_decide(low - m, s)}")
        out.append(f"- ε = {eps}: " + "; ".join(parts) + ".")
    # the one-run audit (one training, m canaries) against the many-run audit at |D⁻| = 1,000
    out.append("")
    name = "d1000_c1_eps10"
    many = (f"on {by[name]['runs']} runs per world: Clopper–Pearson ε {by[name]['cp']:.2f}, "
            f"[31] ε_emp {_pm(*by[name]['emp'])}, one-run ε on the many-run scores "
            f"{by[name]['one_run']:.2f}" if name in by else "no scores yet")
    out.append("**One run against many at |D⁻| = 1,000, C = 1, ε = 10** (lower bounds on ε at "
               "δ = 1e−5): the one-run audit of one training with m = 1,000 canaries (the "
               f"table of \"A one-run audit of DP-SGD\" below) gives {ONE_RUN_D1000['gradient']:.2f} "
               f"with gradient canaries and {ONE_RUN_D1000['input']:.2f} with input canaries; "
               f"the many-run audit {many}.")
    return "\n".join(out)


def critic_table(scores: dict, names: list[str]) -> str:
    from jaxaudit.renyi import PAPER_CRITIC_CONFIG, CriticConfig
    from jaxaudit.renyi.training import PAPER_BOUNDED_CRITIC_CONFIG

    critics = {"ours": CriticConfig(), "paper": PAPER_CRITIC_CONFIG,
               "paper_m2": PAPER_BOUNDED_CRITIC_CONFIG}
    lines = ["| configuration | runs per world | critic | α | DV point ± SE (estimate) | "
             "DV lower (bound) | accountant ε_α |", "|" + "---|" * 7]
    for name in names:
        if name not in scores:
            continue
        for label, cfg in critics.items():
            r = audit_configuration(name, scores[name], config=cfg)
            for o in r["orders"]:
                lines.append(f"| {name} | {r['runs']} | {label} | {o['order']:g} | "
                             f"{_pm(*o['dv'], digits=3)} | {o['dv_lower']:.3f} | "
                             f"{o['accountant']:.3f} |")
    return "\n".join(lines)


def render(scores: dict, with_critics: bool = False) -> str:
    grid = _grid_module()
    names = [n for n in grid.settings() if n in scores and scores[n]["runs"] >= MIN_RUNS]
    rows = [audit_configuration(n, scores[n]) for n in names]
    missing = [n for n in grid.settings() if n not in names]
    parts = [
        "Generated by `python notebooks/scripts/renyi_tables.py --write-doc` from the committed "
        "scores in `results/scores/renyi_grid/` (their manifest names the command, the "
        "configuration and the SHA-256 of each file); `tests/test_renyi_tables.py` checks that "
        "this block is what the script prints.",
        "",
        "**Trends** (δ = 1e−5, confidence 0.95; bounds are lower bounds unless named):",
        "",
        trends_table(rows),
        "",
        "**The grid in RDP units** (ε_α, Mironov's units):",
        "",
        grid_table(rows),
        "",
        estimate_checks(rows),
        "",
        verdicts(rows),
    ]
    if missing:
        parts += ["", "Not in the tables yet (fewer than "
                  f"{MIN_RUNS} runs per world committed): " + ", ".join(missing) + "."]
    if with_critics:
        parts += ["", "**Our critic against the paper's on canary scores:**", "",
                  critic_table(scores, ["d100_c1_eps10", "d100_c1_eps4", "d100_c1_eps1"])]
    return "\n".join(parts) + "\n"


def replace_block(text: str, block: str) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"{DOC}: markers {BEGIN} … {END} not found")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + block + END + tail


def doc_block(text: str) -> str:
    """The generated block of the doc (between the markers)."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scores", default=None, help="scores folder (default: the committed one)")
    p.add_argument("--write-doc", action="store_true", help="replace the block in docs/renyi.md")
    p.add_argument("--critics", action="store_true", help="add ours vs the paper's critics")
    args = p.parse_args(argv)
    grid = _grid_module()
    scores = grid.load_scores(args.scores or grid.DEFAULT_OUT)
    block = render(scores, with_critics=args.critics or args.write_doc)
    print(block, end="")
    if args.write_doc:
        DOC.write_text(replace_block(DOC.read_text(), block))


if __name__ == "__main__":
    main()
