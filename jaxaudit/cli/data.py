"""``jaxaudit data info|verify|download``: inspect, verify and fetch the data sets (:mod:`jaxaudit.datasets.inventory`); ``verify`` exits with status 1 if a file is bad or missing from a partly present data set, 2 if the folder does not exist or holds no known file."""

from __future__ import annotations

import argparse
from typing import Any

from jaxaudit.cli._types import as_flags, nonnegative_int

#: ``datasets.inventory.INFO_DATASETS`` (the first four in files), spelled out: ``--help`` imports no jax.
DATASETS = ("cora", "citeseer", "mnist", "cifar10", "csbm")
DATA_DIR = "data directory (default: $JAXAUDIT_DATA, else ~/.cache/jaxaudit)"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("data", help="inspect and verify data sets", description="Inspect and verify the data sets. Data directory: --data-dir > $JAXAUDIT_DATA > ~/.cache/jaxaudit (sub-folders planetoid/, mnist/ and cifar10/cifar-10-batches-py/).")
    sub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="print the size, classes and split of a data set")
    info.add_argument("dataset", choices=DATASETS, help="data set to describe")
    info.add_argument("--data-dir", default=None, help=DATA_DIR)
    info.add_argument("--download", action="store_true", help="fetch missing files")
    info.add_argument("--seed", type=nonnegative_int, default=0, help="PRNG seed for csbm")
    info.set_defaults(func=run_info)
    verify = sub.add_parser("verify", help="check the digest of every known file found")
    verify.add_argument("--data-dir", default=None, help=DATA_DIR)
    verify.set_defaults(func=run_verify)
    download = sub.add_parser("download", help="fetch the missing files of data sets from their canonical locations")
    download.add_argument("names", nargs="*", metavar="NAME", help=f"data sets to fetch, among {', '.join(DATASETS[:4])} (default: all of them)")
    download.add_argument("--data-dir", default=None, help=DATA_DIR)
    download.set_defaults(func=run_download)


def run_info(args: argparse.Namespace) -> int:
    from jax.random import key

    from jaxaudit.datasets.inventory import describe_dataset

    info = describe_dataset(args.dataset, args.data_dir, download=args.download, key=key(args.seed))
    print("\n".join(f"{label}: {text}" for label, text in info.items()))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from jaxaudit.datasets.inventory import verify_data_dir

    inventory = verify_data_dir(args.data_dir)
    print(f"data directory: {inventory.root}")
    print("".join(f"{r.status:9s} {r.key}\n" for r in inventory.found), end="")
    print("".join(f"{'missing':9s} {p.relative_to(inventory.root)}\n" for p in inventory.missing), end="")
    print(f"{len(inventory.found)} known files found, {len(inventory.bad)} bad, "
          f"{len(inventory.missing)} missing from a partly present data set")
    return 0 if inventory.complete else 1


def run_download(args: argparse.Namespace) -> int:
    from jaxaudit.datasets import resolve_data_dir
    from jaxaudit.datasets.inventory import dataset_names, fetch_dataset

    with as_flags(names="NAME"):
        names = dataset_names(args.names)
    print(f"data directory: {resolve_data_dir(args.data_dir)}")
    for name in names:
        fetched = fetch_dataset(name, args.data_dir)
        print(f"{name}: {f'fetched {len(fetched)} file(s)' if fetched else 'already present'}, verified")
    return 0
