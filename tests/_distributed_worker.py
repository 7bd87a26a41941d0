"""One of the two JAX processes of tests/test_distributed.py (not a test module itself).

Usage: ``python _distributed_worker.py PROCESS_ID PORT OUT_DIR RUN_DIR``. It joins a two-process
``jax.distributed`` program on 127.0.0.1:PORT (CPU, gloo collectives), runs the same calls as the
single-process reference of the test and saves what it got to ``OUT_DIR/p<PROCESS_ID>.npz``.
Process 0 fills the run folder ``RUN_DIR``; process 1 is given ``RUN_DIR-p1``, a folder that must
stay absent (only process 0 writes; a host without a shared file system).
"""

import sys
from pathlib import Path
from typing import Any

import jax

PROCESS_ID, PORT, OUT_DIR, RUN_DIR = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{PORT}", num_processes=2,
                           process_id=PROCESS_ID, initialization_timeout=60)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxaudit.datasets import make_csbm  # noqa: E402
from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler  # noqa: E402
from jaxaudit.runs import RunDir, Sweep, run_chunks  # noqa: E402
from jaxaudit.runs.claims import claim_unit  # noqa: E402
from jaxaudit.sharding import vmap_chunked  # noqa: E402


def item(key, scale):
    """A known per-item function: a normal draw (bit-exact under vmap) and its key back."""
    return {"draw": jax.random.normal(key, (3,)) * scale, "key": key}


def chunk_of_draws(name: str) -> dict:
    """A run-folder chunk computed by every process together (a collective)."""
    keys = jax.random.split(jax.random.fold_in(jax.random.key(5), ord(name)), 3)
    return {"draw": vmap_chunked(item)(keys, jnp.float32(1.0))["draw"]}


def failing(name: str) -> dict:
    raise AssertionError(f"chunk {name} was computed again although process 0 has it")


assert jax.process_count() == 2 and len(jax.devices()) == 2 and len(jax.local_devices()) == 1
out: dict[str, Any] = {}
got = vmap_chunked(item, chunk_size=2)(jax.random.split(jax.random.key(0), 5), jnp.float32(2.0))
out["draw"], out["key_data"] = np.asarray(got["draw"]), np.asarray(jax.random.key_data(got["key"]))
out["local"] = np.asarray(got["draw"].is_fully_addressable)

graph = make_csbm(jax.random.key(1), num_nodes=24, num_classes=2, num_features=4)
shadow = train_shadow_models(jax.random.key(2), graph, uniform_sampler(0.5), "gcn", 3, ShadowTraining(epochs=2))
out["masks"], out["scores"] = np.asarray(shadow.masks), np.asarray(shadow.scores)

try:  # each process passes other keys: refused on every process, nothing mixed
    vmap_chunked(item)(jax.random.split(jax.random.key(10 + PROCESS_ID), 4), jnp.float32(1.0))
    out["mismatch"] = np.asarray("accepted")
except ValueError as err:
    out["mismatch"] = np.asarray(str(err))

folder = RUN_DIR if PROCESS_ID == 0 else RUN_DIR + "-p1"
run = RunDir.open(folder, kind="distributed-test", config={"seed": 5})
first = run_chunks(run, ["a", "b"], chunk_of_draws)
resumed = run_chunks(RunDir.open(folder, kind="distributed-test", config={"seed": 5}),
                     ["a", "b"], failing)  # process 0 has both: every process gets its bytes
# chunk "c" is held by a live claim (as by an independent worker): skipped on every process
held = claim_unit(run, "c") if PROCESS_ID == 0 else None
partial = run_chunks(run, ["a", "b", "c"], failing, sweep=Sweep(worker=(0, 1)))
if held is not None:
    held.release()
out["partial"] = np.asarray(sorted(partial))
for name in ("a", "b"):
    out[f"chunk_{name}"] = first[name]["draw"]
    out[f"resumed_{name}"] = resumed[name]["draw"]
out["p1_folder_exists"] = np.asarray(Path(RUN_DIR + "-p1").exists())
np.savez(Path(OUT_DIR) / f"p{PROCESS_ID}.npz", **out)
jax.distributed.shutdown()
