"""``jaxaudit attack``: run folders that resume, tables with successes/baseline/bound, report."""

import json

import pytest

from jaxaudit.cli.attack import SCORINGS
from jaxaudit.cli.main import main
from jaxaudit.runs import load_results


@pytest.mark.slow
def test_attack_marginals_runs_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "marg"
    argv = ["attack", "marginals", "--rhos", "0.1,1", "--seeds", "2", "--num-targets", "20",
            "--attributes", "age,educ,religious,occupation", "--hidden", "religious,occupation",
            "--distance", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "table.json").read_text())
    assert len(rows) == 4 and {r["rho"] for r in rows} == {0.1, 1.0}
    for r in rows:
        assert 0 <= r["successes"] <= 20 and r["successes"] < r["count_bound"] <= 21
        assert 0 < r["baseline"] <= 20
    assert (out / "attack.png").stat().st_size > 0 and "bound" in (out / "summary.md").read_text()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()}
    assert main(argv) == 0  # resume: nothing recomputed
    assert {p.name: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()} == before
    assert load_results(out).kind == "attack-marginals"
    assert main(["report", str(out)]) == 0 and (out / "report.html").exists()
    capsys.readouterr()
    # Another configuration in the same folder is refused.
    assert main(argv[:-3] + ["--out", str(out), "--quiet", "--way", "1"]) == 2
    assert "different" in capsys.readouterr().err


@pytest.mark.slow
def test_attack_secrets_tiny(tmp_path, capsys):
    """The command's parsing, output and folder (the numbers are checked on the same run in
    tests/pipelines/test_attacks.py::test_secrets_tiny)."""
    out = tmp_path / "sec"
    argv = ["attack", "secrets", "--prior", "digits", "--digits", "1", "--epsilons", "2",
            "--num-secrets", "3", "--num-filler", "5", "--steps", "4", "--batch-size", "4",
            "--pretrain-steps", "2", "--hidden", "8", "--guesses", "2", "--seeds", "2",
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| epsilon_target |" in printed and f"wrote {out}" in printed
    rows = json.loads((out / "table.json").read_text())
    assert [(r["epsilon_target"], r["seed"]) for r in rows] == [(2.0, 0), (2.0, 1)]
    assert {f"successes_{s}" for s in SCORINGS} <= set(rows[0])
    assert (out / "pretrained.msgpack").is_file()
    config = load_results(out).config
    assert config["lm"]["clip_norm"] == 1.0 and config["lm"]["hidden_dim"] == 8
    assert config["lm"]["steps"] == 4 and config["lm"]["num_secrets"] == 3
    assert config["repetitions"] == 2 and config["seed"] == 0


def test_cli_scorings_match_library():
    from jaxaudit.attacks import SCORINGS as LIB

    assert SCORINGS == LIB


@pytest.mark.parametrize("bad", [["--rhos", "0,1"], ["--num-targets", "0"],
                                 ["--hidden", "nope"], ["--distance", "5"]])
def test_attack_marginals_bad_input(tmp_path, capsys, bad):
    argv = ["attack", "marginals", "--out", str(tmp_path / "x"), "--quiet", *bad]
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def _helps(command: str) -> dict:
    """{dest: help text} of ``jaxaudit attack <command>``."""
    import argparse

    from jaxaudit.cli.main import build_parser

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    attack = top.choices["attack"]
    sub = next(a for a in attack._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a.help for a in sub.choices[command]._actions}


def _choices(command):
    import argparse

    from jaxaudit.cli.main import build_parser

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    attack = top.choices["attack"]
    sub = next(a for a in attack._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: tuple(a.choices) for a in sub.choices[command]._actions if a.choices}


def test_cli_limits_match_library():
    """The help texts state the pipeline's limits (written out so that --help needs no JAX)."""
    from jaxaudit.accounting.replace_one import MAX_DPSGD_EPSILON
    from jaxaudit.attacks.marginals import MAX_MEMORY_BYTES
    from jaxaudit.cli import attack
    from jaxaudit.pipelines import attacks as p

    assert p.MAX_EPSILON == MAX_DPSGD_EPSILON
    h = _helps("secrets")
    assert f"at most {p.MAX_EPSILON:g} (finite)" in h["epsilons"]
    assert f"at most {p.MAX_LEVELS} values" in h["epsilons"]
    assert f"at most {p.MAX_REPETITIONS} " in h["repetitions"]
    assert f"at most {p.MAX_STEPS}" in h["steps"] and f"at most {p.MAX_STEPS}" in h["pretrain_steps"]
    assert f"at most {p.MAX_HIDDEN_DIM}" in h["hidden_dim"]
    assert f"(0, {p.MAX_LEARNING_RATE:g}]" in h["learning_rate"]
    assert f"2 to {p.MAX_SECRETS} " in h["num_secrets"]
    assert f"at most {p.MAX_SCORE_BYTES // p.SCORE_BYTES_PER_PAIR:,}: " in h["num_secrets"]
    assert f"{p.MAX_SCORE_BYTES / 2**30:g} GiB" in h["num_secrets"]
    assert f"1 to {p.MAX_RECORDS_PER_USER}:" in h["records_per_user"]
    assert f"at most {p.MAX_RECORD_LENGTH} " in h["record_length"]
    assert attack.SECRETS_FLAGS["records_per_user"] == "--records-per-user"
    h = _helps("marginals")
    assert f"more than {MAX_MEMORY_BYTES / 2**30:g} GiB" in h["hidden_attributes"]
    assert f"at most {p.MAX_LEVELS} values" in h["rhos"]
    assert attack.MARGINAL_ATTRIBUTES == ",".join(p.MARGINAL_ATTRIBUTES)
    assert attack.MARGINAL_HIDDEN == ",".join(p.MARGINAL_HIDDEN)
    # the flags name the pipeline's fields and its LM recipe's (SecretsConfig.lm)
    from jaxaudit.attacks import LmConfig

    fields = set(p.SecretsConfig._fields) - {"lm"} | set(LmConfig._fields)
    assert set(attack.SECRETS_FLAGS) <= fields | {"run_dir"}
    assert fields - {"scoring", "prior"} <= set(attack.SECRETS_FLAGS)
    assert _choices("secrets")["prior"] == p.PRIORS
    assert set(attack.MARGINALS_FLAGS) <= set(p.MarginalsConfig._fields) | {"run_dir"}


def test_help_states_the_limits(capsys):
    for command, needles in ((["attack", "secrets"], ["at most 1000", "(0, 1]", "at most 100 ",
                                                      "GiB"]),
                             (["attack", "marginals"], ["at most 1000", "GiB"])):
        assert main([*command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for needle in needles:
            assert needle in text, (command, needle)
