"""Sphinx configuration of jaxaudit's reference site.

    uv run --extra docs sphinx-build -W -b html docs docs/_build/html

The guides are the MyST pages beside this file; the notebooks (jupytext percent scripts in
``notebooks/``) are converted to ``docs/notebooks/*.ipynb`` and rendered without being executed
(they need the data sets and long compute; the tests run them); the API reference is written into
``docs/api/`` from the code by ``docs/api/pages.py`` before each build. Both generated folders are
git-ignored.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jaxaudit  # noqa: E402

project = "jaxaudit"
author = "the jaxaudit authors"
copyright = "2026, the jaxaudit authors"  # noqa: A001
release = version = jaxaudit.__version__

extensions = [
    "myst_nb",                  # MyST markdown (the guides) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",      # Google-style Args / Returns / Examples
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",   # MathJax 3 from the package, not a CDN: the site works offline
]

# -- sources ---------------------------------------------------------------------------------------
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/.ipynb_checkpoints"]

# -- MyST and notebooks ----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3          # [text](page.md#a-heading) links in the guides resolve
nb_execution_mode = "off"         # render the notebooks as written: they need data and long compute
nb_merge_streams = True

# -- autodoc ---------------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True  # show `confidence=0.95`, not an evaluated repr
autodoc_inherit_docstrings = False
# The signatures show jax's ArrayLike by name, not the union it stands for (every module has
# `from __future__ import annotations`, so the annotations are read as written).
autodoc_type_aliases = {"ArrayLike": "jax.typing.ArrayLike", "DTypeLike": "jax.typing.DTypeLike"}
autosummary_generate = False      # the pages in docs/api/ are written by docs/api/pages.py
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True

# -- HTML ------------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = f"jaxaudit {release}"
html_static_path = ["_static"]
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": True,
    "home_page_in_toc": True,
}
pygments_style = "default"


def _load_pages():
    spec = importlib.util.spec_from_file_location("jaxaudit_docs_pages", DOCS / "api" / "pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_notebooks() -> None:
    """notebooks/*.py (jupytext percent) -> docs/notebooks/*.ipynb, outputs empty."""
    import jupytext

    out = DOCS / "notebooks"
    out.mkdir(exist_ok=True)
    for script in sorted((ROOT / "notebooks").glob("*.py")):
        notebook = jupytext.read(script, fmt="py:percent")
        text = jupytext.writes(notebook, fmt="ipynb")
        target = out / f"{script.stem}.ipynb"
        if not target.exists() or target.read_text() != text:
            target.write_text(text)


def _generate(app) -> None:
    _load_pages().write_pages(DOCS / "api")
    _write_notebooks()


#: A guide's link to a file outside docs/ (e.g. ``[timings](../benchmarks/README.md)``): it works on
#: the repository's web view, and the site shows the path instead.
_OUTSIDE = re.compile(r"\[([^\]]+)\]\((\.\./[^)\s#]+\.md)(#[^)\s]*)?\)")


def _outside_links(app, docname, source) -> None:
    def plain(match: re.Match) -> str:
        text, path = match.group(1), match.group(2)[3:]
        return text if text.strip("`") == path else f"{text} (`{path}`)"

    source[0] = _OUTSIDE.sub(plain, source[0])


def _escape_bars(app, what, name, obj, options, lines) -> None:
    """The docstrings write |x| for an absolute value or a set's size, as the papers do;
    reStructuredText would read it as an (undefined) substitution."""
    escape = _load_pages().escape_bars
    lines[:] = [escape(line) for line in lines]


def setup(app):
    app.connect("builder-inited", _generate)
    app.connect("autodoc-process-docstring", _escape_bars)
    app.connect("source-read", _outside_links)
