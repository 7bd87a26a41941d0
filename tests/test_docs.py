"""Every fenced Python block in the guides (docs/*.md) runs.

The blocks of one page run in order in one namespace, from a temporary working directory (what
they write lands there), as a reader pastes them. A block that cannot run on its own says so on
the line just above its fence, with the reason, and is only compiled:

    <!-- docs-test: skip, needs the Cora files and a few minutes of training -->
    ```python

Running the pages is slow (shadow models, NUTS, canary runs): the default suite checks that every
block compiles and every skip gives its reason; ``pytest -m slow`` runs them. The docstring
examples run in tests/test_docstrings.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^(?:<!-- docs-test: (?P<marker>[^\n]*?) -->\n)?```python\n(?P<code>.*?)^```",
                   re.M | re.S)


class Block:
    def __init__(self, page: Path, match: re.Match):
        self.page, self.code, self.marker = page, match.group("code"), match.group("marker")
        self.line = page.read_text()[:match.start("code")].count("\n") + 1  # first code line

    @property
    def skipped(self) -> bool:
        return self.marker is not None

    def compiled(self):
        # blank lines up to the block's first line: a traceback names the guide's line
        return compile("\n" * (self.line - 1) + self.code, str(self.page), "exec")


def blocks(page: Path) -> list[Block]:
    return [Block(page, m) for m in FENCE.finditer(page.read_text())]


def test_the_guides_have_python_blocks():
    assert sum(len(blocks(p)) for p in PAGES) >= 10


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_block_compiles_and_every_skip_gives_its_reason(page):
    for block in blocks(page):
        block.compiled()
        if block.skipped:
            assert re.fullmatch(r"skip, \S.{9,}", block.marker), (
                f"{page.name}:{block.line}: write `<!-- docs-test: skip, <the reason> -->`")
    unknown = re.findall(r"<!-- docs-test: (?!skip, )[^\n]*-->", page.read_text())
    assert not unknown, f"{page.name}: unknown docs-test markers {unknown}"


RUN = [p for p in PAGES if any(not b.skipped for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN, ids=[p.stem for p in RUN])
def test_the_python_blocks_of_a_guide_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for block in blocks(page):
        if not block.skipped:
            exec(block.compiled(), namespace)  # noqa: S102
