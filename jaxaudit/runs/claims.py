"""Claims on the work units of a run folder, so that several processes can fill one folder.

A process that starts a unit (a chunk) creates ``claims/<name>.claim`` exclusively (a hard link of
a complete file: two processes cannot both create it) and keeps it alive by touching it every
``lease_s / 4`` seconds from a background thread while it computes. A claim whose file was not
touched for ``lease_s`` seconds is *stale* — its process was killed (SIGKILL, a lost node) — and
the next process reclaims it; a claim made on this host by a process that no longer exists is
stale at once. A finished unit's chunk file is written atomically with its
run-bound checksum (``RunDir.save_chunk``), then the claim is removed.

What this guarantees: a unit is never saved half-written or mixed with another run's, and a unit
whose process died is redone. What it does not: two processes that reclaim the same stale unit in
the same instant may both compute it; by the run plan's key rule (``runs.keys``) they compute the
same numbers and the atomic save keeps one, so the folder is the same, only work is wasted.
Clocks: liveness is judged by the claim file's modification time against this host's clock, so
processes on several hosts sharing a folder need clocks that agree to well within ``lease_s``.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from jaxaudit.runs.files import atomic_write_bytes, create_exclusive
from jaxaudit.runs.rundir import RunDir

__all__ = ["Claim", "DEFAULT_LEASE_S", "claim_unit"]

#: Seconds without a heartbeat after which a claim is stale.
DEFAULT_LEASE_S = 600.0


def _claim_path(run: RunDir, name: str) -> Path:
    run._chunk_path(name)  # validates the name
    return run.path / "claims" / f"{name}.claim"


class Claim:
    """A live claim on one unit: touched every ``lease_s / 4`` s until :meth:`release`."""

    def __init__(self, path: Path, owner: str, lease_s: float):
        self.path, self.owner, self.lease_s = path, owner, float(lease_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                os.utime(self.path)
            except OSError:
                return

    def release(self) -> None:
        """Stop the heartbeat and remove the claim file (if it is still ours)."""
        self._stop.set()
        self._thread.join()
        try:
            if json.loads(self.path.read_bytes()).get("owner") == self.owner:
                self.path.unlink(missing_ok=True)
            self.path.parent.rmdir()  # only when no other claim is left
        except (OSError, ValueError):
            pass

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _owner_dead(path: Path) -> bool:
    """True when the claim was made on this host by a process that no longer exists (a SIGKILL
    on this machine is then seen at once, without waiting for the lease)."""
    try:
        host, pid, _ = json.loads(path.read_bytes())["owner"].rsplit(":", 2)
        pid = int(pid)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by another user
        return False
    return False


def claim_state(run: RunDir, name: str, *, lease_s: float = DEFAULT_LEASE_S) -> str:
    """``"free"`` (no claim), ``"live"`` (touched within ``lease_s`` by a process that, on this
    host, still exists) or ``"stale"``."""
    path = _claim_path(run, name)
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return "free"
    return "live" if age < lease_s and not _owner_dead(path) else "stale"


def claim_unit(run: RunDir, name: str, *, lease_s: float = DEFAULT_LEASE_S) -> Claim | None:
    """Claim unit ``name`` of ``run``: a :class:`Claim` (heartbeat running) when it was free or
    stale, None when another process holds a live claim on it."""
    path = _claim_path(run, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    record = json.dumps({"owner": owner, "time": time.time()}).encode()
    if not create_exclusive(path, record):
        if claim_state(run, name, lease_s=lease_s) != "stale":
            return None
        atomic_write_bytes(path, record)  # reclaim: the last writer wins the stale claim
        try:
            if json.loads(path.read_bytes()).get("owner") != owner:
                return None
        except (OSError, ValueError):
            return None
    return Claim(path, owner, lease_s)
