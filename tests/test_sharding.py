"""vmap_chunked: equal to plain vmap for every chunk size, and really sharded over 8 devices."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.sharding import vmap_chunked


def item(key, scale):
    x = jax.random.normal(key, (16,))
    return {"sum": jnp.sum(x) * scale, "vec": jnp.tanh(x)}


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [None, 1, 3, 10, 64])
def test_vmap_chunked_equals_vmap(chunk_size):
    keys = jax.random.split(jax.random.key(0), 10)
    expected = jax.vmap(item, in_axes=(0, None))(keys, 2.0)
    got = vmap_chunked(item, chunk_size=chunk_size)(keys, 2.0)
    for k in expected:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-6, atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="chunk_size"):
        vmap_chunked(item, chunk_size=0)
    with pytest.raises(ValueError, match="leading batch axis"):
        vmap_chunked(lambda x: x)({"a": jnp.zeros(3), "b": jnp.zeros(4)})


@pytest.mark.slow
def test_eight_forced_host_devices_match_one_device():
    script = textwrap.dedent(
        """
        import json, jax, jax.numpy as jnp, numpy as np
        from jaxaudit.sharding import vmap_chunked
        def item(key, scale):
            x = jax.random.normal(key, (16,))
            return {"sum": jnp.sum(x) * scale, "vec": jnp.tanh(x)}
        keys = jax.random.split(jax.random.key(0), 21)
        multi = vmap_chunked(item, chunk_size=8)(keys, 2.0)
        single = vmap_chunked(item, chunk_size=8, devices=jax.devices()[:1])(keys, 2.0)
        print(json.dumps({
            "devices": len(jax.devices()),
            "max_diff": float(max(np.abs(np.asarray(multi[k]) - np.asarray(single[k])).max()
                                  for k in multi)),
            "shards": len({s.device.id for s in multi["vec"].addressable_shards}),
        }))
        """
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["devices"] == 8
    assert result["shards"] == 8  # the output really lives on the 8 devices
    assert result["max_diff"] <= 1e-6
