"""``jaxaudit rdp --one-run``: ONE training run with m canaries, each included by a fair coin,
then the one-run bounds beside the accountant (``--canaries 1000 --epsilon 4``)."""

import argparse

from jaxaudit.cli.rdp import config


def run(args: argparse.Namespace) -> int:
    from jaxaudit.pipelines import OneRunAuditConfig, run_one_run
    from jaxaudit.report.rdp import one_run_text
    from jaxaudit.runs import ProgressBar

    with ProgressBar("one run", enabled=not args.quiet) as bar:
        print(one_run_text(run_one_run(config(OneRunAuditConfig, args), args.out, progress=bar)))
    print(f"wrote result.json into {args.out}")
    return 0
