"""`run_bmp` as a library call: the same models from a shadow run and from its own training,
the report folder, resume and refusal, progress, and bad configuration fields named before any
folder is written."""

import csv
import json

import jax
import numpy as np
import pytest

from jaxaudit.bmp import AuditConfig, NutsConfig, PosteriorModel
from jaxaudit.mia import lira_loo
from jaxaudit.pipelines import BmpConfig, BmpResult, ShadowConfig, run_bmp, run_shadow
from jaxaudit.runs import Sweep

NODES = 120
# the NUTS settings of tests/cli/test_bmp_cli.py (one compiled program per test process)
AUDIT = AuditConfig(model=PosteriorModel(attack_prior="uniform"), mp_baseline=False, nuts=NutsConfig(
    num_warmup=150, num_samples=200, num_chains=2, chunk_size=128))
NUTS = dict(audit=AUDIT, num_prior_draws=50)
SHADOW = ShadowConfig(dataset="csbm", csbm_nodes=NODES, num_models=8, epochs=5, chunk=4)
TINY = ShadowConfig(dataset="csbm", csbm_nodes=60, num_models=2, epochs=1)


def cfg_attack(result):
    return result.config["audit"]["attack"]


def _with(config, path, value):
    """``config`` with the (dotted, nested) field ``path`` set to ``value``."""
    head, _, rest = path.partition(".")
    return config._replace(**{head: _with(getattr(config, head), rest, value) if rest else value})


def _tpr_at_fpr(stat, labels, fpr):
    """Largest TPR of a test "stat > t" whose empirical FPR is at most fpr, by enumerating the
    thresholds (every distinct score, and +inf)."""
    neg, pos = stat[~labels], stat[labels]
    best = 0.0
    for t in np.append(np.unique(stat), np.inf):
        if np.mean(neg > t) <= fpr:
            best = max(best, float(np.mean(pos > t)))
    return best


@pytest.fixture(scope="module")
def shadow_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shadow")
    run_shadow(SHADOW, out)
    return out


@pytest.fixture(scope="module")
def report(shadow_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "bmp"
    calls = []
    result = run_bmp(BmpConfig(shadow_run=shadow_dir, **NUTS), out,
                     progress=lambda done, total: calls.append((done, total)))
    return out, result, calls


@pytest.mark.slow
def test_same_seed_same_models_in_shadow_and_bmp(report, shadow_dir):
    """The one key rule (model m of seed s uses fold_in(key(s), m), whatever the chunking):
    `run_bmp` training its own 8 models in one chunk of 8 equals `run_shadow` in two chunks of 4
    followed by `run_bmp(shadow_run=...)` — the same error counts and the same posteriors on
    every node (before the rule the two differed on 289 of 300 nodes)."""
    _, via_shadow, _ = report
    calls = []
    own = run_bmp(BmpConfig(shadow=SHADOW._replace(chunk=8), **NUTS),
                  progress=lambda done, total: calls.append((done, total)))
    # one shadow chunk, the priors, the attack, one posterior unit
    assert own.path is None and calls[0] == (0, 4) and calls[-1] == (4, 4)
    for column in ("fp", "n0", "fn", "n1"):
        np.testing.assert_array_equal(own.table[column], via_shadow.table[column], column)
    np.testing.assert_array_equal(own.audit.masks, via_shadow.audit.masks)
    for column in ("bayes_eps_r_q50", "certified_eps_r_lower", "certified_eps_l_lower"):
        np.testing.assert_allclose(own.table[column], via_shadow.table[column], rtol=1e-5,
                                   equal_nan=True, err_msg=column)
    # the shadow run as a ShadowRun object (in memory) instead of its folder: the same audit
    from jaxaudit.pipelines import load_shadow

    loaded = load_shadow(shadow_dir)
    obj = run_bmp(BmpConfig(shadow_run=loaded, **NUTS))
    assert obj.config["derived"]["shadow_run"] == via_shadow.config["derived"]["shadow_run"]
    for column in ("fp", "n0", "fn", "n1", "bayes_eps_r_q50"):
        np.testing.assert_array_equal(obj.table[column], via_shadow.table[column], column)


@pytest.mark.slow
def test_report_folder_from_a_shadow_run(report, shadow_dir):
    out, result, calls = report
    assert isinstance(result, BmpResult) and result.path == out
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)          # priors, attack, 1 unit
    rows = list(csv.DictReader((out / "nodes.csv").open()))
    assert len(rows) == NODES == len(result.table["n0"])
    np.testing.assert_array_equal(result.table["n0"] + result.table["n1"], 8)
    assert [int(r["fp"]) for r in rows] == result.table["fp"].tolist()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_models"] == 8 and summary["nodes_with_estimate"] > 0
    assert summary == json.loads(json.dumps(summary))
    # the attack and its TPR at 1% and 0.1% FPR (estimates), against a direct computation
    assert summary["attack"] == "lira" and cfg_attack(result) == "lira"
    stat = np.asarray(lira_loo(result.audit.scores, result.audit.masks)).ravel()
    labels = np.asarray(result.audit.masks).ravel()
    for fpr in (0.01, 0.001):
        assert summary["global_tpr_at_fpr"][f"{fpr:g}"] == pytest.approx(
            _tpr_at_fpr(stat, labels, fpr))
    md = (out / "summary.md").read_text()
    assert "| global LOO-LiRA TPR at 1% FPR |" in md and "TPR at 0.1% FPR" in md
    cfg = result.config
    assert cfg["derived"]["shadow_run"]["num_models"] == 8
    assert cfg["shadow"]["sampler"] == "uniform"               # nested: BmpConfig.shadow
    assert cfg["shadow"]["chunk"] == 4                         # the shadow run's models
    assert cfg["audit"]["nuts"]["num_warmup"] == 150 and cfg["num_prior_draws"] == 50
    from jaxaudit.report import bmp as report_mod

    assert (out / "summary.md").read_text() == report_mod.markdown(result)
    values, label = report_mod.read_compare(out)
    rows = list(csv.DictReader((out / "nodes.csv").open()))
    want = np.array([float(r["bayes_eps_r_q50"]) if r["bayes_eps_r_q50"] else np.nan
                     for r in rows])
    np.testing.assert_array_equal(values, want)
    assert label == "uniform"


@pytest.mark.slow
def test_resume_reuses_chunks_and_another_config_is_refused(report, shadow_dir, monkeypatch):
    import jaxaudit.bmp as bmp_mod
    import jaxaudit.bmp.audit as audit_mod

    out, result, _ = report

    def boom(*a, **k):
        raise AssertionError("audit recomputed on resume")

    monkeypatch.setattr(bmp_mod, "audit_from_scores", boom)
    monkeypatch.setattr(audit_mod, "audit_attack", boom)
    monkeypatch.setattr(audit_mod, "audit_nodes", boom)
    before = (out / "nodes.csv").read_text()
    again = run_bmp(BmpConfig(shadow_run=shadow_dir, **NUTS), out)
    assert (out / "nodes.csv").read_text() == before
    np.testing.assert_array_equal(again.table["fp"], result.table["fp"])
    with pytest.raises(ValueError, match="different configuration"):
        run_bmp(_with(BmpConfig(shadow_run=shadow_dir, **NUTS), "audit.nuts.num_warmup", 151),
                out)


@pytest.mark.slow
def test_compare_plot(report, shadow_dir, tmp_path):
    out, _, _ = report
    other = tmp_path / "other"
    run_bmp(BmpConfig(shadow_run=shadow_dir, compare=out, **NUTS), other)
    assert (other / "compare.png").is_file()


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("audit.nuts.num_chains", 1, "num_chains"), ("audit.nuts.num_chains", 65, "num_chains"),
    ("audit.confidence", 1.0, "confidence"), ("audit.confidence", "high", "confidence"),
    ("audit.model.attack_prior", "beta:x", "attack_prior"),
    ("audit.model.prior_variance", 0.0, "prior_variance"),
    ("num_prior_draws", 0, "num_prior_draws"), ("audit.nuts.num_samples", 10**7, "num_samples"),
    ("audit.nuts.min_ess", -1.0, "min_ess"), ("audit.fix_variance", "no", "fix_variance"),
    ("shadow.ratio", 1.5, "ratio"), ("shadow.num_models", 0, "num_models"),
    ("shadow.chunk", 0, "chunk"), ("shadow.dataset", "mnist", "dataset"),
    ("shadow.seed", -1, "seed"), ("shadow.csbm_nodes", 2, "csbm_nodes"),
    ("audit.attack", "bogus", "attack"), ("audit.attack", None, "attack"), ("chunk", 0, "chunk"),
    ("shadow", {"dataset": "csbm"}, "shadow"), ("audit", None, "audit"),
])
def test_bad_field_named_before_any_folder(tmp_path, field, value, needle):
    config = _with(BmpConfig(shadow=TINY), field, value)
    with pytest.raises(ValueError, match=needle):
        run_bmp(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_sizes_shadow_run_and_compare_checked_before_any_folder(tmp_path):
    base = BmpConfig(shadow=TINY)
    with pytest.raises(ValueError, match="chunk_size .* GiB"):
        run_bmp(_with(base, "audit.nuts", NutsConfig(num_samples=1_000_000, chunk_size=1024)),
                tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="shadow run folder not found"):
        run_bmp(base._replace(shadow_run=tmp_path / "missing"), tmp_path / "b")
    with pytest.raises(ValueError, match="graph_file and shadow_run"):
        run_bmp(_with(base._replace(shadow_run=tmp_path), "shadow.graph_file",
                      tmp_path / "g.npz"), tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="compare folder"):
        run_bmp(base._replace(compare=tmp_path / "nowhere"), tmp_path / "d")
    for name in "abcd":
        assert not (tmp_path / name).exists()


def test_cli_limits_agree_with_the_library():
    from jaxaudit.cli import bmp as cli
    from jaxaudit.pipelines import bmp as lib

    assert (cli.MAX_PRIOR_DRAWS, cli.MAX_NUTS_STEPS, cli.MAX_CHAINS) == (
        lib.MAX_PRIOR_DRAWS, lib.MAX_NUTS_STEPS, lib.MAX_CHAINS)
    assert cli.MAX_DRAW_GIB * 2**30 == lib.MAX_DRAW_BYTES
    assert cli.BYTES_PER_DRAW == lib.BYTES_PER_DRAW


def _fake_shadow_run(path, chunks, **derived):
    """A shadow run folder written directly (no training): 2 models per chunk on 6 nodes."""
    from jaxaudit.pipelines.lifecycle import stored_config
    from jaxaudit.runs import RunDir

    cfg = stored_config(ShadowConfig(dataset="csbm", num_models=4, epochs=1, chunk=2,
                                     csbm_nodes=6), derived, exclude=("data_dir", "dp"))
    run = RunDir.open(path, kind="shadow", config=cfg)
    rng = np.random.default_rng(0)
    for name in chunks:
        run.save_chunk(name, {"masks": rng.random((2, 6)) < 0.5,
                              "scores": rng.normal(size=(2, 6)).astype(np.float32)})
    return path


def test_shadow_run_checked_before_any_folder(tmp_path):
    """An incomplete shadow run, one with chunks its plan lacks, and one made from an in-memory
    graph without that graph are refused before the report folder is written."""
    from jaxaudit.graph import from_edge_index

    partial = _fake_shadow_run(tmp_path / "partial", ["chunk_00000"])
    with pytest.raises(ValueError, match="incomplete: 1 of 2 chunks.*chunk_00001"):
        run_bmp(BmpConfig(shadow_run=partial), tmp_path / "a")
    padded = _fake_shadow_run(tmp_path / "padded", ["chunk_00000", "chunk_00001", "chunk_00002"])
    with pytest.raises(ValueError, match="inconsistent"):
        run_bmp(BmpConfig(shadow_run=padded), tmp_path / "b")
    mine = from_edge_index(np.eye(2)[[0, 1, 0, 1, 0, 1]], [0, 1, 0, 1, 0, 1],
                           [[0, 1, 2, 3], [1, 2, 3, 4]])
    made = _fake_shadow_run(tmp_path / "graph", ["chunk_00000", "chunk_00001"],
                            graph={"name": "mine", "num_nodes": 6, "sha256": "0" * 64})
    with pytest.raises(ValueError, match="pass the same graph"):
        run_bmp(BmpConfig(shadow_run=made), tmp_path / "c")
    with pytest.raises(ValueError, match="graph differs"):
        run_bmp(BmpConfig(shadow_run=made), tmp_path / "d", graph=mine)
    with pytest.raises(ValueError, match="model and shadow_run"):
        run_bmp(BmpConfig(shadow_run=made), tmp_path / "e", model=object())
    for name in "abcde":
        assert not (tmp_path / name).exists()


def test_report_renders_a_result_without_training():
    """report.bmp on a duck-typed result: CSV cells (integers as such, NaN empty, 6 significant
    digits) read back by csv, and the markdown labels bounds and Bayesian quantities."""
    from types import SimpleNamespace

    from jaxaudit.report import bmp as report_mod

    table = {"node": np.arange(3), "fp": np.array([0, 2, 5]),
             "bayes_eps_r_q50": np.array([0.1234567, np.nan, 2.0])}
    rows = list(csv.DictReader(report_mod.csv_text(table).splitlines()))
    assert [r["fp"] for r in rows] == ["0", "2", "5"]
    assert [r["bayes_eps_r_q50"] for r in rows] == ["0.123457", "", "2"]
    summary = {"confidence": 0.9, "num_models": 8, "num_nodes": 3, "nodes_with_estimate": 2,
               "global_attack_auc": 0.61, "per_node_auc_p10_p90": [0.4, 0.8],
               "certified_eps_r_max": 1.5, "certified_eps_l_max": None,
               "fraction_certified_eps_r_positive": 0.25, "bayes_eps_r_median": 0.7,
               "bayes_eps_l_median": 0.3, "attack_prior": "Beta(1, 1)",
               "bayes_eps_r_p10_p90": None, "mp_eps_median": None,
               "fraction_bmp_r_below_mp": None, "fraction_rhat_le_1_05": 1.0, "min_ess": 400.0,
               "divergences": 0}
    cfg = {"shadow": {"dataset": "csbm", "model": "gcn", "sampler": "snowball", "ratio": 0.5,
                      "edge_access": "inductive"}}
    md = report_mod.text_table(SimpleNamespace(config=cfg, summary=summary))
    assert md.startswith("# BMP audit: csbm / gcn / snowball (ratio 0.5, 8 models")
    assert "| largest certified eps_R (eps_L) | 1.500 (n/a) | 90% lower bound per node |" in md
    assert "| global LOO-LiRA AUC | 0.610 | estimate |" in md and "Bayesian" in md


@pytest.mark.slow
def test_posterior_units_equal_one_unit_and_the_library(report, shadow_dir, tmp_path):
    """The per-node posteriors as node-chunk work units. The 120 nodes' distinct count
    tuples in units of 8 (two worker shares, then the final run) give bit for bit the numbers
    of one unit of all nodes and of `bmp.audit_from_scores` with the audit stream's key (every
    node draws from fold_in(key, j), j the first node with its counts)."""
    from jaxaudit import bmp
    from jaxaudit.runs import load_results, stream_key

    _, whole, _ = report
    config = BmpConfig(shadow_run=shadow_dir, chunk=8, **NUTS)
    out = tmp_path / "units"
    tuples = np.unique(np.stack([whole.table[c] for c in ("fp", "n0", "fn", "n1")]), axis=1)
    units = [f"posterior-{k:05d}" for k in range(-(-tuples.shape[1] // 8))]
    assert len(units) >= 3
    first = run_bmp(config, out, sweep=Sweep(worker=(0, 2)))
    assert first.audit is None and first.missing == tuple(units[1::2])
    assert run_bmp(config, out, sweep=Sweep(worker=(1, 2))).missing == ()
    calls = []
    split = run_bmp(config, out, progress=lambda done, total: calls.append((done, total)))
    # priors, attack, the units (all done already); until the attack has counted the tuples
    # the total is the bound of one unit per `chunk` nodes
    total, bound = 2 + len(units), 2 + -(-NODES // 8)
    assert calls == [(1, bound), (2, bound), (total, total)]
    stored = load_results(out)
    assert stored.planned == ["prior", "attack", *units] and stored.missing == []
    nodes = np.concatenate([stored.chunks[n]["nodes"] for n in units])
    np.testing.assert_array_equal(np.sort(nodes), np.arange(NODES))  # every node once
    assert split.config["chunk"] == 8
    for column in whole.table:
        np.testing.assert_array_equal(split.table[column], whole.table[column], err_msg=column)
    assert split.summary == whole.summary
    lib = bmp.audit_from_scores(
        stream_key(jax.random.key(0), "audit"), whole.audit.scores, whole.audit.masks, whole.audit.eta,
        bmp.AuditConfig(mp_baseline=False, nuts=bmp.NutsConfig(
            num_warmup=150, num_samples=200, num_chains=2, chunk_size=128)),
        eta_se=whole.audit.eta_se, degree=whole.audit.degree)
    for column, values in bmp.audit_table(lib).items():
        np.testing.assert_array_equal(whole.table[column], values, err_msg=column)


def test_unit_names_cover_every_count_tuple_once():
    from jaxaudit.pipelines.bmp import unit_names

    assert unit_names(2017, 1024) == ["posterior-00000", "posterior-00001"]  # Cora's tuples
    assert unit_names(120, 50) == [f"posterior-{k:05d}" for k in range(3)]
    assert unit_names(100, 50) == ["posterior-00000", "posterior-00001"]
    assert unit_names(1, 1024) == ["posterior-00000"]


def test_report_names_the_attack_and_its_tpr_at_low_fpr():
    """Every BMP summary shows the attack's TPR at 1% and 0.1% FPR, labelled as
    estimates and named by the attack; a missing TPR reads n/a."""
    from types import SimpleNamespace

    from jaxaudit.report import bmp as report_mod

    summary = {"confidence": 0.95, "num_models": 8, "num_nodes": 3, "nodes_with_estimate": 2,
               "attack": "rmia", "global_attack_auc": 0.816,
               "global_tpr_at_fpr": {"0.01": 0.165, "0.001": None},
               "per_node_auc_p10_p90": None, "certified_eps_r_max": None,
               "certified_eps_l_max": None, "fraction_certified_eps_r_positive": None,
               "bayes_eps_r_median": None, "bayes_eps_l_median": None, "attack_prior": "x",
               "bayes_eps_r_p10_p90": None, "mp_eps_median": None,
               "fraction_bmp_r_below_mp": None, "fraction_rhat_le_1_05": None, "min_ess": None,
               "divergences": 0}
    cfg = {"shadow": {"dataset": "cora", "model": "gcn", "sampler": "uniform", "ratio": 0.5,
                      "edge_access": "inductive"}}
    md = report_mod.markdown(SimpleNamespace(config=cfg, summary=summary))
    assert "| global LOO RMIA AUC | 0.816 | estimate |" in md
    assert "| global LOO RMIA TPR at 1% FPR | 0.165 | estimate |" in md
    assert "| global LOO RMIA TPR at 0.1% FPR | n/a | estimate |" in md
