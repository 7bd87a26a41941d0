"""Glue shared by the ``jaxaudit rdp`` command, the benchmark and the notebook: data splits,
model names, the audit table and its plot."""

from __future__ import annotations

import numpy as np

from jaxaudit._validation import check_choice
from jaxaudit.dpsgd.models import MLP, LogisticRegression, SmallCNN

__all__ = ["MODELS", "DATASETS", "make_model", "audit_data", "records_table", "plot_audit"]

MODELS = ("cnn", "mlp", "logreg")
DATASETS = ("mnist", "synthetic")


def make_model(name: str):
    """``"cnn"`` → :class:`SmallCNN`, ``"mlp"`` → ``MLP(hidden=(32,))``, ``"logreg"``."""
    check_choice("model", name, MODELS)
    return {"cnn": SmallCNN, "mlp": lambda: MLP(hidden=(32,)), "logreg": LogisticRegression}[name]()


def _synthetic(seed: int, n: int):
    """Ten classes of 28×28 images: a fixed random prototype per class plus N(0, 0.3²) pixels,
    clipped to [0, 1] (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((10, 28, 28)) < 0.2).astype(np.float32)
    labels = rng.integers(0, 10, n).astype(np.int32)
    images = np.clip(prototypes[labels] + 0.3 * rng.standard_normal((n, 28, 28)), 0, 1)
    return images.astype(np.float32), labels


def audit_data(dataset: str, dataset_size: int, public_size: int, *, seed: int = 0, data_dir=None):
    """Private set D⁻ (the first ``dataset_size`` examples of a fixed permutation) and a disjoint
    public set (the next ``public_size``) for pretraining; images float32 in [0, 1].

    MNIST uses the 10 000-image test split (:func:`jaxaudit.datasets.load_mnist`).
    """
    check_choice("dataset", dataset, DATASETS)
    if dataset_size < 1 or public_size < 0:
        raise ValueError(f"dataset_size must be >= 1 and public_size >= 0, got {dataset_size}, {public_size}")
    total = dataset_size + public_size
    if dataset == "mnist":
        from jaxaudit.datasets import load_mnist

        images, labels = load_mnist(split="test", data_dir=data_dir)
        if total > images.shape[0]:
            raise ValueError(f"dataset_size + public_size must be <= {images.shape[0]}, got {total}")
        order = np.random.default_rng(seed).permutation(images.shape[0])[:total]
        x, y = images[order].astype(np.float32) / 255.0, labels[order].astype(np.int32)
    else:
        x, y = _synthetic(seed, total)
    return (x[:dataset_size], y[:dataset_size]), (x[dataset_size:], y[dataset_size:])


def records_table(records) -> str:
    """The audit records as a fixed-width text table."""
    head = f"{'alpha':>6} {'accountant':>11} {'DV point':>9} {'DV lower':>9} {'GDP lower':>10} {'thr lower':>10} violation"
    rows = [head]
    for r in records:
        rows.append(f"{r.order:6.3g} {r.accountant:11.4f} {r.dv_point:9.4f} {r.dv_lower:9.4f} "
                    f"{r.gdp_lower:10.4f} {r.threshold_lower:10.4f} {'YES' if r.violation else 'no'}")
    return "\n".join(rows)


def plot_audit(records, path, *, accountant_params, title=""):
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
