"""The per-node draws of posterior_nuts and the device count.

Every row of the count table draws from ``fold_in(key, row)`` (``bmp.driver.row_keys``, the key
rule of ``jaxaudit.runs.keys``), so the keys do not depend on the padded table size, the chunk
size or the devices. The draws themselves are not bitwise equal on 4 devices and on 1: the log
density and its gradient are (checked below), but XLA compiles the node-sharded program of a
4-device mesh differently from the 1-device one, and a last-bit difference inside the warm-up
grows chaotically along NUTS trajectories. What holds is agreement in distribution: every
node's posterior medians agree within 4 Monte Carlo standard errors (docs/bmp.md).
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from jaxaudit.bmp import driver


def _key_data_runner(xs):
    return jax.random.key_data(xs[0])  # xs = (keys, counts, ...): the keys each row is given


@pytest.mark.parametrize("partitionable", [True, False])
def test_row_keys_do_not_depend_on_the_table_size(partitionable):
    """Row i's key is fold_in(key, i) whatever the padded table size, also where
    ``split(key, n)[i]`` depends on n (``jax_threefry_partitionable=False``)."""
    before = jax.config.jax_threefry_partitionable
    jax.config.update("jax_threefry_partitionable", partitionable)
    try:
        key = jax.random.key(3)
        rows = np.tile(np.array([[1.0, 10.0, 2.0, 10.0]]), (16, 1))
        small = np.asarray(driver.run_rows(_key_data_runner, key, rows[:8]))
        large = np.asarray(driver.run_rows(_key_data_runner, key, rows))
        np.testing.assert_array_equal(small, large[:8])
        np.testing.assert_array_equal(
            large[5], np.asarray(jax.random.key_data(jax.random.fold_in(key, 5))))
    finally:
        jax.config.update("jax_threefry_partitionable", before)


def _run(script: str, devices: int) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_posterior_nuts_on_4_devices_agrees_with_1_within_mcse():
    """One key, 4 forced host devices against 1 (the process's own device count, not a subset):
    the per-row keys are identical, the log density and gradient of every lane are bitwise
    equal, and each node's medians of ε_L and ε_R agree within 4 MCSE of their difference."""
    script = """
        import json, sys, warnings, jax, numpy as np
        warnings.simplefilter("ignore")
        from jaxaudit.bmp import NutsConfig, driver, posterior_nuts
        from jaxaudit.bmp.likelihood import make_log_density
        from jaxaudit.mia.types import ErrorCounts
        from jaxaudit.sharding import vmap_chunked
        counts = ErrorCounts(fp=np.array([12, 40, 100, 160, 20, 72, 120, 4]), n0=np.full(8, 200),
                             fn=np.array([120, 80, 40, 8, 176, 48, 24, 160]), n1=np.full(8, 200))
        key = jax.random.key(3)
        keys = driver.vmapped(lambda k, c: jax.random.key_data(k))(
            (driver.row_keys(key, 8), driver.rows_as_counts(np.ones((8, 4)))))
        table = np.stack(counts, 1).astype(np.float32)
        pos = np.random.default_rng(0).normal(size=(8, 5)).astype(np.float32)
        def lp(x):
            c = ErrorCounts(*(x[0][j] for j in range(4)))
            return jax.value_and_grad(make_log_density("centered", c).logdensity_fn)(x[1])
        value, grad = vmap_chunked(lp)((table, pos))
        post = posterior_nuts(key, counts, config=NutsConfig(num_warmup=300, num_samples=400,
                                                               num_chains=2))
        med = lambda x: np.median(np.asarray(x).reshape(8, -1), axis=1).tolist()
        print(json.dumps({"devices": len(jax.devices()), "keys": np.asarray(keys).tolist(),
                          "value": np.asarray(value).tolist(), "grad": np.asarray(grad).tolist(),
                          "eps_l": med(post.epsilon_left), "eps_r": med(post.epsilon_right),
                          "mcse": np.asarray(post.mcse_median).tolist()}))
        """
    four, one = _run(script, 4), _run(script, 1)
    assert (four["devices"], one["devices"]) == (4, 1)
    assert four["keys"] == one["keys"]
    assert four["value"] == one["value"] and four["grad"] == one["grad"]
    bound = 4 * np.hypot(four["mcse"], one["mcse"])
    for name in ("eps_l", "eps_r"):
        diff = np.abs(np.subtract(four[name], one[name]))
        assert np.all(diff <= bound), (name, diff, bound)
