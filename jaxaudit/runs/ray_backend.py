"""Sweeps on Ray: one Ray task per missing work unit, results sent to the driver, which commits.

:func:`jaxaudit.runs.run_chunks` with ``sweep=Sweep(backend="ray")`` calls :func:`run_units_ray`.
Each task runs the sweep's ``compute_fn(name)`` on a Ray worker (same code, same unit key as the
serial run, so on CPU the arrays are bit-identical) and returns the arrays to the driver; the
driver alone claims, checks and writes the run folder (``has_chunk`` then ``save_chunk``: every unit is
committed once), so the Ray hosts need no shared folder. A task whose worker process dies is
retried (``max_retries``); an exception raised by ``compute_fn`` (a ``ValueError`` for a bad
input, a diverged training) is the user's and is raised by the driver, not retried.

Ray is imported only here and only when used (``pip install "jaxaudit[ray]"``). A Ray cluster runs
whatever code its clients send: keep it on a trusted network (docs/scaling.md, "Ray").
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["DEFAULT_MAX_RETRIES", "import_ray", "run_units_ray"]

#: How often a task whose worker died (a lost node, a killed process) is started again.
DEFAULT_MAX_RETRIES = 3

#: Seconds a cluster address is given to accept a TCP connection before ``ray.init`` (which
#: would otherwise retry for minutes on an address where nothing listens).
CONNECT_TIMEOUT = 5.0


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError naming the extra to install."""
    # Ray >= 2.50 re-runs `uv run` for its workers, which hangs under `uv run` (workers then
    # wait on a uv environment build); the workers use this interpreter instead.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError as err:
        raise ImportError('backend="ray" needs Ray: pip install "jaxaudit[ray]"') from err
    _messages_to_stderr(ray)
    return ray


def _messages_to_stderr(ray: Any) -> None:
    """Ray prints the raylet's error messages (retries, dead nodes; in ANSI colours) to stdout
    from a background thread of the driver; send them to stderr, so that stdout holds only
    what the command prints (a JSON summary stays parseable)."""
    worker: Any = getattr(getattr(ray, "_private", None), "worker", None)
    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "to_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.to_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """An OSError naming ``address`` (``host:port`` or ``ray://host:port``) unless a TCP
    connection to it opens within ``timeout`` seconds; an address without a port (``auto``)
    is left to Ray."""
    host, sep, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout):
            pass
    except OSError as err:
        raise ConnectionError(f"no Ray cluster answers at {address} (TCP connect within "
                              f"{timeout:g} s: {err.strerror or err}); start one with "
                              "`ray start --head` or check the address") from None


def _start(ray: Any, address: str | None, workers: int | None) -> bool:
    """Connect to ``address`` or start a local cluster; True when this call started Ray."""
    if ray.is_initialized():
        return False
    common: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                  ignore_reinit_error=True)
    if address is None or address == "local":
        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1,
                 _node_ip_address="127.0.0.1", **common)
    else:
        check_reachable(address)
        ray.init(address=address, **common)
    return True


def _compute_task(compute_fn: Callable[[str], dict[str, Any]], name: str) -> dict[str, Any]:
    """Run one unit on a Ray worker; host arrays travel back to the driver."""
    return {k: np.asarray(v) for k, v in dict(compute_fn(name)).items()}


def run_units_ray(
    names: Sequence[str],
    compute_fn: Callable[[str], dict[str, Any]],
    commit: Callable[[str, dict[str, Any]], None],
    *,
    acquire: Callable[[str], Any] | None = None,
    address: str | None = None,
    workers: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> list[str]:
    """Compute ``names`` as Ray tasks and ``commit(name, arrays)`` each on the driver as it ends.

    Args:
      names: the units to compute (not yet finished).
      compute_fn: ``compute_fn(name) -> {array name: array}``; pickled once (cloudpickle) and
        sent to every worker, so it must hold only picklable state.
      commit: called on the driver, in completion order, once per finished unit.
      acquire: ``acquire(name)`` before a unit is submitted: an object with ``release()`` (a
        claim on the run folder, released after its commit) or None when another process
        holds the unit (it is skipped and returned).
      address: a Ray cluster's address (``ray://host:10001`` or ``host:6379``); None starts a
        local cluster on 127.0.0.1 (shut down again at the end). When Ray is already
        initialized in this process, that cluster is used as it is.
      workers: at most this many units in flight (None: the cluster's CPUs); a local cluster
        is started with this many CPUs.
      max_retries: restarts of a task whose worker process died.

    Returns:
      the names skipped because ``acquire`` returned None.

    Raises:
      the exception ``compute_fn`` raised in a task (the cause, not Ray's wrapper); the other
      tasks are cancelled and their claims released.
    """
    ray = import_ray()
    started = _start(ray, address, workers)
    held: list[str] = []
    claims: dict[str, Any] = {}
    try:
        limit = int(workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
        remote = ray.remote(_compute_task).options(num_cpus=1, max_retries=int(max_retries),
                                                   retry_exceptions=False)
        fn_ref = ray.put(compute_fn)
        queue, running = list(names), dict[Any, str]()
        while queue or running:
            while queue and len(running) < limit:
                name = queue.pop(0)
                if acquire is not None:
                    claim = acquire(name)
                    if claim is None:
                        held.append(name)
                        continue
                    claims[name] = claim
                running[remote.remote(fn_ref, name)] = name
            if not running:
                break
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                name = running.pop(ref)
                try:
                    arrays = ray.get(ref)
                except ray.exceptions.RayError as err:  # the unit's own error, or retries spent
                    for other in running:
                        ray.cancel(other, force=True)
                    running.clear()
                    cause = getattr(err, "cause", None)
                    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause,
                                                                                   Exception):
                        raise cause from None
                    raise
                commit(name, arrays)
                claim = claims.pop(name, None)
                if claim is not None:
                    claim.release()
    finally:
        for claim in claims.values():
            claim.release()
        if started:
            ray.shutdown()
    return held
