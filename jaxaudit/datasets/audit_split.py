"""The data of a black-box DP-SGD audit: a private set D⁻ and a disjoint public set for
pretraining, drawn by a fixed permutation from MNIST's test split, CIFAR-10's train split or a
synthetic stand-in (used by ``jaxaudit rdp``, the notebooks and the benchmarks)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxaudit._validation import check_choice, host_seed

__all__ = ["AUDIT_DATASETS", "audit_data"]

#: The data sets of a black-box DP-SGD audit (audit_data).
AUDIT_DATASETS = ("mnist", "synthetic", "cifar10")


def _synthetic(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ten classes of 28×28 images: a fixed random prototype per class plus N(0, 0.3²) pixels,
    clipped to [0, 1] (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((10, 28, 28)) < 0.2).astype(np.float32)
    labels = rng.integers(0, 10, n).astype(np.int32)
    images = np.clip(prototypes[labels] + 0.3 * rng.standard_normal((n, 28, 28)), 0, 1)
    return images.astype(np.float32), labels


def audit_data(
    key: jax.Array, dataset: str, dataset_size: int, public_size: int, *,
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
      key: the PRNG key of the permutation (and of the synthetic data), drawn on the host by
        ``np.random.default_rng(host_seed(key))``.
      dataset: one of :data:`AUDIT_DATASETS`.
      dataset_size: |D⁻| (>= 1).
      public_size: public examples (>= 0), disjoint from D⁻.
      data_dir: data directory (see :func:`jaxaudit.datasets.resolve_data_dir`).
      verify: checksum-verify the CIFAR-10 batches (``False`` only for files you generated;
        MNIST is always verified, so ``False`` is refused for any other data set).

    Returns:
      ``((x, y), (x_public, y_public))``: float32 images and int32 labels.
    """
    seed = host_seed(key)
    check_choice("dataset", dataset, AUDIT_DATASETS)
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
