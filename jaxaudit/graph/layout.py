"""The CPU layout of a shadow-model sweep, chosen by a timed trial (:mod:`jaxaudit.autotune`).

How many shadow models each device trains at once (the ``chunk_size`` of
:func:`jaxaudit.graph.train_shadow_models`) trades the cache footprint of the vmapped edge
gathers and scatters against per-call overhead, and the best value depends on the CPU and the
graph. When the caller gives no ``chunk_size`` on CPU, :func:`cpu_chunk_size` times each
candidate on the real program with :data:`TRIAL_EPOCHS` epochs and :data:`TRIAL_CHUNKS` chunks
of models, and keeps the fastest per model-epoch; the choice is cached per machine and graph
shape. A call costs a few milliseconds besides its epochs (sampling the masks, scoring the
nodes): over one chunk of two epochs that cost decided the choice, and on the 2-core Zen 5 the
trial chose four models per device, 1.3× slower per epoch than one (0.60 against 0.46 ms per
model-epoch on Cora; ``benchmarks/README.md``). Epochs are cheap, so the trial runs enough of
them that the per-epoch cost decides. The
chunking does not change a model: model r always uses its own key (float reassociation in the
batched kernels aside).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax

__all__ = ["CPU_MODELS_PER_DEVICE", "TRIAL_CHUNKS", "TRIAL_EPOCHS", "cpu_chunk_size"]

#: Candidate models per device at a time; 1 is the default without a trial.
CPU_MODELS_PER_DEVICE = (1, 2, 4)
#: Epochs of each model the trial times (compilation does not depend on them: ``lax.scan``).
TRIAL_EPOCHS = 32
#: Chunks of models in each timed call (the chunks run one after another, as in a sweep).
TRIAL_CHUNKS = 4


def cpu_chunk_size(shape: str, run: Callable[[int, int], object],
                   devices: Sequence[jax.Device] | None = None):
    """The fastest chunk size (models at once over all devices) and its trial.

    Args:
      shape: what the timing depends on besides the machine (model, graph size, sampler).
      run: ``run(chunk_size, num_models)`` trains ``num_models`` models (here
        :data:`TRIAL_CHUNKS` chunks) for :data:`TRIAL_EPOCHS` epochs with that chunk size and
        blocks until done.
      devices: the devices the models are sharded over (None: all local ones).

    Returns:
      (chunk size, :class:`jaxaudit.autotune.Trial`).
    """
    from jaxaudit.autotune import choose, seconds_per_unit

    n_dev = len(devices) if devices is not None else jax.local_device_count()
    names = [f"{k}_per_device" for k in CPU_MODELS_PER_DEVICE]

    def measure(name: str) -> float:
        chunk = int(name.split("_")[0]) * n_dev
        models = TRIAL_CHUNKS * chunk
        return seconds_per_unit(lambda: run(chunk, models), units=models * TRIAL_EPOCHS)

    trial = choose("train_shadow_models",
                   f"{shape} devices={n_dev} trial=E{TRIAL_EPOCHS}x{TRIAL_CHUNKS}", names,
                   measure, names[0])
    return int(trial.choice.split("_")[0]) * n_dev, trial
