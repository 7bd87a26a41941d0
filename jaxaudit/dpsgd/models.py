"""Models audited with DP-SGD: the MNIST ``SmallCNN`` and the CIFAR-10 ``CifarCNN`` of Annamalai
& De Cristofaro (NeurIPS 2024, arXiv 2405.14106), an ``MLP`` and ``LogisticRegression``.

All three are ordinary flax ``linen`` modules (``model.init`` / ``model.apply`` work as usual and
are the reference implementation). :mod:`jaxaudit.dpsgd.private_step` also evaluates them through a
layer-by-layer "program" (:func:`layer_program`) in which every convolution is an im2col matrix
multiply; that form exposes each layer's input and output gradient, which is what per-example
gradient norms without per-example backward passes ("ghost clipping") need.

References:
  Annamalai & De Cristofaro, "Nearly Tight Black-Box Auditing of Differentially Private Machine
  Learning", NeurIPS 2024, arXiv 2405.14106 (the SmallCNN and CifarCNN architectures).
  Dörmann, Frisk, Andersen & Pedersen, "Not All Noise is Accounted Equally: How Differentially
  Private Learning Benefits from Large Sampling Rates", MLSP 2021, arXiv 2110.06255 (CifarCNN's
  origin).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_choice

__all__ = [
    "MODELS",
    "model_by_name",
    "SmallCNN", "CifarCNN", "MLP", "LogisticRegression", "Layer", "layer_program", "fast_apply",
    "im2col",
]


def _as_images(x: ArrayLike) -> jax.Array:
    """(N, 28, 28) or (N, 28, 28, 1) -> (N, 28, 28, 1) float32."""
    x = jnp.asarray(x, jnp.float32)
    return x[..., None] if x.ndim == 3 else x


class SmallCNN(nn.Module):
    """conv(1→16, 5×5) → maxpool 2 → tanh → conv(16→32, 4×4) → maxpool 2 → tanh → fc(512→32) → tanh → fc(32→10).

    Valid convolutions, 2×2 max pooling with stride 2 (floor), as in Annamalai & De Cristofaro
    (2024). Input: images (N, 28, 28) or (N, 28, 28, 1); output: logits (N, num_classes).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> model = SmallCNN()
      >>> params = model.init(jax.random.key(0), jnp.zeros((1, 28, 28)))
      >>> model.apply(params, jnp.zeros((2, 28, 28))).shape
      (2, 10)
    """

    num_classes: int = 10

    @nn.compact
    def __call__(self, x: ArrayLike) -> jax.Array:
        x = _as_images(x)
        x = nn.Conv(16, (5, 5), padding="VALID", name="conv1")(x)
        x = jnp.tanh(nn.max_pool(x, (2, 2), strides=(2, 2)))
        x = nn.Conv(32, (4, 4), padding="VALID", name="conv2")(x)
        x = jnp.tanh(nn.max_pool(x, (2, 2), strides=(2, 2)))
        x = x.reshape((x.shape[0], -1))
        x = jnp.tanh(nn.Dense(32, name="fc1")(x))
        return nn.Dense(self.num_classes, name="fc2")(x)


class CifarCNN(nn.Module):
    """The CIFAR-10 CNN of Annamalai & De Cristofaro (2024, arXiv 2405.14106).

    Three blocks of [conv 3×3 → tanh → conv 3×3 → tanh → max pool 2×2, stride 2] with 32, 64 and
    128 channels (stride 1, zero padding 1, i.e. ``"SAME"``), so 32×32 → 16 → 8 → 4, then
    flatten (4·4·128 = 2048) → fc(2048→128) → tanh → fc(128→num_classes): 550 570 parameters for
    10 classes. This is the network the authors' public code trains on CIFAR-10 (there credited
    to Dörmann et al., arXiv 2110.06255, "BigNetwork"), with its default dropout rate 0 (no
    dropout layer here). Differences, none of which changes the function class: flax's default
    initialisers (the authors use Xavier-normal weights and biases 0.01; the audit pretrains
    anyway, see :func:`jaxaudit.dpsgd.pretrain`), HWC instead of CHW inputs, and so the flatten
    order (h, w, c) instead of (c, h, w), a fixed permutation of fc1's input rows.

    Its :func:`layer_program` writes each 3×3 "SAME" convolution as an im2col matmul on the
    zero-padded input, so the DP-SGD step takes the ghost-clipping path (``"auto"``), like
    ``SmallCNN``.

    Input: images (N, 32, 32, 3) (float, e.g. in [0, 1]); output: logits (N, num_classes).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> model = CifarCNN()
      >>> params = model.init(jax.random.key(0), jnp.zeros((1, 32, 32, 3)))
      >>> model.apply(params, jnp.zeros((2, 32, 32, 3))).shape
      (2, 10)
      >>> sum(p.size for p in jax.tree.leaves(params))
      550570
    """

    num_classes: int = 10

    @nn.compact
    def __call__(self, x: ArrayLike) -> jax.Array:
        h = jnp.asarray(x, jnp.float32)
        for block, width in enumerate((32, 64, 128), start=1):
            for j in (1, 2):
                h = jnp.tanh(nn.Conv(width, (3, 3), padding="SAME", name=f"conv{block}_{j}")(h))
            h = nn.max_pool(h, (2, 2), strides=(2, 2))
        h = h.reshape((h.shape[0], -1))
        h = jnp.tanh(nn.Dense(128, name="fc1")(h))
        return nn.Dense(self.num_classes, name="fc2")(h)


class MLP(nn.Module):
    """Fully connected network with tanh hidden layers on flattened inputs.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> model = MLP(hidden_dims=(16,), num_classes=3)
      >>> params = model.init(jax.random.key(0), jnp.zeros((1, 5)))
      >>> model.apply(params, jnp.zeros((4, 5))).shape
      (4, 3)
    """

    hidden_dims: Sequence[int] = (32,)
    num_classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array | np.ndarray) -> jax.Array:
        x = jnp.asarray(x, jnp.float32).reshape((x.shape[0], -1))
        for i, width in enumerate(self.hidden_dims):
            x = jnp.tanh(nn.Dense(width, name=f"dense{i}")(x))
        return nn.Dense(self.num_classes, name=f"dense{len(self.hidden_dims)}")(x)


class LogisticRegression(nn.Module):
    """Multinomial logistic regression (one dense layer) on flattened inputs.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> model = LogisticRegression(num_classes=2)
      >>> params = model.init(jax.random.key(0), jnp.zeros((1, 3)))
      >>> model.apply(params, jnp.zeros((4, 3))).shape
      (4, 2)
    """

    num_classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array | np.ndarray) -> jax.Array:
        x = jnp.asarray(x, jnp.float32).reshape((x.shape[0], -1))
        return nn.Dense(self.num_classes, name="dense0")(x)


class Layer(NamedTuple):
    """One affine layer of a :func:`layer_program`.

    ``kind`` is ``"dense"`` (input (N, K)) or ``"conv"`` (input: im2col patches (N, S, K), S output
    positions, K = kh·kw·c_in in the kernel's (h, w, c) order). ``after`` is applied to the
    affine output (N, O) / (N, S, O) to give the next layer's input (or the logits for the last).
    """

    name: str
    kind: str
    after: Callable[[jax.Array], jax.Array]


def im2col(x: jax.Array | np.ndarray, kh: int, kw: int) -> jax.Array:
    """Valid-convolution patches by slicing: (N, H, W, C) -> (N, (H−kh+1)(W−kw+1), kh·kw·C).

    The feature order (h, w, c) matches ``kernel.reshape(kh * kw * C, O)`` for flax's HWIO kernels.
    """
    n, h, w, c = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    cols = [x[:, i : i + oh, j : j + ow, :] for i in range(kh) for j in range(kw)]
    p = jnp.stack(cols, axis=3)  # (N, oh, ow, kh*kw, C)
    return p.reshape(n, oh * ow, kh * kw * c)


def _pool_tanh(z: jax.Array, side: int) -> jax.Array:
    """(N, side², C) conv output -> 2×2 max pool (floor) -> tanh, as (N, side//2, side//2, C)."""
    n, _, c = z.shape
    z = z.reshape(n, side, side, c)
    half = side // 2
    z = z[:, : 2 * half, : 2 * half, :].reshape(n, half, 2, half, 2, c).max(axis=(2, 4))
    return jnp.tanh(z)


def _same_patches(x: jax.Array) -> jax.Array:
    """3×3 "SAME" convolution patches: zero-pad by 1, then :func:`im2col`."""
    return im2col(jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))), 3, 3)


def _cifar_program() -> _Program:
    """CifarCNN as six im2col convolutions and two dense layers (tanh after each conv; the 2×2
    max pool after every second conv commutes with the monotone tanh)."""
    layers: list[Layer] = []
    side = 32
    for block, width in enumerate((32, 64, 128), start=1):
        for j in (1, 2):
            pool = j == 2
            last = block == 3 and pool

            def after(z: jax.Array, side: int = side, width: int = width, pool: bool = pool,
                      last: bool = last) -> jax.Array:
                a = jnp.tanh(z).reshape(z.shape[0], side, side, width)
                if pool:
                    half = side // 2
                    a = a.reshape(z.shape[0], half, 2, half, 2, width).max(axis=(2, 4))
                return a.reshape(z.shape[0], -1) if last else _same_patches(a)

            layers.append(Layer(f"conv{block}_{j}", "conv", after))
        side //= 2
    layers += [Layer("fc1", "dense", jnp.tanh), Layer("fc2", "dense", lambda z: z)]
    return (lambda x: _same_patches(jnp.asarray(x, jnp.float32))), layers


#: ``(prepare, layers)`` of :func:`layer_program`
_Program = tuple[Callable[[Any], jax.Array], list[Layer]]


def layer_program(model: nn.Module) -> _Program | None:
    """The model as a list of affine layers for :mod:`jaxaudit.dpsgd.private_step`.

    Returns ``(prepare, layers)``: ``prepare(inputs)`` maps raw inputs to the first layer's input
    (im2col patches for ``SmallCNN``; it does not depend on the parameters, so it is computed once
    per training run), and ``layers`` is a list of :class:`Layer`. Each ``after`` maps the affine
    output to the next layer's input. Returns ``None`` for a model without a program (the generic
    ``vmap(grad)`` path is used then).
    """
    if isinstance(model, SmallCNN):
        def prepare(x: ArrayLike) -> jax.Array:
            return im2col(_as_images(x), 5, 5)

        def after1(z: jax.Array) -> jax.Array:
            return im2col(_pool_tanh(z, 24), 4, 4)

        def after2(z: jax.Array) -> jax.Array:
            return _pool_tanh(z, 9).reshape(z.shape[0], -1)

        layers = [
            Layer("conv1", "conv", after1),
            Layer("conv2", "conv", after2),
            Layer("fc1", "dense", jnp.tanh),
            Layer("fc2", "dense", lambda z: z),
        ]
        return prepare, layers
    if isinstance(model, CifarCNN):
        return _cifar_program()
    if isinstance(model, MLP):
        n = len(model.hidden_dims)
        layers = [Layer(f"dense{i}", "dense", jnp.tanh) for i in range(n)]
        layers.append(Layer(f"dense{n}", "dense", lambda z: z))
        return (lambda x: jnp.asarray(x, jnp.float32).reshape((x.shape[0], -1))), layers
    if isinstance(model, LogisticRegression):
        return (lambda x: jnp.asarray(x, jnp.float32).reshape((x.shape[0], -1))), [
            Layer("dense0", "dense", lambda z: z)
        ]
    return None


def fast_apply(model: nn.Module, params: Any, inputs: ArrayLike) -> jax.Array:
    """``model.apply(params, inputs)`` through :func:`layer_program` (im2col matmuls instead of
    XLA convolutions, several times faster on CPU); falls back to ``model.apply``."""
    program = layer_program(model)
    if program is None:
        # flax types apply() as "output or (output, state)"; without ``mutable`` it is the output
        return model.apply(params, inputs)  # type: ignore[return-value]
    prepare, layers = program
    a, p = prepare(inputs), params["params"]
    for layer in layers:
        kernel = p[layer.name]["kernel"]
        if layer.kind == "conv":
            kernel = kernel.reshape(-1, kernel.shape[-1])
        a = layer.after(a @ kernel + p[layer.name]["bias"])
    return a


#: Names accepted by :func:`model_by_name` (and by ``jaxaudit rdp --model``).
MODELS = ("cnn", "mlp", "logreg", "cifar_cnn")


def model_by_name(name: str) -> nn.Module:
    """``"cnn"`` → :class:`SmallCNN`, ``"mlp"`` → ``MLP(hidden_dims=(32,))``, ``"logreg"``,
    ``"cifar_cnn"`` → :class:`CifarCNN` (the CIFAR-10 CNN of Annamalai & De Cristofaro, arXiv
    2405.14106)."""
    check_choice("model", name, MODELS)
    factories: dict[str, Callable[[], nn.Module]] = {
        "cnn": SmallCNN, "mlp": lambda: MLP(hidden_dims=(32,)), "logreg": LogisticRegression,
        "cifar_cnn": CifarCNN}
    return factories[name]()
