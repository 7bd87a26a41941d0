"""Claims on the work units of a run folder, so that several processes can fill one folder.

A process that starts a unit (a chunk) creates ``claims/<name>.claim`` exclusively (a hard link of
a complete file: two processes cannot both create it) and keeps it alive by touching it every
``lease_s / 4`` seconds from a background thread while it computes. A claim whose file was not
touched for ``lease_s`` seconds is *stale* — its process was killed (SIGKILL, a lost node) — and
the next process reclaims it. A claim is also stale at once when it was made on this host by a
process that no longer exists, by a process with this process's own PID that this process does
not hold (left before a restart that reused the PID), or by a PID that now belongs to a process
started after the claim was made (a reused PID, Linux); a claim file that is not a jaxaudit claim
(not JSON) is corrupt: it is reclaimed, with a warning saying so. ``claims/`` must be a folder of
the run folder itself: a symbolic link there is refused (claims are never created, overwritten or
removed through it). A finished unit's chunk file is written atomically with its
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
import warnings
from pathlib import Path

from jaxaudit.runs.files import atomic_write_bytes, create_exclusive, read_regular, symlink_below
from jaxaudit.runs.rundir import RunDir

__all__ = ["Claim", "DEFAULT_LEASE_S", "claim_holder", "claim_state", "claim_unit"]

#: Seconds without a heartbeat after which a claim is stale.
DEFAULT_LEASE_S = 600.0
#: Owners of the claims this process holds now (a claim naming this PID and not listed is stale).
_HELD: set[str] = set()
_MAX_CLAIM_BYTES = 4096


def _claim_path(run: RunDir, name: str) -> Path:
    """``claims/<name>.claim``; ValueError when a folder on the way is a symbolic link."""
    run._chunk_path(name)  # validates the name
    path = run.path / "claims" / f"{name}.claim"
    link = symlink_below(run.path, path)
    if link is not None:
        raise ValueError(f"{run.path}: {link} is a symbolic link (not followed); claims are never "
                         "created, overwritten or removed through it. Remove the link (the run "
                         "folder keeps its claims in a folder of its own)")
    return path


def _read_owner(path: Path) -> str | None:
    """The claim's owner ``host:pid:token``; None when the claim is corrupt (not a jaxaudit
    claim). FileNotFoundError when it is gone."""
    try:
        record = json.loads(read_regular(path, _MAX_CLAIM_BYTES))
    except (ValueError, UnicodeDecodeError):  # not JSON, a link, a FIFO, too large
        return None
    owner = record.get("owner") if isinstance(record, dict) else None
    return owner if isinstance(owner, str) else None


class Claim:
    """A live claim on one unit: touched every ``lease_s / 4`` s until :meth:`release`."""

    def __init__(self, path: Path, owner: str, lease_s: float):
        self.path, self.owner, self.lease_s = path, owner, float(lease_s)
        _HELD.add(owner)
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
        _HELD.discard(self.owner)
        try:
            if self.path.parent.is_symlink():  # replaced by a link meanwhile: not followed
                return
            if _read_owner(self.path) == self.owner:
                self.path.unlink(missing_ok=True)
            self.path.parent.rmdir()  # only when no other claim is left
        except OSError:
            pass

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _started_after(pid: int, when: float) -> bool:
    """True when process ``pid`` started more than 2 s after ``when`` (a PID reused since),
    from /proc (Linux); False when that cannot be told."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK") > when + 2.0
    except (OSError, ValueError, IndexError, StopIteration):
        return False


def _stale_owner(path: Path) -> str:
    """Why the claim at ``path`` is stale whatever its age (``""``: it is not): its owner is
    gone from this host, is this process without holding it, or its PID was reused; or the claim
    is corrupt."""
    try:
        raw = read_regular(path, _MAX_CLAIM_BYTES)
        record = json.loads(raw)
        host, pid_text, _ = record["owner"].rsplit(":", 2)
        pid = int(pid_text)
    except FileNotFoundError:
        return ""
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "corrupt (not a jaxaudit claim)"
    if host != socket.gethostname():
        return ""
    if pid == os.getpid():
        return ("" if record["owner"] in _HELD else
                "made by this process's PID, which does not hold it (left before a restart)")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"its process {pid} no longer exists"
    except OSError:  # exists, owned by another user
        pass
    made = record.get("time")
    if isinstance(made, int | float) and _started_after(pid, float(made)):
        return f"PID {pid} now belongs to a process started after the claim was made"
    return ""


def _inspect(run: RunDir, name: str, lease_s: float) -> tuple[str, str]:
    """``(state, why)``: ``"free"``, ``"live"`` or ``"stale"``, and the reason of a stale one."""
    path = _claim_path(run, name)
    try:
        age = time.time() - os.lstat(path).st_mtime
    except FileNotFoundError:
        return "free", ""
    if age >= lease_s:
        return "stale", f"not renewed for {age:.0f} s"
    why = _stale_owner(path)
    return ("stale", why) if why else ("live", "")


def claim_state(run: RunDir, name: str, *, lease_s: float = DEFAULT_LEASE_S) -> str:
    """``"free"`` (no claim), ``"live"`` (touched within ``lease_s`` by a process that, on this
    host, still exists and is the one that made it) or ``"stale"`` (also: a corrupt claim)."""
    return _inspect(run, name, lease_s)[0]


def claim_holder(run: RunDir, name: str, *, lease_s: float = DEFAULT_LEASE_S) -> tuple[str, str]:
    """``(owner, description)`` of the claim on unit ``name``: who holds it (``host:pid:token``)
    and a sentence saying so, for a process that waits for it (``("", "")`` when free). A live
    claim is judged by its PID alone, so the sentence names the holder's command (on this host)
    and says that the claim may be stale and which file to delete to take the unit over now: a
    PID reused by an unrelated process would otherwise be waited for until the lease ends."""
    path = _claim_path(run, name)
    try:
        age = time.time() - os.lstat(path).st_mtime
        owner = _read_owner(path)
    except FileNotFoundError:
        return "", ""
    if owner is None:
        return "?", f"{name} is held by a corrupt claim ({path})"
    host, pid = (owner.rsplit(":", 2) + ["", ""])[:2]
    here = host == socket.gethostname()
    command = _command_of(pid) if here else ""
    running = f"command {command}; " if command else ""
    return owner, (
        f"{name} is held by process {pid} on {host} ({running}claim renewed {age:.0f} s ago; "
        f"taken over if not renewed for {lease_s:.0f} s). The claim may be stale: if process "
        f"{pid} is not a jaxaudit run on this folder (a PID reused after a crash or a restart), "
        f"delete {path} to take the unit over now")


def _command_of(pid: str) -> str:
    """The command name of process ``pid`` on this host (``/proc/<pid>/comm``, Linux; ``""``
    when it cannot be read), so that a waiting process can tell an unrelated holder."""
    try:
        return Path(f"/proc/{int(pid)}/comm").read_text().strip()[:64]
    except (OSError, ValueError):
        return ""


def claim_unit(run: RunDir, name: str, *, lease_s: float = DEFAULT_LEASE_S) -> Claim | None:
    """Claim unit ``name`` of ``run``: a :class:`Claim` (heartbeat running) when it was free or
    stale, None when another process holds a live claim on it."""
    path = _claim_path(run, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    record = json.dumps({"owner": owner, "time": time.time()}).encode()
    if not create_exclusive(path, record):
        state, why = _inspect(run, name, lease_s)
        if state != "stale":
            return None
        if why.startswith("corrupt"):
            warnings.warn_explicit(f"the claim on {name} ({path}) is {why}; it is reclaimed",
                                   UserWarning, "<jaxaudit run folder>", 0,
                                   module="jaxaudit.runs.claims")
        atomic_write_bytes(path, record)  # reclaim: the last writer wins the stale claim
        try:
            if _read_owner(path) != owner:
                return None
        except OSError:
            return None
    return Claim(path, owner, lease_s)
