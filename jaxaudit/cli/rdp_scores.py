"""``jaxaudit rdp --scores IN OUT``: audit the canary scores saved by any training code, no
training (docs/opacus.md)."""

import argparse
import os

from jaxaudit._validation.paths import check_read_size
from jaxaudit.cli.rdp import config


def run(args: argparse.Namespace) -> int:
    from jaxaudit.pipelines import ScoresAuditConfig, run_scores_audit
    from jaxaudit.report.rdp import text_table

    for flag, path in zip(("--scores IN", "--scores OUT"), args.scores, strict=True):
        if os.path.isfile(path):  # before it is read (a missing file: the pipeline's error)
            check_read_size(flag, path, bytes_per_byte=2.0)  # and its float64 copy
    print(text_table(run_scores_audit(config(ScoresAuditConfig, args), args.out)))
    print(f"wrote results.json, summary.md and rdp_audit.png into {args.out}")
    return 0
