"""Helpers of the sweep scripts in notebooks/scripts (imported from their files)."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "notebooks" / "scripts"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lock_of(path: Path, pid: int) -> None:
    path.write_text(json.dumps({"owner": f"{socket.gethostname()}:{pid}:audit"}))


def test_findings_lock_taken_over_only_from_a_dead_process(tmp_path):
    findings = _load("bmp_findings")
    lock = tmp_path / ".run.lock"
    assert findings._take_lock(lock)  # free: taken
    assert not findings._take_lock(lock)  # held by this (live) process
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lock_of(lock, live.pid)
        assert not findings._take_lock(lock)  # another live process
    finally:
        live.kill()
        live.wait()
    _lock_of(lock, live.pid)  # that process is gone now: the lock is stale
    assert findings._take_lock(lock)
    assert json.loads(lock.read_text())["owner"].split(":")[1] == str(os.getpid())
    lock.write_text("")  # a bare lock of an older version: unknown owner, left alone
    assert not findings._take_lock(lock)
