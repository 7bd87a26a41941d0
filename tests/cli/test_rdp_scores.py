"""``jaxaudit rdp --scores IN OUT``: audit canary scores saved by any training code.

Scores are seeded Gaussians with a known shift: IN ~ N(μ, 1), OUT ~ N(0, 1) is what T full-batch
DP-GD steps at noise multiplier σ give to a linear canary score, with μ = √T/σ, and then the true
Rényi divergence of order α is α μ²/2 (Mironov, CSF 2017), equal to the accountant's ε_α.
"""

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.accounting import noise_for_epsilon, rdp_epsilons
from jaxaudit.cli.main import main
from jaxaudit.cli.rdp import _orders
from jaxaudit.dpsgd.scores import MIN_SCORES, min_scores_per_world

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
    # repeated orders are one row each (--orders 2,2 gave two rows)
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
    # every score-based ε lower bound, printed and in summary.md
    assert "score-based ε lower bounds" in printed and "f-DP one-run audit" in printed
    assert "| method | ε at δ | μ | kind | tests K | reference |" in (out / "summary.md").read_text()
    for row in summary["score_bounds"]:
        if row["kind"].startswith("bound"):
            assert 0 <= row["epsilon"] <= truth, row
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


@pytest.mark.slow  # ~50 s on two shared cores: the DV critic and the score-based bounds compile
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

    def fake_canary_runs(key, model, init, data, canary, config, *, num_runs, **kw):
        calls.append(config.noise_multiplier)
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


# -- an Opacus user's first audit -----------------------------------------------------


def _write(path, value):
    np.save(path, value)
    return str(path)


def test_bad_score_files(tmp_path, capsys):
    """Through the command (the loader itself: tests/pipelines/test_rdp.py)."""
    good = _write(tmp_path / "good.npy", np.zeros(MIN_SCORES))
    # exit status 2, the message names which file, no run folder is made
    assert main(_args(str(tmp_path / "missing.npy"), good, tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert "--scores IN" in err and "missing.npy" in err and "not found" in err
    bad = _write(tmp_path / "nan.npy", np.array([0.0, 1.0, np.nan, 2.0]))
    assert main(_args(good, bad, tmp_path / "b")) == 2
    err = capsys.readouterr().err
    assert "--scores OUT" in err and "nan.npy" in err and "NaN" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# -- an Opacus user's first audit -----------------------------------------------------
def test_duplicate_orders_parse_to_one():
    assert _orders("2,2") == [2.0]
    assert _orders("3, 1.5,3,2,1.5") == [3.0, 1.5, 2.0]


def test_too_few_scores_or_the_same_file_twice_are_refused(tmp_path, capsys):
    rng = np.random.default_rng(3)
    inn = _write(tmp_path / "in.npy", 1 + rng.standard_normal(200))
    few = _write(tmp_path / "out_few.npy", rng.standard_normal(5))  # the user's 200 vs 5
    assert main(_args(inn, few, tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert "--scores OUT" in err and "out_few.npy" in err and "holds 5 scores" in err
    assert f"at least {min_scores_per_world(confidence=0.95)}" in err
    assert main(_args(inn, inn, tmp_path / "b")) == 2
    assert "the same file" in capsys.readouterr().err
    copy = tmp_path / "copy.npy"
    copy.write_bytes((tmp_path / "in.npy").read_bytes())
    assert main(_args(inn, str(copy), tmp_path / "c")) == 2
    assert "identical contents" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "abc")


def _cli_message(text):
    from jaxaudit.cli._types import as_flags
    from jaxaudit.cli.rdp import FLAGS

    try:
        with as_flags(**FLAGS):
            raise ValueError(text)
    except ValueError as err:
        return str(err)


def test_library_argument_names_are_shown_as_flags(monkeypatch, tmp_path, capsys):
    assert _cli_message("noise_multiplier must be > 0, got -1.0") == \
        "--noise-multiplier must be > 0, got -1.0"
    assert _cli_message("dataset_size + public_size must be <= 10000") == \
        "--dataset-size + --public-size must be <= 10000"
    assert _cli_message("--sampling-rate must lie in (0, 1]") == "--sampling-rate must lie in (0, 1]"
    assert _cli_message("clip_norm must be > 0") == "--clip must be > 0"
    assert _cli_message("num_runs must be >= 2") == "--runs must be >= 2"
    import jaxaudit.cli.rdp_runs as rdp_runs

    def fail(args):
        raise ValueError("sampling_rate must lie in (0, 1], got 2.0")

    monkeypatch.setattr(rdp_runs, "run", fail)
    assert main(["rdp", "--out", str(tmp_path / "x")]) == 2
    assert "--sampling-rate must lie" in capsys.readouterr().err
