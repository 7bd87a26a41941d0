"""Black-box DP-SGD audit (Annamalai & De Cristofaro, arXiv 2405.14106).

  * :class:`DpsgdConfig` — the DP-SGD recipe (C, σ, η, T, q, the per-example gradient path).
  * :class:`SmallCNN`, :class:`MLP`, :class:`LogisticRegression`, :func:`model_by_name` — the
    audited models.
  * :func:`dp_aggregate`, :func:`dp_noisy_sum` — DP-SGD's clip, sum, noise σΔ and normalisation
    as optax ``GradientTransformation`` objects (the one copy of the noisy clipped sum), with
    :func:`per_example_gradients`.
  * :func:`clipped_gradient_sum`, :func:`make_private_step`, :func:`dp_gradient_step` —
    per-example clipping (ghost norms over im2col layers, or vmap(grad)), sum, Gaussian noise,
    an optax optimiser whose state threads across steps.
  * :func:`blank_canary`, :func:`worst_case_label`, :func:`pretrain` — the worst-case setting.
  * :func:`canary_runs`, :func:`train_run` — R runs with and R without the canary, one vmapped
    call, and its traceable unit.
  * :func:`audit_dpsgd`, :class:`DpsgdAudit` — DV lower bounds next to the accountant and baselines.
  * :func:`one_run_audit`, :class:`OneRunConfig` — a one-run audit: m canaries (input or Dirac
    gradient) included by fair coins in ONE training run, every score-based bound beside the
    accountant (traceable unit: ``one_run.one_run_scores``).

Helpers stay importable from their modules: ``private_aggregate`` (``clip_and_sum``,
``noise_stddev``, ``add_gaussian_noise``, ``DPAggregateState``), ``canary_training``
(``canary_score``, ``ParamsInit``), ``models`` (``MODELS``), ``scores`` (score files).
"""

from jaxaudit.dpsgd.audit import DpsgdAudit, audit_dpsgd
from jaxaudit.dpsgd.canary import blank_canary, worst_case_label
from jaxaudit.dpsgd.canary_training import canary_runs, train_run
from jaxaudit.dpsgd.config import DpsgdConfig
from jaxaudit.dpsgd.models import MLP, LogisticRegression, SmallCNN, model_by_name
from jaxaudit.dpsgd.one_run import OneRunConfig, one_run_audit
from jaxaudit.dpsgd.pretrain import pretrain
from jaxaudit.dpsgd.private_aggregate import dp_aggregate, dp_noisy_sum, per_example_gradients
from jaxaudit.dpsgd.private_step import clipped_gradient_sum, dp_gradient_step, make_private_step

__all__ = [
    "DpsgdAudit",
    "DpsgdConfig",
    "LogisticRegression",
    "MLP",
    "OneRunConfig",
    "SmallCNN",
    "audit_dpsgd",
    "blank_canary",
    "canary_runs",
    "clipped_gradient_sum",
    "dp_aggregate",
    "dp_gradient_step",
    "dp_noisy_sum",
    "make_private_step",
    "model_by_name",
    "one_run_audit",
    "per_example_gradients",
    "pretrain",
    "train_run",
    "worst_case_label",
]
