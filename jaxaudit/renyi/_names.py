"""Deprecated argument names of ``renyi`` and ``dpsgd`` (docs/vocabulary.md, "What was renamed").

* ``alpha`` (a Rényi order) is now ``order``/``orders``: same meaning, same position.
* ``delta``/``significance`` (a failure probability) is now ``confidence`` = 1 − failure.

An old name warns with ``DeprecationWarning`` for one release and keeps its OLD meaning.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from jaxaudit._validation import check_probability, failure_probability, is_traced

__all__ = ["failure_probability", "renamed_argument"]

P = ParamSpec("P")
R = TypeVar("R")


def renamed_argument(old: str, new: str, *, complement: bool = False
                     ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: keyword ``old`` is a deprecated alias of keyword ``new`` (warns).

    With ``complement=True`` the old argument is a failure probability and ``new`` is
    ``confidence``: ``new = 1 − old``. Giving both is a ValueError naming them.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        name = function.__name__

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if old in kwargs:
                value: Any = kwargs.pop(old)
                if new in kwargs:
                    raise ValueError(f"{name}: give {new} only ({old} is its deprecated "
                                     f"{'complement' if complement else 'name'}), not both")
                if complement:
                    warnings.warn(f"{name}({old}=...) is deprecated: it is a failure "
                                  f"probability; pass {new}=1 - {old} instead",
                                  DeprecationWarning, stacklevel=2)
                    if value is not None and not is_traced(value):
                        value = float(check_probability(old, value, open_low=True,
                                                        open_high=True))
                    kwargs[new] = None if value is None else 1.0 - value
                else:
                    warnings.warn(f"{name}({old}=...) is deprecated: pass {new}=... instead",
                                  DeprecationWarning, stacklevel=2)
                    kwargs[new] = value
            return function(*args, **kwargs)

        return wrapper

    return decorate
