"""The shadow-model sweep's CPU layout (graph.layout): a timed trial of the models per device,
cached, and the same models whichever wins."""

import jax
import numpy as np
import pytest

from jaxaudit.datasets import make_csbm
from jaxaudit.graph import ShadowTraining, layout, train_shadow_models, uniform_sampler


def _graph():
    return make_csbm(jax.random.key(1), num_nodes=120, num_classes=3, num_features=16)


@pytest.mark.slow
def test_every_chunk_gives_the_same_models_and_the_trial_picks_the_fastest(monkeypatch,
                                                                           tmp_path):
    graph, sampler, cfg = _graph(), uniform_sampler(0.5), ShadowTraining(epochs=4)
    key = jax.random.key(3)
    n_dev = jax.local_device_count()
    ref = train_shadow_models(key, graph, sampler, "gcn", 8, cfg, chunk_size=n_dev)
    for k in layout.CPU_MODELS_PER_DEVICE[1:]:
        other = train_shadow_models(key, graph, sampler, "gcn", 8, cfg, chunk_size=k * n_dev)
        np.testing.assert_array_equal(other.masks, ref.masks)
        np.testing.assert_allclose(other.scores, ref.scores, rtol=1e-5, atol=1e-6)
    monkeypatch.setenv("JAXAUDIT_AUTOTUNE", "1")
    monkeypatch.setenv("JAXAUDIT_CACHE_DIR", str(tmp_path))
    seen = []
    real = layout.cpu_chunk_size

    def spy(shape, run, devices=None):
        out = real(shape, run, devices)
        seen.append(out)
        return out

    monkeypatch.setattr("jaxaudit.graph.shadow_models.cpu_chunk_size", spy)
    auto = train_shadow_models(key, graph, sampler, "gcn", 8, cfg)
    (chunk, trial), = seen
    assert trial.source == "trial" and len(trial.seconds) == len(layout.CPU_MODELS_PER_DEVICE)
    assert chunk == int(min(trial.seconds, key=trial.seconds.get).split("_")[0]) * n_dev
    fixed = train_shadow_models(key, graph, sampler, "gcn", 8, cfg, chunk_size=chunk)
    np.testing.assert_array_equal(auto.scores, fixed.scores)
    train_shadow_models(key, graph, sampler, "gcn", 8, cfg)
    assert seen[1][1].source == "cache"


def test_the_trial_is_off_in_the_tests_and_keeps_one_model_per_device(monkeypatch):
    """JAXAUDIT_AUTOTUNE=0 (the tests' default): the fixed default, nothing timed."""
    called = []
    chunk, trial = layout.cpu_chunk_size("g", lambda c, n: called.append(c))
    assert (chunk, trial.source) == (jax.local_device_count(), "off") and not called


def test_the_trial_times_several_chunks_of_many_epochs(monkeypatch, tmp_path):
    """Each candidate is one call of TRIAL_CHUNKS chunks (the chunk size times TRIAL_CHUNKS
    models), timed per model-epoch over TRIAL_EPOCHS epochs: a call's fixed cost (sampling the
    masks, scoring the nodes) must not decide, as it did over one chunk of two epochs."""
    monkeypatch.setenv("JAXAUDIT_AUTOTUNE", "1")
    monkeypatch.setenv("JAXAUDIT_CACHE_DIR", str(tmp_path))
    calls, seen_units = [], []

    def timed(fn, units):
        fn()
        seen_units.append(units)
        return {1: 3.0, 2: 1.0, 4: 2.0}[calls[-1][0] // n_dev]

    monkeypatch.setattr("jaxaudit.autotune.seconds_per_unit", timed)
    n_dev = jax.local_device_count()
    chunk, trial = layout.cpu_chunk_size("g", lambda c, n: calls.append((c, n)))
    assert layout.TRIAL_EPOCHS >= 32 and layout.TRIAL_CHUNKS >= 4
    once = [(k * n_dev, layout.TRIAL_CHUNKS * k * n_dev) for k in layout.CPU_MODELS_PER_DEVICE]
    assert calls == once * 2   # every candidate twice, in turn
    assert seen_units == [layout.TRIAL_CHUNKS * k * n_dev * layout.TRIAL_EPOCHS
                          for k in layout.CPU_MODELS_PER_DEVICE] * 2
    assert chunk == 2 * n_dev and trial.source == "trial"
