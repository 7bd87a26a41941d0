"""``jaxaudit report DIR``: a self-contained HTML (and markdown) report of a run folder."""

import argparse
import sys
import warnings
from typing import Any

from jaxaudit._validation import check_input_path, check_output_dir
from jaxaudit.cli._types import count


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("report", help="write report.html and report.md for a run folder", description="Render the configuration, tables, summaries and figures of a run folder as one self-contained HTML file (figures embedded; opens with no server) and a markdown file referencing the figures by relative path. Exit status 1 (each problem on stderr) when the folder is not usable as it is: a corrupt or missing chunk, an edited or missing result file; the report is written all the same and says so at its top.")
    p.add_argument("run_dir", metavar="DIR", help="run folder (holds manifest.json)")
    p.add_argument("--out", default=None, help="output folder (default: DIR)")
    p.add_argument("--max-rows", type=count, default=50, help="rows shown per table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxaudit.report import render_report
    from jaxaudit.runs.rundir import RunFolderWarning

    check_input_path("DIR", args.run_dir, folder=True)
    check_output_dir("--out", args.run_dir if args.out is None else args.out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RunFolderWarning)
        paths = render_report(args.run_dir, args.out, max_rows=args.max_rows)
    print("\n".join(f"wrote {p}" for p in paths))
    problems = [w for w in caught if issubclass(w.category, RunFolderWarning)]
    for w in caught:
        if w not in problems:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for w in problems:
        print(f"jaxaudit report: error: {w.message}", file=sys.stderr)
    return 1 if problems else 0
