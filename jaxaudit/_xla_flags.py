"""XLA_FLAGS of the CPU configuration (one device per core, YNNPACK fusions off), jax-free.

Both :func:`jaxaudit.sharding.use_all_cpu_cores` and the ``jaxaudit`` command (which must not
import jax before it has set the flags) build the flags here.
"""

from __future__ import annotations

import re
from importlib import metadata

#: The XLA flag that sets the number of JAX CPU devices (read when JAX initialises its backend).
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"

#: XLA:CPU's YNNPACK fusions (reductions and small dots handed to YNNPACK), switched off by an
#: empty list. On the 2-core AVX-512 benchmark machine with jax 0.10.2 this made DP-GD canary
#: runs about 1.12× faster (1.06–1.15× in three invocations) and left the GCN shadow models and
#: the BMP posteriors as fast as before (within the noise; benchmarks/README.md, "XLA flags").
YNN_FUSION_FLAG = "--xla_cpu_experimental_ynn_fusion_type"

#: The first jaxlib whose XLA knows :data:`YNN_FUSION_FLAG` for certain (XLA aborts the process on
#: a flag it does not know, so older jaxlibs get none).
_YNN_FLAG_SINCE = (0, 10)


def _jaxlib_version() -> tuple[int, ...]:
    try:
        text = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def with_cpu_flags(flags: str, cores: int | None) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with the CPU configuration's flags appended: the device
    count ``cores`` (None: leave it) unless ``flags`` sets one, and YNNPACK fusions off unless
    ``flags`` mentions them or this jaxlib predates the flag. A user's own setting always wins."""
    parts = [flags.strip()] if flags.strip() else []
    if cores is not None and DEVICE_COUNT_FLAG not in flags:
        parts.append(f"{DEVICE_COUNT_FLAG}={cores}")
    if YNN_FUSION_FLAG not in flags and _jaxlib_version() >= _YNN_FLAG_SINCE:
        parts.append(f"{YNN_FUSION_FLAG}=")
    return " ".join(parts)
