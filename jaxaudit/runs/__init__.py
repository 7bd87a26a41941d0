"""Resumable run folders (manifest, atomic chunk files, checksums), progress bars, and parameter
pytrees stored as named arrays."""

from jaxaudit.runs.params import params_from_arrays, params_to_arrays
from jaxaudit.runs.progress import progress_bar, run_chunks
from jaxaudit.runs.rundir import (
    RunDir,
    RunResults,
    atomic_write_bytes,
    config_hash,
    load_results,
    read_manifest,
)

__all__ = [
    "RunDir", "RunResults", "atomic_write_bytes", "config_hash", "load_results",
    "params_from_arrays", "params_to_arrays", "progress_bar", "read_manifest", "run_chunks",
]
