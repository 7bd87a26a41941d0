"""Scores that do not vary within a world (a deterministic, non-private training gives 200 ones
against 200 zeros) still have every score-based bound: only the Gaussian model of the scores
(``runs_needed``) needs a spread, and it is skipped with its reason, through the library
pipeline and through ``jaxaudit rdp --scores``.

References: the library's own ``epsilon_lower_bounds`` on the same scores (the pipeline must
report them unchanged) and the values the hostile round measured (Clopper–Pearson 3.28,
one-run 3.24).
"""

import json

import jax
import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.pipelines import ScoresAuditConfig, run_scores_audit
from jaxaudit.renyi import epsilon_lower_bounds

N = 200
BIG = float(np.iinfo(np.int64).max)
CASES = {
    "constant": (np.ones(N), np.zeros(N)),
    "denormal": (np.full(N, 5e-324), np.zeros(N)),
    "int64_extremes": (np.full(N, BIG), np.full(N, -BIG)),
}


@pytest.mark.slow  # 10-37 s of compilation on two cores: the slow suite, which CI also runs
@pytest.mark.parametrize("case", sorted(CASES))
def test_pipeline_reports_every_bound_and_skips_only_the_model_fit(case):
    in_s, out_s = CASES[case]
    result = run_scores_audit(ScoresAuditConfig(in_s, out_s, noise_multiplier=1.0,
                                                sampling_rate=0.01, steps=100))
    ref = epsilon_lower_bounds(jax.random.key(0), in_s, out_s, delta=1e-5)
    eps = [row["epsilon"] for row in result.score_bounds]
    assert float(ref.clopper_pearson) == pytest.approx(3.28, abs=0.005)
    assert float(ref.one_run) == pytest.approx(3.24, abs=0.005)
    assert float(ref.clopper_pearson) in eps and float(ref.one_run) in eps
    assert result.runs_needed_text.startswith("skipped: ")
    assert "vary within a world" in result.summary["skipped"]["runs_needed"]
    assert len(result.records) > 0


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*holds int64 scores")
@pytest.mark.parametrize("case", ["constant", "denormal", "int64_extremes"])
def test_cli_reports_the_bounds_and_exits_0(case, tmp_path, capsys):
    in_s, out_s = CASES[case]
    if case == "int64_extremes":   # saved as int64, the type a counting score has
        in_s = np.full(N, np.iinfo(np.int64).max, dtype=np.int64)
        out_s = np.full(N, np.iinfo(np.int64).min, dtype=np.int64)
    in_path, out_path = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(in_path, in_s)
    np.save(out_path, out_s)
    out = tmp_path / "run"
    code = main(["rdp", "--scores", str(in_path), str(out_path), "--noise-multiplier", "1.0",
                 "--sampling-rate", "0.01", "--steps", "100", "--delta", "1e-5",
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "skipped" in captured.out
    summary = json.loads((out / "results.json").read_text())
    assert "vary within a world" in summary["skipped"]["runs_needed"]
    eps = [row["epsilon"] for row in summary["score_bounds"]]
    assert any(abs(e - 3.28) < 0.005 for e in eps) and any(abs(e - 3.24) < 0.005 for e in eps)
