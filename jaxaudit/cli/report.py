"""``jaxaudit report DIR``: a self-contained HTML (and markdown) report of a run folder."""

import argparse
from typing import Any

from jaxaudit._validation import check_input_path, check_output_dir
from jaxaudit.cli._types import count


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("report", help="write report.html and report.md for a run folder", description="Render the configuration, tables, summaries and figures of a run folder as one self-contained HTML file (figures embedded; opens with no server) and a markdown file referencing the figures by relative path. A folder that is not usable as it is (a corrupt or missing chunk, an edited or missing result file) is reported all the same, said at the report's top, and the command exits with status 2 naming each problem on stderr.")
    p.add_argument("run_dir", metavar="DIR", help="run folder (holds manifest.json)")
    p.add_argument("--out", default=None, help="output folder (default: DIR)")
    p.add_argument("--max-rows", type=count, default=50, help="rows shown per table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxaudit.report import render_report

    check_input_path("DIR", args.run_dir, folder=True)
    check_output_dir("--out", args.run_dir if args.out is None else args.out)
    print("\n".join(f"wrote {p}" for p in render_report(args.run_dir, args.out, max_rows=args.max_rows, strict=True)))
    return 0
