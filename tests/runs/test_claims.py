"""Several processes on one run folder: independent workers take disjoint chunks, a final plain
run completes and verifies, a live claim is waited for, a stale claim (a killed process) is
reclaimed, and the folder equals the serial run's."""

import concurrent.futures
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

from jaxaudit.runs import RunDir, Sweep, load_results, run_chunks
from jaxaudit.runs.claims import claim_state, claim_unit

NAMES = [f"chunk_{c:05d}" for c in range(6)]
CONFIG = {"what": "claims test", "seed": 1}


def _compute(name):
    c = int(name.split("_")[1])
    time.sleep(0.05)
    return {"x": np.arange(4, dtype=np.float64) + 10 * c}


def _work(path, index, count):
    """One independent worker (a separate process): returns the chunks it computed."""
    run = RunDir.open(path, kind="test", config=CONFIG)
    computed = []

    def compute(name):
        computed.append(name)
        return _compute(name)

    run_chunks(run, NAMES, compute, sweep=Sweep(worker=(index, count)))
    return computed


def _never(name):
    raise AssertionError(f"{name} should have been computed already")


@pytest.mark.slow
def test_two_worker_processes_then_a_final_run_equal_the_serial_run(tmp_path):
    serial = tmp_path / "serial"
    run_chunks(RunDir.open(serial, kind="test", config=CONFIG), NAMES, _compute)
    shared = str(tmp_path / "shared")
    RunDir.open(shared, kind="test", config=CONFIG)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        done = list(pool.map(_work, [shared] * 2, [0, 1], [2, 2]))
    assert done == [NAMES[0::2], NAMES[1::2]]                  # disjoint shares, all computed
    final = run_chunks(RunDir.open(shared, kind="test", config=CONFIG), NAMES, _never)
    assert list(final) == NAMES
    np.testing.assert_array_equal(load_results(shared).concat("x"),
                                  load_results(serial).concat("x"))
    assert not (tmp_path / "shared" / "claims").exists()       # every claim released


def test_worker_skips_units_held_by_a_live_claim(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = claim_unit(run, NAMES[0])                           # another process's live claim
    try:
        computed = []
        out = run_chunks(run, NAMES, lambda n: computed.append(n) or _compute(n), sweep=Sweep(worker=(0, 3)))
        assert computed == [NAMES[3]] and list(out) == [NAMES[3]]
    finally:
        other.release()


def _finish_elsewhere(run, claim):
    """A started thread that, half a second later, saves the claimed chunk and releases it (as
    another worker would)."""
    def finish():
        time.sleep(0.5)
        run.save_chunk(NAMES[2], _compute(NAMES[2]))
        claim.release()

    thread = threading.Thread(target=finish)
    thread.start()
    return thread


def test_plain_run_waits_for_a_live_claim(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = claim_unit(run, NAMES[2], lease_s=5.0)

    thread = _finish_elsewhere(run, other)
    out = run_chunks(run, NAMES, lambda n: _never(n) if n == NAMES[2] else _compute(n),
                     lease_s=5.0, poll_s=0.05)
    thread.join()
    np.testing.assert_array_equal(out[NAMES[2]]["x"], _compute(NAMES[2])["x"])


def test_stale_claim_of_a_killed_process_is_reclaimed(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    dead = claim_unit(run, NAMES[1], lease_s=1000.0)
    dead._stop.set()                       # the process was SIGKILLed: no more heartbeats
    old = time.time() - 100
    os.utime(dead.path, (old, old))
    assert claim_state(run, NAMES[1], lease_s=30.0) == "stale"
    assert claim_state(run, NAMES[0], lease_s=30.0) == "free"
    computed = []
    run_chunks(run, NAMES, lambda n: computed.append(n) or _compute(n), lease_s=30.0)
    assert computed == NAMES
    assert claim_state(run, NAMES[1]) == "free"


def test_a_failed_unit_releases_its_claim(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)

    def fail(name):
        raise RuntimeError("diverged")

    with pytest.raises(RuntimeError):
        run_chunks(run, NAMES, fail)
    assert claim_state(run, NAMES[0]) == "free"
    assert run_chunks(run, NAMES, _compute).keys() == set(NAMES)


@pytest.mark.parametrize("worker", [(2, 2), (-1, 2), (0, 0)])
def test_bad_worker_refused(tmp_path, worker):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    with pytest.raises(ValueError, match="worker"):
        run_chunks(run, NAMES, _compute, sweep=Sweep(worker=worker))


def test_claim_of_a_dead_process_on_this_host_is_stale_at_once(tmp_path):
    """A SIGKILLed process on this machine: its claim is stale without waiting for the lease."""
    import json
    import socket
    import subprocess
    import sys

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    claim = claim_unit(run, NAMES[0])
    claim._stop.set()
    claim.path.write_text(json.dumps({"owner": f"{socket.gethostname()}:{dead.stdout.strip()}:x"}))
    assert claim_state(run, NAMES[0]) == "stale"
    claim.path.write_text(json.dumps({"owner": f"{socket.gethostname()}:{os.getppid()}:x"}))
    assert claim_state(run, NAMES[0]) == "live"      # a live process keeps its claim


# -- hostile claims ----------------------------------------------------------------------------
def _fake_claim(run, name, content):
    path = run.path / "claims" / f"{name}.claim"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    return path


def test_claims_folder_that_is_a_symbolic_link_is_refused(tmp_path):
    """A claims/ link was followed: claims were created, overwritten and removed in its target,
    outside the run folder. Now refused, like a chunks/ link; the target is left alone."""
    import json

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / f"{NAMES[0]}.claim"
    precious.write_text(json.dumps({"owner": "elsewhere:1:x"}))
    old = time.time() - 10_000                                  # stale: would be overwritten
    os.utime(precious, (old, old))
    (run.path / "claims").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="claims is a symbolic link"):
        run_chunks(run, NAMES, _compute)
    with pytest.raises(ValueError, match="symbolic link"):
        claim_unit(run, NAMES[1])
    with pytest.raises(ValueError, match="symbolic link"):
        claim_state(run, NAMES[0])
    assert sorted(p.name for p in outside.iterdir()) == [precious.name]
    assert json.loads(precious.read_text()) == {"owner": "elsewhere:1:x"}


def test_claim_with_this_process_pid_that_it_does_not_hold_is_stale(tmp_path):
    """After a restart (a container) the new process can get the PID of the one that left the
    claim: the plain run waited the whole lease (600 s) for itself."""
    import json
    import socket

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    _fake_claim(run, NAMES[1], json.dumps(
        {"owner": f"{socket.gethostname()}:{os.getpid()}:before-restart",
         "time": time.time()}).encode())
    assert claim_state(run, NAMES[1]) == "stale"
    held = claim_unit(run, NAMES[2])                             # one this process does hold
    try:
        assert claim_state(run, NAMES[2]) == "live"
    finally:
        held.release()
    computed = []
    start = time.monotonic()
    run_chunks(run, NAMES, lambda n: computed.append(n) or _compute(n), poll_s=0.05)
    assert computed == NAMES and time.monotonic() - start < 30


def test_non_json_claim_is_corrupt_and_reclaimed_saying_so(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    _fake_claim(run, NAMES[3], b"\x00not a claim{")
    assert claim_state(run, NAMES[3]) == "stale"
    computed = []
    with pytest.warns(UserWarning, match=r"claim on chunk_00003 .* is corrupt"):
        run_chunks(run, NAMES, lambda n: computed.append(n) or _compute(n), poll_s=0.05)
    assert computed == NAMES


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="process start times: Linux")
def test_claim_whose_pid_now_belongs_to_a_younger_process_is_stale(tmp_path):
    """A live PID that belongs to an unrelated process (started after the claim was made: the
    PID was reused) does not hold the claim."""
    import json
    import socket
    import subprocess
    import sys

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = _fake_claim(run, NAMES[0], json.dumps(
            {"owner": f"{socket.gethostname()}:{other.pid}:x",
             "time": time.time() - 3600}).encode())              # made an hour before it started
        assert claim_state(run, NAMES[0]) == "stale"
        path.write_text(json.dumps({"owner": f"{socket.gethostname()}:{other.pid}:x",
                                    "time": time.time()}))
        assert claim_state(run, NAMES[0]) == "live"              # made by it: it holds it
    finally:
        other.kill()
        other.wait()


def test_plain_run_shows_what_it_waits_for(tmp_path, caplog):
    """The plain run waited silently, its progress bar frozen: now the bar's description and a
    message name the unit and its holder; the label comes back when the wait is over."""
    import logging
    import socket

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = claim_unit(run, NAMES[2], lease_s=5.0)

    class Bar:
        def __init__(self):
            self.texts, self.counts = [], []

        def __call__(self, done, total):
            self.counts.append(done)

        def describe(self, text):
            self.texts.append(text)

    thread = _finish_elsewhere(run, other)
    bar = Bar()
    with caplog.at_level(logging.WARNING, logger="jaxaudit.runs"):
        run_chunks(run, NAMES, lambda n: _never(n) if n == NAMES[2] else _compute(n),
                   progress=bar, lease_s=5.0, poll_s=0.05)
    thread.join()
    assert bar.texts[0] == f"waiting for {NAMES[2]}" and bar.texts[-1] == ""
    waits = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert len(waits) == 1                                       # once, not at every poll
    assert waits[0].startswith(f"waiting: {NAMES[2]} is held by process {os.getpid()} on "
                               f"{socket.gethostname()}")
    assert "taken over if not renewed for 5 s" in waits[0]
    assert bar.counts[-1] == len(NAMES)


def test_a_claim_of_an_unrelated_live_process_is_named_as_maybe_stale_at_once(tmp_path, caplog):
    """A claim naming a live PID on this host that is no jaxaudit run (here ``sleep``, started
    before the claim was made, so it is not a reused PID): the plain run's first wait says which
    process holds it, that the claim may be stale and which file to delete; deleting it ends the
    wait, long before the lease."""
    import json
    import logging
    import socket
    import subprocess

    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.1)
        path = tmp_path / "run" / "claims" / f"{NAMES[1]}.claim"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"owner": f"{socket.gethostname()}:{other.pid}:x",
                                    "time": time.time() + 5.0}))
        assert claim_state(run, NAMES[1]) == "live"
        start = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="jaxaudit.runs"):
            worker = threading.Thread(target=run_chunks, args=(run, NAMES, _compute),
                                      kwargs={"poll_s": 0.05})
            worker.start()
            while not any("may be stale" in r.getMessage() for r in caplog.records):
                assert time.monotonic() - start < 20, "no message naming the holder"
                time.sleep(0.05)
            message = next(r.getMessage() for r in caplog.records
                           if "may be stale" in r.getMessage())
            assert f"held by process {other.pid} on {socket.gethostname()} (command sleep;" \
                in message and f"delete {path}" in message
            path.unlink()                                        # as the message says
            worker.join(20)
        assert not worker.is_alive() and time.monotonic() - start < 30
        assert all(RunDir.open(tmp_path / "run", kind="test", config=CONFIG).has_chunk(n)
                   for n in NAMES)
    finally:
        other.kill()
        other.wait()
