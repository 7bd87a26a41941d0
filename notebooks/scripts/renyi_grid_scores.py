"""Canary scores for the Rényi paper's trends and grid on MNIST: |D⁻| ∈ {100, 1000}, C ∈ {0.1, 1,
10}, ε ∈ {1, 2, 4, 10, 17.85} (the scores behind the trends table of docs/renyi.md).

The protocol is the one of ``rdp_paper_scores.py`` (Annamalai & De Cristofaro, arXiv 2405.14106,
as their public code runs it): SmallCNN pretrained non-privately with SGD on the MNIST images not in
D⁻ (lr 0.01, batch 32, 5 epochs), blank canary with label 9, full-batch DP-GD for T = 100 steps with
η = 4/30,000 on the noisy clipped *sum* (our per-example-mean learning rate η·|D⁻|), σ from the PLD
accountant at δ = 1e−5, score = −CE(canary; θ_T). Only |D⁻|, the clipping norm C and ε vary.

Breadth first: every configuration is filled to 100 runs per world, then to 250, then to 1,000
(``--stages``), so a partial sweep shows every trend with its spread. Configurations: |D⁻| = 100
with C ∈ {0.1, 1, 10} at ε = 10 and C = 1 at ε ∈ {1, 2, 4, 17.85}; |D⁻| = 1,000 with C ∈ {0.1,
1, 10} at ε = 10.

Scores are data, committed: ``OUT`` (default ``results/scores/renyi_grid``) holds one compact
``<configuration>.npz`` per configuration (float32 ``in`` and ``out`` scores, ``sigma``,
``seconds`` of compute, ``device``: the CPU or GPU models that ran them) and ``manifest.json``
(the command, each configuration with its SHA-256 hash, runs per world, the file's SHA-256),
both rewritten atomically after every chunk, so a killed sweep loses at most one chunk. The
pretrained parameters of each |D⁻| are a cache (``--cache``, not committed; their digest is in the
manifest).

Keys: run u of configuration c (in both worlds) is unit u of the root key
``fold_in(key(seed), crc32(c))`` under the library's key rule (:mod:`jaxaudit.runs.keys`:
``fold_in(root, u)``; :func:`jaxaudit.dpsgd.canary_runs` with unit keys), so the scores do not
depend on how the sweep is cut: 50 runs per chunk on a CPU, all 1,000 in one program on a GPU, or
a sweep resumed from the committed files on another machine give the same runs (bit for bit where
the arithmetic is the same, the same law otherwise).

CPU (resumable; pause with SIGSTOP/SIGCONT while timing anything else)::

    JAXAUDIT_DATA=... nice -n 19 python notebooks/scripts/renyi_grid_scores.py

One GPU, the whole grid at 1,000 runs per world (each configuration's remaining runs vmapped in
one program, chunked to the GPU's memory: halved after an out-of-memory error)::

    JAXAUDIT_DATA=... python notebooks/scripts/renyi_grid_scores.py --stages 1000 --chunk 1000

``--status`` prints what is done.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
import zlib
from pathlib import Path

LR_SUM = 4.0 / 30_000  # [31]'s η / |D| at |D| = 30,000, applied to the noisy sum
DELTA = 1e-5
STEPS = 100
PROTOCOL = dict(dataset="mnist", model="cnn", canary="blank, label 9", lr_sum=LR_SUM, delta=DELTA,
                accountant="pld", pretrain="sgd lr 0.01 batch 32, 5 epochs on 10,000 − |D⁻|",
                score="-CE(canary; θ_T)", keys="unit u of fold_in(key(seed), crc32(name))")
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "results" / "scores" / "renyi_grid"
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "runs" / "renyi_grid_cache"


def settings() -> dict[str, dict]:
    """Configuration name -> (size, clip, epsilon), the |D⁻| = 100 ones first."""
    out: dict[str, dict] = {}
    for clip in (1.0, 0.1, 10.0):
        out[f"d100_c{clip:g}_eps10"] = dict(size=100, clip=clip, epsilon=10.0)
    for eps in (1.0, 2.0, 4.0, 17.85):
        out[f"d100_c1_eps{eps:g}"] = dict(size=100, clip=1.0, epsilon=eps)
    for clip in (1.0, 0.1, 10.0):
        out[f"d1000_c{clip:g}_eps10"] = dict(size=1000, clip=clip, epsilon=10.0)
    return out


def config_of(name: str, steps: int = STEPS, seed: int = 0,
              pretrain_steps: int | None = None) -> dict:
    """The full configuration of one setting (what its scores depend on)."""
    extra = {} if pretrain_steps is None else {"pretrain_steps": pretrain_steps}
    return dict(name=name, **settings()[name], steps=steps, seed=seed, **PROTOCOL, **extra)


def config_hash(config: dict) -> str:
    """SHA-256 of the configuration's canonical JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def device_model() -> str:
    """The CPU model (``/proc/cpuinfo``) or the accelerator's kind, with the device count."""
    import jax

    dev = jax.devices()
    if dev[0].platform != "cpu":
        return f"{dev[0].device_kind} x{len(dev)}"
    name = platform.processor() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} cores)"


def read_manifest(folder: Path) -> dict:
    path = folder / "manifest.json"
    if not path.exists():
        return {"protocol": PROTOCOL, "configurations": {}}
    return json.loads(path.read_text())


def load_scores(folder: str | Path = DEFAULT_OUT) -> dict[str, dict]:
    """The committed scores: configuration name -> dict(in, out (float32), sigma, seconds,
    device, runs, config). Every file is checked against the manifest's SHA-256, and the
    configuration against its hash; a mismatch raises ``ValueError`` naming the file."""
    import numpy as np

    folder = Path(folder)
    if not (folder / "manifest.json").exists():
        raise FileNotFoundError(f"no manifest.json in {folder}: no committed scores there")
    manifest = read_manifest(folder)
    out = {}
    for name, entry in manifest["configurations"].items():
        path = folder / f"{name}.npz"
        if not path.exists():
            raise FileNotFoundError(f"{path}: named in {folder / 'manifest.json'} but missing")
        if _sha256(path) != entry["sha256"]:
            raise ValueError(f"{path}: SHA-256 differs from the manifest's (edited or corrupt)")
        if config_hash(entry["config"]) != entry["config_hash"]:
            raise ValueError(f"{folder / 'manifest.json'}: the configuration of {name} does not "
                             "match its hash (edited)")
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        if arrays["in"].size != entry["runs_per_world"] or arrays["out"].size != arrays["in"].size:
            raise ValueError(f"{path}: {arrays['in'].size}/{arrays['out'].size} scores, the "
                             f"manifest says {entry['runs_per_world']} per world")
        out[name] = dict(arrays, sigma=float(arrays["sigma"]), seconds=float(arrays["seconds"]),
                         device=str(arrays["device"]), runs=int(arrays["in"].size),
                         config=entry["config"])
    return out


def _have(path: Path) -> int:
    import numpy as np

    if not path.exists():
        return 0
    with np.load(path) as f:
        return int(f["in"].size)


def _write(out: Path, name: str, arrays: dict, config: dict, command: str,
           pretrained_sha: str) -> None:
    """The configuration's .npz, then the manifest, each written atomically."""
    import numpy as np

    store = out / f"{name}.npz"
    tmp = out / f"{name}.tmp.npz"
    np.savez(tmp, **arrays)
    tmp.replace(store)
    manifest = read_manifest(out)
    manifest["protocol"] = PROTOCOL
    manifest["configurations"][name] = dict(
        config=config, config_hash=config_hash(config), runs_per_world=int(arrays["in"].size),
        sha256=_sha256(store), device=str(arrays["device"]), sigma=float(arrays["sigma"]),
        seconds=round(float(arrays["seconds"]), 1), pretrained_sha256=pretrained_sha,
        command=command)
    mtmp = out / "manifest.json.tmp"
    mtmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    mtmp.replace(out / "manifest.json")


def fit_to_memory(run, chunk: int | None):
    """``run(chunk)``, halving ``chunk`` (None: the library's default, all runs at once off CPU)
    after each out-of-memory error of the device; returns (result, the chunk that fitted)."""
    while True:
        try:
            return run(chunk), chunk
        except Exception as err:  # XlaRuntimeError: RESOURCE_EXHAUSTED (out of device memory)
            if "RESOURCE_EXHAUSTED" not in str(err) and "out of memory" not in str(err).lower():
                raise
            if chunk is not None and chunk <= 1:
                raise
            chunk = max(1, (chunk or 2048) // 2)
            print(f"out of device memory: runs at once → {chunk}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--cache", default=str(DEFAULT_CACHE), help="pretrained parameters (a cache)")
    p.add_argument("--stages", default="100,250,1000",
                   help="runs per world every configuration reaches before the next stage")
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--only", default=None, help="comma-separated configuration names")
    p.add_argument("--chunk", type=int, default=50, help="runs per world per saved chunk")
    p.add_argument("--vmap-chunk", type=int, default=None,
                   help="runs computed at once (default: the library's, one per device on CPU, "
                        "all at once on a GPU, halved on out-of-memory)")
    p.add_argument("--pretrain-steps", type=int, default=None,
                   help="SGD steps of the pretraining (default 5 epochs; tests use a few)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--status", action="store_true", help="print what is done and exit")
    args = p.parse_args(argv)
    out, cache = Path(args.out), Path(args.cache)
    out.mkdir(parents=True, exist_ok=True)
    todo = settings()
    if args.only:
        unknown = set(args.only.split(",")) - set(todo)
        if unknown:
            p.error(f"--only: unknown configurations {sorted(unknown)}; known: {list(todo)}")
        todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
    stages = sorted(int(s) for s in args.stages.split(","))
    if args.status:
        for name in todo:
            print(f"{name}: {_have(out / f'{name}.npz')} / {stages[-1]} runs per world")
        return

    import jax

    from jaxaudit.sharding import use_all_cpu_cores

    use_all_cpu_cores()  # one JAX device per core: canary_runs shards its runs over them
    import numpy as np
    from flax import serialization

    from jaxaudit.accounting import noise_for_epsilon
    from jaxaudit.datasets import audit_data
    from jaxaudit.dpsgd import DpsgdConfig, blank_canary, canary_runs, model_by_name, pretrain
    from jaxaudit.runs import unit_keys

    jax.config.update("jax_default_matmul_precision", "highest")
    device = device_model()
    command = "python notebooks/scripts/renyi_grid_scores.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    print(f"devices: {jax.devices()} ({device})", flush=True)
    model = model_by_name("cnn")
    key = jax.random.key(args.seed)
    data: dict[int, tuple] = {}

    def prepared(size: int):
        """(D⁻, pretrained parameters, their digest) of |D⁻| = size, pretrained once."""
        if size in data:
            return data[size]
        public = 10_000 - size
        (x, y), (xp, yp) = audit_data(jax.random.key(args.seed), "mnist", size, public)
        steps = args.pretrain_steps or math.ceil(5.0 * public / 32)
        cache.mkdir(parents=True, exist_ok=True)
        path = cache / f"pretrained_{size}_s{args.seed}_p{steps}.msgpack"
        template = model.init(jax.random.key(0), xp[:1])
        if path.exists():
            init = serialization.from_bytes(template, path.read_bytes())
        else:
            init = pretrain(jax.random.fold_in(key, 1), model, xp, yp, steps=steps,
                            learning_rate=0.01, batch_size=32, optimizer="sgd")
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(serialization.to_bytes(init))
            tmp.replace(path)
        digest = hashlib.sha256(serialization.to_bytes(init)).hexdigest()
        data[size] = ((x, y), init, digest)
        return data[size]

    for stage in stages:
        for name, s in todo.items():
            store = out / f"{name}.npz"
            have = _have(store)
            if have >= stage:
                continue
            config = config_of(name, args.steps, args.seed, args.pretrain_steps)
            stored = read_manifest(out)["configurations"].get(name)
            if stored is not None and stored["config_hash"] != config_hash(config):
                sys.exit(f"{out}: {name} holds scores of another configuration "
                         f"({stored['config']}); use another --out")
            (x, y), init, digest = prepared(s["size"])
            canary = blank_canary(x.shape[1:])
            sigma = noise_for_epsilon(s["epsilon"], DELTA, args.steps, 1.0, accountant="pld")
            recipe = DpsgdConfig(clip_norm=s["clip"], noise_multiplier=sigma,
                                 learning_rate=LR_SUM * s["size"], steps=args.steps)
            root = jax.random.fold_in(key, zlib.crc32(name.encode()))
            while have < stage:
                n = min(args.chunk, stage - have)
                t0 = time.time()
                keys = unit_keys(root, have, n)
                (in_s, out_s), fitted = fit_to_memory(
                    lambda c, keys=keys, n=n, recipe=recipe, x=x, y=y, init=init, canary=canary:
                    canary_runs(keys, model, init, (x, y), (canary, 9), recipe, num_runs=n,
                                chunk_size=c), args.vmap_chunk)
                args.vmap_chunk = fitted
                seconds = time.time() - t0
                if store.exists():
                    with np.load(store) as f:
                        prev = {k: f[k] for k in f.files}
                else:
                    prev = {"in": np.zeros(0, np.float32), "out": np.zeros(0, np.float32),
                            "seconds": np.zeros((), np.float64), "device": np.asarray("")}
                devices = [d for d in str(prev["device"]).split("; ") if d]
                devices += [] if device in devices else [device]
                arrays = {"in": np.concatenate([prev["in"], in_s]).astype(np.float32),
                          "out": np.concatenate([prev["out"], out_s]).astype(np.float32),
                          "sigma": np.asarray(sigma), "seconds": prev["seconds"] + seconds,
                          "device": np.asarray("; ".join(devices))}
                _write(out, name, arrays, config, command, digest)
                have += n
                print(json.dumps(dict(name=name, stage=stage, runs=have,
                                      seconds=round(seconds, 1), sigma=sigma, device=device)),
                      flush=True)


if __name__ == "__main__":
    main()
