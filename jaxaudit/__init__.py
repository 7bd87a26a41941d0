"""jaxaudit: a JAX-native functional library for auditing the privacy of ML pipelines.

Pillars (one sub-package each):
  * ``jaxaudit.bounds``: adversary-aware DP bounds and the Poisson-binomial engine;
  * ``jaxaudit.graph``, ``jaxaudit.mia``, ``jaxaudit.bmp``: GNN shadow models, node-level
    membership inference and Bayesian membership privacy;
  * ``jaxaudit.renyi``, ``jaxaudit.dpsgd``, ``jaxaudit.accounting``: Rényi-DP auditing.
Support: ``jaxaudit.datasets`` (loaders) and ``jaxaudit.runs`` (resumable run folders).

Sub-packages and the curated names below are imported lazily, so ``import jaxaudit`` is cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBPACKAGES = (
    "accounting", "bmp", "bounds", "datasets", "dpsgd", "graph", "mia", "renyi", "runs",
)

#: Curated top-level names -> the sub-package that defines them.
_EXPORTS: dict[str, str] = {
    "Graph": "datasets",
    "load_planetoid": "datasets",
    "load_mnist": "datasets",
    "make_csbm": "datasets",
    "load_results": "runs",
}

__all__ = ["__version__", *_SUBPACKAGES, *_EXPORTS]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"jaxaudit.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"jaxaudit.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'jaxaudit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
