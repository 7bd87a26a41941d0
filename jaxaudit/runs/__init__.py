"""Resumable run folders (manifest, atomic chunk files, run-bound checksums), progress bars,
parameter pytrees stored as named arrays, the checked loader of ``.npy``/``.npz`` files
(``load_arrays``; the single-format ``load_npy``/``load_npz`` stay in ``runs.arrays``), and the
one key rule of every sweep (``runs.keys``: unit u of root key k uses ``fold_in(k, u)``).

Modules: ``files`` (strict JSON, reads that follow no link, atomic writes), ``rundir`` (the run
folder and its manifest), ``results`` (a folder as loaded), ``arrays``, ``params``, ``progress``
(progress bars, ``run_chunks`` and its ``Sweep``), ``claims``, ``keys``.
"""

from jaxaudit.runs.arrays import load_arrays
from jaxaudit.runs.keys import KEY_RULE, stream_key, unit_key, unit_keys
from jaxaudit.runs.params import params_from_arrays, params_to_arrays
from jaxaudit.runs.progress import Progress, ProgressBar, Sweep, run_chunks
from jaxaudit.runs.results import RunResults, load_results
from jaxaudit.runs.rundir import RunDir

__all__ = [
    "KEY_RULE", "Progress", "ProgressBar", "RunDir", "RunResults", "load_arrays",
    "load_results", "params_from_arrays", "params_to_arrays",
    "Sweep", "run_chunks", "stream_key", "unit_key", "unit_keys",
]
