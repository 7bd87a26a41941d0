"""Node-level DP shadow sweeps: stored in the configuration with the accountant's ε, resumable,
never mixed with a non-private folder; the commands' --dp-* flags."""

import json
import math

import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.graph.dp_training import NodeDp, node_dp_epsilon
from jaxaudit.pipelines import NodeDpConfig, ShadowConfig, run_shadow
from jaxaudit.runs.rundir import read_manifest

TINY = dict(dataset="csbm", csbm_nodes=60, model="capped_gcn", sampler="poisson",
            num_models=4, chunk=2, epochs=2)


def test_dp_sweep_stores_epsilon_resumes_and_refuses_the_non_private_config(tmp_path):
    out = tmp_path / "run"
    config = ShadowConfig(**TINY, dp=NodeDpConfig(epsilon=2.0, clip_norm=0.5, degree_cap=3))
    first = run_shadow(config, out)
    stored = read_manifest(out)["config"]
    assert stored["dp"] == {"epsilon": 2.0, "noise_multiplier": None, "clip_norm": 0.5,
                            "degree_cap": 3, "delta": 1e-5}
    dp = stored["derived"]["dp"]
    assert dp["relation"] == "add_remove" and dp["gradients_touched"] == 1 + 3
    assert dp["sensitivity"] == pytest.approx((2 * 4 - 1) * 0.5)
    # the accountant's ε of the stored σ meets the target (σ calibrated by the PLD accountant)
    sigma = dp["noise_multiplier"]
    assert dp["epsilon"] == pytest.approx(node_dp_epsilon(NodeDp(noise_multiplier=sigma), 2,
                                                          1e-5))
    assert dp["epsilon"] == pytest.approx(2.0, rel=1e-2)
    again = run_shadow(config, out)  # resumes: nothing retrained, the same scores
    assert (again.scores == first.scores).all()
    with pytest.raises(ValueError):
        run_shadow(config._replace(dp=None), out)
    with pytest.raises(ValueError):
        run_shadow(config._replace(dp=config.dp._replace(epsilon=4.0)), out)


def test_non_private_config_stores_no_dp_fields(tmp_path):
    run_shadow(ShadowConfig(**(TINY | dict(model="mlp", num_models=2))), tmp_path / "plain")
    stored = read_manifest(tmp_path / "plain")["config"]
    assert "dp" not in stored and "dp" not in stored["derived"]


SIGMA = NodeDpConfig(noise_multiplier=1.0)


@pytest.mark.parametrize("fields,name", [
    (dict(dp=NodeDpConfig(epsilon=1.0, noise_multiplier=1.0)), r"dp\.epsilon"),
    (dict(dp=NodeDpConfig()), r"dp\.epsilon and dp\.noise_multiplier: give one"),
    (dict(dp=NodeDpConfig(epsilon=-1.0)), r"dp\.epsilon"),
    (dict(dp=NodeDpConfig(epsilon=math.inf)), r"dp\.epsilon"),
    (dict(dp=SIGMA._replace(clip_norm=0.0)), r"dp\.clip_norm"),
    (dict(dp=SIGMA._replace(degree_cap=0)), r"dp\.degree_cap"),
    (dict(dp=SIGMA._replace(degree_cap=2.0)), r"dp\.degree_cap"),
    (dict(dp=SIGMA, model="gcn"), "model"),
    (dict(dp=SIGMA, edge_access="full"), "edge_access"),
    (dict(dp={"epsilon": 1.0}), "dp"),
])
def test_dp_fields_refused_by_name(fields, name):
    with pytest.raises(ValueError, match=name):
        ShadowConfig(**(TINY | fields)).check()


def test_shadow_command_dp_flags(tmp_path, capsys):
    argv = ["shadow", "--dataset", "csbm", "--csbm-nodes", "60", "--model", "mlp", "--sampler",
            "poisson", "--models", "2", "--epochs", "2", "--dp-noise-multiplier", "3",
            "--dp-clip", "0.5", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    assert "node-level DP (add/remove): epsilon=" in capsys.readouterr().out
    stored = json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]
    assert stored["dp"]["noise_multiplier"] == 3.0 and stored["dp"]["clip_norm"] == 0.5
    assert main(argv[:-1] + [str(tmp_path / "x"), "--dp-epsilon", "1"]) == 2  # not both
    assert "--dp-epsilon" in capsys.readouterr().err


@pytest.mark.slow
def test_bmp_on_a_dp_shadow_run_keeps_its_guarantee(tmp_path):
    """``run_bmp(shadow_run=...)`` stores the shadow run's DP fields and guarantee; a BMP audit
    training its own DP models stores the same, and the certified bounds stay below ε."""
    from jaxaudit.bmp import AuditConfig, NutsConfig
    from jaxaudit.pipelines import BmpConfig, run_bmp

    audit = AuditConfig(mp_baseline=False, nuts=NutsConfig(num_warmup=30, num_samples=30,
                                                           num_chains=2, chunk_size=1024))
    shadow = tmp_path / "shadow"
    config = ShadowConfig(**TINY, dp=NodeDpConfig(epsilon=1.0))
    run_shadow(config, shadow)
    via = run_bmp(BmpConfig(shadow_run=shadow, audit=audit), tmp_path / "bmp")
    assert via.config["shadow"]["dp"]["epsilon"] == 1.0
    assert via.config["derived"]["dp"]["epsilon"] == pytest.approx(1.0, rel=1e-2)
    own = run_bmp(BmpConfig(shadow=config, audit=audit), tmp_path / "own")
    assert own.config["derived"]["dp"] == via.config["derived"]["dp"]
    cert = np.asarray(own.audit.certified_right)
    assert np.nanmax(cert) <= 1.0
