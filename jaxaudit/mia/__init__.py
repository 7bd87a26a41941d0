"""Node-level membership inference: LiRA, decisions, error counts, metrics (docs/gnn_mia.md)."""

from jaxaudit.mia.counts import error_counts
from jaxaudit.mia.decisions import bayes_decision, fixed_fpr_decision, threshold_decision
from jaxaudit.mia.lira import lira_loo
from jaxaudit.mia.metrics import membership_advantage, roc_auc, tpr_at_fpr
from jaxaudit.mia.types import ErrorCounts, validate_counts

__all__ = [
    "ErrorCounts",
    "bayes_decision",
    "error_counts",
    "fixed_fpr_decision",
    "lira_loo",
    "membership_advantage",
    "roc_auc",
    "threshold_decision",
    "tpr_at_fpr",
    "validate_counts",
]
