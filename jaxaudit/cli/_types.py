"""Argument types and the help formatter shared by the ``jaxaudit`` sub-commands.

The types only parse: a number of the right kind (an integer, a finite float), so that
``--seed -1`` or ``--learning-rate inf`` is refused at once with the flag's name, before any
work. Ranges that the library knows (a sampling ratio in (0, 1], δ in [0, 1), ...) are checked by
the library functions, which the commands call before they create a run folder.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re


def _integer(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def count(text: str) -> int:
    """An integer >= 1 (models, runs, epochs, steps, chunk sizes)."""
    return _integer(text, 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (a seed, a size that may be 0)."""
    return _integer(text, 0)


def finite(text: str) -> float:
    """A finite float (inf and nan refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive(text: str) -> float:
    """A finite float > 0 (a learning rate, a clip norm, ε of an audit)."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def nonnegative(text: str) -> float:
    """A finite float >= 0 (a weight decay)."""
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default: ``(default: %(default)s)`` unless the help
    already says it, ``(default: off)`` for a flag."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default is argparse.SUPPRESS
                or isinstance(action, argparse._HelpAction | argparse._VersionAction)):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return f"{text} (default: off)"
        if action.default is None:
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`HelpFormatter` for itself and its sub-parsers."""

    def __init__(self, *args, **kwargs):
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)


def bounded(kind, low: int, high: int):
    """An integer flag in [low, high] (the parse of ``kind``, then the upper limit)."""
    def parse(text: str) -> int:
        value = kind(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {value}")
        return value
    return parse


@contextlib.contextmanager
def as_flags(**names: str):
    """Re-raise a library ``ValueError`` with its argument names replaced by the flags
    (``learning_rate`` -> ``--learning-rate``)."""
    try:
        yield
    except ValueError as err:
        msg = str(err)
        for name, flag in names.items():
            msg = re.sub(rf"(?<![\w'-]){name}(?![\w'])", flag, msg)
        raise ValueError(msg) from err
