"""Run a per-item function over a large batch: chunked, vmapped and sharded over devices.

Shadow models, canary runs and per-node posteriors are all "the same pure function applied to R
independent items". :func:`vmap_chunked` turns such a function into one jit-compiled call that

* splits the R items into chunks processed one after another with ``lax.map`` (memory bound);
* inside a chunk, vmaps over the items, with the item axis sharded over a one-axis
  ``jax.sharding.Mesh`` of the devices through ``jax.shard_map`` (one device is the degenerate
  case of the same code path);
* pads R up to a multiple of the chunk size by repeating the last item, and drops the padding.

Each item's result depends only on that item, so results do not depend on the chunk size or the
device count, up to floating-point reassociation inside XLA's batched kernels.

Multi-host (TPU pods, multi-GPU clusters): call ``jax.distributed.initialize()`` at the start of
the program on every host (on a Cloud TPU pod slice it needs no arguments::

    gcloud compute tpus tpu-vm ssh NAME --worker=all --command="python my_audit.py"

with ``jax.distributed.initialize()`` as the first line of ``my_audit.py``); ``jax.devices()`` then
lists the devices of all hosts and the mesh built here spans them. Every process calls the map
with the same inputs (checked), which are placed as global arrays; every process gets the whole
result back as process-local arrays (docs/scaling.md, "Multi-process JAX", which also says how
run folders are written by process 0 only).

Every CPU core (one host, no accelerator): JAX's CPU backend is one device unless
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` is set before JAX initialises its
backend; then it has N devices and the maps here split every chunk into N shards that run
concurrently. The ``jaxaudit`` command does this by default (one device per core);
library users call :func:`use_all_cpu_cores` before their first JAX computation.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxaudit._validation import check_chunk_size, is_traced
from jaxaudit._xla_flags import DEVICE_COUNT_FLAG, with_cpu_flags

__all__ = ["vmap_chunked", "batch_mesh", "use_all_cpu_cores", "cpu_core_count"]

#: Name of the mesh axis that carries the item (model / run / node) axis.
BATCH_AXIS = "batch"


def cpu_core_count() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _backends_initialised() -> bool:
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def use_all_cpu_cores() -> bool:
    """Make every CPU core a JAX CPU device, so that :func:`vmap_chunked` (and the functions built
    on it: ``canary_runs``, ``train_shadow_models``, ``posterior_nuts``) shard over all of them.

    Call it after ``import jax`` and before the first JAX computation (anything that creates an
    array or lists devices), e.g. at the top of a script::

        import jax
        from jaxaudit.sharding import use_all_cpu_cores

        use_all_cpu_cores()
        print(jax.devices())  # one CpuDevice per core

    It appends ``--xla_force_host_platform_device_count=<cores>`` to ``XLA_FLAGS`` (inherited by
    subprocesses started afterwards). It changes nothing when the user already chose: when
    ``XLA_FLAGS`` holds that flag, when ``jax_num_cpu_devices`` is configured, or when
    ``JAX_PLATFORMS`` (``jax_platforms``) names a platform other than ``cpu`` alone. With the
    device count it appends ``--xla_cpu_experimental_ynn_fusion_type=`` (XLA:CPU's YNNPACK
    fusions off: DP-SGD canary runs about 1.12× faster, the GCN and BMP workloads no slower;
    benchmarks/README.md) unless
    ``XLA_FLAGS`` sets that flag itself. The ``jaxaudit`` command applies the same rule before it
    imports JAX.

    Returns:
      True when every core is, or will be once JAX starts, its own CPU device (also when the
      user's setting or an earlier call already says so); False otherwise: another choice of the
      user, another platform, or too late.

    Warns:
      RuntimeWarning: JAX's backend is already initialised with another number of CPU devices;
        the device count cannot change in this process any more.
    """
    cores = cpu_core_count()
    flags = os.environ.get("XLA_FLAGS", "")
    chosen = re.search(rf"{DEVICE_COUNT_FLAG}=(\S*)", flags)
    config: Any = jax.config  # its options are attributes that type stubs do not declare
    if config.jax_num_cpu_devices >= 0:
        return config.jax_num_cpu_devices == cores
    if chosen is not None:  # the user's (or an earlier call's) choice
        return chosen.group(1) == str(cores)
    platforms = (config.jax_platforms or os.environ.get("JAX_PLATFORMS") or "").strip().lower()
    if platforms not in ("", "cpu"):
        return False
    if _backends_initialised():
        have = len(jax.devices("cpu"))
        if have == cores:
            return True
        warnings.warn(
            f"use_all_cpu_cores() came too late: JAX already initialised its backend with {have} "
            f"CPU device(s) for {cores} cores, and this process keeps them. Call it before the "
            "first JAX computation, or start Python with "
            f"XLA_FLAGS={DEVICE_COUNT_FLAG}={cores}.",
            RuntimeWarning, stacklevel=2,
        )
        return False
    os.environ["XLA_FLAGS"] = with_cpu_flags(flags, cores)
    return True


def batch_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh over ``devices`` (default: all visible devices, every host)."""
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("devices must name at least one device")
    return Mesh(np.asarray(devs), (BATCH_AXIS,))


def _leading_size(xs: Any) -> int:
    leaves = jax.tree.leaves(xs)
    if not leaves:
        raise ValueError("xs must contain at least one array with a leading batch axis")
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"every leaf of xs needs the same leading batch axis, got sizes {sizes}")
    return sizes.pop()


def _spans_processes(mesh: Mesh) -> bool:
    """True when ``mesh`` holds a device of another JAX process (after
    ``jax.distributed.initialize()``): its arrays are then global, not addressable here alone."""
    me = jax.process_index()
    return any(d.process_index != me for d in mesh.devices.flat)


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _local_value(x: Any) -> tuple[Any, Any]:
    """``(value, key_impl)``: a leaf as a process-local array (a typed PRNG key array as its raw
    ``key_data``, with the key implementation to rewrap it; other leaves with None)."""
    impl = None
    if _is_key(x):
        impl = jax.random.key_impl(x)
        x = jax.random.key_data(x)
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        x = multihost_utils.process_allgather(x, tiled=True)
    return (x if isinstance(x, jax.Array) else np.asarray(x)), impl


def _is_array_leaf(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray | np.generic)


def _fingerprint(leaves: Sequence[Any]) -> np.ndarray:
    """SHA-256 of the shapes, dtypes and bytes of ``leaves`` as 8 uint32 (equal on every process
    exactly when every process was given the same values)."""
    digest = hashlib.sha256()
    for leaf in leaves:
        host = np.ascontiguousarray(np.asarray(leaf))
        if host.dtype == object:
            digest.update(repr(leaf).encode())
            continue
        digest.update(f"{host.shape}{host.dtype.str};".encode())
        digest.update(host.view(np.uint8).tobytes())
    return np.frombuffer(digest.digest(), np.uint32).copy()


def _check_same_on_every_process(xs_leaves: Sequence[Any], shared_leaves: Sequence[Any]) -> None:
    """``ValueError`` on every process when some process was given other inputs than another
    (the global arrays would silently mix them)."""
    from jax.experimental import multihost_utils

    mine = np.stack([_fingerprint(xs_leaves), _fingerprint(shared_leaves)])
    every = np.asarray(multihost_utils.process_allgather(mine))  # (processes, 2, 8)
    for k, name in enumerate(("xs", "shared arguments")):
        if not (every[:, k] == every[0, k]).all():
            differ = [p for p in range(every.shape[0]) if not (every[p, k] == every[0, k]).all()]
            raise ValueError(
                f"{name} must be the same on every JAX process (each process passes the whole "
                f"batch and vmap_chunked places it as one global array); process(es) {differ} "
                "were given other values than process 0")


def vmap_chunked(
    fn: Callable,
    *,
    chunk_size: int | None = None,
    devices: Sequence[jax.Device] | None = None,
) -> Callable:
    """Return ``g(xs, *shared)`` equal to ``jax.vmap(fn, in_axes=(0, None, ...))(xs, *shared)``.

    Several processes (``jax.distributed.initialize()``): when the devices span more than one
    process, every process calls ``g`` with the same ``xs`` and ``shared`` (checked: a
    ``ValueError`` on every process otherwise); they are placed as global arrays (each process
    contributes the items of its own devices), the items are computed once over all devices,
    and every process gets the whole result back as arrays on its own first device (gathered
    with a collective: each device holds the R results once). docs/scaling.md gives the recipe.

    Args:
      fn: per-item function ``fn(x, *shared) -> pytree``; ``x`` is one item of ``xs``.
      chunk_size: items computed simultaneously (None: all at once). Rounded up to a multiple of
        the device count.
      devices: devices to shard the item axis over (None: ``jax.devices()``, every process's).

    Returns:
      ``g(xs, *shared)``: ``xs`` is a pytree whose leaves share a leading axis of size R (typed
      PRNG key arrays included); ``shared`` arguments are broadcast to every item. The output
      leaves have leading axis R; in one process they live sharded over the mesh, over several
      processes every process holds all of them (process-local arrays).
    """
    chunk_size = check_chunk_size(chunk_size)
    cache: dict = {}

    def build(num_chunks: int, chunk: int, num_shared: int, mesh: Mesh):
        item_spec = PartitionSpec(None, BATCH_AXIS)
        shared_specs = (PartitionSpec(),) * num_shared

        def per_device(xs_local, *shared):
            per_item = jax.vmap(fn, in_axes=(0,) + (None,) * num_shared)
            if num_chunks == 1:
                return jax.tree.map(lambda y: y[None], per_item(jax.tree.map(lambda x: x[0], xs_local), *shared))
            return jax.lax.map(lambda x: per_item(x, *shared), xs_local)

        return jax.shard_map(
            per_device, mesh=mesh, in_specs=(item_spec, *shared_specs), out_specs=item_spec,
            check_vma=False,
        )

    def build_global(num_chunks, chunk, num_items, shared_def, xs_def, impls, mesh):
        """The multi-process program: raw key data in, keys rewrapped, the result gathered on
        every device (keys in the result come back as data, rewrapped by the caller)."""
        mapped = build(num_chunks, chunk, len(shared_def), mesh)
        padded = num_chunks * chunk
        xs_impls, shared_impls = impls
        out_impls: list = []

        def rewrap(leaves, leaf_impls, treedef):
            return jax.tree.unflatten(treedef, [
                x if impl is None else jax.random.wrap_key_data(x, impl=impl)
                for x, impl in zip(leaves, leaf_impls, strict=True)])

        def program(xs_leaves, shared_leaves):
            xs = rewrap(xs_leaves, xs_impls, xs_def)
            shared = [rewrap(leaves, li, td) for leaves, li, td in
                      zip(shared_leaves, shared_impls, shared_def, strict=True)]
            out = mapped(xs, *shared)
            out = jax.tree.map(lambda y: y.reshape((padded,) + y.shape[2:])[:num_items], out)
            leaves, treedef = jax.tree.flatten(out)
            out_impls[:] = [jax.random.key_impl(y) if _is_key(y) else None for y in leaves]
            out_impls.append(treedef)
            return [jax.random.key_data(y) if _is_key(y) else y for y in leaves]

        compiled = jax.jit(program, out_shardings=NamedSharding(mesh, PartitionSpec()))
        return compiled, out_impls

    def g_global(xs, shared, mesh, num_items, num_chunks, chunk):
        padded = num_chunks * chunk
        xs_leaves, xs_def = jax.tree.flatten(xs)
        shared_flat = [jax.tree.flatten(s) for s in shared]
        _check_same_on_every_process(
            [_local_value(x)[0] for x in xs_leaves],
            [_local_value(x)[0] for leaves, _ in shared_flat for x in leaves])
        item_sharding = NamedSharding(mesh, PartitionSpec(None, BATCH_AXIS))
        replicated = NamedSharding(mesh, PartitionSpec())

        def place(leaf, sharding, split: bool):
            value, impl = _local_value(leaf)
            if split:
                if padded > num_items:
                    value = jnp.concatenate(
                        [value, jnp.repeat(value[-1:], padded - num_items, axis=0)], axis=0)
                value = value.reshape((num_chunks, chunk) + value.shape[1:])
            return jax.make_array_from_callback(value.shape, sharding, lambda idx: value[idx]), impl

        xs_placed = [place(x, item_sharding, True) for x in xs_leaves]
        shared_placed = [[place(x, replicated, False) if _is_array_leaf(x) else (x, None)
                          for x in leaves] for leaves, _ in shared_flat]
        impls = (tuple(i for _, i in xs_placed),
                 tuple(tuple(i for _, i in leaves) for leaves in shared_placed))
        shared_def = tuple(td for _, td in shared_flat)
        key = ("global", num_chunks, chunk, num_items, xs_def, shared_def, impls,
               tuple(d.id for d in mesh.devices.flat))
        if key not in cache:
            cache[key] = build_global(num_chunks, chunk, num_items, shared_def, xs_def, impls,
                                      mesh)
        compiled, out_impls = cache[key]
        out = compiled([x for x, _ in xs_placed], [[x for x, _ in leaves] for leaves in shared_placed])
        *leaf_impls, treedef = out_impls
        local = [y.addressable_data(0) for y in out]  # replicated: this process's full copy
        return jax.tree.unflatten(treedef, [
            y if impl is None else jax.random.wrap_key_data(y, impl=impl)
            for y, impl in zip(local, leaf_impls, strict=True)])

    def g(xs, *shared):
        num_items = _leading_size(xs)
        mesh = batch_mesh(devices)
        num_devices = mesh.devices.size
        chunk = num_items if chunk_size is None else min(int(chunk_size), num_items)
        chunk = num_devices * math.ceil(chunk / num_devices)
        num_chunks = math.ceil(num_items / chunk)
        padded = num_chunks * chunk
        if not is_traced(xs, shared) and _spans_processes(mesh):
            return g_global(xs, shared, mesh, num_items, num_chunks, chunk)

        def pad_and_split(x):
            x = jnp.asarray(x) if not isinstance(x, jax.Array) else x
            if padded > num_items:
                x = jnp.concatenate([x, jnp.repeat(x[-1:], padded - num_items, axis=0)], axis=0)
            return x.reshape((num_chunks, chunk) + x.shape[1:])

        xs_split = jax.tree.map(pad_and_split, xs)
        xs_split = jax.device_put(xs_split, NamedSharding(mesh, PartitionSpec(None, BATCH_AXIS)))
        key = (num_chunks, chunk, len(shared), tuple(d.id for d in mesh.devices.flat))
        if key not in cache:
            cache[key] = jax.jit(build(num_chunks, chunk, len(shared), mesh))
        out = cache[key](xs_split, *shared)
        return jax.tree.map(lambda y: y.reshape((padded,) + y.shape[2:])[:num_items], out)

    return g
