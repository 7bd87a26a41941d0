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

from jaxaudit.runs import RunDir, load_results, run_chunks
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

    run_chunks(run, NAMES, compute, worker=(index, count))
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
        out = run_chunks(run, NAMES, lambda n: computed.append(n) or _compute(n), worker=(0, 3))
        assert computed == [NAMES[3]] and list(out) == [NAMES[3]]
    finally:
        other.release()


def test_plain_run_waits_for_a_live_claim(tmp_path):
    run = RunDir.open(tmp_path / "run", kind="test", config=CONFIG)
    other = claim_unit(run, NAMES[2], lease_s=5.0)

    def finish_elsewhere():
        time.sleep(0.5)
        run.save_chunk(NAMES[2], _compute(NAMES[2]))
        other.release()

    thread = threading.Thread(target=finish_elsewhere)
    thread.start()
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
        run_chunks(run, NAMES, _compute, worker=worker)


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
