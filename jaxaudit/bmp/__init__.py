"""Bayesian membership privacy for graph neural networks (Yıldırım & Khosla, arXiv 2606.04069):
the end-to-end audit and its stages, the posterior over (ε_L, ε_R) from attack counts (NUTS as a
host driver and as a traceable kernel in blackjax's terms, a grid reference), the certified bound
and the optimal-attack estimate. Model and choices: docs/bmp.md.

The maps of the BMP region, the composition theorems, sampling leakage and the sampler's
diagnostics live in their modules: :mod:`jaxaudit.bmp.region`, :mod:`jaxaudit.bmp.composition`,
:mod:`jaxaudit.bmp.leakage`, :mod:`jaxaudit.bmp.diagnostics` (the model's log densities:
:mod:`jaxaudit.bmp.likelihood`)."""

from jaxaudit.bmp import composition, diagnostics, leakage, region
from jaxaudit.bmp.audit import (
    AuditConfig,
    BmpAttack,
    BmpAudit,
    BmpNodes,
    assemble_audit,
    audit_attack,
    audit_bmp,
    audit_from_scores,
    audit_nodes,
    audit_summary,
    audit_table,
    most_leaking,
)
from jaxaudit.bmp.certified import CertifiedEpsilons, certified_epsilons
from jaxaudit.bmp.grid import GridPosterior, posterior_grid
from jaxaudit.bmp.jeffreys import JeffreysEstimate, jeffreys_estimate
from jaxaudit.bmp.likelihood import AttackPrior, LogDensity
from jaxaudit.bmp.posterior import (
    NutsConfig,
    NutsPosterior,
    PosteriorModel,
    node_log_density,
    nuts_node,
    posterior_nuts,
    posterior_quantiles,
)

__all__ = [
    "AttackPrior",
    "AuditConfig",
    "BmpAttack",
    "BmpAudit",
    "BmpNodes",
    "CertifiedEpsilons",
    "GridPosterior",
    "JeffreysEstimate",
    "LogDensity",
    "NutsConfig",
    "NutsPosterior",
    "PosteriorModel",
    "assemble_audit",
    "audit_attack",
    "audit_bmp",
    "audit_from_scores",
    "audit_nodes",
    "audit_summary",
    "audit_table",
    "certified_epsilons",
    "composition",
    "diagnostics",
    "jeffreys_estimate",
    "leakage",
    "most_leaking",
    "node_log_density",
    "nuts_node",
    "posterior_grid",
    "posterior_nuts",
    "posterior_quantiles",
    "region",
]
