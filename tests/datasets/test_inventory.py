"""The data directory's inventory as library calls: describe, verify, names, fetch (offline)."""

import shutil

import jax
import numpy as np
import pytest

from jaxaudit.datasets import describe_dataset, fetch_dataset, resolve_data_dir, verify_data_dir
from jaxaudit.datasets.fetch import DATASETS
from jaxaudit.datasets.inventory import INFO_DATASETS, dataset_names


@pytest.mark.needs_data("cora")
def test_describe_cora_against_the_published_counts():
    info = describe_dataset("cora")
    assert info["nodes"] == "2708" and info["undirected edges"] == "5278"
    assert info["label counts"] == "0:351 1:217 2:418 3:818 4:426 5:298 6:180"
    assert info["split (train/val/test)"] == "140/500/1000"


def test_describe_csbm_is_the_graph_of_the_commands():
    """``data info csbm --seed s`` describes graph_by_name('csbm', key=key(s)), the CSBM that shadow
    and bmp train on; its label counts are recomputed here from the graph itself."""
    from jaxaudit.datasets import graph_by_name

    info = describe_dataset("csbm", key=jax.random.key(3))
    graph = graph_by_name("csbm", key=jax.random.key(3))
    counts = np.bincount(np.asarray(graph.labels), minlength=graph.num_classes)
    assert info["label counts"] == " ".join(f"{c}:{n}" for c, n in enumerate(counts))
    assert info["nodes"] == "2708" and info["split (train/val/test)"] == "140/500/1000"
    assert info != describe_dataset("csbm", key=jax.random.key(4))


def test_bad_names_are_named():
    with pytest.raises(ValueError, match="name"):
        describe_dataset("pubmed")
    with pytest.raises(ValueError, match="key must be a JAX PRNG key"):
        describe_dataset("csbm", key=3)
    with pytest.raises(ValueError, match="names must be one of .* got 'pubmed'"):
        dataset_names(["cora", "pubmed"])
    assert dataset_names() == DATASETS and dataset_names(["mnist"]) == ("mnist",)
    assert set(INFO_DATASETS) == set(DATASETS) | {"csbm"}
    with pytest.raises(ValueError, match="name"):
        fetch_dataset("csbm")


@pytest.mark.needs_data("cora")
def test_verify_finds_bad_and_partly_present(tmp_path):
    shutil.copytree(resolve_data_dir() / "planetoid", tmp_path / "planetoid")
    inventory = verify_data_dir(tmp_path)
    assert inventory.complete and inventory.root == tmp_path
    assert {f.key for f in inventory.found} >= {"planetoid/ind.cora.x", "planetoid/ind.cora.graph"}
    (tmp_path / "planetoid" / "ind.cora.graph").unlink()
    (tmp_path / "planetoid" / "ind.cora.y").write_bytes(b"tampered")
    inventory = verify_data_dir(tmp_path)
    assert not inventory.complete
    assert [f.key for f in inventory.bad] == ["planetoid/ind.cora.y"]
    assert inventory.missing == [tmp_path / "planetoid" / "ind.cora.graph"]


def test_verify_refuses_an_absent_or_empty_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        verify_data_dir(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no known data file found"):
        verify_data_dir(tmp_path)


@pytest.mark.needs_data("cora")
def test_fetch_from_a_mirror_then_already_present(tmp_path, monkeypatch):
    from jaxaudit.datasets import _files

    mirror = tmp_path / "mirror" / "planetoid"
    shutil.copytree(resolve_data_dir() / "planetoid", mirror)
    monkeypatch.setitem(_files.BASE_URLS, "planetoid", (mirror.as_uri() + "/",))
    fetched = fetch_dataset("cora", tmp_path / "data")
    assert len(fetched) == 8 and verify_data_dir(tmp_path / "data").complete
    assert fetch_dataset("cora", tmp_path / "data") == []
