"""Vmap_chunked and train_shadow_models in a two-process ``jax.distributed`` program.

Two CPU processes on 127.0.0.1 (one device each, gloo collectives) run tests/_distributed_worker.py;
every process must get the results of a single-process run, bit for bit (the per-device
arithmetic is the same: one item per device and chunk here, one item per chunk in the
reference), refuse inputs that differ between processes, and leave the writing of a run folder
to process 0. The TPU pod recipe is in docs/scaling.md ("Multi-process JAX").
"""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.runs import load_results

WORKER = Path(__file__).with_name("_distributed_worker.py")


def _gloo_missing() -> str | None:
    try:
        from jax._src.lib import _jax
    except ImportError as err:
        return f"this jax build has no _jax extension ({err})"
    if not hasattr(_jax, "make_gloo_tcp_collectives"):
        return f"jax {jax.__version__} was built without gloo CPU collectives"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _item(key, scale):
    return {"draw": jax.random.normal(key, (3,)) * scale, "key": key}


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """Run the worker as processes 0 and 1; their saved results."""
    reason = _gloo_missing()
    if reason:
        pytest.skip(reason)
    out, run_dir = tmp_path_factory.mktemp("distributed"), tmp_path_factory.mktemp("run") / "r"
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "",
                   os.environ.get("XLA_FLAGS", "")).strip()
    # one CPU device per process, Eigen single-threaded (the CI cores are shared)
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"{flags} --xla_cpu_multi_thread_eigen=false".strip())
    for attempt in range(2):  # a second port if another program took the first meanwhile
        codes, logs = _run_workers(env, _free_port(), out, run_dir)
        clash = any("already in use" in log for log in logs)
        if any(codes) and not (clash and attempt == 0):
            failed = codes.index(next(c for c in codes if c))
            raise AssertionError(f"process {failed} failed:\n{logs[failed][-4000:]}")
        if not any(codes):
            break
    results = [dict(np.load(out / f"p{i}.npz")) for i in range(2)]
    # The single-process reference of the shadow models runs under the workers' XLA flags: a
    # multi-threaded Eigen in this process splits the GCN's matmuls otherwise and moves the
    # scores by an ulp, which is not what the test is about.
    subprocess.run([sys.executable, "-c", _SHADOW_REFERENCE, str(out / "ref.npz")], env=env,
                   check=True, timeout=300)
    return results, run_dir, dict(np.load(out / "ref.npz"))


_SHADOW_REFERENCE = """
import sys
import jax, numpy as np
from jaxaudit.datasets import make_csbm
from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler
graph = make_csbm(jax.random.key(1), num_nodes=24, num_classes=2, num_features=4)
ref = train_shadow_models(jax.random.key(2), graph, uniform_sampler(0.5), "gcn", 3,
                          ShadowTraining(epochs=2), devices=jax.devices()[:1])
np.savez(sys.argv[1], masks=np.asarray(ref.masks), scores=np.asarray(ref.scores))
"""


def _run_workers(env: dict, port: int, out: Path, run_dir: Path) -> tuple[list[int], list[str]]:
    """Start processes 0 and 1; their exit codes and output (killed after 120 s)."""
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), str(port), str(out),
                               str(run_dir)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(2)]
    logs: list[str] = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [int(p.returncode) for p in procs], logs + [""] * (2 - len(logs))


@pytest.mark.slow
def test_vmap_chunked_over_two_processes_equals_one_process(two_processes):
    results, _, _ = two_processes
    keys = jax.random.split(jax.random.key(0), 5)  # 5 items, chunks of 2: padding included
    expected = jax.vmap(_item, in_axes=(0, None))(keys, jnp.float32(2.0))
    for got in results:
        assert bool(got["local"])  # every process holds the whole result itself
        np.testing.assert_array_equal(got["draw"], np.asarray(expected["draw"]))
        np.testing.assert_array_equal(got["key_data"],
                                      np.asarray(jax.random.key_data(expected["key"])))


@pytest.mark.slow
def test_train_shadow_models_over_two_processes_equals_one_process(two_processes):
    results, _, ref = two_processes
    for got in results:
        np.testing.assert_array_equal(got["masks"], ref["masks"])
        np.testing.assert_array_equal(got["scores"], ref["scores"])


@pytest.mark.slow
def test_inputs_that_differ_between_processes_are_refused_on_every_process(two_processes):
    results, _, _ = two_processes
    for got in results:
        message = str(got["mismatch"])
        assert "xs must be the same on every JAX process" in message, message
        assert "[1]" in message


@pytest.mark.slow
def test_only_process_zero_writes_and_every_process_gets_every_chunk(two_processes):
    results, run_dir, _ = two_processes
    for name in ("a", "b"):
        keys = jax.random.split(jax.random.fold_in(jax.random.key(5), ord(name)), 3)
        expected = np.asarray(jax.vmap(_item, in_axes=(0, None))(keys, jnp.float32(1.0))["draw"])
        for got in results:
            np.testing.assert_array_equal(got[f"chunk_{name}"], expected)
            np.testing.assert_array_equal(got[f"resumed_{name}"], expected)  # loaded, sent
    assert not any(bool(got["p1_folder_exists"]) for got in results)
    for got in results:  # "c" held by a live claim: skipped by every process together
        assert list(got["partial"]) == ["a", "b"]
    stored = load_results(run_dir)
    assert stored.missing == ["c"] and sorted(stored.chunks) == ["a", "b"]
    assert not (run_dir / "claims").exists()


def test_in_one_process_the_helpers_change_nothing(tmp_path):
    from jaxaudit.runs.files import atomic_write_bytes, jax_process
    from jaxaudit.runs.progress import _broadcast_bytes as broadcast_bytes

    assert jax_process() == (0, 1)
    assert broadcast_bytes(b"\x00chunk") == b"\x00chunk"
    with pytest.raises(ValueError, match="data"):
        broadcast_bytes(None)
    atomic_write_bytes(tmp_path / "f", b"written")  # process 0 of 1 writes
    assert (tmp_path / "f").read_bytes() == b"written"
