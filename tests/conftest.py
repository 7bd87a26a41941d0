"""Shared test configuration: data directory, CPU-only JAX, and the real-data check.

A test that needs a real data set carries ``@pytest.mark.needs_data("cora", ...)`` (names:
cora, citeseer, mnist = MNIST's test split, mnist_train, cifar10). When a named data set's files
are not in the data directory the test is skipped with one reason naming the remedy; with
``JAXAUDIT_REQUIRE_DATA=1`` (CI sets it) it fails instead, so CI never silently stops testing
real data.
"""

import os
from pathlib import Path

import pytest

_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "JAXAUDIT_DATA" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["JAXAUDIT_DATA"] = str(_SHARED_DATA)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The CPU layouts of canary runs and shadow models compute the same numbers to float tolerance,
# not to the bit, and the timed trial's choice depends on the machine: tests that compare runs
# exactly use the fixed defaults (tests/test_autotune.py turns the trial on where it tests it).
os.environ.setdefault("JAXAUDIT_AUTOTUNE", "0")
# The jaxaudit command's XLA:CPU configuration (YNNPACK fusions off; jaxaudit._xla_flags), set
# before JAX starts, so that the library in this process computes what the command's
# subprocesses compute, to the bit (tests compare their run folders exactly).
from jaxaudit._xla_flags import with_cpu_flags  # noqa: E402

os.environ["XLA_FLAGS"] = with_cpu_flags(os.environ.get("XLA_FLAGS", ""), None)

#: marker name -> (data set, split) as understood by jaxaudit.datasets.fetch.missing_files
_DATA = {
    "cora": ("cora", None),
    "citeseer": ("citeseer", None),
    "mnist": ("mnist", "test"),
    "mnist_train": ("mnist", "train"),
    "cifar10": ("cifar10", None),
}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_data(*names): the test reads real data (cora, citeseer, mnist, "
        "mnist_train, cifar10); skipped when missing, failed with JAXAUDIT_REQUIRE_DATA=1")


def data_missing_reason(names) -> str | None:
    """None when every named data set is present, else the one skip/fail reason."""
    from jaxaudit.datasets import resolve_data_dir
    from jaxaudit.datasets.fetch import missing_files

    absent = [n for n in names if missing_files(*_DATA[n][:1], split=_DATA[n][1])]
    if not absent:
        return None
    return (f"data set(s) {', '.join(absent)} not found in {resolve_data_dir()}: set "
            f"JAXAUDIT_DATA or run `jaxaudit data download "
            f"{' '.join(sorted({_DATA[n][0] for n in absent}))}`")


def pytest_runtest_setup(item):
    names = [n for mark in item.iter_markers("needs_data") for n in mark.args]
    unknown = set(names) - set(_DATA)
    if unknown:
        pytest.fail(f"unknown needs_data name(s) {sorted(unknown)}; known: {sorted(_DATA)}")
    reason = data_missing_reason(names) if names else None
    if reason is None:
        return
    if os.environ.get("JAXAUDIT_REQUIRE_DATA") == "1":
        pytest.fail(f"{reason} (JAXAUDIT_REQUIRE_DATA=1 turns this skip into a failure)",
                    pytrace=False)
    pytest.skip(reason)


#: Linux caps a process at vm.max_map_count (65530 by default) memory mappings. Every program
#: XLA:CPU compiles keeps a few mappings (a `jax.random` sampler keeps about 28) until its
#: executable is freed, so one xdist worker running the whole slow suite passes the cap after
#: about 25 minutes and the next compilation segfaults inside LLVM. Dropping JAX's caches once a
#: worker holds a third of the cap frees them; the tests that follow recompile what they use.
_MAPS_FILE = Path("/proc/self/maps")
_MAPS_LIMIT = 20_000


def _mapping_count() -> int:
    try:
        with _MAPS_FILE.open("rb") as f:
            return f.read().count(b"\n")
    except OSError:  # not Linux: no cap to stay under
        return 0


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    yield
    if _mapping_count() > _MAPS_LIMIT:
        import gc

        import jax

        jax.clear_caches()
        gc.collect()
