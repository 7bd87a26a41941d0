"""The public surface stays small and speaks one vocabulary (docs/architecture.md, "The public
surface"; docs/vocabulary.md): an export budget, few wide functions, no banned synonym or stem
(``eps_*``, ``*_lr``, ...) in any exported signature, result field or configuration field, no
imports of another package's private names, no deprecation shims, no issue numbers, and an API
reference (docs/api/pages.py) that shows every export, with a docstring, in one group of its
sub-package's page."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import subprocess
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxaudit"

# The same module that writes the reference site's API pages (docs/conf.py).
_spec = importlib.util.spec_from_file_location("api_pages", ROOT / "docs" / "api" / "pages.py")
api_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_pages)
SUBPACKAGES = api_pages.SUBPACKAGES

#: Most names exported across the sub-packages (distrax: 67 for its whole library).
EXPORT_BUDGET = 250
#: Argument names that docs/vocabulary.md rules out, with the name to use instead.
BANNED = {
    "seed": "a PRNG key first (`key`)",
    "eps": "`epsilon`",
    "significance": "`confidence` (= 1 - failure probability)",
    "level": "`confidence` (= 1 - failure probability)",
    "neighbouring": "`relation`",
    "neighboring": "`relation`",
    "alpha_order": "`order`",
    "on_progress": "`progress`",
}
#: Configuration fields that differ from the library's argument names.
BANNED_FIELDS = {"models": "`num_models`", "model_chunk": "`chunk`"}
#: Stems (regular expressions over a whole name) that docs/vocabulary.md rules out in exported
#: signatures, result fields and configuration fields, nested configurations included: one
#: concept, one name, compounds included.
STEMS = {
    r"eps|eps_\w+|\w+_eps|\w+_eps_\w+": "`epsilon` spelled out (`epsilon_left`, `epsilon_max`)",
    r"lr|\w+_lr": "`learning_rate` or `<prefix>_learning_rate`",
    r"\w+_chunk": "`chunk_size` (a vmapped in-memory batch) or `chunk` (units per saved chunk)",
    r"\w+_seed": "a PRNG key first (`key`)",
    r"(?!num_)\w+_draws|n_\w+": "a count is `num_<thing>`",
    r"hidden|hidden_(?!dims?$|attributes$)\w+": "`hidden_dim` (`hidden_dims` for several "
                                               "layers)",
    r"noise|sigma|\w+_sigma|noise_(?!multiplier$)\w+": "DP noise is `noise_multiplier`",
    r"gdp_mu|\w+_gdp_mu": "μ-GDP is `mu`",
    r"run|rundir|\w+_rundir": "a run folder is `run_dir`",
    r"bound": "`radius` (\"hoeffding\"/\"bernstein\"), `critic_bound` (the critic's M) or a "
              "name for what is bounded",
    r"\w+_level|significance_\w+": "`confidence` (coverage) or `gamma` (the bounds' γ)",
    r"\w+_[lr]": "`_left`/`_right` (`epsilon_left`, `certified_right`)",
}
#: Stems ruled out in configuration fields only: a configuration nests the library's
#: configuration rather than copying its fields under a prefix.
CONFIG_STEMS = {
    r"dp_\w+": "a nested `dp: jaxaudit.graph.NodeDp` with the library's field names",
    r"\w+_units": "`chunk` (units per saved chunk)",
}
#: The choice of concentration radius has one name, whatever function takes it.
RADIUS_CHOICES = ("hoeffding", "bernstein")


def exported() -> list[tuple[str, str, object]]:
    out = []
    for package in SUBPACKAGES:
        module = importlib.import_module(f"jaxaudit.{package}")
        out += [(package, name, getattr(module, name)) for name in module.__all__]
    return out


def parameters(obj: object) -> list[str]:
    """The parameter names a user passes: a function's, a class's constructor's (NamedTuple and
    dataclass fields included)."""
    fields = getattr(obj, "_fields", None)
    if inspect.isclass(obj) and fields is not None:
        return list(fields)
    if not callable(obj):
        return []
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters if p not in ("self", "cls")]


def _is_record(obj: object) -> bool:
    """A NamedTuple or dataclass type: a result or a configuration."""
    return inspect.isclass(obj) and (hasattr(obj, "_fields") or dataclasses.is_dataclass(obj))


def _record_fields(cls: type) -> list[tuple[str, object]]:
    """(field name, nested record type or None) of a NamedTuple or dataclass type; a field is
    nested when its default or its annotation is itself a record."""
    if hasattr(cls, "_fields"):
        names = list(cls._fields)
        defaults = dict(getattr(cls, "_field_defaults", {}))
    else:
        names = [f.name for f in dataclasses.fields(cls)]
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve outside its module
        hints = {}
    out = []
    for name in names:
        nested = type(defaults.get(name))
        if not _is_record(nested):
            nested = hints.get(name)
        out.append((name, nested if _is_record(nested) else None))
    return out


def exported_names() -> list[tuple[str, str, str, str]]:
    """Every name a user writes: (where, name, kind, owner) with kind "argument" (an exported
    function's or constructor's parameter), "field" (a result's field) or "config" (a
    configuration's field, nested configurations' fields included, ``where`` then naming the
    path, e.g. ``bmp.AuditConfig.nuts``), and ``owner`` the class or function that declares it."""
    out: list[tuple[str, str, str, str]] = []
    seen: set[tuple[str, str]] = set()

    def walk(where: str, cls: type, kind: str) -> None:
        for name, nested in _record_fields(cls):
            if (where, name) not in seen:
                seen.add((where, name))
                out.append((where, name, kind, cls.__name__))
            if nested is not None and where.count(".") < 6:
                walk(f"{where}.{name}", nested,
                     "config" if kind == "config" or nested.__name__.endswith("Config") else kind)

    for package, name, obj in exported():
        where = f"{package}.{name}"
        if _is_record(obj):
            walk(where, obj, "config" if name.endswith("Config") else "field")
        elif callable(obj):
            out += [(where, p, "argument", name) for p in parameters(obj)]
    return out


def stem_violations() -> list[tuple[str, str]]:
    """(``Owner.name``, message) for every name that breaks a rule of docs/vocabulary.md."""
    bad = []
    for where, name, kind, owner in exported_names():
        if kind == "config" and where.startswith("pipelines.") and name == "seed":
            continue  # a pipeline configuration's seed is the root of its key rule
        stems = {**STEMS, **CONFIG_STEMS} if kind == "config" else STEMS
        hits = [use for stem, use in stems.items() if re.fullmatch(stem, name)]
        if name in BANNED:
            hits.append(BANNED[name])
        if kind == "config" and name in BANNED_FIELDS:
            hits.append(BANNED_FIELDS[name])
        if hits:
            bad.append((f"{owner}.{name}", f"{where}.{name} ({kind}): use {hits[0]}"))
    for package, name, obj in exported():
        if callable(obj) and not _is_record(obj):
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            for p in sig.parameters.values():
                if p.default in RADIUS_CHOICES and p.name != "radius":
                    bad.append((f"{name}.{p.name}", f"{package}.{name}.{p.name} (argument): the "
                                                    "radius choice is `radius`"))
    return bad


def test_no_stem_that_the_vocabulary_rules_out():
    """docs/vocabulary.md, "Names that are ruled out": exact names and stems, in exported
    signatures, result fields and configuration fields (nested ones included)."""
    bad = [message for _, message in stem_violations()]
    assert not bad, f"{len(bad)} names:\n" + "\n".join(bad)


def test_the_stem_check_sees_nested_configurations():
    class Inner(typing.NamedTuple):
        vmap_chunk: int = 1

    class OuterConfig(typing.NamedTuple):
        inner: Inner = Inner()
        hidden: int = 8

    assert _record_fields(OuterConfig) == [("inner", Inner), ("hidden", None)]
    assert _record_fields(Inner) == [("vmap_chunk", None)]


def test_export_budget():
    counts = {p: len(importlib.import_module(f"jaxaudit.{p}").__all__) for p in SUBPACKAGES}
    assert sum(counts.values()) <= EXPORT_BUDGET, counts


def test_top_level_is_curated():
    import jaxaudit

    curated = [n for n in jaxaudit.__all__ if n not in SUBPACKAGES and n != "__version__"]
    assert len(curated) <= 40, curated


def _wide_exceptions() -> dict[str, int]:
    """The wide functions docs/architecture.md names with their reason (`<!-- wide -->` block)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- wide -->(.*?)<!-- /wide -->", text, flags=re.S).group(1)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"`([\w.]+)` \((\d+)", block)}


def test_at_most_three_wide_functions_each_named_with_its_reason():
    wide = {}
    for package, name, obj in exported():
        if callable(obj) and not inspect.isclass(obj):
            n = len(parameters(obj))
            if n > 10:
                wide[f"{package}.{name}"] = n
    allowed = _wide_exceptions()
    assert len(allowed) <= 3, allowed
    assert wide == allowed, f"wide exported functions {wide}; docs/architecture.md names {allowed}"


def test_no_banned_synonym_in_an_exported_signature():
    bad = []
    for package, name, obj in exported():
        if package == "pipelines" and name.endswith("Config"):
            continue  # checked below: a configuration's seed is the root of the key rule
        for p in parameters(obj):
            if p in BANNED or p.endswith("_seed"):
                bad.append(f"{package}.{name}({p}=): use {BANNED.get(p, 'a key')}")
    assert not bad, "\n".join(bad)


def test_pipeline_configurations_use_the_library_names():
    from jaxaudit import pipelines

    bad = []
    for name in pipelines.__all__:
        obj = getattr(pipelines, name)
        if not name.endswith("Config"):
            continue
        for field in parameters(obj):
            if field in BANNED_FIELDS or (field in BANNED and field != "seed") \
                    or field.endswith("_seed"):
                bad.append(f"{name}.{field}: use {BANNED_FIELDS.get(field) or BANNED.get(field)}")
    assert not bad, "\n".join(bad)


def _private_imports(path: Path) -> list[str]:
    """`from jaxaudit.X... import _name` or `import jaxaudit.X._mod` with X another unit."""
    rel = path.relative_to(PACKAGE)
    unit = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [(a.name, "") for a in node.names]
        else:
            continue
        for module, name in targets:
            parts = module.split(".")
            if parts[0] != "jaxaudit" or len(parts) < 2 or parts[1] == unit:
                continue
            inner = parts[2:] + ([name] if name else [])
            if any(p.startswith("_") and not p.startswith("__") for p in inner):
                found.append(f"{rel}:{node.lineno} imports {module}.{name}".rstrip("."))
    return found


def test_no_module_imports_another_packages_private_name():
    bad = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _private_imports(path)]
    assert not bad, "\n".join(bad)


def test_private_import_check_finds_one(tmp_path):
    probe = PACKAGE / "bmp" / "_probe_private_import.py"
    probe.write_text("from jaxaudit.stats.binomial import _hidden\n")
    try:
        assert _private_imports(probe) == [
            "bmp/_probe_private_import.py:1 imports jaxaudit.stats.binomial._hidden"]
    finally:
        probe.unlink()


def _tracked(*patterns: str) -> list[Path]:
    files = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return [ROOT / f for f in files]


def test_no_deprecation_shims_before_a_release():
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _tracked("jaxaudit")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"deprecat", line, flags=re.I)]
    assert not hits, hits


def test_code_and_docs_cite_no_issue_numbers():
    files = _tracked("jaxaudit", "docs", "README.md", "notebooks/*.py", "notebooks/scripts",
                     "notebooks/figures/*.md", "benchmarks")
    hits = []
    for p in files:
        if p.suffix not in (".py", ".md", ".sh", ".txt", ".toml"):
            continue
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"\bissues? #?\d+\b", line, flags=re.I):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}")
    assert not hits, "\n".join(hits)


def test_every_export_has_a_docstring():
    missing = [f"{package}.{name}" for package in SUBPACKAGES
               for name in importlib.import_module(f"jaxaudit.{package}").__all__
               if not api_pages.docstring(package, name)]
    assert not missing, f"exports without a docstring (or `#:` comment): {missing}"


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_the_reference_shows_every_export_once_in_a_named_group(package):
    groups = api_pages.groups(package)
    shown = [name for _, names in groups for name in names]
    exported = importlib.import_module(f"jaxaudit.{package}").__all__
    assert sorted(shown) == sorted(exported), f"jaxaudit.{package}: the page and __all__ differ"
    assert all(title and title != "Other" for title, _ in groups), groups
    page = api_pages.render(package)
    for name in exported:
        assert f"jaxaudit.{package}.{name}" in page, name


def test_the_reference_has_a_page_for_every_public_subpackage():
    public = {p.stem for p in PACKAGE.iterdir()
              if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file())}
    assert set(SUBPACKAGES) == public - {"cli"}  # the command line has its own --help
    assert SUBPACKAGES[:3] == ("bounds", "accounting", "stats")  # the pillars first


def test_no_pipeline_module_imports_another():
    """Pipelines share through the run lifecycle (pipelines/lifecycle.py) and the shadow-model
    sweep (pipelines/shadow_models.py) only (docs/architecture.md, layer 6)."""
    shared = ("lifecycle", "shadow_models")
    bad = []
    for path in sorted((PACKAGE / "pipelines").glob("*.py")):
        if path.stem in ("__init__", *shared):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[:2] == ["jaxaudit", "pipelines"] and parts[2:] not in (
                        [], *([m] for m in shared)):
                    bad.append(f"{path.name}:{node.lineno} imports {node.module}")
    assert not bad, bad
