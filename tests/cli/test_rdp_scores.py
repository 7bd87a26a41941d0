"""``jaxaudit rdp --scores IN OUT``: audit canary scores saved by any training code.

Scores are seeded Gaussians with a known shift: IN ~ N(μ, 1), OUT ~ N(0, 1) is what T full-batch
DP-GD steps at noise multiplier σ give to a linear canary score, with μ = √T/σ, and then the true
Rényi divergence of order α is α μ²/2 (Mironov, CSF 2017), equal to the accountant's ε_α.
"""

import json
import math
import pickle
import zipfile

import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.accounting import noise_for_epsilon, rdp_epsilons
from jaxaudit.cli.main import main
from jaxaudit.cli.rdp import _cli_message, _orders
from jaxaudit.cli.rdp_steps import (
    MIN_SCORES,
    audit_rows,
    load_scores,
    min_scores_per_world,
    records_table,
    strict_json,
    summary_markdown,
)
from jaxaudit.dpsgd import OrderAudit

SIGMA, STEPS, ORDERS = 2.0, 4, (1.5, 2.0)
MU = np.sqrt(STEPS) / SIGMA  # = 1: the shift of the IN scores
N = 200  # scores per world


def _scores(tmp_path, seed=0, n=N, mu=MU, tag=""):
    rng = np.random.default_rng(seed)
    in_path, out_path = tmp_path / f"in{tag}.npy", tmp_path / f"out{tag}.npy"
    np.save(in_path, mu + rng.standard_normal(n))
    np.save(out_path, rng.standard_normal(n))
    return str(in_path), str(out_path)


def _strict(path):
    """results.json parsed as strict JSON: a bare NaN/Infinity is an error."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(path.read_text(), parse_constant=refuse)


def _gdp_epsilon(mu, delta):
    """ε at δ of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su, arXiv
    1905.02383, Cor. 2.13), solved with scipy."""
    f = lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 100.0, xtol=1e-12)


def _args(in_path, out_path, out_dir, *extra, sigma=SIGMA, q=1.0):
    return ["rdp", "--scores", in_path, out_path, "--noise-multiplier", str(sigma),
            "--sampling-rate", str(q), "--steps", str(STEPS), "--delta", "1e-5",
            "--orders", ",".join(map(str, ORDERS)), "--out", str(out_dir), *extra]


@pytest.mark.slow
def test_scores_mode_table_accountant_and_bounds(tmp_path, capsys):
    in_path, out_path = _scores(tmp_path)
    out = tmp_path / "run"
    # training-only options (even values training would refuse) are ignored without an error
    ignored = ["--runs", "1", "--dataset-size", "0", "--clip", "-1", "--chunk", "0"]
    # repeated orders are one row each (issue 24: --orders 2,2 gave two rows)
    dup = ["--orders", "1.5,2,2,1.5"]
    assert main(_args(in_path, out_path, out, *ignored, *dup)) == 0
    printed = capsys.readouterr().out
    assert "accountant" in printed and "DV lower" in printed
    assert f"{N} scores with and {N} without the canary" in printed
    summary = _strict(out / "results.json")
    assert len(summary["records"]) == len(summary["rows"]) == len(ORDERS)
    assert _strict(out / "rdp_table.json") == summary["rows"]
    assert summary["noise_multiplier"] == SIGMA and summary["steps"] == STEPS
    assert summary["num_in_scores"] == summary["num_out_scores"] == N
    expected = rdp_epsilons(noise_multiplier=SIGMA, sampling_rate=1.0, steps=STEPS,
                            orders=list(ORDERS))
    np.testing.assert_allclose([r["accountant"] for r in summary["records"]], expected,
                               rtol=1e-12)
    for rec, a in zip(summary["records"], ORDERS):
        assert rec["order"] == a
        for name in ("dv_point", "dv_lower", "gdp_lower", "threshold_lower"):
            assert np.isfinite(rec[name]), name
        truth = a * MU**2 / 2  # the true ε_α of these score distributions (= the accountant)
        np.testing.assert_allclose(truth, rec["accountant"], rtol=1e-9)
        assert rec["dv_lower"] <= truth and rec["threshold_lower"] <= truth
        assert 0 < rec["threshold_lower"] and 0 < rec["dv_point"]
        assert f"{a:6.3g}" in printed  # one table row per order
    assert summary["violation"] is False
    assert (out / "rdp_audit.png").stat().st_size > 1000
    # ε at δ: the accountant (PLD, the default) against the exact μ-GDP value of T full-batch
    # Gaussian steps (μ = √T/σ = 1); the lower bounds below the truth; all printed
    eps_rows = {r["statement"]: r for r in summary["epsilon_at_delta"]}
    truth = _gdp_epsilon(MU, 1e-5)
    np.testing.assert_allclose(eps_rows["accountant (pld)"]["epsilon"], truth, rtol=2e-3)
    assert 0 <= eps_rows["Clopper-Pearson threshold test"]["epsilon"] <= truth
    assert eps_rows["GDP baseline"]["epsilon"] == summary["records"][0]["gdp_epsilon"]
    for name in eps_rows:
        assert name in printed
    assert "SE(samp.)" in printed and "not its bias" in printed
    assert "| α |" in (out / "summary.md").read_text()
    files = summary["score_files"]
    assert len(files["in_sha256"]) == len(files["out_sha256"]) == 64

    # the same files again resume the folder; other files into the same folder are refused
    assert main(_args(in_path, out_path, out)) == 0
    capsys.readouterr()
    # --accountant changes the ε-at-δ upper bound (and σ from --epsilon): part of the configuration
    assert main(_args(in_path, out_path, out, "--accountant", "rdp")) == 2
    assert "different configuration" in capsys.readouterr().err
    other_in, other_out = _scores(tmp_path, seed=1, tag="_other")
    assert main(_args(other_in, other_out, out)) == 2
    err = capsys.readouterr().err
    assert "different configuration" in err and "scores" in err
    # and so is a training configuration
    assert main(["rdp", "--dataset", "synthetic", "--model", "logreg", "--out", str(out)]) == 2
    assert "different configuration" in capsys.readouterr().err


@pytest.mark.slow
def test_scores_mode_subsampled_accountant_and_epsilon_calibration(tmp_path, capsys):
    """With --epsilon/--delta instead of --noise-multiplier, σ is calibrated as when training, and
    the accountant is the Poisson-subsampled one for --sampling-rate."""
    in_path, out_path = _scores(tmp_path, n=60)
    q, out = 0.1, tmp_path / "run"
    args = _args(in_path, out_path, out, q=q)
    i = args.index("--noise-multiplier")
    del args[i:i + 2]
    assert main(args + ["--epsilon", "4"]) == 0
    summary = _strict(out / "results.json")  # no bare Infinity even where an ε_α is infinite
    sigma = float(noise_for_epsilon(4.0, 1e-5, STEPS, q, accountant="pld"))  # --accountant default
    np.testing.assert_allclose(summary["noise_multiplier"], sigma, rtol=1e-12)
    assert summary["sampling_rate"] == q and summary["epsilon"] == 4.0
    expected = rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=STEPS,
                            orders=list(ORDERS))
    got = [math.inf if r["accountant"] is None else r["accountant"] for r in summary["records"]]
    np.testing.assert_allclose(got, expected, rtol=1e-12)  # null is the strict form of +inf
    assert "accountant" in capsys.readouterr().out


def test_scores_mode_reproduces_the_training_audit(tmp_path, capsys, monkeypatch):
    """The scores of a training run, fed back through --scores with the same σ, T, q and seed,
    give the same records: both modes share the audit step. (The training here returns fixed
    Gaussian scores instead of training, to keep the test fast; tests/cli/test_rdp_cli.py
    trains for real.)"""
    import jaxaudit.dpsgd

    rng = np.random.default_rng(2)
    scores = (MU + rng.standard_normal(N)).astype(np.float32)
    scores = scores, rng.standard_normal(N).astype(np.float32)
    calls = []

    def fake_canary_runs(key, model, init, data, canary, *, num_runs, **kw):
        calls.append(kw["noise_multiplier"])
        return scores[0][:num_runs].copy(), scores[1][:num_runs].copy()

    monkeypatch.setattr(jaxaudit.dpsgd, "canary_runs", fake_canary_runs)
    train = ["rdp", "--dataset", "synthetic", "--model", "logreg", "--dataset-size", "10",
             "--public-size", "0", "--steps", str(STEPS), "--runs", str(N), "--chunk", str(N),
             "--orders", ",".join(map(str, ORDERS)), "--epsilon", "4", "--quiet"]
    assert main(train + ["--out", str(tmp_path / "train")]) == 0
    trained = json.loads((tmp_path / "train" / "results.json").read_text())
    sigma = trained["noise_multiplier"]
    assert calls == [sigma] and trained["runs_per_world"] == N
    np.save(tmp_path / "in.npy", scores[0])
    np.save(tmp_path / "out.npy", scores[1])
    assert main(_args(str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), tmp_path / "scores",
                      sigma=sigma)) == 0
    scored = json.loads((tmp_path / "scores" / "results.json").read_text())
    assert scored["records"] == trained["records"]
    out = capsys.readouterr().out
    assert sum(line.split()[:2] == ["alpha", "accountant"] for line in out.splitlines()) == 2


def test_scores_mode_needs_the_training_parameters(tmp_path, capsys):
    in_path, out_path = _scores(tmp_path, n=8)
    args = _args(in_path, out_path, tmp_path / "a")
    i = args.index("--noise-multiplier")
    assert main(args[:i] + args[i + 2:]) == 2
    assert "--noise-multiplier (or --epsilon with --delta)" in capsys.readouterr().err
    i = args.index("--steps")
    assert main(args[:i] + args[i + 2:]) == 2
    assert "--steps" in capsys.readouterr().err
    i = args.index("--sampling-rate")
    assert main(args[:i] + args[i + 2:]) == 2
    assert "--sampling-rate" in capsys.readouterr().err
    assert main(_args(in_path, out_path, tmp_path / "b", sigma=-1.0)) == 2
    assert "--noise-multiplier" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _write(path, value):
    np.save(path, value)
    return str(path)


@pytest.mark.parametrize("value, match", [
    (np.zeros((10, 2)), "1-D floating-point"),
    (np.array([True, False] * 3), "1-D floating-point"),
    (np.zeros(5, np.complex64), "1-D floating-point"),
    (np.array([0.1, np.nan, 0.3, 0.4, 0.5]), "1 NaN"),
    (np.array([0.1, 0.2, np.inf, 0.4]), "infinite"),
    (np.zeros(MIN_SCORES - 1), f"holds {MIN_SCORES - 1} score"),
])
def test_bad_score_arrays_name_the_file(tmp_path, value, match):
    path = _write(tmp_path / "bad.npy", value)
    with pytest.raises(ValueError, match=match) as err:
        load_scores(path, "--scores OUT")
    assert "--scores OUT" in str(err.value) and "bad.npy" in str(err.value)


def test_bad_score_files(tmp_path, capsys):
    good = _write(tmp_path / "good.npy", np.zeros(MIN_SCORES))
    assert load_scores(good).shape == (MIN_SCORES,)
    with pytest.raises(FileNotFoundError, match="--scores IN: score file .*missing.npy"):
        load_scores(tmp_path / "missing.npy", "--scores IN")
    (tmp_path / "text.npy").write_text("0.1 0.2 0.3 0.4\n")
    with pytest.raises(ValueError, match="text.npy is not a .npy array"):
        load_scores(tmp_path / "text.npy")
    np.save(tmp_path / "objects.npy", np.array([0.1, "a", None, 2], dtype=object))
    with pytest.raises(ValueError, match="objects.npy is not a .npy array"):
        load_scores(tmp_path / "objects.npy")
    np.savez(tmp_path / "two.npz", a=np.zeros(5), b=np.zeros(5))
    with pytest.raises(ValueError, match="several arrays"):
        load_scores(tmp_path / "two.npz")
    # through the command: exit status 2, the message names which file, no run folder is made
    assert main(_args(str(tmp_path / "missing.npy"), good, tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert "--scores IN" in err and "missing.npy" in err and "not found" in err
    bad = _write(tmp_path / "nan.npy", np.array([0.0, 1.0, np.nan, 2.0]))
    assert main(_args(good, bad, tmp_path / "b")) == 2
    err = capsys.readouterr().err
    assert "--scores OUT" in err and "nan.npy" in err and "NaN" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# -- issue 24: an Opacus user's first audit -----------------------------------------------------
def _record(order, point, lower, thr, acc=10.0):
    return OrderAudit(order, acc, point, lower, 0.0, thr, 0.0, 0.0, False, 0.06)


def test_dv_point_below_a_valid_bound_is_raised_and_flagged():
    # the user's numbers: DV 0.535 and 0.637 below threshold bounds 0.942 and 1.352
    records = [_record(2.0, 0.535, -0.1, 0.942), _record(3.0, 0.637, 0.2, 1.352),
               _record(4.0, 2.0, 1.5, 1.0)]
    rows = audit_rows(records)
    np.testing.assert_allclose([r["dv_estimate"] for r in rows], [0.942, 1.352, 2.0])
    assert [r["raised_to_bound"] for r in rows] == [True, True, False]
    assert [r["dv_point"] for r in rows] == [0.535, 0.637, 2.0]  # the raw estimate is kept
    lines = records_table(records).splitlines()
    assert "SE(samp.)" in lines[0]
    assert ["↑bound" in line for line in lines[1:]] == [True, True, False]
    md = summary_markdown(rows, [], significance=0.05)
    assert md.count("(raised to bound)") == 2 and "not its bias" in md
    # a negative point estimate is raised to the trivial bound ε_α ≥ 0
    assert audit_rows([_record(2.0, -0.3, -1.0, 0.0)])[0]["dv_estimate"] == 0.0
    # float64 throughout: an estimate that is not raised is the point estimate, bit for bit
    point = 0.1234567890123
    assert audit_rows([_record(2.0, point, 0.0, 0.1)])[0]["dv_estimate"] == point
    # an undefined (NaN) point estimate: the best bound stands in, flagged
    row = audit_rows([_record(2.0, float("nan"), 0.3, 0.5)])[0]
    assert row["dv_estimate"] == 0.5 and row["raised_to_bound"]


def test_strict_json_writes_null_for_non_finite_numbers():
    text = strict_json({"a": math.inf, "b": [np.float32(np.nan), -math.inf, 1.5],
                        "c": np.array([1.0, np.inf]), "d": np.bool_(True), "e": np.int64(3)})
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": [1.0, None], "d": True,
                                "e": 3}


def test_duplicate_orders_parse_to_one():
    assert _orders("2,2") == [2.0]
    assert _orders("3, 1.5,3,2,1.5") == [3.0, 1.5, 2.0]


def test_low_precision_and_integer_scores_are_upcast_with_a_warning(tmp_path):
    values = np.linspace(-1, 1, 20)
    for dtype in (np.float16, np.int32):
        path = _write(tmp_path / f"s_{np.dtype(dtype).name}.npy", values.astype(dtype))
        with pytest.warns(UserWarning, match=f"--scores IN: .*{np.dtype(dtype).name}"):
            got = load_scores(path, "--scores IN")
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, values.astype(dtype).astype(np.float64))


def test_the_file_says_what_it_really_is(tmp_path):
    # a torch.save file (zip format, torch >= 1.6) named .npy
    torch_zip = tmp_path / "scores.npy"
    with zipfile.ZipFile(torch_zip, "w") as z:
        z.writestr("scores/data.pkl", pickle.dumps([0.1, 0.2]))
        z.writestr("scores/version", "3\n")
    with pytest.raises(ValueError, match=r"PyTorch file \(torch.save\).*numpy.save"):
        load_scores(torch_zip, "--scores IN")
    legacy = tmp_path / "legacy.npy"  # torch.save(..., _use_new_zipfile_serialization=False)
    legacy.write_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19." + pickle.dumps([1.0]))
    with pytest.raises(ValueError, match="PyTorch file"):
        load_scores(legacy)
    pick = tmp_path / "pickle.npy"
    pick.write_bytes(pickle.dumps([0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="a Python pickle"):
        load_scores(pick)


def test_a_header_claiming_a_huge_shape_is_refused_before_allocation(tmp_path):
    path = tmp_path / "huge.npy"
    np.save(path, np.zeros(5))
    raw = path.read_bytes()
    header = raw[10:].split(b"\n")[0]
    forged = header.replace(b"(5,)", b"(10000000000000,)")
    forged = forged + b" " * (len(header) - len(forged))  # same header length: a valid-looking file
    path.write_bytes(raw[:10] + forged[:len(header)] + raw[10 + len(header):])
    assert path.stat().st_size < 300
    with pytest.raises(ValueError, match=r"damaged .npy file: its header claims shape \(10000000000000,\)"):
        load_scores(path, "--scores OUT")
    truncated = tmp_path / "truncated.npy"
    np.save(truncated, np.zeros(100))
    truncated.write_bytes(truncated.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_scores(truncated)


def test_minimum_scores_per_world_matches_a_scan_of_the_bound():
    from jaxaudit.renyi import threshold_renyi_lower_bound

    need = min_scores_per_world(0.05)
    first = next(n for n in range(MIN_SCORES, 40) if float(np.atleast_1d(
        threshold_renyi_lower_bound(10 + np.arange(n) / n, np.arange(n) / n, [2.0], 0.05))[0]) > 0)
    assert need == first


def test_too_few_scores_or_the_same_file_twice_are_refused(tmp_path, capsys):
    rng = np.random.default_rng(3)
    inn = _write(tmp_path / "in.npy", 1 + rng.standard_normal(200))
    few = _write(tmp_path / "out_few.npy", rng.standard_normal(5))  # the user's 200 vs 5
    assert main(_args(inn, few, tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert "--scores OUT" in err and "out_few.npy" in err and "holds 5 scores" in err
    assert f"at least {min_scores_per_world(0.05)}" in err
    assert main(_args(inn, inn, tmp_path / "b")) == 2
    assert "the same file" in capsys.readouterr().err
    copy = tmp_path / "copy.npy"
    copy.write_bytes((tmp_path / "in.npy").read_bytes())
    assert main(_args(inn, str(copy), tmp_path / "c")) == 2
    assert "identical contents" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "abc")


def test_library_argument_names_are_shown_as_flags(monkeypatch, tmp_path, capsys):
    assert _cli_message("noise_multiplier must be > 0, got -1.0") == \
        "--noise-multiplier must be > 0, got -1.0"
    assert _cli_message("dataset_size + public_size must be <= 10000") == \
        "--dataset-size + --public-size must be <= 10000"
    assert _cli_message("--sampling-rate must lie in (0, 1]") == "--sampling-rate must lie in (0, 1]"
    import jaxaudit.cli.rdp as rdp

    def fail(args):
        raise ValueError("sampling_rate must lie in (0, 1], got 2.0")

    monkeypatch.setattr(rdp, "run_training", fail)
    assert main(["rdp", "--out", str(tmp_path / "x")]) == 2
    assert "--sampling-rate must lie" in capsys.readouterr().err


def test_printed_bounds_round_outward():
    """Hostile input (low): printed bounds were rounded to nearest, so a printed lower bound could
    sit above the computed one. Lower bounds now round down, upper bounds up, estimates to
    nearest — checked against the exact decimal boundaries."""
    from jaxaudit.cli.rdp_steps import _num, _outward

    assert _outward(0.123456, 4, "down") == 0.1234 and _outward(0.123456, 4, "up") == 0.1235
    assert _outward(0.12346, 4, "nearest") == 0.12346
    assert _outward(0.5, 4, "down") == 0.5 == _outward(0.5, 4, "up")      # exact: unchanged
    rng = np.random.default_rng(0)
    for value in rng.uniform(0, 20, 2000):
        low, high = float(_num(value, 10, direction="down")), float(_num(value, 10, direction="up"))
        assert low <= value <= high and high - low <= 1e-4 + 1e-12
    assert _num(float("inf"), 5, direction="down").strip() == "inf"
