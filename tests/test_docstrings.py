"""Every docstring example in the package runs and prints what it claims."""

import doctest
import importlib
import pkgutil

import pytest

import jaxaudit

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(jaxaudit.__path__, prefix="jaxaudit.")
    if not m.name.endswith("__main__")
)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs=vars(module).copy()):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def _collected() -> set[str]:
    """The docstrings test_docstring_examples runs: doctest's own finder over every module."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = set()
    for name in MODULES:
        module = importlib.import_module(name)
        found |= {t.name for t in finder.find(module, name) if t.examples}
    return found


def test_every_exported_example_is_collected():
    """A ``>>>`` example in the docstring of an exported name (what the reference site shows)
    is one that test_docstring_examples runs: none escapes the finder (a wrapper that hides
    its module, a name defined outside the package)."""
    import inspect

    collected = _collected()
    missed, checked = [], 0
    packages = [m.name for m in pkgutil.iter_modules(jaxaudit.__path__)
                if not m.name.startswith("_") and m.name != "cli"]
    for package in packages:
        module = importlib.import_module(f"jaxaudit.{package}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or ">>>" not in (inspect.getdoc(obj) or ""):
                continue
            checked += 1
            if f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', name)}" \
                    not in collected:
                missed.append(f"jaxaudit.{package}.{name}")
    assert checked >= 80 and not missed, f"examples no test runs: {missed}"
