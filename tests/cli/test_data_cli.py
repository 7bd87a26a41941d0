"""``jaxaudit data``: info in a subprocess, verify and errors in-process."""

import os
import shutil
import subprocess
import sys

from jaxaudit.cli.main import main
from jaxaudit.datasets import resolve_data_dir


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


def test_info_mnist_and_csbm(capsys):
    assert main(["data", "info", "mnist"]) == 0
    out = capsys.readouterr().out
    assert "images: 10000" in out and "0:980 1:1135" in out and "pixel range: 0..255" in out
    assert main(["data", "info", "csbm", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "nodes: 2708" in out and "split (train/val/test): 140/500/1000" in out


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
