"""Secret extraction from a DP-trained character language model, against the count bound.

The game (Swanberg et al. § 3 with the Secret Sharer's mechanism):

0. (optional, public) the model is pretrained without privacy on public text and on other
   users' secrets drawn from the same prior (:func:`pretrain_public`).
1. X_k ~ D (the prior) for users k = 0..n−1; the corpus holds one record
   ``"user k's password is X_k"`` per user and real filler text (:mod:`.corpus`).
2. M = DP-SGD fine-tuning of a character GRU (:mod:`.lm_training`), σ calibrated so that M is
   (ε, δ)-DP under replace-one neighbours (:func:`.privacy.dpsgd_privacy`).
3. The adversary, knowing D and the template, scores every candidate x by
   log p_θ(x | "user k's password is ") and guesses the top k; ℓ_k = 1 when X_k is among them.
4. p_k = top-k mass of D (the best k guesses without the model), and the bound is the f-DP count
   bound over the PLD profile of M (:func:`.result.attack_result`).

References:
  Swanberg, Annamalai, Hayes, Balle, Smith, arXiv 2507.08158 (Fig. 2: non-uniform secrets).
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", arXiv 1802.08232.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from jaxaudit._validation import check_positive, check_probability
from jaxaudit.attacks.char_model import CharGRU, candidate_trie, score_candidates
from jaxaudit.attacks.corpus import encode, secret_corpus, secret_prefix
from jaxaudit.attacks.lm_training import train_dp_lm
from jaxaudit.attacks.privacy import dpsgd_privacy
from jaxaudit.attacks.result import AttackResult, attack_result
from jaxaudit.attacks.secret_priors import SecretPrior
from jaxaudit.bounds import top_k_mass

__all__ = ["secret_extraction", "pretrain_public", "rank_secrets"]


def rank_secrets(model, params, prior: SecretPrior, num_users: int, secrets) -> np.ndarray:
    """Rank (0 = best) of each user's true secret among the candidates by model likelihood.

    Ties are broken against the attacker (a tied candidate counts as ranked above the secret).

    Returns:
      (n,) int rank of X_k; the attack with k guesses succeeds iff rank < k.
    """
    trie = candidate_trie(list(prior.candidates))
    secrets = np.asarray(secrets)
    users = range(int(num_users))
    prefixes = [encode(secret_prefix(u), len(secret_prefix(u)) + 2)[:-1] for u in users]
    scores = score_candidates(model, params, prefixes, trie)
    own = scores[np.arange(int(num_users)), secrets]
    ranks = (scores >= own[:, None]).sum(axis=1) - 1
    return ranks


def pretrain_public(key, prior: SecretPrior, *, public_secrets: int = 500,
                    public_filler: int = 1000, num_filler: int = 1000, steps: int = 300,
                    batch_size: int = 64, learning_rate: float = 3e-3, hidden_dim: int = 96,
                    record_length: int = 64, on_progress=None):
    """Non-private pretraining on public data: filler disjoint from the private corpus's, and
    ``public_secrets`` records of *other* users (ids from 10^6 on) with secrets from the same
    prior — the public knowledge of how people choose passwords that a fine-tuned model starts
    from (the paper attacks DP *fine-tuned* models).

    Returns:
      ``(model, params)``.
    """
    corpus = secret_corpus(key, prior, num_secrets=public_secrets, num_filler=public_filler,
                           record_length=record_length, first_user=10**6,
                           filler_start=num_filler)
    model = CharGRU(hidden_dim=int(hidden_dim))
    q = min(1.0, batch_size / corpus.tokens.shape[0])
    params = train_dp_lm(jax.random.fold_in(key, 1), model, corpus.tokens, steps=steps,
                         sampling_rate=q, noise_multiplier=0.0, clip_norm=1e6,
                         learning_rate=learning_rate, on_chunk=on_progress)
    return model, params


def secret_extraction(key, *, prior: SecretPrior, num_secrets: int, epsilon: float,
                      delta: float = 1e-5, guesses: int = 1, gamma: float = 0.05,
                      num_filler: int = 1000, steps: int = 300, batch_size: int = 64,
                      clip_norm: float = 1.0, learning_rate: float = 3e-3,
                      pretrained=None, hidden_dim: int = 96, record_length: int = 64,
                      on_progress: Callable[[int], None] | None = None) -> AttackResult:
    """DP-fine-tune a character GRU on a corpus with n inserted secrets and extract them.

    Args:
      key: PRNG key (secrets; training).
      prior: :class:`jaxaudit.attacks.SecretPrior` (``digit_prior`` or ``password_prior``).
      num_secrets: n users, one secret each.
      epsilon: target ε of DP-SGD under replace-one neighbours (inf: no noise; the bound is
        then vacuous).
      delta: δ ∈ (0, 1).
      guesses: k guesses per secret.
      gamma: level of the count bound.
      num_filler: filler records of real text in the private corpus.
      steps: DP-SGD steps T.
      batch_size: expected Poisson batch size qN.
      clip_norm: C.
      learning_rate: Adam step size.
      pretrained: ``(model, params)`` from :func:`pretrain_public` to fine-tune (None: train
        from scratch with a ``CharGRU(hidden_dim)``).
      hidden_dim: GRU width when training from scratch.
      record_length: characters per record.
      on_progress: callback with the number of DP-SGD steps done.

    Returns:
      :class:`AttackResult` (successes = secrets found within k guesses; priors = top-k mass).

    Raises:
      ValueError, TypeError: bad arguments (named).
    """
    check_positive("epsilon", epsilon)
    check_probability("delta", delta, open_low=True, open_high=True)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    if not isinstance(prior, SecretPrior):
        raise TypeError(f"prior must be a SecretPrior, got {type(prior).__name__}")
    if int(num_secrets) != num_secrets or num_secrets < 1:
        raise ValueError(f"num_secrets must be a positive integer, got {num_secrets!r}")
    if int(guesses) != guesses or guesses < 1:
        raise ValueError(f"guesses must be a positive integer, got {guesses!r}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    k_data, k_train = jax.random.split(key)
    corpus = secret_corpus(k_data, prior, num_secrets=num_secrets, num_filler=num_filler,
                           record_length=record_length)
    q = min(1.0, batch_size / corpus.tokens.shape[0])
    profile = dpsgd_privacy(epsilon=epsilon, delta=delta, steps=steps, sampling_rate=q)
    model, init = pretrained if pretrained is not None else (CharGRU(hidden_dim=int(hidden_dim)),
                                                              None)
    params = train_dp_lm(k_train, model, corpus.tokens, steps=steps, sampling_rate=q,
                         noise_multiplier=profile.noise, clip_norm=clip_norm,
                         learning_rate=learning_rate, init_params=init, on_chunk=on_progress)
    ranks = rank_secrets(model, params, prior, num_secrets, corpus.secrets)
    hits = ranks < int(guesses)
    p_star = float(top_k_mass(prior.probs, int(guesses)))
    probs = np.asarray(prior.probs)
    median = float(probs[min(int(np.searchsorted(np.cumsum(probs), 0.5)), probs.size - 1)])
    return attack_result(hits, np.full(int(num_secrets), p_star), profile, gamma=gamma,
                         top_prior=float(probs.max()), median_prior=median)
