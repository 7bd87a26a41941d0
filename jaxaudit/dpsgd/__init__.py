"""Black-box DP-SGD audit (Annamalai & De Cristofaro, arXiv 2405.14106).

  * :class:`SmallCNN`, :class:`MLP`, :class:`LogisticRegression` — the audited models.
  * :func:`clipped_gradient_sum`, :func:`dp_gradient_step`, :func:`make_private_step` — per-example
    clipping (ghost norms over im2col layers, or vmap(grad)), sum, Gaussian noise.
  * :func:`dp_aggregate`, :func:`dp_noisy_sum` — DP-SGD's clip, sum, noise σΔ and normalisation
    as optax ``GradientTransformation``s (the one copy of the noisy clipped sum), with
    :func:`clip_and_sum`, :func:`per_example_gradients`, :class:`DPAggregateState`.
  * :func:`blank_canary`, :func:`worst_case_label`, :func:`pretrain` — the worst-case setting.
  * :func:`canary_runs`, :func:`train_run` — R runs with and R without the canary, one vmapped call.
  * :func:`audit_dpsgd`, :class:`OrderAudit` — DV lower bounds next to the accountant and baselines.
"""

from jaxaudit.dpsgd.audit import OrderAudit, audit_dpsgd
from jaxaudit.dpsgd.canary import blank_canary, worst_case_label
from jaxaudit.dpsgd.canary_training import ParamsInit, canary_runs, canary_score, train_run
from jaxaudit.dpsgd.models import MLP, MODELS, LogisticRegression, SmallCNN, model_by_name
from jaxaudit.dpsgd.pretrain import pretrain
from jaxaudit.dpsgd.private_aggregate import (
    DPAggregateState,
    clip_and_sum,
    dp_aggregate,
    dp_noisy_sum,
    noise_stddev,
    per_example_gradients,
)
from jaxaudit.dpsgd.private_step import (
    add_gaussian_noise,
    clipped_gradient_sum,
    dp_gradient_step,
    make_private_step,
)

__all__ = [
    "DPAggregateState",
    "LogisticRegression",
    "MLP",
    "MODELS",
    "OrderAudit",
    "ParamsInit",
    "SmallCNN",
    "add_gaussian_noise",
    "audit_dpsgd",
    "blank_canary",
    "canary_runs",
    "canary_score",
    "clip_and_sum",
    "clipped_gradient_sum",
    "dp_aggregate",
    "dp_gradient_step",
    "dp_noisy_sum",
    "make_private_step",
    "model_by_name",
    "noise_stddev",
    "per_example_gradients",
    "pretrain",
    "train_run",
    "worst_case_label",
]
