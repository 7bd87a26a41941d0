"""The attack sweeps as library calls (jaxaudit.pipelines.attacks): run folders that resume and
refuse another configuration, the key rule, progress callbacks, worker mode, checks that name
the config field before anything is written, and the rendering of jaxaudit.report.attacks."""

import json
import math

import jax
import numpy as np
import pytest

from jaxaudit.attacks import SCORINGS, LmConfig, marginals_reconstruction
from jaxaudit.pipelines import MarginalsConfig, SecretsConfig, run_marginals, run_secrets
from jaxaudit.pipelines.attacks import level_name
from jaxaudit.report import attacks as report
from jaxaudit.runs import RunDir, Sweep, load_results, unit_key
from jaxaudit.runs.rundir import discard_new_run

# Small enough for seconds: 3 released attributes, one hidden (4 values), 10 targets.
TINY = MarginalsConfig(rhos=(0.1, 1.0), attributes=("age", "educ", "religious"),
                       hidden_attributes=("religious",), num_targets=10, repetitions=2, seed=3)
TINY_SECRETS = SecretsConfig(prior="digits", digits=1, epsilons=(2.0,), lm=LmConfig(
    num_secrets=3, num_filler=5, steps=4, batch_size=4, hidden_dim=8, learning_rate=1e-3),
    pretrain_steps=2, guesses=2, repetitions=2)


def _secrets(config, **change):
    """``config`` with ``change`` applied, the LM recipe's fields to ``config.lm``."""
    lm = {k: v for k, v in change.items() if k in LmConfig._fields}
    rest = {k: v for k, v in change.items() if k not in lm}
    return config._replace(lm=config.lm._replace(**lm), **rest)


def test_marginals_runs_resumes_and_refuses(tmp_path):
    out = tmp_path / "marg"
    calls = []
    result = run_marginals(TINY, out, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    rows = json.loads((out / "table.json").read_text())
    assert rows == report.rows(result)
    assert [(r["rho"], r["seed"]) for r in rows] == [(0.1, 0), (1.0, 0), (0.1, 1), (1.0, 1)]
    for r in rows:
        assert 0 <= r["successes"] <= 10 and r["successes"] < r["count_bound"] <= 11
        assert 0 < r["baseline"] <= 10 and r["num_targets"] == 10
    assert (out / "attack.png").stat().st_size > 0 and "bound" in (out / "summary.md").read_text()
    assert report.text_table(result) in (out / "summary.md").read_text()
    # resume: nothing recomputed, the same result
    before = {p.name: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()}
    calls.clear()
    again = run_marginals(TINY, out, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(4, 4)]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()} == before
    np.testing.assert_array_equal(again.attack.hits, result.attack.hits)
    loaded = load_results(out)
    assert loaded.kind == "attack-marginals" and not loaded.missing
    assert loaded.config["derived"]["key_rule"] == "unit-fold-in-v1"
    assert loaded.config["seed"] == 3
    # another configuration in the same folder is refused
    with pytest.raises(ValueError, match="different"):
        run_marginals(TINY._replace(way=1), out)


def test_marginals_follow_the_key_rule_in_memory():
    """Run (ρ, r) is marginals_reconstruction with unit_key(seed, r): the same targets at every
    ρ; no folder is needed."""
    config = TINY._replace(rhos=(math.inf, 0.5))
    result = run_marginals(config)
    assert result.attack.hits.shape == (4, 10) and result.scoring_successes.shape == (4, 0)
    for i, (rho, rep) in enumerate([(math.inf, 0), (0.5, 0), (math.inf, 1), (0.5, 1)]):
        assert float(result.levels[i]) == rho and int(result.repetition[i]) == rep
        ref = marginals_reconstruction(unit_key(jax.random.key(3), rep), rho=rho, attributes=list(TINY.attributes),
                                       hidden_attributes=list(TINY.hidden_attributes), num_targets=10)
        np.testing.assert_array_equal(result.attack.hits[i], ref.hits)
        np.testing.assert_allclose(result.attack.priors[i], ref.priors)
    # the same targets (hence priors) at both ρ of a repetition, others for another repetition
    np.testing.assert_array_equal(result.attack.priors[0], result.attack.priors[1])
    assert not np.array_equal(result.attack.priors[0], result.attack.priors[2])
    assert int(result.attack.count_bound[0]) == 11  # ρ = inf: no noise, the bound is vacuous


def test_marginals_workers_fill_one_folder(tmp_path):
    out = tmp_path / "w"
    config = TINY._replace(rhos=(1.0,))
    first = run_marginals(config, out, sweep=Sweep(worker=(0, 2)))
    assert first.levels.shape == (1,) and not (out / "table.json").exists()
    run_marginals(config, out, sweep=Sweep(worker=(1, 2)))
    whole = run_marginals(config, out)
    assert (out / "table.json").exists() and whole.levels.shape == (2,)
    np.testing.assert_array_equal(whole.attack.hits[0], first.attack.hits[0])


@pytest.mark.parametrize(("change", "field"), [
    (dict(rhos=()), "rhos"),
    (dict(rhos=(2.0, 2.0)), "rhos"),
    (dict(rhos=(float("nan"),)), "rhos"),
    (dict(rhos=(-1.0,)), "rhos"),
    (dict(rhos="1,2"), "rhos"),
    (dict(gamma=0.0), "gamma"),
    (dict(delta=1.0), "delta"),
    (dict(repetitions=0), "repetitions"),
    (dict(repetitions=10**8), "repetitions"),
    (dict(seed=-1), "seed"),
    (dict(way=4), "way"),
    (dict(hidden_attributes=("nope",)), "hidden_attributes"),
    (dict(distance=1), "distance"),
    (dict(num_targets=100000), "num_targets"),
])
def test_marginals_bad_field_refused_before_work(tmp_path, change, field):
    with pytest.raises(ValueError, match=field):
        run_marginals(TINY._replace(**change), tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("change", "needle"), [
    (dict(epsilons=(1e6,)), "epsilons: finite values must be at most 100"),
    (dict(epsilons=(1.0, 1.0)), "listed twice"),
    (dict(epsilons=(1e-6,)), "epsilons=1e-06"),
    (dict(num_secrets=1), "num_secrets must be >= 2"),
    (dict(num_filler=99999), "num_filler must be at most"),
    (dict(learning_rate=2.0), r"learning_rate must be in \(0, 1\]"),
    (dict(learning_rate=math.inf), "learning_rate"),
    (dict(clip_norm=math.nan), "clip_norm"),
    (dict(hidden_dim=100000), "hidden_dim must be at most 4096"),
    (dict(steps=10**12), "steps must be at most"),
    (dict(digits=9), r"digits=9: length must be an integer in \[1, 6\]"),
    (dict(prior="passwords", num_secrets=100000), "GiB"),
    (dict(scoring="reference", pretrain_steps=0), "pretrain_steps"),
    (dict(scoring="exposure"), "scoring"),
    (dict(records_per_user=0), "records_per_user"),
    (dict(records_per_user=1001), "records_per_user must be at most 1000"),
    (dict(records_per_user=1.5), "records_per_user"),
    (dict(record_length=20), "record_length must be at least 30"),
    (dict(record_length=513), "record_length must be at most 512"),
    (dict(prior="names", candidates=691), "candidates=691: size must be at most 690"),
    (dict(prior="emails"), "prior"),
])
def test_secrets_bad_field_refused_before_work(tmp_path, change, needle):
    with pytest.raises(ValueError, match=needle):
        run_secrets(_secrets(TINY_SECRETS, **change), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_run_dir_refused_before_work(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for run, config in ((run_marginals, TINY), (run_secrets, TINY_SECRETS)):
        with pytest.raises(ValueError, match="run_dir .* is a file"):
            run(config, afile)


def test_failed_first_run_leaves_the_folder_reusable(tmp_path, monkeypatch):
    """A training that fails in the first run (e.g. diverged) removes what the call wrote,
    including the cached public model and its checksum record, so the corrected call may use
    the same folder."""
    import jaxaudit.attacks as attacks

    monkeypatch.setattr(attacks, "pretrain_public",
                        lambda key, prior, config, **kw: (None, {"w": np.zeros(2, np.float32)}))

    def diverged(*args, **kwargs):
        raise ValueError("the training diverged")

    monkeypatch.setattr(attacks, "train_and_score", diverged)
    out = tmp_path / "sec"
    with pytest.raises(ValueError, match="diverged"):
        run_secrets(TINY_SECRETS, out)
    assert not out.exists()
    mine = tmp_path / "mine"  # an empty folder the user made: emptied, not removed
    mine.mkdir()
    with pytest.raises(ValueError, match="diverged"):
        run_secrets(TINY_SECRETS, mine)
    assert mine.is_dir() and not any(mine.iterdir())
    RunDir.open(mine, kind="attack-secrets", config={"another": 1})  # reusable


def test_discard_new_run_keeps_finished_chunks(tmp_path):
    """A run folder this call created and whose first chunk failed is removed (so the
    corrected call may reuse it); one holding a finished chunk or made before is kept."""
    fresh = RunDir.open(tmp_path / "fresh", kind="x", config={"a": 1})
    discard_new_run(fresh.path, existed=False)
    assert not fresh.path.exists()
    done = RunDir.open(tmp_path / "done", kind="x", config={"a": 1})
    done.save_chunk("c0", {"v": np.zeros(2)})
    discard_new_run(done.path, existed=False)
    assert (done.path / "manifest.json").exists() and done.has_chunk("c0")
    older = RunDir.open(tmp_path / "older", kind="x", config={"a": 1})
    discard_new_run(older.path, existed=True)
    assert (older.path / "manifest.json").exists()
    mine = tmp_path / "mine"  # an empty folder the user made: emptied, not removed
    mine.mkdir()
    RunDir.open(mine, kind="x", config={"a": 1})
    discard_new_run(mine, existed=False, keep_folder=True)
    assert mine.is_dir() and not any(mine.iterdir())
    cached = RunDir.open(tmp_path / "cached", kind="x", config={"a": 1})  # a pretrained model
    cached.save_file("pretrained.msgpack", b"params")              # and its checksum
    discard_new_run(cached.path, existed=False)
    assert not cached.path.exists()


def test_docs_example_runs(capsys):
    """The Python example of docs/attacks.md runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "attacks.md").read_text()
    section = text[text.index("## The sweeps from Python"):text.index("## Results")]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    exec(compile(code, "docs/attacks.md", "exec"), {})
    assert "| rho |" in capsys.readouterr().out


def test_level_names_are_safe_exact_and_distinct():
    """ε = 10^6 gave the invalid chunk name 'eps_1e+06', and 2 and 2.0000001
    shared 'eps_2' (one run reported under both). Names must be valid chunk names, one per
    distinct value, and the printed level must read back as the same float."""
    from jaxaudit.runs.rundir import CHUNK_NAME

    values = [1e6, 1e-5, 2.0, 2.0000001, 2.0000000000000004, 0.1, 1 / 3, 1e300, 5e-324,
              123456789.0, 1e16, 1e16 + 2, 1e-300, math.inf, 7.5, 75.0]
    names = [f"eps_{level_name(v)}_seed_0" for v in values]
    assert all(CHUNK_NAME.match(n) for n in names), names
    assert len(set(names)) == len(values)
    for v in values:
        assert float(report.level_text(v)) == v
    # the names of existing run folders are kept
    assert [level_name(v) for v in (2.0, 0.1, 1e-5, math.inf)] == ["2", "0p1", "1em05", "inf"]


@pytest.mark.slow
def test_marginals_close_and_huge_levels(tmp_path):
    """2 and 2.0000001 are two runs reported under their own values; ρ = 10^6 runs."""
    out = tmp_path / "m"
    run_marginals(TINY._replace(rhos=(2.0, 2.0000001, 1e6), repetitions=1), out)
    rows = json.loads((out / "table.json").read_text())
    assert [r["rho"] for r in rows] == [2.0, 2.0000001, 1e6]
    assert rows[0]["epsilon"] < rows[1]["epsilon"] < rows[2]["epsilon"]
    assert "| 2.0000001 |" in (out / "summary.md").read_text()
    assert sorted(load_results(out).chunks) == ["rho_1e06_seed_0", "rho_2_seed_0",
                                               "rho_2p0000001_seed_0"]


@pytest.mark.slow
def test_secrets_tiny(tmp_path):
    out = tmp_path / "sec"
    calls = []
    result = run_secrets(TINY_SECRETS, out, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 2) and calls[-1] == (2, 2)
    rows = json.loads((out / "table.json").read_text())
    assert rows == report.rows(result)
    assert [(r["epsilon_target"], r["seed"]) for r in rows] == [(2.0, 0), (2.0, 1)]
    assert all(r["noise_multiplier"] > 0 for r in rows)
    for r in rows:
        assert 0 <= r["successes"] <= 3 and r["successes"] < r["count_bound"] <= 4
        assert r["baseline"] == pytest.approx(3 * 0.2)
        # Every scoring on the same model; the main column is the default (calibrated).
        assert r["successes"] == r["successes_calibrated"]
        assert {f"successes_{s}" for s in SCORINGS} <= set(r)
        assert r["successes_prior"] == 0  # uniform prior: all tied, ties against the attacker
    assert result.scorings == SCORINGS and result.scoring_successes.shape == (2, 4)
    # One public pretrained model, cached in the folder, shared by the seeds.
    assert (out / "pretrained.msgpack").is_file()
    # ... with a checksum record bound to this run, so a model copied from another run is
    # trained again rather than trusted
    record = (out / "pretrained.msgpack.sha256").read_text()
    assert "pretrained.msgpack" in record and "run " in record
    chunk = load_results(out).chunks["eps_2_seed_0"]
    assert chunk["scores"].shape == chunk["reference_scores"].shape == (3, 10)
    assert "every scoring" in (out / "summary.md").read_text().lower()
    # the repetitions draw their secrets with unit_key(key(seed), r)
    from jaxaudit.attacks import digit_prior
    from jaxaudit.attacks.corpus import secret_corpus

    for r in range(2):
        import jax

        k_data, _ = jax.random.split(unit_key(jax.random.key(0), r))
        corpus = secret_corpus(k_data, digit_prior(1), num_secrets=3, num_filler=5,
                               record_length=64)
        np.testing.assert_array_equal(load_results(out).chunks[f"eps_2_seed_{r}"]["secrets"],
                                      corpus.secrets)


def test_secrets_user_level_accounting(monkeypatch):
    """With R records per user the DP unit is the user: q = B / (n + ⌈filler / R⌉), the rate
    the noise is calibrated for and the training uses."""
    import jaxaudit.accounting as accounting
    from jaxaudit.pipelines.attacks import check_secrets_config

    seen = []
    real = accounting.dpsgd_privacy
    monkeypatch.setattr(accounting, "dpsgd_privacy",
                        lambda **kw: seen.append(kw["sampling_rate"]) or real(**kw))
    check_secrets_config(_secrets(TINY_SECRETS, records_per_user=2, num_filler=5))
    assert seen == [pytest.approx(4 / (3 + 3))]


def test_as_many_guesses_as_candidates_is_refused_before_training(tmp_path):
    # digits=1: 10 candidate secrets; 10 guesses would find every secret whatever the model
    with pytest.raises(ValueError, match=r"guesses must be fewer than the 10 candidate"):
        run_secrets(TINY_SECRETS._replace(guesses=10), tmp_path / "s")
    assert not (tmp_path / "s").exists()
