"""Checks of single arguments shared by every domain: numbers, probabilities, shapes, choices,
integers and PRNG keys (host side).

Each validator is named for what it checks and raises ``ValueError`` (``TypeError`` for a value
of the wrong kind: a string, a complex number, a non-key) naming the argument and the offending
value as a plain number (``-1.0``, not ``array(-1.)``), so bad input never turns into a silent
wrong number. When a value is traced (inside the caller's ``jax.jit``/``jax.vmap``) there is
nothing to check and the check is skipped: validation happens once, at the outermost concrete
call.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    import jax

_T = TypeVar("_T")


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong kind (a string for a number, a complex prior, a non-key).

    A ``TypeError`` that is also a ``ValueError``, so that callers (and the CLI) catching the
    ``ValueError`` of a bad argument catch it too.
    """


def is_traced(*values: Any) -> bool:
    """True when any of ``values`` (pytrees allowed) is a JAX tracer (inside jit/vmap/grad)."""
    import jax

    return any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(values))


def plain(value: object) -> str:
    """``value`` as a user reads it: ``-1.0`` rather than ``array(-1.)``, ``'x'`` for strings."""
    if isinstance(value, str | bytes):
        return repr(value)
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything numpy cannot hold is shown as is
        return repr(value)
    if arr.dtype.kind in "biuf" and arr.ndim == 0:
        return repr(arr.item())
    if arr.dtype.kind in "biuf" and arr.size <= 6:
        return repr(arr.tolist())
    if arr.dtype.kind in "biuf":
        return f"array of shape {arr.shape}"
    return repr(value)


def _as_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array; strings, bytes, complex and non-numeric values refused."""
    if isinstance(value, str | bytes):
        raise ArgumentTypeError(f"{name} must be numeric, got the string {value!r}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ArgumentTypeError(f"{name} must be numeric, got {value!r}") from err
    if raw.dtype.kind == "c":
        raise ArgumentTypeError(f"{name} must be real, got the complex value {plain(value)}")
    if raw.dtype.kind == "V":  # bfloat16 and float8 (ml_dtypes) are floats: upcast
        import jax.numpy as jnp

        if jnp.issubdtype(raw.dtype, jnp.floating):
            return raw.astype(np.float64)
    if raw.dtype.kind not in "biuf":
        raise ArgumentTypeError(f"{name} must be numeric, got {value!r} (dtype {raw.dtype})")
    return raw.astype(np.float64)


def _describe(arr: np.ndarray, bad: np.ndarray, *, integers: bool = False) -> str:
    """The first bad value (as an integer when ``integers`` and it is integral: labels, counts),
    and how many more there are."""
    first = float(arr[bad].ravel()[0] if arr.ndim else arr)
    text = str(int(first)) if integers and np.isfinite(first) and first == int(first) \
        else repr(first)
    more = int(bad.sum()) - 1 if arr.size > 1 else 0
    return f"{text} (and {more} more)" if more else text


def check_numeric(name: str, value: Any) -> np.ndarray:
    """A real numeric value (not a string, complex or object) as a float64 numpy array."""
    if is_traced(value):
        return value
    return _as_array(name, value)


def check_finite(name: str, value: Any) -> np.ndarray:
    """Refuse NaN/inf; return the value as a float64 numpy array (skipped when traced)."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} must be finite, got {_describe(arr, bad)}")
    return arr


def check_probability(name: str, value: Any, *, open_low: bool = False, open_high: bool = False
                      ) -> np.ndarray:
    """Refuse values outside [0, 1] (or the open ends asked for) and NaN (skipped when traced).

    ``open_high=True`` is a δ in [0, 1); both open ends a significance level in (0, 1).
    """
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    low_bad = arr <= 0 if open_low else arr < 0
    high_bad = arr >= 1 if open_high else arr > 1
    bad = low_bad | high_bad
    if bad.any():
        interval = ("(" if open_low else "[") + "0, 1" + (")" if open_high else "]")
        raise ValueError(f"{name} must lie in {interval}, got {_describe(arr, bad)}")
    return arr


def check_at_least(name: str, value: Any, lower: float, *, strict: bool = False,
                   note: str = "") -> np.ndarray:
    """Refuse NaN and values below ``lower`` (with ``strict``, also ``lower`` itself); +inf is
    allowed. ``note`` follows the bound in the message. Skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = np.isnan(arr) | ((arr <= lower) if strict else (arr < lower))
    if bad.any():
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be {relation} {lower}{note}, got {_describe(arr, bad)}")
    return arr


def check_nonnegative(name: str, value: Any) -> np.ndarray:
    """Refuse negative values, NaN and -inf; +inf is allowed (a vacuous ε, μ, ρ or ε_α).
    Skipped when traced."""
    return check_at_least(name, value, 0)


def check_positive(name: str, value: Any) -> np.ndarray:
    """Refuse values <= 0 and NaN (+inf allowed; use :func:`check_positive_finite` for a
    hyperparameter). Skipped when traced."""
    return check_at_least(name, value, 0, strict=True)


def check_positive_finite(name: str, value: Any) -> np.ndarray:
    """Refuse values <= 0, NaN and ±inf (a learning rate, clip norm, noise scale)."""
    check_finite(name, value)
    return check_positive(name, value)


def check_nonnegative_finite(name: str, value: Any) -> np.ndarray:
    """Refuse negative values, NaN and ±inf (a weight decay, a dropout-free rate)."""
    check_finite(name, value)
    return check_nonnegative(name, value)


def check_shape(name: str, value: Any, shape: tuple[int | None, ...]) -> None:
    """Refuse an array whose shape differs from ``shape`` (None entries match any size)."""
    actual = np.shape(value)
    if len(actual) != len(shape) or any(s is not None and s != a for s, a in zip(shape, actual)):
        raise ValueError(f"{name} must have shape {shape}, got {actual}")


def check_choice(name: str, value: object, choices: Collection[Any]) -> None:
    """Refuse a value not among ``choices``."""
    try:
        ok = value in choices
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}, got {value!r}")


def check_instance(name: str, value: object, cls: type[_T]) -> _T:
    """``value``, refused unless it is a ``cls`` (a configuration NamedTuple, a result); the
    message names the class by its public home (``jaxaudit.<package>.<Name>``)."""
    if not isinstance(value, cls):
        home = ".".join(cls.__module__.split(".")[:2])
        raise ArgumentTypeError(f"{name} must be a {home}.{cls.__qualname__}, got "
                                f"{type(value).__name__}")
    return value


def check_bool(name: str, value: object) -> bool:
    """Refuse anything but ``True``/``False`` (``"no"`` is truthy: refusing it matters)."""
    if not isinstance(value, bool | np.bool_):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


INT64_MAX = 2**63 - 1


#: The annotations :func:`check_config_fields` enforces, and what each admits.
_FIELD_KINDS = {"bool": "True or False", "int": "an integer", "float": "a real number",
                "str": "a string", "Path": "a path", "None": "None"}


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "None":
        return value is None
    if kind == "str":
        return isinstance(value, str)
    if kind == "Path":
        return isinstance(value, os.PathLike)
    if isinstance(value, np.ndarray | np.generic) or type(value).__module__.startswith("jax"):
        dtype = getattr(value, "dtype", None)
        if np.ndim(value) != 0 or dtype is None:
            return False
        dtype_kind = np.dtype(dtype).kind if not str(dtype).startswith("key") else "V"
        return {"bool": dtype_kind == "b", "int": dtype_kind in "iu",
                "float": dtype_kind in "iuf"}[kind]
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral if kind == "int" else numbers.Real)


def check_config_fields(config: Any, name: str = "") -> None:
    """The field check that every configuration ``NamedTuple``'s ``check()`` starts with.

    A field annotated with ``int``, ``float``, ``bool``, ``str``, ``Path`` and ``None`` (or a
    union of them) must hold a value of one of those kinds: an ``int`` field refuses 16.0 and
    True, a ``bool`` field refuses ``"yes"``, ``"False"`` and 1, a ``float`` field refuses
    strings and booleans (0-d numpy/JAX arrays of the kind pass). A field holding another
    configuration (a ``NamedTuple`` with a ``check()`` method) is checked by it, so configurations
    nest. Other annotations (sequences, callables, prior specifications) are left to the
    configuration's own value checks.

    Args:
      config: the configuration.
      name: a prefix for the field names in messages (``"config"`` names ``config.steps``).

    Raises:
      ArgumentTypeError: naming the field, what it must be and the value.
    """
    for field, hint in getattr(type(config), "__annotations__", {}).items():
        value = getattr(config, field, None)
        if is_traced(value):
            continue
        nested = getattr(value, "check", None) if isinstance(value, tuple) else None
        if callable(nested) and hasattr(value, "_fields"):
            nested()  # a nested configuration: its own check
            continue
        text = hint if isinstance(hint, str) else getattr(hint, "__forward_arg__", None)
        if text is None:
            text = getattr(hint, "__name__", "")
        kinds = [part.strip() for part in text.split("|")]
        if not kinds or any(kind not in _FIELD_KINDS for kind in kinds):
            continue
        if not any(_is_kind(value, kind) for kind in kinds):
            want = " or ".join(_FIELD_KINDS[kind] for kind in kinds)
            label = f"{name}.{field}" if name else field
            raise ArgumentTypeError(f"{label} must be {want}, got {value!r}")


def check_integer(
    name: str, value: Any, minimum: int | None = 0, maximum: int | None = INT64_MAX
) -> int:
    """A concrete integer in ``[minimum, maximum]`` (NaN, inf, fractions, strings and bools refused).

    ``minimum=1`` is the positive-integer check (a count of runs, steps, models, epochs).
    ``maximum`` defaults to the largest 64-bit signed integer, because the value usually goes
    on into numpy or JAX; pass ``maximum=None`` where an unbounded Python int is meaningful
    (e.g. the size of a secret space, which may exceed ``2**64``). Python ints are compared
    exactly, however large.
    """
    if isinstance(value, str | bytes | bool | np.bool_):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    bound = "" if minimum is None else f" >= {minimum}"
    exact: int
    if isinstance(value, numbers.Integral):
        exact = int(value)
    else:
        try:
            as_float = float(np.asarray(value).reshape(()))
        except (TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}") from err
        if not np.isfinite(as_float) or as_float != int(as_float):
            raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}")
        exact = int(as_float)
    if minimum is not None and exact < minimum:
        raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}")
    if maximum is not None and exact > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {plain(value)}")
    return exact


def check_chunk_size(chunk_size: Any, name: str = "chunk_size") -> int | None:
    """None (everything in one step) or a positive integer."""
    return None if chunk_size is None else check_integer(name, chunk_size, minimum=1)


def as_vector(name: str, value: Any) -> np.ndarray | jax.Array:
    """A concrete 1-D float64 array (a scalar becomes length 1); ValueError on other ranks.
    A traced value is returned as a 1-D ``jnp`` array of its own dtype (nothing to check)."""
    if is_traced(value):
        import jax.numpy as jnp

        return jnp.atleast_1d(value)
    arr = _as_array(name, value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    return arr


def as_scalar(name: str, value: Any) -> float:
    """A concrete scalar as a Python float; ValueError naming ``name`` for arrays, TypeError for
    strings and other non-numbers. A traced value is returned unchanged (nothing to check)."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    if arr.ndim != 0 and arr.size != 1:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return float(arr.reshape(()))


def check_key(name: str, key: Any) -> None:
    """Refuse anything but a JAX PRNG key (typed ``jax.random.key`` or legacy uint32 (2,))."""
    import jax
    import jax.numpy as jnp

    if is_traced(key):
        return
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return
    arr = np.asarray(key) if isinstance(key, np.ndarray | jax.Array) else None
    if arr is not None and arr.dtype == np.uint32 and arr.shape[-1:] == (2,):
        return
    raise ArgumentTypeError(f"{name} must be a JAX PRNG key (jax.random.key(seed)), got {plain(key)}")


def check_one_key(name: str, key: Any) -> None:
    """:func:`check_key` for a function that draws from one key: a batch of keys
    (``jax.random.split(key, n)``) is refused too, naming ``name``. Tracers pass (under
    ``jax.vmap`` a batched key arrives as one key per item)."""
    check_key(name, key)
    if is_traced(key):
        return
    import jax
    import jax.numpy as jnp

    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    batch = tuple(key.shape) if typed else tuple(np.shape(key)[:-1])
    if batch:
        raise ValueError(f"{name} must be one PRNG key, got a batch of keys of shape {batch} "
                         f"(jax.vmap over it, or pass one of them)")


def typed_key(key: Any) -> Any:
    """A typed PRNG key: legacy uint32 key data (``jax.random.PRNGKey(s)``, shape (..., 2)) is
    wrapped, so it draws what ``jax.random.key(s)`` draws; a typed key passes unchanged.
    Traceable (no check: call :func:`check_key` on concrete keys first)."""
    import jax
    import jax.numpy as jnp

    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    return jax.random.wrap_key_data(jnp.asarray(key, jnp.uint32))


def host_seed(key: Any, name: str = "key") -> int:
    """The seed of a host-side numpy generator derived from a PRNG key (checked with
    :func:`check_key`): its key data read as one big-endian integer, so ``jax.random.key(s)``
    and the legacy ``jax.random.PRNGKey(s)`` give ``s`` itself
    (``np.random.default_rng(host_seed(jax.random.key(s)))`` is ``np.random.default_rng(s)``)."""
    import jax

    check_key(name, key)
    key = typed_key(key)
    seed = 0
    for word in np.asarray(jax.random.key_data(key)).ravel().tolist():
        seed = (seed << 32) | int(word)
    return seed


def check_broadcast(**arrays: Any) -> tuple[int, ...]:
    """The broadcast shape of the named arguments; ValueError naming them when they do not
    broadcast together (instead of numpy's or XLA's raw shape error)."""
    shapes = {name: np.shape(value) for name, value in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shapes do not broadcast together: {listed}") from None
