"""Hostile but realistic command lines: each is refused at once, naming the flag,
before any work (no run folder is created), and never with a traceback."""

import os

import pytest

from jaxaudit.cli.main import main

SHADOW = ["shadow", "--dataset", "csbm", "--csbm-nodes", "60", "--models", "2", "--epochs", "1",
          "--quiet"]
RDP = ["rdp", "--dataset", "synthetic", "--model", "logreg", "--dataset-size", "8", "--runs", "2",
       "--steps", "1", "--public-size", "0", "--quiet"]


def _refused(argv, capsys, *needles):
    """The command exits 2 (argparse's usage error or main's clean error) and says ``needles``."""
    try:
        rc = main(argv)
    except SystemExit as stop:  # argparse refuses a malformed value before main runs anything
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize(("extra", "needles"), [
    # hostile 5: NaN scores trained and checkpointed
    (["--learning-rate", "inf"], ["--learning-rate", "finite"]),
    (["--weight-decay", "inf"], ["--weight-decay", "finite"]),
    # hostile 14: shadow --seed -1 was accepted
    (["--seed", "-1"], ["--seed", ">= 0"]),
])
def test_shadow_flags(tmp_path, capsys, extra, needles):
    _refused([*SHADOW, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


def test_shadow_huge_or_tiny_csbm_refused_before_work(tmp_path, capsys):
    """Hostile 10: --csbm-nodes 1000000000 ran on; hostile 14: '>= 1' was said but 1 refused;
    1000000 passed the feature-matrix guard and then drew 10^12 pairs for minutes."""
    argv = [a for a in SHADOW if a not in ("--csbm-nodes", "60")]
    for nodes in ("1000000000", "1000000", "1"):
        _refused([*argv, "--csbm-nodes", nodes, "--out", str(tmp_path / nodes)], capsys,
                 "--csbm-nodes", "[2, 50000]")
        assert not (tmp_path / nodes).exists()


def test_out_paths_refused_before_work(tmp_path, capsys):
    """Hostile 9: --out at a file or a read-only folder, report --out a file, bmp --compare a
    bad path: raw tracebacks, sometimes after training a chunk."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    _refused([*SHADOW, "--out", str(afile)], capsys, "--out", "is a file")
    _refused(["report", str(tmp_path), "--out", str(afile)], capsys, "--out", "is a file")
    _refused(["bmp", "--dataset", "csbm", "--compare", str(tmp_path / "nowhere"), "--out",
              str(tmp_path / "bmp")], capsys, "--compare", "not found")
    _refused(["bmp", "--dataset", "csbm", "--compare", str(tmp_path), "--out",
              str(tmp_path / "bmp")], capsys, "--compare", "holds no nodes")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        _refused([*SHADOW, "--out", str(ro / "run")], capsys, "not writable")


@pytest.mark.parametrize(("extra", "needles"), [
    (["--clip", "inf"], ["--clip", "finite"]),          # hostile 5
    (["--learning-rate", "inf"], ["--learning-rate", "finite"]),
    (["--epsilon", "inf"], ["--epsilon", "finite"]),    # hostile 10: accountant traceback
    (["--seed", "-1"], ["--seed", ">= 0"]),             # hostile 14: message without the name
    (["--orders", "2,,3"], ["--orders", "empty"]),      # hostile 11: silently 2,3
])
def test_rdp_flags(tmp_path, capsys, extra, needles):
    _refused([*RDP, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


ATTACK_SECRETS = ["attack", "secrets", "--prior", "digits", "--digits", "1", "--num-secrets", "2",
                  "--num-filler", "2", "--steps", "1", "--pretrain-steps", "0", "--hidden", "4",
                  "--quiet"]
ATTACK_MARGINALS = ["attack", "marginals", "--num-targets", "5", "--attributes",
                    "age,educ,religious", "--hidden", "religious", "--quiet"]


@pytest.mark.parametrize(("extra", "needles"), [
    # a diverging step size (the model's NaN scores were counted as extractions)
    (["--learning-rate", "1e30"], ["--learning-rate", "(0, 1]"]),
    (["--learning-rate", "inf"], ["--learning-rate", "finite"]),
    (["--learning-rate", "nan"], ["--learning-rate", "finite"]),
    (["--clip", "inf"], ["--clip", "finite"]),
    # (2) checked only after the first chunk had trained
    (["--gamma", "0"], ["--gamma", "(0, 1)"]),
    (["--delta", "1"], ["--delta", "(0, 1)"]),
    (["--num-secrets", "1"], ["--num-secrets", ">= 2"]),
    (["--num-filler", "99999"], ["--num-filler", "at most"]),
    (["--digits", "9"], ["--digits", "[1, 6]"]),
    (["--epsilons", "0.000001"], ["--epsilons=1e-06", "--delta", "no noise multiplier"]),
    # (3) repeated or colliding levels
    (["--epsilons", "1,1"], ["--epsilons", "listed twice"]),
    (["--epsilons", "1,1.0"], ["--epsilons", "listed twice"]),
    (["--epsilons", "2,,3"], ["--epsilons", "empty"]),
    (["--epsilons", "1e6"], ["--epsilons", "at most 100"]),
    # (4) sizes
    (["--seeds", "100000000"], ["--seeds", "at most 1000"]),
    (["--steps", "1000000000000"], ["--steps", "at most"]),
    (["--hidden", "100000"], ["--hidden", "at most"]),
    (["--prior", "passwords", "--num-secrets", "100000"], ["--num-secrets", "GiB"]),
    # (9) NaN where meaningless
    (["--epsilons", "1,nan"], ["--epsilons", "> 0"]),
    (["--delta", "nan"], ["--delta"]),
])
def test_attack_secrets_flags_refused_before_work(tmp_path, capsys, extra, needles):
    _refused([*ATTACK_SECRETS, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("extra", "needles"), [
    (["--gamma", "0"], ["--gamma", "(0, 1)"]),
    (["--gamma", "nan"], ["--gamma", "NaN"]),
    (["--hidden", "nope"], ["--hidden", "--attributes"]),
    (["--way", "4"], ["--way", "[1, 3]"]),
    (["--num-targets", "100000"], ["--num-targets"]),
    (["--distance", "1"], ["--distance", "--hidden"]),
    (["--rhos", "2,2.0"], ["--rhos", "listed twice"]),
    (["--rhos", "nan"], ["--rhos", "> 0"]),
    (["--rhos", "-1"], ["--rhos", "> 0"]),
    (["--seeds", "100000000"], ["--seeds", "at most 1000"]),
    # (4) 5 hidden attributes: 3.4 to 613 GiB, MemoryError after minutes
    (["--attributes", "age,yrs_married,children,educ,religious,occupation,rate_marriage",
      "--hidden", "religious,rate_marriage,age,children,educ", "--num-targets", "100"],
     ["--hidden", "GiB", "--num-targets"]),
])
def test_attack_marginals_flags_refused_before_work(tmp_path, capsys, extra, needles):
    _refused([*ATTACK_MARGINALS, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


def test_attack_out_refused_before_work(tmp_path, capsys):
    """Attack into a read-only or file --out was never checked."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv in (ATTACK_SECRETS, ATTACK_MARGINALS):
        _refused([*argv, "--out", str(afile)], capsys, "--out", "is a file")
        if os.geteuid() != 0:
            ro = tmp_path / "ro"
            ro.mkdir(exist_ok=True)
            ro.chmod(0o500)
            _refused([*argv, "--out", str(ro / "run")], capsys, "--out", "not writable")
            assert not (ro / "run").exists()


@pytest.mark.parametrize("command", ["shadow", "bmp"])
@pytest.mark.parametrize(("extra", "needles"), [
    # MemoryError after 40-76 s, an OverflowError traceback
    (["--models", "1000000000000"], ["--models", "[1, 100000]"]),
    (["--epochs", "1000000000000"], ["--epochs", "[1, 100000]"]),
    (["--models", "100000", "--csbm-nodes", "50000"], ["--models", "GiB"]),
])
def test_shadow_and_bmp_sizes_refused_before_work(tmp_path, capsys, command, extra, needles):
    argv = [command, "--dataset", "csbm", "--csbm-nodes", "60", "--epochs", "1", "--quiet"]
    _refused([*argv, "--out", str(tmp_path / "run"), *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


def _bmp_report_folder(path, nodes_csv: str):
    """A folder with a valid bmp manifest and the given nodes.csv text."""
    from jaxaudit.runs import RunDir

    RunDir.open(path, kind="bmp", config={"shadow": {"sampler": "uniform"}})
    (path / "nodes.csv").write_text(nodes_csv)
    return path


@pytest.mark.parametrize(("nodes_csv", "needles"), [
    ("node,eta\n0,0.5\n", ["--compare", "bayes_eps_r_q50"]),
    ("node,bayes_eps_r_q50\n0,0.5\n1,abc\n", ["--compare", "line 3", "not a number"]),
    ("node,bayes_eps_r_q50\n0,-1\n", ["--compare", "line 2", ">= 0"]),
    ("node,bayes_eps_r_q50\n", ["--compare", "no nodes"]),
    ("\x00\x01garbage", ["--compare"]),
])
def test_bmp_compare_format_checked_before_work(tmp_path, capsys, nodes_csv, needles):
    """A bad --compare nodes.csv crashed after the whole audit."""
    other = _bmp_report_folder(tmp_path / "other", nodes_csv)
    _refused(["bmp", "--dataset", "csbm", "--csbm-nodes", "60", "--models", "2", "--epochs", "1",
              "--compare", str(other), "--out", str(tmp_path / "run"), "--quiet"], capsys,
             *needles)
    assert not (tmp_path / "run").exists()


def test_bmp_compare_must_be_a_bmp_report(tmp_path, capsys):
    from jaxaudit.runs import RunDir

    other = tmp_path / "shadow_run"
    RunDir.open(other, kind="shadow", config={})
    (other / "nodes.csv").write_text("bayes_eps_r_q50\n0.1\n")
    _refused(["bmp", "--dataset", "csbm", "--compare", str(other), "--out",
              str(tmp_path / "run")], capsys, "--compare", "'shadow' run")
    assert not (tmp_path / "run").exists()


def test_bmp_graph_and_sampler_checked_before_the_folder_is_written(tmp_path, capsys):
    """Bmp built the graph and the sampler after writing its manifest, so the
    corrected command was refused as a different configuration."""
    out = tmp_path / "run"
    _refused(["bmp", "--dataset", "csbm", "--csbm-nodes", "2", "--models", "2", "--epochs", "1",
              "--out", str(out), "--quiet"], capsys, "--csbm-nodes=2: num_classes must be <=")
    assert not out.exists()


@pytest.mark.parametrize(("extra", "needles"), [
    (["--prior-draws", "1000000000000"], ["--prior-draws", "10000000"]),
    (["--num-samples", "1000000000000"], ["--num-samples", "1000000"]),
    (["--num-warmup", "1000000000000"], ["--num-warmup", "1000000"]),
    (["--num-chains", "1000"], ["--num-chains", "64"]),
    (["--num-samples", "1000000", "--node-chunk", "1024"], ["--node-chunk", "GiB"]),
])
def test_bmp_sampler_sizes_refused_before_work(tmp_path, capsys, extra, needles):
    """The audit's own sizes: a PRNG key per prior draw and the NUTS draws of a
    node chunk were allocated whatever their size."""
    _refused(["bmp", "--dataset", "csbm", "--csbm-nodes", "60", "--out", str(tmp_path / "run"),
              "--quiet", *extra], capsys, *needles)
    assert not (tmp_path / "run").exists()


BOUNDS = ["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "100"]


@pytest.mark.parametrize(("argv", "needles"), [
    ([*BOUNDS, "--gamma", "nan"], ["--gamma"]),
    ([*BOUNDS, "--delta", "1"], ["--delta", "[0, 1)"]),
    (["bounds", "--epsilon", "nan", "--uniform", "10", "--targets", "100"], ["--epsilon"]),
    (["bounds", "--gdp-mu", "-1", "--uniform", "10", "--targets", "100"], ["--gdp-mu", "> 0"]),
    ([*BOUNDS, "--attempts", "0"], ["--attempts"]),
    (["bounds", "--epsilon", "1", "--uniform", "10", "--targets", "0"], ["--targets"]),
    (["bounds", "--epsilon", "1", "--uniform", "0", "--targets", "5"], ["--uniform", "K"]),
    (["bounds", "--epsilon", "1", "--zipf", "0,10", "--targets", "5"], ["--zipf", "exponent"]),
    (["bounds", "--epsilon", "1", "--uniform", "10"], ["--targets is required"]),
    (["bounds", "--max-count", "-3", "--uniform", "10", "--targets", "5"], ["--max-count"]),
    (["bounds", "--max-success", "2", "--uniform", "10", "--targets", "5"], ["--max-success"]),
    ([*BOUNDS[:1], "--max-count", "3", *BOUNDS[3:], "--plot", "x.png"], ["--plot"]),
])
def test_bounds_flags(tmp_path, capsys, argv, needles):
    _refused([*argv, "--json", str(tmp_path / "b.json")] if "--max-count" not in argv
             and "--max-success" not in argv else argv, capsys, *needles)
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(("argv", "needles"), [
    (["data", "info", "csbm", "--seed", "-1"], ["--seed", ">= 0"]),
    (["data", "info", "pubmed"], ["pubmed"]),
    (["data", "download", "pubmed"], ["NAME", "pubmed"]),
])
def test_data_flags(capsys, argv, needles):
    _refused(argv, capsys, *needles)
