"""Argument types, the help formatter and the error naming shared by the sub-commands. The
types only parse (``--seed -1`` or ``--learning-rate inf`` is refused at once with the flag's
name); the pipelines check ranges before any run folder (:func:`as_flags` names the flags)."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
from collections.abc import Callable, Iterator
from typing import Any


def _parsed(text: str, kind: type, ok: Callable[[Any], bool], what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not ((isinstance(value, int) or math.isfinite(value)) and ok(value)):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def count(text: str) -> int:
    """An integer >= 1 (models, runs, epochs, steps, chunk sizes)."""
    return _parsed(text, int, lambda v: v >= 1, "an integer >= 1")


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (a seed, a size that may be 0)."""
    return _parsed(text, int, lambda v: v >= 0, "an integer >= 0")


def finite(text: str) -> float:
    """A finite float (inf and nan refused)."""
    return _parsed(text, float, lambda v: True, "a finite number")


def positive(text: str) -> float:
    """A finite float > 0 (a learning rate, a clip norm, ε of an audit)."""
    return _parsed(text, float, lambda v: v > 0, "a finite number > 0")


def nonnegative(text: str) -> float:
    """A finite float >= 0 (a weight decay)."""
    return _parsed(text, float, lambda v: v >= 0, "a finite number >= 0")


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with ``(default: %(default)s)`` (a flag: ``(default: off)``)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default is argparse.SUPPRESS
                or isinstance(action, argparse._HelpAction | argparse._VersionAction)):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return f"{text} (default: off)"
        return text if action.default is None else f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`HelpFormatter` for itself and its sub-parsers."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def bounded(kind: Callable[[str], int], low: int, high: int) -> Callable[[str], int]:
    """An integer flag in [low, high] (the parse of ``kind``, then the upper limit)."""
    def parse(text: str) -> int:
        value = kind(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {value}")
        return value
    return parse


@contextlib.contextmanager
def as_flags(**names: str) -> Iterator[None]:
    """Re-raise a ValueError/FileNotFoundError naming flags (``learning_rate`` -> ``--learning-rate``)."""
    try:
        yield
    except (ValueError, FileNotFoundError) as err:
        msg = str(err)
        for name, flag in names.items():
            msg = re.sub(rf"(?<![\w'/.-]){name}(?![\w'/]|\.\w)", flag, msg)
        raise (FileNotFoundError if isinstance(err, FileNotFoundError) else ValueError)(msg) from err


def filled(config: Any, values: dict) -> Any:
    """``config`` with each field that ``values`` gives (not None) set, nested ones likewise."""
    return config._replace(**{f: filled(v, values) if hasattr(v, "_fields") else values[f]
                              for f, v in config._asdict().items()
                              if hasattr(v, "_fields") or values.get(f) is not None})


def worker_spec(text: str) -> tuple[int, int]:
    """``I/N``: worker I (from 0) of N independent processes on one run folder."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not int(m[1]) < int(m[2]):
        raise argparse.ArgumentTypeError(f"expected I/N with 0 <= I < N, got {text!r}")
    return int(m[1]), int(m[2])


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    """Where a sweep's units run (``--backend``, ``--ray-address``, ``--worker``); no number changes."""
    p.add_argument("--backend", choices=("serial", "ray"), default="serial", help="serial: this process computes every unit; ray: one Ray task per unit, results written by this process (pip install \"jaxaudit[ray]\"; docs/scaling.md)")
    p.add_argument("--ray-address", default=None, metavar="ADDR", help="with --backend ray: the Ray cluster (keep it on a trusted network) (default: a local cluster on 127.0.0.1)")
    p.add_argument("--worker", type=worker_spec, default=None, metavar="I/N", help="be worker I of N independent processes on one --out folder (SLURM array, shell loop): compute units I, I+N, ... not held by another; a final run without --worker completes or verifies it (default: every unit)")


def sweep_of(args: argparse.Namespace) -> Any:
    """The :class:`jaxaudit.runs.Sweep` that :func:`add_sweep_options` gives."""
    from jaxaudit.runs import Sweep

    if args.ray_address is not None and args.backend != "ray":
        raise ValueError("--ray-address needs --backend ray")
    return Sweep(backend=args.backend, ray_address=args.ray_address, worker=args.worker)
