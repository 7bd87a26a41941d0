"""Every option that changes a number is part of the stored run configuration.

A run folder is resumed when a command is repeated with the same configuration and refused when
the configuration differs. An option that changes a result but is missing from the configuration
lets a second run silently overwrite the first one's results (``rdp --scores`` with
another ``--accountant``). This test walks the parser of ``jaxaudit`` (every command and
sub-command), runs each command that keeps a run folder up to the moment it opens the folder
(``RunDir.open`` is replaced by a function that records the configuration and stops the
command), and checks that every option's destination is a key of the stored configuration, or
is in :data:`CHANGES_NO_NUMBER` with the reason, or is stored under another name
(:data:`STORED_AS`). Commands that keep no run folder are listed in :data:`NO_RUN_FOLDER` with
the reason; a new command or option that is in none of these lists fails the test.
"""

import argparse

import numpy as np
import pytest

from jaxaudit.cli.main import build_parser, main
from jaxaudit.runs import RunDir

#: Options that change no number of the run, per command path, with the reason.
_OUTPUT_ONLY = {
    "out": "where the results go, not what they are",
    "quiet": "progress display only",
    "backend": "where the units run (serial or Ray tasks); every unit keeps its key",
    "ray_address": "which Ray cluster runs the units",
    "worker": "which share of the units this process computes; the final run holds them all",
}
#: The one-run mode's options, in the other rdp modes.
_NOT_ONE_RUN = {"one_run": "None outside the one-run mode (it selects it, checked separately)",
                "num_canaries": "--one-run only", "kind": "--one-run only"}
CHANGES_NO_NUMBER = {
    ("rdp", "training"): {
        **_OUTPUT_ONLY,
        "data_dir": "where the data files live; MNIST and CIFAR-10 are checksum-verified, so the "
        "same images wherever they are",
        "chunk_size": "how many runs one vmapped call computes; each run's key and data do not "
        "depend on it",
        "unroll": "lax.scan unrolling of the same step sequence (compilation, not arithmetic "
        "order of a step)",
        "scores": "None in training mode (it selects the scores mode, checked separately)",
        **_NOT_ONE_RUN,
    },
    ("rdp", "scores"): {
        **_OUTPUT_ONLY,
        # training-only options: the scores mode ignores them (documented in its --help)
        **{name: "training-only, ignored with --scores" for name in (
            "dataset", "model", "dataset_size", "public_size", "pretrain_epochs",
            "pretrain_optimizer", "pretrain_learning_rate", "pretrain_batch_size", "canary_label",
            "clip_norm", "learning_rate", "num_runs", "chunk", "chunk_size", "unroll", "data_dir")},
        **_NOT_ONE_RUN,
    },
    ("rdp", "one_run"): {
        **_OUTPUT_ONLY,
        "one_run": "selects the one-run mode",
        "data_dir": "where the data files live (checksum-verified)",
        "scores": "None in the one-run mode",
        # options of the many-run audit the one-run mode ignores (its σ is always calibrated
        # by the RDP accountant; --noise-multiplier is refused)
        **{name: "many-run only, ignored with --one-run" for name in (
            "public_size", "pretrain_epochs", "pretrain_optimizer", "pretrain_learning_rate",
            "pretrain_batch_size", "canary_label", "accountant", "noise_multiplier", "num_runs",
            "chunk", "orders", "chunk_size")},
        "unroll": "lax.scan unrolling of the same step sequence (compilation, not arithmetic "
        "order of a step)",
    },
    ("shadow",): {
        **_OUTPUT_ONLY,
        "data_dir": "where the Planetoid files live (checksum-verified)",
    },
    ("bmp",): {
        **_OUTPUT_ONLY,
        "data_dir": "where the Planetoid files live (checksum-verified)",
        "compare": "another finished report read for a side-by-side comparison; this run's "
        "numbers do not depend on it",
    },
    ("attack", "secrets"): dict(_OUTPUT_ONLY),
    ("attack", "marginals"): dict(_OUTPUT_ONLY),
}
#: Options stored under another key: dest -> configuration key.
STORED_AS = {
    # the rdp pipelines' configuration names (RdpConfig, ScoresAuditConfig)
    ("rdp", "training"): {"significance": "confidence"},
    ("rdp", "scores"): {"significance": "confidence"},
    ("rdp", "one_run"): {"significance": "confidence"},
    # nested: BmpConfig.shadow (its chunk), .audit (.nuts.chunk_size), NodeDpConfig's fields;
    # --shadow (a finished shadow run) is stored as the `shadow` it replaces, with its path and
    # configuration hash in derived.shadow_run
    ("bmp",): {"shadow": "shadow", "no_mp": "mp_baseline", "graph": "graph_file", "models": "num_models",
               "model_chunk": "chunk", "node_units": "chunk", "node_chunk": "chunk_size",
               "prior_draws": "num_prior_draws", **{f"dp_{k}": k for k in (
                   "epsilon", "noise_multiplier", "degree_cap", "delta")}, "dp_clip": "clip_norm"},
    ("shadow",): {"graph": "graph_file", "models": "num_models", **{f"dp_{k}": k for k in (
        "epsilon", "noise_multiplier", "degree_cap", "delta")}, "dp_clip": "clip_norm"},
}
#: Commands that keep no run folder, with the reason (nothing stored that could disagree).
NO_RUN_FOLDER = {
    ("bounds",): "a closed-form bound computed afresh on every call; --json/--plot write its "
    "result, which holds its inputs (privacy, prior, γ, targets); the library's "
    "run_bounds(config, run_dir) stores the whole BoundsConfig (tests/pipelines/test_bounds_pipeline.py)",
    ("data", "info"): "describes a data set; stores nothing",
    ("data", "verify"): "checks files; stores nothing",
    ("data", "download"): "fetches files; stores nothing",
    ("report",): "renders an existing run folder; stores no numbers of its own",
}


def _command_parsers(parser=None, path=()):
    """{command path: its ArgumentParser} for every leaf command of ``jaxaudit``."""
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {path: parser}
    found = {}
    for name, sub in subs[0].choices.items():
        found.update(_command_parsers(sub, path + (name,)))
    return found


def _options(parser):
    return {a.dest for a in parser._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction | argparse._VersionAction)}


class _Stored(Exception):
    def __init__(self, config):
        self.config = config


def _flat_keys(config, prefix=""):
    keys = set()
    for k, v in config.items():
        keys.add(k)
        if isinstance(v, dict):
            keys |= _flat_keys(v, f"{prefix}{k}.")
    return keys


def _invocations(tmp_path):
    rng = np.random.default_rng(0)
    in_path, out_path = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(in_path, 1 + rng.standard_normal(40))
    np.save(out_path, rng.standard_normal(40))
    out = str(tmp_path / "run")
    csbm = ["--dataset", "csbm", "--csbm-nodes", "200", "--models", "2"]
    dp_eps = ["--model", "capped_gcn", "--sampler", "poisson", "--dp-epsilon", "4", "--dp-clip",
              "0.5", "--dp-degree-cap", "3", "--dp-delta", "1e-6"]
    dp_sigma = ["--model", "mlp", "--sampler", "poisson", "--dp-noise-multiplier", "3"]
    from jaxaudit.graph import from_edge_index, save_graph_npz

    graph = str(save_graph_npz(tmp_path / "g.npz", from_edge_index(
        rng.normal(size=(10, 3)), rng.integers(0, 2, 10), [[0, 1, 2], [1, 2, 3]])))
    return {
        ("rdp", "training"): [["rdp", "--dataset", "synthetic", "--model", "logreg", "--out", out]],
        ("rdp", "scores"): [["rdp", "--scores", str(in_path), str(out_path), "--noise-multiplier",
                             "1", "--sampling-rate", "1", "--steps", "2", "--out", out]],
        ("rdp", "one_run"): [["rdp", "--one-run", "--dataset", "synthetic", "--model", "logreg",
                              "--dataset-size", "32", "--canaries", "50", "--out", out]],
        ("shadow",): [["shadow", *csbm, "--sampler", "snowball", "--out", out],
                      ["shadow", *csbm, "--out", out],
                      ["shadow", "--graph", graph, "--models", "2", "--out", out],
                      ["shadow", *csbm, *dp_eps, "--out", out],     # DP fields: stored when on
                      ["shadow", *csbm, *dp_sigma, "--out", out]],
        ("bmp",): [["bmp", *csbm, "--sampler", "snowball", "--min-ess", "100", "--out", out],
                   ["bmp", "--graph", graph, "--models", "2", "--out", out],
                   ["bmp", *csbm, *dp_eps, "--out", out],
                   ["bmp", *csbm, *dp_sigma, "--out", out]],
        ("attack", "secrets"): [["attack", "secrets", "--out", out],
                                ["attack", "secrets", "--records-per-user", "2",
                                 "--record-length", "80", "--out", out]],
        ("attack", "marginals"): [["attack", "marginals", "--out", out]],
    }


def test_every_command_is_classified():
    commands = set(_command_parsers())
    with_folder = {path[:1] if path[0] == "rdp" else path for path in CHANGES_NO_NUMBER}
    assert commands == with_folder | set(NO_RUN_FOLDER), (
        "a command is neither checked for its stored configuration nor listed in NO_RUN_FOLDER")


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(CHANGES_NO_NUMBER), ids=" ".join)
def test_every_option_that_changes_a_number_is_stored(path, tmp_path, monkeypatch):
    def record(cls, folder, *, kind, config):
        raise _Stored(config)

    monkeypatch.setattr(RunDir, "open", classmethod(record))
    # the scores mode's minimum-count check (slow to compute, tested in test_rdp_scores) is not
    # what this test is about
    import jaxaudit.pipelines.rdp

    monkeypatch.setattr(jaxaudit.pipelines.rdp, "min_scores_per_world", lambda **kw: 4)
    parser = _command_parsers()[path[:1] if path[0] == "rdp" else path]
    stored = set()
    for argv in _invocations(tmp_path)[path]:
        with pytest.raises(_Stored) as caught:
            main(argv)
        stored |= _flat_keys(caught.value.config)
    renamed = STORED_AS.get(path, {})
    allowed = CHANGES_NO_NUMBER[path]
    missing = sorted(dest for dest in _options(parser)
                     if dest not in stored and renamed.get(dest) not in stored
                     and dest not in allowed)
    assert not missing, f"{' '.join(path)}: options missing from the stored configuration"
    assert set(allowed) <= _options(parser), "the allow-list names options that do not exist"
    # the allow-list holds no option that is in fact stored (it would hide a change of reason)
    assert not (set(allowed) - {"scores"}) & stored, sorted((set(allowed) - {"scores"}) & stored)
