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
    assert loaded.kind == "test" and loaded.config == {"a": 1, "b": [1, 2]}
    assert_same({n: loaded.chunks[n] for n in NAMES}, reference())
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


# --- hostile input (issue 16): each test failed before its fix ---------------------------------


def test_two_writers_same_instant_one_wins(tmp_path, monkeypatch):
    """Hostile 1: two processes open the same new folder with different configurations at the
    same instant. The interleaving that mixed them (both past the emptiness check before either
    wrote its manifest) is forced: the second writer's whole open + save_chunk runs while the
    first is writing its manifest. One run wins; the other is refused."""
    import tempfile

    from jaxaudit.runs import rundir

    folder = tmp_path / "run"
    real_mkstemp = tempfile.mkstemp
    raced = []

    def racing_mkstemp(*args, **kwargs):
        if not raced and str(kwargs.get("prefix", "")).startswith(".manifest.json"):
            raced.append(True)
            other = RunDir.open(folder, kind="shadow", config={"epochs": 2})
            other.save_chunk("chunk_00000", {"x": np.full(3, 2.0)})
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(rundir.tempfile, "mkstemp", racing_mkstemp)
    with pytest.raises(ValueError, match="different configuration"):
        RunDir.open(folder, kind="shadow", config={"epochs": 1})
    assert raced
    res = load_results(folder)
    assert res.config == {"epochs": 2}
    np.testing.assert_array_equal(res.chunks["chunk_00000"]["x"], np.full(3, 2.0))
    # the same configuration joins the run instead of being refused
    assert RunDir.open(folder, kind="shadow", config={"epochs": 2}).config == {"epochs": 2}


def test_hand_edited_manifest_is_refused(tmp_path):
    """Hostile 4: epochs changed in the manifest, hash left: it used to resume and report the
    edited value."""
    run = RunDir.open(tmp_path / "r", kind="shadow", config={"epochs": 200, "models": 8})
    run_chunks(run, NAMES[:2], compute)
    manifest_path = tmp_path / "r" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config"]["epochs"] = 20
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="edited by hand"):
        RunDir.open(tmp_path / "r", kind="shadow", config={"epochs": 200, "models": 8})
    with pytest.raises(ValueError, match="edited by hand"):
        load_results(tmp_path / "r")


def test_partial_run_says_how_many_chunks_are_done(tmp_path):
    """Hostile 13: a half-finished run gave no '3 of 8' marker."""
    names = [f"chunk{i:02d}" for i in range(8)]
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})

    def stop_after_three(name):
        if name == "chunk03":
            raise KeyboardInterrupt
        return compute(name)

    with pytest.raises(KeyboardInterrupt):
        run_chunks(run, names, stop_after_three)
    res = load_results(tmp_path / "r")
    assert (len(res.chunks), len(res.planned)) == (3, 8)
    assert res.missing == names[3:]
    assert RunDir.open(tmp_path / "r", kind="test", config={"a": 1}).missing_chunks() == names[3:]
    run_chunks(run, names, compute)
    assert load_results(tmp_path / "r").missing == []


def test_chunk_deleted_with_its_checksum_left_is_not_skipped(tmp_path):
    """Hostile 13: a chunk deleted with its sidecar left was silently skipped."""
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    run_chunks(run, NAMES[:3], compute)
    (tmp_path / "r" / "chunks" / "chunk01.npz").unlink()
    with pytest.raises(ValueError, match="chunk01"):
        load_results(tmp_path / "r")


def test_corrupt_manifest_is_a_clear_error(tmp_path):
    """Hostile 13: a corrupt manifest raised a raw JSONDecodeError."""
    RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    (tmp_path / "r" / "manifest.json").write_text('{"kind": "test", "conf')
    for call in (lambda: load_results(tmp_path / "r"),
                 lambda: RunDir.open(tmp_path / "r", kind="test", config={"a": 1})):
        with pytest.raises(ValueError, match="manifest.json is corrupt") as info:
            call()
        assert not isinstance(info.value, json.JSONDecodeError)


def test_swapped_chunks_with_their_checksums_are_refused(tmp_path):
    """Hostile 13: two chunks swapped together with their sidecars were accepted (the checksum
    was not bound to the name)."""
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    run_chunks(run, NAMES[:2], compute)
    chunks = tmp_path / "r" / "chunks"
    for suffix in (".npz", ".npz.sha256"):
        a, b = chunks / f"chunk00{suffix}", chunks / f"chunk01{suffix}"
        tmp = chunks / "swap"
        a.rename(tmp)
        b.rename(a)
        tmp.rename(b)
    with pytest.raises(ValueError, match="chunk00"):
        load_results(tmp_path / "r")
    assert not RunDir.open(tmp_path / "r", kind="test", config={"a": 1}).has_chunk("chunk00")


def test_result_files_respect_the_umask(tmp_path):
    """Hostile 17: result files were written 0600 (mkstemp) while figures were 0644."""
    old = os.umask(0o022)
    try:
        run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
        run.save_chunk("c", {"x": np.zeros(2)})
        run.write_json("summary.json", {"x": 1})
        for rel in ("manifest.json", "chunks/c.npz", "chunks/c.npz.sha256", "summary.json"):
            assert (tmp_path / "r" / rel).stat().st_mode & 0o777 == 0o644, rel
        os.umask(0o077)
        run.write_text("notes.md", "x")
        assert (tmp_path / "r" / "notes.md").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_run_folder_that_is_a_file_is_refused(tmp_path):
    """Hostile 9: --out pointing at a file gave a raw traceback."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        RunDir.open(tmp_path / "f", kind="test", config={})


def test_results_are_a_typed_tuple_with_concat_and_dict_access(tmp_path):
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    run_chunks(run, NAMES[:3], compute)
    res = load_results(tmp_path / "r")
    assert res._fields == ("kind", "config", "manifest", "chunks", "planned", "missing",
                           "tables", "files")
    expected = reference()
    for array in expected[NAMES[0]]:
        np.testing.assert_array_equal(
            res.concat(array), np.concatenate([expected[n][array] for n in NAMES[:3]]))
    np.testing.assert_array_equal(res.concat("scores", [NAMES[2], NAMES[0]]),
                                  np.concatenate([expected[NAMES[2]]["scores"],
                                                  expected[NAMES[0]]["scores"]]))
    assert res["chunks"] is res.chunks and res["kind"] == "test"  # the old dict-style access
    with pytest.raises(KeyError):
        res["nothing"]  # noqa: B018
    with pytest.raises(ValueError, match="not finished"):
        res.concat("scores", NAMES)
    with pytest.raises(ValueError, match="no array"):
        res.concat("nothing")
