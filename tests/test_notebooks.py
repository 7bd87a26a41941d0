"""The notebooks (jupytext percent scripts in notebooks/) execute end to end in reduced-size mode."""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))
#: Real data sets a notebook reads even in reduced-size mode (skipped locally without them).
NEEDS = {"rdp_audit": ("mnist",)}


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.needs_data(*NEEDS[p.stem])) if p.stem in NEEDS else p
    for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS])
@pytest.mark.slow
def test_notebook_executes(path, tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("JAXAUDIT_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("JAXAUDIT_FIGURES", str(tmp_path))  # keep the committed figures untouched
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in notebook.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert os.listdir(tmp_path), "the notebook saved no figure"
