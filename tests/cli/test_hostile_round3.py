"""Hostile command lines of the third probe, each refused in one line naming the flag: inputs
larger than memory (checked by size before reading, on sparse files: nothing is written),
accountant extremes, conflicting flags, a changed faker table; and ``rdp --one-run``."""

import json

import numpy as np
import pytest

import jaxaudit._validation.paths as paths
from jaxaudit.cli import rdp as rdp_cli
from jaxaudit.cli.main import main

GIB = 2**30


def _scores(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", 1.0 + rng.standard_normal(200))
    np.save(tmp_path / "out.npy", rng.standard_normal(200))
    return str(tmp_path / "in.npy"), str(tmp_path / "out.npy")


def _sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)  # a hole: no disk, no reading
    return str(path)


def _fake_npy(path, values):
    """A .npy header claiming ``values`` float64, followed by a hole of that size."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                 "shape": (values,)})
        f.truncate(f.tell() + 8 * values)
    return str(path)


def _err(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    return err


@pytest.fixture
def one_gib_free(monkeypatch):
    monkeypatch.setattr(paths, "available_memory", lambda: GIB)


def test_large_score_file_refused_before_reading(tmp_path, capsys, one_gib_free):
    # before: an 8 GiB score .npy was read whole and ended in MemoryError
    big = _fake_npy(tmp_path / "big.npy", GIB // 8)  # 1 GiB of float64: 2 GiB as a copy too
    _, out = _scores(tmp_path)
    err = _err(capsys, ["rdp", "--scores", big, out, "--noise-multiplier", "1",
                        "--sampling-rate", "1", "--steps", "4", "--out", str(tmp_path / "r")])
    assert "--scores IN" in err and "GiB of memory available" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name, size", [("priors.npy", 4 * GIB), ("priors.txt", 3 * GIB)])
def test_large_priors_file_refused_before_reading(tmp_path, capsys, one_gib_free, name, size):
    # before: a 4 GiB --priors .npy (read before the 10^8 limit) and a 3 GiB text file
    path = _sparse(tmp_path / name, size)
    err = _err(capsys, ["bounds", "--epsilon", "1", "--priors", path])
    assert "--priors" in err and "GiB" in err


def test_check_input_path_refuses_a_file_larger_than_memory(tmp_path, one_gib_free):
    path = _sparse(tmp_path / "graph.npz", 2 * GIB)
    with pytest.raises(ValueError, match="graph_file .* 2 GiB"):
        paths.check_input_path("graph_file", path)
    small = tmp_path / "small.txt"
    small.write_text("0.5\n")
    assert paths.check_input_path("--priors", small, bytes_per_byte=4.0) == small


@pytest.mark.parametrize("flags, named", [
    (["--noise-multiplier", "1e-300"], "--noise-multiplier"),
    (["--noise-multiplier", "1", "--steps", "1000000000000000"], "--steps"),
])
@pytest.mark.slow
def test_accountant_extremes_name_the_flag(tmp_path, capsys, flags, named):
    # before: OverflowError inside dp_accounting; a 221 TiB allocation
    in_path, out_path = _scores(tmp_path)
    argv = ["rdp", "--scores", in_path, out_path, "--sampling-rate", "0.01", "--steps", "100",
            "--orders", "1.5,2", "--out", str(tmp_path / "r"), *flags]
    err = _err(capsys, argv)
    assert named in err and "Traceback" not in err


def test_calibration_to_a_huge_epsilon_names_the_flag(tmp_path, capsys):
    # before: NoBracketIntervalFoundError from dp_accounting's calibration
    err = _err(capsys, ["rdp", "--dataset", "synthetic", "--model", "logreg", "--epsilon", "1e9",
                        "--out", str(tmp_path / "r"), "--quiet"])
    assert "--epsilon=1000000000.0" in err


@pytest.mark.parametrize("argv, named", [
    (["shadow", "--graph", "g.npz", "--dataset", "citeseer"], "--dataset"),
    (["bmp", "--graph", "g.npz", "--dataset", "cora"], "--dataset"),
])
def test_graph_with_dataset_is_refused(tmp_path, capsys, argv, named):
    err = _err(capsys, [*argv, "--out", str(tmp_path / "r")])
    assert "not allowed with argument --graph" in err


@pytest.mark.parametrize("flags, named", [
    (["--worker", "0/2"], "--worker"), (["--backend", "ray"], "--backend ray"),
    (["--backend", "ray", "--ray-address", "127.0.0.1:1"], "--ray-address"),
])
def test_scores_with_sweep_flags_is_refused(tmp_path, capsys, flags, named):
    in_path, out_path = _scores(tmp_path)
    err = _err(capsys, ["rdp", "--scores", in_path, out_path, "--noise-multiplier", "1",
                        "--sampling-rate", "1", "--steps", "4", "--out", str(tmp_path / "r"),
                        *flags])
    assert f"{named} does not apply to --scores" in err
    assert not (tmp_path / "r").exists()


def test_one_run_refuses_conflicts_and_names_its_flags(tmp_path, capsys):
    in_path, out_path = _scores(tmp_path)
    out = str(tmp_path / "r")
    err = _err(capsys, ["rdp", "--one-run", "--scores", in_path, out_path, "--out", out])
    assert "it takes no --scores or --noise-multiplier" in err
    err = _err(capsys, ["rdp", "--one-run", "--noise-multiplier", "1", "--out", out])
    assert "it takes no --scores or --noise-multiplier" in err
    err = _err(capsys, ["rdp", "--one-run", "--runs", "5", "--out", out])  # refused, not ignored
    assert "--runs does not apply to --one-run" in err
    err = _err(capsys, ["rdp", "--one-run", "--worker", "0/2", "--out", out])
    assert "--worker does not apply to --one-run" in err
    err = _err(capsys, ["rdp", "--one-run", "--canaries", "5", "--out", out])
    assert "--canaries" in err
    err = _err(capsys, ["rdp", "--one-run", "--dataset", "cifar10", "--out", out])
    assert "--dataset" in err


def test_canary_kinds_are_the_librarys():
    from jaxaudit.dpsgd.one_run import KINDS

    assert set(rdp_cli.CANARY_KINDS) == set(KINDS)


@pytest.mark.slow
def test_one_run_command_trains_once_and_prints_the_bounds(tmp_path, capsys):
    out = tmp_path / "one"
    argv = ["rdp", "--one-run", "--dataset", "synthetic", "--model", "logreg",
            "--dataset-size", "32", "--canaries", "50", "--canary-kind", "gradient",
            "--steps", "2", "--epsilon", "4", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    assert "m = 50 canaries (" in printed and "one-run ε (lower bound)" in printed
    assert result["accountant_epsilon"] <= 4.0 + 1e-9  # the calibration meets the target
    assert 0.0 <= result["one_run"] <= result["accountant_epsilon"] + 1e-9


def test_changed_faker_table_says_what_was_expected(monkeypatch):
    faker = pytest.importorskip("faker")
    from faker.providers.person.en_US import Provider

    from jaxaudit.attacks.secret_priors import FAKER_VERSION, load_name_weights

    monkeypatch.setattr(faker, "VERSION", FAKER_VERSION)
    monkeypatch.setattr(Provider, "first_names_female", ("Alice", "Maria"))  # not name: weight
    # before: "dictionary update sequence element #0 has length 5"
    with pytest.raises(ValueError, match=r"faker.s en_US name tables.*\{name: weight\}"):
        load_name_weights()


def test_bounds_says_beforehand_that_large_plots_take_minutes(tmp_path, capsys):
    # before: 566 s at 10^6 targets without a word; the notice comes before any work (here the
    # bad --gamma then stops the command at once)
    err = _err(capsys, ["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "1000000",
                        "--plot", str(tmp_path / "t.png"), "--gamma", "2"])
    assert "--plot at 1000000 targets takes about 9 min" in err and "--gamma" in err
    from jaxaudit.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["bounds", "--help"])
    assert "2-core AMD EPYC" in capsys.readouterr().out
