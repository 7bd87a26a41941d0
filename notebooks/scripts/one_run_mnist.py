"""One-run audits of DP-SGD on MNIST (docs/renyi.md, "A one-run audit of DP-SGD").

|D⁻| = 1000 (MNIST test split), the CNN from a random initialisation, full-batch DP-GD for T
steps, C = 1, σ calibrated by the RDP accountant; m canaries in ONE run for each row of
m ∈ {100, 1000} × ε ∈ {1, 4, 10} × kind ∈ {gradient, input}, through
:func:`jaxaudit.pipelines.run_one_run`. Rows already in ``--out`` (one JSON per row) are
skipped, so the script resumes; ``--only`` runs a subset (e.g. ``--only gradient:100:10``).
Writes ``table.md`` in ``--out`` with the minutes each row took.

    JAXAUDIT_DATA=/path/to/data nice -n 19 python notebooks/scripts/one_run_mnist.py \\
        --out runs/one_run --only gradient:100:10
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from jaxaudit.pipelines import OneRunAuditConfig, run_one_run
from jaxaudit.pipelines.one_run import RECIPE

ROWS = [(kind, m, eps) for kind in ("gradient", "input") for m in (100, 1000)
        for eps in (10.0, 4.0, 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="kind:m:epsilon rows")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--model", default="cnn")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = ROWS if args.only is None else [
        (k, int(m), float(e)) for k, m, e in (r.split(":") for r in args.only)]
    for kind, m, eps in rows:
        path = args.out / f"{kind}_m{m}_eps{eps:g}.json"
        if path.exists():
            continue
        config = OneRunAuditConfig(model=args.model, dataset_size=1000, num_canaries=m,
                                   kind=kind, epsilon=eps,
                                   dpsgd=RECIPE._replace(steps=args.steps))
        start = time.perf_counter()
        res = run_one_run(config)
        row = {"kind": kind, "m": m, "epsilon": eps, "steps": args.steps, "model": args.model,
               "sigma": res.noise_multiplier, "accountant": res.accountant_epsilon,
               "one_run": res.one_run, "fdp_one_run": res.fdp_one_run,
               "clopper_pearson": res.clopper_pearson,
               "minutes": (time.perf_counter() - start) / 60.0}
        path.write_text(json.dumps(row, indent=1))
        print(row, flush=True)
    lines = ["| kind | m | ε target | σ | accountant ε | one-run ε (bound) | f-DP one-run ε "
             "(estimate) | minutes |", "|---|---|---|---|---|---|---|---|"]
    for kind, m, eps in ROWS:
        path = args.out / f"{kind}_m{m}_eps{eps:g}.json"
        if not path.exists():
            lines.append(f"| {kind} | {m} | {eps:g} | not run | | | | |")
            continue
        r = json.loads(path.read_text())
        lines.append(f"| {kind} | {m} | {eps:g} | {r['sigma']:.3f} | {r['accountant']:.2f} | "
                     f"{r['one_run']:.2f} | {r['fdp_one_run']:.2f} | {r['minutes']:.1f} |")
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
