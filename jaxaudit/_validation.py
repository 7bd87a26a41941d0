"""The one validation layer: argument checks shared by every public function (host side).

Each validator is named for what it checks and raises ``ValueError`` (``TypeError`` for a value
of the wrong kind: a string, a complex number, a non-key) naming the argument and the offending
value as a plain number (``-1.0``, not ``array(-1.)``), so bad input never turns into a silent
wrong number.

Validation stays out of the way of ``jax.jit``: when a value is traced (the caller wrapped the
function in ``jax.jit``/``jax.vmap``) there is nothing to check and the check is skipped, so
validation happens once, at the outermost concrete call. A jitted public function therefore does
**not** validate its arguments (``jax.jit(posterior_success)(1.5, 1.0)`` returns NaN): validate
at the boundary, outside jit.

Types: a validator takes ``Any`` (refusing what is not a number, a path or a key is its job) and
is annotated with the type of its *concrete* result (a float64 ``np.ndarray``, ``int``, ``Path``);
under a transform the tracer it was given comes back unchanged.
"""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    import jax

_T = TypeVar("_T")


class _GraphLike(Protocol):
    """What :func:`check_graph` reads of a ``jaxaudit.graph.Graph`` (this module sits below the
    graph package, so it names the fields instead of importing the class)."""

    features: Any
    labels: Any
    senders: Any
    receivers: Any
    train_mask: Any
    val_mask: Any
    test_mask: Any
    num_classes: int


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


def _describe(arr: np.ndarray, bad: np.ndarray) -> str:
    first = arr[bad].ravel()[0] if arr.ndim else arr
    first = float(first)
    return f"{first!r}" if arr.size == 1 else f"{first!r} (and {int(bad.sum()) - 1} more)"


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


def check_nonnegative(name: str, value: Any) -> np.ndarray:
    """Refuse negative values, NaN and -inf; +inf is allowed (a vacuous ε, μ, ρ or ε_α).
    Skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = np.isnan(arr) | (arr < 0)
    if bad.any():
        raise ValueError(f"{name} must be >= 0, got {_describe(arr, bad)}")
    return arr


def check_positive(name: str, value: Any) -> np.ndarray:
    """Refuse values <= 0 and NaN (+inf allowed; use :func:`check_positive_finite` for a
    hyperparameter). Skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = np.isnan(arr) | (arr <= 0)
    if bad.any():
        raise ValueError(f"{name} must be > 0, got {_describe(arr, bad)}")
    return arr


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


def check_bool(name: str, value: object) -> bool:
    """Refuse anything but ``True``/``False`` (``"no"`` is truthy: refusing it matters)."""
    if not isinstance(value, bool | np.bool_):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_integer(name: str, value: Any, minimum: int | None = 0) -> int:
    """A concrete integer ≥ ``minimum`` (NaN, inf, fractions, strings and bools refused).

    ``minimum=1`` is the positive-integer check (a count of runs, steps, models, epochs).
    """
    if isinstance(value, str | bytes | bool | np.bool_):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    bound = "" if minimum is None else f" >= {minimum}"
    as_float: float
    if isinstance(value, numbers.Integral):
        as_float = int(value)
    else:
        try:
            as_float = float(np.asarray(value).reshape(()))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}") from err
    if not np.isfinite(as_float) or as_float != int(as_float):
        raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}")
    if minimum is not None and as_float < minimum:
        raise ValueError(f"{name} must be an integer{bound}, got {plain(value)}")
    return int(as_float)


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


def check_scores_and_masks(scores: Any, masks: Any, *, scores_name: str = "scores",
                           masks_name: str = "masks") -> None:
    """(R, N) finite-or-inf float scores without NaN and (R, N) boolean masks of that shape.
    Shapes are checked under a transform too; values only when concrete."""
    s_shape, m_shape = np.shape(scores), np.shape(masks)
    if len(s_shape) != 2:
        raise ValueError(f"{scores_name} must have shape (R, N), got {s_shape}")
    if m_shape != s_shape:
        raise ValueError(f"{masks_name} must have the shape of {scores_name} {s_shape}, got {m_shape}")
    if is_traced(scores, masks):
        return
    m = np.asarray(masks)
    if m.dtype != bool and not np.isin(m, (0, 1)).all():
        raise ValueError(f"{masks_name} must be boolean (0/1)")
    if np.isnan(_as_array(scores_name, scores)).any():
        raise ValueError(f"{scores_name} must not contain NaN")


def check_binary(name: str, value: _T) -> _T:
    """Boolean values, or numbers that are all 0 or 1 (labels, hard decisions); anything else
    (a score, 0.5, 2, NaN) is refused. Returned unchanged; skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(f"{name} must be boolean (0/1), got {_describe(arr, bad)}")
    return value


def check_graph(graph: _GraphLike) -> None:
    """A node-classification graph whose arrays agree: features (N, F) finite, labels (N,)
    integers in [0, num_classes), senders/receivers (E,) integers in [0, N) of equal length,
    masks (N,). ValueError naming the field (an out-of-range index would otherwise be clipped or
    dropped silently by XLA's gathers and scatters)."""
    if is_traced(graph.features, graph.labels, graph.senders, graph.receivers):
        return
    features = np.asarray(graph.features)
    if features.ndim != 2:
        raise ValueError(f"graph.features must have shape (N, F), got {features.shape}")
    n = features.shape[0]
    if not np.isfinite(features).all():
        raise ValueError("graph.features must be finite")
    labels = np.asarray(graph.labels)
    if labels.shape != (n,):
        raise ValueError(f"graph.labels must have shape ({n},), got {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise ValueError(f"graph.labels must be integers, got dtype {labels.dtype}")
    k = int(graph.num_classes)
    if n and (labels.min() < 0 or labels.max() >= k):
        bad = labels[(labels < 0) | (labels >= k)][0]
        raise ValueError(f"graph.labels must lie in [0, num_classes={k}), got {int(bad)}")
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    if senders.ndim != 1 or receivers.shape != senders.shape:
        raise ValueError(f"graph.senders and graph.receivers must be 1-D of equal length, got "
                         f"shapes {senders.shape} and {receivers.shape}")
    for field, idx in (("senders", senders), ("receivers", receivers)):
        if idx.dtype.kind not in "iu":
            raise ValueError(f"graph.{field} must be integers, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise ValueError(f"graph.{field} must lie in [0, N={n}), got {int(bad)}")
    for field in ("train_mask", "val_mask", "test_mask"):
        shape = np.shape(getattr(graph, field))
        if shape != (n,):
            raise ValueError(f"graph.{field} must have shape ({n},), got {shape}")


def check_labels(name: str, labels: Any, num_classes: int | None = None) -> np.ndarray:
    """Integer class labels (integral floats accepted, fractions refused) in [0, num_classes)
    when ``num_classes`` is known (else >= 0); returned as an int64 array (unchecked and
    unchanged when traced)."""
    if is_traced(labels):
        return labels
    arr = _as_array(name, labels)
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].ravel()[0]
        raise ValueError(f"{name} must be integer class labels, got {float(bad)!r}")
    high = np.inf if num_classes is None else int(num_classes)
    bad = (arr < 0) | (arr >= high)
    if bad.any():
        interval = "[0, inf)" if num_classes is None else f"[0, num_classes={high})"
        raise ValueError(f"{name} must lie in {interval}, got {_describe(arr, bad)}")
    return arr.astype(np.int64)


def _writable_ancestor(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (where a missing folder would be created)."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(name: str, path: str | os.PathLike[str]) -> Path:
    """A file that can be written: not an existing folder, its folder creatable and writable.
    Checked before any work, so a bad path fails at once and not after the computation."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} {path} is a folder; give a file name")
    folder = path.parent if path.parent.exists() else _writable_ancestor(path)
    if not folder.is_dir():
        raise ValueError(f"{name} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: folder {folder} is not writable")
    return path


def check_output_dir(name: str, path: str | os.PathLike[str]) -> Path:
    """A folder that can be written: not an existing file, creatable and writable. Checked
    before any work."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file, not a folder")
    target = path if path.exists() else _writable_ancestor(path)
    if not target.is_dir():
        raise ValueError(f"{name} {path}: {target} is not a folder")
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: {target} is not writable")
    return path


def check_input_path(name: str, path: str | os.PathLike[str], *, folder: bool = False) -> Path:
    """An existing file (or folder with ``folder=True``); FileNotFoundError naming ``name``."""
    path = Path(path)
    if not (path.is_dir() if folder else path.is_file()):
        what = "folder" if folder else "file"
        raise FileNotFoundError(f"{name} {what} not found: {path}")
    return path


def check_broadcast(**arrays: Any) -> tuple[int, ...]:
    """The broadcast shape of the named arguments; ValueError naming them when they do not
    broadcast together (instead of numpy's or XLA's raw shape error)."""
    shapes = {name: np.shape(value) for name, value in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shapes do not broadcast together: {listed}") from None


def check_score_vector(name: str, value: Any, minimum: int = 4) -> np.ndarray:
    """A finite 1-D array of at least ``minimum`` scores (one per run), as float64 (a traced
    value: only its shape is checked)."""
    arr = check_finite(name, value)
    if arr.ndim != 1 or arr.size < minimum:
        raise ValueError(f"{name} must be a 1-D array of at least {minimum} scores, got shape "
                         f"{arr.shape}")
    return arr


def check_orders(name: str, orders: Any) -> np.ndarray:
    """Rényi orders: a non-empty 1-D array (a scalar becomes length 1) of finite α > 1."""
    if is_traced(orders):
        return orders
    arr = np.atleast_1d(check_finite(name, orders))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    if (arr <= 1).any():
        raise ValueError(f"{name} must all be > 1, got {float(arr[arr <= 1][0])!r}")
    return arr


def check_order_limits(name: str, value: Any) -> np.ndarray:
    """Rényi order(s) α ∈ [1, ∞] for a closed form that has the limits (α = 1: KL, α = ∞: the
    max-divergence): NaN and α < 1 refused, +inf allowed; any shape. Skipped when traced."""
    if is_traced(value):
        return value
    arr = _as_array(name, value)
    bad = np.isnan(arr) | (arr < 1)
    if bad.any():
        raise ValueError(f"{name} must be >= 1 (1 and inf are the limits), got {_describe(arr, bad)}")
    return arr


def failure_probability(function: str, old: str, old_value: Any, confidence: Any,
                        default_confidence: float | None = None, stacklevel: int = 3) -> Any:
    """The failure probability β from ``confidence`` = 1 − β (new) or the deprecated
    positional/keyword ``old`` = β itself (warns; kept exactly). Traced values pass through."""
    if old_value is not None and confidence is not None:
        raise ValueError(f"{function}: give confidence only ({old} is its deprecated "
                         "complement), not both")
    if old_value is not None:
        warnings.warn(f"{function}({old}=...) is deprecated: it is a failure probability; "
                      f"pass confidence=1 - {old} instead", DeprecationWarning,
                      stacklevel=stacklevel)
        if not is_traced(old_value):
            old_value = check_probability(old, old_value, open_low=True)
        return old_value
    if confidence is None:
        if default_confidence is None:
            raise ValueError(f"{function}: confidence is required (e.g. confidence=0.95)")
        confidence = default_confidence
    if not is_traced(confidence):
        confidence = check_probability("confidence", confidence, open_high=True)
    return 1.0 - confidence
