"""Entry point of ``jaxaudit``: each sub-command module ``jaxaudit.cli.<name>`` has ``register``
(adds its parser, sets ``func``: arguments -> exit code; jax is imported inside, so ``--help`` is
fast). Every CPU core is a JAX device unless the user chose (see ``sharding.use_all_cpu_cores``)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator

import jaxaudit
from jaxaudit._xla_flags import DEVICE_COUNT_FLAG, with_cpu_flags
from jaxaudit.cli._types import Parser

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("data", "bounds", "shadow", "bmp", "rdp", "attack", "report")


def _use_all_cpu_cores() -> None:
    """One JAX CPU device per core (the rule of ``sharding.use_all_cpu_cores``), without jax."""
    flags, env = os.environ.get("XLA_FLAGS", ""), os.environ
    if "jax" in sys.modules:  # main() called from Python after jax: that function (warns if late)
        importlib.import_module("jaxaudit.sharding").use_all_cpu_cores()
    elif not (DEVICE_COUNT_FLAG in flags or "JAX_NUM_CPU_DEVICES" in env
              or env.get("JAX_PLATFORMS", "").strip().lower() not in ("", "cpu")):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        env["XLA_FLAGS"] = with_cpu_flags(flags, max(1, cores or 1))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="jaxaudit", description="Audit the privacy of machine-learning pipelines: adversary-aware DP bounds, Bayesian membership privacy for GNNs, and Rényi-DP auditing.")
    parser.add_argument("--version", action="version", version=f"jaxaudit {jaxaudit.__version__}")
    parser.add_argument("--verbose", action="store_true", help="show the warnings and log messages of the packages jaxaudit uses (absl, dp_accounting, jax), kept out of the terminal otherwise")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"jaxaudit.cli.{name}").register(subparsers)
    return parser


@contextlib.contextmanager
def _quiet_dependencies(verbose: bool) -> Iterator[None]:
    """Unless ``verbose``: other packages' warnings and absl/jax logs below ERROR hidden."""
    names = () if verbose else ("absl", "jax", "jax._src.xla_bridge")
    loggers = {lg: lg.level for lg in map(logging.getLogger, names)}
    with warnings.catch_warnings():
        if not verbose:  # a warning from a module outside jaxaudit (the regex matches the start)
            warnings.filterwarnings("ignore", module=r"(?!jaxaudit)")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in loggers.items():
                lg.setLevel(level)


def main(argv: list[str] | None = None, *, all_cpu_cores: bool | None = None) -> int:
    """Run ``jaxaudit argv`` (None: ``sys.argv[1:]``, and ``all_cpu_cores`` unless False). Exit
    status: 0; 2 for a usage error, ValueError or OSError (one line); 130 for Ctrl-C."""
    if all_cpu_cores or (all_cpu_cores is None and argv is None):
        _use_all_cpu_cores()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error already printed
        return stop.code if isinstance(stop.code, int) else 2
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        with _quiet_dependencies(vars(args).pop("verbose", False)):  # never in a configuration
            return int(args.func(args) or 0)
    except (ValueError, OSError) as err:  # OSError: FileNotFoundError, read-only, disk full
        print(f"jaxaudit {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\njaxaudit {args.command}: interrupted (finished chunks are kept; run the same command again to resume)", file=sys.stderr)
        return 130

