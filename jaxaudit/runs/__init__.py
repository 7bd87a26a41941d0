"""Resumable run folders (manifest, atomic chunk files, run-bound checksums), progress bars,
parameter pytrees stored as named arrays, the checked loader of ``.npy``/``.npz`` files, and the
one key rule of every sweep (``runs.keys``: unit u of seed s uses ``fold_in(key(s), u)``)."""

from jaxaudit.runs.arrays import describe_npz, load_arrays, load_npy, load_npz
from jaxaudit.runs.keys import KEY_RULE, STREAMS, stream_key, unit_key, unit_keys
from jaxaudit.runs.params import params_from_arrays, params_to_arrays
from jaxaudit.runs.progress import Progress, ProgressBar, progress_bar, run_chunks
from jaxaudit.runs.rundir import (
    RunDir,
    RunResults,
    atomic_write_bytes,
    config_hash,
    discard_new_run,
    dumps_strict,
    load_results,
    read_manifest,
    save_figure,
    scan_run_folder,
)

__all__ = [
    "KEY_RULE", "Progress", "ProgressBar", "RunDir", "STREAMS", "RunResults", "atomic_write_bytes", "config_hash", "discard_new_run", "describe_npz", "dumps_strict",
    "load_arrays", "load_npy", "load_npz", "load_results", "params_from_arrays",
    "params_to_arrays", "progress_bar", "read_manifest", "save_figure", "run_chunks", "scan_run_folder",
    "stream_key", "unit_key", "unit_keys",
]
