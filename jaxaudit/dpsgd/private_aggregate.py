"""DP-SGD's noisy clipped sum as an optax ``GradientTransformation``: the library's one copy.

From per-example gradients g_1..g_B (a pytree whose leaves have a leading example axis) and an
optional 0/1 membership mask w (a Poisson sample padded to a fixed shape, or a canary's
membership), one update releases

    ĝ = (Σ_i w_i clip_C(g_i) + N(0, σ²Δ² I)) / n̄,     clip_C(g) = g · min(1, C / ‖g‖₂),

with the norm over all leaves (global per-example clipping), Δ the L2 sensitivity of the clipped
sum under the chosen neighbouring relation and n̄ a *constant* normaliser (the expected batch
size qN), never the realised batch size: dividing by a constant is post-processing, so the
privacy is that of the noisy sum, and any optimiser chained after it (``optax.sgd``,
``optax.adam``) post-processes it too. n̄ has no default: with n̄ = 1 the update is the noisy
*sum*, B times the mean gradient ``optax.contrib.dpsgd`` steps with at batch size B.

* ``relation="add_remove"`` (D and D ∪ {z}): Δ = C, noise σC (Abadi et al. 2016).
* ``relation="replace_one"`` (z replaced by z'): Δ = 2C, noise 2σC. σ is always the noise
  relative to the sensitivity, so the Gaussian mechanism is μ = 1/σ-GDP per full-batch step
  under either relation. ``dp_accounting``'s ``REPLACE_ONE`` accountant with ``sensitivity=1``
  instead takes the noise relative to C (its worlds are shifted by ±C); its σ_acc is 2σ here
  (see ``docs/renyi.md``).

Why not ``optax.contrib.differentially_private_aggregate``: it divides by the *realised* leading
size of the gradient array (|D| in one add/remove world, |D|+1 in the other; masked rows counted
under fixed-shape Poisson sampling), has no neighbouring relation, and needs every per-example
gradient materialised, which the ghost-clipping path of :mod:`jaxaudit.dpsgd.private_step`
avoids. So this module has two transformations sharing one state and one noise stage:

* :func:`dp_aggregate`: per-example gradients in, ĝ out (clip, mask, sum, noise, normalise).
* :func:`dp_noisy_sum`: an already clipped sum Σ_i w_i clip_C(g_i) in (from ghost clipping),
  ĝ out (noise, normalise). :func:`dp_aggregate` is :func:`clip_and_sum` followed by it.

The two primitives, :func:`clip_and_sum` and :func:`add_gaussian_noise` (with
:func:`noise_stddev`, :data:`SENSITIVITY` and :func:`per_example_gradients`), live in the
foundation module ``jaxaudit._clipped_sum`` so that the node-level private shadow training of
:mod:`jaxaudit.graph.dp_training` (a lower layer) uses the same code; they are importable here.

Keys: the state holds a PRNG key split once per update (``key, k = split(key)``; the noise is
drawn from ``k``, one ``split(k, num_leaves)`` sub-key per leaf). A caller with its own key
schedule passes ``noise_key=`` to ``update`` instead (an optax extra argument, forwarded by
``optax.chain``); the state's key is then left as it is. Either way the noise is a pure function
of explicit keys, so a run is reproducible bit for bit.

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
  Dong, Roth, Su, "Gaussian Differential Privacy", arXiv 1905.02383 (μ-GDP of the Gaussian
  mechanism, μ = Δ/(σΔ)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxaudit._clipped_sum import (
    SENSITIVITY,
    add_gaussian_noise,
    clip_and_sum,
    noise_stddev,
    per_example_gradients,
)
from jaxaudit._validation import (
    check_choice,
    check_key,
    check_mask,
    check_nonnegative_finite,
    check_positive_finite,
)

__all__ = [
    "DPAggregateState",
    "SENSITIVITY",
    "add_gaussian_noise",
    "clip_and_sum",
    "dp_aggregate",
    "dp_noisy_sum",
    "noise_stddev",
    "per_example_gradients",
]


class DPAggregateState(NamedTuple):
    """State of :func:`dp_aggregate` / :func:`dp_noisy_sum`.

    Attributes:
      key: PRNG key split once per update (None when every update gets ``noise_key=``).
      count: int32 number of noisy sums released so far (the T of the accountant).
    """

    key: jax.Array | None
    # shadows tuple.count, as the ``count`` of optax's states does
    count: jax.Array  # type: ignore[assignment]


def _check(clip_norm: float | jax.Array, noise_multiplier: float | jax.Array,
           key: jax.Array | None, normalizer: float | jax.Array, relation: str) -> None:
    check_positive_finite("clip_norm", clip_norm)
    check_nonnegative_finite("noise_multiplier", noise_multiplier)
    check_positive_finite("normalizer", normalizer)
    check_choice("relation", relation, SENSITIVITY)
    if key is not None:
        check_key("key", key)


def _check_example_axis(grads: Any, params: Any) -> None:
    """Every gradient leaf is (B, *parameter leaf shape): one leading per-example axis."""
    if params is None:
        raise ValueError("dp_aggregate's update needs params (update(grads, state, params)) to "
                         "check that every gradient leaf has one leading per-example axis more "
                         "than its parameter")
    g_leaves, g_def = jax.tree.flatten_with_path(grads)
    p_leaves, p_def = jax.tree.flatten(params)
    if len(g_leaves) != len(p_leaves):
        raise ValueError(f"per-example gradients must have the structure of params, got "
                         f"{jax.tree.structure(grads)} and {p_def}")
    for (path, g), p in zip(g_leaves, p_leaves):
        g_shape, p_shape = tuple(jnp.shape(g)), tuple(jnp.shape(p))
        if len(g_shape) != len(p_shape) + 1 or g_shape[1:] != p_shape:
            raise ValueError(
                f"per-example gradient leaf {jax.tree_util.keystr(path) or '(root)'} has shape "
                f"{g_shape} for a parameter of shape {p_shape}: it must be (B,) + {p_shape}, "
                "one leading example axis (per_example_gradients gives it; a plain jax.grad "
                "has none)")


def _noise_transform(clip_norm: float | jax.Array, noise_multiplier: float | jax.Array,
                     key: jax.Array | None, normalizer: float | jax.Array, relation: str,
                     prepare: Callable[[Any, Any, jax.Array | None], Any]
                     ) -> optax.GradientTransformationExtraArgs:
    """The one noise stage: ĝ = (prepare(updates, params, mask) + N(0, (σΔ)² I)) / n̄."""
    stddev = noise_stddev(noise_multiplier, clip_norm, relation)

    def init_fn(params: Any) -> DPAggregateState:
        del params
        return DPAggregateState(key=key, count=jnp.zeros((), jnp.int32))

    def update_fn(updates: Any, state: DPAggregateState, params: Any = None, *,
                  noise_key: jax.Array | None = None, mask: jax.Array | None = None,
                  **extra_args: Any) -> tuple[Any, DPAggregateState]:
        del extra_args
        summed = prepare(updates, params, mask)
        new_key = state.key
        if noise_key is None:
            if state.key is None:
                raise ValueError("no noise key: build the transformation with key=... or pass "
                                 "noise_key=... to update")
            new_key, noise_key = jax.random.split(state.key)
        noisy = add_gaussian_noise(noise_key, summed, stddev)
        if not (isinstance(normalizer, float | int) and normalizer == 1):
            noisy = jax.tree.map(lambda g: g / normalizer, noisy)
        return noisy, DPAggregateState(key=new_key, count=state.count + 1)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def dp_aggregate(clip_norm: float, noise_multiplier: float | jax.Array, *,
                 normalizer: float, key: jax.Array | None = None,
                 relation: str = "add_remove") -> optax.GradientTransformationExtraArgs:
    """Per-example gradients → (Σ_i w_i clip_C(g_i) + N(0, σ²Δ² I)) / n̄ (DP-SGD's aggregation).

    ``update(per_example_grads, state, params, *, mask=None, noise_key=None)``: every gradient
    leaf is its parameter leaf's shape with one leading example axis (e.g. from
    :func:`per_example_gradients`; checked against ``params``, which is required, so a plain
    ``jax.grad`` gradient is refused instead of its coordinates being read as examples);
    ``mask`` is an optional (B,) boolean or 0/1 membership of each row in this step's batch
    (other values are refused: under jit its dtype must be boolean or integer); ``noise_key``
    overrides the state's key for this update. Chain an optimiser after it; ``optax.chain``
    forwards ``mask`` and ``noise_key``.

    Args:
      clip_norm: C > 0.
      noise_multiplier: σ ≥ 0, the noise relative to the sensitivity Δ (may be traced).
      normalizer: n̄ > 0, the constant the noisy sum is divided by (required). Use the expected
        batch size qN, not the realised one: then σ = 0 chained with ``optax.sgd(η)`` is
        ``optax.contrib.dpsgd(η, C, 0, seed)`` at batch size B = n̄ (n̄ = 1 releases the noisy
        sum, a step B times larger).
      key: PRNG key held in the state and split per update (None: every update passes
        ``noise_key``).
      relation: ``"add_remove"`` (Δ = C) or ``"replace_one"`` (Δ = 2C), as in
        :mod:`jaxaudit.accounting`.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`DPAggregateState`.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from jaxaudit.dpsgd import dp_aggregate, per_example_gradients
      >>> loss = lambda w, x, y: (x @ w - y) ** 2
      >>> w = jnp.zeros(3)
      >>> x, y = jnp.ones((8, 3)), jnp.arange(8.0)
      >>> tx = optax.chain(dp_aggregate(1.0, 1.1, normalizer=8.0, key=jax.random.key(0)),
      ...                  optax.sgd(0.1))
      >>> state = tx.init(w)
      >>> updates, state = tx.update(per_example_gradients(loss, w, x, y), state, w)
      >>> optax.apply_updates(w, updates).shape, int(state[0].count)
      ((3,), 1)

    References:
      Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133.
    """
    _check(clip_norm, noise_multiplier, key, normalizer, relation)

    def prepare(grads: Any, params: Any, mask: jax.Array | None) -> Any:
        _check_example_axis(grads, params)
        if mask is not None:
            check_mask("mask", mask)
        return clip_and_sum(grads, clip_norm, mask)

    return _noise_transform(clip_norm, noise_multiplier, key, normalizer, relation, prepare)


def dp_noisy_sum(clip_norm: float, noise_multiplier: float | jax.Array, *,
                 normalizer: float, key: jax.Array | None = None,
                 relation: str = "add_remove") -> optax.GradientTransformationExtraArgs:
    """An already clipped sum S = Σ_i w_i clip_C(g_i) → (S + N(0, σ²Δ² I)) / n̄.

    The noise stage of :func:`dp_aggregate`, for callers that form S without materialising the
    per-example gradients (ghost clipping, :func:`jaxaudit.dpsgd.clipped_gradient_sum`). The
    caller is responsible for S being a sum of gradients clipped to C; ``clip_norm`` here only
    sets the noise. Same arguments, state and ``noise_key`` as :func:`dp_aggregate` (``params``
    is optional here: S already has the parameters' shapes).
    """
    _check(clip_norm, noise_multiplier, key, normalizer, relation)

    def prepare(summed: Any, params: Any, mask: jax.Array | None) -> Any:
        del params
        if mask is not None:
            raise ValueError("dp_noisy_sum takes an already masked clipped sum; got a mask")
        return summed

    return _noise_transform(clip_norm, noise_multiplier, key, normalizer, relation, prepare)
