"""``jaxaudit data``: inspect and verify the data sets.

``jaxaudit data info DATASET`` prints nodes, undirected edges, features, classes, label counts and
split sizes (cora, citeseer, csbm) or images and label counts (mnist, cifar10; ``--download``
fetches missing files); ``jaxaudit data download [NAME ...]`` fetches the missing files of the
named data sets (all of them by default) from their canonical locations and verifies them;
``jaxaudit data verify`` checks every known file found in the data directory against its
published digest (SHA-256; MD5 for the CIFAR-10 batches, see :mod:`jaxaudit.datasets.cifar10`),
reports the files missing from a partly present data set, and exits with status 1 if any file is
bad or missing (2 if the folder does not exist or holds no known file). Errors of the file system
(a read-only data folder, a file where a folder should be, a full disk) are one-line messages with
exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from jaxaudit.cli._types import nonnegative_int

DATASETS = ("cora", "citeseer", "mnist", "cifar10", "csbm")
#: The data sets stored in files (same as ``jaxaudit.datasets.fetch.DATASETS``; spelled out so
#: that ``jaxaudit --help`` does not import jax).
FILE_DATASETS = ("cora", "citeseer", "mnist", "cifar10")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "data",
        help="inspect and verify data sets",
        description="Inspect and verify the data sets. Data directory: --data-dir > "
        "$JAXAUDIT_DATA > ~/.cache/jaxaudit (sub-folders planetoid/, mnist/ and "
        "cifar10/cifar-10-batches-py/).",
    )
    sub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="print the size, classes and split of a data set")
    info.add_argument("dataset", choices=DATASETS, help="data set to describe")
    info.add_argument("--data-dir", default=None, help="data directory (default: $JAXAUDIT_DATA)")
    info.add_argument("--download", action="store_true", help="fetch missing files")
    info.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed for csbm")
    info.set_defaults(func=run_info)
    verify = sub.add_parser("verify", help="check the digest of every known file found")
    verify.add_argument("--data-dir", default=None, help="data directory (default: $JAXAUDIT_DATA)")
    verify.set_defaults(func=run_verify)
    download = sub.add_parser(
        "download", help="fetch the missing files of data sets from their canonical locations")
    download.add_argument("names", nargs="*", metavar="NAME",
                          help=f"data sets to fetch, among {', '.join(FILE_DATASETS)} "
                          "(default: all of them)")
    download.add_argument("--data-dir", default=None,
                          help="data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)")
    download.set_defaults(func=run_download)


def _counts(labels, num_classes: int) -> str:
    import numpy as np

    counts = np.bincount(np.asarray(labels), minlength=num_classes)
    return " ".join(f"{c}:{int(n)}" for c, n in enumerate(counts))


def run_info(args: argparse.Namespace) -> int:
    import numpy as np

    from jaxaudit import datasets

    if args.dataset == "mnist":
        images, labels = datasets.load_mnist("test", args.data_dir, args.download)
        print("dataset: mnist (test split)")
        print(f"images: {images.shape[0]}")
        print(f"image shape: {images.shape[1]}x{images.shape[2]} uint8")
        print(f"pixel range: {int(images.min())}..{int(images.max())}")
        print("classes: 10")
        print(f"label counts: {_counts(labels, 10)}")
        return 0
    if args.dataset == "cifar10":
        images, labels = datasets.load_cifar10("train", args.data_dir, args.download)
        print("dataset: cifar10 (train split)")
        print(f"images: {images.shape[0]}")
        print(f"image shape: {images.shape[1]}x{images.shape[2]}x{images.shape[3]} uint8 (HWC)")
        print(f"pixel range: {int(images.min())}..{int(images.max())}")
        print("classes: 10")
        print(f"label counts: {_counts(labels, 10)}")
        return 0
    if args.dataset == "csbm":
        import jax

        graph = datasets.make_csbm(jax.random.key(args.seed))
    else:
        graph = datasets.load_planetoid(args.dataset, args.data_dir, args.download)
    print(f"dataset: {graph.name}")
    print(f"nodes: {graph.num_nodes}")
    print(f"undirected edges: {graph.num_edges // 2}")
    print(f"directed edges: {graph.num_edges}")
    print(f"features: {graph.num_features}")
    print(f"classes: {graph.num_classes}")
    print(f"label counts: {_counts(graph.labels, graph.num_classes)}")
    print(f"edge homophily: {datasets.edge_homophily(graph):.4f}")
    sizes = [int(np.asarray(m).sum()) for m in (graph.train_mask, graph.val_mask, graph.test_mask)]
    print(f"split (train/val/test): {sizes[0]}/{sizes[1]}/{sizes[2]}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from jaxaudit.datasets import resolve_data_dir, verify_cifar10_files, verify_files
    from jaxaudit.datasets.fetch import dataset_files

    root = resolve_data_dir(args.data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data directory {root} does not exist (--data-dir or "
                                "$JAXAUDIT_DATA; `jaxaudit data download` creates it)")
    print(f"data directory: {root}")
    results = verify_files(root) + verify_cifar10_files(root)
    for r in results:
        if r.status != "missing":
            print(f"{r.status:9s} {r.key}")
    # A data set (split) with some of its files present and others missing is incomplete.
    missing = []
    for name, splits in (("cora", [None]), ("citeseer", [None]), ("mnist", ["test", "train"]),
                         ("cifar10", ["test", "train"])):
        for split in splits:
            paths = dataset_files(name, root, split)
            absent = [p for p in paths if not p.is_file()]
            if absent and len(absent) < len(paths):
                missing += absent
    for path in missing:
        print(f"{'missing':9s} {path.relative_to(root)}")
    found = [r for r in results if r.status != "missing"]
    if not found:
        raise FileNotFoundError(
            f"no known data file found in {root} (expected sub-folders planetoid/, mnist/, "
            "cifar10/cifar-10-batches-py/); nothing was verified. Point --data-dir or "
            "$JAXAUDIT_DATA at the data, or run `jaxaudit data download`")
    bad = [r for r in results if r.status == "bad"]
    print(f"{len(found)} known files found, {len(bad)} bad, {len(missing)} missing from a "
          "partly present data set")
    return 1 if bad or missing else 0


def run_download(args: argparse.Namespace) -> int:
    from jaxaudit.datasets import resolve_data_dir
    from jaxaudit.datasets._files import prepare_folder
    from jaxaudit.datasets.fetch import download_dataset, missing_files

    for name in args.names:
        if name not in FILE_DATASETS:
            raise ValueError(f"NAME must be among {', '.join(FILE_DATASETS)}, got {name!r}")
    root = resolve_data_dir(args.data_dir)
    print(f"data directory: {root}")
    for name in args.names or FILE_DATASETS:
        for folder in dict.fromkeys(p.parent for p in missing_files(name, root)):
            prepare_folder(folder)  # a file in the way, read-only: one clear error, no traceback
        fetched = download_dataset(name, root)
        state = f"fetched {len(fetched)} file(s)" if fetched else "already present"
        print(f"{name}: {state}, verified")
    return 0
