"""Host-side progress bars and the resumable chunk loop used by every long command."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm

from jaxaudit.runs.rundir import RunDir

__all__ = ["progress_bar", "run_chunks"]


def progress_bar(total: int, *, desc: str = "", enabled: bool = True, initial: int = 0,
                 unit: str = "chunk") -> Any:
    """A tqdm bar (count, rate, ETA) on stderr; a silent no-op bar when ``enabled`` is False."""
    return tqdm(total=total, desc=desc, initial=initial, unit=unit, disable=not enabled,
                file=sys.stderr, dynamic_ncols=True)


def run_chunks(
    run: RunDir,
    names: Sequence[str],
    compute_fn: Callable[[str], dict],
    *,
    progress: bool = False,
    desc: str = "",
) -> dict[str, dict]:
    """Compute every chunk not yet finished in ``run``, saving each as soon as it is done.

    Args:
      run: the run folder.
      names: chunk names, in the order to compute them.
      compute_fn: ``compute_fn(name) -> {array name: array}``.
      progress: show a progress bar (chunks done, rate, ETA). Library callers leave it off.
      desc: the bar's label.

    Returns:
      ``{name: arrays}`` for every name, loaded back from the folder for chunks already done.
    """
    names = list(names)
    run.plan(names)
    done = [n for n in names if run.has_chunk(n)]
    results = {n: run.load_chunk(n) for n in done}
    with progress_bar(len(names), desc=desc, enabled=progress, initial=len(done)) as bar:
        for name in names:
            if name in results:
                continue
            arrays = {k: v for k, v in compute_fn(name).items()}
            run.save_chunk(name, arrays)
            results[name] = run.load_chunk(name)
            bar.update(1)
    return {n: results[n] for n in names}
