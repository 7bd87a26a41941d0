"""``jaxaudit rdp`` (the default mode): R trainings with and R without the canary, resumable and
shared out with ``--worker``/``--backend ray``, then the audit of their scores (``jaxaudit rdp
--dataset-size 100 --epsilon 10 --runs 256 --out runs/rdp/``)."""

import argparse

from jaxaudit.cli._types import sweep_of
from jaxaudit.cli.rdp import config


def run(args: argparse.Namespace) -> int:
    from jaxaudit.pipelines import RdpConfig, run_rdp
    from jaxaudit.report.rdp import text_table
    from jaxaudit.runs import ProgressBar

    with ProgressBar("canary runs", enabled=not args.quiet) as bar:
        result = run_rdp(config(RdpConfig, args), args.out, progress=bar, sweep=sweep_of(args))
    if not result.complete:  # a --worker share: the audit waits for the other workers' chunks
        print(f"{len(result.in_scores)} runs per world so far in {args.out}; audited when every chunk is done")
        return 0
    print(text_table(result))
    print(f"wrote results.json, summary.md and rdp_audit.png into {args.out}")
    return 0
