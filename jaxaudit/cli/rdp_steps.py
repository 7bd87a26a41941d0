"""The steps of ``jaxaudit rdp`` around the numeric audit, shared with the notebook scripts: data
splits, canary-score files, the audit of a set of scores into a run folder, the audit table and
its plot. (Moved out of ``jaxaudit.dpsgd``, which holds only numeric code; the models by name are
:func:`jaxaudit.dpsgd.models.model_by_name`.)"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_choice

__all__ = [
    "DATASETS", "MIN_SCORES", "audit_data", "load_scores", "file_sha256", "audit_to_rundir",
    "records_table", "plot_audit",
]

DATASETS = ("mnist", "synthetic", "cifar10")
#: Fewest scores per world :func:`load_scores` accepts (the audit splits each world in parts).
MIN_SCORES = 4


def _synthetic(seed: int, n: int):
    """Ten classes of 28×28 images: a fixed random prototype per class plus N(0, 0.3²) pixels,
    clipped to [0, 1] (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((10, 28, 28)) < 0.2).astype(np.float32)
    labels = rng.integers(0, 10, n).astype(np.int32)
    images = np.clip(prototypes[labels] + 0.3 * rng.standard_normal((n, 28, 28)), 0, 1)
    return images.astype(np.float32), labels


def audit_data(
    dataset: str, dataset_size: int, public_size: int, *, seed: int = 0,
    data_dir: str | Path | None = None, verify: bool = True,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Private set D⁻ (the first ``dataset_size`` examples of a fixed permutation) and a disjoint
    public set (the next ``public_size``) for pretraining; images float32 in [0, 1].

    MNIST uses the 10 000-image test split (:func:`jaxaudit.datasets.load_mnist`), images
    (N, 28, 28); CIFAR-10 the 50 000-image train split (:func:`jaxaudit.datasets.load_cifar10`),
    images (N, 32, 32, 3) in HWC order, as Annamalai & De Cristofaro (arXiv 2405.14106), who
    audit on (half of) CIFAR-10's train split; pixels are scaled to [0, 1] like MNIST's, with no
    per-channel standardisation.

    Args:
      dataset: one of :data:`DATASETS`.
      dataset_size: |D⁻| (>= 1).
      public_size: public examples (>= 0), disjoint from D⁻.
      seed: seed of the permutation (and of the synthetic data).
      data_dir: data directory (see :func:`jaxaudit.datasets.resolve_data_dir`).
      verify: checksum-verify the CIFAR-10 batches (``False`` only for files you generated;
        MNIST is always verified, so ``False`` is refused for any other data set).

    Returns:
      ``((x, y), (x_public, y_public))``: float32 images and int32 labels.
    """
    check_choice("dataset", dataset, DATASETS)
    if dataset_size < 1 or public_size < 0:
        raise ValueError(f"dataset_size must be >= 1 and public_size >= 0, got {dataset_size}, {public_size}")
    if not isinstance(verify, bool):
        raise ValueError(f"verify must be True or False, got {verify!r}")
    if not verify and dataset != "cifar10":
        raise ValueError(f"verify=False applies only to dataset='cifar10', got dataset={dataset!r}")
    total = dataset_size + public_size
    if dataset in ("mnist", "cifar10"):
        if dataset == "mnist":
            from jaxaudit.datasets import load_mnist

            images, labels = load_mnist(split="test", data_dir=data_dir)
        else:
            from jaxaudit.datasets import load_cifar10

            images, labels = load_cifar10(split="train", data_dir=data_dir, verify=verify)
        if total > images.shape[0]:
            raise ValueError(f"dataset_size + public_size must be <= {images.shape[0]}, got {total}")
        order = np.random.default_rng(seed).permutation(images.shape[0])[:total]
        x, y = images[order].astype(np.float32) / 255.0, labels[order].astype(np.int32)
    else:
        x, y = _synthetic(seed, total)
    return (x[:dataset_size], y[:dataset_size]), (x[dataset_size:], y[dataset_size:])


def load_scores(path: str | Path, name: str = "scores") -> np.ndarray:
    """Canary scores of one world saved with ``numpy.save``, checked for the audit.

    Args:
      path: the ``.npy`` file (one score per training run, e.g. −loss of the canary on the final
        model, from any training code: Opacus, torch, JAX).
      name: how errors name the file (e.g. ``"--scores IN"``).

    Returns:
      The scores as a float64 array of shape (R,).

    Raises:
      FileNotFoundError: ``path`` does not exist.
      ValueError: ``path`` is not a ``.npy`` array (pickled objects are refused), or the array is
        not 1-D floating point, holds NaN or infinite values, or has fewer than
        :data:`MIN_SCORES` scores.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{name}: score file {path} not found")
    try:
        scores = np.load(io.BytesIO(path.read_bytes()), allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{name}: {path} is not a .npy array saved with numpy.save ({err})") from err
    if not isinstance(scores, np.ndarray):
        raise ValueError(f"{name}: {path} holds several arrays (.npz); save one 1-D array with "
                         "numpy.save")
    if scores.ndim != 1 or not np.issubdtype(scores.dtype, np.floating):
        raise ValueError(f"{name}: {path} must hold a 1-D floating-point array (one score per run), "
                         f"got dtype {scores.dtype} and shape {scores.shape}")
    nan, inf = int(np.isnan(scores).sum()), int(np.isinf(scores).sum())
    if nan or inf:
        first = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"{name}: {path} holds {nan} NaN and {inf} infinite score(s) (the first "
                         f"at index {first}); every score must be finite")
    if scores.shape[0] < MIN_SCORES:
        raise ValueError(f"{name}: {path} holds {scores.shape[0]} score(s); the audit needs at "
                         f"least {MIN_SCORES} per world")
    return scores.astype(np.float64)


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes (identifies score files in a run configuration)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def audit_to_rundir(
    rundir: Any, key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike, *, orders: ArrayLike,
    accountant_params: dict, significance: float = 0.05, delta: ArrayLike = 1e-5,
    info: dict | None = None, title: str = "",
) -> tuple[list, dict]:
    """Audit canary scores and write ``results.json`` and ``rdp_audit.png`` into a run folder.

    The step after the scores exist, the same whether the scores come from
    :func:`jaxaudit.dpsgd.canary_runs` or from files (:func:`load_scores`): the records of
    :func:`jaxaudit.dpsgd.audit_dpsgd` (DV lower bounds next to the accountant and the threshold
    and GDP baselines; Kim, Alabi & Varshney, arXiv 2605.21938; Nasr et al., USENIX Security
    2023), a JSON summary and the ε_α-vs-α plot (:func:`plot_audit`).

    Args:
      rundir: the :class:`jaxaudit.runs.RunDir` to write into.
      key: PRNG key of the DV estimator.
      in_scores: (R,) scores of the runs with the canary.
      out_scores: (R',) scores of the runs without it.
      orders: orders α > 1.
      accountant_params: ``dict(noise_multiplier=σ, sampling_rate=q, steps=T)``.
      significance: failure probability of every lower bound.
      delta: δ of the GDP baseline's (ε, δ) statement.
      info: extra JSON-able entries for the summary (e.g. the canary label, the score files).
      title: title of the plot.

    Returns:
      ``(records, summary)``: the list of :class:`jaxaudit.dpsgd.OrderAudit` and the dict
      written to ``results.json`` (``info``'s entries, the accountant parameters, ``delta``,
      ``significance``, the score counts ``num_in_scores``/``num_out_scores``, ``records`` (one
      dict per order, every field of the record) and ``violation``).
    """
    from jaxaudit.dpsgd.audit import audit_dpsgd

    records = audit_dpsgd(key, in_scores, out_scores, orders, accountant_params=accountant_params,
                          significance=significance, delta=delta)
    summary = {
        **(info or {}),
        **accountant_params,
        "delta": delta,
        "significance": significance,
        "num_in_scores": int(np.size(in_scores)),
        "num_out_scores": int(np.size(out_scores)),
        "records": [r._asdict() for r in records],
        "violation": any(r.violation for r in records),
    }
    rundir.write_json("results.json", summary)
    plot_audit(records, Path(rundir.path) / "rdp_audit.png", accountant_params=accountant_params,
               title=title)
    return records, summary


def records_table(records: Sequence[Any]) -> str:
    """The audit records as a fixed-width text table."""
    head = (f"{'alpha':>6} {'accountant':>11} {'DV point':>9} {'± SE':>7} {'DV lower':>9} "
            f"{'GDP lower':>10} {'thr lower':>10} violation")
    rows = [head]
    for r in records:
        rows.append(f"{r.order:6.3g} {r.accountant:11.4f} {r.dv_point:9.4f} {r.dv_se:7.4f} "
                    f"{r.dv_lower:9.4f} "
                    f"{r.gdp_lower:10.4f} {r.threshold_lower:10.4f} {'YES' if r.violation else 'no'}")
    return "\n".join(rows)


def plot_audit(records: Sequence[Any], path: str | Path, *, accountant_params: dict,
               title: str = "") -> str | Path:
    """ε_α vs α: the accountant's curve, the DV point/lower bound and the two baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxaudit.accounting import rdp_epsilons

    orders = np.array([r.order for r in records])
    grid = np.linspace(max(1.01, orders.min() * 0.9), orders.max() * 1.1, 60)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(grid, rdp_epsilons(orders=grid, **accountant_params), "k-", label="accountant ε_α")
    ax.plot(orders, [r.dv_point for r in records], "o--", label="DV point estimate")
    ax.plot(orders, [max(r.dv_lower, 0.0) for r in records], "s-", label="DV lower bound")
    ax.plot(orders, [r.gdp_lower for r in records], "^-", label="GDP baseline (α μ²/2)")
    ax.plot(orders, [r.threshold_lower for r in records], "v-", label="threshold-test bound")
    ax.set_xlabel("order α")
    ax.set_ylabel("ε_α (RDP)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
