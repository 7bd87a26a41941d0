"""Every CPU core by default: the ``jaxaudit`` command and ``use_all_cpu_cores``.

JAX reads ``--xla_force_host_platform_device_count`` when it initialises its backend, once per
process, so every check runs in a fresh subprocess whose environment the test controls.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

FLAG = "--xla_force_host_platform_device_count"
#: XLA:CPU's YNNPACK fusions off: appended with the device count (jaxaudit._xla_flags)
YNN = "--xla_cpu_experimental_ynn_fusion_type="
#: The cores this process may use (all of os.cpu_count() unless an affinity mask restricts it).
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _run(script: str, **env_vars) -> dict:
    """Run ``script`` in a fresh interpreter with XLA_FLAGS, JAX_PLATFORMS and
    JAX_NUM_CPU_DEVICES unset unless given; return the JSON its last line prints."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "JAX_PLATFORMS", "JAX_NUM_CPU_DEVICES")}
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ``python -m jaxaudit`` (no command: prints the help and exits 0), then what JAX sees
COMMAND = """
    import json, os, runpy, sys
    sys.argv = ["jaxaudit"]
    try:
        runpy.run_module("jaxaudit", run_name="__main__")
    except SystemExit as stop:
        assert stop.code == 0, stop.code
    from jaxaudit.sharding import cpu_core_count
    result = {"flags": os.environ.get("XLA_FLAGS"), "cores": cpu_core_count()}
    if os.environ.get("JAX_PLATFORMS", "cpu") == "cpu":
        import jax
        result["devices"] = len(jax.devices())
    print(json.dumps(result))
"""


@pytest.mark.slow
@pytest.mark.parametrize("platforms", [None, "cpu"])
def test_command_uses_one_device_per_core(platforms):
    env = {} if platforms is None else {"JAX_PLATFORMS": platforms}
    result = _run(COMMAND, **env)
    assert result["cores"] == CORES
    assert result["flags"] == f"{FLAG}={CORES} {YNN}"  # and XLA accepted both: JAX started
    assert result["devices"] == CORES


def test_command_appends_to_existing_xla_flags():
    result = _run(COMMAND, XLA_FLAGS="--xla_dump_hlo_as_text=false")
    assert result["flags"] == f"--xla_dump_hlo_as_text=false {FLAG}={result['cores']} {YNN}"
    assert result["devices"] == result["cores"]


@pytest.mark.slow
def test_command_respects_the_users_choice():
    result = _run(COMMAND, XLA_FLAGS=f"{FLAG}=3")
    assert result["flags"] == f"{FLAG}=3" and result["devices"] == 3
    result = _run(COMMAND, JAX_PLATFORMS="tpu")  # another platform: XLA_FLAGS left alone
    assert result["flags"] is None and "devices" not in result


@pytest.mark.slow
def test_main_called_from_python_leaves_the_environment_alone():
    result = _run("""
        import json, os
        from jaxaudit.cli.main import main
        assert main([]) == 0
        flags = os.environ.get("XLA_FLAGS")
        import jax
        print(json.dumps({"flags": flags, "devices": len(jax.devices())}))
    """)
    assert result == {"flags": None, "devices": 1}


@pytest.mark.slow
def test_use_all_cpu_cores_before_jax_starts():
    script = """
        import json, os, warnings
        import jax
        from jaxaudit.sharding import cpu_core_count, use_all_cpu_cores
        warnings.simplefilter("error")
        ok = use_all_cpu_cores()
        print(json.dumps({"ok": ok, "devices": len(jax.devices()), "cores": cpu_core_count(),
                          "again": use_all_cpu_cores()}))
    """
    result = _run(script)
    assert result["ok"] and result["again"] and result["devices"] == result["cores"]
    result = _run(script, XLA_FLAGS=f"{FLAG}=3")
    assert not result["ok"] and result["devices"] == 3


def test_use_all_cpu_cores_too_late_warns():
    result = _run("""
        import json, warnings
        import jax
        import jaxaudit.sharding as sharding
        from jaxaudit.cli.main import main
        jax.devices()  # the backend starts with one CPU device
        sharding.cpu_core_count = lambda: 4  # as on a 4-core machine, whatever this one has
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok = sharding.use_all_cpu_cores()
            assert main([], all_cpu_cores=True) == 0  # the command's default says so too
        print(json.dumps({"ok": ok, "devices": len(jax.devices()),
                          "warnings": [(w.category.__name__, str(w.message)) for w in caught]}))
    """)
    assert result["ok"] is False and result["devices"] == 1
    assert len(result["warnings"]) == 2
    for category, message in result["warnings"]:
        assert category == "RuntimeWarning"
        assert "too late" in message and "1 CPU device" in message and f"{FLAG}=4" in message


@pytest.mark.slow
def test_canary_runs_default_chunk_splits_runs_over_two_devices():
    """canary_runs's default chunk_size on CPU is one run per device at a time (a run per
    core beats vmapping all runs together, benchmarks/README.md), rounded up to the device
    count by vmap_chunked,
    so on two host devices both devices compute runs; the scores match the one-device path."""
    result = _run("""
        import json
        import jax, numpy as np
        import jaxaudit.dpsgd.canary_training as runs
        from jaxaudit.dpsgd import DpsgdConfig, LogisticRegression, canary_runs

        shards = []
        plain = runs.vmap_chunked

        def spy(fn, **kw):
            mapped = plain(fn, **kw)

            def call(*args):
                out = mapped(*args)
                shards.append((kw.get("chunk_size"),
                               sorted({s.device.id for s in out.addressable_shards}),
                               [int(s.data.shape[0]) for s in out.addressable_shards]))
                return out
            return call

        runs.vmap_chunked = spy
        rng = np.random.default_rng(0)
        x = rng.random((12, 8, 8)).astype(np.float32)
        y = rng.integers(0, 10, 12).astype(np.int32)
        model = LogisticRegression()
        params = model.init(jax.random.key(0), x[:1])
        cfg = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=3, learning_rate=0.1)
        canary = (np.zeros((8, 8), np.float32), 3)
        multi = canary_runs(jax.random.key(1), model, params, (x, y), canary, cfg, num_runs=3)
        single = canary_runs(jax.random.key(1), model, params, (x, y), canary, cfg, num_runs=3,
                             devices=jax.devices()[:1])
        print(json.dumps({"devices": len(jax.devices()), "calls": shards,
                          "max_diff": float(max(np.abs(a - b).max()
                                                for a, b in zip(multi, single)))}))
    """, XLA_FLAGS=f"{FLAG}=2", JAX_PLATFORMS="cpu")
    assert result["devices"] == 2
    default_call, single_call = result["calls"]
    assert default_call[:2] == [1, [0, 1]]  # chunks of one run per device, both devices
    assert sum(default_call[2]) in (6, 12)   # 2R = 6 runs: sharded 3 + 3 or gathered on each
    assert single_call[1:] == [[0], [6]]
    assert result["max_diff"] <= 1e-5


def test_cpu_flags_keep_the_users_settings(monkeypatch):
    import jaxaudit._xla_flags as xf

    assert xf.with_cpu_flags("", 4) == f"{FLAG}=4 {YNN}"
    assert xf.with_cpu_flags("", None) == YNN
    # the user's own device count and YNNPACK setting win
    assert xf.with_cpu_flags(f"{FLAG}=3", 4) == f"{FLAG}=3 {YNN}"
    own = "--xla_cpu_experimental_ynn_fusion_type=individual_dot"
    assert xf.with_cpu_flags(own, 2) == f"{own} {FLAG}=2"
    # a jaxlib older than the flag (XLA would abort on it) or none installed: no YNNPACK flag
    monkeypatch.setattr(xf, "_jaxlib_version", lambda: (0, 9))
    assert xf.with_cpu_flags("", 2) == f"{FLAG}=2"
    monkeypatch.setattr(xf, "_jaxlib_version", lambda: ())
    assert xf.with_cpu_flags("", 2) == f"{FLAG}=2"
