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
