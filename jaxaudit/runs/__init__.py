"""Resumable run folders (manifest, atomic chunk files, checksums) and progress bars."""

from jaxaudit.runs.progress import progress_bar, run_chunks
from jaxaudit.runs.rundir import RunDir, atomic_write_bytes, config_hash, load_results

__all__ = ["RunDir", "atomic_write_bytes", "config_hash", "load_results", "progress_bar", "run_chunks"]
