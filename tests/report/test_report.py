"""``jaxaudit report``: self-contained HTML + markdown for bounds, BMP and RDP run folders."""

import base64
import html.parser
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxaudit  # noqa: E402
from jaxaudit.cli.main import main  # noqa: E402
from jaxaudit.report import render_report  # noqa: E402
from jaxaudit.runs import RunDir  # noqa: E402


class _Page(html.parser.HTMLParser):
    """Collects headings, tables (rows of cell texts), images, notes and <pre> texts."""

    def __init__(self):
        super().__init__()
        self.tags, self.tables, self.imgs, self.pres, self.notes = [], [], [], [], []
        self.headings: list[tuple[str, str]] = []
        self._text = None
        self._row = None
        self._stack = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th", "h1", "h2", "h3", "h4", "pre", "p"):
            self._text = []
            self._stack.append((tag, attrs))
        elif tag == "img":
            self.imgs.append(attrs)

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th", "h1", "h2", "h3", "h4", "pre", "p") and self._stack:
            _, attrs = self._stack.pop()
            text = "".join(self._text or [])
            self._text = None
            if tag in ("td", "th"):
                self._row.append(text)
            elif tag == "pre":
                self.pres.append(text)
            elif tag == "p":
                self.notes.append(text)
            else:
                self.headings.append((tag, text))
        elif tag == "tr":
            self.tables[-1].append(self._row)


def _png(path: Path, seed: int, size=(3.0, 2.0)) -> None:
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=size, dpi=50)
    ax.plot(rng.normal(size=20).cumsum())
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)


def _bounds_run(root: Path) -> Path:
    run = RunDir.open(
        root / "bounds", kind="bounds", config={"eps": [0.5, 1.0, 2.0], "delta": 1e-5, "n": 1000}
    )
    eps = np.linspace(0.1, 4.0, 120)
    run.write_json(
        "bounds.json",
        [{"eps": float(e), "tpr_bound": float(1 - np.exp(-e)), "label": "<b>x</b>"} for e in eps],
    )
    run.write_text("sweep.csv", "n,alpha,lower\n100,0.05,0.12\n1000,0.05,0.31\n")
    run.write_text("summary.md", "# Bounds\n\nThe tightest bound is **0.31** at n = 1000.\n")
    _png(run.path / "bounds.png", 0)
    return run.path


def _bmp_run(root: Path) -> Path:
    run = RunDir.open(
        root / "bmp",
        kind="bmp",
        config={"dataset": "cora", "num_shadow": 8, "model": {"hidden": 16, "layers": 2}},
    )
    run.save_chunk("shadow-000", {"scores": np.arange(6.0), "members": np.array([1, 0, 1])})
    run.save_chunk("shadow-001", {"scores": np.ones(6), "members": np.array([0, 0, 1])})
    run.write_json("posterior.json", {"node": [0, 1, 2], "posterior": [0.5, 0.75, 0.125]})
    run.write_json("region.json", {"eps": 1.25, "delta": 0.0, "level": 0.95})
    _png(run.path / "figures" / "posterior.png", 1)
    _png(run.path / "figures" / "roc.png", 2, size=(2.0, 2.0))
    return run.path


def _rdp_run(root: Path) -> Path:
    run = RunDir.open(root / "rdp", kind="rdp", config={"alphas": [2, 4, 8], "sigma": 1.1})
    run.write_json(
        "estimates.json",
        {
            "2": {"eps_hat": 0.41, "ci_low": 0.3, "ci_high": 0.52},
            "8": {"eps_hat": 1.9, "ci_low": 1.5, "ci_high": 2.3},
        },
    )
    run.write_json("notes.json", {"nested": {"deep": {"x": 1}}, "other": [1, 2]})
    run.write_json("raw.json", [1, {"unusual": "shape"}])
    run.write_text("log.txt", "done\n")
    _png(run.path / "rdp.png", 3)
    return run.path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    folders = {"bounds": _bounds_run(root), "bmp": _bmp_run(root), "rdp": _rdp_run(root)}
    rendered = {}
    for kind, folder in folders.items():
        html_path, md_path = render_report(folder)
        page = _Page()
        page.feed(html_path.read_text())
        rendered[kind] = (folder, html_path, md_path, page)
    return rendered


def _table_after_h2(page: _Page, caption: str, html_text: str):
    tables_before = html_text[: html_text.index(f"<h2>{caption}</h2>")].count("<table>")
    return page.tables[tables_before]


def _table_after(page: _Page, caption: str, html_text: str, level: int = 3):
    """The table following the <h3> (<h``level``>) with ``caption`` (tables appear in document
    order)."""
    tag = f"h{level}"
    tables_before = html_text[: html_text.index(f"<{tag}>{caption}</{tag}>")].count("<table>")
    return page.tables[tables_before]


@pytest.mark.parametrize("kind", ["bounds", "bmp", "rdp"])
def test_title_config_and_figures(runs, kind):
    folder, html_path, md_path, page = runs[kind]
    assert html_path == folder / "report.html" and md_path == folder / "report.md"
    h1 = [t for tag, t in page.headings if tag == "h1"]
    assert h1 == [f"jaxaudit {kind} run (jaxaudit {jaxaudit.__version__})"]
    manifest = json.loads((folder / "manifest.json").read_text())
    config_rows = {r[0]: r[1] for r in _table_after_h2(page, "Configuration", html_path.read_text())[1:]}

    def flat(d, p=""):
        for k, v in d.items():
            yield from flat(v, f"{p}{k}.") if isinstance(v, dict) else [(f"{p}{k}", v)]

    for key, value in flat(manifest["config"]):
        shown = config_rows[key]
        assert shown == (
            f"{value:.6g}"
            if isinstance(value, float)
            else json.dumps(value)
            if isinstance(value, list)
            else str(value)
        )
    # Every PNG is embedded as a data URI holding exactly the file's bytes, and decodes.
    pngs = sorted(folder.rglob("*.png"))
    assert len(page.imgs) == len(pngs) > 0
    for img, png in zip(page.imgs, pngs, strict=True):
        assert img["alt"] == png.relative_to(folder).as_posix()
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        data = base64.b64decode(img["src"][len(prefix) :], validate=True)
        assert data == png.read_bytes()
        pixels = mpimg.imread(io.BytesIO(data), format="png")
        assert (int(img["height"]), int(img["width"])) == pixels.shape[:2]
    # Self-contained: nothing is fetched from elsewhere; links point at files of the run folder.
    text = html_path.read_text()
    assert not re.search(r"""src\s*=\s*["'](?!data:)""", text)
    for href in re.findall(r"""href\s*=\s*["']([^"']+)""", text):
        assert "://" not in href and (html_path.parent / href).is_file(), href
    # The markdown references every PNG by a relative path that resolves.
    md = md_path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted((md_path.parent / link).resolve() for link in links) == [
        p.resolve() for p in pngs
    ]


def test_bounds_tables_truncated_and_escaped(runs):
    folder, html_path, md_path, page = runs["bounds"]
    text = html_path.read_text()
    table = _table_after(page, "bounds.json", text)
    records = json.loads((folder / "bounds.json").read_text())
    assert table[0] == ["eps", "tpr_bound", "label"]
    assert len(table) == 1 + 50  # header + the first 50 of 120 rows
    assert table[1] == [f"{records[0]['eps']:.6g}", f"{records[0]['tpr_bound']:.6g}", "<b>x</b>"]
    assert "Showing the first 50 of 120 rows." in page.notes
    assert "b" not in page.tags  # the cell's markup was escaped, not rendered
    assert _table_after(page, "sweep.csv", text) == [
        ["n", "alpha", "lower"],
        ["100", "0.05", "0.12"],
        ["1000", "0.05", "0.31"],
    ]
    assert any("tightest bound is **0.31**" in p for p in page.notes)  # summary paragraph
    md = md_path.read_text()
    assert "The tightest bound is **0.31** at n = 1000." in md
    assert "| eps | tpr_bound | label |" in md and "*Showing the first 50 of 120 rows.*" in md


def test_bmp_chunks_and_column_tables(runs):
    folder, html_path, _, page = runs["bmp"]
    text = html_path.read_text()
    chunks = _table_after(page, "Result chunks", text)
    assert chunks[0] == ["chunk", "arrays", "checksum"]
    assert chunks[1] == ["shadow-000", "scores float64[6], members int64[3]", "ok"]
    assert _table_after(page, "posterior.json", text) == [
        ["node", "posterior"],
        ["0", "0.5"],
        ["1", "0.75"],
        ["2", "0.125"],
    ]
    assert _table_after(page, "region.json", text)[1:] == [
        ["eps", "1.25"],
        ["delta", "0"],
        ["level", "0.95"],
    ]


def test_layout_findings_first_provenance_last(runs):
    """A person reads the findings (the run's summary, its tables as tables) and the figures
    first, then the tables (shortest first; a long one links its file), configuration last."""
    folder, html_path, md_path, page = runs["bounds"]
    text = html_path.read_text()
    order = [text.index(f"<h2>{h}</h2>") for h in ("Findings", "Figures", "Tables",
                                                  "Configuration", "Provenance")]
    assert order == sorted(order)
    assert "The tightest bound is **0.31** at n = 1000." in "".join(page.notes)
    # shortest table first: sweep.csv (2 rows) before bounds.json (120 rows, linked in full)
    assert text.index("<h3>sweep.csv</h3>") < text.index("<h3>bounds.json</h3>")
    assert re.search(r'<a href="bounds.json">full table: bounds.json \(120 rows\)</a>', text)
    # a markdown table in a summary becomes an HTML table
    run = RunDir.open(folder.parent / "md_table", kind="bmp", config={"x": 1})
    run.write_text("summary.md", "# Audit\n\n| finding | value |\n|---|---|\n| AUC | 0.61 |\n")
    html2, _ = render_report(run.path)
    p2 = _Page()
    p2.feed(html2.read_text())
    assert ["finding", "value"] in p2.tables[0] and ["AUC", "0.61"] in p2.tables[0]


def test_rdp_records_other_files_and_nested_json(runs):
    folder, html_path, md_path, page = runs["rdp"]
    text = html_path.read_text()
    assert _table_after(page, "estimates.json", text) == [
        ["key", "eps_hat", "ci_low", "ci_high"],
        ["2", "0.41", "0.3", "0.52"],
        ["8", "1.9", "1.5", "2.3"],
    ]
    other = page.tables[-1]
    assert other == [["file", "bytes"], ["log.txt", "5"]]
    # scalar fields (and short lists) in the key/value table, a nested object as a sub-table
    assert _table_after(page, "notes.json", text) == [["key", "value"], ["other", "[1, 2]"]]
    assert _table_after(page, "nested", text, level=4) == [["key", "x"], ["deep", "1"]]
    assert any('"unusual": "shape"' in p for p in page.pres)  # not a table: shown as JSON
    # Re-rendering does not list the report files themselves.
    render_report(folder)
    again = _Page()
    again.feed(html_path.read_text())
    assert again.tables[-1] == other


def test_corrupt_chunk_and_other_out_dir(tmp_path):
    folder = _bmp_run(tmp_path)
    (folder / "chunks" / "shadow-001.npz").write_bytes(b"garbage")
    html_path, md_path = render_report(folder, tmp_path / "out", max_rows=2)
    page = _Page()
    page.feed(html_path.read_text())
    text = html_path.read_text()
    assert _table_after(page, "Result chunks", text)[2] == [
        "shadow-001", "", "checksum mismatch (not used)"]
    assert "2 chunks, 1 not usable (corrupt, moved, from another run or unsafe to load)." in (
        page.notes)
    assert "Showing the first 2 of 3 rows." in page.notes
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md_path.read_text()):
        assert (md_path.parent / link).is_file()
    with pytest.raises(ValueError, match="max_rows"):
        render_report(folder, max_rows=0)


def test_partial_run_is_flagged_at_the_top(tmp_path):
    """Hostile 13: a half-finished run's report says '3 of 8' before anything else."""
    from jaxaudit.runs import RunDir, run_chunks

    names = [f"chunk{i:02d}" for i in range(8)]
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})

    def compute(name):
        if name == "chunk03":
            raise KeyboardInterrupt
        return {"scores": np.full((2, 3), float(name[-2:]))}

    with pytest.raises(KeyboardInterrupt):
        run_chunks(run, names, compute)
    html_path, _ = render_report(tmp_path / "r", tmp_path / "out")
    page = _Page()
    page.feed(html_path.read_text())
    assert page.notes[0].startswith("Partial run: 3 of 8 planned chunks finished (missing: "
                                     "chunk03, chunk04, chunk05, chunk06, chunk07)")


def test_cli(tmp_path, capsys):
    folder = _rdp_run(tmp_path)
    assert main(["report", str(folder)]) == 0
    assert f"wrote {folder / 'report.html'}" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "nothing" in capsys.readouterr().err  # the missing folder is named
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "not a jaxaudit run folder" in capsys.readouterr().err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
def test_figures_load_in_headless_chromium(runs, tmp_path):
    """Open the report from file:// in headless Chromium and read the images' natural sizes."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary found (Debian: apt-get install -y chromium)")
    folder, html_path, _, page = runs["bmp"]
    probe = (
        "<script>window.addEventListener('load', () => {"
        "const s = Array.from(document.images).map(i => i.complete + ':' + i.naturalWidth + 'x'"
        " + i.naturalHeight).join(' ');"
        "const d = document.createElement('div'); d.id = 'probe'; d.textContent = s;"
        "document.body.appendChild(d); });</script></body>"
    )
    page_path = tmp_path / "probe.html"
    # the probe is a script: the report's Content-Security-Policy (no script) is left out
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html_path.read_text())
    page_path.write_text(text.replace("</body>", probe))
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                page_path.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=90,
            env=dict(os.environ, HOME=profile),
        )
    match = re.search(r'<div id="probe">([^<]*)</div>', result.stdout)
    assert match, result.stderr[-2000:]
    expected = [f"true:{img['width']}x{img['height']}" for img in page.imgs]
    assert match.group(1).split() == expected
    assert all(int(img["width"]) > 0 for img in page.imgs)


def test_screenshot_shows_findings_and_figures_first(runs, tmp_path):
    """Headless-Chromium screenshot of the top of a report: the first screen is not blank and
    holds the figures (their colours), not only configuration tables."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary found (Debian: apt-get install -y chromium)")
    _, html_path, _, _ = runs["bounds"]
    shot = tmp_path / "top.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
             "--window-size=1100,900", f"--screenshot={shot}", html_path.as_uri()],
            capture_output=True, text=True, timeout=90, env=dict(os.environ, HOME=profile),
        )
    assert shot.is_file()
    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[:2] == (900, 1100)
    non_white = np.mean(pixels.min(axis=-1) < 0.9)
    coloured = np.mean(pixels.max(axis=-1) - pixels.min(axis=-1) > 0.2)  # the plot's line
    assert non_white > 0.01 and coloured > 1e-4, (non_white, coloured)


# -- hostile run folders ------------------------------------------------------------
def _md_to_html(md: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_symlinks_out_of_the_run_folder_are_not_followed(tmp_path):
    """A symbolic link to a credentials file (and to /etc/hostname) was read and embedded in
    report.html; a linked folder was walked. Nothing behind a link is read; the report says what
    was skipped."""
    folder = _rdp_run(tmp_path)
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "credentials.json").write_text('{"aws_secret": "TOPSECRET-1"}')
    (secret / "notes.md").write_text("TOPSECRET-2\n")
    (secret / "table.csv").write_text("k\nTOPSECRET-3\n")
    (folder / "creds.json").symlink_to(secret / "credentials.json")
    (folder / "summary.md").symlink_to(secret / "notes.md")
    (folder / "linked").symlink_to(secret, target_is_directory=True)
    os.mkfifo(folder / "pipe.csv")  # reading it would block forever
    html_path, md_path = render_report(folder)
    for path in (html_path, md_path):
        assert "TOPSECRET" not in path.read_text()
    page = _Page()
    page.feed(html_path.read_text())
    skipped = _table_after(page, "Skipped", html_path.read_text())
    assert skipped[1:] == [["creds.json", "symbolic link (not followed)"],
                           ["linked", "symbolic link (not followed)"],
                           ["pipe.csv", "not a regular file"],
                           ["summary.md", "symbolic link (not followed)"]]
    assert any(n.startswith("4 entries of the run folder were skipped") for n in page.notes)


def test_hostile_names_and_values_are_escaped_and_links_have_no_scheme(tmp_path):
    """A table file named 'javascript:…%2F%2F.json' became a clickable javascript: link in
    report.html; report.md carried raw <img onerror>/<script> from paths, config and summaries."""
    from urllib.parse import unquote, urlsplit

    run = RunDir.open(tmp_path / "r", kind="bounds",
                      config={"label": '<img src=x onerror="alert(1)">', "n": 3})
    name = "javascript:alert(document.domain)%2F%2F.json"
    run.write_json(name, [{"x": i, "tag": "<script>alert(2)</script>"} for i in range(5)])
    run.write_text("summary.md", "# Audit <script>alert(3)</script>\n\n"
                   "See [this](javascript:alert(4)) and <img src=y onerror=alert(5)>.\n\n"
                   "| finding | value |\n|---|---|\n| <b>AUC</b> | 0.61 |\n")
    run.write_text("<svg onload=alert(6)>.csv", "a\n1\n")
    html_path, md_path = render_report(run.path, max_rows=2)
    text = html_path.read_text()
    hrefs = re.findall(r"""href\s*=\s*["']([^"']*)""", text)
    assert hrefs, "the long table is linked"
    assert hrefs == ["./javascript%3Aalert%28document.domain%29%252F%252F.json"]
    for href in hrefs:
        assert urlsplit(href).scheme == "" and not href.startswith("/"), href
        assert (html_path.parent / unquote(href)).is_file(), href
    page = _Page()
    page.feed(text)
    assert "script" not in page.tags and "svg" not in page.tags and "b" not in page.tags
    assert all(i["src"].startswith("data:") for i in page.imgs)  # no <img> but figures
    assert "Content-Security-Policy" in text and "script-src" not in text  # default-src 'none'
    rendered = _md_to_html(md_path.read_text())
    for bad in ("<script", "<img", "<svg", 'href="javascript'):
        assert bad not in rendered, bad
    for href in re.findall(r'href="([^"]*)"', rendered):
        assert urlsplit(href).scheme == "", href
    assert "alert(3)" in rendered and "onerror" in rendered  # shown as text, not dropped


def test_report_refuses_non_object_deep_or_edited_manifests(tmp_path):
    """report crashed with AttributeError (a JSON list) or RecursionError (deep nesting), and
    rendered a run whose kind or plan was edited by hand."""
    folder = _rdp_run(tmp_path)
    manifest = folder / "manifest.json"
    original = manifest.read_text()
    cases = ["[1, 2, 3]", "[" * 50_000 + "]" * 50_000,
             original.replace('"kind": "rdp"', '"kind": "shadow"')]
    for text in cases:
        manifest.write_text(text)
        with pytest.raises(ValueError, match="manifest.json"):
            render_report(folder)
    manifest.write_text("[1]")
    assert main(["report", str(folder)]) == 2


def test_results_records_are_markdown_tables(tmp_path):
    """report.md printed an audit's records as one JSON blob: now a key/value table of the
    scalar fields and a table of the records (numbers to 6 significant digits), nested objects
    as sub-tables, in the HTML too."""
    run = RunDir.open(tmp_path / "r", kind="rdp", config={"sigma": 1.0})
    records = [{"order": a, "accountant": 1 / 3 * a, "dv_lower": 0.1 * a, "violation": False}
               for a in (2, 8)]
    run.write_json("results.json", {"noise_multiplier": 1.1, "delta": 1e-5,
                                    "score_files": {"in": "in.npy", "out": "out.npy"},
                                    "records": records, "violation": False})
    html_path, md_path = render_report(run.path)
    md = md_path.read_text()
    assert '"records"' not in md and "{" not in md.split("## Configuration")[0]
    assert "| order | accountant | dv_lower | violation |" in md
    assert "| 2 | 0.666667 | 0.2 | False |" in md and "| 8 | 2.66667 | 0.8 | False |" in md
    assert "| noise_multiplier | 1.1 |" in md and "| delta | 1e-05 |" in md
    assert "#### records" in md and "#### score\\_files" not in md and "#### score_files" in md
    page = _Page()
    text = html_path.read_text()
    page.feed(text)
    assert _table_after(page, "records", text, level=4) == [
        ["order", "accountant", "dv_lower", "violation"],
        ["2", "0.666667", "0.2", "False"], ["8", "2.66667", "0.8", "False"]]
    assert _table_after(page, "score_files", text, level=4) == [
        ["key", "value"], ["in", "in.npy"], ["out", "out.npy"]]


def test_zip_bomb_chunk_is_listed_not_loaded(tmp_path):
    """An .npz chunk declaring gigabytes (a zip bomb, with a valid checksum record) crashed the
    report; now its row says why it is not used."""
    import hashlib
    import zipfile

    run = RunDir.open(tmp_path / "r", kind="bmp", config={"a": 1})
    run.save_chunk("ok", {"x": np.arange(3)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            head, {"descr": "<f8", "fortran_order": False, "shape": (400_000_000,)})
        zf.writestr("x.npy", head.getvalue() + bytes(1 << 20))  # 1 MiB of the 3.2 GB it claims
    data = buf.getvalue()
    path = run.path / "chunks" / "bomb.npz"
    path.write_bytes(data)
    path.with_suffix(".npz.sha256").write_text(
        f"{hashlib.sha256(data).hexdigest()}  bomb.npz\nrun {run.manifest['config_hash']}\n")
    html_path, _ = render_report(run.path)
    page = _Page()
    text = html_path.read_text()
    page.feed(text)
    rows = {r[0]: r for r in _table_after(page, "Result chunks", text)[1:]}
    assert rows["ok"] == ["ok", "x int64[3]", "ok"]
    assert rows["bomb"][2].startswith("not used:") and "claims shape (400000000,)" in rows["bomb"][2]


def test_unwritable_out_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    """Writing report.html into a read-only or full folder gave a traceback."""
    import errno

    from jaxaudit.runs import files as rundir

    folder = _rdp_run(tmp_path)

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir, "_write_temp", full)
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "report.html" in err and "No space left" in err


def test_undecodable_file_name_is_skipped_and_named(tmp_path):
    """One file named b'bad\\xff.json' (not UTF-8) made the whole report fail with a
    UnicodeEncodeError, naming no file. Now it is skipped, named with its byte escaped."""
    folder = _rdp_run(tmp_path)
    bad = os.fsencode(folder) + b"/bad\xff.json"
    with open(bad, "wb") as f:
        f.write(b'{"secret": "NOT-READ"}')
    os.mkdir(os.fsencode(folder) + b"/dir\xfe")
    html_path, md_path = render_report(folder)
    text = html_path.read_text(encoding="utf-8")
    assert "NOT-READ" not in text
    page = _Page()
    page.feed(text)
    skipped = _table_after(page, "Skipped", text)
    assert skipped[1:] == [["bad\\xff.json", "file name is not valid UTF-8 (not read)"],
                           ["dir\\xfe", "file name is not valid UTF-8 (not read)"]]
    assert "bad\\\\xff.json" in md_path.read_text(encoding="utf-8")   # markdown-escaped
    provenance = dict(map(tuple, _table_after(page, "Provenance", text.replace(
        "<h2>Provenance</h2>", "<h3>Provenance</h3>"))[1:]))
    assert provenance["kind"] == "rdp"        # not the suffix of the last table kind read
    with pytest.warns(UserWarning) as caught:
        jaxaudit.runs.load_results(folder)
    assert sorted(str(w.message).split("/")[-1] for w in caught
                  if "not covered by a checksum" not in str(w.message)) == [
        "bad\\xff.json skipped: file name is not valid UTF-8 (not read)",
        "dir\\xfe skipped: file name is not valid UTF-8 (not read)"]


def test_bare_urls_are_not_clickable_in_the_markdown(tmp_path):
    """report.md neutralised link syntax and <autolinks>, but a bare https:// URL, a www. name
    or an e-mail address in a summary, a table or the configuration stayed clickable on GitHub
    (its "extended autolinks"). Each is shown in a code span: literal text, never a link."""
    run = RunDir.open(tmp_path / "r", kind="bounds",
                      config={"home": "https://config.example/x?a=1&b=2"})
    run.write_text("summary.md", "# Audit\n\nSee https://evil.example/login and "
                   "www.evil.example, or mail phish@evil.example; key: value, e.g. x.\n")
    run.write_json("table.json", [{"url": "http://table.example/p"}])
    _, md_path = render_report(run.path)
    md = md_path.read_text()
    for url in ("https://evil.example/login", "www.evil.example", "phish@evil.example",
                "http://table.example/p", "https://config.example/x?a=1&b=2"):
        assert f"`{url}`" in md, url
    outside_code = re.sub(r"`[^`]*`", "", md)
    assert "://" not in outside_code and "www." not in outside_code and "@" not in outside_code
    assert "key: value, e.g. x." in md                         # ordinary text untouched
    rendered = _md_to_html(md)
    assert "<code>https://evil.example/login</code>" in rendered
    assert "<a " not in rendered.split("<h2>Configuration</h2>")[0]


def test_report_of_a_large_chunk_reads_it_in_blocks(tmp_path):
    """report on a folder with a 7 GiB chunk failed with MemoryError: the chunk was read whole
    (twice) for its checksum. The checksum is now computed in blocks, and only the headers are
    read."""
    import tracemalloc

    run = RunDir.open(tmp_path / "r", kind="bmp", config={"a": 1})
    run.save_chunk("big", {"scores": np.zeros(64 << 17)})     # 64 MiB
    run.plan(["big"])
    tracemalloc.start()
    try:
        html_path, _ = render_report(run.path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    page = _Page()
    text = html_path.read_text()
    page.feed(text)
    assert _table_after(page, "Result chunks", text)[1] == ["big", f"scores float64[{64 << 17}]",
                                                            "ok"]


def _one_run_folder(root: Path) -> Path:
    run = RunDir.open(root / "one", kind="one_run", config={"seed": 0})
    run.plan(["run"])
    run.save_chunk("run", {"scores": np.arange(4.0), "included": np.arange(4) % 2 == 0})
    run.write_json("result.json", {"noise_multiplier": 1.185, "one_run": 2.3})
    return run.path


@pytest.mark.parametrize("damage", ["edit_result", "delete_result", "corrupt_chunk",
                                    "delete_chunk", "delete_chunk_and_record"])
def test_unusable_folder_exits_nonzero_and_says_so_before_the_results(tmp_path, capsys, damage):
    """`jaxaudit report` exited 0 with nothing on stderr on a corrupt or missing one-run chunk
    (load_results refuses), showed the result table before the note, and said nothing when
    result.json was deleted."""
    folder = _one_run_folder(tmp_path)
    assert main(["report", str(folder)]) == 0
    assert capsys.readouterr().err == ""
    result, chunk = folder / "result.json", folder / "chunks" / "run.npz"
    if damage == "edit_result":
        result.write_text(result.read_text().replace("1.185", "3.370"))
    elif damage == "delete_result":
        result.unlink()
    elif damage == "corrupt_chunk":
        chunk.write_bytes(b"junk")
    else:
        chunk.unlink()
        if damage == "delete_chunk_and_record":
            (folder / "chunks" / "run.npz.sha256").unlink()
    with pytest.raises(ValueError):
        jaxaudit.runs.load_results(folder)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    expected = {"edit_result": "result.json: its SHA-256 does not match",
                "delete_result": "result.json is missing",
                "corrupt_chunk": "chunk 'run': checksum mismatch",
                "delete_chunk": "chunk 'run': not used: run.npz is missing",
                "delete_chunk_and_record": "chunk 'run': missing, although"}[damage]
    assert err.startswith("jaxaudit report: error: run folder ") and expected in err
    assert err.count("\n") == 1 and "report.html" in err  # one line, naming the report
    with pytest.warns(jaxaudit.runs.rundir.RunFolderWarning, match=expected):
        render_report(folder)  # the library warns (strict=False) and writes the report
    md = (folder / "report.md").read_text()
    assert "not usable as it is" in md and expected in md
    if damage != "delete_result":  # the note comes before the result's table
        assert md.index("not usable as it is") < md.index("| noise")
