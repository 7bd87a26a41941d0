"""The committed Rényi-grid scores (results/scores/renyi_grid) and the tables of docs/renyi.md
generated from them (notebooks/scripts/renyi_tables.py)."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "notebooks" / "scripts"
SCORES = ROOT / "results" / "scores" / "renyi_grid"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grid = _load("renyi_grid_scores")
tables = _load("renyi_tables")


def _doc_rows():
    """Configuration name -> runs per world, from the trends table of the doc's generated block."""
    block = tables.doc_block(tables.DOC.read_text())
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 13 and re.fullmatch(r"d\d+_c[\d.]+_eps[\d.]+", cells[0]):
            rows[cells[0]] = int(cells[5])
    return block, rows


def test_committed_scores_load_and_match_their_manifest():
    scores = grid.load_scores(SCORES)
    assert scores, "no committed scores"
    for name, s in scores.items():
        assert name in grid.settings()
        assert s["in"].dtype == np.float32 and s["in"].size == s["out"].size == s["runs"]
        assert np.isfinite(s["in"]).all() and np.isfinite(s["out"]).all()
        assert s["sigma"] > 0 and s["device"]


def test_every_number_in_the_doc_has_committed_scores_behind_it():
    """Each configuration of the doc's trends table is committed with the runs it shows, and
    every committed configuration with enough runs is in the table (a table out of date with the
    scores, or a row without scores, fails here; the slow test recomputes every number)."""
    block, rows = _doc_rows()
    manifest = json.loads((SCORES / "manifest.json").read_text())["configurations"]
    for name, runs in rows.items():
        assert name in manifest, f"{name} is in docs/renyi.md but has no committed scores"
        assert manifest[name]["runs_per_world"] == runs, name
    ready = {n for n, e in manifest.items() if e["runs_per_world"] >= tables.MIN_RUNS}
    assert set(rows) == ready
    if not ready:
        assert "Not in the tables yet" in block


def test_load_scores_refuses_an_edited_file(tmp_path):
    folder = tmp_path / "scores"
    shutil.copytree(SCORES, folder)
    name = next(iter(json.loads((folder / "manifest.json").read_text())["configurations"]))
    path = folder / f"{name}.npz"
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["in"] = arrays["in"] + 1.0
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="SHA-256"):
        grid.load_scores(folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="manifest"):
        grid.load_scores(folder)


def test_config_hash_is_checked(tmp_path):
    folder = tmp_path / "scores"
    shutil.copytree(SCORES, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    name = next(iter(manifest["configurations"]))
    manifest["configurations"][name]["config"]["clip"] = 123.0
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="hash"):
        grid.load_scores(folder)


def test_fit_to_memory_halves_after_out_of_memory():
    """The device path: an out-of-memory error halves the runs computed at once; other errors
    propagate."""
    tried = []

    def run(chunk):
        tried.append(chunk)
        if chunk is None or chunk > 256:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")
        return chunk

    assert grid.fit_to_memory(run, None) == (256, 256)
    assert tried == [None, 1024, 512, 256]
    with pytest.raises(ValueError):
        grid.fit_to_memory(lambda c: (_ for _ in ()).throw(ValueError("bad")), 8)


def test_verdict_rule():
    assert tables._decide(1.0, 0.4) == "holds"
    assert tables._decide(-1.0, 0.4) == "does not hold"
    assert tables._decide(0.5, 0.4) == "not resolved at this many runs"
    assert tables._decide(float("nan"), 0.1) == "too few runs to decide"


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_VERDICT = re.compile(r"does not hold|holds|not resolved at this many runs|"
                      r"too few runs to decide")


def _skeleton(text):
    """(the text with numbers and verdicts blanked, the numbers)."""
    numbers = [float(x) for x in _NUMBER.findall(text)]
    return _NUMBER.sub("#", _VERDICT.sub("VERDICT", text)), numbers


@pytest.mark.slow
def test_doc_block_is_what_the_script_prints():
    """Every number of the generated block of docs/renyi.md, recomputed from the committed
    scores (DV critics, threshold and one-run bounds, [31]'s audits). On the machine that wrote
    the block the two are identical; on another CPU the critics' float32 training rounds
    differently, so numbers are compared to 5% (or 0.05) and the verdicts, which follow from
    them by the rule tested in test_verdict_rule, are not compared."""
    expected = tables.render(grid.load_scores(SCORES), with_critics=True)
    got = tables.doc_block(tables.DOC.read_text())
    if got == expected:
        return
    (skel_got, num_got), (skel_exp, num_exp) = _skeleton(got), _skeleton(expected)
    assert skel_got == skel_exp
    np.testing.assert_allclose(num_got, num_exp, rtol=0.05, atol=0.05)


@pytest.mark.slow
@pytest.mark.needs_data("mnist")
def test_sweep_runs_and_resumes_at_a_tiny_size(tmp_path):
    """The sweep on CPU at a tiny size (2 steps, 3 pretraining steps, 3 runs per world): the
    same scores whether cut into chunks of 1 or 3 runs (unit keys), and a repeated call adds
    nothing."""
    common = ["--cache", str(tmp_path / "cache"), "--steps", "2", "--pretrain-steps", "3",
              "--only", "d100_c1_eps10", "--vmap-chunk", "2"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for out, chunk, stages in (("a", "1", "1,3"), ("b", "3", "3"), ("b", "3", "3")):
        subprocess.run([sys.executable, str(SCRIPTS / "renyi_grid_scores.py"), "--out",
                        str(tmp_path / out), "--chunk", chunk, "--stages", stages, *common],
                       check=True, env=env, capture_output=True, timeout=600)
    a = grid.load_scores(tmp_path / "a")["d100_c1_eps10"]
    b = grid.load_scores(tmp_path / "b")["d100_c1_eps10"]
    assert a["runs"] == b["runs"] == 3
    np.testing.assert_allclose(a["in"], b["in"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a["out"], b["out"], rtol=1e-5, atol=1e-6)
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["configurations"]["d100_c1_eps10"]["config"]["pretrain_steps"] == 3
