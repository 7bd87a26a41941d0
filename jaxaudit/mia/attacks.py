"""One entry for every node-level membership attack over shadow models (docs/gnn_mia.md).

``attack_statistic(scores, masks, attack=...)`` returns an (R, N) statistic on a
log-likelihood-ratio scale (higher = more likely a member), leave-one-out: model r is the target
and the other R − 1 models are its shadow / reference models, so row r never uses model r's own
membership. ``bayes_decision(statistic, eta)`` is then the prior-aware decision.

* ``"lira"``: online LiRA, :func:`jaxaudit.mia.lira_loo` (Carlini et al., arXiv 2112.03570).
* ``"lira_offline"``: offline LiRA, :func:`jaxaudit.mia.lira_offline`.
* ``"rmia"``: RMIA (Zarifzadeh et al., arXiv 2312.03262), :func:`jaxaudit.mia.rmia`.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.typing import ArrayLike

from jaxaudit._validation import check_bool, check_choice
from jaxaudit.mia.lira import lira_loo, lira_offline
from jaxaudit.mia.rmia import rmia

__all__ = ["ATTACKS", "attack_statistic"]

#: The attacks of :func:`attack_statistic` (an audit's ``attack``): LOO LiRA, offline LiRA, RMIA.
ATTACKS: tuple[str, ...] = ("lira", "lira_offline", "rmia")

_RMIA_OPTIONS = frozenset({"gamma", "a", "population", "population_key", "calibration"})


def attack_statistic(scores: ArrayLike, masks: ArrayLike, *, attack: str = "lira",
                     fix_variance: bool = False, **options: Any) -> jax.Array:
    """The (R, N) leave-one-out membership statistic of ``attack`` (one of :data:`ATTACKS`).

    Args:
      scores: (R, N) true-class logits per shadow model and node.
      masks: (R, N) bool memberships.
      attack: ``"lira"`` (= ``lira_loo``), ``"lira_offline"`` or ``"rmia"``.
      fix_variance: LiRA's fixed-variance variant (for ``"rmia"``: of its per-node calibration).
      **options: ``"rmia"`` only: ``gamma``, ``a``, ``population``, ``population_key``,
        ``calibration`` (see :func:`jaxaudit.mia.rmia`); any other option is refused.

    Returns:
      (R, N) float32 statistic on a log-likelihood-ratio scale (higher = more likely a member).

    Raises:
      ValueError: an unknown attack or option, or bad scores / masks (named).
    """
    check_choice("attack", attack, ATTACKS)
    fix_variance = check_bool("fix_variance", fix_variance)
    allowed = _RMIA_OPTIONS if attack == "rmia" else frozenset()
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"options {unknown} are not options of attack {attack!r} (it takes "
                         f"{sorted(allowed) or 'none'})")
    if attack == "lira":
        return lira_loo(scores, masks, fix_variance=fix_variance)
    if attack == "lira_offline":
        return lira_offline(scores, masks, fix_variance=fix_variance)
    return rmia(scores, masks, fix_variance=fix_variance, **options)
