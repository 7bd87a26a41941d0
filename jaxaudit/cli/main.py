"""Entry point of the ``jaxaudit`` command.

Each sub-command lives in its own module ``jaxaudit.cli.<name>`` exposing
``register(subparsers) -> None``; ``register`` adds a parser and sets ``func`` (a callable taking
the parsed ``argparse.Namespace`` and returning an exit code). Heavy imports (jax) happen inside
``func`` so that ``jaxaudit --help`` stays fast.

Every CPU core by default: as the ``jaxaudit`` command, :func:`main` first appends
``--xla_force_host_platform_device_count=<cores>`` to ``XLA_FLAGS`` (before anything imports
jax), so JAX has one CPU device per core and the runs of every command are sharded over them
(:mod:`jaxaudit.sharding`). Nothing is changed when ``XLA_FLAGS`` already holds that flag (set
``XLA_FLAGS=--xla_force_host_platform_device_count=1`` for one device), when
``JAX_NUM_CPU_DEVICES`` is set, or when ``JAX_PLATFORMS`` names a platform other than ``cpu``.

Quiet dependencies: unless ``--verbose`` is given (before the command: ``jaxaudit --verbose rdp
...``), warnings raised by other packages (e.g. dp_accounting's absl message "Excluding this
order from the epsilon computation") are kept out of the terminal while the command runs;
jaxaudit's own warnings always show. Ctrl-C ends a command with a one-line message and exit
status 130 (what a shell reports for SIGINT); the finished chunks of a run folder are kept, so
the same command resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import sys
import warnings

import jaxaudit
from jaxaudit.cli._types import Parser

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("data", "bounds", "shadow", "bmp", "rdp", "attack", "report")

#: Same as ``jaxaudit.sharding.DEVICE_COUNT_FLAG`` (that module imports jax; this one must not).
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def _use_all_cpu_cores() -> None:
    """One JAX CPU device per core unless the user chose otherwise (the rule of
    :func:`jaxaudit.sharding.use_all_cpu_cores`), without importing jax."""
    if "jax" in sys.modules:  # main() called from Python after jax was imported
        from jaxaudit.sharding import use_all_cpu_cores

        use_all_cpu_cores()  # also warns when the backend is already initialised
        return
    flags = os.environ.get("XLA_FLAGS", "")
    platforms = os.environ.get("JAX_PLATFORMS", "").strip().lower()
    if _DEVICE_COUNT_FLAG in flags or "JAX_NUM_CPU_DEVICES" in os.environ:
        return
    if platforms not in ("", "cpu"):
        return
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    os.environ["XLA_FLAGS"] = f"{flags} {_DEVICE_COUNT_FLAG}={max(1, cores)}".strip()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="jaxaudit",
        description="Audit the privacy of machine-learning pipelines: adversary-aware DP bounds, "
        "Bayesian membership privacy for GNNs, and Rényi-DP auditing.",
    )
    parser.add_argument("--version", action="version", version=f"jaxaudit {jaxaudit.__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="show the warnings and log messages of the packages jaxaudit uses "
                        "(absl, dp_accounting, jax), kept out of the terminal otherwise")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module_name = f"jaxaudit.cli.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(subparsers)
    return parser


@contextlib.contextmanager
def _quiet_dependencies(verbose: bool):
    """Without ``verbose``: hide other packages' warnings and absl/log messages below ERROR
    while the command runs (restored afterwards; jaxaudit's own warnings still show)."""
    if verbose:
        yield
        return
    loggers = [logging.getLogger(name) for name in ("absl", "jax", "jax._src.xla_bridge")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        # a warning attributed to a module outside jaxaudit (the regex must match from the start)
        warnings.filterwarnings("ignore", module=r"(?!jaxaudit)")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


def main(argv: list[str] | None = None, *, all_cpu_cores: bool | None = None) -> int:
    """Run the ``jaxaudit`` command.

    Args:
      argv: the arguments after the program name (None: ``sys.argv[1:]``).
      all_cpu_cores: make every CPU core a JAX device first (see the module docstring). None
        (default): only when ``argv`` is None, i.e. when this is the ``jaxaudit`` command or
        ``python -m jaxaudit``; calls from Python with explicit arguments (tests, notebooks)
        leave the process's environment alone.

    Returns:
      The exit status: 0 on success (and after ``--help``), 2 on a usage error (argparse's
      message names the flag) or a ``ValueError``/``OSError`` such as ``FileNotFoundError`` or a
      full disk (printed to stderr, prefixed with the command; no traceback), 130 after Ctrl-C
      (a one-line message, no traceback).
    """
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
    verbose = vars(args).pop("verbose", False)  # not a command's option: never in a configuration
    try:
        with _quiet_dependencies(verbose):
            return int(args.func(args) or 0)
    except (ValueError, OSError) as err:  # OSError: FileNotFoundError, read-only, disk full
        print(f"jaxaudit {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\njaxaudit {args.command}: interrupted (finished chunks are kept; run the same "
              "command again to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
