"""Planetoid loader against the published facts of Cora and CiteSeer and the raw pickles."""

import functools
import shutil

import numpy as np
import pytest

from jaxaudit.datasets import load_planetoid, resolve_data_dir
from jaxaudit.datasets.planetoid import _unpickle

# Published facts (Yang et al. 2016; Kipf & Welling 2017; PyTorch Geometric's Planetoid).
FACTS = {
    "cora": dict(nodes=2708, features=1433, classes=7, edges=5278, split=(140, 500, 1000)),
    "citeseer": dict(nodes=3327, features=3703, classes=6, edges=4552, split=(120, 500, 1000)),
}
CORA_LABEL_COUNTS = [351, 217, 418, 818, 426, 298, 180]


@functools.cache
def _load(name):
    return load_planetoid(name)


@pytest.fixture(scope="module", params=["cora", "citeseer"])
def graph(request):
    return _load(request.param)


def _raw(name, part):
    return _unpickle(resolve_data_dir() / "planetoid" / f"ind.{name}.{part}")


def _test_index(name):
    path = resolve_data_dir() / "planetoid" / f"ind.{name}.test.index"
    return np.loadtxt(path, dtype=np.int64)


@pytest.mark.needs_data("cora", "citeseer")
def test_sizes_and_split(graph):
    facts = FACTS[graph.name]
    assert graph.num_nodes == facts["nodes"]
    assert graph.num_features == facts["features"]
    assert graph.num_classes == facts["classes"]
    assert graph.num_edges == 2 * facts["edges"]
    masks = [np.asarray(m) for m in (graph.train_mask, graph.val_mask, graph.test_mask)]
    assert tuple(int(m.sum()) for m in masks) == facts["split"]
    assert not (masks[0] & masks[1]).any() and not (masks[1] & masks[2]).any()
    assert not (masks[0] & masks[2]).any()
    labels = np.asarray(graph.labels)
    assert labels.dtype == np.int32 and graph.features.dtype == np.float32
    assert np.bincount(labels, minlength=graph.num_classes).sum() == graph.num_nodes
    # 20 training nodes per class.
    assert (np.bincount(labels[masks[0]], minlength=graph.num_classes) == 20).all()
    # Binary bag-of-words features.
    assert set(np.unique(np.asarray(graph.features))) <= {0.0, 1.0}


@pytest.mark.needs_data("cora", "citeseer")
def test_edges_undirected_without_self_loops(graph):
    s, r = np.asarray(graph.senders), np.asarray(graph.receivers)
    assert s.dtype == np.int32 and r.dtype == np.int32
    assert (s != r).all()
    pairs = set(zip(s.tolist(), r.tolist(), strict=True))
    assert len(pairs) == len(s)  # no duplicates
    assert pairs == {(b, a) for a, b in pairs}  # both directions
    assert s.min() >= 0 and max(s.max(), r.max()) < graph.num_nodes


@pytest.mark.needs_data("cora", "citeseer")
def test_matches_raw_pickles(graph):
    """Independent reassembly: test rows sit at test.index, train rows are x/y, edges from dict."""
    name = graph.name
    tx, ty, x, y = (_raw(name, p) for p in ("tx", "ty", "x", "y"))
    test_index = _test_index(name)
    features, labels = np.asarray(graph.features), np.asarray(graph.labels)
    np.testing.assert_array_equal(features[test_index], tx.toarray())
    np.testing.assert_array_equal(labels[test_index], ty.argmax(1))
    np.testing.assert_array_equal(features[: x.shape[0]], x.toarray())
    np.testing.assert_array_equal(labels[: y.shape[0]], y.argmax(1))
    assert set(np.flatnonzero(np.asarray(graph.test_mask))) == set(test_index.tolist())
    adjacency = _raw(name, "graph")
    expected = {(u, v) for u, nbrs in adjacency.items() for v in nbrs if u != v}
    expected |= {(v, u) for u, v in expected}
    got = set(zip(np.asarray(graph.senders).tolist(), np.asarray(graph.receivers).tolist()))
    assert got == expected


@pytest.mark.needs_data("cora")
def test_cora_label_counts():
    graph = load_planetoid("Cora")
    np.testing.assert_array_equal(np.bincount(np.asarray(graph.labels)), CORA_LABEL_COUNTS)


@pytest.mark.needs_data("citeseer")
def test_citeseer_missing_test_rows_zero_padded():
    graph = _load("citeseer")
    test_index = _test_index("citeseer")
    missing = sorted(set(range(test_index.min(), test_index.max() + 1)) - set(test_index.tolist()))
    assert len(missing) == 15  # 3327 = 2312 (allx) + 1000 (tx) + 15 padded rows
    features = np.asarray(graph.features)
    assert not features[missing].any()
    zero_rows = np.flatnonzero(~features.any(axis=1))
    np.testing.assert_array_equal(zero_rows, missing)
    masks = np.asarray(graph.train_mask | graph.val_mask | graph.test_mask)
    assert not masks[missing].any()


def test_unknown_name():
    with pytest.raises(ValueError, match="name"):
        load_planetoid("pubmed")


def _copy_planetoid(tmp_path, name="cora"):
    src = resolve_data_dir() / "planetoid"
    dst = tmp_path / "planetoid"
    dst.mkdir()
    for f in src.glob(f"ind.{name}.*"):
        shutil.copy(f, dst / f.name)
    return dst


@pytest.mark.needs_data("cora")
def test_truncated_file_refused(tmp_path):
    folder = _copy_planetoid(tmp_path)
    data = (folder / "ind.cora.graph").read_bytes()
    (folder / "ind.cora.graph").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="checksum mismatch.*ind.cora.graph"):
        load_planetoid("cora", data_dir=tmp_path)


@pytest.mark.needs_data("cora")
def test_altered_file_refused(tmp_path):
    folder = _copy_planetoid(tmp_path)
    data = bytearray((folder / "ind.cora.tx").read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / "ind.cora.tx").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum mismatch.*ind.cora.tx"):
        load_planetoid("cora", data_dir=tmp_path)


def test_empty_folder_gives_remedies(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_planetoid("cora", data_dir=tmp_path)
    msg = str(info.value)
    assert "ind.cora." in msg
    assert str(tmp_path / "planetoid") in msg
    assert "download=True" in msg and "JAXAUDIT_DATA" in msg
