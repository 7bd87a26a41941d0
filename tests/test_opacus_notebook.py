"""notebooks/opacus_audit.py: the Opacus → ``jaxaudit rdp --scores`` pipeline end to end (when
torch and opacus are installed; jaxaudit does not depend on them) and its skip without them."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "opacus_audit.py"


def _run(tmp_path, **env):
    env = {**os.environ, "JAXAUDIT_FIGURES": str(tmp_path), "MPLBACKEND": "Agg", **env}
    return subprocess.run([sys.executable, str(NOTEBOOK)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)


def test_without_opacus_it_says_why_and_exits_0(tmp_path):
    if importlib.util.find_spec("opacus") is not None:
        pytest.skip("opacus is installed: the skip path does not apply")
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "skipped" in out.stdout and "opacus" in out.stdout


@pytest.mark.slow
def test_opacus_scores_audit_end_to_end(tmp_path):
    pytest.importorskip("opacus")
    out = _run(tmp_path, JAXAUDIT_OPACUS_RUNS="14", JAXAUDIT_NOTEBOOK_FAST="1")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "14 scores with and 14 without the canary" in out.stdout
    assert out.stdout.count("α = ") >= 3 and "accountant" in out.stdout
    assert (tmp_path / "opacus_audit.png").stat().st_size > 1000
