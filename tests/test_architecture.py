"""The layering of docs/architecture.md holds: each sub-package imports only the layers below it,
and no notebook or benchmark imports the command line."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxaudit"


def _allowed() -> dict[str, set[str]]:
    """The import table of docs/architecture.md: `| package | may import |` rows."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = re.search(r"<!-- imports -->(.*?)<!-- /imports -->", text, flags=re.S).group(1)
    allowed = {}
    for line in table.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("package", "") or set(cells[0]) <= {"-"}:
            continue
        names = {n.strip().strip("`") for n in cells[2].split(",") if n.strip() not in ("", "—")}
        allowed[cells[0]] = names
    return allowed


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "jaxaudit" and len(parts) > 1 and not parts[1].startswith("__"):
                found.add(parts[1])
    return found


def test_every_unit_is_in_the_table():
    units = {_unit(p) for p in PACKAGE.rglob("*.py")} - {"__init__", "__main__"}
    assert units == set(_allowed()), "docs/architecture.md's import table is out of date"


def test_sub_packages_import_only_lower_layers():
    allowed = _allowed()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(path)
        if unit in ("__init__", "__main__"):
            continue
        extra = _imports(path) - allowed[unit] - {unit}
        if "*" not in allowed[unit] and extra:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert not bad, "\n".join(bad)


def test_no_notebook_or_benchmark_imports_the_cli():
    offenders = [str(p.relative_to(ROOT)) for folder in ("notebooks", "benchmarks")
                 for p in (ROOT / folder).rglob("*.py") if "cli" in _imports(p)]
    assert not offenders, f"import jaxaudit.cli from the library instead: {offenders}"
