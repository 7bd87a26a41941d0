"""The command line stays thin: each command file parses, builds a
configuration, calls one pipeline and prints; rendering and file formats live in ``report``."""

import re
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "jaxaudit" / "cli"
FILES = sorted(CLI.glob("*.py"))
#: The budgets of the shared parts and of the commands whose logic moved to the library.
#: rdp.py holds the parser its three modes share (each mode is a module: rdp_runs.py,
#: rdp_scores.py, rdp_one_run.py).
BUDGETS = {"rdp.py": 115, "rdp_runs.py": 30, "rdp_scores.py": 30, "rdp_one_run.py": 30, "bounds.py": 105, "data.py": 65, "main.py": 85, "report.py": 25, "_types.py": 121}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_command_file_is_at_most_150_lines(path):
    assert _lines(path) <= BUDGETS.get(path.name, 150), path.name


def test_the_budgeted_files_exist():
    assert set(BUDGETS) <= {p.name for p in FILES}


def test_cli_is_at_most_900_lines_in_all():
    assert sum(_lines(p) for p in FILES) <= 900, {p.name: _lines(p) for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_plotting_or_file_formats_in_the_cli(path):
    """Figures and CSV files are written by ``jaxaudit.report`` (a library user gets the same
    files); a command only prints."""
    pattern = re.compile(r"^\s*(import csv|from csv import)|matplotlib|\.to_csv\(|savefig", re.M)
    found = pattern.findall(path.read_text())
    assert not found, f"{path.name}: {found}"
