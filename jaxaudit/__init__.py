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

#: Curated top-level names -> the sub-package that defines them.
_EXPORTS: dict[str, str] = {
    # adversary-aware DP bounds
    **dict.fromkeys(
        ["posterior_success", "gain", "max_gain", "success_tail", "success_count_bound",
         "success_count_bound_fdp", "poisson_binomial_logpmf", "poisson_binomial_tail",
         "gdp_delta", "epsilon_for_success", "epsilon_for_count"], "bounds"),
    # GNN shadow models and node-level MIA
    **dict.fromkeys(
        ["Graph", "GCN", "GraphSAGE", "GAT", "train_shadow_models", "poisson_sampler", "uniform_sampler",
         "snowball_sampler", "random_walk_sampler", "inclusion_probabilities"], "graph"),
    **dict.fromkeys(
        ["ErrorCounts", "lira_loo", "bayes_decision", "error_counts", "roc_auc", "tpr_at_fpr"],
        "mia"),
    # Bayesian membership privacy
    **dict.fromkeys(
        ["posterior_nuts", "NutsConfig", "posterior_grid", "jeffreys_estimate", "audit_bmp"],
        "bmp"),
    **dict.fromkeys(["epsilons_from_errors", "region_contains"], "bmp.region"),
    "sampling_leakage": "bmp.leakage",
    # Rényi-DP auditing
    **dict.fromkeys(
        ["estimate_renyi", "RenyiEstimate", "dv_objective", "train_critic", "gaussian_renyi",
         "laplace_renyi"], "renyi"),
    **dict.fromkeys(["SmallCNN", "pretrain", "canary_runs", "audit_dpsgd", "dp_aggregate"],
                    "dpsgd"),
    **dict.fromkeys(["rdp_epsilons", "epsilon_for_delta", "noise_for_epsilon"], "accounting"),
    # data, run folders, reports, sharding
    **dict.fromkeys(["load_planetoid", "load_mnist", "make_csbm"], "datasets"),
    **dict.fromkeys(["RunDir", "load_results"], "runs"),
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
