"""Canary scores for the Rényi paper's trends and grid on MNIST: |D⁻| ∈ {100, 1000}, C ∈ {0.1, 1,
10}, ε ∈ {1, 2, 4, 10, 17.85} (the long runs behind the trends table of docs/renyi.md).

The protocol is the one of ``rdp_paper_scores.py`` (Annamalai & De Cristofaro, arXiv 2405.14106,
as their public code runs it): SmallCNN pretrained non-privately with SGD on the MNIST images not in
D⁻ (lr 0.01, batch 32, 5 epochs), blank canary with label 9, full-batch DP-GD for T = 100 steps with
η = 4/30,000 on the noisy clipped *sum* (our per-example-mean learning rate η·|D⁻|), σ from the PLD
accountant at δ = 1e−5, score = −CE(canary; θ_T). Only |D⁻|, the clipping norm C and ε vary.

Budget (runs per world): at |D⁻| = 100, C ∈ {0.1, 1, 10} at ε = 10 and ε ∈ {1, 2, 4, 17.85} at
C = 1, each 1,000; at |D⁻| = 1000, C ∈ {0.1, 1, 10} at ε = 10, 250 each (``--runs-large``).
Settings run smallest first, so a partial sweep has whole configurations.

Resumable and small: each configuration keeps its scores in ``OUT/<setting>.npz`` (``in``,
``out``, ``sigma``, ``seconds``), rewritten atomically after every chunk of ``--chunk`` runs per
world (chunk c of a setting uses the key ``fold_in(fold_in(key(seed), crc32(setting)), c)``);
the pretrained parameters of each |D⁻| are cached in ``OUT/pretrained_<size>.msgpack``. The runs
are spread over one JAX device per core (``sharding.use_all_cpu_cores``); chunks run before that
change ran on one device (the same key per run, the same law of the scores). A repeated
call continues where the last one stopped; ``--status`` prints what is done.

    JAXAUDIT_DATA=... nice -n 19 python notebooks/scripts/renyi_grid_scores.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import time
import zlib
from pathlib import Path

LR_SUM = 4.0 / 30_000  # [31]'s η / |D| at |D| = 30,000, applied to the noisy sum
DELTA = 1e-5


def settings(runs_small: int, runs_large: int) -> dict[str, dict]:
    """Setting name -> (size, clip, epsilon, runs), smallest and most informative first."""
    out: dict[str, dict] = {}
    for clip in (1.0, 0.1, 10.0):
        out[f"d100_c{clip:g}_eps10"] = dict(size=100, clip=clip, epsilon=10.0, runs=runs_small)
    for eps in (1.0, 2.0, 4.0, 17.85):
        out[f"d100_c1_eps{eps:g}"] = dict(size=100, clip=1.0, epsilon=eps, runs=runs_small)
    for clip in (1.0, 0.1, 10.0):
        out[f"d1000_c{clip:g}_eps10"] = dict(size=1000, clip=clip, epsilon=10.0, runs=runs_large)
    return out


def _have(path: Path) -> int:
    import numpy as np

    if not path.exists():
        return 0
    with np.load(path) as f:
        return int(f["in"].size)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=1000, help="runs per world at |D-| = 100")
    p.add_argument("--runs-large", type=int, default=250, help="runs per world at |D-| = 1000")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--only", default=None, help="comma-separated setting names")
    p.add_argument("--chunk", type=int, default=50, help="runs per world per saved chunk")
    p.add_argument("--vmap-chunk", type=int, default=2, help="runs computed at once (2 on CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--status", action="store_true", help="print what is done and exit")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = settings(args.runs, args.runs_large)
    if args.only:
        todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
    if args.status:
        for name, s in todo.items():
            print(f"{name}: {_have(out / f'{name}.npz')} / {s['runs']} runs per world")
        return

    import jax

    from jaxaudit.sharding import use_all_cpu_cores

    use_all_cpu_cores()  # one JAX device per core: canary_runs shards its runs over them
    import numpy as np
    from flax import serialization

    from jaxaudit.accounting import noise_for_epsilon
    from jaxaudit.datasets import audit_data
    from jaxaudit.dpsgd import DpsgdConfig, blank_canary, canary_runs, model_by_name, pretrain

    jax.config.update("jax_default_matmul_precision", "highest")
    print(f"devices: {jax.devices()}", flush=True)
    model = model_by_name("cnn")
    key = jax.random.key(args.seed)
    for name, s in todo.items():
        store = out / f"{name}.npz"
        have = _have(store)
        if have >= s["runs"]:
            print(f"{name}: {have} runs per world, done", flush=True)
            continue
        size = s["size"]
        public = 10_000 - size
        (x, y), (xp, yp) = audit_data(jax.random.key(args.seed), "mnist", size, public)
        cache = out / f"pretrained_{size}.msgpack"
        steps = math.ceil(5.0 * public / 32)
        template = model.init(jax.random.key(0), xp[:1])
        if cache.exists():
            init = serialization.from_bytes(template, cache.read_bytes())
        else:
            init = pretrain(jax.random.fold_in(key, 1), model, xp, yp, steps=steps,
                            learning_rate=0.01, batch_size=32, optimizer="sgd")
            tmp = cache.with_suffix(".tmp")
            tmp.write_bytes(serialization.to_bytes(init))
            tmp.replace(cache)
        canary = blank_canary(x.shape[1:])
        sigma = noise_for_epsilon(s["epsilon"], DELTA, args.steps, 1.0, accountant="pld")
        lr = LR_SUM * size
        k_setting = jax.random.fold_in(key, zlib.crc32(name.encode()))
        while have < s["runs"]:
            t0 = time.time()
            c = have // args.chunk
            n = min(args.chunk, s["runs"] - have)
            recipe = DpsgdConfig(clip_norm=s["clip"], noise_multiplier=sigma, learning_rate=lr,
                                 steps=args.steps)
            in_s, out_s = canary_runs(jax.random.fold_in(k_setting, c), model, init, (x, y),
                                      (canary, 9), recipe, num_runs=n,
                                      chunk_size=args.vmap_chunk)
            seconds = time.time() - t0
            prev = dict(np.load(store)) if store.exists() else {
                "in": np.zeros(0, np.float32), "out": np.zeros(0, np.float32),
                "seconds": np.zeros((), np.float64)}
            arrays = {"in": np.concatenate([prev["in"], in_s]),
                      "out": np.concatenate([prev["out"], out_s]),
                      "sigma": np.asarray(sigma), "seconds": prev["seconds"] + seconds}
            tmp = out / f"{name}.tmp.npz"
            np.savez(tmp, **arrays)
            tmp.replace(store)
            have += n
            info = dict(name=name, chunk=c, runs=have, seconds=round(seconds, 1), sigma=sigma,
                        lr=lr, setting=s)
            print(json.dumps(info), flush=True)
            with open(out / "log.jsonl", "a") as f:
                f.write(json.dumps(info) + "\n")


if __name__ == "__main__":
    main()
