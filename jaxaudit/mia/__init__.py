"""Node-level membership inference: LiRA, RMIA, decisions, error counts, metrics
(docs/gnn_mia.md). The raw RMIA score is ``rmia_score`` (``from jaxaudit.mia.rmia import
rmia_score``), the global threshold decision ``jaxaudit.mia.decisions.threshold_decision``."""

from jaxaudit.mia.attacks import ATTACKS, attack_statistic
from jaxaudit.mia.counts import error_counts
from jaxaudit.mia.decisions import bayes_decision, fixed_fpr_decision
from jaxaudit.mia.lira import lira_loo, lira_offline
from jaxaudit.mia.metrics import membership_advantage, roc_auc, tpr_at_fpr
from jaxaudit.mia.rmia import rmia
from jaxaudit.mia.types import ErrorCounts

__all__ = [
    "ATTACKS",
    "ErrorCounts",
    "attack_statistic",
    "bayes_decision",
    "error_counts",
    "fixed_fpr_decision",
    "lira_loo",
    "lira_offline",
    "membership_advantage",
    "rmia",
    "roc_auc",
    "tpr_at_fpr",
]
