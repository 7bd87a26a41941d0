"""jaxaudit: a JAX-native functional library for auditing the privacy of ML pipelines.

Pillars (one sub-package each):
  * ``jaxaudit.bounds``: adversary-aware DP bounds and the Poisson-binomial engine;
  * ``jaxaudit.graph``, ``jaxaudit.mia``, ``jaxaudit.bmp``: GNN shadow models, node-level
    membership inference and Bayesian membership privacy;
  * ``jaxaudit.renyi``, ``jaxaudit.dpsgd``, ``jaxaudit.accounting``: Rényi-DP auditing.
Support: ``jaxaudit.datasets`` (loaders), ``jaxaudit.runs`` (resumable run folders),
``jaxaudit.report`` (HTML/markdown reports) and ``jaxaudit.sharding`` (device-sharded maps).

Sub-packages and the curated names below are imported lazily, so ``import jaxaudit`` is cheap.

Conventions: a random function takes its PRNG key first; a result is a ``NamedTuple`` of arrays
(``ErrorCounts``, ``ShadowModels``, ``RunResults``, ...), never a nested dict; a data type that
carries static metadata next to its arrays (``Graph``: ``num_classes``, ``name``;
``RenyiEstimate``: the split sizes) is a
``flax.struct`` dataclass; the ``jaxaudit`` command parses, calls public functions and prints.
The model, formulas and choices of each pillar are in ``docs/`` (bounds.md, gnn_mia.md, bmp.md,
renyi.md).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBPACKAGES = (
    "accounting", "bmp", "bounds", "datasets", "dpsgd", "graph", "mia", "renyi", "report", "runs",
    "pipelines", "sharding", "stats",
)

#: Curated top-level names -> the sub-package that defines them: what a first script of each
#: pillar needs (the API reference in docs/ shows everything else, by sub-package).
_EXPORTS: dict[str, str] = {
    # adversary-aware DP bounds
    **dict.fromkeys(
        ["posterior_success", "success_tail", "success_count_bound", "poisson_binomial_tail",
         "epsilon_for_success", "epsilon_for_count", "summarize_bounds", "PrivacyModel"],
        "bounds"),
    # GNN shadow models, node-level MIA and Bayesian membership privacy
    **dict.fromkeys(["Graph", "ShadowTraining", "train_shadow_models", "uniform_sampler",
                     "snowball_sampler"], "graph"),
    **dict.fromkeys(["ErrorCounts", "lira_loo", "bayes_decision", "error_counts", "roc_auc"],
                    "mia"),
    **dict.fromkeys(["NutsConfig", "posterior_nuts", "nuts_node", "jeffreys_estimate",
                     "AuditConfig", "audit_bmp"], "bmp"),
    # Rényi-DP auditing
    **dict.fromkeys(["estimate_renyi", "gaussian_renyi", "epsilon_lower_bounds"], "renyi"),
    **dict.fromkeys(["DpsgdConfig", "canary_runs", "audit_dpsgd", "dp_aggregate"], "dpsgd"),
    **dict.fromkeys(["rdp_epsilons", "noise_for_epsilon"], "accounting"),
    # data, run folders, reports, sharding
    **dict.fromkeys(["load_planetoid", "load_mnist", "make_csbm"], "datasets"),
    "load_results": "runs",
    "render_report": "report",
    "vmap_chunked": "sharding",
}

__all__ = ["__version__", *_SUBPACKAGES, *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"jaxaudit.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"jaxaudit.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'jaxaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
