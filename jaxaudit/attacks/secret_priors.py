"""Priors over secrets: uniform digit canaries, a Zipf law over a real ranked password list, and
real name frequencies (PII).

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

* **Names** (PII, "user k's name is X"): the weighted name tables of the ``faker`` package's
  ``en_US`` person provider (version pinned, tables checked by SHA-256): the first names are the
  top 200 per sex and decade of the 1960s–1990s from the US Social Security Administration's
  baby-name counts, weighted by the number of births with each name (``first_names_female``,
  ``first_names_male``, each summing to 1); the surnames are the 1,000 most frequent of the US
  Census, weighted by their number of occurrences (``last_names``). ``kind="first"`` is the
  first-name law D(x) = ½ F(x) + ½ M(x) (the two sexes' tables mixed with equal weight, a name
  on both lists summing its two terms); ``kind="full"`` is "first last" with the first name and
  the surname independent, D(f l) = D(f) S(l), kept to its M most likely names. Names are
  lower-cased (the tables hold only the letters A–Z, a–z; the character model spells a–z and
  the space). Probabilities are conditional on the name being in the tables.

The baseline success of k guesses is the top-k prior mass (:func:`jaxaudit.bounds.top_k_mass`).

References:
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", USENIX Security 2019,
  arXiv 1802.08232 (random canaries).
  Wang, Cheng, Wang, Bai, Wu, "Zipf's Law in Passwords", IEEE TIFS 12(11), 2017.
  Wheeler, "zxcvbn: Low-Budget Password Strength Estimation", USENIX Security 2016.
  Swanberg, Annamalai, Hayes, Balle, Smith, arXiv 2507.08158 (uniform canaries, passwords and
  PII side by side, their Fig. 2).
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from jaxaudit._validation import check_choice, check_integer, check_positive

__all__ = [
    "SecretPrior",
    "ZIPF_EXPONENT",
    "ZXCVBN_VERSION",
    "ZXCVBN_PASSWORDS_SHA256",
    "digit_prior",
    "password_prior",
    "load_password_ranks",
    "FAKER_VERSION",
    "FAKER_NAMES_SHA256",
    "NAME_KINDS",
    "load_name_weights",
    "name_prior",
]

#: Zipf exponent with rank-1 mass 0.009 over 10^7 passwords (see the module docstring).
ZIPF_EXPONENT = 0.8074
#: The zxcvbn release whose list is used, and the SHA-256 of its comma-joined password list.
ZXCVBN_VERSION = "4.5.0"
ZXCVBN_PASSWORDS_SHA256 = "fd44df372670c5ab211c2d31499ce236b114b82577d7ebc8d5fb91c4bb685931"

#: The faker release whose en_US name tables are used, and the SHA-256 of the tables
#: (female, male, surname; one ``name<TAB>repr(weight)`` line per entry, tables separated by a
#: blank line, in the provider's order).
FAKER_VERSION = "40.63.0"
FAKER_NAMES_SHA256 = "1cdc03623ccd2f90cdd23605eec4ea40790d97cb95126e60802fd1d12f2b35d6"
#: ``name_prior`` kinds: first names only, or "first last" with independent parts.
NAME_KINDS = ("first", "full")
_NAME_HINT = ("the name prior needs faker==40.63.0: pip install 'jaxaudit[attacks]' "
              "(or pip install faker==40.63.0)")

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


def _name_tables_digest(tables: dict[str, dict[str, float]]) -> str:
    text = "\n\n".join("\n".join(f"{k}\t{v!r}" for k, v in table.items())
                       for table in (tables["female"], tables["male"], tables["last"]))
    return hashlib.sha256(text.encode()).hexdigest()


def load_name_weights() -> dict[str, dict[str, float]]:
    """faker's en_US name tables, version- and checksum-verified, as ``{"female", "male", "last"}``.

    Each value maps a name (as faker spells it, e.g. ``"Jennifer"``) to its weight: SSA birth
    counts of the top-200 first names per sex and decade 1960s–1990s, and US Census counts of the
    1,000 most frequent surnames, each table normalised by faker to sum to 1 (to 1e−8).

    Raises:
      ImportError: faker is not installed (the message gives the install command).
      ValueError: another faker release, or tables that differ from the pinned ones.
    """
    try:
        import faker
        from faker.providers.person.en_US import Provider
    except ImportError as err:
        raise ImportError(_NAME_HINT) from err
    version = getattr(faker, "VERSION", None)
    if version != FAKER_VERSION:
        raise ValueError(f"faker {version} is installed; {_NAME_HINT}")
    try:
        tables = {"female": dict(Provider.first_names_female),
                  "male": dict(Provider.first_names_male), "last": dict(Provider.last_names)}
    except (TypeError, ValueError) as err:  # a changed layout: not {name: weight} tables
        raise ValueError(f"faker's en_US name tables (Provider.first_names_female, "
                         f"first_names_male, last_names) are not the expected {{name: weight}} "
                         f"mappings of faker {FAKER_VERSION} ({err}); {_NAME_HINT}") from None
    digest = _name_tables_digest(tables)
    if digest != FAKER_NAMES_SHA256:
        raise ValueError(f"faker's en_US name tables have SHA-256 {digest}, expected "
                         f"{FAKER_NAMES_SHA256} (faker {FAKER_VERSION}); {_NAME_HINT}")
    return tables


def _normalised_law(weights: dict[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def _descending(names: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Indices ordering by probability, descending; equal probabilities alphabetically."""
    return np.lexsort((names, -probs))


def name_prior(size: int | None = None, kind: str = "first") -> SecretPrior:
    """Prior over real names with their real frequencies (faker's en_US SSA and Census tables).

    * ``kind="first"``: D(x) = ½ F(x) + ½ M(x) over the 690 distinct first names, F and M the
      female and male SSA tables (each normalised to 1; the 13 names on both lists, e.g.
      "jordan", sum both terms). Most likely: "michael", D = 0.0228.
    * ``kind="full"``: "first last", D(f l) = D(f) S(l) with S the Census surname table
      (normalised to 1): first name and surname independent, 690,000 names. Most likely:
      "michael smith", D = 4.95e−4.

    Names are lower-cased (all letters a–z; a full name has one space), which the character
    model spells. With ``size`` = M only the M most likely names are kept and renormalised
    (equal probabilities ordered alphabetically), as :func:`password_prior` truncates.

    Args:
      size: M, number of candidates kept (1..all); None keeps all.
      kind: ``"first"`` or ``"full"``.

    Returns:
      :class:`SecretPrior` named ``"names"``.

    Raises:
      ImportError: faker is not installed.
      ValueError: a bad argument, another faker release or changed tables.

    Examples:
      >>> p = name_prior(3)
      >>> p.candidates
      ('michael', 'david', 'james')
    """
    check_choice("kind", kind, NAME_KINDS)
    if size is not None:
        size = check_integer("size", size, minimum=1)
    tables = load_name_weights()
    first: dict[str, float] = {}
    for table in (tables["female"], tables["male"]):
        for name, w in _normalised_law(table).items():
            first[name.lower()] = first.get(name.lower(), 0.0) + 0.5 * w
    names = np.array(list(first))
    probs = np.array(list(first.values()), dtype=np.float64)
    if kind == "first":
        total = names.size
        if size is not None and size > total:
            raise ValueError(f"size must be at most {total} (first names), got {size}")
        order = _descending(names, probs)[: total if size is None else size]
        kept, cands = probs[order], names[order]
    else:
        last = _normalised_law({k.lower(): v for k, v in tables["last"].items()})
        surnames = np.array(list(last))
        total = names.size * surnames.size
        if size is not None and size > total:
            raise ValueError(f"size must be at most {total} (full names), got {size}")
        joint = np.outer(probs, np.array(list(last.values()), dtype=np.float64)).ravel()
        # Ties alphabetically by "first last": first name's, then surname's alphabetical rank.
        first_rank = np.argsort(np.argsort(names)).repeat(surnames.size)
        last_rank = np.tile(np.argsort(np.argsort(surnames)), names.size)
        order = np.lexsort((last_rank, first_rank, -joint))[: total if size is None else size]
        kept = joint[order]
        cands = np.char.add(np.char.add(names[order // surnames.size], " "),
                            surnames[order % surnames.size])
    what = ("first names, ½ female + ½ male SSA table" if kind == "first"
            else "first name × Census surname, independent")
    return SecretPrior(
        "names", tuple(str(x) for x in cands), kept / kept.sum(),
        f"faker {FAKER_VERSION} en_US names: {what}, "
        + ("all" if size is None else f"first {size}") + f" of {total}")
