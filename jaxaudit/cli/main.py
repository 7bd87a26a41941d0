"""Entry point of the ``jaxaudit`` command.

Each sub-command lives in its own module ``jaxaudit.cli.<name>`` exposing
``register(subparsers) -> None``; ``register`` adds a parser and sets ``func`` (a callable taking
the parsed ``argparse.Namespace`` and returning an exit code). Heavy imports (jax) happen inside
``func`` so that ``jaxaudit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

import jaxaudit

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("data", "bounds", "shadow", "bmp", "rdp", "report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxaudit",
        description="Audit the privacy of machine-learning pipelines: adversary-aware DP bounds, "
        "Bayesian membership privacy for GNNs, and Rényi-DP auditing.",
    )
    parser.add_argument("--version", action="version", version=f"jaxaudit {jaxaudit.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module_name = f"jaxaudit.cli.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        print(f"jaxaudit {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
