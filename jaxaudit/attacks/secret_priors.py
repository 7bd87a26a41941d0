"""Priors over secrets: uniform digit canaries and a Zipf law over a real ranked password list.

* **Digits** (the Secret Sharer's canaries): X uniform over the 10^L strings of L digits,
  D(x) = 10^{−L}.
* **Passwords**: the ranked list of the 30,000 most common passwords shipped by the ``zxcvbn``
  package (``zxcvbn.frequency_lists.FREQUENCY_LISTS["passwords"]``, version pinned in
  pyproject; zxcvbn built it from Mark Burnett's 10-million-password corpus, in rank order,
  without counts). Ranks become probabilities through a Zipf law, the model Wang et al. found
  to fit real password distributions:

      D(x_r) ∝ r^{−s}   over the first M usable entries (renormalised).

  The exponent is fitted to one published count: "123456", rank 1 in every large leak, was
  used by 290,731 of the more than 32.6 million RockYou accounts, 0.89 % (Imperva Application
  Defense Center, "Consumer Password Worst Practices", January 2010, as reported by SC Magazine,
  "RockYou hack reveals most common password: '123456'", and Infosecurity Magazine, 2010; the
  report's PDF itself was not read here). A Zipf law over N = 10^7 distinct passwords with rank-1 mass 0.009 has
  s = 0.8074 (:data:`ZIPF_EXPONENT`, solved with :func:`jaxaudit.bounds.zipf_prior`). Secrets
  are then drawn from the law *truncated* to the first M list entries that the character model
  can spell (lower-case letters and digits, at most 12 characters), which is the prior the
  adversary and the bound use.

The baseline success of k guesses is the top-k prior mass (:func:`jaxaudit.bounds.top_k_mass`).

References:
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", USENIX Security 2019,
  arXiv 1802.08232 (random canaries).
  Wang, Cheng, Wang, Bai, Wu, "Zipf's Law in Passwords", IEEE TIFS 12(11), 2017.
  Wheeler, "zxcvbn: Low-Budget Password Strength Estimation", USENIX Security 2016.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from jaxaudit._validation import check_integer, check_positive

__all__ = [
    "SecretPrior",
    "ZIPF_EXPONENT",
    "ZXCVBN_VERSION",
    "ZXCVBN_PASSWORDS_SHA256",
    "digit_prior",
    "password_prior",
    "load_password_ranks",
]

#: Zipf exponent with rank-1 mass 0.009 over 10^7 passwords (see the module docstring).
ZIPF_EXPONENT = 0.8074
#: The zxcvbn release whose list is used, and the SHA-256 of its comma-joined password list.
ZXCVBN_VERSION = "4.5.0"
ZXCVBN_PASSWORDS_SHA256 = "fd44df372670c5ab211c2d31499ce236b114b82577d7ebc8d5fb91c4bb685931"

_ALPHABET = set("abcdefghijklmnopqrstuvwxyz0123456789")
MAX_SECRET_LENGTH = 12


class SecretPrior(NamedTuple):
    """A prior over secrets: candidate strings and their probabilities (descending).

    Attributes:
      name: ``"digits"`` or ``"passwords"``.
      candidates: tuple of the K candidate strings, most likely first.
      probs: (K,) float64 probabilities summing to 1.
      source: where the values and the probabilities come from (one line).
    """

    name: str
    candidates: tuple
    probs: np.ndarray
    source: str


def digit_prior(length: int = 4) -> SecretPrior:
    """Uniform prior over the 10^L strings of ``length`` digits (D(x) = 10^{−L}).

    Examples:
      >>> p = digit_prior(2)
      >>> len(p.candidates), float(p.probs[0])
      (100, 0.01)
    """
    length = check_integer("length", length, minimum=1)
    if length > 6:
        raise ValueError(f"length must be an integer in [1, 6], got {length!r}")
    k = 10 ** int(length)
    cands = tuple(f"{i:0{int(length)}d}" for i in range(k))
    return SecretPrior("digits", cands, np.full(k, 1.0 / k),
                       f"uniform over the {k} strings of {int(length)} digits")


def load_password_ranks() -> list[str]:
    """zxcvbn's ranked password list (30,000 entries, most common first), checksum-verified.

    Raises:
      ImportError: zxcvbn is not installed.
      ValueError: the list differs from the pinned one (another zxcvbn release).
    """
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    ranked = FREQUENCY_LISTS["passwords"]
    ranked = ranked.split(",") if isinstance(ranked, str) else list(ranked)
    digest = hashlib.sha256(",".join(ranked).encode()).hexdigest()
    if digest != ZXCVBN_PASSWORDS_SHA256:
        raise ValueError(f"zxcvbn's password list has SHA-256 {digest}, expected "
                         f"{ZXCVBN_PASSWORDS_SHA256} (zxcvbn {ZXCVBN_VERSION}); install that "
                         "release or update the pin after checking the list")
    return ranked


def password_prior(size: int = 2000, exponent: float = ZIPF_EXPONENT) -> SecretPrior:
    """Zipf prior r^{−s} over the first ``size`` spellable entries of zxcvbn's password list.

    Ranks are the list's own (entries with other characters or longer than 12 are skipped,
    keeping the remaining ranks), so D(x_r) = r^{−s} / Σ_{kept r'} r'^{−s}.

    Args:
      size: M, number of candidates kept (1..the number of usable entries).
      exponent: Zipf exponent s > 0 (default :data:`ZIPF_EXPONENT`).

    Returns:
      :class:`SecretPrior`.

    Examples:
      >>> p = password_prior(10)
      >>> p.candidates[:3]
      ('123456', 'password', '12345678')
    """
    s = float(check_positive("exponent", exponent))
    size = check_integer("size", size, minimum=1)
    ranked = load_password_ranks()
    kept = [(r, w) for r, w in enumerate(ranked, start=1)
            if len(w) <= MAX_SECRET_LENGTH and set(w) <= _ALPHABET]
    if size > len(kept):
        raise ValueError(f"size must be at most {len(kept)} (usable entries), got {size}")
    kept = kept[: int(size)]
    ranks = np.array([r for r, _ in kept], dtype=np.float64)
    logp = -s * np.log(ranks)
    probs = np.exp(logp - np.logaddexp.reduce(logp))
    return SecretPrior(
        "passwords", tuple(w for _, w in kept), probs,
        f"zxcvbn {ZXCVBN_VERSION} password ranks, Zipf s={s:g}, first {int(size)} usable entries")
