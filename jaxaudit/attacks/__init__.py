"""Concrete attacks on real DP mechanisms, measured against the adversary-aware count bound.

Two settings of Swanberg et al. (arXiv 2507.08158), each returning an :class:`AttackResult`
(measured successes, baseline Σ p_i, count bound v_γ, ε):

* :func:`secret_extraction`: secrets ("user k's password is X_k") inserted into real text, a
  character GRU DP-fine-tuned on it (Poisson subsampling, per-example clipping, PLD accounting
  under replace-one neighbours); each user's candidates ranked by the prior times the model's
  user-calibrated likelihood ratio (default; Carlini et al.'s Secret Sharer ranks by likelihood
  alone, kept as ``scoring="likelihood"``). Priors: :func:`digit_prior` (uniform canaries) and :func:`password_prior` (Zipf over
  zxcvbn's ranked password list).
* :func:`marginals_reconstruction`: k-way marginals of Fair's affairs survey
  (:func:`load_fair`, shipped by statsmodels) released with ρ-zCDP Gaussian noise; an informed
  Bayes adversary reconstructs the targets' hidden attributes, exactly or within Hamming
  distance d (the paper's Appendix E).

Modules: ``secret_priors``, ``corpus``, ``char_model``, ``lm_training`` (:class:`LmConfig`, the
LM recipe), ``secret_extraction`` (the language-model attack); ``tabular``, ``marginals``,
``reconstruction`` (the table attacks); ``result`` (the result next to its bound, and
``attack_result`` for an attack of one's own). Helpers stay importable from their modules. The
replace-one accounting of both mechanisms is :func:`jaxaudit.accounting.dpsgd_privacy` and
:func:`jaxaudit.accounting.gaussian_marginals_privacy`. Our choices and the data sources are
documented in ``docs/attacks.md``.
"""

from jaxaudit.attacks.char_model import CharGRU
from jaxaudit.attacks.lm_training import LmConfig, train_dp_lm
from jaxaudit.attacks.marginals import marginals_game, marginals_reconstruction, release_marginals
from jaxaudit.attacks.reconstruction import ReconstructionConfig, joint_reconstruction
from jaxaudit.attacks.result import AttackResult
from jaxaudit.attacks.secret_extraction import (
    SCORINGS,
    extraction_result,
    pretrain_public,
    secret_extraction,
    train_and_score,
)
from jaxaudit.attacks.secret_priors import SecretPrior, digit_prior, name_prior, password_prior
from jaxaudit.attacks.tabular import Table, load_fair

__all__ = [
    "AttackResult",
    # secret extraction from a DP-trained language model
    "SecretPrior",
    "digit_prior",
    "password_prior",
    "name_prior",
    "CharGRU",
    "LmConfig",
    "train_dp_lm",
    "pretrain_public",
    "SCORINGS",
    "train_and_score",
    "extraction_result",
    "secret_extraction",
    # reconstruction from noisy marginals
    "Table",
    "load_fair",
    "marginals_game",
    "release_marginals",
    "marginals_reconstruction",
    "ReconstructionConfig",
    "joint_reconstruction",
]
