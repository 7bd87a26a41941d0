"""The private gradient step of DP-SGD: per-example clipping, sum, Gaussian noise.

One step on a batch B (full batch, or a Poisson sample given as a 0/1 ``mask``) is

    ĝ = Σ_{i∈B} clip_C(∇ℓ_i(θ)) + N(0, σ²C² I),   clip_C(g) = g / max(1, ‖g‖₂ / C),
    θ ← θ − η · ĝ / n̄,

with n̄ a *constant* normaliser (the expected batch size by default in :func:`canary_runs`);
dividing by a constant is post-processing, so the privacy is that of the noisy sum.

Why not ``optax.contrib.differentially_private_aggregate``: its update is
``(Σ_i clip(g_i) + N(0, σ²C²)) / bsize`` with ``bsize`` the leading size of the per-example
gradient array it receives (read in optax 0.2.8's ``optax/contrib/_privacy.py``). That matches
the sum protocol only up to a divisor, and the divisor is the *realised* batch size: under
add/remove neighbours it is |D| in one world and |D|+1 in the other, and with masked (fixed-shape)
Poisson sampling it counts the masked-out rows. It also needs every per-example gradient
materialised, which the fast path here avoids. We therefore use optax's building block
``optax.transforms.per_example_global_norm_clip`` (clip + sum) in the reference path, and the
noise and normalisation of our own transformation :func:`jaxaudit.dpsgd.dp_noisy_sum` (module
:mod:`jaxaudit.dpsgd.private_aggregate`, the library's one copy of the noisy clipped sum, also
used by :func:`jaxaudit.attacks.train_dp_lm`), followed by ``optax.sgd``. The canary's
membership is the mask weight of its row, so its clipped gradient enters the sum once, and the
noise is σC: add/remove neighbours, sensitivity C.

Two ways to get Σ_i w_i clip_C(∇ℓ_i):

* ``method="vmap"`` (reference, any flax model): ``jax.vmap(jax.grad(ℓ_i))`` then optax's
  per-example clip-and-sum.
* ``method="ghost"`` (``SmallCNN``, ``MLP``, ``LogisticRegression``): one batched backward pass
  gives each layer's per-example output gradient G_i; for a dense layer with input a_i the
  per-example weight gradient is a_i g_iᵀ with ‖a_i g_iᵀ‖² = ‖a_i‖²‖g_i‖² (never formed), for an
  im2col convolution it is P_iᵀG_i (formed: 400 and 8192 numbers for SmallCNN's two
  convolutions, the same multiply-adds as the norm itself). The clipped sum is then one matmul
  per layer with G scaled by the clip factors. Convolutions are im2col matmuls: XLA's CPU
  convolutions, and their per-example (grouped) gradients, are several times slower. The
  examples go through in blocks of ``block_size`` (by default 1 on CPU with several devices, the
  whole batch otherwise), one block after another, so that a block's intermediates stay in cache
  (:mod:`jaxaudit.dpsgd.ghost`).

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
  Goodfellow, "Efficient Per-Example Gradient Computations", arXiv 1510.01799 (dense norm trick).
  Li et al., "Large Language Models Can Be Strong Differentially Private Learners", ICLR 2022,
  arXiv 2110.05679 (ghost clipping).
  Bu et al., "Differentially Private Optimization on Large Model at Small Cost", ICML 2023,
  arXiv 2210.00038 (book-keeping: the output gradients reused, no second backward pass).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_integer,
    check_mask,
    check_positive,
    check_positive_finite,
)
from jaxaudit.dpsgd.config import METHODS, DpsgdConfig, check_dpsgd_config
from jaxaudit.dpsgd.ghost import (
    _per_example_losses,
    block_features,
    blocked_clipped_sum,
    default_block_size,
    ghost_clipped_sum,
)
from jaxaudit.dpsgd.models import Layer, layer_program
from jaxaudit.dpsgd.private_aggregate import (
    clip_and_sum,
    dp_noisy_sum,
    per_example_gradients,
)

__all__ = ["PrivateStep", "check_block_size", "clipped_gradient_sum", "dp_gradient_step",
           "make_private_step"]

#: ``prepare(inputs) -> features``: the host-side input transform of a model (im2col patches for
#: the CNN, a float32 cast otherwise), computed once per batch.
Prepare = Callable[[jax.Array], Any]
#: ``step(key, params, opt_state, features, labels, mask) -> (params, opt_state)``: one private
#: step (jit/vmap/scan-able).
StepFn = Callable[[jax.Array, Any, Any, Any, jax.Array, jax.Array], tuple[Any, Any]]
#: ``f(params, features, labels, weights, C) -> (clipped sum, per-example norms)``
_ClippedSum = Callable[[Any, Any, jax.Array, jax.Array, Any], tuple[Any, jax.Array]]



def _vmap_clipped_sum(model: nn.Module, params: Any, inputs: jax.Array, labels: jax.Array,
                      weights: jax.Array, clip_norm: float | jax.Array) -> tuple[Any, jax.Array]:
    """Reference: per-example gradients by vmap(grad), optax's clip-and-sum of w_i·g_i."""

    def loss(prm: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        # flax types apply() as "output or (output, state)"; without ``mutable`` it is the output
        logits: jax.Array = model.apply(prm, x[None])  # type: ignore[assignment]
        return _per_example_losses(logits, y[None])[0]

    grads = per_example_gradients(loss, params, inputs, labels)
    norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1)
                         for g in jax.tree.leaves(grads)))
    return clip_and_sum(grads, clip_norm, weights), norms


def _resolve(model: nn.Module, method: str
             ) -> tuple[str, tuple[Callable[[Any], jax.Array], list[Layer]] | None]:
    check_choice("method", method, METHODS)
    program = layer_program(model)
    if method == "ghost" and program is None:
        raise ValueError(f"method='ghost' needs SmallCNN, MLP or LogisticRegression, got {type(model).__name__}")
    if method == "auto":
        method = "vmap" if program is None else "ghost"
    return method, program


def check_block_size(block_size: Any) -> int | None:
    """None (the backend's default, :func:`jaxaudit.dpsgd.ghost.default_block_size`) or an
    integer ≥ 1 (``ArgumentTypeError`` / ``ValueError`` naming ``block_size`` otherwise)."""
    return None if block_size is None else check_integer("block_size", block_size, minimum=1)


@functools.lru_cache(maxsize=32)
def _compiled_clipped_sum(model: nn.Module, method: str, block_size: int | None = None
                          ) -> tuple[Prepare, _ClippedSum]:
    """(prepare, jitted clipped sum), cached per (model, method, block_size) so repeated calls
    reuse the compiled function (the library's one caching pattern: an lru_cache over the static
    configuration returning jitted functions, as in ``canary_training._compiled``)."""
    prepare, fn = _clipped_sum_fn(model, method, block_size)
    return prepare, jax.jit(fn)


@functools.lru_cache(maxsize=32)
def _compiled_step(model: nn.Module, config: DpsgdConfig, normalizer: float) -> PrivateStep:
    """(prepare, init, jitted private step), cached per static configuration."""
    prepare, init, step = make_private_step(model, config, normalizer=normalizer)
    return PrivateStep(prepare, init, jax.jit(step))


def _clipped_sum_fn(model: nn.Module, method: str, block_size: int | None = None
                    ) -> tuple[Prepare, _ClippedSum]:
    """Return (prepare, f) with f(params, features, labels, weights, C) -> (clipped sum, norms).

    Ghost path: ``block_size`` examples per block (None: :func:`default_block_size`);
    ``prepare`` then returns the program's features cut into blocks (:func:`block_features`).
    """
    method, program = _resolve(model, method)
    if method == "ghost" and program is not None:  # "ghost" always has a program
        first, layers = program
        size = default_block_size() if block_size is None else block_size
        if size is None:  # the whole batch in one block
            return first, lambda prm, f, y, w, c: ghost_clipped_sum(layers, prm, f, y, w, c)

        def prepare(x: Any) -> jax.Array:
            return block_features(first(x), size)

        return prepare, lambda prm, f, y, w, c: blocked_clipped_sum(layers, prm, f, y, w, c)
    return (lambda x: jnp.asarray(x, jnp.float32)), (
        lambda prm, f, y, w, c: _vmap_clipped_sum(model, prm, f, y, w, c)
    )



def _checked_batch(inputs: ArrayLike, labels: ArrayLike, per_example: ArrayLike | None, name: str
                   ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Inputs, int32 labels of shape (B,), and float32 per-example weights (default ones)."""
    inputs = jnp.asarray(inputs)
    labels = jnp.asarray(labels, jnp.int32)
    if labels.shape != inputs.shape[:1]:
        raise ValueError(f"labels must have shape {inputs.shape[:1]}, got {labels.shape}")
    if per_example is not None:
        check_mask(name, per_example)
    per_example = (jnp.ones(labels.shape, jnp.float32) if per_example is None
                   else jnp.asarray(per_example, jnp.float32))
    if per_example.shape != labels.shape:
        raise ValueError(f"{name} must have shape {labels.shape}, got {per_example.shape}")
    return inputs, labels, per_example

def clipped_gradient_sum(model: nn.Module, params: Any, inputs: jax.Array, labels: jax.Array,
                         clip_norm: float, weights: jax.Array | None = None, *,
                         method: str = "auto", block_size: int | None = None
                         ) -> tuple[Any, jax.Array]:
    """Σ_i w_i · clip_C(∇_θ ℓ_i(θ)) and the unclipped per-example norms ‖∇_θ ℓ_i(θ)‖₂.

    ℓ_i is the softmax cross-entropy of example i; clip_C(g) = g / max(1, ‖g‖₂/C) with the norm
    over all parameters (global per-example clipping).

    Args:
      model: a flax module (``SmallCNN``, ``MLP``, ``LogisticRegression`` use the fast path).
      params: parameters as returned by ``model.init``.
      inputs: (N, ...) examples; labels: (N,) integer labels.
      clip_norm: C > 0.
      weights: optional (N,) boolean or 0/1 mask (Poisson sample, or canary membership);
        default all ones.
      method: ``"auto"`` (ghost when available), ``"ghost"`` or ``"vmap"`` (reference).
      block_size: ghost path only: examples processed together, the blocks one after another
        (:func:`jaxaudit.dpsgd.ghost.blocked_clipped_sum`; the same sum, reassociated). None:
        :func:`jaxaudit.dpsgd.ghost.default_block_size` (1 on CPU with several devices, where
        small blocks stay in cache; the whole batch on one CPU device and on accelerators).

    Returns:
      ``(clipped_sum, norms)``: a pytree shaped like ``params`` and an (N,) array.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxaudit.dpsgd import LogisticRegression, clipped_gradient_sum
      >>> model = LogisticRegression(num_classes=2)
      >>> params = model.init(jax.random.key(0), jnp.zeros((1, 3)))
      >>> s, norms = clipped_gradient_sum(model, params, jnp.ones((4, 3)), jnp.array([0, 1, 0, 1]), 0.5)
      >>> bool((norms > 0).all())
      True
    """
    check_positive("clip_norm", clip_norm)
    block_size = check_block_size(block_size)
    inputs, labels, weights = _checked_batch(inputs, labels, weights, "weights")
    prepare, fn = _compiled_clipped_sum(model, method, block_size)
    return fn(params, prepare(inputs), labels, weights, jnp.float32(clip_norm))


class PrivateStep(NamedTuple):
    """:func:`make_private_step`'s pure functions, in optax's and blackjax's shape.

    Attributes:
      prepare: ``prepare(inputs) -> features``, the host-side input transform of the model
        (im2col patches for the CNN, a float32 cast otherwise), computed once per batch.
      init: ``init(params) -> opt_state``, the optax state of the noise stage and the optimiser.
      step: ``step(key, params, opt_state, features, labels, mask) -> (params, opt_state)``, one
        private step (jit/vmap/scan-able; the state threads from one step to the next).
    """

    prepare: Prepare
    init: Callable[[Any], optax.OptState]
    step: StepFn


def make_private_step(model: nn.Module, config: DpsgdConfig, *, normalizer: float,
                      optimizer: optax.GradientTransformation | None = None) -> PrivateStep:
    """Build DP-SGD's step for jit/vmap/scan: ``(prepare, init, step)``.

    ``features = prepare(inputs)`` is computed once (im2col patches of the raw inputs for the CNN);
    ``opt_state = init(params)``; then each ``params, opt_state = step(key, params, opt_state,
    features, labels, mask)`` releases ĝ = (Σ_i mask_i clip_C(∇ℓ_i) + N(0, σ²C²I)) / n̄ (the
    clipped sum of :func:`clipped_gradient_sum`'s path, then
    :func:`jaxaudit.dpsgd.dp_noisy_sum` with ``key`` as the noise key) and lets ``optimizer``
    post-process it. The optax state threads across steps, so momentum or Adam accumulate as in
    any optax loop. ``config.noise_multiplier`` may be traced; ``config.steps``,
    ``sampling_rate`` and ``unroll`` are not read (the caller runs the steps).

    Args:
      model: a flax module (``SmallCNN``, ``MLP``, ``LogisticRegression`` use ghost clipping).
      config: :class:`jaxaudit.dpsgd.DpsgdConfig` (C, σ, η, method, block size).
      normalizer: n̄ > 0, the constant the noisy sum is divided by (the expected batch size
        q|D|; required, as in :func:`jaxaudit.dpsgd.dp_aggregate`).
      optimizer: the optax transformation applied to ĝ (default ``optax.sgd(learning_rate)``:
        θ ← θ − η ĝ, computed as (η/n̄)(S + Z)).

    Returns:
      :class:`PrivateStep`.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from jaxaudit.dpsgd import DpsgdConfig, LogisticRegression, make_private_step
      >>> model = LogisticRegression(num_classes=2)
      >>> x, y = jnp.ones((4, 3)), jnp.array([0, 1, 0, 1])
      >>> params = model.init(jax.random.key(0), x[:1])
      >>> config = DpsgdConfig(clip_norm=1.0, noise_multiplier=1.1, learning_rate=0.1)
      >>> prepare, init, step = make_private_step(model, config, normalizer=4.0,
      ...                                         optimizer=optax.sgd(0.1, momentum=0.9))
      >>> state = init(params)
      >>> for k in jax.random.split(jax.random.key(1), 3):
      ...     params, state = step(k, params, state, prepare(x), y, jnp.ones(4, bool))
      >>> int(state[0].count)
      3
    """
    config = check_dpsgd_config(config)
    check_positive_finite("normalizer", normalizer)
    prepare, fn = _clipped_sum_fn(model, config.method, config.block_size)
    clip_norm = config.clip_norm
    if optimizer is None:
        # n̄ is folded into the SGD step size, (η/n̄)·ĝ: θ − (η/n̄)(S + Z), the arithmetic (and
        # so the bits) of the canary runs the tests pin.
        tx = optax.chain(dp_noisy_sum(clip_norm, config.noise_multiplier, normalizer=1.0),
                         optax.sgd(config.learning_rate / normalizer))
    else:
        tx = optax.chain(dp_noisy_sum(clip_norm, config.noise_multiplier, normalizer=normalizer),
                         optimizer)

    def step(key: jax.Array, params: Any, opt_state: optax.OptState, features: Any,
             labels: jax.Array, mask: jax.Array) -> tuple[Any, optax.OptState]:
        summed, _ = fn(params, features, labels, mask, clip_norm)
        updates, opt_state = tx.update(summed, opt_state, params, noise_key=key)
        return optax.apply_updates(params, updates), opt_state

    return PrivateStep(prepare, tx.init, step)


def dp_gradient_step(key: jax.Array, model: nn.Module, params: Any, inputs: jax.Array,
                     labels: jax.Array, config: DpsgdConfig, *, normalizer: float,
                     mask: jax.Array | None = None) -> Any:
    """One DP-GD / DP-SGD step: θ ← θ − η (Σ_{i: mask_i=1} clip_C(∇ℓ_i) + N(0, σ²C² I)) / n̄.

    Full batch when ``mask`` is None (sampling rate 1); pass a Poisson 0/1 mask
    (``jax.random.bernoulli(key, q, (N,))``) for subsampled DP-SGD. Privacy per step: the Gaussian
    mechanism with sensitivity C and noise σC (Abadi et al. 2016). Plain SGD from a fresh state;
    for a stateful optimiser over several steps use :func:`make_private_step`.

    Args:
      key: PRNG key for the noise.
      model, params: flax module and its parameters.
      inputs, labels: the (N, ...) batch and (N,) integer labels.
      config: :class:`jaxaudit.dpsgd.DpsgdConfig` (C, σ, η, method, block size; ``steps``,
        ``sampling_rate`` and ``unroll`` are not read).
      normalizer: n̄ > 0, a constant the noisy sum is divided by (the expected batch size, not
        the realised one; required).
      mask: optional (N,) boolean or 0/1 membership of each example in this step's batch.

    Returns:
      The updated parameters.
    """
    config = check_dpsgd_config(config)
    check_positive_finite("normalizer", normalizer)
    inputs, labels, mask = _checked_batch(inputs, labels, mask, "mask")
    prepare, init, step = _compiled_step(model, config, float(normalizer))
    return step(key, params, init(params), prepare(inputs), labels, mask)[0]
