"""A Graph from the user's own arrays, PyG-like and networkx-like objects and .npz files: the
edge set equals a brute-force symmetric adjacency, bad input is refused by name, and a shadow
model trains on the result."""

import types

import jax
import numpy as np
import pytest

from jaxaudit.graph import (
    ShadowTraining,
    from_edge_index,
    from_networkx,
    from_pyg,
    load_graph_npz,
    save_graph_npz,
    train_shadow_models,
    uniform_sampler,
)


def _random_graph(seed=0, n=30, e=80, f=5, k=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, f))
    y = rng.integers(0, k, size=n)
    edges = rng.integers(0, n, size=(2, e))
    edges[:, :5] = edges[::-1, :5]                                    # a few reversed duplicates
    edges = np.concatenate([edges, edges[:, :7], [[3, 4], [3, 4]]], axis=1)  # exact duplicates,
    return x, y, edges                                                # self-loops (3,3), (4,4)


def _adjacency(senders, receivers, n):
    a = np.zeros((n, n), dtype=int)
    np.add.at(a, (np.asarray(senders), np.asarray(receivers)), 1)
    return a


def test_edges_symmetrised_without_loops_or_duplicates():
    x, y, edges = _random_graph()
    g = from_edge_index(x, y, edges, num_classes=3)
    brute = np.zeros((30, 30), dtype=int)
    for u, v in edges.T:
        if u != v:
            brute[u, v] = brute[v, u] = 1
    np.testing.assert_array_equal(_adjacency(g.senders, g.receivers, 30), brute)
    pairs = np.stack([np.asarray(g.senders), np.asarray(g.receivers)], 1)
    assert pairs.tolist() == sorted(pairs.tolist())              # sorted by (sender, receiver)
    assert g.num_classes == 3 and g.num_nodes == 30 and g.features.dtype == np.float32
    assert not np.asarray(g.train_mask).any()


def test_masks_and_defaults():
    x, y, edges = _random_graph(1)
    mask = np.arange(30) < 10
    g = from_edge_index(x, y, edges, train_mask=mask, test_mask=~mask, name="mine")
    assert g.num_classes == int(y.max()) + 1 and g.name == "mine"
    np.testing.assert_array_equal(g.train_mask, mask)
    np.testing.assert_array_equal(g.test_mask, ~mask)


@pytest.mark.parametrize("kwargs, match", [
    (dict(edge_index=[[0, 1], [1, 30]]), "edge_index must lie in"),
    (dict(edge_index=[[0, 1, 2]]), r"edge_index must have shape \(2, E\)"),
    (dict(edge_index=[[0.5, 1.0], [1.0, 2.0]]), "edge_index must hold integer"),
    (dict(labels=np.full(30, 5), num_classes=3), "labels must lie in"),
    (dict(labels=np.zeros(29, int)), "labels must have shape"),
    (dict(features=np.full((30, 5), np.nan)), "features must be finite"),
    (dict(features=np.zeros(30)), r"features must have shape \(N, F\)"),
    (dict(train_mask=np.full(30, 0.5)), "train_mask must be boolean"),
    (dict(train_mask=np.ones(3, bool)), "train_mask must have shape"),
])
def test_bad_input_named(kwargs, match):
    x, y, edges = _random_graph()
    args = dict(features=x, labels=y, edge_index=edges) | kwargs
    with pytest.raises(ValueError, match=match):
        from_edge_index(args.pop("features"), args.pop("labels"), args.pop("edge_index"), **args)


def test_pyg_like_object():
    x, y, edges = _random_graph(2)
    mask = np.arange(30) % 2 == 0
    data = types.SimpleNamespace(x=x, y=y, edge_index=edges, train_mask=mask)
    g = from_pyg(data)
    ref = from_edge_index(x, y, edges, train_mask=mask)
    for field in ("features", "labels", "senders", "receivers", "train_mask"):
        np.testing.assert_array_equal(getattr(g, field), getattr(ref, field))
    with pytest.raises(ValueError, match="data.edge_index is missing"):
        from_pyg(types.SimpleNamespace(x=x, y=y))


class _TinyNx:
    """The part of networkx's Graph API that from_networkx reads (networkx is not a dependency)."""

    def __init__(self, attrs, edges):
        self.nodes = attrs
        self._edges = edges

    def edges(self):
        return list(self._edges)


def test_networkx_like_object_relabels_nodes():
    attrs = {"a": {"x": [1.0, 0.0], "y": 0}, "b": {"x": [0.0, 1.0], "y": 1},
             "c": {"x": [1.0, 1.0], "y": 1}}
    g = from_networkx(_TinyNx(attrs, [("a", "b"), ("c", "b"), ("c", "c")]))
    assert sorted(zip(np.asarray(g.senders).tolist(), np.asarray(g.receivers).tolist())) == [
        (0, 1), (1, 0), (1, 2), (2, 1)]
    np.testing.assert_array_equal(g.labels, [0, 1, 1])
    with pytest.raises(ValueError, match="has no attribute 'y'"):
        from_networkx(_TinyNx({"a": {"x": [1.0]}}, []))


def test_real_networkx_graph():
    nx = pytest.importorskip("networkx")
    h = nx.karate_club_graph()
    for node in h.nodes:
        h.nodes[node]["x"] = [float(h.degree[node])]
        h.nodes[node]["y"] = int(h.nodes[node]["club"] == "Officer")
    g = from_networkx(h)
    assert g.num_edges == 2 * h.number_of_edges()


def test_npz_round_trip_and_corrupt_files(tmp_path):
    x, y, edges = _random_graph(3)
    g = from_edge_index(x, y, edges, train_mask=np.arange(30) < 5, name="written")
    path = save_graph_npz(tmp_path / "g.npz", g)
    back = load_graph_npz(path)
    assert back.name == "written" and back.num_classes == g.num_classes
    for field in ("features", "labels", "senders", "receivers", "train_mask", "test_mask"):
        np.testing.assert_array_equal(getattr(back, field), getattr(g, field))
    with pytest.raises(FileNotFoundError, match="graph"):
        load_graph_npz(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="junk.npz"):
        load_graph_npz(tmp_path / "junk.npz")
    np.savez(tmp_path / "partial.npz", features=x, labels=y)
    with pytest.raises(ValueError, match="lacks the array"):
        load_graph_npz(tmp_path / "partial.npz")
    np.savez(tmp_path / "bad.npz", features=x, labels=y, edge_index=np.array([[0], [99]]))
    with pytest.raises(ValueError, match="bad.npz.*edge_index must lie in"):
        load_graph_npz(tmp_path / "bad.npz")


@pytest.mark.slow
def test_shadow_models_train_on_a_user_graph(tmp_path):
    rng = np.random.default_rng(4)
    n, k = 60, 3
    y = rng.integers(0, k, size=n)
    x = np.eye(k)[y] + 0.5 * rng.normal(size=(n, k))
    same = y[:, None] == y[None, :]
    dense = rng.random((n, n)) < np.where(same, 0.15, 0.01)
    edges = np.stack(np.nonzero(np.triu(dense, 1)))
    graph = load_graph_npz(save_graph_npz(tmp_path / "user.npz", from_edge_index(x, y, edges)))
    shadow = train_shadow_models(jax.random.key(0), graph, uniform_sampler(0.5), "gcn", 2, ShadowTraining(epochs=5))
    assert shadow.scores.shape == (2, n) and np.all(np.isfinite(shadow.scores))


def test_from_jraph_round_trips_and_the_refusal_names_it():
    """Graph -> to_graphs_tuple -> from_jraph gives the same graph; a GraphsTuple given where a
    Graph belongs is refused with a message naming from_jraph."""
    import jraph

    from jaxaudit.graph import from_jraph

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=12)
    edges = np.stack(np.nonzero(np.triu(rng.random((12, 12)) < 0.3, 1)))
    graph = from_edge_index(rng.normal(size=(12, 4)), y, edges, num_classes=3,
                            train_mask=np.arange(12) < 4, name="mine")
    back = from_jraph(graph.to_graphs_tuple(), graph.labels, num_classes=3,
                      train_mask=graph.train_mask, name="mine")
    for field in ("features", "labels", "senders", "receivers", "train_mask", "val_mask",
                  "test_mask"):
        np.testing.assert_array_equal(np.asarray(getattr(back, field)),
                                      np.asarray(getattr(graph, field)), err_msg=field)
    assert (back.num_classes, back.name) == (3, "mine")
    # one direction per edge in, both directions out, as from_edge_index
    one_way = jraph.GraphsTuple(nodes=np.eye(3), edges=None, senders=np.array([0, 1]),
                                receivers=np.array([1, 2]), globals=None, n_node=np.array([3]),
                                n_edge=np.array([2]))
    g = from_jraph(one_way, [0, 1, 1])
    assert g.num_edges == 4 and g.num_classes == 2
    with pytest.raises(TypeError, match="from_jraph"):
        train_shadow_models(jax.random.key(0), graph.to_graphs_tuple(), uniform_sampler(0.5),
                            "gcn", 2)
    with pytest.raises(TypeError, match="nodes"):
        from_jraph(one_way._replace(nodes={"x": np.eye(3)}), [0, 1, 1])
    with pytest.raises(TypeError, match="GraphsTuple"):
        from_jraph(np.eye(3), [0, 1, 1])
    with pytest.raises(ValueError, match="labels"):
        from_jraph(one_way, [0, 1])
