"""A training corpus with inserted secrets, in the manner of Carlini et al.'s Secret Sharer.

Records are short lines of text, one per training example (the DP unit):

* **filler**: real English sentences from the Python language reference that CPython ships
  offline in ``pydoc_data.topics`` (the text of ``help("assert")`` etc.; PSF licence). Chosen
  because it is real prose, is installed with every Python (no download, no extra package)
  and is large enough (≈ 3,500 lines of at most 62 characters). Only prose paragraphs are used (indented
  code and reST markup lines are dropped), lower-cased, with other characters turned into
  spaces, cut into sentences (long ones wrapped at word boundaries to fit one record). The text differs slightly between Python
  releases; :func:`filler_sentences` returns the Python version with the sentences.
* **secrets**: for user k = 0..n−1 one record ``"user k's password is X_k"`` with X_k drawn
  from the prior (Secret Sharer's canary template, applied to non-uniform secrets too;
  ``"user k's name is X_k"`` for the name prior). :func:`user_records` groups the records
  into users of R records each, the unit of user-level DP-SGD.

Characters are encoded over a fixed 43-symbol vocabulary: PAD, BOS, EOS, space, ``.,'`` and
``a–z0–9``; a record is BOS + text + EOS, right-padded to ``record_length``.

References:
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", USENIX Security 2019,
  arXiv 1802.08232.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxaudit._validation import check_integer
from jaxaudit.attacks.secret_priors import SecretPrior

__all__ = [
    "VOCAB",
    "PAD",
    "BOS",
    "EOS",
    "SecretCorpus",
    "encode",
    "secret_prefix",
    "secret_field",
    "filler_sentences",
    "secret_corpus",
    "user_records",
]

PAD, BOS, EOS = 0, 1, 2
VOCAB = ("<pad>", "<bos>", "<eos>", " ", ".", ",", "'",
         *"abcdefghijklmnopqrstuvwxyz", *"0123456789")
_INDEX = {c: i for i, c in enumerate(VOCAB) if len(c) == 1}
_UNKNOWN = re.compile(r"[^a-z0-9 .,']")


class SecretCorpus(NamedTuple):
    """Encoded training records and the inserted secrets.

    Attributes:
      tokens: (N, T) int32 records (BOS text EOS PAD…); secret records first, then filler.
      secrets: (n,) int32 index of each user's secret in the prior's candidates.
      num_secrets: n (the first n records hold the secrets).
    """

    tokens: jax.Array
    secrets: jax.Array
    num_secrets: int


def encode(text: str, length: int) -> np.ndarray:
    """BOS + characters + EOS, right-padded with PAD to ``length``.

    Raises:
      ValueError: a character outside the vocabulary, or the text does not fit.

    Examples:
      >>> encode("ab", 5).tolist()
      [1, 7, 8, 2, 0]
    """
    if len(text) + 2 > length:
        raise ValueError(f"text of {len(text)} characters does not fit a record of {length}")
    try:
        ids = [_INDEX[c] for c in text]
    except KeyError as err:
        raise ValueError(f"character {err.args[0]!r} is not in the vocabulary") from err
    out = np.full(length, PAD, dtype=np.int32)
    out[0], out[1:len(ids) + 1], out[len(ids) + 1] = BOS, ids, EOS
    return out


def secret_prefix(user: int, field: str = "password") -> str:
    """The template's text before the secret: ``"user k's password is "`` (``field`` names
    the secret: ``"name"`` for the name prior, ``"user k's name is "``)."""
    return f"user {int(user)}'s {field} is "


def secret_field(prior: SecretPrior) -> str:
    """The template's word for the prior's secret: ``"name"`` for names, else ``"password"``
    (digit canaries keep the Secret Sharer's template)."""
    return "name" if prior.name == "names" else "password"


def filler_sentences(max_length: int = 62) -> tuple[list[str], str]:
    """Prose of CPython's ``pydoc_data.topics`` as lower-cased lines of at most ``max_length``
    characters, in a fixed order; and the Python version they come from.

    Normalisation: lower case; every character outside the vocabulary becomes a space; runs of
    spaces collapse. The prose is cut into sentences, and a sentence longer than ``max_length``
    is wrapped at word boundaries. Lines shorter than 12 characters and repeats are dropped.

    Examples:
      >>> sentences, version = filler_sentences()
      >>> len(sentences) > 2000
      True
    """
    import textwrap
    from pydoc_data.topics import topics

    seen: set[str] = set()
    out: list[str] = []
    for name in sorted(topics):
        paragraphs: list[str] = []
        current: list[str] = []
        for line in topics[name].splitlines():
            if (not line.strip() or line.startswith((" ", "\t"))
                    or set(line.strip()) <= set("*=-~^")):
                paragraphs.append(" ".join(current))
                current = []
                continue
            current.append(line.strip())
        paragraphs.append(" ".join(current))
        for para in paragraphs:
            text = " ".join(_UNKNOWN.sub(" ", para.lower()).split())
            for sent in re.split(r"(?<=\.) ", text):
                for piece in textwrap.wrap(sent, max_length):
                    if len(piece) >= 12 and piece not in seen:
                        seen.add(piece)
                        out.append(piece)
    return out, f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"


def secret_corpus(key: jax.Array, prior: SecretPrior, *, num_secrets: int, num_filler: int,
                  record_length: int = 64, first_user: int = 0, filler_start: int = 0
                  ) -> SecretCorpus:
    """Draw X_k ~ prior for users k = first_user..first_user+n−1 and build the encoded corpus
    (secret records first, then filler).

    Filler sentences are taken in a fixed shuffled order (the same for every key), positions
    ``filler_start`` to ``filler_start + num_filler``: two corpora with disjoint position ranges
    (a private one and a public pretraining one) share no sentence.

    Args:
      key: PRNG key for the secrets.
      prior: :class:`jaxaudit.attacks.SecretPrior`.
      num_secrets: n ≥ 0 users.
      num_filler: filler records.
      record_length: T, characters per record including BOS/EOS.
      first_user: id of the first user.
      filler_start: first position in the shuffled filler order.

    Returns:
      :class:`SecretCorpus`.
    """
    num_secrets = check_integer("num_secrets", num_secrets, minimum=0)
    num_filler = check_integer("num_filler", num_filler, minimum=0)
    filler_start = check_integer("filler_start", filler_start, minimum=0)
    sentences, _ = filler_sentences(record_length - 2)
    if filler_start + num_filler > len(sentences):
        raise ValueError(f"num_filler + filler_start must be at most {len(sentences)}, "
                         f"got {num_filler!r} + {filler_start!r}")
    probs = jnp.asarray(prior.probs, jnp.float32)
    secrets = np.asarray(jax.random.choice(key, probs.shape[0], (int(num_secrets),), p=probs))
    field = secret_field(prior)
    rows = [encode(secret_prefix(first_user + u, field) + prior.candidates[s], record_length)
            for u, s in enumerate(secrets)]
    order = np.asarray(jax.random.permutation(jax.random.key(0), len(sentences)))
    pick = order[int(filler_start): int(filler_start) + int(num_filler)]
    rows += [encode(sentences[i], record_length) for i in sorted(pick)]
    if not rows:
        raise ValueError("the corpus is empty: num_secrets + num_filler must be > 0")
    return SecretCorpus(jnp.asarray(np.stack(rows)), jnp.asarray(secrets, jnp.int32),
                        int(num_secrets))


def user_records(corpus: SecretCorpus, records_per_user: int) -> jax.Array:
    """The corpus as privacy units of R = ``records_per_user`` records: (U, R, T) int32.

    User k < n contributes R copies of its record ``"user k's password is X_k"`` (the same
    secret in R records, as a user who types it R times); the filler is cut, in order, into
    users of R consecutive sentences (the last one padded with all-PAD rows, which carry no
    loss). With R = 1 every record is its own unit, as in the record-level corpus.

    Examples:
      >>> from jaxaudit.attacks.secret_priors import digit_prior
      >>> c = secret_corpus(jax.random.key(0), digit_prior(2), num_secrets=2, num_filler=5)
      >>> user_records(c, 3).shape
      (4, 3, 64)
    """
    r = check_integer("records_per_user", records_per_user, minimum=1)
    tokens = np.asarray(corpus.tokens)
    n = int(corpus.num_secrets)
    secret = np.repeat(tokens[:n, None, :], r, axis=1)
    filler = tokens[n:]
    pad = (-filler.shape[0]) % r
    filler = np.concatenate([filler, np.full((pad, tokens.shape[1]), PAD, tokens.dtype)])
    filler = filler.reshape(-1, r, tokens.shape[1])
    return jnp.asarray(np.concatenate([secret, filler]), jnp.int32)
