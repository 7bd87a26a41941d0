"""The CPU layout of a shadow-model sweep, chosen by a timed trial (:mod:`jaxaudit.autotune`).

How many shadow models each device trains at once (the ``chunk_size`` of
:func:`jaxaudit.graph.train_shadow_models`) trades the cache footprint of the vmapped edge
gathers and scatters against per-call overhead, and the best value depends on the CPU and the
graph. When the caller gives no ``chunk_size`` on CPU, :func:`cpu_chunk_size` times each
candidate on the real program with :data:`TRIAL_EPOCHS` epochs (one chunk of models per device)
and keeps the fastest per model-epoch; the choice is cached per machine and graph shape. The
chunking does not change a model: model r always uses its own key (float reassociation in the
batched kernels aside).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax

__all__ = ["CPU_MODELS_PER_DEVICE", "TRIAL_EPOCHS", "cpu_chunk_size"]

#: Candidate models per device at a time; 1 is the default without a trial.
CPU_MODELS_PER_DEVICE = (1, 2, 4)
#: Epochs of each model the trial times (compilation does not depend on them: ``lax.scan``).
TRIAL_EPOCHS = 2


def cpu_chunk_size(shape: str, run: Callable[[int, int], object],
                   devices: Sequence[jax.Device] | None = None):
    """The fastest chunk size (models at once over all devices) and its trial.

    Args:
      shape: what the timing depends on besides the machine (model, graph size, sampler).
      run: ``run(chunk_size, num_models)`` trains ``num_models`` models for
        :data:`TRIAL_EPOCHS` epochs with that chunk size and blocks until done.
      devices: the devices the models are sharded over (None: all local ones).

    Returns:
      (chunk size, :class:`jaxaudit.autotune.Trial`).
    """
    from jaxaudit.autotune import choose, seconds_per_unit

    n_dev = len(devices) if devices is not None else jax.local_device_count()
    names = [f"{k}_per_device" for k in CPU_MODELS_PER_DEVICE]

    def measure(name: str) -> float:
        chunk = int(name.split("_")[0]) * n_dev
        return seconds_per_unit(lambda: run(chunk, chunk), units=chunk * TRIAL_EPOCHS)

    trial = choose("train_shadow_models", f"{shape} devices={n_dev}", names, measure, names[0])
    return int(trial.choice.split("_")[0]) * n_dev, trial
