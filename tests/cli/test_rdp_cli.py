"""``jaxaudit rdp``: end to end on a small synthetic setting, resume, and clean errors."""

import json

import numpy as np
import pytest

from jaxaudit.cli.main import main

ARGS = ["rdp", "--dataset", "synthetic", "--model", "logreg", "--dataset-size", "20",
        "--public-size", "100", "--pretrain-epochs", "2", "--steps", "4", "--runs", "6",
        "--chunk", "3", "--orders", "1.5,2", "--epsilon", "4", "--quiet"]


@pytest.mark.slow
def test_rdp_cli_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(ARGS + ["--out", str(out)]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["runs_per_world"] == 6
    sigma = summary["noise_multiplier"]
    # the published protocol's defaults: σ from the tight PLD accountant, blank canary labelled 9
    from jaxaudit.accounting import noise_for_epsilon
    np.testing.assert_allclose(sigma, noise_for_epsilon(4, 1e-5, 4, 1.0, accountant="pld"))
    assert summary["canary_label"] == 9
    for rec, a in zip(summary["records"], [1.5, 2.0]):
        assert rec["order"] == a
        # full batch: ε_α = α T / (2σ²)
        np.testing.assert_allclose(rec["accountant"], a * 4 / (2 * sigma**2), rtol=1e-9)
        assert set(rec) >= {"dv_point", "dv_lower", "gdp_lower", "threshold_lower", "violation"}
    assert (out / "rdp_audit.png").stat().st_size > 1000
    chunks = sorted((out / "chunks").glob("chunk_*"))
    mtimes = [p.stat().st_mtime_ns for p in chunks]
    printed = capsys.readouterr().out
    assert "accountant" in printed and "runs per world would make it" in printed
    # same configuration: resumes from the saved chunks (nothing recomputed), same table
    assert main(ARGS + ["--out", str(out)]) == 0
    assert [p.stat().st_mtime_ns for p in chunks] == mtimes
    again = json.loads((out / "results.json").read_text())
    assert again["records"] == summary["records"]
    # a different configuration in the same folder is refused
    changed = list(ARGS)
    changed[changed.index("--steps") + 1] = "5"
    assert main(changed + ["--out", str(out)]) == 2
    assert "different" in capsys.readouterr().err


@pytest.mark.slow
def test_rdp_cli_bad_input(tmp_path, capsys):
    bad = list(ARGS)
    bad[bad.index("--orders") + 1] = "1.0,2"
    assert main(bad + ["--out", str(tmp_path / "a")]) == 2
    assert "orders" in capsys.readouterr().err
    assert main(ARGS + ["--delta", "2", "--out", str(tmp_path / "b")]) == 2
    assert "delta" in capsys.readouterr().err
    assert main(ARGS + ["--canary-label", "cat", "--out", str(tmp_path / "c")]) == 2
    assert "canary-label" in capsys.readouterr().err
    assert main(ARGS + ["--canary-label", "12", "--out", str(tmp_path / "d")]) == 2
    assert "canary-label" in capsys.readouterr().err


def test_parser_choices_match_the_library_and_help_does_not_import_jax():
    import subprocess
    import sys

    from jaxaudit import dpsgd
    from jaxaudit.cli import rdp
    from jaxaudit.datasets.audit_split import AUDIT_DATASETS

    assert set(rdp.DATASETS) == set(AUDIT_DATASETS)
    assert set(rdp.MODELS) == set(dpsgd.models.MODELS)
    code = ("import sys; from jaxaudit.cli.main import main\n"
            "try:\n    main(['rdp', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout[-2000:] + out.stderr[-2000:]


def test_ctrl_c_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    import jaxaudit.cli.rdp_runs as rdp_runs

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(rdp_runs, "run", interrupted)
    assert main(ARGS + ["--out", str(tmp_path / "run")]) == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxaudit rdp: interrupted") and len(err.splitlines()) == 1


def test_dependency_warnings_only_with_verbose(tmp_path, caplog, monkeypatch):
    """absl's "Excluding this order" (dp_accounting) and other packages' warnings stay out of
    the terminal unless --verbose; jaxaudit's own warnings always show."""
    import logging
    import warnings

    import jaxaudit.cli.rdp_runs as rdp_runs

    def noisy(args):
        logging.getLogger("absl").warning("Excluding this order from the epsilon computation.")
        for module in ("dp_accounting.rdp", "jaxaudit.cli.rdp"):
            warnings.warn_explicit(f"warning of {module}", UserWarning, "x.py", 1, module=module)
        return 0

    monkeypatch.setattr(rdp_runs, "run", noisy)
    before = logging.getLogger("absl").level
    for verbose, out in ((False, "a"), (True, "b")):
        caplog.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            argv = (["--verbose"] if verbose else []) + ARGS + ["--out", str(tmp_path / out)]
            assert main(argv) == 0
        shown = [str(w.message) for w in caught]
        assert "warning of jaxaudit.cli.rdp" in shown
        assert ("warning of dp_accounting.rdp" in shown) is verbose
        assert ("Excluding this order" in caplog.text) is verbose
    assert logging.getLogger("absl").level == before  # restored after the command
