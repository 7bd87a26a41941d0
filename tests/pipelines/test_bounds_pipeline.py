"""The bounds pipeline as a library call: values against scipy/closed forms, the run folder
(written, loaded, resumed, another configuration refused), progress, and bad fields by name."""

import json
import math

import numpy as np
import pytest
import scipy.stats

from jaxaudit.bounds.registry import prior_by_name
from jaxaudit.pipelines import BoundsConfig, run_bounds
from jaxaudit.report import bounds as report
from jaxaudit.runs import Sweep, load_results

UNIFORM = BoundsConfig(epsilon=1.0, prior="uniform:10", targets=1000)


def _binomial_count_bound(n, beta, gamma):
    """Least v with Pr[Bin(n, β) ≥ v] ≤ γ (scipy): v_γ of identical targets under pure ε-DP."""
    tails = scipy.stats.binom.sf(np.arange(n + 2) - 1, n, beta)
    return int(np.nonzero(tails <= gamma)[0][0])


@pytest.mark.slow
def test_uniform_prior_against_scipy_and_closed_forms():
    result = run_bounds(UNIFORM)
    s = result.summary
    beta = math.e * 0.1 / (1 + (math.e - 1) * 0.1)  # sigmoid(1 + logit 0.1)
    reference = _binomial_count_bound(1000, beta, 0.05)
    assert 0 <= s.count_bound - reference <= 1  # the library's safety margin only ever raises it
    assert s.count_bound == 255  # docs/bounds.md reference value
    assert s.per_target.beta == pytest.approx(beta, rel=1e-12)
    assert s.baselines["kgk_plus"] == pytest.approx(min(1, math.e * 0.1), rel=1e-9)
    assert s.expected_baseline_successes == pytest.approx(100.0)
    assert s.aggregate_gain == pytest.approx((s.count_bound - 100) / 1000)
    assert result.prior == "uniform over 10 values" and result.uniform_support == 10
    assert not result.inverse and result.epsilon is None and result.tail is None


@pytest.mark.slow  # compiles the tail over 1002 counts and draws the plot (≈ 5 s on two cores)
def test_tail_curve_bounds_the_binomial_tail_and_is_plotted(tmp_path):
    """The tail curve: an upper bound on the binomial tail, ≤ γ exactly from v_γ on."""
    result = run_bounds(UNIFORM._replace(tail_curve=True), tmp_path / "run")
    s, beta = result.summary, math.e * 0.1 / (1 + (math.e - 1) * 0.1)
    v, tail = result.tail_v, result.tail
    assert v.tolist() == list(range(1002))
    exact = scipy.stats.binom.sf(v - 1, 1000, beta)
    assert np.all(tail >= exact * (1 - 1e-9)) and np.all(np.diff(tail) <= 1e-15)
    assert tail[s.count_bound] <= 0.05 < tail[s.count_bound - 1]
    assert np.allclose(tail[:400], exact[:400], rtol=1e-6, atol=0)
    assert (tmp_path / "run" / "tail.png").read_bytes()[:4] == b"\x89PNG"
    assert "tail.png" in load_results(tmp_path / "run").files


def test_zipf_prior_by_name_is_the_top_k_mass():
    ranks = np.arange(1, 51, dtype=float)
    masses = ranks**-1.2 / np.sum(ranks**-1.2)
    named = prior_by_name("zipf:1.2,50", attempts=3)
    assert named.baseline == pytest.approx(masses[:3].sum(), rel=1e-12)
    assert named.uniform_support is None
    result = run_bounds(BoundsConfig(epsilon=0.5, prior="zipf:1.2,50", targets=200, attempts=3))
    beta = 1 / (1 + math.exp(-(0.5 + math.log(named.baseline / (1 - named.baseline)))))
    assert 0 <= result.summary.count_bound - _binomial_count_bound(200, beta, 0.05) <= 1
    assert "mmc_threshold" not in result.summary.baselines  # not a uniform prior
    assert prior_by_name("uniform:4", attempts=10).baseline == 1.0  # min(1, k/K)


@pytest.mark.slow
def test_priors_file_text_npy_and_one_value_repeated(tmp_path):
    values = np.random.default_rng(0).uniform(0.0, 0.3, size=25)
    np.savetxt(tmp_path / "p.txt", values)
    np.save(tmp_path / "p.npy", values)
    a = run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "p.txt")))
    b = run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "p.npy")))
    assert np.array_equal(a.priors, values) and np.array_equal(b.priors, values)
    assert a.summary == b.summary and a.summary.targets == 25
    assert a.summary.max_prior == values.max() and a.prior == "per-target priors from p.txt"
    np.savetxt(tmp_path / "one.txt", [0.1])
    c = run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "one.txt"), targets=1000))
    assert c.summary.count_bound == 255 and c.priors.shape == (1000,)


@pytest.mark.slow
def test_inverse_questions_against_closed_form_and_scipy():
    r = run_bounds(BoundsConfig(max_success=0.5, prior="uniform:10", targets=3))
    assert r.inverse and r.summary is None
    assert r.epsilon == pytest.approx(math.log(9), rel=1e-12)  # logit(0.5) − logit(0.1)
    assert r.epsilon <= math.log(9)  # rounded down
    r = run_bounds(BoundsConfig(max_count=255, prior="uniform:10", targets=1000))

    def bound(e):
        return _binomial_count_bound(1000, math.exp(e) / (math.exp(e) + 9), 0.05)

    assert bound(r.epsilon * (1 - 1e-5)) <= 255 < bound(r.epsilon * (1 + 1e-3))
    assert report.as_json(r)["epsilon"] == r.epsilon
    # printed to 6 digits rounded down (1.0023293 prints 1.00232): never above the library's ε
    assert "largest ε" in report.text(r)
    assert report.text(r, quiet=True) == f"{math.floor(r.epsilon * 1e5) / 1e5:.6g}" == "1.00232"
    assert math.isinf(run_bounds(BoundsConfig(max_success=1.0, prior="uniform:10",
                                              targets=3)).epsilon)


def test_run_folder_written_loaded_resumed_and_refused(tmp_path):
    folder = tmp_path / "run"
    calls = []
    result = run_bounds(UNIFORM, folder, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 1), (1, 1)]
    loaded = load_results(folder)
    assert loaded.kind == "bounds" and loaded.config["prior"] == "uniform:10"
    table = loaded.tables["bounds.json"]
    assert table["count_bound"] == result.summary.count_bound == 255
    assert table["per_target"]["beta"] == pytest.approx(result.summary.per_target.beta)
    assert {"bounds.json", "summary.md"} <= set(loaded.files) and "tail.png" not in loaded.files
    assert "| count bound v_γ (upper bound) | 255 |" in (folder / "summary.md").read_text()
    # the same configuration resumes (same files); another is refused by the folder
    again = run_bounds(UNIFORM, folder, sweep=Sweep(worker=(1, 2)))
    assert again.summary == result.summary
    with pytest.raises(ValueError, match="different configuration"):
        run_bounds(UNIFORM._replace(epsilon=2.0), folder)
    assert json.loads((folder / "bounds.json").read_text())["count_bound"] == 255


def test_changed_priors_file_is_another_configuration(tmp_path):
    path = tmp_path / "p.txt"
    np.savetxt(path, [0.1, 0.2])
    config = BoundsConfig(epsilon=1.0, priors_file=str(path))
    run_bounds(config, tmp_path / "run")
    np.savetxt(path, [0.1, 0.3])
    with pytest.raises(ValueError, match="priors_sha256"):
        run_bounds(config, tmp_path / "run")


@pytest.mark.parametrize(("fields", "name"), [
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": math.nan}, "epsilon"),
    ({"gamma": 2.0}, "gamma"),
    ({"delta": 1.0}, "delta"),
    ({"epsilon": None, "mu": 0.0}, "mu"),
    ({"targets": 0}, "targets"),
    ({"targets": 10**9}, "targets"),
    ({"targets": None}, "targets"),
    ({"attempts": 0}, "attempts"),
    ({"prior": "foo:1"}, "prior"),
    ({"prior": "zipf:oops"}, "prior"),
    ({"prior": "zipf:1.1,2.5"}, "prior"),
    ({"prior": None}, "prior"),
    ({"priors_file": "p.txt"}, "priors_file"),
    ({"epsilon": None}, "epsilon"),
    ({"epsilon": None, "max_success": 1.5}, "max_success"),
    ({"epsilon": None, "max_count": -1}, "max_count"),
    ({"max_success": 0.5}, "max_success"),
    ({"epsilon": None, "max_count": 3, "tail_curve": True}, "tail_curve"),
    ({"tail_curve": "yes"}, "tail_curve"),
])
def test_bad_field_named_before_any_folder(fields, name, tmp_path):
    folder = tmp_path / "run"
    with pytest.raises(ValueError, match=name):
        run_bounds(UNIFORM._replace(**fields), folder)
    assert not folder.exists()


def test_bad_priors_files_and_worker(tmp_path):
    np.save(tmp_path / "two_d.npy", np.full((3, 4), 0.1))
    with pytest.raises(ValueError, match=r"priors_file .*\(1-D\), got shape \(3, 4\)"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "two_d.npy")))
    np.savetxt(tmp_path / "big.txt", [0.1, 1.5])
    with pytest.raises(ValueError, match=r"priors_file must lie in \[0, 1\]"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "big.txt")))
    with pytest.raises(ValueError, match="targets is 5 but priors_file"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "big.txt"), targets=5))
    with pytest.raises(FileNotFoundError, match="priors_file"):
        run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(tmp_path / "none.txt")))
    with pytest.raises(ValueError, match="worker"):
        run_bounds(UNIFORM, sweep=Sweep(worker=(2, 2)))
    with pytest.raises(TypeError, match="BoundsConfig"):
        run_bounds({"epsilon": 1.0})


def test_a_failed_computation_leaves_the_folder_reusable(tmp_path, monkeypatch):
    import jaxaudit.pipelines.bounds as pipeline

    def broken(*args, **kwargs):
        raise RuntimeError("engine failed")

    monkeypatch.setattr(pipeline, "summarize_bounds", broken)
    with pytest.raises(RuntimeError, match="engine failed"):
        run_bounds(UNIFORM, tmp_path / "run")
    assert not (tmp_path / "run" / "manifest.json").exists()
    monkeypatch.undo()
    other = UNIFORM._replace(epsilon=0.5)  # another configuration, same folder: accepted
    assert run_bounds(other, tmp_path / "run").summary.count_bound < 255
