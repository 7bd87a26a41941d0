"""``jaxaudit bounds`` end to end: values, JSON, plot, and clean errors."""

import json

import numpy as np
import pytest
import scipy.stats

from jaxaudit.cli.main import main


@pytest.mark.slow
def test_uniform_pure_dp_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    rc = main(["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "1000",
               "--json", str(out), "--plot", str(png)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "255" in text and "KGK+" in text and "MMC" in text
    result = json.loads(out.read_text())
    assert result["count_bound"] == 255  # docs/bounds.md reference value (K = 10, ε = 1, n = 1000)
    assert result["aggregate_gain"] == pytest.approx((255 - 100) / 1000)
    assert result["per_target"]["beta"] == pytest.approx(0.231969, abs=1e-6)
    assert result["baselines"]["kgk_plus"] == pytest.approx(min(1, np.e * 0.1), rel=1e-9)
    assert 0 <= result["baselines"]["mmc_threshold"] - 255 <= 2
    assert png.stat().st_size > 1000


@pytest.mark.slow
def test_membership_steinke_and_gdp(tmp_path):
    out = tmp_path / "mi.json"
    assert main(["bounds", "--epsilon", "1", "--uniform", "2", "--targets", "1000",
                 "--json", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["count_bound"] == 755 == result["baselines"]["steinke_threshold"]
    out = tmp_path / "gdp.json"
    assert main(["bounds", "--gdp-mu", "1", "--priors", str(_priors(tmp_path)),
                 "--json", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["targets"] == 40
    # Independent reference: min over a fine ε grid of the scipy binomial count bound with budget
    # γ − n δ(ε) (δ of 1-GDP from scipy's normal cdf). The CLI's grid differs, hence ±1.
    assert abs(result["count_bound"] - _gdp_reference(40, 0.01, 1.0, 0.05)) <= 1
    assert result["baselines"]["kgk_plus"] == pytest.approx(0.0923622, abs=1e-6)


def _gdp_reference(n, p, mu, gamma):
    best = n + 1
    norm = scipy.stats.norm
    for eps in np.arange(0.0, 8.0, 0.005):
        budget = gamma - n * (norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2))
        if budget > 0:
            beta = np.exp(eps) * p / (1 + np.expm1(eps) * p)
            tails = scipy.stats.binom.sf(np.arange(n + 1) - 1, n, beta)  # Pr[S ≥ v], v = 0..n
            ok = np.nonzero(tails <= budget)[0]
            best = min(best, int(ok[0]) if ok.size else n + 1)
    return best


def test_huge_epsilon_is_vacuous_not_a_crash(tmp_path):
    """ε = 1000 overflowed e^ε in the Steinke and MMC baselines (OverflowError traceback)."""
    out = tmp_path / "big.json"
    assert main(["bounds", "--epsilon", "1000", "--uniform", "2", "--targets", "10",
                 "--json", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["count_bound"] == 11 and result["vacuous"]  # β = 1: all 10 succeed surely
    assert result["baselines"]["steinke_threshold"] == 11
    assert result["baselines"]["mmc_threshold"] == 11


def _priors(tmp_path):
    path = tmp_path / "priors.txt"
    np.savetxt(path, np.full(40, 0.01))
    return path


@pytest.mark.parametrize(("argv", "message"), [
    (["--epsilon", "-1", "--uniform", "3", "--targets", "5"], "epsilon"),
    (["--epsilon", "1", "--uniform", "3", "--targets", "5", "--gamma", "2"], "gamma"),
    (["--epsilon", "1", "--zipf", "oops", "--targets", "5"], "zipf"),
    (["--uniform", "3", "--targets", "5"], "epsilon"),
    (["--epsilon", "1", "--priors", "/nonexistent/p.txt"], "not found"),
    (["--epsilon", "1", "--zipf", "0.9,100", "--targets", "5", "--attempts", "0"], "attempts"),
])
def test_errors_are_clean(argv, message, capsys):
    assert main(["bounds", *argv]) == 2
    assert message in capsys.readouterr().err


def test_output_table_rows_aligned_and_not_repeated(capsys):
    """Small thing: the "ours β(ε = 1, κ)" row was misaligned and repeated the row above."""
    assert main(["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "1000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("    ")]
    assert len({line.index(":") for line in rows}) == 1, rows  # one colon column
    values = [line.split(":", 1)[1].split()[0] for line in rows]
    assert values.count("0.231969") == 1


@pytest.mark.parametrize(("argv", "message"), [
    # hostile 10: a MemoryError traceback
    (["--epsilon", "1", "--uniform", "10", "--targets", "100000000000"], "--targets must lie"),
    # hostile 11: N = 2.5 was reported "over 2 values"; hostile 14: "math domain error"
    (["--epsilon", "1", "--zipf", "1.1,2.5", "--targets", "5"], "N must be a whole number"),
    (["--epsilon", "1", "--zipf", "inf,10", "--targets", "5"], "exponent must be finite"),
])
def test_hostile_arguments_refused(argv, message, capsys):
    assert main(["bounds", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_paths_refused_before_computing(tmp_path, capsys, monkeypatch):
    """Hostile 9 and 11: --json at a folder gave a traceback after the computation; a 2-D
    --priors file was flattened."""
    import jaxaudit.pipelines.bounds as pipeline

    monkeypatch.setattr(pipeline, "summarize_bounds", lambda *a, **k: pytest.fail("computed first"))
    assert main(["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "10",
                 "--json", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    path = tmp_path / "p.npy"
    np.save(path, np.full((3, 4), 0.1))
    assert main(["bounds", "--epsilon", "1", "--priors", str(path)]) == 2
    assert "(1-D), got shape (3, 4)" in capsys.readouterr().err


def test_mmc_threshold_not_shown_for_several_attempts(tmp_path):
    """Hostile 16: --attempts 10 printed an MMC threshold computed for one guess."""
    out = tmp_path / "r.json"
    assert main(["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "100",
                 "--attempts", "10", "--json", str(out), "--quiet"]) == 0
    assert "mmc_threshold" not in json.loads(out.read_text())["baselines"]


def test_max_count_and_max_success_print_the_epsilon(capsys):
    """The inverse question: the printed ε is the library's, and it is where the count bound
    (scipy's binomial quantile for the uniform-K prior) passes the target."""
    from jaxaudit.bounds import epsilon_for_count, epsilon_for_success

    assert main(["bounds", "--max-count", "255", "--uniform", "10", "--targets", "1000",
                 "--quiet"]) == 0
    eps = float(capsys.readouterr().out)
    assert eps == pytest.approx(epsilon_for_count(np.full(1000, 0.1), 255), rel=1e-5)

    def scipy_bound(e):
        beta = np.exp(e) / (np.exp(e) + 9)
        return int(scipy.stats.binom.isf(0.05, 1000, beta)) + 1

    assert scipy_bound(eps * (1 - 1e-5)) <= 255 < scipy_bound(eps * (1 + 1e-3))
    assert main(["bounds", "--max-success", "0.5", "--uniform", "10", "--targets", "3"]) == 0
    text = capsys.readouterr().out
    assert "posterior success" in text and f"{epsilon_for_success(0.1, 0.5):.6g}" in text
    assert f"{np.log(9):.6g}" in text  # logit(0.5) − logit(0.1)


@pytest.mark.parametrize("extra", [["--epsilon", "1"], ["--gdp-mu", "1"], ["--json", "x.json"]])
def test_inverse_flags_refuse_a_given_privacy_or_outputs(extra, capsys):
    assert main(["bounds", "--max-success", "0.5", "--uniform", "10", "--targets", "3",
                 *extra]) == 2
    assert "--max-success" in capsys.readouterr().err


def test_priors_npy_checked_and_json_strict(tmp_path, capsys):
    """Hostile input: a .npy whose header claims a huge shape is refused before loading (it was a
    MemoryError), a pickled .npy is never unpickled, and --json writes strict JSON."""
    forged = tmp_path / "forged.npy"
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    forged.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                       + header.encode() + b"\x00" * 64)
    assert main(["bounds", "--epsilon", "1", "--priors", str(forged)]) == 2
    assert "forged.npy" in capsys.readouterr().err
    pickled = tmp_path / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["bounds", "--epsilon", "1", "--priors", str(pickled)]) == 2
    capsys.readouterr()
    out = tmp_path / "r.json"
    assert main(["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "100", "--json",
                 str(out), "--quiet"]) == 0
    json.loads(out.read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_flag_names_not_substituted_inside_paths(tmp_path, capsys):
    """The library's field names become flags in messages, but not inside a file's path (a
    folder called targets/ holding priors.txt was printed as --targets/--priors.txt)."""
    (tmp_path / "targets").mkdir()
    path = tmp_path / "targets" / "priors.txt"
    np.savetxt(path, [0.1, 0.2, 0.3])
    assert main(["bounds", "--epsilon", "1", "--priors", str(path), "--targets", "5"]) == 2
    assert f"--targets is 5 but --priors {path} holds 3 values" in capsys.readouterr().err


def test_printed_inverse_epsilon_is_rounded_down(capsys):
    """ε = 3.64118545… printed to 6 digits is 3.64118, not 3.64119: at 3.64119 the count bound
    is already 3 > 2, so a rounded-up print would not meet the target it is printed for."""
    from jaxaudit.bounds import epsilon_for_count, success_count_bound

    priors = np.full(10, 1e-3)
    exact = epsilon_for_count(priors, 2)
    assert success_count_bound(priors, float(f"{exact:.6g}")) > 2  # the old print failed it
    for quiet in ([], ["--quiet"]):
        assert main(["bounds", "--uniform", "1000", "--targets", "10", "--max-count", "2",
                     *quiet]) == 0
        out = capsys.readouterr().out
        printed = float(out.split(":")[-1]) if not quiet else float(out)
        assert printed == 3.64118 and "3.64119" not in out
        assert printed <= exact and success_count_bound(priors, printed) <= 2


def test_empty_priors_file_one_line_error(tmp_path, capsys):
    """An empty --priors text file: only our one-line error, no numpy loadtxt warning."""
    import warnings

    path = tmp_path / "empty.txt"
    path.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's UserWarning would surface as an error
        assert main(["bounds", "--epsilon", "1", "--priors", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"jaxaudit bounds: error: --priors {path} holds no values"]


@pytest.mark.parametrize(("argv", "message", "internal"), [
    (["--zipf", "1"], "--zipf must be S,N (e.g. --zipf 0.9,10000000), got '1'", "zipf:1"),
    (["--zipf", "1,x"], "--zipf must be S,N (e.g. --zipf 0.9,10000000), got '1,x'", "zipf:"),
    (["--zipf", "0,5"], "got '0,5': exponent must be > 0", "zipf:"),
    (["--uniform", "0"], "--uniform must be K (e.g. --uniform 10), got '0'", "uniform:"),
])
def test_prior_flag_errors_quote_the_flag_and_its_text(argv, message, internal, capsys):
    assert main(["bounds", "--epsilon", "1", "--targets", "20", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and internal not in err and "Traceback" not in err


def test_prior_by_name_errors_name_prior():
    from jaxaudit.bounds.registry import PriorSpecError, prior_by_name

    with pytest.raises(PriorSpecError, match=r"prior must be zipf:S,N .*got 'zipf:1'$"):
        prior_by_name("zipf:1")
    with pytest.raises(ValueError, match=r"prior must be uniform:K .*got 'uniform:0': K must"):
        prior_by_name("uniform:0")


@pytest.mark.parametrize(("argv", "flag"), [
    (["--dpsgd", "0.01"], "argument --dpsgd"),
    (["--dpsgd", "a,b"], "argument --dpsgd"),
    (["--dpsgd", "0.01,2.5"], "--dpsgd"),
    (["--uniform", "0"], "--uniform must be K"),
    (["--delta", "1.5"], "--delta must lie in [0, 1)"),
])
def test_calibrate_errors_name_the_flag(argv, flag, capsys):
    base = {"--uniform": "100"}
    for name, value in zip(argv[::2], argv[1::2], strict=True):
        base[name] = value
    args = [x for pair in base.items() for x in pair]
    assert main(["bounds", "--calibrate", "success=0.05", *args]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err


def test_calibrate_count_gamma_names_the_flag(capsys):
    assert main(["bounds", "--calibrate", "count=40", "--uniform", "10", "--targets", "100",
                 "--gamma", "0"]) == 2
    err = capsys.readouterr().err
    assert "--gamma must lie in (0, 1)" in err and "target.gamma" not in err


def test_calibrate_unreachable_target_names_the_flag(capsys):
    assert main(["bounds", "--calibrate", "success=0.001", "--uniform", "100"]) == 2
    err = capsys.readouterr().err
    assert "no ε ≥ 0 meets --calibrate=0.001 of kind 'success' (prior 0.01)" in err
    assert "RiskTarget(" not in err and "Traceback" not in err
