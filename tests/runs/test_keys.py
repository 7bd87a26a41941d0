"""The one key rule: unit u of root key k uses fold_in(k, u); streams never meet units; a
shadow-model sweep is the same however it is chunked."""

import jax
import numpy as np
import pytest

from jaxaudit.datasets import make_csbm
from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler
from jaxaudit.runs import stream_key, unit_key, unit_keys
from jaxaudit.runs.keys import MAX_UNITS, STREAMS

ROOT, K3 = jax.random.key(0), jax.random.key(3)


def _data(key):
    return np.asarray(jax.random.key_data(key))


def test_unit_keys_follow_the_rule():
    keys = unit_keys(jax.random.key(7), 5, 3)
    for i, u in enumerate(range(5, 8)):
        expected = jax.random.fold_in(jax.random.key(7), u)
        np.testing.assert_array_equal(_data(keys[i]), _data(expected))
        np.testing.assert_array_equal(_data(unit_key(jax.random.key(7), u)), _data(expected))


def test_streams_are_distinct_from_each_other_and_from_units():
    streams = [_data(stream_key(ROOT, s)).tolist() for s in STREAMS]
    units = _data(unit_keys(ROOT, 0, 1000)).tolist()
    assert len({tuple(s) for s in streams}) == len(STREAMS)
    assert not {tuple(s) for s in streams} & {tuple(u) for u in units}


@pytest.mark.parametrize("call, match", [
    (lambda: unit_key(ROOT, MAX_UNITS), "unit must be < 2"),
    (lambda: unit_key(0, 0), "key must be a JAX PRNG key"),
    (lambda: unit_keys(ROOT, MAX_UNITS - 1, 2), "units must be < 2"),
    (lambda: stream_key(ROOT, "nope"), "stream must be one of"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.slow
def test_shadow_sweep_independent_of_chunking():
    graph = make_csbm(jax.random.key(1), num_nodes=60, num_classes=3, num_features=8)
    sampler = uniform_sampler(0.5)
    whole = train_shadow_models(unit_keys(K3, 0, 4), graph, sampler, "gcn", 4, ShadowTraining(epochs=3))
    parts = [train_shadow_models(unit_keys(K3, s, 2), graph, sampler, "gcn", 2, ShadowTraining(epochs=3))
             for s in (0, 2)]
    np.testing.assert_array_equal(whole.masks, np.concatenate([p.masks for p in parts]))
    np.testing.assert_allclose(whole.scores, np.concatenate([p.scores for p in parts]),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one per model"):
        train_shadow_models(unit_keys(K3, 0, 3), graph, sampler, "gcn", 4, ShadowTraining(epochs=3))
