"""``jaxaudit rdp --scores IN OUT``: audit canary scores saved by any training code.

Scores are seeded Gaussians with a known shift: IN ~ N(μ, 1), OUT ~ N(0, 1) is what T full-batch
DP-GD steps at noise multiplier σ give to a linear canary score, with μ = √T/σ, and then the true
Rényi divergence of order α is α μ²/2 (Mironov, CSF 2017), equal to the accountant's ε_α.
"""

import json

import numpy as np
import pytest

from jaxaudit.accounting import noise_for_epsilon, rdp_epsilons
from jaxaudit.cli.main import main
from jaxaudit.cli.rdp_steps import MIN_SCORES, load_scores

SIGMA, STEPS, ORDERS = 2.0, 4, (1.5, 2.0)
MU = np.sqrt(STEPS) / SIGMA  # = 1: the shift of the IN scores
N = 200  # scores per world


def _scores(tmp_path, seed=0, n=N, mu=MU, tag=""):
    rng = np.random.default_rng(seed)
    in_path, out_path = tmp_path / f"in{tag}.npy", tmp_path / f"out{tag}.npy"
    np.save(in_path, mu + rng.standard_normal(n))
    np.save(out_path, rng.standard_normal(n))
    return str(in_path), str(out_path)


def _args(in_path, out_path, out_dir, *extra, sigma=SIGMA, q=1.0):
    return ["rdp", "--scores", in_path, out_path, "--noise-multiplier", str(sigma),
            "--sampling-rate", str(q), "--steps", str(STEPS), "--delta", "1e-5",
            "--orders", ",".join(map(str, ORDERS)), "--out", str(out_dir), *extra]


def test_scores_mode_table_accountant_and_bounds(tmp_path, capsys):
    in_path, out_path = _scores(tmp_path)
    out = tmp_path / "run"
    # training-only options (even values training would refuse) are ignored without an error
    ignored = ["--runs", "1", "--dataset-size", "0", "--clip", "-1", "--chunk", "0"]
    assert main(_args(in_path, out_path, out, *ignored)) == 0
    printed = capsys.readouterr().out
    assert "accountant" in printed and "DV lower" in printed
    assert f"{N} scores with and {N} without the canary" in printed
    summary = json.loads((out / "results.json").read_text())
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
    files = summary["score_files"]
    assert len(files["in_sha256"]) == len(files["out_sha256"]) == 64

    # the same files again resume the folder; other files into the same folder are refused
    assert main(_args(in_path, out_path, out)) == 0
    capsys.readouterr()
    other_in, other_out = _scores(tmp_path, seed=1, tag="_other")
    assert main(_args(other_in, other_out, out)) == 2
    err = capsys.readouterr().err
    assert "different configuration" in err and "scores" in err
    # and so is a training configuration
    assert main(["rdp", "--dataset", "synthetic", "--model", "logreg", "--out", str(out)]) == 2
    assert "different configuration" in capsys.readouterr().err


def test_scores_mode_subsampled_accountant_and_epsilon_calibration(tmp_path, capsys):
    """With --epsilon/--delta instead of --noise-multiplier, σ is calibrated as when training, and
    the accountant is the Poisson-subsampled one for --sampling-rate."""
    in_path, out_path = _scores(tmp_path, n=60)
    q, out = 0.1, tmp_path / "run"
    args = _args(in_path, out_path, out, q=q)
    i = args.index("--noise-multiplier")
    del args[i:i + 2]
    assert main(args + ["--epsilon", "4"]) == 0
    summary = json.loads((out / "results.json").read_text())
    sigma = float(noise_for_epsilon(4.0, 1e-5, STEPS, q, accountant="pld"))  # --accountant default
    np.testing.assert_allclose(summary["noise_multiplier"], sigma, rtol=1e-12)
    assert summary["sampling_rate"] == q and summary["epsilon"] == 4.0
    expected = rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=STEPS,
                            orders=list(ORDERS))
    np.testing.assert_allclose([r["accountant"] for r in summary["records"]], expected,
                               rtol=1e-12)
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
    (np.arange(10), "1-D floating-point"),
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
