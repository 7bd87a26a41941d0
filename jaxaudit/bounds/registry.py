"""Priors by name: the registry that the command line, the pipelines and the notebooks share.

A prior by name is a string ``"<name>:<parameters>"``; every target gets the same baseline
success p (i.i.d. secrets), the prior mass of the attacker's ``attempts`` best guesses:

- ``"uniform:K"``: a secret uniform over K values, p = min(1, k/K) (:func:`uniform_prior`;
  exact). The one-run baselines that assume a uniform prior (MMC, and Steinke et al. for K = 2)
  apply to it.
- ``"zipf:S,N"``: a Zipf secret with exponent S over N values, p = H_k(S)/H_N(S), the mass of the
  k = min(attempts, N) most likely values (:func:`zipf_top_mass`, from Hurwitz zetas; exact up
  to float64 rounding, nothing of length k or N allocated).

Per-target priors that differ are an array (:func:`summarize_bounds`) or a file (the bounds
pipeline, ``jaxaudit bounds --priors``). A new prior by name is one entry of :data:`PRIORS`: a
function ``(parameters: str, attempts: int) -> NamedPrior``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from jaxaudit._validation import ArgumentTypeError, check_integer
from jaxaudit.bounds.priors import uniform_prior, zipf_top_mass

__all__ = ["NamedPrior", "PRIORS", "prior_by_name"]


class NamedPrior(NamedTuple):
    """A prior by name, resolved (exact values, not estimates).

    Attributes:
      spec: the string it was made from, e.g. ``"uniform:10"``.
      baseline: p ∈ [0, 1], each target's baseline success with ``attempts`` guesses.
      description: a phrase for tables, e.g. ``"uniform over 10 values"``.
      uniform_support: K for a uniform prior (the one-run baselines need it), else None.
    """

    spec: str
    baseline: float
    description: str
    uniform_support: int | None


class PriorSpecError(ValueError):
    """Malformed parameters of a prior by name (a ValueError).

    Attributes:
      name: the prior's name, ``"uniform"`` or ``"zipf"``.
      params: the text after the colon, as given.
      form: what the parameters must be, e.g. ``"S,N"``.
      example: well-formed parameters, e.g. ``"0.9,10000000"``.
      detail: what is wrong with them ("" when they do not parse).
    """

    def __init__(self, name: str, params: str, form: str, example: str, detail: str = ""):
        self.name, self.params, self.form, self.example, self.detail = (
            name, params, form, example, detail)
        super().__init__(f"prior must be {name}:{form} (e.g. '{name}:{example}'), got "
                         f"{name + ':' + params!r}" + (f": {detail}" if detail else ""))

    def for_flag(self, flag: str) -> str:
        """The message for a command-line flag that takes the parameters alone (``--zipf 1``)."""
        return (f"{flag} must be {self.form} (e.g. {flag} {self.example}), got {self.params!r}"
                + (f": {self.detail}" if self.detail else ""))


def _uniform(spec: str, params: str, attempts: int) -> NamedPrior:
    try:
        support = int(params)
    except ValueError:
        raise PriorSpecError("uniform", params, "K", "10",
                             "K must be a whole number of values") from None
    if not 1 <= support <= 2**1000:
        raise PriorSpecError("uniform", params, "K", "10", "K must be a whole number of values "
                             "in 1..2**1000")
    return NamedPrior(spec, uniform_prior(support, attempts), f"uniform over {support} values",
                      support)


def _zipf(spec: str, params: str, attempts: int) -> NamedPrior:
    try:
        s_text, n_text = params.split(",")
        s, n_float = float(s_text), float(n_text)
    except ValueError:
        raise PriorSpecError("zipf", params, "S,N", "0.9,10000000") from None
    if not (math.isfinite(n_float) and n_float == int(n_float) and n_float >= 1):
        raise PriorSpecError("zipf", params, "S,N", "0.9,10000000",
                             f"N must be a whole number of values >= 1, got {n_text.strip()!r}")
    support = int(n_float)
    try:
        mass = zipf_top_mass(s, support, attempts)
    except ValueError as err:
        raise PriorSpecError("zipf", params, "S,N", "0.9,10000000", str(err)) from None
    return NamedPrior(spec, mass, f"Zipf(s={s:g}) over {support} values", None)


#: The priors by name: ``name -> function(spec, parameters, attempts) -> NamedPrior``.
PRIORS: dict[str, Callable[[str, str, int], NamedPrior]] = {"uniform": _uniform, "zipf": _zipf}


def prior_by_name(spec: str, *, attempts: int = 1) -> NamedPrior:
    """The prior called ``spec`` (``"uniform:K"`` or ``"zipf:S,N"``, see the module docstring),
    for an attacker with ``attempts`` guesses per target (top-k mass; Swanberg et al.,
    arXiv:2507.08158, Sec. 3).

    Raises:
      ValueError: an unknown name, attempts < 1; :class:`PriorSpecError` (a ValueError):
        malformed parameters (naming ``prior``).

    Examples:
      >>> prior_by_name("uniform:10").baseline
      0.1
      >>> round(prior_by_name("zipf:1,3", attempts=2).baseline, 6)   # (1 + 1/2) / (1 + 1/2 + 1/3)
      0.818182
    """
    if not isinstance(spec, str):
        raise ArgumentTypeError(f"prior must be a string such as 'uniform:10', got {spec!r}")
    attempts = check_integer("attempts", attempts, minimum=1)
    name, colon, params = spec.partition(":")
    if name.strip() not in PRIORS or not colon:
        raise ValueError(f"prior must be 'name:parameters' with name one of {sorted(PRIORS)} "
                         f"(e.g. 'uniform:10', 'zipf:0.9,10000000'), got {spec!r}")
    return PRIORS[name.strip()](spec, params.strip(), attempts)
