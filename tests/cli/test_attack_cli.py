"""``jaxaudit attack``: run folders that resume, tables with successes/baseline/bound, report."""

import json
import math

import numpy as np
import pytest

from jaxaudit.cli.attack import SCORINGS
from jaxaudit.cli.main import main
from jaxaudit.runs import load_results


def test_attack_marginals_runs_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "marg"
    argv = ["attack", "marginals", "--rhos", "0.1,1", "--seeds", "2", "--num-targets", "20",
            "--attributes", "age,educ,religious,occupation", "--hidden", "religious,occupation",
            "--distance", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "table.json").read_text())
    assert len(rows) == 4 and {r["rho"] for r in rows} == {0.1, 1.0}
    for r in rows:
        assert 0 <= r["successes"] <= 20 and r["successes"] < r["bound"] <= 21
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
def test_attack_secrets_tiny(tmp_path):
    out = tmp_path / "sec"
    argv = ["attack", "secrets", "--prior", "digits", "--digits", "1", "--epsilons", "2",
            "--num-secrets", "3", "--num-filler", "5", "--steps", "4", "--batch-size", "4",
            "--pretrain-steps", "2", "--hidden", "8", "--guesses", "2", "--seeds", "2",
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "table.json").read_text())
    assert [(r["epsilon_target"], r["seed"]) for r in rows] == [(2.0, 0), (2.0, 1)]
    assert all(r["noise"] > 0 for r in rows)
    for r in rows:
        assert 0 <= r["successes"] <= 3 and r["successes"] < r["bound"] <= 4
        assert r["baseline"] == pytest.approx(3 * 0.2)
        # Every scoring on the same model; the main column is the default (calibrated).
        assert r["successes"] == r["successes_calibrated"]
        assert {f"successes_{s}" for s in SCORINGS} <= set(r)
        assert r["successes_prior"] == 0  # uniform prior: all tied, ties against the attacker
    # One public pretrained model, cached in the folder, shared by the seeds.
    assert (out / "pretrained_seed_0.msgpack").is_file()
    # ... with a checksum record bound to this run, so a model copied from another run is
    # trained again rather than trusted
    record = (out / "pretrained_seed_0.msgpack.sha256").read_text()
    assert "pretrained_seed_0.msgpack" in record and "run " in record
    chunk = load_results(out).chunks["eps_2_seed_0"]
    assert chunk["scores"].shape == chunk["reference_scores"].shape == (3, 10)
    assert "every scoring" in (out / "summary.md").read_text().lower()


def test_cli_scorings_match_library():
    from jaxaudit.attacks import SCORINGS as LIB

    assert SCORINGS == LIB


@pytest.mark.parametrize("bad", [["--rhos", "0,1"], ["--num-targets", "0"],
                                 ["--hidden", "nope"], ["--distance", "5"]])
def test_attack_marginals_bad_input(tmp_path, capsys, bad):
    argv = ["attack", "marginals", "--out", str(tmp_path / "x"), "--quiet", *bad]
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_level_names_are_safe_exact_and_distinct():
    """Issue 24 (3): ε = 10^6 gave the invalid chunk name 'eps_1e+06', and 2 and 2.0000001
    shared 'eps_2' (one run reported under both). Names must be valid chunk names, one per
    distinct value, and the printed level must read back as the same float."""
    from jaxaudit.cli.attack import _level_name, _level_text
    from jaxaudit.runs.rundir import _CHUNK_NAME

    values = [1e6, 1e-5, 2.0, 2.0000001, 2.0000000000000004, 0.1, 1 / 3, 1e300, 5e-324,
              123456789.0, 1e16, 1e16 + 2, 1e-300, math.inf, 7.5, 75.0]
    names = [f"eps_{_level_name(v)}_seed_0" for v in values]
    assert all(_CHUNK_NAME.match(n) for n in names), names
    assert len(set(names)) == len(values)
    for v in values:
        assert float(_level_text(v)) == v
    # the names of existing run folders are kept
    assert [_level_name(v) for v in (2.0, 0.1, 1e-5, math.inf)] == ["2", "0p1", "1em05", "inf"]


@pytest.mark.slow
def test_attack_marginals_close_and_huge_levels(tmp_path):
    """2 and 2.0000001 are two runs reported under their own values; ρ = 10^6 runs."""
    out = tmp_path / "m"
    argv = ["attack", "marginals", "--rhos", "2,2.0000001,1e6", "--num-targets", "10",
            "--attributes", "age,educ,religious", "--hidden", "religious", "--out", str(out),
            "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "table.json").read_text())
    assert [r["rho"] for r in rows] == [2.0, 2.0000001, 1e6]
    assert rows[0]["epsilon"] < rows[1]["epsilon"] < rows[2]["epsilon"]
    assert "| 2.0000001 |" in (out / "summary.md").read_text()
    assert sorted(load_results(out).chunks) == ["rho_1e06_seed_0", "rho_2_seed_0",
                                               "rho_2p0000001_seed_0"]


def test_cli_limits_match_library():
    from jaxaudit.attacks.marginals import MAX_MEMORY_BYTES
    from jaxaudit.attacks.privacy import MAX_DPSGD_EPSILON
    from jaxaudit.cli import attack

    assert attack.MAX_EPSILON == MAX_DPSGD_EPSILON
    assert attack.MARGINALS_MAX_GIB * 2**30 == MAX_MEMORY_BYTES


def test_help_states_the_limits(capsys):
    for command, needles in ((["attack", "secrets"], ["at most 1000", "(0, 1]", "at most 100 ",
                                                      "GiB"]),
                             (["attack", "marginals"], ["at most 1000", "GiB"])):
        assert main([*command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for needle in needles:
            assert needle in text, (command, needle)


def test_discard_new_run_keeps_finished_chunks(tmp_path):
    """A run folder this command created and whose first chunk failed is removed (so the
    corrected command may reuse --out); one holding a finished chunk or made before is kept."""
    from jaxaudit.runs import discard_new_run
    from jaxaudit.runs import RunDir

    fresh = RunDir.open(tmp_path / "fresh", kind="x", config={"a": 1})
    discard_new_run(fresh.path, existed=False)
    assert not fresh.path.exists()
    done = RunDir.open(tmp_path / "done", kind="x", config={"a": 1})
    done.save_chunk("c0", {"v": np.zeros(2)})
    discard_new_run(done.path, existed=False)
    assert (done.path / "manifest.json").exists() and done.has_chunk("c0")
    older = RunDir.open(tmp_path / "older", kind="x", config={"a": 1})
    discard_new_run(older.path, existed=True)
    assert (older.path / "manifest.json").exists()
    mine = tmp_path / "mine"  # an empty folder the user made: emptied, not removed
    mine.mkdir()
    RunDir.open(mine, kind="x", config={"a": 1})
    discard_new_run(mine, existed=False, keep_folder=True)
    assert mine.is_dir() and not any(mine.iterdir())
