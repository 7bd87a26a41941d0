"""Canary runs: R private trainings with the canary ("in") and R without ("out"), one vmapped call.

Add/remove neighbours D = D⁻ ∪ {canary}. Every run starts from the same fixed initialisation
(worst-case: pretrained, :func:`jaxaudit.dpsgd.pretrain`), trains with DP-GD (or Poisson DP-SGD)
for T steps and is observed through one scalar, the canary's score −CE(canary) on the final
model (Annamalai & De Cristofaro 2024, black-box threat model).

Shapes are fixed in both worlds: the canary is always the last row of the batch, with membership
weight 1 ("in") or 0 ("out"), so both worlds are the same compiled program and the im2col
patches of the data are computed once and shared by all runs.

References:
  Annamalai & De Cristofaro, NeurIPS 2024, arXiv 2405.14106.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_chunk_size,
    check_finite,
    check_integer,
    check_key,
    check_labels,
    is_traced,
)
from jaxaudit.dpsgd.config import DpsgdConfig, check_dpsgd_config
from jaxaudit.dpsgd.ghost import _per_example_losses
from jaxaudit.dpsgd.models import fast_apply
from jaxaudit.dpsgd.private_step import make_private_step
from jaxaudit.sharding import vmap_chunked

__all__ = ["Layout", "ParamsInit", "canary_runs", "cpu_layout", "train_run", "canary_score"]


@runtime_checkable
class ParamsInit(Protocol):
    """``init(key) -> params``: a fresh random initialisation per run (instead of one fixed
    parameter pytree shared by every run)."""

    def __call__(self, key: jax.Array) -> Any: ...


def canary_score(model: nn.Module, params: Any, canary: tuple[ArrayLike, ArrayLike]) -> jax.Array:
    """−cross-entropy of the canary (input, label) under ``params`` (a scalar)."""
    x, y = canary
    logits = fast_apply(model, params, jnp.asarray(x)[None])
    return -_per_example_losses(logits, jnp.asarray(y, jnp.int32)[None])[0]


def _build_run(model, config, num_private, init=None):
    """One training run as a pure function
    ``run((key, in_flag), features, labels, params0, canary, noise_multiplier)``.

    The noise multiplier is a traced argument, so one compilation serves every ε of a sweep.
    With a callable ``init``, each run draws its own initial parameters ``init(k)`` (``params0``
    is then ignored).
    """
    q = config.sampling_rate
    normalizer = max(q * num_private, 1e-12)

    def run(item, features, labels, params0, canary, noise_multiplier):
        _, init_state, step = make_private_step(
            model, config._replace(noise_multiplier=noise_multiplier), normalizer=normalizer)
        key, in_flag = item
        if isinstance(init, ParamsInit):
            key, k_init = jax.random.split(key)
            params0 = init(k_init)
        member = jnp.ones(labels.shape, jnp.float32).at[-1].set(in_flag.astype(jnp.float32))

        def body(carry, k):
            params, state = carry
            if q < 1.0:
                k, k_sample = jax.random.split(k)
                mask = member * jax.random.bernoulli(k_sample, q, member.shape)
            else:
                mask = member
            return step(k, params, state, features, labels, mask), None

        (params, _), _ = jax.lax.scan(body, (params0, init_state(params0)),
                                      jax.random.split(key, config.steps), unroll=config.unroll)
        return canary_score(model, params, canary)

    prepare = make_private_step(model, config, normalizer=normalizer).prepare
    return prepare, run


@functools.lru_cache(maxsize=32)
def _compiled(model, config, num_private, init, chunk_size, devices):
    """(prepare, jitted single run, vmap_chunked runs), cached so repeated calls do not recompile
    (``config`` with σ = 0: σ is an argument of the compiled run)."""
    prepare, run = _build_run(model, config, num_private, init=init)
    mapped = vmap_chunked(run, chunk_size=chunk_size, devices=None if devices is None else list(devices))
    return jax.jit(prepare), jax.jit(run), mapped


def _check(model, private_data, canary, num_runs, config):
    config = check_dpsgd_config(config)
    inputs, labels = (np.asarray(a) for a in private_data)
    check_finite("private_data inputs", inputs)
    if labels.ndim != 1 or labels.shape[0] != inputs.shape[0] or labels.shape[0] < 1:
        raise ValueError(f"private_data labels must have shape ({inputs.shape[0]},), got {labels.shape}")
    num_classes = getattr(model, "num_classes", None)
    check_labels("private_data labels", labels, num_classes)
    cx, cy = canary
    if np.shape(cx) != inputs.shape[1:]:
        raise ValueError(f"canary input must have shape {inputs.shape[1:]}, got {np.shape(cx)}")
    check_finite("canary input", cx)
    if np.ndim(cy) != 0:
        raise ValueError(f"canary label must be a scalar, got shape {np.shape(cy)}")
    check_labels("canary label", cy, num_classes)
    check_integer("num_runs", num_runs, minimum=1)
    return inputs, labels, config


def _init_fn(init_params: Any) -> Any:
    """The per-run initialiser (a hashable :class:`ParamsInit`) or None for shared params."""
    return init_params if isinstance(init_params, ParamsInit) else None


def _run_keys(key: jax.Array, num_runs: int) -> jax.Array:
    """The 2R run keys (R "in" runs, then R "out" runs) from one key or from R unit keys."""
    if not jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(jnp.asarray(key, jnp.uint32))  # raw uint32 key data (jax.random.PRNGKey)
    if key.ndim == 0:
        return jax.random.split(key, 2 * num_runs)
    if key.shape != (num_runs,):
        raise ValueError(f"key must be one PRNG key or num_runs = {num_runs} unit keys (one per "
                         f"pair of runs), got a key array of shape {key.shape}")
    pairs = jax.vmap(jax.random.split)(key)  # unit u: (key of its "in" run, of its "out" run)
    return jnp.concatenate([pairs[:, 0], pairs[:, 1]])


#: CPU layouts of a canary run tried by :func:`cpu_layout`: name -> (block size, runs at once).
#: "batch" is the whole batch in one ghost-clipping block; runs at once are per device (rounded
#: up to a multiple of the device count by :func:`jaxaudit.sharding.vmap_chunked`).
CPU_LAYOUTS: dict[str, tuple[int | str, int]] = {
    "blocks1_run_per_device": (1, 1), "batch_run_per_device": ("batch", 1),
    "blocks1_runs4_per_device": (1, 4), "batch_runs4_per_device": ("batch", 4)}
#: The layout without a trial (``JAXAUDIT_AUTOTUNE=0``): one run per device, with the block size
#: of :func:`jaxaudit.dpsgd.ghost.default_block_size` (1 with several devices, the whole batch on
#: one); the fastest on the AVX-512 machines.
DEFAULT_CPU_LAYOUT = "blocks1_run_per_device"
#: DP-GD steps of each run the trial times (compilation does not depend on T: ``lax.scan``).
#: The trial's runs are a scan of TRIAL_STEPS one-step iterations (``unroll=1``), a loop as the
#: job's is. The job's own unroll factor is left out. On the 2-core Zen 5 each layout's job at
#: ``unroll=10`` ran within 6% of its ``unroll=1`` cost per step, in the same order, while a
#: ten-step unrolled body tripled each compilation (8.5 s of wall time). A short fully unrolled
#: program misled: two unrolled steps timed the whole batch at 3.21 ms per run-step, against 4.54
#: in the job (``benchmarks/README.md``).
TRIAL_STEPS = 2
#: Chunks of runs in each timed call, at least, so that the trial's program maps over chunks as a
#: job's does. The trial times the compiled call alone: the inputs (the shared im2col patches,
#: the run keys) are prepared beforehand, as a job prepares them once.
TRIAL_CHUNKS = 2
#: Run-steps in each timed call, at least (more chunks where a chunk holds few runs). A call
#: still has a fixed cost inside the program (each run's initial state and canary score, the map
#: over chunks): with one run per chunk on one device, four run-steps per call timed the whole
#: batch at 8.19 ms per run-step, 32 at 6.12–6.34, against 5.97 in the job (YNNPACK fusions on).
TRIAL_RUN_STEPS = 32


def _refine_layout(name: str) -> list[str]:
    """The trial's second stage: four runs per device at the block size that won with one."""
    return [name.replace("_run_per_device", "_runs4_per_device")] if "_run_per_device" in name else []


class Layout(NamedTuple):
    """The CPU layout :func:`cpu_layout` chose (:class:`jaxaudit.autotune.Trial` in ``trial``):
    ``config`` with its ``block_size`` set, and ``chunk_size`` for :func:`canary_runs`."""

    name: str
    config: DpsgdConfig
    chunk_size: int
    trial: Any

    @property
    def config_and_chunk(self) -> tuple[DpsgdConfig, int]:
        return self.config, self.chunk_size


def _layout(name: str, config: DpsgdConfig, num_examples: int, num_devices: int
            ) -> tuple[DpsgdConfig, int]:
    block, per_device = CPU_LAYOUTS[name]
    block_size = num_examples if block == "batch" else int(block)
    return config._replace(block_size=block_size), per_device * num_devices


def cpu_layout(model: nn.Module, init_params: Any | ParamsInit,
               private_data: tuple[ArrayLike, ArrayLike], canary: tuple[ArrayLike, ArrayLike],
               config: DpsgdConfig, *, devices: Sequence[jax.Device] | None = None) -> Layout:
    """The fastest CPU layout of :func:`canary_runs` for this model, data shape and machine, by a
    timed trial (:mod:`jaxaudit.autotune`; cached per machine and shape, off with
    ``JAXAUDIT_AUTOTUNE=0``).

    Candidates (:data:`CPU_LAYOUTS`): ghost clipping in blocks of one example or of the whole
    batch, one or four runs per device at a time. The trial has two stages: the two block sizes
    at one run per device, then four runs per device at the faster block size (three
    compilations instead of four). Each is timed on its real program, with :data:`TRIAL_STEPS`
    steps per run (``unroll=1``), over at least :data:`TRIAL_CHUNKS` chunks and
    :data:`TRIAL_RUN_STEPS` run-steps per call, per run-step of the compiled call. The layouts compute the
    same runs: the block size changes the order of the per-example work inside a step, not the
    clipped sum (equal to float tolerance), and the runs per device do not change a run
    (:func:`canary_runs` draws its keys per run).
    """
    from jaxaudit.autotune import choose, seconds_per_unit

    inputs, labels, config = _check(model, private_data, canary, 1, config)
    n_dev = len(devices) if devices is not None else jax.local_device_count()
    n_ex = inputs.shape[0] + 1
    steps = min(config.steps, TRIAL_STEPS)
    n_params = (-1 if isinstance(init_params, ParamsInit)
                else sum(int(np.size(leaf)) for leaf in jax.tree.leaves(init_params)))
    shape = (f"{type(model).__name__} params={n_params} data={tuple(inputs.shape)} "
             f"q={config.sampling_rate:g} devices={n_dev} "
             f"trial=T{steps}x{TRIAL_CHUNKS}u1s{TRIAL_RUN_STEPS}")

    def measure(name: str) -> float:
        cfg, chunk = _layout(name, config._replace(steps=steps, unroll=1), n_ex, n_dev)
        chunks = max(TRIAL_CHUNKS, -(-TRIAL_RUN_STEPS // (chunk * steps)))
        runs = max(chunks * chunk // 2, 1)  # chunks of `chunk` runs, both worlds together
        call = _runs_call(jax.random.key(0), model, init_params, inputs, labels, canary, cfg,
                          runs, chunk, devices)
        return seconds_per_unit(call, units=2 * runs * steps)

    first_stage = [name for name in CPU_LAYOUTS if name.endswith("_run_per_device")]
    trial = choose("canary_runs", shape, first_stage, measure, DEFAULT_CPU_LAYOUT,
                   refine=_refine_layout)
    if trial.source == "off":   # the fixed defaults: default_block_size, one run per device
        return Layout(trial.choice, config, 1, trial)
    cfg, chunk = _layout(trial.choice, config, n_ex, n_dev)
    return Layout(trial.choice, cfg, chunk, trial)


def train_run(key: jax.Array, model: nn.Module, init_params: Any | ParamsInit,
              private_data: tuple[ArrayLike, ArrayLike], canary: tuple[ArrayLike, ArrayLike],
              config: DpsgdConfig, *, include_canary: bool) -> jax.Array:
    """One canary run (the unit :func:`canary_runs` vmaps): returns the canary's score.

    Same arguments as :func:`canary_runs`, with ``include_canary`` choosing the world. With the
    same key it reproduces the corresponding entry of :func:`canary_runs`. Traceable: the key
    and ``config.noise_multiplier`` may be traced (inside the user's ``jax.jit``/``jax.vmap``).
    """
    check_key("key", key)
    inputs, labels, config = _check(model, private_data, canary, 1, config)
    noise_multiplier = config.noise_multiplier
    prepare, run, _ = _compiled(model, config._replace(noise_multiplier=0.0), inputs.shape[0],
                                _init_fn(init_params), None, None)
    params0 = None if isinstance(init_params, ParamsInit) else init_params
    cx, cy = jnp.asarray(canary[0], jnp.float32), jnp.asarray(canary[1], jnp.int32)
    all_x = jnp.concatenate([jnp.asarray(inputs, jnp.float32), cx[None]])
    all_y = jnp.concatenate([jnp.asarray(labels, jnp.int32), cy[None]])
    item = (key, jnp.asarray(bool(include_canary)))
    return run(item, prepare(all_x), all_y, params0, (cx, cy), jnp.float32(noise_multiplier))


def canary_runs(
    key: jax.Array, model: nn.Module, init_params: Any | ParamsInit,
    private_data: tuple[ArrayLike, ArrayLike], canary: tuple[ArrayLike, ArrayLike],
    config: DpsgdConfig, *, num_runs: int, chunk_size: int | None = None,
    devices: Sequence[jax.Device] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """R private trainings with the canary and R without; returns (in_scores, out_scores).

    Each run: θ₀ = ``init_params``; for t < T, θ ← θ − η(Σ_{i∈B_t} clip_C(∇ℓ_i) + N(0, σ²C²I))/(q|D⁻|),
    B_t = D (full batch, q = 1) or a Poisson(q) sample of D; score = −CE(canary; θ_T). All 2R runs
    are one jit-compiled call vmapped over runs (chunked and sharded over ``devices`` by
    :func:`jaxaudit.sharding.vmap_chunked`). Run keys: with one key, ``jax.random.split(key, 2R)``,
    the first R for the "in" world; with R *unit keys* (a key array of shape (R,), e.g.
    ``jaxaudit.runs.unit_keys(key, start, R)``), unit u is the pair of runs u: its "in" run uses
    ``split(keys[u])[0]`` and its "out" run ``split(keys[u])[1]``. Under the unit-key rule
    (:mod:`jaxaudit.runs.keys`: unit u of root key k uses ``fold_in(k, u)``) the runs of a sweep
    do not depend on how it is cut into calls: R runs in one call and the same units in several
    chunks, resumed or split over workers, give the same scores (bit for bit on one machine when
    ``chunk_size`` and ``block_size`` are the same; :func:`jaxaudit.pipelines.run_rdp` uses it).

    Every CPU core: on CPU, JAX has a single device unless it is told otherwise before it starts,
    and then all runs share that one device. Call :func:`jaxaudit.sharding.use_all_cpu_cores`
    after ``import jax`` and before the first JAX computation (the ``jaxaudit`` command does it by
    default): JAX then has one CPU device per core and the runs are split over them (two host
    devices on a two-core machine is the configuration ``benchmarks/bench_dpsgd.py`` reports next
    to the single device; see ``benchmarks/README.md``)::

        import jax
        from jaxaudit.sharding import use_all_cpu_cores

        use_all_cpu_cores()
        config = DpsgdConfig(clip_norm=1.0, noise_multiplier=1.1, learning_rate=0.1, steps=100)
        in_scores, out_scores = canary_runs(jax.random.key(0), model, params, data, canary,
                                            config, num_runs=100)

    Args:
      key: PRNG key, or R unit keys (a key array of shape (R,), see above).
      model: flax module.
      init_params: parameters (``model.init``'s format) shared by every run — the worst-case
        setting; or a function ``key -> params`` to give each run its own random initialisation
        (the average-case baseline, e.g. ``lambda k: model.init(k, x[:1])``).
      private_data: (inputs (N, ...), labels (N,)) = D⁻.
      canary: (input with the shape of one example, integer label).
      config: :class:`jaxaudit.dpsgd.DpsgdConfig`: σ, C, T, η, the Poisson rate q ∈ (0, 1]
        (1 is full-batch DP-GD), the per-example gradient path (``method``, ``block_size``, see
        :func:`jaxaudit.dpsgd.clipped_gradient_sum`) and the ``lax.scan`` unroll factor.
      num_runs: R runs per world.
      chunk_size: runs computed simultaneously (None: all 2R at once on accelerators; on CPU,
        with ``config.block_size`` None and ``config.method`` "auto", the layout a timed trial
        chose for this machine and shape, :func:`cpu_layout`; otherwise one run per device at a
        time); the chunks run one after another inside the same compiled call. It is rounded up
        to a multiple of the device count D and each chunk is split evenly over the devices, so
        ``chunk_size=1`` or ``2`` on two devices means one run per device at a time. Which layout
        is fastest depends on the CPU (``benchmarks/README.md``); the layouts give the same runs
        to float tolerance.
      devices: devices to shard runs over (None: all visible, e.g. one per CPU core after
        :func:`jaxaudit.sharding.use_all_cpu_cores`).

    Returns:
      ``(in_scores, out_scores)``, float32 numpy arrays of shape (R,).

    Raises:
      ValueError: bad arguments, or a traced one: this is a host-side driver (it returns numpy
        arrays); inside ``jax.jit``/``jax.vmap`` use :func:`train_run`, its traceable unit.
    """
    noise = config.noise_multiplier if isinstance(config, DpsgdConfig) else None
    for name, value in (("key", key), ("config.noise_multiplier", noise),
                        ("init_params", init_params), ("private_data", private_data),
                        ("canary", canary)):
        if not isinstance(value, ParamsInit) and is_traced(value):
            raise ValueError(f"{name} is traced: canary_runs runs on the host and returns numpy "
                             "arrays; inside jax.jit or jax.vmap call train_run (one run) instead")
    check_key("key", key)
    inputs, labels, config = _check(model, private_data, canary, num_runs, config)
    chunk_size = check_chunk_size(chunk_size)
    if chunk_size is None and jax.default_backend() == "cpu":
        if config.block_size is None and config.method == "auto":
            config, chunk_size = cpu_layout(model, init_params, (inputs, labels), canary, config,
                                            devices=devices).config_and_chunk
        else:
            chunk_size = 1  # rounded up to one run per device by vmap_chunked
    r = int(num_runs)
    scores = _runs_call(key, model, init_params, inputs, labels, canary, config, r, chunk_size,
                        devices)()
    return scores[:r], scores[r:]


def _runs_call(key, model, init_params, inputs, labels, canary, config, num_runs, chunk_size,
               devices):
    """The 2R runs of :func:`canary_runs` (checked arguments) as a call of the compiled program
    with its inputs prepared: ``call() -> scores`` (2R,), "in" runs first. The layout trial times
    ``call`` alone, as a job spends its time there."""
    noise_multiplier = config.noise_multiplier
    prepare, _, mapped = _compiled(
        model, config._replace(noise_multiplier=0.0), inputs.shape[0], _init_fn(init_params),
        chunk_size, None if devices is None else tuple(devices))
    params0 = None if isinstance(init_params, ParamsInit) else init_params
    cx, cy = jnp.asarray(canary[0], jnp.float32), jnp.asarray(canary[1], jnp.int32)
    all_x = jnp.concatenate([jnp.asarray(inputs, jnp.float32), cx[None]])
    all_y = jnp.concatenate([jnp.asarray(labels, jnp.int32), cy[None]])
    keys = _run_keys(key, num_runs)
    flags = jnp.concatenate([jnp.ones(num_runs, bool), jnp.zeros(num_runs, bool)])
    features, sigma = prepare(all_x), jnp.float32(noise_multiplier)
    return lambda: np.asarray(mapped((keys, flags), features, all_y, params0, (cx, cy), sigma))
