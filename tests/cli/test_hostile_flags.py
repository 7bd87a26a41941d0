"""Hostile but realistic command lines (issue 16): each is refused at once, naming the flag,
before any work (no run folder is created), and never with a traceback."""

import os

import pytest

from jaxaudit.cli.main import main

SHADOW = ["shadow", "--dataset", "csbm", "--csbm-nodes", "60", "--models", "2", "--epochs", "1",
          "--quiet"]
RDP = ["rdp", "--dataset", "synthetic", "--model", "logreg", "--dataset-size", "8", "--runs", "2",
       "--steps", "1", "--public-size", "0", "--quiet"]


def _refused(argv, capsys, *needles):
    """The command exits 2 (argparse's usage error or main's clean error) and says ``needles``."""
    try:
        rc = main(argv)
    except SystemExit as stop:  # argparse refuses a malformed value before main runs anything
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize(("extra", "needles"), [
    # hostile 5: NaN scores trained and checkpointed
    (["--learning-rate", "inf"], ["--learning-rate", "finite"]),
    (["--weight-decay", "inf"], ["--weight-decay", "finite"]),
    # hostile 14: shadow --seed -1 was accepted
    (["--seed", "-1"], ["--seed", ">= 0"]),
])
def test_shadow_flags(tmp_path, capsys, extra, needles):
    _refused([*SHADOW, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


def test_shadow_huge_or_tiny_csbm_refused_before_work(tmp_path, capsys):
    """Hostile 10: --csbm-nodes 1000000000 ran on; hostile 14: '>= 1' was said but 1 refused."""
    argv = [a for a in SHADOW if a not in ("--csbm-nodes", "60")]
    _refused([*argv, "--csbm-nodes", "1000000000", "--out", str(tmp_path / "a")], capsys,
             "num_nodes x num_features")
    _refused([*argv, "--csbm-nodes", "1", "--out", str(tmp_path / "b")], capsys,
             "num_nodes must be an integer >= 2")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_out_paths_refused_before_work(tmp_path, capsys):
    """Hostile 9: --out at a file or a read-only folder, report --out a file, bmp --compare a
    bad path: raw tracebacks, sometimes after training a chunk."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    _refused([*SHADOW, "--out", str(afile)], capsys, "--out", "is a file")
    _refused(["report", str(tmp_path), "--out", str(afile)], capsys, "--out", "is a file")
    _refused(["bmp", "--dataset", "csbm", "--compare", str(tmp_path / "nowhere"), "--out",
              str(tmp_path / "bmp")], capsys, "--compare", "not found")
    _refused(["bmp", "--dataset", "csbm", "--compare", str(tmp_path), "--out",
              str(tmp_path / "bmp")], capsys, "--compare", "holds no nodes")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        _refused([*SHADOW, "--out", str(ro / "run")], capsys, "not writable")


@pytest.mark.parametrize(("extra", "needles"), [
    (["--clip", "inf"], ["--clip", "finite"]),          # hostile 5
    (["--learning-rate", "inf"], ["--learning-rate", "finite"]),
    (["--epsilon", "inf"], ["--epsilon", "finite"]),    # hostile 10: accountant traceback
    (["--seed", "-1"], ["--seed", ">= 0"]),             # hostile 14: message without the name
    (["--orders", "2,,3"], ["--orders", "empty"]),      # hostile 11: silently 2,3
])
def test_rdp_flags(tmp_path, capsys, extra, needles):
    _refused([*RDP, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()
