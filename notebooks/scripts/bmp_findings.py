"""Per-node BMP audits of recorded shadow runs, for notebooks/bmp_planetoid.py (resumable).

For every ``jaxaudit shadow`` run folder under ``--shadow-root`` named ``{dataset}_{sampler}_{edges}_m{R}``
(made by ``jaxaudit shadow --dataset D --sampler S --edge-access E --models R --ratio 0.5
--epochs 200 --seed 0``), this computes the node priors η (exact for uniform sampling, else Monte
Carlo over ``--prior-draws`` sampler draws), the per-node counts, certified bounds and Jeffreys
estimates of every node, and :func:`jaxaudit.bmp.audit_from_scores` (NUTS posterior; the MP fit
only for uniform inductive runs) on ``--nuts-nodes`` nodes drawn once per data set (seed 0; the
same nodes in every run of a data set, so comparisons are paired; leave-one-out LiRA works node by
node, so an audit of a column subset equals the full audit on those nodes), plus a bootstrap
over shadow models of the per-node Jeffreys medians (``--bootstrap`` resamples: the standard error
of a comparison between runs that comes from having finitely many shadow models). Each run's
result is one ``.npz`` in ``--out`` (skipped when present); run folders still training are skipped
until a later call.

    python notebooks/scripts/bmp_findings.py --shadow-root runs/shadow \\
        --out runs/findings
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def _sampler(name, ratio):
    from jaxaudit.graph import sampler_by_name

    return sampler_by_name(name, ratio)


def audit_run(folder: Path, args) -> dict:
    import jax

    from jaxaudit import bmp, mia
    from jaxaudit.datasets import load_planetoid
    from jaxaudit.mia import bayes_decision, error_counts, lira_loo, roc_auc
    from jaxaudit.runs import load_results

    res = load_results(folder)
    cfg = res["config"]
    names = sorted(res["chunks"])
    masks = np.concatenate([res["chunks"][n]["masks"] for n in names]).astype(bool)
    scores = np.concatenate([res["chunks"][n]["scores"] for n in names]).astype(np.float32)
    graph = load_planetoid(cfg["dataset"])
    sampler = _sampler(cfg["sampler"], cfg["ratio"])
    key = jax.random.key(14)
    from jaxaudit.graph import inclusion_probabilities
    from jaxaudit.graph.types import node_degrees

    eta, eta_se = inclusion_probabilities(jax.random.fold_in(key, 1), sampler, graph,
                                          num_draws=args.prior_draws)
    eta = np.clip(np.asarray(eta, float), 1e-4, 1 - 1e-4)
    mp = cfg["sampler"] == "uniform" and cfg["edge_access"] == "inductive"
    degree = node_degrees(graph)
    t0 = time.perf_counter()
    # every node: counts (and below: certified bounds, Jeffreys); NUTS on the subset only
    llr = lira_loo(scores, masks)
    counts = error_counts(bayes_decision(llr, eta.astype(np.float32)), masks)
    counts = mia.ErrorCounts(*(np.asarray(x) for x in counts))
    subset = np.sort(np.random.default_rng(0).choice(graph.num_nodes, size=min(
        args.nuts_nodes, graph.num_nodes), replace=False))
    audit = bmp.audit_from_scores(
        jax.random.fold_in(key, 2), scores[:, subset], masks[:, subset], eta[subset],
        bmp.AuditConfig(mp_baseline=mp, nuts=bmp.NutsConfig(
            num_warmup=args.warmup, num_samples=args.samples, num_chains=4, chunk_size=512)),
        eta_se=np.asarray(eta_se)[subset], degree=degree[subset])
    seconds = time.perf_counter() - t0
    # bootstrap over shadow models: per-node Jeffreys medians from resampled model sets
    rng = np.random.default_rng(0)
    boot = []
    for b in range(args.bootstrap):
        idx = rng.integers(0, masks.shape[0], masks.shape[0])
        llr_b = lira_loo(scores[idx], masks[idx])
        dec = bayes_decision(llr_b, eta.astype(np.float32))
        c = error_counts(dec, masks[idx])
        valid = (np.asarray(c.n0) > 0) & (np.asarray(c.n1) > 0)
        jr = np.full(graph.num_nodes, np.nan)
        if valid.any():
            j = bmp.jeffreys_estimate(jax.random.fold_in(key, 100 + b),
                                      mia.ErrorCounts(*(np.asarray(x)[valid] for x in c)),
                                      q=(0.5,), num_draws=1000)
            jr[valid] = np.asarray(j.epsilon_right[0])
        boot.append(jr)
    sub = bmp.audit_table(audit)
    n = graph.num_nodes
    table = {k: np.full(n, np.nan) for k in sub}
    for k, v in sub.items():
        table[k][subset] = v
    table["node"] = np.arange(n)
    valid = (counts.n0 > 0) & (counts.n1 > 0)
    cert = bmp.certified_epsilons(mia.ErrorCounts(*(c[valid] for c in counts)))
    jeff = bmp.jeffreys_estimate(jax.random.fold_in(key, 3),
                                 mia.ErrorCounts(*(c[valid] for c in counts)))
    for name, values in (("certified_eps_l_lower", cert.epsilon_left), ("certified_eps_r_lower",
                                                                 cert.epsilon_right),
                         ("jeffreys_eps_l_q05", jeff.epsilon_left[0]), ("jeffreys_eps_l_q50", jeff.epsilon_left[1]),
                         ("jeffreys_eps_r_q05", jeff.epsilon_right[0]), ("jeffreys_eps_r_q50", jeff.epsilon_right[1])):
        table[name] = np.full(n, np.nan)
        table[name][valid] = np.asarray(values)
    table.update(eta=eta, eta_se=np.asarray(eta_se), degree=degree, fp=counts.fp, n0=counts.n0,
                 fn=counts.fn, n1=counts.n1, auc=np.asarray(roc_auc(llr, masks, axis=0)))
    out = {f"col_{k}": v for k, v in table.items()}
    out.update(global_auc=np.asarray(roc_auc(np.asarray(llr).ravel(), masks.ravel())),
               boot_jeffreys_r_median=np.array(boot), seconds=np.asarray(seconds),
               num_models=np.asarray(masks.shape[0]), nuts_nodes=subset)
    return out


def refresh_auc(folder: Path, target: Path) -> None:
    """Recompute the per-node and global LOO-LiRA AUC of a recorded result from its shadow run."""
    from jaxaudit.mia import lira_loo, roc_auc
    from jaxaudit.runs import load_results

    res = load_results(folder)
    names = sorted(res["chunks"])
    masks = np.concatenate([res["chunks"][n]["masks"] for n in names]).astype(bool)
    scores = np.concatenate([res["chunks"][n]["scores"] for n in names]).astype(np.float32)
    llr = lira_loo(scores, masks)
    arrays = dict(np.load(target))
    arrays["col_auc"] = np.asarray(roc_auc(llr, masks, axis=0))
    arrays["global_auc"] = np.asarray(roc_auc(np.asarray(llr).ravel(), masks.ravel()))
    tmp = target.with_name(f".{target.stem}.tmp.npz")
    np.savez(tmp, **arrays)
    tmp.rename(target)


def _owner_dead(lock: Path) -> bool:
    """True when ``lock`` was written on this host by another process that no longer exists; a
    lock of unknown form, another host's or this process's own is left alone."""
    import json
    import os
    import socket

    try:
        host, pid_text, _ = json.loads(lock.read_bytes())["owner"].rsplit(":", 2)
        pid = int(pid_text)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by another user
        return False
    return False


def _take_lock(lock: Path) -> bool:
    """Create ``lock`` (owner ``host:pid:tag``, as the run folders' claims write it) unless another
    live process holds it; a lock whose process on this host no longer exists (an audit that was
    killed) is taken over."""
    import json
    import os
    import socket

    record = json.dumps({"owner": f"{socket.gethostname()}:{os.getpid()}:audit"})
    for _ in range(2):
        try:
            with open(lock, "x") as f:
                f.write(record)
            return True
        except FileExistsError:
            if not _owner_dead(lock):
                return False
            print(f"{lock.name}: its process is gone; taking the stale lock over", flush=True)
            lock.unlink(missing_ok=True)
    return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shadow-root", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--prior-draws", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--samples", type=int, default=500)
    p.add_argument("--bootstrap", type=int, default=30)
    p.add_argument("--nuts-nodes", type=int, default=400,
                   help="nodes (drawn once per data set) that get the NUTS posterior")
    p.add_argument("--only", default=None, help="comma-separated run names")
    p.add_argument("--refresh-auc", action="store_true",
                   help="only recompute the AUC columns of finished results from their shadow runs")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.refresh_auc:
        for target in sorted(out.glob("*.npz")):
            refresh_auc(Path(args.shadow_root) / target.stem, target)
            print(f"{target.stem}: AUC refreshed", flush=True)
        return
    out.mkdir(parents=True, exist_ok=True)
    runs = sorted(Path(args.shadow_root).iterdir())
    order = ["inductive", "full"]
    runs.sort(key=lambda r: (order.index(r.name.split("_")[-2]) if r.name.split("_")[-2] in order
                             else 9, r.name))
    if args.only:  # in the order given
        by_name = {r.name: r for r in runs}
        runs = [by_name[n] for n in args.only.split(",") if n in by_name]
    for folder in runs:
        target = out / f"{folder.name}.npz"
        lock = out / f".{folder.name}.lock"  # several workers may share the output folder
        if target.exists() or not (folder / "summary.json").is_file():
            continue
        if not _take_lock(lock):
            continue
        t0 = time.perf_counter()
        arrays = audit_run(folder, args)
        tmp = out / f".{folder.name}.tmp.npz"
        np.savez(tmp, **arrays)
        tmp.rename(target)
        lock.unlink()
        print(f"{folder.name}: {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
