"""Parameter pytrees as named arrays, so that a run folder can store them as one chunk.

A chunk of :class:`jaxaudit.runs.RunDir` is a flat ``{name: array}`` mapping (an ``.npz``). A
pytree of parameters (e.g. a flax ``params`` dict) is stored leaf by leaf under the names
``leaf_000``, ``leaf_001``, … in :func:`jax.tree.leaves` order, and read back by unflattening
into the tree structure of a template with the same structure (e.g. a fresh ``model.init``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

__all__ = ["params_to_arrays", "params_from_arrays"]


def _leaf_name(i: int) -> str:
    return f"leaf_{i:03d}"


def params_to_arrays(params: Any) -> dict[str, np.ndarray]:
    """``{"leaf_000": leaf 0, "leaf_001": leaf 1, …}`` as host numpy arrays.

    Examples:
      >>> sorted(params_to_arrays({"w": np.ones(2), "b": 0.5}))
      ['leaf_000', 'leaf_001']
    """
    return {_leaf_name(i): np.asarray(v) for i, v in enumerate(jax.tree.leaves(params))}


def params_from_arrays(arrays: Mapping[str, Any], like: Any) -> Any:
    """The pytree of :func:`params_to_arrays`'s output, with the structure of ``like``.

    Args:
      arrays: the ``{"leaf_000": …}`` mapping (e.g. a chunk loaded from a run folder).
      like: any pytree with the stored tree's structure (its leaf values are not used).

    Returns:
      A pytree structured like ``like`` holding the stored arrays.

    Raises:
      ValueError: the names are not ``leaf_000`` … ``leaf_{k−1}`` for the k leaves of ``like``.

    Examples:
      >>> tree = {"w": np.ones(2), "b": np.zeros(())}
      >>> back = params_from_arrays(params_to_arrays(tree), like=tree)
      >>> back["w"].tolist()
      [1.0, 1.0]
    """
    treedef = jax.tree.structure(like)
    # PyTreeDef comes from jaxlib's C++ extension, which mypy cannot resolve
    names = [_leaf_name(i) for i in range(treedef.num_leaves)]  # type: ignore[attr-defined]
    if sorted(arrays) != names:
        raise ValueError(f"arrays must hold exactly {names[:3]}… ({len(names)} leaves of like), "
                         f"got {sorted(arrays)[:3]}… ({len(arrays)} entries)")
    return jax.tree.unflatten(treedef, [arrays[name] for name in names])
