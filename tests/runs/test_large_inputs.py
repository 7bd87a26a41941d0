"""Large inputs are refused from their header or size, before they are read.

Sparse files (``truncate``) and crafted ``.npy`` headers fake sizes of gigabytes at no cost, and
the memory available is set small, so every case runs in milliseconds."""

import io
import os

import numpy as np
import numpy.lib.format as npformat
import pytest

import jaxaudit._validation.paths as paths
from jaxaudit.dpsgd.scores import load_scores
from jaxaudit.runs import RunDir, load_results
from jaxaudit.runs.arrays import describe_npy, load_npy, load_npz

GiB = 1 << 30


def _sparse_npy(path, shape, dtype=np.float64):
    """A valid .npy file of ``shape`` whose data is a hole (no disk, no time)."""
    header = io.BytesIO()
    npformat.write_array_header_1_0(header, {"descr": npformat.dtype_to_descr(np.dtype(dtype)),
                                             "fortran_order": False, "shape": shape})
    path.write_bytes(header.getvalue())
    os.truncate(path, len(header.getvalue()) + int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return path


@pytest.fixture
def little_memory(monkeypatch):
    """1 GiB of memory available, whatever the machine has."""
    monkeypatch.setattr(paths, "available_memory", lambda: GiB)


@pytest.fixture
def no_whole_reads(monkeypatch):
    """Any whole read of an array fails the test (it must be refused before)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the array was read before its size was checked")

    monkeypatch.setattr(np, "fromfile", refuse)
    monkeypatch.setattr(npformat, "read_array", refuse)


def test_an_8_gib_score_file_is_refused_from_its_header(tmp_path, little_memory,
                                                        no_whole_reads):
    """An 8 GiB score .npy gave numpy's _ArrayMemoryError traceback from dpsgd/scores.py."""
    big = _sparse_npy(tmp_path / "in.npy", (GiB,))  # 2^30 float64: 8 GiB
    with pytest.raises(ValueError, match=r"--scores IN .*in\.npy .*8 GiB.*reading it needs "
                                         r"about 16 GiB, more than the 1 GiB"):
        load_scores(big, "--scores IN")


def test_load_npy_and_npz_check_memory_and_max_bytes_before_reading(tmp_path, monkeypatch,
                                                                    little_memory,
                                                                    no_whole_reads):
    big = _sparse_npy(tmp_path / "big.npy", (2 * GiB // 8,))  # 2 GiB
    assert describe_npy(big) == ((2 * GiB // 8,), np.dtype(np.float64))  # headers only
    with pytest.raises(ValueError, match=r"big\.npy .*reading it needs about 2 GiB"):
        load_npy(big)
    small = _sparse_npy(tmp_path / "small.npy", (1000,))
    with pytest.raises(ValueError, match=r"8,000 bytes\), more than the 800 bytes allowed"):
        load_npy(small, max_bytes=800)
    # an archive whose members declare more than the memory available
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(10))
    monkeypatch.setattr(paths, "available_memory", lambda: 10)
    with pytest.raises(ValueError, match="members declaring 208 bytes.*reading it needs"):
        load_npz(buf.getvalue())


def test_a_large_priors_npy_is_refused_before_it_is_read(tmp_path, monkeypatch,
                                                         no_whole_reads):
    """A 4 GiB --priors .npy was read and copied before the 10^8 limit was checked."""
    from jaxaudit.pipelines import BoundsConfig, run_bounds
    from jaxaudit.pipelines import bounds as pipeline

    monkeypatch.setattr(paths, "available_memory", lambda: 64 * GiB)
    monkeypatch.setattr(pipeline, "max_targets", lambda: 10**8)
    priors = _sparse_npy(tmp_path / "priors.npy", (4 * GiB // 8,))  # 5.4e8 values
    with pytest.raises(ValueError, match=r"priors_file .*priors\.npy: its \.npy header claims "
                                         r"shape \(536870912,\).*more than the 800,000,000"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(priors)))


def test_a_large_priors_text_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A 3 GiB text file gave a MemoryError traceback: its size is checked against the memory
    that reading text takes, and at most limit + 1 rows are parsed."""
    from jaxaudit.pipelines import BoundsConfig, run_bounds
    from jaxaudit.pipelines import bounds as pipeline

    text = tmp_path / "priors.txt"
    text.write_text("0.001\n" * 100_000)  # 600 kB
    monkeypatch.setattr(paths, "available_memory", lambda: 1 << 20)  # 1 MiB
    with pytest.raises(ValueError, match=r"priors_file .*priors\.txt is 0.000559 GiB: reading "
                                         r"it needs about"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(text)))
    monkeypatch.setattr(paths, "available_memory", lambda: 64 * GiB)
    monkeypatch.setattr(pipeline, "max_targets", lambda: 1000)
    seen = []
    loadtxt = np.loadtxt

    def spy(*args, **kwargs):
        seen.append(kwargs.get("max_rows"))
        return loadtxt(*args, **kwargs)

    monkeypatch.setattr(np, "loadtxt", spy)
    with pytest.raises(ValueError, match="holds 1001 values, more than 1000"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(text)))
    assert seen == [1001]


def test_a_large_json_table_in_a_run_folder_is_refused_unread(tmp_path):
    run = RunDir.open(tmp_path / "r", kind="test", config={})
    run.write_json("result.json", {"a": 1})
    big = tmp_path / "r" / "big.json"
    big.write_bytes(b"[")
    os.truncate(big, 3 * GiB)  # sparse: 3 GiB of text
    with pytest.raises(ValueError, match=r"big\.json holds 3,221,225,472 bytes, more than "
                                         r"268,435,456; not read"), pytest.warns(UserWarning):
        load_results(tmp_path / "r")
