"""``--worker I/N``: independent ``jaxaudit`` processes on one run folder (as a SLURM array or a
shell loop starts them) plus a final plain run give the serial result; a SIGKILLed worker's
claim is reclaimed by the next run; ``--backend ray`` from the command line equals serial."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.runs import load_results

TINY = ["shadow", "--dataset", "csbm", "--csbm-nodes", "60", "--models", "4", "--chunk", "1",
        "--epochs", "2", "--seed", "5", "--quiet"]
NAMES = [f"chunk_{c:05d}" for c in range(4)]


def _jaxaudit(*args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.Popen([sys.executable, "-m", "jaxaudit", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _serial(tmp_path):
    assert main([*TINY, "--out", str(tmp_path / "serial")], all_cpu_cores=False) == 0
    return load_results(tmp_path / "serial")


@pytest.mark.slow
def test_two_worker_processes_and_a_final_run_equal_the_serial_run(tmp_path):
    shared = str(tmp_path / "shared")
    procs = [_jaxaudit(*TINY, "--out", shared, "--worker", f"{i}/2") for i in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    serial = _serial(tmp_path)
    assert sorted(load_results(shared).chunks) == NAMES            # the two shares cover all
    mtimes = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "shared" / "chunks").iterdir()}
    assert main([*TINY, "--out", shared], all_cpu_cores=False) == 0  # verifies, computes nothing
    assert mtimes == {p.name: p.stat().st_mtime_ns
                      for p in (tmp_path / "shared" / "chunks").iterdir()}
    final = load_results(shared)
    assert final.missing == []
    np.testing.assert_array_equal(final.concat("scores"), serial.concat("scores"))
    np.testing.assert_array_equal(final.concat("masks"), serial.concat("masks"))
    assert not (tmp_path / "shared" / "claims").exists()


@pytest.mark.slow
def test_a_sigkilled_worker_leaves_a_claim_that_the_next_run_reclaims(tmp_path):
    shared = tmp_path / "shared"
    args = [*TINY[:-4], "2000", "--seed", "5", "--quiet"]               # ~1 s per unit
    proc = _jaxaudit(*args, "--out", str(shared), "--worker", "0/1")
    deadline = time.monotonic() + 90
    while not list((shared / "claims").glob("*.claim")) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    claims = list((shared / "claims").glob("*.claim"))
    assert claims, "the worker never claimed a unit"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert list((shared / "claims").glob("*.claim"))                # left behind
    assert load_results(shared).missing                              # killed mid-sweep
    assert main([*args, "--out", str(shared)], all_cpu_cores=False) == 0   # reclaimed at once
    assert main([*args, "--out", str(tmp_path / "serial")], all_cpu_cores=False) == 0
    np.testing.assert_array_equal(load_results(shared).concat("scores"),
                                  load_results(tmp_path / "serial").concat("scores"))
    assert not (shared / "claims").exists()


@pytest.mark.parametrize("flag", ["0/0", "2/2", "-1/2", "1", "a/b"])
def test_bad_worker_flag_is_a_usage_error(tmp_path, flag, capsys):
    assert main([*TINY, "--out", str(tmp_path / "x"), "--worker", flag]) == 2
    assert "--worker" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_ray_address_without_the_ray_backend_is_refused(tmp_path, capsys):
    assert main([*TINY, "--out", str(tmp_path / "x"), "--ray-address", "127.0.0.1:1"]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err


@pytest.mark.slow
def test_backend_ray_from_the_command_line_equals_serial(tmp_path):
    pytest.importorskip("ray")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    assert main([*TINY, "--out", str(tmp_path / "ray"), "--backend", "ray"],
                all_cpu_cores=False) == 0
    np.testing.assert_array_equal(load_results(tmp_path / "ray").concat("scores"),
                                  _serial(tmp_path).concat("scores"))


@pytest.mark.slow
def test_rdp_worker_share_prints_its_progress_and_the_final_run_audits(tmp_path, capsys):
    args = ["rdp", "--dataset", "synthetic", "--model", "logreg", "--dataset-size", "8",
            "--public-size", "0", "--steps", "2", "--runs", "4", "--chunk", "1", "--orders",
            "1.5,2", "--epsilon", "4", "--quiet", "--out", str(tmp_path / "r")]
    assert main([*args, "--worker", "0/2"], all_cpu_cores=False) == 0
    assert "2 runs per world so far" in capsys.readouterr().out
    assert not (tmp_path / "r" / "results.json").exists()
    assert main(args, all_cpu_cores=False) == 0
    assert (tmp_path / "r" / "results.json").exists()
