"""The Rényi/[31] audit pipelines as library calls (:mod:`jaxaudit.pipelines.rdp`): the canary
sweep on the unit key rule (chunked = one call, bit for bit), resume, workers, refusal of another
configuration, progress callbacks, bad configuration fields, the scores audit against the truth of
Gaussian scores; and the pieces they use (the score loader of :mod:`jaxaudit.dpsgd.scores`, the
table rows, strict JSON and outward rounding of :mod:`jaxaudit.report.rdp`).

Gaussian scores: IN ~ N(μ, 1), OUT ~ N(0, 1) is what T full-batch DP-GD steps at noise multiplier
σ give to a linear canary score with μ = √T/σ; then ε_α = α μ²/2 (Mironov, CSF 2017) and the
(ε, δ) curve is μ-GDP's (Dong, Roth, Su, arXiv 1905.02383, Cor. 2.13).
"""

import json
import math
import pickle
import zipfile

import jax
import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.dpsgd import DpsgdAudit
from jaxaudit.dpsgd.scores import MIN_SCORES, load_scores, min_scores_per_world
from jaxaudit.pipelines import RdpConfig, ScoresAuditConfig, run_rdp, run_scores_audit
from jaxaudit.pipelines.rdp import PUBLISHED_RECIPE, audit_rows
from jaxaudit.report.rdp import records_table, summary_markdown, text_table
from jaxaudit.runs import Sweep, load_results, unit_keys
from jaxaudit.runs.files import dumps_strict

TINY = RdpConfig(dataset="synthetic", model="logreg", dataset_size=8, public_size=0,
                 dpsgd=PUBLISHED_RECIPE._replace(steps=2, unroll=1), num_runs=4, chunk=2,
                 orders=(1.5, 2.0), epsilon=4.0, score_bounds=False)


def _recipe(config, **fields):
    """``config`` with these fields of its DP-SGD recipe (``config.dpsgd``) replaced."""
    return config._replace(dpsgd=config.dpsgd._replace(**fields))


def _gdp_epsilon(mu, delta):
    """ε at δ of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), solved with scipy."""
    f = lambda e: (stats.norm.cdf(-e / mu + mu / 2)
                   - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta)
    return optimize.brentq(f, 0.0, 100.0, xtol=1e-12)


# -- the unit key rule --------------------------------------------------------------------------
@pytest.mark.slow  # ~25 s on two shared cores: two XLA compilations of the vmapped runs
def test_canary_sweep_in_chunks_equals_one_call_bit_for_bit():
    """Unit u (the pair of runs u) uses unit_key(seed, u): the sweep cut into chunks of 2 units
    gives the scores of one call over the 4 units, bit for bit (same vmap chunk size)."""
    from jaxaudit.datasets.audit_split import audit_data
    from jaxaudit.dpsgd import DpsgdConfig, blank_canary, canary_runs, model_by_name

    (x, y), _ = audit_data(jax.random.key(0), "synthetic", 8, 0)
    model = model_by_name("logreg")
    init = model.init(jax.random.key(0), x[:1])
    cfg = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=2, learning_rate=0.01,
                      sampling_rate=0.5)
    kw = dict(chunk_size=2)
    canary = (blank_canary(x.shape[1:]), 9)
    whole = canary_runs(unit_keys(jax.random.key(3), 0, 4), model, init, (x, y), canary, cfg,
                        num_runs=4, **kw)
    parts = [canary_runs(unit_keys(jax.random.key(3), s, 2), model, init, (x, y), canary, cfg,
                         num_runs=2, **kw)
             for s in (0, 2)]
    for world in (0, 1):
        np.testing.assert_array_equal(whole[world], np.concatenate([p[world] for p in parts]))
    assert len(set(np.concatenate(whole).tolist())) == 8  # 8 different runs
    with pytest.raises(ValueError, match="unit keys"):
        canary_runs(unit_keys(jax.random.key(3), 0, 3), model, init, (x, y), canary, cfg,
                    num_runs=4, **kw)


@pytest.mark.slow  # ~1 min on two shared cores (compilation of the runs and the DV critic)
def test_run_rdp_workers_resume_refusal_progress_and_folder(tmp_path):
    calls = []
    serial = run_rdp(TINY, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, 2) and calls[-1] == (2, 2)
    assert serial.complete and serial.in_scores.shape == serial.out_scores.shape == (4,)
    # two workers share the folder: the first stops with its chunk, the second finishes and
    # audits; the scores are the serial sweep's, bit for bit
    folder = tmp_path / "run"
    first = run_rdp(TINY, folder, sweep=Sweep(worker=(0, 2)))
    assert not first.complete and first.records == ()
    done = run_rdp(TINY, folder, sweep=Sweep(worker=(1, 2)))
    assert done.complete
    np.testing.assert_array_equal(done.in_scores, serial.in_scores)
    np.testing.assert_array_equal(done.out_scores, serial.out_scores)
    assert [r._asdict() for r in done.records] == [r._asdict() for r in serial.records]
    # resumed: nothing recomputed, same table
    chunks = sorted((folder / "chunks").glob("chunk_*.npz"))
    mtimes = [p.stat().st_mtime_ns for p in chunks]
    again = run_rdp(TINY, folder)
    assert [p.stat().st_mtime_ns for p in chunks] == mtimes and again.rows == done.rows
    # the folder: what the CLI writes, readable by load_results
    summary = json.loads((folder / "results.json").read_text())
    assert summary["runs_per_world"] == 4 and summary["canary_label"] == 9
    for rec, a in zip(summary["records"], TINY.orders):  # full batch: ε_α = α T / (2σ²)
        np.testing.assert_allclose(rec["accountant"], a * 2 / (2 * done.noise_multiplier**2),
                                   rtol=1e-9)
    loaded = load_results(folder)
    assert loaded.kind == "rdp" and not loaded.missing
    assert loaded.tables["rdp_table.json"] == json.loads(dumps_strict(done.rows))
    assert (folder / "rdp_audit.png").stat().st_size > 1000
    assert "| α |" in (folder / "summary.md").read_text()
    # another configuration is refused in the same folder
    with pytest.raises(ValueError, match="different"):
        run_rdp(_recipe(TINY, steps=3), folder)


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("num_runs", 1, "num_runs"), ("canary_label", "cat", "canary_label"),
    ("confidence", 1.5, "confidence"), ("delta", 2.0, "delta"), ("orders", (1.0, 2.0), "orders"),
    ("dpsgd.clip_norm", -1.0, "clip_norm"), ("dataset", "imagenet", "dataset"),
    ("model", "cifar_cnn", "cifar_cnn"), ("dpsgd.sampling_rate", 0.0, "sampling_rate"),
    ("chunk", 0, "chunk"), ("seed", -1, "seed"),
    ("dpsgd.learning_rate", float("inf"), "learning_rate"), ("dpsgd.steps", 0, "steps"),
    ("dpsgd.method", "fast", r"dpsgd\.method"), ("dpsgd.unroll", 0, "unroll"),
    ("dpsgd", None, "dpsgd"), ("chunk_size", 0, "chunk_size"),
    ("pretrain_learning_rate", -1.0, "pretrain_learning_rate"),
    ("pretrain_batch_size", 0, "pretrain_batch_size"),
])
def test_a_bad_config_field_is_named_before_any_folder(tmp_path, field, value, needle):
    head, _, rest = field.partition(".")
    config = _recipe(TINY, **{rest: value}) if rest else TINY._replace(**{field: value})
    with pytest.raises(ValueError, match=needle):
        run_rdp(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_bad_scores_config_is_named_before_any_folder(tmp_path):
    rng = np.random.default_rng(0)
    good = ScoresAuditConfig(1 + rng.standard_normal(40), rng.standard_normal(40),
                             noise_multiplier=2.0, sampling_rate=1.0, steps=4)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="steps"):
        run_scores_audit(good._replace(steps=None), out)
    with pytest.raises(ValueError, match=r"noise_multiplier \(or epsilon with delta\)"):
        run_scores_audit(good._replace(noise_multiplier=None), out)
    with pytest.raises(ValueError, match="confidence"):
        run_scores_audit(good._replace(confidence=0.0), out)
    with pytest.raises(ValueError, match="identical contents"):
        run_scores_audit(good._replace(out_scores=good.in_scores), out)
    with pytest.raises(ValueError, match="out_scores: the array holds 5 scores.*at least 14"):
        run_scores_audit(good._replace(out_scores=good.out_scores[:5]), out)
    with pytest.raises(ValueError, match="in_scores"):
        run_scores_audit(good._replace(in_scores=np.array([0.0, np.nan] * 10)), out)
    assert not out.exists()


@pytest.mark.slow  # ~1 min on two shared cores (compilation of the DV critic and the bounds)
def test_scores_audit_of_gaussian_scores_is_below_the_truth(tmp_path):
    """μ = √T/σ = 1: every lower bound is below the truth (ε_α = α μ²/2; ε at δ of μ-GDP),
    the accountant equals it, and the folder and the printed table hold the score-based bounds."""
    rng = np.random.default_rng(0)
    sigma, steps, n, delta = 2.0, 4, 200, 1e-5
    config = ScoresAuditConfig(1.0 + rng.standard_normal(n), rng.standard_normal(n),
                               noise_multiplier=sigma, sampling_rate=1.0, steps=steps,
                               orders=(1.5, 2.0, 2.0), delta=delta)
    calls = []
    res = run_scores_audit(config, tmp_path / "run", progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 1), (1, 1)] and res.canary_label is None
    assert [r.order for r in res.records] == [1.5, 2.0]  # a repeated order is one row
    for r in res.records:
        truth = r.order / 2
        np.testing.assert_allclose(r.accountant, truth, rtol=1e-9)
        assert r.dv_lower <= truth and r.threshold_lower <= truth and 0 < r.dv_point
    eps_truth = _gdp_epsilon(1.0, delta)
    rows = {r["statement"]: r for r in res.epsilon_at_delta}
    np.testing.assert_allclose(rows["accountant (pld)"]["epsilon"], eps_truth, rtol=2e-3)
    assert 0 <= rows["Clopper-Pearson threshold test"]["epsilon"] <= eps_truth
    methods = {r["method"]: r for r in res.score_bounds}
    assert set(methods) == {"Clopper-Pearson threshold test", "GDP threshold test",
                            "one-run audit", "f-DP one-run audit"}
    # one key for every held-out split: the GDP baseline and the GDP threshold test are one
    # test with one number, and the two Clopper-Pearson rows agree
    assert methods["GDP threshold test"]["epsilon"] == rows["GDP baseline"]["epsilon"]
    assert methods["GDP threshold test"]["mu"] == res.records[0].mu
    assert methods["Clopper-Pearson threshold test"]["epsilon"] == rows[
        "Clopper-Pearson threshold test"]["epsilon"]
    for r in res.score_bounds:
        if r["kind"].startswith("bound"):
            assert 0 <= r["epsilon"] <= eps_truth, r
        if r["mu"] is not None:  # μ of μ-GDP: a lower bound of the true μ = 1
            assert 0 <= r["mu"] <= 1.0, r
    assert methods["one-run audit"]["tests"] == methods["f-DP one-run audit"]["tests"] >= 1
    printed = text_table(res)
    for column in ("method", "ε at δ", "μ", "kind", "K", "reference", "arXiv 2305.08846"):
        assert column in printed
    folder = tmp_path / "run"
    assert json.loads((folder / "score_bounds.json").read_text()) == json.loads(
        dumps_strict(res.score_bounds))
    assert "Score-based ε lower bounds" in (folder / "summary.md").read_text()
    assert load_results(folder).config["derived"]["scores"]["in_sha256"] == res.summary[
        "score_files"]["in_sha256"]


# -- the score loader (jaxaudit.dpsgd.scores) -----------------------------------------------
def test_score_files_the_loader_refuses(tmp_path):
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


def _record(order, point, lower, thr, acc=10.0):
    return DpsgdAudit(order, acc, point, lower, 0.0, thr, 0.0, 0.0, False, 0.06)


def test_dv_point_below_a_valid_bound_is_raised_and_flagged():
    # the user's numbers: DV 0.535 and 0.637 below threshold bounds 0.942 and 1.352
    records = [_record(2.0, 0.535, -0.1, 0.942), _record(3.0, 0.637, 0.2, 1.352),
               _record(4.0, 2.0, 1.5, 1.0)]
    rows = audit_rows(records)
    np.testing.assert_allclose([r["dv_estimate"] for r in rows], [0.942, 1.352, 2.0])
    assert [r["raised_to_bound"] for r in rows] == [True, True, False]
    assert [r["dv_point"] for r in rows] == [0.535, 0.637, 2.0]  # the raw estimate is kept
    lines = records_table(rows).splitlines()
    assert "SE(samp.)" in lines[0]
    assert ["↑bound" in line for line in lines[1:]] == [True, True, False]
    md = summary_markdown(rows, [], confidence=0.95)
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
    text = dumps_strict({"a": math.inf, "b": [np.float32(np.nan), -math.inf, 1.5],
                        "c": np.array([1.0, np.inf]), "d": np.bool_(True), "e": np.int64(3)}, indent=2)
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": [1.0, None], "d": True,
                                "e": 3}


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

    need = min_scores_per_world(confidence=0.95)
    first = next(n for n in range(MIN_SCORES, 40) if float(np.atleast_1d(
        threshold_renyi_lower_bound(jax.random.key(0), 10 + np.arange(n) / n, np.arange(n) / n, [2.0], confidence=0.95))[0])
        > 0)
    assert need == first


def test_printed_bounds_round_outward():
    """Hostile input (low): printed bounds were rounded to nearest, so a printed lower bound could
    sit above the computed one. Lower bounds now round down, upper bounds up, estimates to
    nearest — checked against the exact decimal boundaries."""
    from jaxaudit.report.rdp import _num, _outward

    assert _outward(0.123456, 4, "down") == 0.1234 and _outward(0.123456, 4, "up") == 0.1235
    assert _outward(0.12346, 4, "nearest") == 0.12346
    assert _outward(0.5, 4, "down") == 0.5 == _outward(0.5, 4, "up")      # exact: unchanged
    rng = np.random.default_rng(0)
    for value in rng.uniform(0, 20, 2000):
        low, high = float(_num(value, 10, direction="down")), float(_num(value, 10, direction="up"))
        assert low <= value <= high and high - low <= 1e-4 + 1e-12
    assert _num(float("inf"), 5, direction="down").strip() == "inf"
