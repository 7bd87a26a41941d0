"""Every option of every command has one line of help that states its default."""

import argparse

import pytest

from jaxaudit.cli.main import COMMANDS, build_parser


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _all_commands():
    out = []
    for name, sub in _subparsers(build_parser()):
        nested = list(_subparsers(sub))
        out += [(f"{name} {n}", s) for n, s in nested] if nested else [(name, sub)]
    return out


COMMAND_PARSERS = _all_commands()


def test_every_command_is_covered():
    assert {name.split()[0] for name, _ in COMMAND_PARSERS} == set(COMMANDS)
    assert len(COMMAND_PARSERS) >= len(COMMANDS) + 2  # data info / verify / download


@pytest.mark.parametrize(("name", "parser"), COMMAND_PARSERS, ids=[n for n, _ in COMMAND_PARSERS])
def test_every_option_has_help_with_its_default(name, parser):
    formatter = parser._get_formatter()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        assert action.help, f"jaxaudit {name} {action.dest}: no help"
        text = formatter._expand_help(action) if action.help else ""
        if action.option_strings and not action.required:
            assert "default" in text, f"jaxaudit {name} {action.option_strings[0]}: {text!r}"
            if action.default not in (None, False, argparse.SUPPRESS) and "%" not in action.help:
                shown = ",".join(f"{v:g}" for v in action.default) if isinstance(
                    action.default, list) else str(action.default)
                assert f"(default: {shown})" in text or "default" in action.help, (name, text)
        assert "\n" not in action.help.strip(), f"jaxaudit {name} {action.dest}: not one line"


def test_bmp_help_shows_dataset_and_ratio_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bmp", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: cora)" in out and "(default: 0.5)" in out and "(default: off)" in out


def test_help_of_every_command_imports_no_jax():
    """``jaxaudit --help`` and each ``jaxaudit COMMAND --help`` stay fast: no jax import (the
    commands import their pipelines inside ``run``)."""
    import subprocess
    import sys

    code = ("import sys\nfrom jaxaudit.cli.main import COMMANDS, main\n"
            "for argv in [['--help']] + [[c, '--help'] for c in COMMANDS]:\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout[-2000:] + out.stderr[-2000:]
