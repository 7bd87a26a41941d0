"""The API reference's pages, generated from the code: one page per sub-package, in the groups of
its ``__init__`` file, every exported name with its signature and full docstring (autodoc).

The groups: the ``# comment`` lines inside ``__all__`` where the sub-package writes them
(``bounds``, ``attacks``), else the module each name is imported from (one ``from
jaxaudit.<package>.<module> import ...`` statement, one group, in the order of the imports).
``docs/conf.py`` writes the pages into ``docs/api/`` before each build; ``tests/test_surface.py``
reads the same functions (every export is on a page, in one group, with a docstring).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parents[1] / "jaxaudit"
#: The reference's order: the pillars, then their support; a sub-package not named here follows.
ORDER = ("bounds", "accounting", "stats", "mia", "graph", "bmp", "renyi", "dpsgd", "attacks",
         "datasets", "runs", "report", "sharding", "pipelines")
#: Every public sub-package and module of jaxaudit (the command line has its own ``--help``).
SUBPACKAGES = tuple(sorted(
    {p.stem for p in PACKAGE.iterdir() if not p.name.startswith("_") and p.name != "cli"
     and (p.suffix == ".py" or (p / "__init__.py").is_file())},
    key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name)))


def source_file(package: str) -> Path:
    module = importlib.import_module(f"jaxaudit.{package}")
    return Path(module.__file__)


def kind(obj: object) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "constant"


def summary(obj: object) -> str:
    """The first paragraph of ``obj``'s own docstring ('' when it has none)."""
    documented = inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)
    doc = inspect.getdoc(obj) if documented else None
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def constant_comment(package: str, name: str) -> str:
    """The ``#:`` comment above ``NAME = ...`` in the sub-package's sources ('' when none)."""
    source = source_file(package)
    files = sorted(source.parent.rglob("*.py")) if source.name == "__init__.py" else [source]
    pattern = re.compile(rf"((?:^#: .*\n)+)^{re.escape(name)}\b[^\n=]*=", re.M)
    for path in files:
        found = pattern.search(path.read_text())
        if found:
            return " ".join(line[3:].strip() for line in found.group(1).splitlines())
    return ""


#: ``|x|`` written as an absolute value, which reStructuredText reads as a substitution.
_BARS = re.compile(r"(?<![\w\\|`])\|(?=[^\s|])([^|`\n]*?[^\s\\|])\|(?![\w|])")


def escape_bars(line: str) -> str:
    """``|D⁻|`` -> ``\\|D⁻\\|`` outside inline literals and doctest lines: the docstrings write
    absolute values and set sizes as in the papers, and no docstring uses substitutions."""
    if line.lstrip().startswith((">>>", "...")):
        return line
    parts = line.split("``")
    parts[::2] = [_BARS.sub(r"\\|\1\\|", part) for part in parts[::2]]
    return "``".join(parts)


def docstring(package: str, name: str) -> str:
    """What the reference shows for ``jaxaudit.<package>.<name>``: its docstring's first
    paragraph, or a constant's ``#:`` comment ('' when neither exists)."""
    obj = getattr(importlib.import_module(f"jaxaudit.{package}"), name)
    text = summary(obj) if kind(obj) != "constant" else ""
    return text or constant_comment(package, name)


def _comment_groups(package: str, tree: ast.Module, text: str) -> list[tuple[str, list[str]]]:
    """``__all__``'s own groups: each full-line comment opens one ([] when it has none)."""
    module = importlib.import_module(f"jaxaudit.{package}")
    node = next((n for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)), None)
    if node is None or not isinstance(node.value, ast.List):
        return []
    lines = text.splitlines()[node.lineno - 1:node.end_lineno]
    comments = {node.lineno + i: line.strip().lstrip("#").strip()
                for i, line in enumerate(lines) if line.strip().startswith("#")}
    if not comments:
        return []
    groups: list[tuple[str, list[str]]] = []
    for element in node.value.elts:
        heading = max((c for c in comments if c < element.lineno), default=None)
        if heading is not None:
            title = comments[heading][:1].upper() + comments[heading][1:]
        else:  # names above the first comment: the title of the module that defines the first
            first = getattr(module, element.value) if isinstance(element, ast.Constant) else None
            title = _module_title(getattr(first, "__module__", module.__name__))
        if not groups or groups[-1][0] != title:
            groups.append((title, []))
        if isinstance(element, ast.Constant):
            groups[-1][1].append(element.value)
        elif isinstance(element, ast.Starred):  # *priors.__all__
            groups[-1][1].extend(eval(ast.unparse(element.value), vars(module)))  # noqa: S307
    return groups


def _module_title(module_name: str) -> str:
    """A short heading for a module's group: its docstring's first sentence, without citations
    in parentheses and up to a colon."""
    module = importlib.import_module(module_name)
    first = " ".join((inspect.getdoc(module) or module_name).split("\n\n")[0].split())
    title = re.split(r"(?<=[.?])\s+(?=[A-Z])", first, maxsplit=1)[0]
    title = re.sub(r"\s*\([^()]*(?:docs/|arXiv|et al|\d{4})[^()]*\)", "", title)
    title = re.split(r":\s", title, maxsplit=1)[0].rstrip(".")
    return title if len(title) <= 80 else title[:77].rsplit(" ", 1)[0] + " …"


def _isort(name: str) -> tuple[int, str]:
    """isort's order of ``__all__`` (constants, classes, functions): a list in this order says
    nothing about the order the reader should meet the names in."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def _import_groups(package: str, tree: ast.Module) -> list[tuple[str, list[str]]]:
    """One group per ``from jaxaudit.<package>.<module> import ...``, in the order of the imports
    (of ``__all__`` where its author ordered it: ``pipelines``); the modules a package exports as attributes (``from
    jaxaudit.bmp import region``) in a last group."""
    module = importlib.import_module(f"jaxaudit.{package}")
    exported = set(module.__all__)
    groups: dict[str, list[str]] = {}
    modules: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("jaxaudit"):
            continue
        if node.module == f"jaxaudit.{package}":
            modules += [a.asname or a.name for a in node.names if (a.asname or a.name) in exported]
            continue
        if any(a.name == "*" for a in node.names):
            names = list(importlib.import_module(node.module).__all__)
        else:
            names = [a.asname or a.name for a in node.names]
        names = [n for n in names if n in exported]
        if names:
            groups.setdefault(node.module, []).extend(names)
    order = {name: i for i, name in enumerate(module.__all__)}
    ranked = list(groups.items())
    if list(module.__all__) != sorted(module.__all__, key=_isort):  # ordered by its author
        ranked.sort(key=lambda item: min(order[n] for n in item[1]))
    out = [(_module_title(m), sorted(names, key=order.__getitem__)) for m, names in ranked]
    if modules:
        out.append(("Modules", modules))
    return out


def groups(package: str) -> list[tuple[str, list[str]]]:
    """The reference page's sections for ``jaxaudit.<package>``: (heading, names) in order; the
    names of all sections together are the package's ``__all__``, each once."""
    path = source_file(package)
    text = path.read_text()
    tree = ast.parse(text)
    module = importlib.import_module(f"jaxaudit.{package}")
    if path.name != "__init__.py":  # a single module (sharding): one section
        return [(_module_title(f"jaxaudit.{package}"), list(module.__all__))]
    found = _comment_groups(package, tree, text) or _import_groups(package, tree)
    placed = {n for _, names in found for n in names}
    rest = [n for n in module.__all__ if n not in placed]
    return found + ([("Other", rest)] if rest else [])


def _entry(package: str, name: str) -> Iterator[str]:
    """The autodoc directive for one exported name."""
    obj = getattr(importlib.import_module(f"jaxaudit.{package}"), name)
    full = f"jaxaudit.{package}.{name}"
    what = kind(obj)
    if what == "module":
        yield f"```{{eval-rst}}\n.. automodule:: {obj.__name__}\n   :members:\n```\n"
    elif what == "class" and hasattr(obj, "_fields"):  # a NamedTuple: its docstring names the fields
        yield f"```{{eval-rst}}\n.. autoclass:: {full}\n```\n"
    elif what == "class":  # and its own documented methods (RunDir.open, ...)
        yield f"```{{eval-rst}}\n.. autoclass:: {full}\n   :members:\n```\n"
    elif what == "function":
        yield f"```{{eval-rst}}\n.. autofunction:: {full}\n```\n"
    else:  # a constant or a type alias: its `#:` comment and its value
        comment = escape_bars(constant_comment(package, name))
        value = " ".join(repr(obj).split())
        value = value if len(value) <= 200 else value[:197] + "..."
        yield (f"```{{eval-rst}}\n.. py:data:: {full}\n   :value: {value}\n\n"
               f"   {comment}\n```\n")


def render(package: str) -> str:
    """The MyST page of ``jaxaudit.<package>``."""
    parts = [f"# `jaxaudit.{package}`\n",
             f"```{{eval-rst}}\n.. automodule:: jaxaudit.{package}\n   :no-members:\n```\n"]
    for title, names in groups(package):
        parts.append(f"## {title}\n")
        parts.append(f"```{{eval-rst}}\n.. currentmodule:: jaxaudit.{package}\n\n"
                     ".. autosummary::\n   :nosignatures:\n\n"
                     + "".join(f"   {n}\n" for n in names) + "```\n")
        for name in names:
            parts.extend(_entry(package, name))
    return "\n".join(parts)


def render_index() -> str:
    """The reference's landing page: the curated top level, then one page per sub-package."""
    import jaxaudit

    curated = [n for n in jaxaudit.__all__ if n not in SUBPACKAGES and n != "__version__"]
    rows = [f"| {{py:obj}}`{n} <jaxaudit.{jaxaudit._EXPORTS[n]}.{n}>` | "
            f"`jaxaudit.{jaxaudit._EXPORTS[n]}` |" for n in curated]
    toc = "\n".join(f"{p}" for p in SUBPACKAGES)
    total = sum(len(importlib.import_module(f"jaxaudit.{p}").__all__) for p in SUBPACKAGES)
    return f"""# API reference

Generated from the code: one page per sub-package, in the groups of its `__init__` file, every
exported name ({total} in {len(SUBPACKAGES)} sub-packages) with its signature and full
docstring, examples included (the tests run every example). Everything is imported from its
sub-package (`from jaxaudit.bounds import success_tail`); the argument names follow
[the vocabulary](../vocabulary.md).

```{{toctree}}
:maxdepth: 1

{toc}
```

## The top level

`import jaxaudit as ja` re-exports the {len(curated)} names a first script of each pillar needs:

| name | from |
|---|---|
{chr(10).join(rows)}
"""


def write_pages(folder: Path = HERE) -> list[Path]:
    """Write ``index.md`` and one ``<package>.md`` per sub-package into ``folder`` (a page whose
    text is unchanged is left alone, so Sphinx rereads only what changed)."""
    written = []
    pages = {"index": render_index(), **{p: render(p) for p in SUBPACKAGES}}
    for stem, text in pages.items():
        path = folder / f"{stem}.md"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written
