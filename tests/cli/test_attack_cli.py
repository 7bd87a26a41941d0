"""``jaxaudit attack``: run folders that resume, tables with successes/baseline/bound, report."""

import json

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
