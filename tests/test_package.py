"""The curated top-level API: every exported name resolves to the sub-package's object."""

import importlib

import pytest

import jaxaudit


def test_version():
    assert isinstance(jaxaudit.__version__, str) and jaxaudit.__version__.count(".") == 2


@pytest.mark.parametrize("name", sorted(set(jaxaudit.__all__) - {"__version__"}))
def test_exported_name_resolves(name):
    obj = getattr(jaxaudit, name)
    source = jaxaudit._EXPORTS.get(name)
    if source is not None:
        assert obj is getattr(importlib.import_module(f"jaxaudit.{source}"), name)
        assert name in importlib.import_module(f"jaxaudit.{source}").__all__
        assert obj.__doc__, f"{name} has no docstring"


def test_unknown_name():
    with pytest.raises(AttributeError):
        jaxaudit.not_a_function  # noqa: B018
