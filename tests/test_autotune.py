"""The timed trial that picks a CPU configuration (jaxaudit.autotune), and the canary runs' use of
it (dpsgd.canary_training.cpu_layout): the same runs whichever layout wins."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit import autotune
from jaxaudit.dpsgd import MLP, DpsgdConfig, canary_runs
from jaxaudit.dpsgd import canary_training as ct


@pytest.fixture
def trial_on(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXAUDIT_AUTOTUNE", "1")
    monkeypatch.setenv("JAXAUDIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_choose_times_every_candidate_then_caches(trial_on):
    timed = []

    def measure(name):
        timed.append(name)
        return {"a": 3.0, "b": 1.0, "c": 2.0}[name]

    first = autotune.choose("work", "shape1", ["a", "b", "c"], measure, "a")
    # every candidate twice, in turn (a slow spell hits one pass, not every figure of one)
    assert first.choice == "b" and first.source == "trial" and timed == ["a", "b", "c"] * 2
    assert first.seconds == {"a": 3.0, "b": 1.0, "c": 2.0}
    again = autotune.choose("work", "shape1", ["a", "b", "c"], measure, "a")
    assert again.choice == "b" and again.source == "cache" and len(timed) == 6
    other = autotune.choose("work", "shape2", ["a", "b", "c"], lambda n: -ord(n), "a")
    assert other.choice == "c" and other.source == "trial"
    data = json.loads(autotune.cache_file().read_text())
    assert data[autotune.machine_fingerprint()]["work"]["shape1"]["choice"] == "b"


def test_choose_refines_around_the_first_stage_winner_and_caches_its_choice(trial_on):
    """The second stage times only refine(winner); the fastest of all timed is chosen, and a
    cached second-stage choice is accepted."""
    times = {"a": 2.0, "b": 1.0, "a4": 0.1, "b4": 0.5, "b8": 3.0}
    timed = []

    def measure(name):
        timed.append(name)
        return times[name]

    def refine(name):
        return {"a": ["a4"], "b": ["b4", "b8", "a"]}[name]

    first = autotune.choose("work", "s", ["a", "b"], measure, "a", refine=refine, passes=1)
    # a4 is the fastest of all but is never timed: a lost the first stage
    assert timed == ["a", "b", "b4", "b8"] and first.choice == "b4"
    assert first.seconds == {"a": 2.0, "b": 1.0, "b4": 0.5, "b8": 3.0}
    again = autotune.choose("work", "s", ["a", "b"], measure, "a", refine=refine)
    assert again.choice == "b4" and again.source == "cache" and len(timed) == 4


def test_choose_keeps_each_candidates_fastest_pass(trial_on):
    """Two passes in turn: a candidate slowed in one pass keeps its figure from the other."""
    figures = {"a": iter([5.0, 1.0]), "b": iter([2.0, 2.5])}   # a slowed in the first pass
    trial = autotune.choose("work", "passes", ["a", "b"], lambda n: next(figures[n]), "b")
    assert trial.choice == "a" and trial.seconds == {"a": 1.0, "b": 2.0}


def test_choose_off_default_and_corrupt_cache(trial_on, monkeypatch):
    autotune.cache_file().parent.mkdir(parents=True, exist_ok=True)
    autotune.cache_file().write_text("{not json")
    assert autotune.choose("w", "s", ["a", "b"], lambda n: {"a": 2, "b": 1}[n], "a").choice == "b"
    assert json.loads(autotune.cache_file().read_text())  # rewritten
    monkeypatch.setenv("JAXAUDIT_AUTOTUNE", "off")
    off = autotune.choose("w", "s2", ["a", "b"], lambda n: pytest.fail("timed"), "a")
    assert off == autotune.Trial("a", "off", {}, 0.0)
    monkeypatch.setenv("JAXAUDIT_AUTOTUNE", "1")
    assert autotune.choose("w", "s3", ["a"], lambda n: pytest.fail("timed"), "a").source == "default"
    with pytest.raises(ValueError, match="default"):
        autotune.choose("w", "s4", ["a", "b"], lambda n: 1.0, "z")


def _problem():
    model = MLP(hidden_dims=(6,), num_classes=3)
    kx, ky, kp = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, (7, 5))
    y = jax.random.randint(ky, (7,), 0, 3)
    params = model.init(kp, x[:1])
    cfg = DpsgdConfig(noise_multiplier=0.7, clip_norm=0.5, steps=3, learning_rate=0.4)
    return model, params, (x, y), (jnp.zeros(5), 1), cfg


@pytest.mark.slow
def test_every_cpu_layout_gives_the_same_runs():
    """Blocks of one example or the whole batch, one or four runs per device: the same scores.
    The block size reorders the per-example work inside a step (float tolerance); the runs per
    device do not change a run: with the same block size the scores agree to 1e-6 relative
    (XLA may fuse a vmapped batch of runs differently, so not always to the bit)."""
    model, params, data, canary, cfg = _problem()
    key = jax.random.key(1)
    n_dev = jax.local_device_count()
    scores = {}
    for name in ct.CPU_LAYOUTS:
        c, chunk = ct._layout(name, cfg, data[0].shape[0] + 1, n_dev)
        scores[name] = np.concatenate(canary_runs(key, model, params, data, canary, c,
                                                  num_runs=5, chunk_size=chunk))
    ref = scores[ct.DEFAULT_CPU_LAYOUT]
    for name, s in scores.items():
        np.testing.assert_allclose(s, ref, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(scores["blocks1_runs4_per_device"],
                               scores["blocks1_run_per_device"], rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_canary_runs_use_the_trial_and_its_layout(trial_on):
    """Without a chunk size or block size on CPU, canary_runs times the layouts once (cached)
    and computes with the fastest: its scores are those of that layout given explicitly, to the
    bit."""
    model, params, data, canary, cfg = _problem()
    layout = ct.cpu_layout(model, params, data, canary, cfg)
    assert layout.trial.source == "trial" and layout.name in ct.CPU_LAYOUTS
    # two stages: both block sizes at one run per device, then four runs at the faster one
    first = {"blocks1_run_per_device", "batch_run_per_device"}
    winner = min(first, key=layout.trial.seconds.get)
    assert set(layout.trial.seconds) == first | {winner.replace("_run_", "_runs4_")}
    assert layout.name == min(layout.trial.seconds, key=layout.trial.seconds.get)
    assert ct.cpu_layout(model, params, data, canary, cfg).trial.source == "cache"
    key = jax.random.key(2)
    auto = canary_runs(key, model, params, data, canary, cfg, num_runs=4)
    fixed = canary_runs(key, model, params, data, canary, layout.config, num_runs=4,
                        chunk_size=layout.chunk_size)
    np.testing.assert_array_equal(np.concatenate(auto), np.concatenate(fixed))


def test_choose_survives_a_cache_whose_levels_are_not_dicts(trial_on):
    machine = autotune.machine_fingerprint()
    for content in ({machine: ["x"]}, {machine: {"work": "x"}},
                    {machine: {"work": {"shape": {"choice": "b", "seconds": [1]}}}}):
        autotune.cache_file().write_text(json.dumps(content))
        trial = autotune.choose("work", "shape", ["a", "b"], {"a": 2.0, "b": 1.0}.get, "a")
        assert trial.choice == "b"
    data = json.loads(autotune.cache_file().read_text())
    assert data[machine]["work"]["shape"]["choice"] == "b"


@pytest.mark.parametrize("order", [["a", "b"], ["b", "a"]])
def test_a_nan_timing_is_never_chosen_and_the_cache_stays_strict_json(trial_on, order):
    trial = autotune.choose("work", "nan", order, {"a": float("nan"), "b": 1.0}.get, "a")
    assert trial.choice == "b"

    def no_constants(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(autotune.cache_file().read_text(), parse_constant=no_constants)
    assert data[autotune.machine_fingerprint()]["work"]["nan"]["seconds"]["a"] is None


def test_seconds_per_unit_warms_up_then_times_up_to_repeats_or_enough_seconds(monkeypatch):
    """One untimed warm-up call, then timed calls until `repeats` or `enough` timed seconds;
    the fastest timed call counts."""
    clock = iter(range(0, 1000, 3))   # every timed call "takes" 3 s
    monkeypatch.setattr(autotune.time, "perf_counter", lambda: float(next(clock)))
    calls = []
    assert autotune.seconds_per_unit(lambda: calls.append(1), units=2, repeats=3,
                                     enough=100.0) == 1.5
    assert len(calls) == 4                       # warm-up + 3
    calls.clear()
    assert autotune.seconds_per_unit(lambda: calls.append(1), units=3, repeats=3,
                                     enough=2.0) == 1.0
    assert len(calls) == 2                       # warm-up + 1: 3 s timed ≥ 2 s


def test_seconds_per_unit_keeps_the_fastest_call(monkeypatch):
    """A call slowed by interference (9 s among 3 s calls) does not move the figure."""
    ticks = iter([0.0, 9.0, 10.0, 13.0, 20.0, 23.0])   # timed calls: 9, 3, 3 s
    monkeypatch.setattr(autotune.time, "perf_counter", lambda: next(ticks))
    assert autotune.seconds_per_unit(lambda: None, units=1, repeats=3, enough=100.0) == 3.0


def test_canary_trial_times_looped_two_step_runs_over_chunks_in_two_stages(trial_on, monkeypatch):
    """Trial runs have min(T, TRIAL_STEPS) steps at unroll 1 (whatever the job's unroll), at
    least TRIAL_CHUNKS chunks and TRIAL_RUN_STEPS run-steps per call; the second stage times four runs per device at the first
    stage's faster block size; the chosen layout keeps the job's T and unroll."""
    model, params, data, canary, cfg = _problem()
    seen = []
    real_call = ct._runs_call

    def spy_call(key, model, init_params, inputs, labels, canary, config, num_runs, chunk, devices):
        seen.append((config.steps, config.unroll, config.block_size, 2 * num_runs // chunk))
        return real_call(key, model, init_params, inputs, labels, canary, config, num_runs,
                         chunk, devices)

    monkeypatch.setattr(ct, "_runs_call", spy_call)
    # two passes in turn: blocks of one, whole batch (twice), then whole batch x4 (twice)
    figures = iter([2.0, 1.0, 2.0, 1.0, 0.5, 0.5])
    monkeypatch.setattr(autotune, "seconds_per_unit", lambda fn, units: next(figures))
    n_ex, n_dev = data[0].shape[0] + 1, jax.local_device_count()

    def chunks(runs_per_device):   # at least TRIAL_CHUNKS chunks and TRIAL_RUN_STEPS run-steps
        chunk = runs_per_device * n_dev
        return max(ct.TRIAL_CHUNKS, -(-ct.TRIAL_RUN_STEPS // (chunk * ct.TRIAL_STEPS)))

    layout = ct.cpu_layout(model, params, data, canary, cfg._replace(steps=50, unroll=7))
    stage1 = [(ct.TRIAL_STEPS, 1, 1, chunks(1)), (ct.TRIAL_STEPS, 1, n_ex, chunks(1))]
    assert seen == stage1 * 2 + [(ct.TRIAL_STEPS, 1, n_ex, chunks(4))] * 2
    assert all(c * r * n_dev * ct.TRIAL_STEPS >= ct.TRIAL_RUN_STEPS
               for c, r in ((chunks(1), 1), (chunks(4), 4)))
    assert layout.name == "batch_runs4_per_device"
    assert (layout.config.steps, layout.config.unroll, layout.config.block_size) == (50, 7, n_ex)
    seen.clear()
    figures = iter([1.0, 2.0, 1.0, 2.0, 3.0, 3.0])
    short = ct.cpu_layout(model, params, data, canary, cfg._replace(steps=1))
    assert [s[0] for s in seen] == [1] * 6 and short.name == "blocks1_run_per_device"
    assert list(short.trial.seconds) == ["blocks1_run_per_device", "batch_run_per_device",
                                         "blocks1_runs4_per_device"]
