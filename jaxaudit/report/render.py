"""Render a run folder as one self-contained HTML file and a markdown file.

The report is generic over run kinds (bounds, shadow, bmp, rdp, ...) and is laid out for a person
reading it top to bottom — what was found first, how it was configured last:

1. **Findings**: every ``*.md`` summary the run wrote (its markdown tables become HTML tables;
   verbatim in the markdown report);
2. **Figures**: every ``*.png``, embedded in the HTML as a base64 ``data:`` URI (no server and no
   other file is needed to view it) and referenced by relative path in the markdown;
3. **Tables**: every ``*.json`` table (a list of records, a dict of columns, a dict of records or a
   flat dict) and every ``*.csv``, shortest first (e.g. a run's top-20 table before its full
   per-node table); a table longer than ``max_rows`` shows its first rows, a note, and a link to
   the file itself (the full table);
4. **Configuration and provenance**: the configuration as a key/value table (nested keys joined
   with dots), the run's kind, library version, creation time, configuration hash and folder,
   the result chunks (array names, shapes, dtypes) with their checksum status, other files.

The report files are written atomically (``report.html`` and ``report.md`` in the run folder by
default) and are themselves skipped when the report is rendered again.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import os
from pathlib import Path

import numpy as np

from jaxaudit.runs.rundir import MANIFEST, RunDir, atomic_write_bytes

__all__ = ["render_report"]

HTML_NAME = "report.html"
MD_NAME = "report.md"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_JSON_CHARS = 20_000

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: .8em; overflow-x: auto; }
.note { color: #666; font-style: italic; }
.bad { color: #b00; font-weight: bold; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 90%; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
"""


# -- tables -----------------------------------------------------------------------------------
def _cell(value) -> str:
    """A short text form of a table cell (floats to 6 significant digits)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, int | np.integer | str):
        return str(value)
    return json.dumps(value, default=str)


def _is_number(value) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _table_from_json(obj) -> tuple[list[str], list[list]] | None:
    """Columns and rows for the JSON shapes that are tables; None for anything else."""
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        columns = list(dict.fromkeys(k for r in obj for k in r))
        return columns, [[r.get(c, "") for c in columns] for r in obj]
    if isinstance(obj, list) and obj and all(isinstance(r, list) for r in obj):
        width = max(len(r) for r in obj)
        return [str(i) for i in range(width)], [r + [""] * (width - len(r)) for r in obj]
    if isinstance(obj, list) and obj and not any(isinstance(r, dict | list) for r in obj):
        return ["value"], [[v] for v in obj]
    if isinstance(obj, dict) and obj:
        values = list(obj.values())
        if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
            columns = list(obj)
            return columns, [list(row) for row in zip(*values, strict=True)]
        if all(isinstance(v, dict) for v in values):
            inner = list(dict.fromkeys(k for v in values for k in v))
            return ["key", *inner], [[k, *(v.get(c, "") for c in inner)] for k, v in obj.items()]
        return ["key", "value"], [[k, v] for k, v in obj.items()]
    return None


def _flatten(config, prefix="") -> list[tuple[str, object]]:
    if isinstance(config, dict) and config:
        out = []
        for k, v in config.items():
            out.extend(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return [(prefix, config)]


def _html_table(columns, rows, max_rows: int) -> str:
    shown = rows[:max_rows]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in shown:
        cells = "".join(
            f'<td class="num">{html.escape(_cell(v))}</td>'
            if _is_number(v)
            else f"<td>{html.escape(_cell(v))}</td>"
            for v in row
        )
        body.append(f"<tr>{cells}</tr>")
    out = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    if len(rows) > max_rows:
        out += f'<p class="note">Showing the first {max_rows} of {len(rows)} rows.</p>'
    return out


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(columns, rows, max_rows: int) -> str:
    lines = [
        "| " + " | ".join(_md_escape(str(c)) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_md_escape(_cell(v)) for v in r) + " |" for r in rows[:max_rows]]
    if len(rows) > max_rows:
        lines.append(f"\n*Showing the first {max_rows} of {len(rows)} rows.*")
    return "\n".join(lines)


def _markdown_blocks(text: str):
    """Split a small markdown text into ("heading", level, text), ("table", columns, rows) and
    ("para", text) blocks: enough for the summaries the commands write."""
    blocks, para, table = [], [], []

    def flush():
        if para:
            blocks.append(("para", " ".join(para)))
            para.clear()
        if table:
            cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table]
            body = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
            blocks.append(("table", cells[0], body))
            table.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            if para:
                flush()
            table.append(stripped)
        elif stripped.startswith("#"):
            flush()
            level = len(stripped) - len(stripped.lstrip("#"))
            blocks.append(("heading", min(level + 2, 4), stripped.lstrip("#").strip()))
        elif not stripped:
            flush()
        else:
            if table:
                flush()
            para.append(stripped)
    flush()
    return blocks


# -- sections ---------------------------------------------------------------------------------
class _Report:
    def __init__(self, max_rows: int):
        self.max_rows = max_rows
        self.html: list[str] = []
        self.md: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")
        self.md.append("#" * level + " " + text)

    def table(self, columns, rows) -> None:
        self.html.append(_html_table(columns, rows, self.max_rows))
        self.md.append(_md_table(columns, rows, self.max_rows))

    def note(self, text: str, bad: bool = False) -> None:
        cls = "bad" if bad else "note"
        self.html.append(f'<p class="{cls}">{html.escape(text)}</p>')
        self.md.append(f"**{text}**" if bad else f"*{text}*")

    def link(self, text: str, href: str) -> None:
        self.html.append(f'<p class="note"><a href="{html.escape(href)}">{html.escape(text)}</a>'
                         "</p>")
        self.md.append(f"[{text}]({href})")

    def summary(self, text: str) -> None:
        """A markdown summary: HTML headings, tables and paragraphs; verbatim in the markdown."""
        for block in _markdown_blocks(text):
            if block[0] == "heading":
                self.html.append(f"<h{block[1]}>{html.escape(block[2])}</h{block[1]}>")
            elif block[0] == "table":
                self.html.append(_html_table(block[1], block[2], len(block[2]) + 1))
            else:
                self.html.append(f"<p>{html.escape(block[1])}</p>")
        self.md.append(text.rstrip())

    def pre(self, text: str, md_verbatim: bool) -> None:
        self.html.append(f"<pre>{html.escape(text)}</pre>")
        self.md.append(text.rstrip() if md_verbatim else "```\n" + text.rstrip() + "\n```")


def _chunk_rows(run: RunDir) -> list[list]:
    rows = []
    for name in run.chunk_names():
        try:
            arrays = run.load_chunk(name)
        except ValueError:
            rows.append([name, "", "checksum mismatch (not used)"])
            continue
        desc = ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in arrays.items())
        rows.append([name, desc, "ok"])
    return rows


def _read_csv(path: Path) -> tuple[list[str], list[list]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return ["(empty)"], []
    columns, body = rows[0], rows[1:]
    return columns, body


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk of a PNG."""
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def render_report(run_dir, out_dir=None, *, max_rows: int = 50) -> tuple[Path, Path]:
    """Write ``report.html`` (self-contained) and ``report.md`` for a run folder.

    Args:
      run_dir: a folder with a ``manifest.json`` (see :mod:`jaxaudit.runs`).
      out_dir: where to write the two files (default: ``run_dir``).
      max_rows: tables longer than this show their first ``max_rows`` rows and a note.

    Returns:
      ``(html_path, md_path)``.

    Raises:
      FileNotFoundError: ``run_dir`` has no manifest.
      ValueError: ``max_rows`` < 1 or an unreadable manifest.
    """
    if isinstance(max_rows, bool) or int(max_rows) != max_rows or max_rows < 1:
        raise ValueError(f"max_rows must be an integer >= 1, got {max_rows!r}")
    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(
            f"{manifest_path} not found: {run_dir} is not a jaxaudit run folder"
        )
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{manifest_path} is not valid JSON ({err})") from err
    out_dir = Path(out_dir) if out_dir is not None else run_dir
    html_path, md_path = out_dir / HTML_NAME, out_dir / MD_NAME
    skip = {html_path.resolve(), md_path.resolve(), manifest_path.resolve()}

    kind = str(manifest.get("kind", "unknown"))
    version = str(manifest.get("version", "unknown"))
    title = f"jaxaudit {kind} run (jaxaudit {version})"
    rep = _Report(int(max_rows))
    rep.heading(title, 1)
    planned = list(manifest.get("planned_chunks", []))
    missing = RunDir(run_dir, manifest).missing_chunks() if planned else []
    if missing:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        rep.note(f"Partial run: {len(planned) - len(missing)} of {len(planned)} planned chunks "
                 f"finished (missing: {shown}); everything below uses the finished ones.",
                 bad=True)

    files = sorted(
        p
        for p in run_dir.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(run_dir).parts)
        and p.resolve() not in skip
        and p.relative_to(run_dir).parts[0] != "chunks"
    )
    by_kind: dict[str, list[Path]] = {".json": [], ".csv": [], ".md": [], ".png": []}
    others = []
    for p in files:
        by_kind.get(p.suffix.lower(), others).append(p)

    def rel(p: Path) -> str:
        return p.relative_to(run_dir).as_posix()

    def link_from_out(p: Path) -> str:
        return Path(os.path.relpath(p.resolve(), out_dir.resolve())).as_posix()

    # 1. findings
    if by_kind[".md"]:
        rep.heading("Findings")
    for p in by_kind[".md"]:
        rep.heading(rel(p), 3)
        rep.summary(p.read_text(errors="replace"))

    # 2. figures
    if by_kind[".png"]:
        rep.heading("Figures")
    for p in by_kind[".png"]:
        data = p.read_bytes()
        name = rel(p)
        if not data.startswith(_PNG_SIGNATURE) or len(data) < 24:
            rep.heading(name, 3)
            rep.note("not a valid PNG file; not embedded", bad=True)
            continue
        width, height = _png_size(data)
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        rep.html.append(
            f'<figure><img src="{uri}" alt="{html.escape(name)}" width="{width}" '
            f'height="{height}"><figcaption>{html.escape(name)} ({width}&times;{height})'
            "</figcaption></figure>"
        )
        rep.md.append(f"![{name}]({link_from_out(p)})")

    # 3. tables, shortest first
    tables = []
    for p in by_kind[".json"]:
        try:
            obj = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            tables.append((0, p, ("bad", f"unreadable JSON: {err}")))
            continue
        table = _table_from_json(obj)
        if table is None:
            text = json.dumps(obj, indent=2, default=str)
            if len(text) > _MAX_JSON_CHARS:
                text = text[:_MAX_JSON_CHARS] + f"\n... ({len(text)} characters in all)"
            tables.append((0, p, ("pre", text)))
        else:
            tables.append((len(table[1]), p, ("table", table)))
    for p in by_kind[".csv"]:
        try:
            table = _read_csv(p)
        except (csv.Error, UnicodeDecodeError) as err:
            tables.append((0, p, ("bad", f"unreadable CSV: {err}")))
            continue
        tables.append((len(table[1]), p, ("table", table)))
    if tables:
        rep.heading("Tables")
    for num_rows, p, (what, content) in sorted(tables, key=lambda t: (t[0], rel(t[1]))):
        rep.heading(rel(p), 3)
        if what == "bad":
            rep.note(content, bad=True)
        elif what == "pre":
            rep.pre(content, md_verbatim=False)
        else:
            rep.table(*content)
            if num_rows > rep.max_rows:
                rep.link(f"full table: {rel(p)} ({num_rows} rows)", link_from_out(p))

    # 4. configuration and provenance
    rep.heading("Configuration")
    config = manifest.get("config", {})
    rep.table(["parameter", "value"], [[k, v] for k, v in _flatten(config)] if config else [])
    rep.heading("Provenance")
    meta = [
        ["kind", kind],
        ["version", version],
        ["created", manifest.get("created", "")],
        ["config hash", manifest.get("config_hash", "")],
        ["folder", str(run_dir.resolve())],
    ]
    if planned:
        meta.append(["chunks finished", f"{len(planned) - len(missing)} of {len(planned)}"])
    rep.table(["run", ""], meta)
    run = RunDir(run_dir, manifest)
    chunk_rows = _chunk_rows(run)
    if chunk_rows:
        rep.heading("Result chunks", 3)
        bad = sum(r[2] != "ok" for r in chunk_rows)
        rep.note(f"{len(chunk_rows)} chunks, {bad} with a checksum mismatch.", bad=bool(bad))
        rep.table(["chunk", "arrays", "checksum"], chunk_rows)
    if others:
        rep.heading("Other files", 3)
        rep.table(["file", "bytes"], [[rel(p), p.stat().st_size] for p in others])

    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(rep.html)
        + "\n</body>\n</html>\n"
    )
    atomic_write_bytes(html_path, page.encode("utf-8"))
    atomic_write_bytes(md_path, ("\n\n".join(rep.md) + "\n").encode("utf-8"))
    return html_path, md_path
