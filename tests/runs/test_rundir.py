"""Resumable run folders: resume, refusal of a changed config, corruption detection."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from jaxaudit.runs import RunDir, load_results, run_chunks

NAMES = [f"chunk{i:02d}" for i in range(6)]


def compute(name):
    seed = int(name[-2:])
    rng = np.random.default_rng(seed)
    return {"scores": rng.normal(size=(4, 5)), "masks": rng.random((4, 5)) < 0.5}


def reference():
    return {n: compute(n) for n in NAMES}


def assert_same(results, expected):
    assert list(results) == list(expected)
    for name in expected:
        for key, value in expected[name].items():
            np.testing.assert_array_equal(results[name][key], value)


def test_uninterrupted_run_round_trips(tmp_path):
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1, "b": [1, 2]})
    results = run_chunks(run, NAMES, compute)
    assert_same(results, reference())
    loaded = load_results(tmp_path / "r")
    assert loaded["kind"] == "test" and loaded["config"] == {"a": 1, "b": [1, 2]}
    assert_same({n: loaded["chunks"][n] for n in NAMES}, reference())
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert len(manifest["config_hash"]) == 64 and manifest["version"]


def test_resume_after_exception_skips_finished_chunks(tmp_path):
    calls = []

    def failing(name):
        calls.append(name)
        if len(calls) == 4:
            raise RuntimeError("simulated crash")
        return compute(name)

    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    with pytest.raises(RuntimeError):
        run_chunks(run, NAMES, failing)
    assert run.chunk_names() == NAMES[:3]
    calls.clear()
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    results = run_chunks(run, NAMES, failing)
    assert calls == NAMES[3:]  # finished chunks were not recomputed
    assert_same(results, reference())


def test_changed_configuration_is_refused(tmp_path):
    RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    with pytest.raises(ValueError, match="different configuration"):
        RunDir.open(tmp_path / "r", kind="test", config={"a": 2})
    with pytest.raises(ValueError, match="different configuration"):
        RunDir.open(tmp_path / "r", kind="other", config={"a": 1})
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "junk.txt").write_text("x")
    with pytest.raises(ValueError, match="no manifest.json"):
        RunDir.open(tmp_path / "s", kind="test", config={})


@pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar"])
def test_corrupted_chunk_is_recomputed_never_used(tmp_path, damage):
    run = RunDir.open(tmp_path / "r", kind="test", config={})
    run_chunks(run, NAMES, compute)
    path = tmp_path / "r" / "chunks" / "chunk02.npz"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:
        path.with_suffix(".npz.sha256").write_text("0" * 64)
    with pytest.raises(ValueError, match="chunk02"):
        load_results(tmp_path / "r")
    calls = []
    with pytest.warns(UserWarning, match="corrupt"):
        results = run_chunks(run, NAMES, lambda n: calls.append(n) or compute(n))
    assert calls == ["chunk02"]
    assert_same(results, reference())


def test_missing_folder_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        load_results(tmp_path / "nothing")


def test_killed_subprocess_loses_at_most_the_chunk_in_flight(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time
        import numpy as np
        sys.path.insert(0, {str(os.path.dirname(__file__))!r})
        from test_rundir import compute, NAMES
        from jaxaudit.runs import RunDir, run_chunks
        run = RunDir.open({str(tmp_path / "r")!r}, kind="test", config={{"k": 1}})
        def slow(name):
            out = compute(name)
            print(name, flush=True)
            if name == "chunk03":
                time.sleep(60)
            return out
        run_chunks(run, NAMES, slow)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.strip() == "chunk03":
                break
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    run = RunDir.open(tmp_path / "r", kind="test", config={"k": 1})
    assert run.chunk_names() == NAMES[:3]
    assert not list((tmp_path / "r" / "chunks").glob("*.tmp"))
    assert_same(run_chunks(run, NAMES, compute), reference())
