"""Secret extraction from a DP-trained character language model, against the count bound.

The game (Swanberg et al. § 3 with the Secret Sharer's mechanism):

0. (optional, public) the model is pretrained without privacy on public text and on other
   users' secrets drawn from the same prior (:func:`pretrain_public`).
1. X_k ~ D (the prior) for users k = 0..n−1; the corpus holds one record
   ``"user k's password is X_k"`` per user and real filler text (:mod:`.corpus`); with
   ``records_per_user`` R each user holds R records and is the DP unit (user-level DP-SGD).
2. M = DP-SGD fine-tuning of a character GRU (:mod:`.lm_training`), σ calibrated so that M is
   (ε, δ)-DP under replace-one neighbours (:func:`jaxaudit.accounting.dpsgd_privacy`).
3. The adversary, knowing D and the template, computes ℓ_k(x) = log p_θ(x | "user k's password
   is ") for every user k and candidate x (:func:`secret_scores`), ranks the candidates by an
   attack score (:func:`attack_scores`; default: the prior times a calibrated memorisation
   signal) and guesses the top k; a success is X_k among them.
4. p_k = top-k mass of D (the best k guesses without the model), and the bound is the f-DP count
   bound over the PLD profile of M (:func:`.result.attack_result`).

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, arXiv 2507.08158 (Fig. 2: non-uniform secrets).
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", arXiv 1802.08232 (§ 4: ranking
  by log-perplexity; exposure calibrates a canary against other candidates).
  Carlini et al., "Extracting Training Data from Large Language Models", arXiv 2012.07805
  (§ 5.2: membership inference by the ratio to a reference model's likelihood).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import numpy as np
from flax.typing import VariableDict
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_integer,
    check_nonnegative_finite,
    check_positive,
    check_probability,
)
from jaxaudit._validation.core import check_one_key
from jaxaudit.accounting import PldProfile, dpsgd_privacy
from jaxaudit.attacks.char_model import CharGRU, candidate_trie, score_candidates
from jaxaudit.attacks.corpus import (
    encode,
    secret_corpus,
    secret_field,
    secret_prefix,
    user_records,
)
from jaxaudit.attacks.lm_training import LmConfig, check_lm_config, sampling_rate, train_dp_lm
from jaxaudit.attacks.result import AttackResult, attack_result
from jaxaudit.attacks.secret_priors import SecretPrior
from jaxaudit.bounds import top_k_mass
from jaxaudit.runs import Progress

__all__ = [
    "SCORINGS",
    "SecretScores",
    "secret_extraction",
    "extraction_result",
    "train_and_score",
    "pretrain_public",
    "secret_scores",
    "attack_scores",
    "secret_ranks",
    "rank_secrets",
]

#: Attack scorings (see :func:`attack_scores`); the first is the default.
SCORINGS = ("calibrated", "likelihood", "prior", "reference")


class SecretScores(NamedTuple):
    """Everything the adversary computes from one trained model, before choosing a scoring.

    Attributes:
      scores: (n, K) float32 ℓ_k(x) = log p_θ(x, EOS | "user k's password is ") of the
        DP-fine-tuned model, for every user k and candidate x.
      reference: (n, K) float32 the same under the public pretrained model (None when the
        model was trained from scratch: there is no public reference).
      secrets: (n,) int index of each user's true secret X_k among the candidates.
      profile: the privacy profile of the training (:class:`jaxaudit.accounting.PldProfile`).
    """

    scores: np.ndarray
    reference: np.ndarray | None
    secrets: np.ndarray
    profile: PldProfile


def secret_scores(model: CharGRU, params: VariableDict, prior: SecretPrior,
                  num_users: int) -> np.ndarray:
    """ℓ_k(x) = log p_θ(x, EOS | BOS "user k's password is ") for users k < n: (n, K) float32."""
    num_users = check_integer("num_users", num_users, minimum=1)
    trie = candidate_trie(list(prior.candidates))
    field = secret_field(prior)
    prefixes = [encode(secret_prefix(u, field), len(secret_prefix(u, field)) + 2)[:-1]
                for u in range(num_users)]
    return score_candidates(model, params, prefixes, trie)


def attack_scores(scores: ArrayLike, prior: SecretPrior, scoring: str = "calibrated", *,
                  reference: ArrayLike | None = None, weight: float = 1.0) -> np.ndarray:
    """The adversary's score of every candidate x for every user k (higher = guessed first).

    With ℓ_k(x) the fine-tuned model's log-likelihood of x after user k's prefix and D the prior:

    * ``"calibrated"`` (default): log D(x) + λ·(ℓ_k(x) − mean_{j≠k} ℓ_j(x)). The residual
      compares the candidate's likelihood after k's prefix with its likelihood after the *other*
      users' prefixes (the Secret Sharer's calibration of a candidate's likelihood against a
      context that did not hold it; the other rows come with the attack at no extra cost).
      Whatever the model learnt about x without tying it to user k (x is a common password,
      x is somebody's secret) cancels; what is left is evidence that x is *k's* secret. Reading
      the residual as the log-likelihood ratio log Pr[θ | X_k = x] / Pr[θ | X_k ≠ x], the score
      is the log posterior odds of x up to a constant (Bayes: posterior ∝ prior × likelihood
      ratio), which is why λ = 1 by default; λ = 0 is the prior attack. With no user-specific
      signal (ℓ_k = ℓ_j for all j) the residual is exactly 0 and the attack makes the baseline's
      guesses (a noisy residual can still move the secret down: it is not a guarantee).
    * ``"reference"``: log D(x) + λ·(ℓ_k(x) − ℓ^ref_k(x)), the residual against the public
      pretrained model the fine-tuning started from (the reference-model ratio of Carlini et
      al. 2012.07805; the adversary has that model since pretraining is public). Keeps the
      evidence that x is in the fine-tuning set at all, not only that it is k's.
    * ``"likelihood"``: ℓ_k(x) alone (the Secret Sharer's ranking by log-perplexity; the
      model's own guess of the prior plus memorisation).
    * ``"prior"``: log D(x), the same for every user: no model, the baseline's guesses.

    Args:
      scores: (n, K) ℓ_k(x) (:func:`secret_scores`).
      prior: the :class:`SecretPrior` of the candidates (columns).
      scoring: one of :data:`SCORINGS`.
      reference: (n, K) ℓ^ref_k(x) of the public pretrained model (``"reference"`` only).
      weight: λ ≥ 0.

    Returns:
      (n, K) float64 attack scores.

    Raises:
      ValueError: unknown ``scoring``, a missing reference, shapes that do not match, n < 2
        for ``"calibrated"``.
    """
    check_choice("scoring", scoring, SCORINGS)
    lam = float(check_nonnegative_finite("weight", weight))
    ell = np.asarray(scores, np.float64)
    if ell.ndim != 2 or ell.shape[1] != len(prior.candidates):
        raise ValueError(f"scores must have shape (n, {len(prior.candidates)}), got {ell.shape}")
    log_prior = np.log(np.asarray(prior.probs, np.float64))[None, :]
    if scoring == "prior":
        return np.broadcast_to(log_prior, ell.shape).copy()
    if scoring == "likelihood":
        return ell
    if scoring == "calibrated":
        n = ell.shape[0]
        if n < 2:
            raise ValueError("scoring='calibrated' needs at least 2 users (the residual is "
                             "against the other users' prefixes)")
        others = (ell.sum(axis=0, keepdims=True) - ell) / (n - 1)
        return log_prior + lam * (ell - others)
    if reference is None:
        raise ValueError("scoring='reference' needs the reference (pretrained) model's scores; "
                         "a model trained from scratch has none")
    ref = np.asarray(reference, np.float64)
    if ref.shape != ell.shape:
        raise ValueError(f"reference must have the shape of scores {ell.shape}, got {ref.shape}")
    return log_prior + lam * (ell - ref)


def secret_ranks(scores: ArrayLike, secrets: ArrayLike) -> np.ndarray:
    """Rank (0 = best) of each user's true secret under ``scores`` (n, K): (n,) int.

    Ties are broken against the attacker (a tied candidate counts as ranked above the secret);
    the attack with k guesses succeeds iff rank < k. Scores that are not numbers never help the
    attacker: a NaN candidate counts as ranked above the secret, and a secret whose own score is
    NaN or ±inf (a diverged model: log-likelihoods are finite and ≤ 0) gets rank K, below every
    candidate, so it is never an extraction with k ≤ K guesses.
    """
    scores = np.asarray(scores)
    secrets = np.asarray(secrets)
    own = scores[np.arange(scores.shape[0]), secrets]
    above = (scores >= own[:, None]) | np.isnan(scores)
    ranks = above.sum(axis=1) - 1
    return np.where(np.isfinite(own), ranks, scores.shape[1])


def rank_secrets(model: CharGRU, params: VariableDict, prior: SecretPrior, num_users: int,
                 secrets: ArrayLike) -> np.ndarray:
    """Rank of each user's true secret by model likelihood alone (``scoring="likelihood"``).

    Returns:
      (n,) int rank of X_k; the attack with k guesses succeeds iff rank < k.
    """
    return secret_ranks(secret_scores(model, params, prior, num_users), secrets)


def pretrain_public(key: jax.Array, prior: SecretPrior, config: LmConfig, *,
                    steps: int | None = None, learning_rate: float = 3e-3,
                    public_secrets: int = 500, public_filler: int = 1000,
                    progress: Progress | None = None
                    ) -> tuple[CharGRU, VariableDict]:
    """Non-private pretraining on public data: filler disjoint from the private corpus's, and
    ``public_secrets`` records of *other* users (ids from 10^6 on) with secrets from the same
    prior — the public knowledge of how people choose passwords that a fine-tuned model starts
    from (the paper attacks DP *fine-tuned* models).

    Args:
      key: PRNG key (the public corpus; the training).
      prior: the :class:`SecretPrior` of the public users' secrets.
      config: the :class:`LmConfig` of the fine-tuning that will follow: the public filler
        starts after its ``num_filler`` private sentences; ``record_length``, ``hidden_dim``
        and ``batch_size`` are used as they are (no clipping, no noise).
      steps: pretraining steps (None: ``config.steps``).
      learning_rate: pretraining's Adam step (not ``config.learning_rate``, the fine-tuning's).
      public_secrets: public users' secret records.
      public_filler: public filler records.
      progress: optional ``progress(done, total)`` over the steps.

    Returns:
      ``(model, params)``.
    """
    check_one_key("key", key)
    config = check_lm_config(config)
    config = check_lm_config(config._replace(
        learning_rate=learning_rate, steps=config.steps if steps is None else steps))
    corpus = secret_corpus(key, prior, num_secrets=public_secrets, num_filler=public_filler,
                           record_length=config.record_length, first_user=10**6,
                           filler_start=config.num_filler)
    model = CharGRU(hidden_dim=config.hidden_dim)
    params = train_dp_lm(jax.random.fold_in(key, 1), model, corpus.tokens,
                         config._replace(clip_norm=1e6), noise_multiplier=0.0,
                         progress=progress)
    return model, params


def train_and_score(key: jax.Array, prior: SecretPrior, config: LmConfig, *, epsilon: float,
                    pretrained: tuple[CharGRU, VariableDict] | None = None,
                    progress: Progress | None = None) -> SecretScores:
    """Steps 1–3 of the game up to the adversary's likelihoods: draw the secrets, DP-fine-tune,
    and score every candidate for every user (and under the public reference model).

    Every scoring of :func:`attack_scores` can then be evaluated on the same trained model
    (:func:`extraction_result`). Arguments as in :func:`secret_extraction`; with
    ``config.records_per_user`` R the DP unit is the user (U = n + ⌈filler/R⌉ units, q = B/U).

    Returns:
      :class:`SecretScores`.
    """
    check_one_key("key", key)
    check_positive("epsilon", epsilon)
    if not isinstance(prior, SecretPrior):
        raise TypeError(f"prior must be a SecretPrior, got {type(prior).__name__}")
    config = check_lm_config(config)
    k_data, k_train = jax.random.split(key)
    corpus = secret_corpus(k_data, prior, num_secrets=config.num_secrets,
                           num_filler=config.num_filler, record_length=config.record_length)
    units = user_records(corpus, config.records_per_user)
    q = sampling_rate(config.batch_size, units.shape[0])
    profile = dpsgd_privacy(epsilon=epsilon, delta=config.delta, steps=config.steps,
                            sampling_rate=q)
    if pretrained is not None:
        model, init = pretrained
    else:
        model, init = CharGRU(hidden_dim=config.hidden_dim), None
    params = train_dp_lm(k_train, model, units, config, noise_multiplier=profile.noise_multiplier,
                         init_params=init, progress=progress)
    scores = secret_scores(model, params, prior, config.num_secrets)
    bad = int(np.size(scores) - np.isfinite(scores).sum())
    if bad:
        raise ValueError(
            f"the training diverged: {bad} of the {np.size(scores)} log-likelihoods of the "
            f"fine-tuned model are NaN or infinite (learning_rate={config.learning_rate!r}, "
            f"clip_norm={config.clip_norm!r}); lower learning_rate. A diverged model's scores "
            "are not an attack")
    reference = None if init is None else secret_scores(model, init, prior, config.num_secrets)
    return SecretScores(scores, reference, np.asarray(corpus.secrets), profile)


def extraction_result(scored: SecretScores, prior: SecretPrior, *, scoring: str = "calibrated",
                      guesses: int = 1, gamma: float = 0.05, weight: float = 1.0
                      ) -> AttackResult:
    """Step 4: the attack with ``scoring`` and k = ``guesses`` on scored models, next to the
    baseline and the bound (:func:`jaxaudit.attacks.attack_result`)."""
    guesses = check_integer("guesses", guesses, minimum=1)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    bad = int(np.size(scored.scores) - np.isfinite(np.asarray(scored.scores, np.float64)).sum())
    if bad:
        warnings.warn(f"{bad} of the model's log-likelihoods are NaN or infinite (a diverged "
                      "model): those secrets count as not extracted", RuntimeWarning,
                      stacklevel=2)
    s = attack_scores(scored.scores, prior, scoring, reference=scored.reference, weight=weight)
    hits = secret_ranks(s, scored.secrets) < guesses
    p_star = float(top_k_mass(prior.probs, guesses))
    probs = np.asarray(prior.probs)
    median = float(probs[min(int(np.searchsorted(np.cumsum(probs), 0.5)), probs.size - 1)])
    return attack_result(hits, np.full(hits.size, p_star), scored.profile, gamma=gamma,
                         top_prior=float(probs.max()), median_prior=median)


def secret_extraction(key: jax.Array, prior: SecretPrior, config: LmConfig, *,
                      epsilon: float, guesses: int = 1, gamma: float = 0.05,
                      scoring: str = "calibrated", weight: float = 1.0,
                      pretrained: tuple[CharGRU, VariableDict] | None = None,
                      progress: Progress | None = None) -> AttackResult:
    """DP-fine-tune a character GRU on a corpus with n inserted secrets and extract them.

    Args:
      key: PRNG key (secrets; training).
      prior: :class:`jaxaudit.attacks.SecretPrior` (``digit_prior``, ``password_prior`` or
        ``name_prior``).
      config: the :class:`jaxaudit.attacks.LmConfig` recipe (n secrets, corpus, GRU, DP-SGD
        steps, batch size, C, learning rate, δ).
      epsilon: target ε of DP-SGD under replace-one neighbours (inf: no noise; the bound is
        then vacuous).
      guesses: k guesses per secret.
      gamma: level of the count bound.
      scoring: how candidates are ranked, one of :data:`SCORINGS` (:func:`attack_scores`):
        ``"calibrated"`` (default, prior × user-calibrated likelihood ratio), ``"reference"``
        (prior × ratio to the public pretrained model; needs ``pretrained``), ``"likelihood"``
        (model likelihood alone), ``"prior"`` (no model: the baseline's guesses).
      weight: λ ≥ 0, the weight of the model's residual in ``"calibrated"``/``"reference"``.
      pretrained: ``(model, params)`` from :func:`pretrain_public` to fine-tune (None: train
        from scratch with a ``CharGRU(config.hidden_dim)``).
      progress: optional ``progress(done, total)`` over the DP-SGD steps.

    Returns:
      :class:`AttackResult` (successes = secrets found within k guesses; priors = top-k mass).

    Raises:
      ValueError, TypeError: bad arguments (named).

    Examples:
      >>> import jax
      >>> from jaxaudit.attacks import LmConfig, digit_prior, secret_extraction
      >>> config = LmConfig(num_secrets=3, num_filler=4, steps=2, batch_size=4, hidden_dim=8)
      >>> r = secret_extraction(jax.random.key(0), digit_prior(1), config, epsilon=8.0)
      >>> int(r.successes) <= 3
      True
    """
    check_choice("scoring", scoring, SCORINGS)
    check_nonnegative_finite("weight", weight)
    check_integer("guesses", guesses, minimum=1)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    if scoring == "reference" and pretrained is None:
        raise ValueError("scoring='reference' needs pretrained=(model, params): the reference "
                         "is the public pretrained model")
    scored = train_and_score(key, prior, config, epsilon=epsilon, pretrained=pretrained,
                             progress=progress)
    return extraction_result(scored, prior, scoring=scoring, guesses=guesses, gamma=gamma,
                             weight=weight)
