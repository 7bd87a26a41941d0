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

Modules: ``secret_priors``, ``corpus``, ``char_model``, ``lm_training``, ``secret_extraction``
(the language-model attack); ``tabular``, ``marginals`` (the table attack); ``privacy``
(replace-one privacy profiles); ``result`` (the result next to its bound). Our choices and the
data sources are documented in ``docs/attacks.md``.
"""

from jaxaudit.attacks.char_model import CharGRU, candidate_trie, score_candidates
from jaxaudit.attacks.corpus import filler_sentences, secret_corpus
from jaxaudit.attacks.lm_training import train_dp_lm
from jaxaudit.attacks.marginals import (
    hamming_guess,
    marginals_game,
    marginals_posterior,
    marginals_reconstruction,
    release_marginals,
)
from jaxaudit.attacks.privacy import PrivacyProfile, dpsgd_privacy, gaussian_marginals_privacy
from jaxaudit.attacks.reconstruction import JointReconstruction, joint_reconstruction
from jaxaudit.attacks.result import AttackResult, attack_result
from jaxaudit.attacks.secret_extraction import (
    SCORINGS,
    SecretScores,
    attack_scores,
    extraction_result,
    pretrain_public,
    rank_secrets,
    secret_extraction,
    secret_ranks,
    secret_scores,
    train_and_score,
)
from jaxaudit.attacks.secret_priors import (
    SecretPrior,
    digit_prior,
    load_name_weights,
    load_password_ranks,
    name_prior,
    password_prior,
)
from jaxaudit.attacks.tabular import Table, load_fair

__all__ = [
    # results
    "AttackResult",
    "attack_result",
    # privacy of the attacked mechanisms
    "PrivacyProfile",
    "dpsgd_privacy",
    "gaussian_marginals_privacy",
    # secret extraction from a DP-trained language model
    "SecretPrior",
    "digit_prior",
    "password_prior",
    "load_password_ranks",
    "name_prior",
    "load_name_weights",
    "filler_sentences",
    "secret_corpus",
    "CharGRU",
    "candidate_trie",
    "score_candidates",
    "train_dp_lm",
    "pretrain_public",
    "secret_scores",
    "SCORINGS",
    "attack_scores",
    "secret_ranks",
    "rank_secrets",
    "SecretScores",
    "train_and_score",
    "extraction_result",
    "secret_extraction",
    # reconstruction from noisy marginals
    "Table",
    "load_fair",
    "marginals_game",
    "release_marginals",
    "marginals_posterior",
    "hamming_guess",
    "marginals_reconstruction",
    "JointReconstruction",
    "joint_reconstruction",
]
