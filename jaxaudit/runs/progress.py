"""Host-side progress bars and the resumable chunk loop used by every long command."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from tqdm.auto import tqdm

from jaxaudit._validation import ArgumentTypeError, check_integer
from jaxaudit.runs.arrays import load_npz
from jaxaudit.runs.claims import DEFAULT_LEASE_S, claim_holder, claim_unit
from jaxaudit.runs.files import jax_process
from jaxaudit.runs.rundir import RunDir

__all__ = ["Progress", "ProgressBar", "Sweep", "progress_bar", "run_chunks"]

_log = logging.getLogger("jaxaudit.runs")

#: A progress callback: ``progress(done, total)``, called once before the first unit with the
#: units already finished, then after every unit. Pipelines take one (``progress=``); the CLI
#: passes a :class:`ProgressBar`.
Progress = Callable[[int, int], None]


def progress_bar(total: int, *, desc: str = "", enabled: bool = True, initial: int = 0,
                 unit: str = "chunk") -> Any:
    """A tqdm bar (count, rate, ETA) on stderr; a silent no-op bar when ``enabled`` is False."""
    return tqdm(total=total, desc=desc, initial=initial, unit=unit, disable=not enabled,
                file=sys.stderr, dynamic_ncols=True)


class ProgressBar:
    """A :data:`Progress` callback that draws a tqdm bar on stderr (count, rate, ETA); use it
    as a context manager so the bar is closed::

        with ProgressBar("shadow cora/gcn") as bar:
            run_shadow(config, "runs/x", progress=bar)
    """

    def __init__(self, desc: str = "", *, unit: str = "chunk", enabled: bool = True) -> None:
        self.desc, self.unit, self.enabled = desc, unit, enabled
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = progress_bar(total, desc=self.desc, enabled=self.enabled,
                                     initial=done, unit=self.unit)
        else:
            self._bar.total = total
            self._bar.update(done - self._bar.n)

    def describe(self, text: str) -> None:
        """Show ``text`` as the bar's description (``""``: its label again), e.g. the unit the
        run waits for."""
        if self._bar is not None:
            self._bar.set_description_str(text or self.desc)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sweep(NamedTuple):
    """Where the units of a sweep run and which share this process computes: the one value that
    :func:`run_chunks` and every pipeline with work units (``sweep=``) take. No field changes a
    number: every unit keeps its key (:mod:`jaxaudit.runs.keys`), so a run folder stores none of
    them.

    Attributes:
      backend: ``"serial"`` (this process computes each unit; default) or ``"ray"``: one Ray task
        per missing unit, retried when its worker dies; the arrays come back to this process,
        which alone claims and saves them (:mod:`jaxaudit.runs.ray_backend`; docs/scaling.md).
      ray_address: the Ray cluster (``backend="ray"``); None starts a local one on 127.0.0.1.
      ray_workers: ``backend="ray"``: at most this many units in flight (a local cluster gets
        this many CPUs); None: the cluster's CPUs.
      worker: ``(index, count)``: this process is worker ``index`` of ``count`` independent
        workers (a SLURM array, a shell loop) and computes only units ``index, index + count,
        …``, skipping those another process holds, and returns the units finished so far. None
        (default): the plain run, which computes every missing unit, waits for units that live
        processes hold, and returns them all.

    Example:
      >>> from jaxaudit.runs import Sweep
      >>> Sweep(worker=(0, 2)).check().worker
      (0, 2)
    """

    backend: str = "serial"
    ray_address: str | None = None
    ray_workers: int | None = None
    worker: tuple[int, int] | None = None

    def check(self) -> Sweep:
        """Every field checked (a ``ValueError`` naming it); returns the sweep."""
        if not isinstance(self, Sweep):
            raise ArgumentTypeError(f"sweep must be a jaxaudit.runs.Sweep, got {type(self).__name__}")
        if self.backend not in ("serial", "ray"):
            raise ValueError(f"backend must be 'serial' or 'ray', got {self.backend!r}")
        if self.ray_address is not None and not isinstance(self.ray_address, str):
            raise ValueError(f"ray_address must be a string, got {self.ray_address!r}")
        if self.ray_workers is not None:
            check_integer("ray_workers", self.ray_workers, minimum=1)
        if self.worker is not None:
            if not isinstance(self.worker, tuple | list) or len(self.worker) != 2:
                raise ValueError(f"worker must be (index, count), got {self.worker!r}")
            index = check_integer("worker index", self.worker[0], minimum=0)
            count = check_integer("worker count", self.worker[1], minimum=1)
            if index >= count:
                raise ValueError(f"worker must be (index, count) with index < count, got "
                                 f"{tuple(self.worker)}")
        return self


def run_chunks(
    run_dir: RunDir | None,
    names: Sequence[str],
    compute_fn: Callable[[str], dict[str, Any]],
    *,
    progress: bool | Progress | None = False,
    sweep: Sweep = Sweep(),
    lease_s: float = DEFAULT_LEASE_S,
    poll_s: float = 1.0,
) -> dict[str, dict[str, Any]]:
    """Compute every chunk not yet finished in ``run_dir``, saving each as soon as it is done.

    Several processes may work on one folder at once: each chunk is claimed before it is
    computed (:mod:`jaxaudit.runs.claims`), so no two live processes compute the same chunk, and
    a chunk whose process died (its claim not renewed for ``lease_s`` seconds) is redone.
    In a multi-process JAX program (``jax.distributed.initialize()``) the processes go through
    the chunks together: process 0 alone reads, claims and writes the folder and sends every
    chunk to the others (docs/scaling.md).

    Args:
      run_dir: the run folder; None computes every chunk in memory (nothing is saved, nothing
        resumes: a pipeline called without a run folder).
      names: chunk names, in the order to compute them.
      compute_fn: ``compute_fn(name) -> {array name: array}``.
      progress: a :data:`Progress` callback ``progress(done, total)`` over this process's
        chunks (e.g. a labelled :class:`ProgressBar`), or True for a tqdm bar on stderr (chunks
        done, rate, ETA); off by default.
      sweep: where the chunks run and which share this process computes (:class:`Sweep`:
        ``backend``, ``ray_address``, ``ray_workers``, ``worker``; default: every chunk,
        serially, in this process).
      lease_s: seconds without a heartbeat after which another process's claim is stale.
      poll_s: how often the plain run looks again at chunks held by other processes.

    Returns:
      ``{name: arrays}`` for every name (worker mode: every name finished so far), loaded back
      from the folder for chunks already done.
    """
    names, desc = list(names), ""
    worker = Sweep.check(sweep).worker
    mine = names if worker is None else names[int(worker[0])::int(worker[1])]
    if sweep.backend == "ray":
        return _run_chunks_ray(run_dir, names, mine, compute_fn, progress, desc, worker, lease_s,
                               poll_s, sweep.ray_address, sweep.ray_workers)
    if run_dir is None:
        out = {}
        if callable(progress):
            progress(0, len(mine))
        with progress_bar(len(mine), desc=desc, enabled=progress is True) as plain:
            for i, name in enumerate(mine, 1):
                out[name] = dict(compute_fn(name))
                plain.update(1)
                if callable(progress):
                    progress(i, len(mine))
        return out
    if jax_process()[1] > 1:  # several JAX processes compute every chunk together
        return _run_chunks_lockstep(run_dir, names, set(mine), compute_fn, progress, desc, worker,
                                    lease_s, poll_s)
    run_dir.plan(names)
    results = {n: run_dir.load_chunk(n) for n in names if run_dir.has_chunk(n)}
    if callable(progress):
        bar: Any = _CallbackBar(progress, len(mine), sum(n in results for n in mine))
    else:
        bar = progress_bar(len(mine), desc=desc, enabled=bool(progress),
                           initial=sum(n in results for n in mine))

    def attempt(pending: list[str]) -> list[str]:
        held = []
        for name in pending:
            if run_dir.has_chunk(name):  # finished by another process meanwhile
                results[name] = run_dir.load_chunk(name)
                bar.update(1)
                continue
            claim = claim_unit(run_dir, name, lease_s=lease_s)
            if claim is None:
                held.append(name)
                continue
            with claim:
                if not run_dir.has_chunk(name):
                    run_dir.save_chunk(name, dict(compute_fn(name)))
            results[name] = run_dir.load_chunk(name)
            bar.update(1)
        return held

    with bar:
        _until_done([n for n in mine if n not in results], attempt, worker, poll_s,
                    _waiting_notice(run_dir, bar, desc, lease_s))
    return {n: results[n] for n in names if n in results}


def _waiting_notice(run: RunDir, bar: Any, desc: str, lease_s: float
                    ) -> Callable[[list[str]], None]:
    """What the plain run shows while it waits for units other processes hold: the bar's
    description names the first unit waited for, and a message (logger ``jaxaudit.runs``, once
    per unit and holder) names the unit, its holder and when its claim is taken over
    (``held == []``: the wait is over, the bar's label is restored)."""
    told: set[tuple[str, str]] = set()

    def notice(held: list[str]) -> None:
        if not held:
            _describe(bar, desc)
            return
        owner, sentence = claim_holder(run, held[0], lease_s=lease_s)
        more = f" (and {len(held) - 1} more)" if len(held) > 1 else ""
        _describe(bar, f"waiting for {held[0]}{more}")
        if sentence and (held[0], owner) not in told:
            told.add((held[0], owner))
            _log.warning("waiting: %s%s", sentence, more)

    return notice


def _describe(bar: Any, text: str) -> None:
    if hasattr(bar, "set_description_str"):  # a tqdm bar
        bar.set_description_str(text)
    elif callable(getattr(bar, "describe", None)):
        bar.describe(text)


def _until_done(pending: list[str], attempt: Callable[[list[str]], list[str]],
                worker: tuple[int, int] | None, poll_s: float,
                waiting: Callable[[list[str]], None] | None = None) -> None:
    """Rounds of ``attempt(pending) -> held`` until no chunk is held by another process, waiting
    ``poll_s`` between rounds (worker mode: one round; held chunks are left to their holders);
    ``waiting(held)`` is told what each wait is for, and ``waiting([])`` when it is over."""
    waited = False
    while pending:
        held = attempt(pending)
        if worker is not None or not held:
            break
        if waiting is not None:
            waiting(held)
            waited = True
        time.sleep(poll_s)
        pending = held
    if waited and waiting is not None:
        waiting([])


def _run_chunks_ray(run: RunDir | None, names: list[str], mine: list[str],
                    compute_fn: Callable[[str], dict[str, Any]],
                    progress: bool | Progress | None, desc: str,
                    worker: tuple[int, int] | None, lease_s: float, poll_s: float,
                    address: str | None, workers: int | None) -> dict[str, dict[str, Any]]:
    """:func:`run_chunks` with ``backend="ray"``: the chunks are computed by Ray tasks and
    committed here, by the driver, each once (``has_chunk`` then ``save_chunk``)."""
    from jaxaudit.runs.ray_backend import run_units_ray

    if jax_process()[1] > 1:
        raise ValueError("backend='ray' cannot run inside a multi-process JAX program; use one "
                         "or the other (docs/scaling.md)")
    results: dict[str, dict[str, Any]] = {}
    if run is not None:
        run.plan(names)
        results = {n: run.load_chunk(n) for n in names if run.has_chunk(n)}
    initial = sum(n in results for n in mine)
    if callable(progress):
        bar: Any = _CallbackBar(progress, len(mine), initial)
    else:
        bar = progress_bar(len(mine), desc=desc, enabled=bool(progress), initial=initial)

    def commit(name: str, arrays: dict[str, Any]) -> None:
        if run is None:
            results[name] = arrays
        else:
            if not run.has_chunk(name):
                run.save_chunk(name, arrays)
            results[name] = run.load_chunk(name)
        bar.update(1)

    def acquire(name: str) -> Any:
        if run is None:
            return None
        if run.has_chunk(name):  # finished by another process meanwhile
            commit(name, {})
            return None
        return claim_unit(run, name, lease_s=lease_s)

    def attempt(pending: list[str]) -> list[str]:
        held = run_units_ray(pending, compute_fn, commit, acquire=None if run is None else acquire,
                             address=address, workers=workers)
        return [n for n in held if n not in results]

    with bar:
        _until_done([n for n in mine if n not in results], attempt, worker, poll_s,
                    None if run is None else _waiting_notice(run, bar, desc, lease_s))
    return {n: results[n] for n in names if n in results}


def _broadcast_bytes(data: bytes | None) -> bytes:
    """Process 0's ``data`` on every process of a multi-process JAX program (a collective:
    every process calls it; the others may pass None). In one process: ``data`` itself."""
    import jax
    import numpy as np

    if jax.process_count() == 1:
        if data is None:
            raise ValueError("data must be bytes in process 0, got None")
        return bytes(data)
    from jax.experimental import multihost_utils

    primary = jax.process_index() == 0
    if primary and data is None:
        raise ValueError("data must be bytes in process 0, got None")
    if primary and data is not None and len(data) >= 2**31:
        raise ValueError(f"data holds {len(data):,} bytes; at most 2**31 - 1 can be broadcast")
    mine = np.asarray([len(data) if primary and data is not None else 0], np.int32)
    size = int(np.asarray(multihost_utils.broadcast_one_to_all(mine))[0])
    if size == 0:
        return b""
    buf = (np.frombuffer(data, np.uint8) if primary and data is not None
           else np.zeros(size, np.uint8))
    return np.asarray(multihost_utils.broadcast_one_to_all(buf), np.uint8).tobytes()


_COMPUTE, _DONE, _HELD, _SKIP = b"c", b"d", b"h", b"s"


def _run_chunks_lockstep(run: RunDir, names: list[str], mine: set[str],
                         compute_fn: Callable[[str], dict[str, Any]],
                         progress: bool | Progress | None, desc: str,
                         worker: tuple[int, int] | None, lease_s: float, poll_s: float
                        ) -> dict[str, dict[str, Any]]:
    """:func:`run_chunks` in a multi-process JAX program (``jax.distributed.initialize()``).

    Every process calls ``compute_fn`` for the same chunks in the same order (it runs collective
    computations, e.g. :func:`jaxaudit.sharding.vmap_chunked` over all processes' devices), so
    process 0 alone decides which chunks are done, claims and saves them; it sends each chunk's
    saved bytes to the others, so that every process returns the same arrays. The other
    processes never touch the folder (their ``run`` may name a folder that does not exist)."""
    primary = jax_process()[0] == 0
    if primary:
        run.plan(names)
    results: dict[str, dict[str, Any]] = {}
    count = len([n for n in names if n in mine])
    if callable(progress):
        bar: Any = _CallbackBar(progress, count, 0)
    else:
        bar = progress_bar(count, desc=desc, enabled=bool(progress) and primary)

    def attempt(pending: list[str]) -> list[str]:
        held = []
        for name in pending:
            claim = None
            state = b""
            if primary:
                if run.has_chunk(name):
                    state = _DONE
                elif name not in mine:
                    state = _SKIP
                else:
                    claim = claim_unit(run, name, lease_s=lease_s)
                    state = _HELD if claim is None else _COMPUTE
            state = _broadcast_bytes(state if primary else None)
            if state == _HELD:
                held.append(name)
                continue
            if state == _SKIP:
                continue
            if state == _COMPUTE:
                try:
                    arrays = dict(compute_fn(name))
                    if claim is not None and not run.has_chunk(name):
                        run.save_chunk(name, arrays)
                finally:
                    if claim is not None:
                        claim.release()
            data = _broadcast_bytes(run._verified_bytes(name) if primary else None)
            results[name] = load_npz(data, name=f"chunk {name!r} in {run.path}")
            if name in mine:
                bar.update(1)
        return held

    with bar:
        _until_done(list(names), attempt, worker, poll_s)
    return {n: results[n] for n in names if n in results}


class _CallbackBar:
    """The part of a tqdm bar that run_chunks uses, reporting to a Progress callback (and its
    ``describe(text)``, when it has one: :meth:`ProgressBar.describe`)."""

    def __init__(self, callback: Progress, total: int, initial: int) -> None:
        self.callback, self.total, self.n = callback, total, initial
        callback(initial, total)

    def describe(self, text: str) -> None:
        describe = getattr(self.callback, "describe", None)
        if callable(describe):
            describe(text)

    def update(self, k: int = 1) -> None:
        self.n += k
        self.callback(self.n, self.total)

    def __enter__(self) -> _CallbackBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
