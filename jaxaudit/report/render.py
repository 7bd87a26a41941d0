"""Render a run folder as one self-contained HTML file and a markdown file.

The report is generic over run kinds (bounds, shadow, bmp, rdp, ...) and is laid out for a person
reading it top to bottom — what was found first, how it was configured last:

0. **What cannot be trusted**, before any result: chunks that are corrupt, moved, copied from
   another run or missing, result files edited or missing (each also a
   :class:`~jaxaudit.runs.rundir.RunFolderWarning`), a partial run, files no checksum covers;
1. **Findings**: every ``*.md`` summary the run wrote (its markdown tables become HTML tables;
   in the markdown report as written, with raw HTML, link syntax and bare URLs neutralised);
2. **Figures**: every ``*.png``, embedded in the HTML as a base64 ``data:`` URI (no server and no
   other file is needed to view it) and referenced by relative path in the markdown;
3. **Tables**: every ``*.json`` table and every ``*.csv``, shortest first (e.g. a run's top-20
   table before its full per-node table). A list of records is a table of their scalar fields, a
   dict of columns or a dict of records is a table, an object is a key/value table of its scalar
   fields, and every nested list or object becomes a sub-table below (e.g. the ``records`` of an
   audit's ``results.json``); numbers are shown to 6 significant digits. A table longer than
   ``max_rows`` shows its first rows, a note, and a link to the file itself (the full table);
4. **Configuration and provenance**: the configuration as a key/value table (nested keys joined
   with dots), the run's kind, library version, creation time, configuration hash and folder,
   the result files and chunks (array names, shapes, dtypes, read from their headers) with
   their checksum status, other files, and what was skipped.

Hostile run folders: the manifest is read through :func:`jaxaudit.runs.rundir.read_manifest` (a
non-object, deeply nested or hand-edited manifest is a ``ValueError`` naming it); no symbolic
link inside the folder is followed and only regular files are read, a file whose name is not
valid UTF-8 is skipped (what was skipped is listed at the top, such a name with its bytes
escaped, ``bad\\xff.json``); a chunk is checksummed in blocks and only its headers are read (a
chunk of any size is described in constant memory); every text is escaped in the HTML (which
also carries a Content-Security-Policy allowing no script and no remote resource) and in the
markdown (raw HTML, link and image syntax neutralised, a bare URL or e-mail address shown in a
code span so that no renderer links it); links are relative paths with every segment
percent-encoded (no scheme, e.g. ``javascript:``, can appear).

The report files are written atomically (``report.html`` and ``report.md`` in the run folder by
default) and are themselves skipped when the report is rendered again.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import quote

import numpy as np

from jaxaudit.runs.files import (
    atomic_write_bytes,
    parse_json,
    printable_name,
    read_regular,
    scan_run_folder,
)
from jaxaudit.runs.rundir import (
    MANIFEST,
    NOT_COVERED,
    RESULT_SUFFIXES,
    RunDir,
    RunFolderWarning,
    read_manifest,
)

__all__ = ["render_report"]

#: (caption, columns, rows) of one table
_Table: TypeAlias = tuple[str, Sequence[Any], Sequence[Sequence[Any]]]
#: ("heading", level, text), ("table", columns, rows) or ("para", text)
_Block: TypeAlias = tuple[Any, ...]

HTML_NAME = "report.html"
MD_NAME = "report.md"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_JSON_CHARS = 20_000
#: Files larger than this are listed, not read into the report.
_MAX_FILE_BYTES = 64 << 20
#: Most sub-tables shown for one JSON file (the rest are counted in a note).
_MAX_SUBTABLES = 40
_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
        "form-action 'none'")

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

# -- escaping -----------------------------------------------------------------------------------
_MD_INLINE = re.compile(r"([\\`\[\]])")
#: What a GFM renderer turns into a link without any link syntax (its "extended autolinks"): a
#: URL with a scheme, ``www.``, an e-mail address.
_BARE_LINK = re.compile(
    r"(?i)\b(?:[a-z][a-z0-9+.-]*://|mailto:|xmpp:|www\.)[^\s<>|`]+"
    r"|[a-z0-9._+-]+@[a-z0-9_-]+(?:\.[a-z0-9_-]+)+")


def _md_neutral(text: str) -> str:
    """Markdown with raw HTML (``<script>``, ``<img onerror>``), autolinks (``<https://…>`` and
    the bare URLs, ``www.`` names and e-mail addresses a GFM renderer links), link/image syntax
    and code spans neutralised: ``& < >`` as entities, ``\\ ` [ ]`` backslash-escaped, a bare
    URL shown in a code span (literal text, never a link). Headings, tables and emphasis still
    render."""
    out, start = [], 0
    for m in _BARE_LINK.finditer(text):
        link = m.group().rstrip(".,:;!?*_~'\")")  # trailing punctuation: the sentence's
        out += [_md_escape(text[start:m.start()]), f"`{link}`"]
        start = m.start() + len(link)
    return "".join([*out, _md_escape(text[start:])])


def _md_escape(text: str) -> str:
    """``& < >`` as entities, ``\\ ` [ ]`` backslash-escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_INLINE.sub(r"\\\1", text)


def _md_text(value: object) -> str:
    """One line of markdown text (a heading, a table cell, a caption), neutralised."""
    text = " ".join(str(value).splitlines())
    return _md_neutral(text).replace("|", "\\|")


def _href(path: Path, base: Path) -> str:
    """A relative link from folder ``base`` to ``path``, every segment percent-encoded (``:``,
    ``/``, ``?``, ``#`` included): no scheme (``javascript:``, ``data:``), host or query can
    appear in it. A first segment holding a ``:`` is also preceded by ``./``, so that even a
    renderer that decodes the percent-escapes sees a path."""
    raw = Path(os.path.relpath(path, base)).parts
    parts = [quote(part, safe="") for part in raw]
    return "/".join([".", *parts] if ":" in raw[0] else parts)


def _fence(text: str) -> str:
    """A markdown code fence longer than any run of backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


# -- tables -----------------------------------------------------------------------------------
def _cell(value: object) -> str:
    """A short text form of a table cell (floats to 6 significant digits)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, int | np.integer | str):
        return str(value)
    return json.dumps(value, default=str)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _is_scalar(value: object) -> bool:
    return not isinstance(value, dict | list)


def _inline(value: object) -> bool:
    """Shown in a cell: a scalar, or a short list of scalars (``[1, 2]``)."""
    return _is_scalar(value) or (isinstance(value, list) and len(value) <= 8
                                 and all(_is_scalar(v) for v in value))


def _json_tables(obj: Any, caption: str = "") -> list[_Table] | None:
    """``[(caption, columns, rows), ...]``: the main table of a JSON value (caption ``""``) and
    one sub-table per nested list or object (caption: its key path); None when the value is not
    table-like (then it is shown as JSON)."""
    def sub(value: Any, path: str) -> list[_Table]:
        return _json_tables(value, path) or [(path, ["value"], [[value]])]

    def join(key: object) -> str:
        return f"{caption}.{key}" if caption else str(key)

    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        columns = list(dict.fromkeys(k for r in obj for k, v in r.items() if _inline(v)))
        rows = [[r.get(c, "") if _inline(r.get(c, "")) else "(below)" for c in columns]
                for r in obj]
        out: list[_Table] = [(caption, columns, rows)] if columns else []
        for i, r in enumerate(obj):
            for k, v in r.items():
                if not _inline(v):
                    out += sub(v, f"{caption}[{i}].{k}")
        return out
    if isinstance(obj, list) and obj and all(isinstance(r, list) for r in obj) \
            and all(_is_scalar(v) for r in obj for v in r):
        width = max(len(r) for r in obj)
        return [(caption, [str(i) for i in range(width)],
                 [r + [""] * (width - len(r)) for r in obj])]
    if isinstance(obj, list) and obj and all(_is_scalar(v) for v in obj):
        return [(caption, ["value"], [[v] for v in obj])]
    if isinstance(obj, dict) and obj:
        values = list(obj.values())
        if all(isinstance(v, list) and all(_is_scalar(x) for x in v) for v in values) \
                and len({len(v) for v in values}) == 1 and len(values[0]) > 0:
            return [(caption, list(obj), [list(row) for row in zip(*values, strict=True)])]
        if all(isinstance(v, dict) for v in values):
            inner = list(dict.fromkeys(k for v in values for k, x in v.items() if _inline(x)))
            rows = [[k, *(v.get(c, "") if _inline(v.get(c, "")) else "(below)" for c in inner)]
                    for k, v in obj.items()]
            nested: list[_Table] = [(caption, ["key", *inner], rows)] if inner else []
            for k, v in obj.items():
                for c, x in v.items():
                    if not _inline(x):
                        nested += sub(x, f"{join(k)}.{c}")
            return nested
        pairs: list[_Table] = [
            (caption, ["key", "value"], [[k, v] for k, v in obj.items() if _inline(v)])]
        if not pairs[0][2]:
            pairs = []
        for k, v in obj.items():
            if not _inline(v):
                pairs += sub(v, join(k))
        return pairs
    if _is_scalar(obj):
        return [(caption, ["value"], [[obj]])]
    return None


def _flatten(config: Any, prefix: str = "") -> list[tuple[str, object]]:
    if isinstance(config, dict) and config:
        out: list[tuple[str, object]] = []
        for k, v in config.items():
            out.extend(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return [(prefix, config)]


def _html_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]], max_rows: int) -> str:
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


def _md_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]], max_rows: int) -> str:
    lines = [
        "| " + " | ".join(_md_text(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_md_text(_cell(v)) for v in r) + " |" for r in rows[:max_rows]]
    if len(rows) > max_rows:
        lines.append(f"\n*Showing the first {max_rows} of {len(rows)} rows.*")
    return "\n".join(lines)


def _markdown_blocks(text: str) -> list[_Block]:
    """Split a small markdown text into ("heading", level, text), ("table", columns, rows) and
    ("para", text) blocks: enough for the summaries the commands write."""
    blocks: list[_Block] = []
    para: list[str] = []
    table: list[str] = []

    def flush() -> None:
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
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self.html: list[str] = []
        self.md: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")
        self.md.append("#" * level + " " + _md_text(text))

    def table(self, columns: Sequence[Any], rows: Sequence[Sequence[Any]], *, whole: bool = False
              ) -> None:
        """A table of its first ``max_rows`` rows (every row with ``whole``)."""
        limit = max(len(rows), 1) if whole else self.max_rows
        self.html.append(_html_table(columns, rows, limit))
        self.md.append(_md_table(columns, rows, limit))

    def note(self, text: str, bad: bool = False) -> None:
        cls = "bad" if bad else "note"
        self.html.append(f'<p class="{cls}">{html.escape(text)}</p>')
        self.md.append(f"**{_md_text(text)}**" if bad else f"*{_md_text(text)}*")

    def link(self, text: str, href: str) -> None:
        """``href`` must come from :func:`_href` (relative, percent-encoded)."""
        self.html.append(f'<p class="note"><a href="{html.escape(href)}">{html.escape(text)}</a>'
                         "</p>")
        self.md.append(f"[{_md_text(text)}]({href})")

    def summary(self, text: str) -> None:
        """A markdown summary: HTML headings, tables and paragraphs; in the markdown as written,
        neutralised (:func:`_md_neutral`)."""
        for block in _markdown_blocks(text):
            if block[0] == "heading":
                self.html.append(f"<h{block[1]}>{html.escape(block[2])}</h{block[1]}>")
            elif block[0] == "table":
                self.html.append(_html_table(block[1], block[2], len(block[2]) + 1))
            else:
                self.html.append(f"<p>{html.escape(block[1])}</p>")
        self.md.append(_md_neutral(text.rstrip()))

    def pre(self, text: str) -> None:
        self.html.append(f"<pre>{html.escape(text)}</pre>")
        fence = _fence(text)
        self.md.append(f"{fence}\n{text.rstrip()}\n{fence}")


def _chunk_rows(run: RunDir) -> list[list[str]]:
    """(name, arrays from the headers, status) per chunk; no array is loaded, and a chunk's
    checksum is computed in blocks (a chunk of any size is checked in constant memory)."""
    rows: list[list[str]] = []
    for name in run.chunk_names():
        try:
            arrays = run.describe_chunk(name)
        except ValueError as err:
            reason = str(err).removeprefix(f"chunk {name!r} is not usable: ")
            if "SHA-256" in reason:
                status = "checksum mismatch (not used)"
            else:
                status = f"not used: {reason.replace(f'chunk {name!r} in {run.path}', 'the chunk')}"
            rows.append([name, "", status])
            continue
        desc = ", ".join(f"{k} {dtype}{list(shape)}" for k, (shape, dtype) in arrays.items())
        rows.append([name, desc, "ok"])
    return rows


def _read_csv(data: bytes) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    if not rows:
        return ["(empty)"], []
    return rows[0], rows[1:]


def _json_entry(data: bytes) -> tuple[int, tuple[str, Any]]:
    """(rows, (what, content)) of a JSON file's section: its tables, else its text ("pre")."""
    try:
        obj = parse_json(data, "the file")
    except ValueError as err:
        return 0, ("bad", f"unreadable JSON: {err}")
    found = _json_tables(obj)
    if found:
        return len(found[0][2]), ("tables", found)
    text = json.dumps(obj, indent=2, default=str)
    if len(text) > _MAX_JSON_CHARS:
        text = text[:_MAX_JSON_CHARS] + f"\n... ({len(text)} characters in all)"
    return 0, ("pre", text)


def _csv_entry(data: bytes) -> tuple[int, tuple[str, Any]]:
    """(rows, (what, content)) of a CSV file's section: its one table."""
    try:
        table = _read_csv(data)
    except (csv.Error, UnicodeDecodeError) as err:
        return 0, ("bad", f"unreadable CSV: {err}")
    return len(table[1]), ("tables", [("", *table)])


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk of a PNG."""
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def render_report(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None,
                  *, max_rows: int = 50, strict: bool = False) -> tuple[Path, Path]:
    """Write ``report.html`` (self-contained) and ``report.md`` for a run folder.

    Args:
      run_dir: a folder with a ``manifest.json`` (see :mod:`jaxaudit.runs`).
      out_dir: where to write the two files (default: ``run_dir``).
      max_rows: tables longer than this show their first ``max_rows`` rows and a note.
      strict: raise (after writing the report) instead of warning when the folder is not
        usable as it is (what ``jaxaudit report`` does: exit status 2, the problems on stderr).

    Returns:
      ``(html_path, md_path)``.

    Raises:
      FileNotFoundError: ``run_dir`` has no manifest.
      ValueError: ``max_rows`` < 1, or a manifest that is unreadable, not a JSON object, nested
        too deeply, or does not match its hashes (edited by hand); the message names the file.
      ValueError: with ``strict``, a folder that is not usable as it is (the problems of the
        warnings below, named); the report is written first.
      OSError: the report cannot be written (the message names the file and the reason).

    Warns:
      RunFolderWarning: (without ``strict``) once per problem that makes the folder unusable as
        it is (a corrupt, moved or copied chunk, a chunk missing beside written results, a
        result file edited or missing: what :func:`jaxaudit.runs.load_results` refuses); the
        report is written all the same, with the problems said at its top, before any result.
    """
    if isinstance(max_rows, bool) or int(max_rows) != max_rows or max_rows < 1:
        raise ValueError(f"max_rows must be an integer >= 1, got {max_rows!r}")
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    run = RunDir(run_dir, manifest)
    out_dir = Path(out_dir) if out_dir is not None else run_dir
    html_path, md_path = out_dir / HTML_NAME, out_dir / MD_NAME
    report_files = {html_path.resolve(), md_path.resolve()}

    kind = manifest["kind"]
    version = str(manifest.get("version", "unknown"))
    title = f"jaxaudit {kind} run (jaxaudit {version})"
    rep = _Report(int(max_rows))
    rep.heading(title, 1)
    planned = list(manifest.get("planned_chunks", []))
    missing = run.missing_chunks() if planned else []
    chunk_rows = _chunk_rows(run)
    names, skipped = scan_run_folder(run_dir)
    files = [
        run_dir / rel for rel in names
        if rel != MANIFEST and rel.split("/")[0] != "chunks" and not rel.endswith(".sha256")
        and (run_dir / rel).resolve() not in report_files
    ]

    def rel(p: Path) -> str:
        return p.relative_to(run_dir).as_posix()

    status = run.output_status([rel(p) for p in files] + [
        n for n in names if n.endswith(".sha256") and n.split("/")[0] != "chunks"])
    # what makes the folder unusable (load_results refuses it), said first and warned about
    problems = [f"chunk {r[0]!r}: {r[2]}" for r in chunk_rows if r[2] != "ok"]
    problems += [f"result file {f}: {why}" for f, why in status.items()
                 if why and why != NOT_COVERED]
    written = [f for f, why in status.items() if not why and f.endswith(RESULT_SUFFIXES)]
    if missing and written:  # a run writes its results once its chunks are finished
        problems += [f"chunk {n!r}: missing, although the run's results were written"
                     for n in missing if n not in {r[0] for r in chunk_rows}]
    for problem in problems if not strict else ():
        warnings.warn(f"run folder {run_dir}: {problem}", RunFolderWarning, stacklevel=2)
    if problems:
        rep.note(f"This run folder is not usable as it is ({len(problems)} problem"
                 f"{'s' if len(problems) > 1 else ''}: {'; '.join(problems[:5])}"
                 f"{'; …' if len(problems) > 5 else ''}). What is shown below may not be what the "
                 "run computed; jaxaudit.load_results refuses this folder. Repeat the run's "
                 "command to recompute what is not usable.", bad=True)
    if missing:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        rep.note(f"Partial run: {len(planned) - len(missing)} of {len(planned)} planned chunks "
                 f"finished (missing: {shown}); everything below uses the finished ones.",
                 bad=True)
    verified = [f for f, why in status.items() if not why]
    unverified = [f for f, why in status.items() if why == NOT_COVERED]
    if not verified and not problems:
        rep.note("This run folder holds no result file covered by its checksums (no result was "
                 "written yet, or the result files were removed).", bad=True)
    if unverified:
        shown = ", ".join(unverified[:5]) + (", …" if len(unverified) > 5 else "")
        rep.note(f"{len(unverified)} file{'s are' if len(unverified) > 1 else ' is'} not covered "
                 f"by a checksum (not written by this run, or the record was removed; nothing "
                 f"says they hold what the run computed): {shown}.", bad=True)
    if skipped:
        shown = ", ".join(rel for rel, _ in skipped[:5]) + (", …" if len(skipped) > 5 else "")
        rep.note(f"{len(skipped)} entries of the run folder were skipped, not read (symbolic "
                 f"links are never followed; only regular files are read): {shown}. See "
                 "'Skipped' below.", bad=True)
    by_kind: dict[str, list[Path]] = {".json": [], ".csv": [], ".md": [], ".png": []}
    others: list[Path] = []
    for p in files:
        by_kind.get(p.suffix.lower(), others).append(p)

    def read(p: Path) -> bytes | str:
        """The file's bytes, or why it is not read (a str)."""
        try:
            return read_regular(p, _MAX_FILE_BYTES)
        except (OSError, ValueError) as err:
            return f"not read: {err}"

    # 1. findings
    if by_kind[".md"]:
        rep.heading("Findings")
    for p in by_kind[".md"]:
        rep.heading(rel(p), 3)
        data = read(p)
        if isinstance(data, str):
            rep.note(data, bad=True)
        else:
            rep.summary(data.decode("utf-8", errors="replace"))

    # 2. figures
    if by_kind[".png"]:
        rep.heading("Figures")
    for p in by_kind[".png"]:
        data = read(p)
        name = rel(p)
        if isinstance(data, str) or not data.startswith(_PNG_SIGNATURE) or len(data) < 24:
            rep.heading(name, 3)
            rep.note(data if isinstance(data, str) else "not a valid PNG file; not embedded",
                     bad=True)
            continue
        width, height = _png_size(data)
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        rep.html.append(
            f'<figure><img src="{uri}" alt="{html.escape(name)}" width="{width}" '
            f'height="{height}"><figcaption>{html.escape(name)} ({width}&times;{height})'
            "</figcaption></figure>"
        )
        rep.md.append(f"![{_md_text(name)}]({_href(p, out_dir)})")

    # 3. tables, shortest first: (rows, file, (what, content)); the content is the text of a
    # "bad" or "pre" entry, the list of tables of a "tables" entry
    tables: list[tuple[int, Path, tuple[str, Any]]] = []
    for suffix, entry in ((".json", _json_entry), (".csv", _csv_entry)):
        for p in by_kind[suffix]:
            data = read(p)
            num_rows, content = (0, ("bad", data)) if isinstance(data, str) else entry(data)
            tables.append((num_rows, p, content))
    if tables:
        rep.heading("Tables")
    for num_rows, p, (what, content) in sorted(tables, key=lambda t: (t[0], rel(t[1]))):
        rep.heading(rel(p), 3)
        if what == "bad":
            rep.note(content, bad=True)
        elif what == "pre":
            rep.pre(content)
        else:
            for k, (caption, columns, rows) in enumerate(content):
                if k == _MAX_SUBTABLES:
                    rep.note(f"{len(content) - k} more nested tables are not shown; see the "
                             "file.")
                    break
                if caption:
                    rep.heading(caption, 4)
                rep.table(columns, rows)
            if num_rows > rep.max_rows:
                rep.link(f"full table: {rel(p)} ({num_rows} rows)", _href(p, out_dir))

    # 4. configuration and provenance
    rep.heading("Configuration")
    config = manifest["config"]
    rep.table(["parameter", "value"], [[k, v] for k, v in _flatten(config)] if config else [])
    rep.heading("Provenance")
    meta = [
        ["kind", kind],
        ["version", version],
        ["created", manifest.get("created", "")],
        ["config hash", manifest["config_hash"]],
        ["folder", printable_name(str(run_dir.resolve()))],
    ]
    if planned:
        meta.append(["chunks finished", f"{len(planned) - len(missing)} of {len(planned)}"])
    rep.table(["run", ""], meta, whole=True)
    if status:
        rep.heading("Result files", 3)
        rep.table(["file", "checksum"], [[f, why or "ok"] for f, why in status.items()])
    if chunk_rows:
        rep.heading("Result chunks", 3)
        bad = sum(r[2] != "ok" for r in chunk_rows)
        rep.note(f"{len(chunk_rows)} chunks, {bad} not usable (corrupt, moved, from another run "
                 "or unsafe to load).", bad=bool(bad))
        rep.table(["chunk", "arrays", "checksum"], chunk_rows)
    if others:
        rep.heading("Other files", 3)
        rep.table(["file", "bytes"], [[rel(p), p.stat().st_size] for p in others])
    if skipped:
        rep.heading("Skipped", 3)
        rep.table(["entry", "why"], [list(s) for s in skipped], whole=True)

    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(rep.html)
        + "\n</body>\n</html>\n"
    )
    # a lone surrogate (a JSON "\\udcff" in a table or the configuration) cannot be UTF-8:
    # written as its escape
    atomic_write_bytes(html_path, page.encode("utf-8", "backslashreplace"))
    atomic_write_bytes(md_path, ("\n\n".join(rep.md) + "\n").encode("utf-8", "backslashreplace"))
    if strict and problems:
        raise ValueError(f"run folder {run_dir} is not usable as it is: {'; '.join(problems)} "
                         f"(jaxaudit.load_results refuses it; the report, written to {html_path} "
                         f"and {md_path}, says so at its top)")
    return html_path, md_path
