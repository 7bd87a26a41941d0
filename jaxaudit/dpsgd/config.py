"""The DP-SGD recipe: the settings that travel together through a private step and a canary run.

One step on a batch (full, or a Poisson sample of rate q given as a 0/1 mask) is

    θ ← θ − η (Σ_i mask_i clip_C(∇ℓ_i(θ)) + N(0, σ²C² I)) / n̄,

and a canary run is T such steps (Annamalai & De Cristofaro, arXiv 2405.14106).
:class:`DpsgdConfig` holds C, σ, η, T, q and how the clipped sum is computed; the functions of
:mod:`jaxaudit.dpsgd` take it as their last positional argument, after the key and the data.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from jaxaudit._validation import (
    check_choice,
    check_instance,
    check_integer,
    check_nonnegative_finite,
    check_positive_finite,
    check_probability,
    is_traced,
)
from jaxaudit._validation.core import check_config_fields

__all__ = ["METHODS", "DpsgdConfig", "check_dpsgd_config"]

#: Per-example gradient paths (see :func:`jaxaudit.dpsgd.clipped_gradient_sum`).
METHODS = ("auto", "ghost", "vmap")


class DpsgdConfig(NamedTuple):
    """The DP-SGD recipe of a private step and of a canary run.

    Attributes:
      clip_norm: C > 0, the per-example clipping norm (global over all parameters).
      noise_multiplier: σ ≥ 0, the noise relative to the sensitivity C (add/remove neighbours:
        noise σC on the clipped sum).
      learning_rate: η ≥ 0 of the SGD step.
      steps: T ≥ 1 steps of a run (default 1; one step, :func:`jaxaudit.dpsgd.dp_gradient_step`,
        does not read it).
      sampling_rate: Poisson rate q ∈ (0, 1] of a run (default 1.0: full-batch DP-GD); a run
        divides the noisy sum by n̄ = q|D⁻|, the expected batch size.
      method: per-example gradient path, ``"auto"`` (default: ghost clipping when the model has
        it), ``"ghost"`` or ``"vmap"`` (reference); see
        :func:`jaxaudit.dpsgd.clipped_gradient_sum`.
      block_size: ghost path only: examples per block (default None:
        :func:`jaxaudit.dpsgd.ghost.default_block_size`); it changes the layout of the work,
        not the sum.
      unroll: ``lax.scan`` unroll factor over the steps of a run (default 1).
    """

    clip_norm: float
    noise_multiplier: float
    learning_rate: float
    steps: int = 1
    sampling_rate: float = 1.0
    method: str = "auto"
    block_size: int | None = None
    unroll: int = 1

    def check(self) -> DpsgdConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration with Python numbers. The functions that take it call it first."""
        return check_dpsgd_config(self)


def check_dpsgd_config(config: Any, name: str = "config") -> DpsgdConfig:
    """``config`` checked field by field (errors name ``config.<field>``), with Python numbers.

    A traced ``noise_multiplier`` is passed through (one compiled program serves every σ).

    Raises:
      TypeError: ``config`` is not a :class:`DpsgdConfig`.
      ValueError: a bad field, named.
    """
    check_instance(name, config, DpsgdConfig)
    check_config_fields(config, name)
    check_positive_finite(f"{name}.clip_norm", config.clip_norm)
    check_nonnegative_finite(f"{name}.noise_multiplier", config.noise_multiplier)
    check_nonnegative_finite(f"{name}.learning_rate", config.learning_rate)
    steps = check_integer(f"{name}.steps", config.steps, minimum=1)
    check_probability(f"{name}.sampling_rate", config.sampling_rate, open_low=True)
    check_choice(f"{name}.method", config.method, METHODS)
    block_size = (None if config.block_size is None
                  else check_integer(f"{name}.block_size", config.block_size, minimum=1))
    unroll = check_integer(f"{name}.unroll", config.unroll, minimum=1)
    sigma = (config.noise_multiplier if is_traced(config.noise_multiplier)
             else float(config.noise_multiplier))
    return DpsgdConfig(float(config.clip_norm), sigma, float(config.learning_rate), steps,
                       float(config.sampling_rate), config.method, block_size, unroll)
