"""Resumable run folders: resume, refusal of a changed config, corruption detection."""

import hashlib
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


@pytest.mark.slow
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


# --- hostile input: each test failed before its fix ---------------------------------


def test_two_writers_same_instant_one_wins(tmp_path, monkeypatch):
    """Hostile 1: two processes open the same new folder with different configurations at the
    same instant. The interleaving that mixed them (both past the emptiness check before either
    wrote its manifest) is forced: the second writer's whole open + save_chunk runs while the
    first is writing its manifest. One run wins; the other is refused."""
    import tempfile

    from jaxaudit.runs import files as rundir

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
                           "tables", "files", "unverified")
    expected = reference()
    for array in expected[NAMES[0]]:
        np.testing.assert_array_equal(
            res.concat(array), np.concatenate([expected[n][array] for n in NAMES[:3]]))
    np.testing.assert_array_equal(res.concat("scores", [NAMES[2], NAMES[0]]),
                                  np.concatenate([expected[NAMES[2]]["scores"],
                                                  expected[NAMES[0]]["scores"]]))
    with pytest.raises(ValueError, match="not finished"):
        res.concat("scores", NAMES)
    with pytest.raises(ValueError, match="no array"):
        res.concat("nothing")


# -- hostile run folders ---------------------------------------------------------------------
def _edit_manifest(folder, **changes):
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def test_manifest_not_an_object_or_nested_too_deeply_is_a_clear_error(tmp_path):
    """A manifest holding a JSON list gave an AttributeError in the report, a deeply nested
    one a RecursionError: both are ValueErrors naming the file."""
    RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    manifest = tmp_path / "r" / "manifest.json"
    for text, match in (("[1, 2]", "not an object"), ("[" * 100_000 + "]" * 100_000, "deeply"),
                        ('{"kind": "x", "config": ' + "[" * 200 + "]" * 200 + "}", "deeply")):
        manifest.write_text(text)
        with pytest.raises(ValueError, match=match) as info:
            load_results(tmp_path / "r")
        assert "manifest.json" in str(info.value)


@pytest.mark.parametrize("edit", ["kind", "plan", "kind, hash removed"])
def test_relabelled_kind_or_shortened_plan_is_refused(tmp_path, edit):
    """The manifest's hash covered only the configuration: a bmp run relabelled 'shadow' broke
    `bmp --shadow` with a KeyError, and a plan shortened to the finished chunks hid a partial
    run. Both are now covered by manifest_hash, and removing manifest_hash is noticed too (the
    chunk records name the run, which records of the previous version never do)."""
    run = RunDir.open(tmp_path / "r", kind="bmp", config={"a": 1})

    def stop_at_third(name):
        if name == NAMES[2]:
            raise KeyboardInterrupt
        return compute(name)

    with pytest.raises(KeyboardInterrupt):
        run_chunks(run, NAMES[:4], stop_at_third)
    assert load_results(tmp_path / "r").missing == NAMES[2:4]
    if edit == "plan":
        _edit_manifest(tmp_path / "r", planned_chunks=NAMES[:2])
    else:
        _edit_manifest(tmp_path / "r", kind="shadow")
    if edit == "kind, hash removed":
        manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
        del manifest["manifest_hash"]
        (tmp_path / "r" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="edited by hand"):
        load_results(tmp_path / "r")
    with pytest.raises(ValueError, match="edited by hand"):
        RunDir.open(tmp_path / "r", kind="bmp" if edit == "plan" else "shadow", config={"a": 1})


@pytest.mark.parametrize("edit", ["no layout", "layout 1"])
def test_folder_of_another_layout_is_refused_naming_its_version(tmp_path, edit):
    """A folder written in another layout (an older manifest without ``layout``) is refused, by
    load_results and by RunDir.open, with one message naming the version that wrote it."""
    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    run_chunks(run, NAMES[:2], compute)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    manifest["version"] = "0.0.9"
    if edit == "no layout":
        del manifest["layout"], manifest["manifest_hash"]
    else:
        manifest["layout"] = 1
    (tmp_path / "r" / "manifest.json").write_text(json.dumps(manifest))
    for call in (lambda: load_results(tmp_path / "r"),
                 lambda: RunDir.open(tmp_path / "r", kind="test", config={"a": 1})):
        with pytest.raises(ValueError, match=r"jaxaudit 0\.0\.9, written in another layout"):
            call()


def test_chunk_copied_from_another_run_is_refused(tmp_path):
    """A chunk (with its checksum file) copied from a run with another seed was accepted: the
    checksum bound the content to the chunk's name only, not to the run."""
    import shutil

    for seed in (1, 2):
        run = RunDir.open(tmp_path / f"seed{seed}", kind="test", config={"seed": seed})
        run_chunks(run, NAMES[:2], lambda n, s=seed: {"x": np.full(3, 10.0 * s + int(n[-2:]))})
    for suffix in (".npz", ".npz.sha256"):
        shutil.copy(tmp_path / "seed2" / "chunks" / f"chunk01{suffix}",
                    tmp_path / "seed1" / "chunks" / f"chunk01{suffix}")
    with pytest.raises(ValueError, match="chunk01.*another run"):
        load_results(tmp_path / "seed1")
    run = RunDir.open(tmp_path / "seed1", kind="test", config={"seed": 1})
    with pytest.warns(UserWarning, match="another run"):
        assert not run.has_chunk("chunk01")  # removed, so that it is recomputed
    out = run_chunks(run, NAMES[:2], lambda n: {"x": np.full(3, 10.0 + int(n[-2:]))})
    np.testing.assert_array_equal(out["chunk01"]["x"], np.full(3, 11.0))


def _declare_size(npz: bytes, size: int) -> bytes:
    """``npz`` (stored members) with every member's uncompressed size declared as ``size`` in
    its local header and central-directory entry (what a zip bomb declares)."""
    data = bytearray(npz)
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := data.find(sig, start)) >= 0:
            data[start + offset: start + offset + 4] = size.to_bytes(4, "little")
            start += 4
    return bytes(data)


def _forged_npy(shape=(10**6, 10**6)) -> bytes:
    """A ~200-byte .npy whose header claims ``shape`` of float64."""
    import io

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return head.getvalue() + bytes(80)


def _plant_chunk(run, name, data):
    """``data`` as chunk ``name`` of ``run`` with a valid run-bound checksum record (an attacker
    who can write the folder can write that too: the loader must not trust the content)."""
    path = run.path / "chunks" / f"{name}.npz"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    path.with_suffix(".npz.sha256").write_text(
        f"{digest}  {path.name}\nrun {run.manifest['config_hash']}\n")


def test_zip_bomb_and_forged_header_chunks_are_refused_before_loading(tmp_path):
    """An .npz declaring 4 GB of members (a zip bomb) and a 209-byte .npy whose header claims
    8 TB crashed load_results (memory); now ValueErrors before anything is allocated."""
    import io
    import zipfile

    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(64))
    _plant_chunk(run, "bomb", _declare_size(buf.getvalue(), 0xF000_0000))
    with pytest.raises(ValueError, match="chunk 'bomb'.*zip bomb"):
        load_results(tmp_path / "r")
    (run.path / "chunks" / "bomb.npz").unlink()
    (run.path / "chunks" / "bomb.npz.sha256").unlink()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x.npy", _forged_npy())
    _plant_chunk(run, "forged", buf.getvalue())
    with pytest.raises(ValueError, match=r"chunk 'forged'.*claims shape \(1000000, 1000000\)"):
        load_results(tmp_path / "r")


def test_npy_loader_checks_the_header_against_the_file(tmp_path):
    from jaxaudit.runs import load_arrays
    from jaxaudit.runs.arrays import load_npy, load_npz

    forged = tmp_path / "scores.npy"
    forged.write_bytes(_forged_npy())
    assert forged.stat().st_size < 250
    with pytest.raises(ValueError, match="scores.npy.*8,000,000,000,000 bytes.*80 bytes"):
        load_npy(forged)
    good = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    np.save(tmp_path / "good.npy", good)
    np.testing.assert_array_equal(load_npy(tmp_path / "good.npy"), good)
    np.testing.assert_array_equal(load_arrays(tmp_path / "good.npy"), good)
    truncated = (tmp_path / "good.npy").read_bytes()[:-4]
    with pytest.raises(ValueError, match="claims shape"):
        load_npy(truncated)
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Python objects"):
        load_npy(tmp_path / "objects.npy")
    np.savez_compressed(tmp_path / "both.npz", a=good, b=np.arange(5))
    both = load_arrays(tmp_path / "both.npz")
    np.testing.assert_array_equal(both["a"], good)
    np.testing.assert_array_equal(both["b"], np.arange(5))
    with pytest.raises(ValueError, match="zip bomb"):
        load_npz(tmp_path / "both.npz", max_bytes=100)
    with pytest.raises(ValueError, match="npz archive"):
        load_npy(tmp_path / "both.npz")


def test_symlinks_and_fifos_in_a_run_folder_are_not_followed(tmp_path):
    """A chunk replaced by a symbolic link (to its own bytes moved elsewhere) was read through
    the link; a linked table was parsed. Links are never followed; FIFOs never opened."""
    from jaxaudit.runs.files import scan_run_folder

    run = RunDir.open(tmp_path / "r", kind="test", config={"a": 1})
    run_chunks(run, NAMES[:2], compute)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r" / "chunks" / "chunk01.npz").rename(elsewhere / "chunk01.npz")
    (tmp_path / "r" / "chunks" / "chunk01.npz").symlink_to(elsewhere / "chunk01.npz")
    with pytest.raises(ValueError, match="chunk01.*symbolic link"):
        load_results(tmp_path / "r")
    (tmp_path / "r" / "chunks" / "chunk01.npz").unlink()
    (elsewhere / "chunk01.npz").rename(tmp_path / "r" / "chunks" / "chunk01.npz")
    (elsewhere / "secret.json").write_text('{"password": "hunter2"}')
    (tmp_path / "r" / "creds.json").symlink_to(elsewhere / "secret.json")
    (tmp_path / "r" / "linked").symlink_to(elsewhere, target_is_directory=True)
    os.mkfifo(tmp_path / "r" / "pipe.json")
    files, skipped = scan_run_folder(tmp_path / "r")
    assert dict(skipped) == {"creds.json": "symbolic link (not followed)",
                             "linked": "symbolic link (not followed)",
                             "pipe.json": "not a regular file"}
    assert "creds.json" not in files and "manifest.json" in files
    with pytest.warns(UserWarning, match="skipped"):
        res = load_results(tmp_path / "r")
    assert res.tables == {} and "password" not in json.dumps(res.tables)
    (tmp_path / "r" / "manifest.json").rename(elsewhere / "manifest.json")
    (tmp_path / "r" / "manifest.json").symlink_to(elsewhere / "manifest.json")
    with pytest.raises(ValueError, match="manifest.json is a symbolic link"):
        load_results(tmp_path / "r")


def test_json_written_is_strict_with_non_finite_as_null(tmp_path):
    """results.json could hold a bare Infinity (not JSON): every JSON file is strict now."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))

    config = {"eps": [1.0, float("inf")], "sigma": np.float32(np.nan)}
    run = RunDir.open(tmp_path / "r", kind="test", config=config)
    path = run.write_json("results.json", {
        "a": float("inf"), "b": [float("nan"), 1.5], "c": np.float64(-np.inf),
        "d": np.array([1.0, np.inf]), "e": {"f": np.float32(2.5)}})
    assert strict(path.read_text()) == {"a": None, "b": [None, 1.5], "c": None,
                                        "d": [1.0, None], "e": {"f": 2.5}}
    manifest = strict((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"] == {"eps": [1.0, None], "sigma": None}
    again = RunDir.open(tmp_path / "r", kind="test", config=config)  # resumes: same hash
    assert again.manifest["config_hash"] == manifest["config_hash"]


def test_unwritable_run_folder_is_a_clear_error(tmp_path, monkeypatch):
    """A read-only --out (EROFS, not only EACCES) and a full disk gave raw tracebacks."""
    import errno
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(ValueError, match="run folder .*ro cannot be written.*Read-only"):
        RunDir.open(tmp_path / "ro", kind="test", config={})
    monkeypatch.undo()
    run = RunDir.open(tmp_path / "r", kind="test", config={})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="cannot write .*results.json: No space left.*free some"):
        run.write_json("results.json", {"a": 1})
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["manifest.json"]  # no debris


def test_save_file_and_load_file_bind_a_cache_to_the_run(tmp_path):
    """The helper for caches a run reuses (the attack's pretrained model): the bytes come back
    only from this run, unchanged, and not through a link."""
    import shutil

    a = RunDir.open(tmp_path / "a", kind="test", config={"seed": 1})
    b = RunDir.open(tmp_path / "b", kind="test", config={"seed": 2})
    blob = np.random.default_rng(0).bytes(1000)
    a.save_file("pretrained_seed_0.msgpack", blob)
    assert a.load_file("pretrained_seed_0.msgpack") == blob
    assert b.load_file("pretrained_seed_0.msgpack") is None  # absent
    for suffix in ("", ".sha256"):
        shutil.copy(tmp_path / "a" / f"pretrained_seed_0.msgpack{suffix}",
                    tmp_path / "b" / f"pretrained_seed_0.msgpack{suffix}")
    assert b.load_file("pretrained_seed_0.msgpack") is None  # copied from another run
    (tmp_path / "a" / "pretrained_seed_0.msgpack").write_bytes(blob[:-1] + b"x")
    assert a.load_file("pretrained_seed_0.msgpack") is None  # corrupt
    with pytest.raises(ValueError, match="relpath"):
        a.save_file("../outside", blob)


def test_corrupt_chunk_warns_once_without_a_source_line(tmp_path):
    """Each corrupt-chunk warning printed two or three times (once per check of the chunk), each
    with a line of jaxaudit's source under it."""
    import linecache
    import warnings

    run = RunDir.open(tmp_path / "r", kind="test", config={})
    run_chunks(run, NAMES, compute)
    (tmp_path / "r" / "chunks" / "chunk02.npz").write_bytes(b"garbage")
    run = RunDir.open(tmp_path / "r", kind="test", config={})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_chunks(run, NAMES, compute)
    about = [w for w in caught if "chunk02" in str(w.message)]
    assert len(about) == 1 and "corrupt" in str(about[0].message)
    assert linecache.getline(about[0].filename, about[0].lineno) == ""


def _big_chunk(tmp_path, megabytes=64):
    run = RunDir.open(tmp_path / "r", kind="test", config={})
    run.save_chunk("big", {"x": np.zeros(megabytes << 17)})  # float64: 8 bytes each
    return RunDir.open(tmp_path / "r", kind="test", config={})


def test_chunks_are_verified_in_constant_memory(tmp_path):
    """Checking a chunk read it whole for its checksum (a 7 GiB chunk: MemoryError); the
    SHA-256 is now computed in blocks."""
    import tracemalloc

    run = _big_chunk(tmp_path)
    run.plan(["big"])
    tracemalloc.start()
    try:
        assert run.has_chunk("big") and run.missing_chunks() == []
        assert run.describe_chunk("big")["x"][0] == (64 << 17,)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak                                # the chunk is 64 MiB


def test_chunk_larger_than_the_load_limit_is_refused_naming_it(tmp_path, monkeypatch):
    from jaxaudit.runs import rundir

    run = _big_chunk(tmp_path, megabytes=2)
    monkeypatch.setattr(rundir, "MAX_LOAD_BYTES", 1 << 20)
    assert run.has_chunk("big")                                 # verified, not loaded
    with pytest.raises(ValueError, match=r"chunks/big\.npz holds 2,097,[0-9,]+ bytes, more than "
                                         r"the 1,048,576 that are loaded"):
        run.load_chunk("big")


def test_edited_or_deleted_result_file_is_refused(tmp_path):
    """Editing noise_multiplier in a one-run folder's result.json (1.185 -> 3.370) was loaded
    silently while a manifest edit was refused: every result file now has a run-bound record."""
    run = RunDir.open(tmp_path / "r", kind="one_run", config={"seed": 0})
    run.plan(["run"])
    run.save_chunk("run", {"scores": np.arange(4.0)})
    run.write_json("result.json", {"noise_multiplier": 1.185})
    run.write_text("summary.md", "# result\n")
    assert load_results(tmp_path / "r").tables["result.json"] == {"noise_multiplier": 1.185}
    result = tmp_path / "r" / "result.json"
    result.write_text(result.read_text().replace("1.185", "3.370"))
    with pytest.raises(ValueError, match=r"result file result.json is not usable: its SHA-256 "
                                         r"does not match .*edited"):
        load_results(tmp_path / "r")
    result.unlink()
    with pytest.raises(ValueError, match="result.json is missing"):
        load_results(tmp_path / "r")
    run.write_json("result.json", {"noise_multiplier": 1.185})  # rewritten: usable again
    (tmp_path / "r" / "chunks" / "run.npz").unlink()
    (tmp_path / "r" / "chunks" / "run.npz.sha256").unlink()
    with pytest.raises(ValueError, match=r"planned chunks \['run'\] are missing although"):
        load_results(tmp_path / "r")
    # a file the run did not write is loaded, with a warning and listed as unverified
    run.save_chunk("run", {"scores": np.arange(4.0)})
    (tmp_path / "r" / "notes.json").write_text('{"x": 1}')
    with pytest.warns(UserWarning, match="notes.json is not covered by a checksum"):
        loaded = load_results(tmp_path / "r")
    assert loaded.unverified == ("notes.json",) and loaded.tables["notes.json"] == {"x": 1}


def test_a_compared_bmp_table_is_checked_against_its_record(tmp_path):
    """bmp --compare reads another run's nodes.csv: an edited one is refused, one no checksum
    covers is read with a warning."""
    from jaxaudit.report.bmp import read_compare
    from jaxaudit.runs.rundir import RunFolderWarning

    run = RunDir.open(tmp_path / "b", kind="bmp", config={"shadow": {"sampler": "uniform"}})
    run.write_text("nodes.csv", "node,bayes_eps_r_q50\n0,0.5\n1,\n")
    values, label = read_compare(run.path)
    np.testing.assert_array_equal(values, [0.5, np.nan])
    assert label == "uniform"
    nodes = run.path / "nodes.csv"
    nodes.write_text("node,bayes_eps_r_q50\n0,0.1\n1,\n")
    with pytest.raises(ValueError, match="compare: .*nodes.csv is not usable: its SHA-256"):
        read_compare(run.path)
    (run.path / "nodes.csv.sha256").unlink()
    with pytest.warns(RunFolderWarning, match="not covered by a checksum"):
        values, _ = read_compare(run.path)
    np.testing.assert_array_equal(values, [0.1, np.nan])
