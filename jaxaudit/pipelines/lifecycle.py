"""The run-folder lifecycle every pipeline shares, and the configuration a run folder stores.

A pipeline with a run folder (:func:`open_run`):

1. checks every configuration field before anything is written (errors name the field);
2. opens the folder, or resumes it when it holds the same configuration (another one is
   refused), with the configuration stored as the ``NamedTuple``'s own fields, nested
   configurations as nested objects (:func:`stored_config`: ``config._asdict()`` applied
   recursively, without the fields that change no number, plus the values derived from it under
   the key ``"derived"``, e.g. the key rule, a file's SHA-256 and the precision JAX computes in,
   ``"float32"`` or ``"float64"`` under ``JAX_ENABLE_X64=1``: a folder is never filled by
   processes of two precisions, whose chunks would hold different models);
3. computes its work units through :func:`jaxaudit.runs.run_chunks` (where they run: a
   :class:`jaxaudit.runs.Sweep`);
4. when the block fails before any unit is finished, removes what the call wrote into a folder
   it created (:func:`jaxaudit.runs.rundir.discard_new_run`), so the corrected call can use the
   same folder instead of being refused as another configuration;
5. assembles its result and renders its tables and figures through :mod:`jaxaudit.report`.

The configuration hash that guards a folder (:func:`jaxaudit.runs.files.config_hash`) is taken
over this nested stored form.
"""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxaudit._validation import check_integer, check_output_dir
from jaxaudit.runs import KEY_RULE, RunDir
from jaxaudit.runs.files import jsonable
from jaxaudit.runs.rundir import MANIFEST, discard_new_run, read_manifest

__all__ = ["bounded", "config_from_stored", "open_run", "precision", "stored_config",
           "stored_fields"]


def stored_fields(config: NamedTuple, exclude: tuple[str, ...] = ()) -> dict:
    """The fields of ``config`` as a dict, a nested configuration (a ``NamedTuple`` field) as a
    nested dict, without the ``exclude`` fields (dotted for a nested one: ``"shadow.data_dir"``)."""
    def fields(value: Any, prefix: str) -> Any:
        if not (isinstance(value, tuple) and hasattr(value, "_asdict")):
            return value
        return {k: fields(v, f"{prefix}{k}.") for k, v in value._asdict().items()
                if f"{prefix}{k}" not in exclude}

    return fields(config, "")


def config_from_stored(cls: Any, stored: dict) -> Any:
    """The configuration ``cls`` back from its stored form (the inverse of
    :func:`stored_fields`): each stored field by its name, a nested configuration rebuilt from
    its nested dict (its type from ``cls``'s annotation), a field not stored at its default.

    Raises:
      ValueError: the stored form holds a field ``cls`` does not have (a folder written by an
        earlier layout of the configuration), naming it.
    """
    unknown = sorted(set(stored) - set(cls._fields) - {"derived"})
    if unknown:
        raise ValueError(f"the stored configuration holds {', '.join(unknown)}, which "
                         f"{cls.__name__} does not have: it was written by an earlier version; "
                         "run it again into a new folder")
    hints = typing.get_type_hints(cls)
    fields = {}
    for name in cls._fields:
        if name not in stored:
            continue
        value = stored[name]
        if isinstance(value, dict):
            kinds = typing.get_args(hints[name]) or (hints[name],)
            value = config_from_stored(next(k for k in kinds if hasattr(k, "_fields")), value)
        fields[name] = value
    return cls(**fields)


def stored_config(config: NamedTuple, derived: dict | None = None,
                  exclude: tuple[str, ...] = ()) -> dict:
    """The configuration a run folder stores: the fields of ``config`` (:func:`stored_fields`,
    without ``exclude``, the fields that change no number), as JSON values, and under
    ``"derived"`` the values derived from them (always the key rule,
    :data:`jaxaudit.runs.KEY_RULE`, and this process's :func:`precision`)."""
    return jsonable(stored_fields(config, exclude)) | {"derived": jsonable(
        {"key_rule": KEY_RULE, **(derived or {}), "precision": precision()})}


def precision() -> str:
    """The floating-point precision JAX computes in here: ``"float64"`` when x64 is enabled
    (``JAX_ENABLE_X64=1``, ``jax.config.update("jax_enable_x64", True)`` or inside
    ``jax.enable_x64()``), else ``"float32"``."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64)).name


def _x64_setting(name: str) -> str:
    return "JAX_ENABLE_X64=1" if name == "float64" else "JAX_ENABLE_X64=0 (the default)"


def _check_precision(run_dir: str | Path, kind: str, stored: dict) -> None:
    """Refuse to resume a run folder made in another precision, naming both and the remedy."""
    try:
        manifest = read_manifest(run_dir)
    except (FileNotFoundError, ValueError):
        return  # no run yet, or RunDir.open says what is wrong
    derived = manifest["config"].get("derived")
    before = derived.get("precision") if isinstance(derived, dict) else None
    now = stored["derived"]["precision"]
    if manifest["kind"] == kind and isinstance(before, str) and before != now:
        raise ValueError(
            f"{run_dir} holds a {kind!r} run computed in {before}, but this process computes in "
            f"{now}: its chunks would mix models of two precisions. Resume it with "
            f"{_x64_setting(before)} (as every process that fills it), or choose another "
            "output folder")


@contextlib.contextmanager
def open_run(run_dir: str | Path | None, kind: str, stored: dict) -> Iterator[RunDir | None]:
    """The run folder of ``kind`` opened (created, or resumed under the same ``stored``
    configuration; None computes in memory); when the block raises before any chunk is
    finished, what it wrote into a folder this call created is removed again."""
    if run_dir is None:
        yield None
        return
    check_output_dir("run_dir", run_dir)
    existed, had_folder = (Path(run_dir) / MANIFEST).exists(), Path(run_dir).exists()
    if existed:
        _check_precision(run_dir, kind, stored)
    run = RunDir.open(run_dir, kind=kind, config=stored)
    try:
        yield run
    except BaseException:
        discard_new_run(run.path, existed, keep_folder=had_folder)
        raise


def bounded(name: str, value: Any, low: int, high: int) -> int:
    """An integer in [low, high]; ValueError naming ``name``."""
    value = check_integer(name, value, minimum=low)
    if value > high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value}")
    return value
