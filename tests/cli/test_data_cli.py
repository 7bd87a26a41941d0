"""``jaxaudit data``: info in a subprocess, verify and errors in-process."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxaudit.cli.main import main
from jaxaudit.datasets import resolve_data_dir


@pytest.mark.slow
@pytest.mark.needs_data("cora")
def test_info_cora_subprocess():
    env = dict(os.environ, JAXAUDIT_DATA=str(resolve_data_dir()), JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-m", "jaxaudit", "data", "info", "cora"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    assert "nodes: 2708" in out
    assert "undirected edges: 5278" in out
    assert "features: 1433" in out
    assert "classes: 7" in out
    assert "label counts: 0:351 1:217 2:418 3:818 4:426 5:298 6:180" in out
    assert "split (train/val/test): 140/500/1000" in out


@pytest.mark.needs_data("mnist")
def test_info_mnist_and_csbm(capsys):
    assert main(["data", "info", "mnist"]) == 0
    out = capsys.readouterr().out
    assert "images: 10000" in out and "0:980 1:1135" in out and "pixel range: 0..255" in out
    assert main(["data", "info", "csbm", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "nodes: 2708" in out and "split (train/val/test): 140/500/1000" in out


@pytest.mark.needs_data("cora", "citeseer", "mnist")
def test_verify_ok_and_bad(tmp_path, capsys):
    assert main(["data", "verify"]) == 0
    out = capsys.readouterr().out
    assert "18 known files found, 0 bad" in out
    (tmp_path / "mnist").mkdir()
    src = resolve_data_dir() / "mnist"
    shutil.copy(src / "t10k-images-idx3-ubyte.gz", tmp_path / "mnist")
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not mnist")
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "bad       mnist/t10k-labels-idx1-ubyte.gz" in out
    assert "ok        mnist/t10k-images-idx3-ubyte.gz" in out


def test_missing_data_is_a_clean_error(tmp_path, capsys):
    assert main(["data", "info", "citeseer", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "JAXAUDIT_DATA" in err and "--download" in err


def _mirrors(tmp_path, monkeypatch, *subs):
    """file:// mirrors of the shared folders ``subs`` (offline stand-ins for the canonical
    locations)."""
    from jaxaudit.datasets import _files

    for sub in subs:
        mirror = tmp_path / "mirror" / sub
        shutil.copytree(resolve_data_dir() / sub, mirror)
        monkeypatch.setitem(_files.BASE_URLS, sub, (mirror.as_uri() + "/",))


@pytest.mark.needs_data("cora", "mnist")
def test_download_fetches_missing_then_verifies(tmp_path, monkeypatch, capsys):
    _mirrors(tmp_path, monkeypatch, "planetoid", "mnist")
    target = tmp_path / "data"
    (target / "planetoid").mkdir(parents=True)
    shutil.copy(resolve_data_dir() / "planetoid" / "ind.cora.x", target / "planetoid")
    assert main(["data", "download", "cora", "--data-dir", str(target)]) == 0
    assert "cora: fetched 7 file(s), verified" in capsys.readouterr().out
    assert sorted(p.name for p in (target / "planetoid").iterdir()) == sorted(
        f"ind.cora.{p}" for p in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"))
    assert main(["data", "download", "cora", "--data-dir", str(target)]) == 0
    assert "cora: already present, verified" in capsys.readouterr().out
    # MNIST: the mirror holds only the test split, so the train split cannot be fetched.
    assert main(["data", "download", "mnist", "--data-dir", str(target)]) == 2
    err = capsys.readouterr().err
    assert "could not download" in err and "train-images-idx3-ubyte.gz" in err
    assert main(["data", "download", "pubmed", "--data-dir", str(target)]) == 2
    assert "pubmed" in capsys.readouterr().err


@pytest.mark.needs_data("cora")
def test_download_refuses_a_tampered_present_file(tmp_path, monkeypatch, capsys):
    _mirrors(tmp_path, monkeypatch, "planetoid")
    (tmp_path / "data" / "planetoid").mkdir(parents=True)
    (tmp_path / "data" / "planetoid" / "ind.cora.y").write_bytes(b"tampered")
    assert main(["data", "download", "cora", "--data-dir", str(tmp_path / "data")]) == 2
    assert "checksum mismatch" in capsys.readouterr().err


@pytest.mark.needs_data("cora")
def test_verify_reports_missing_files_and_absent_folder(tmp_path, capsys):
    """Hostile input 15: a deleted file and a nonexistent folder used to exit 0."""
    shutil.copytree(resolve_data_dir() / "planetoid", tmp_path / "planetoid")
    (tmp_path / "planetoid" / "ind.cora.graph").unlink()
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "missing   planetoid/ind.cora.graph" in out and "1 missing" in out
    assert main(["data", "verify", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_data_check_skips_or_fails(tmp_path, monkeypatch):
    """The suite's real-data check: a skip naming the remedy, a failure under
    JAXAUDIT_REQUIRE_DATA=1 (pytest run in a subprocess on a generated test file)."""
    test_file = tmp_path / "test_needs.py"
    test_file.write_text("import pytest\n\n@pytest.mark.needs_data('cora')\n"
                         "def test_x():\n    pass\n")
    conftest = tmp_path / "conftest.py"
    conftest.write_text((Path(__file__).resolve().parents[1] / "conftest.py").read_text())
    env = dict(os.environ, JAXAUDIT_DATA=str(tmp_path / "empty"), JAX_PLATFORMS="cpu")
    env.pop("JAXAUDIT_REQUIRE_DATA", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           "-p", "no:xdist", str(test_file)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout
    assert "set JAXAUDIT_DATA or run `jaxaudit data download cora`" in run.stdout
    env["JAXAUDIT_REQUIRE_DATA"] = "1"
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and "1 error" in run.stdout  # failed in set-up
    assert "JAXAUDIT_REQUIRE_DATA=1" in run.stdout


def test_download_file_system_errors_are_one_line(tmp_path, monkeypatch, capsys):
    """`data download` where planetoid/ is a file, into a read-only folder, or onto a
    full disk ended in a traceback (or blamed the mirrors); now one line naming the folder, exit
    2. The mirrors are never reached (an unreachable URL stands for them)."""
    import errno
    import tempfile

    from jaxaudit.datasets import _files

    monkeypatch.setitem(_files.BASE_URLS, "planetoid", ((tmp_path / "nowhere").as_uri() + "/",))
    (tmp_path / "file" / "planetoid").parent.mkdir()
    (tmp_path / "file" / "planetoid").write_text("not a folder")
    assert main(["data", "download", "cora", "--data-dir", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "planetoid is a file, not a folder" in err

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert main(["data", "download", "cora", "--data-dir", str(tmp_path / "ro")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write to the data folder" in err
    assert "Permission denied" in err and "--data-dir" in err
    monkeypatch.undo()

    def full(url, dest):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files, "fetch_url", full)
    assert main(["data", "download", "cora", "--data-dir", str(tmp_path / "full")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "free some space" in err
    assert "could not download" not in err  # the disk, not the mirror


def test_verify_on_an_empty_folder_is_an_error(tmp_path, capsys):
    """`data verify` on an empty data folder said '0 known files found' and exit 0."""
    (tmp_path / "empty").mkdir()
    assert main(["data", "verify", "--data-dir", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "no known data file found" in err and "jaxaudit data download" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_download_into_a_read_only_folder_for_real(tmp_path, capsys):
    """The same without mocks, as a user other than root: a read-only data directory."""
    (tmp_path / "ro").mkdir(mode=0o500)
    try:
        assert main(["data", "download", "cifar10", "--data-dir", str(tmp_path / "ro")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot write to the data folder" in err
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_parser_names_match_the_library():
    """cli/data.py spells the data sets out (so that --help imports no jax): the same names."""
    from jaxaudit.cli import data
    from jaxaudit.datasets.fetch import DATASETS
    from jaxaudit.datasets.inventory import INFO_DATASETS

    assert data.DATASETS == INFO_DATASETS and data.DATASETS[:4] == DATASETS
