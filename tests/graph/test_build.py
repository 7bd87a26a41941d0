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
    (dict(edge_index=np.array([[0, 2**64 - 1], [1, 2]], np.uint64)),
     r"edge_index must lie in \[0, N=30\), got 18446744073709551615"),
    (dict(edge_index=[[0, 1e300], [1, 2]]), r"edge_index must lie in \[0, N=30\), got 1\d{300}"),
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


# --- hostile graph files: refused by name before anything large is allocated --------------------

_E = np.array([[0, 1], [1, 2]])
_X = np.eye(3)


@pytest.fixture
def sixteen_gib(monkeypatch):
    """The memory limit of a 32 GiB machine, whatever this one has."""
    import jaxaudit._validation.graphs as graphs

    monkeypatch.setattr(graphs, "memory_limit", lambda: 16 * 2**30)


@pytest.mark.parametrize("arrays, match", [
    (dict(features=np.zeros((0, 3)), labels=np.zeros(0, int), edge_index=np.zeros((2, 0), int)),
     r"features must hold at least one node"),
    (dict(features=np.zeros((3, 0)), labels=[0, 1, 1], edge_index=_E),
     r"features must hold at least one feature"),
    (dict(features=_X, labels=[0, 1, 10**9], edge_index=_E),
     r"labels: the largest, 1000000000, implies num_classes = 1000000001: .*needs at least "
     r"1.91 TiB, over the limit of 16 GiB"),
    (dict(features=np.zeros((1, 60_000_000), np.float32), labels=[0],
          edge_index=np.zeros((2, 0), int)),
     r"features of shape \(1, 60000000\): .*needs at least 115 GiB"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=10**12),
     r"num_classes = 1000000000000 exceeds the int32 labels' maximum"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=5 * 10**7),
     r"num_classes = 50000000: .*needs at least .* GiB, over the limit of 16 GiB"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=[2, 3]),
     r"num_classes must be one integer \(a 0-d array\), got an array of shape \(2,\)"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=3.7),
     r"num_classes must be an integer >= 1, got 3.7"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=np.nan),
     r"num_classes must be an integer >= 1, got nan"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, num_classes=True),
     r"num_classes must be an integer, got dtype bool"),
    (dict(features=_X, labels=[0, 0, 0], edge_index=_E),
     r"labels hold class 0 only: .*at least two classes must be present"),
    (dict(features=np.ones((1, 3)), labels=[0], edge_index=np.zeros((2, 0), int), num_classes=2),
     r"labels hold class 0 only"),
    (dict(features=_X, labels=[0, 1, 1], edge_index=_E, name=np.array(["a", "b"])),
     r"name must be a string"),
    (dict(features=np.full((3, 2), 1e300), labels=[0, 1, 1], edge_index=_E),
     r"features must be finite in float32"),
    (dict(features=_X, labels=[0, 1, 1e300], edge_index=_E),
     r"labels must lie in \[0, 2\*\*63\)"),
])
def test_hostile_graph_files_are_refused_by_file_and_field(tmp_path, sixteen_gib, arrays, match):
    """Tiny files declaring degenerate or enormous graphs: a ValueError naming the file and the
    array, raised before anything of the declared size is allocated (tracemalloc sees numpy's
    allocations: under 64 MiB where the training would need terabytes)."""
    import tracemalloc

    path = tmp_path / "hostile.npz"
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"graph file .*hostile\.npz: {match}"):
            load_graph_npz(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20 + 2 * np.asarray(arrays["features"]).size * 8


def test_memory_limit_and_estimate():
    """Half the physical memory, and the estimate's formula with Python integers (no overflow),
    matching the two allocations the unguarded training attempted (2.1 TB, 123 GB)."""
    import os

    from jaxaudit._validation.graphs import memory_limit, training_bytes

    assert memory_limit() == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    assert training_bytes(3, 3, 10**9 + 1) == 4 * (9 + 8 * 64 * (3 + 10**9 + 1)
                                                     + 4 * 3 * (64 + 10**9 + 1))
    assert round(training_bytes(3, 3, 10**9 + 1) / 1e12, 1) == 2.1
    assert round(training_bytes(1, 6 * 10**7, 1) / 1e9) == 123
    assert training_bytes(10**12, 10**12, 10**12, 10**12) > 2**64
    # the real data sets are far inside any machine's limit (PubMed: N 19717, F 500, C 3)
    assert training_bytes(19717, 500, 3, 88648) < 2**30


def test_a_graph_object_is_checked_the_same_way(sixteen_gib):
    """A Graph built directly (not through the constructors) with one class or an absurd class
    count is refused by the training's check, before the model is built."""
    import jax.numpy as jnp

    from jaxaudit.graph import Graph

    x, y, edges = _random_graph()
    graph = from_edge_index(x, y, edges, num_classes=3)
    for bad, match in ((graph.replace(labels=jnp.zeros(30, jnp.int32)),
                        "graph.labels hold class 0 only"),
                       (graph.replace(num_classes=10**8), r"graph.num_classes = 100000000: "),
                       (graph.replace(num_classes=2**40), "exceeds the int32"),
                       (Graph(*(jnp.zeros((0, 2)), jnp.zeros(0, jnp.int32),
                                jnp.zeros(0, jnp.int32), jnp.zeros(0, jnp.int32),
                                *[jnp.zeros(0, bool)] * 3), num_classes=2),
                        "graph.features must hold at least one node")):
        with pytest.raises(ValueError, match=match):
            train_shadow_models(jax.random.key(0), bad, uniform_sampler(0.5), "gcn", 2,
                                ShadowTraining(epochs=1))


def test_constructors_are_refused_under_jit_and_upcast_bfloat16():
    """Under jit the constructors say they run on the host (not JAX's
    TracerArrayConversionError); bfloat16 features are upcast to float32, as elsewhere."""
    import jax.numpy as jnp

    x, y, edges = _random_graph()
    with pytest.raises(TypeError, match=r"features is a traced array: .*outside jax.jit"):
        jax.jit(lambda f: from_edge_index(f, y, edges).features)(x)
    with pytest.raises(TypeError, match=r"edge_index is a traced array"):
        jax.jit(lambda e: from_edge_index(x, y, e).features)(edges)
    g = from_edge_index(jnp.asarray(x, jnp.bfloat16), y, edges)
    assert g.features.dtype == jnp.float32
    np.testing.assert_array_equal(g.features, np.asarray(jnp.asarray(x, jnp.bfloat16), np.float32))


def test_row_normalisation_is_l1_keeps_signs_and_nonnegative_rows_bit_for_bit():
    """Signed rows are divided by sum |x| (an fsum reference), keeping signs and |x| <= 1; a
    signed row sum would map [1, -1, 1e-6] to [1e6, -1e6, 1]. Nonnegative rows (bag-of-words,
    tf-idf) equal the plain row-sum normalisation to the bit; zero rows stay zero."""
    import math

    from jaxaudit.graph.shadow_models import prepare_inputs

    signed = np.array([[1, -1, 1e-6], [-1, -2, 0], [3e38, 3e38, -1], [0, 0, 0]], np.float32)
    g = from_edge_index(signed, [0, 1, 1, 0], [[0, 1], [1, 2]])
    got = np.asarray(prepare_inputs(g, sparse=False).nodes)
    for row, out in zip(signed.astype(np.float64), got, strict=True):
        norm = math.fsum(abs(v) for v in row)
        ref = row / norm if norm else row
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=0)
    assert np.all(np.sign(got) == np.sign(signed)) and np.abs(got).max() <= 1
    rng = np.random.default_rng(0)
    bags = (rng.random((50, 40)) < 0.1).astype(np.float32)
    tfidf = (rng.random((50, 40)) * (rng.random((50, 40)) < 0.3)).astype(np.float32)
    for x in (bags, tfidf):
        y = np.arange(50) % 3
        dense = np.asarray(prepare_inputs(from_edge_index(x, y, [[0], [1]]), sparse=False).nodes)
        sums = x.sum(axis=1, keepdims=True)
        np.testing.assert_array_equal(dense, np.where(sums != 0, x / np.where(sums == 0, 1, sums),
                                                      x))


def test_the_shadow_pipeline_refuses_a_hostile_file_before_writing(tmp_path):
    """What `jaxaudit shadow --graph FILE` runs: the refusal names the file and the field, and
    no run folder is created (a one-class graph used to train and end in 'diverged')."""
    from jaxaudit.pipelines import ShadowConfig, run_shadow

    path = tmp_path / "one_class.npz"
    np.savez_compressed(path, features=np.eye(3), labels=np.zeros(3, int), edge_index=_E)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=r"graph_file: graph file .*one_class\.npz: labels hold "
                                         r"class 0 only"):
        run_shadow(ShadowConfig(graph_file=str(path), num_models=2, epochs=1, chunk=2), out)
    assert not out.exists()


def test_from_jraph_refuses_an_n_node_that_contradicts_the_nodes():
    import jraph

    from jaxaudit.graph import from_jraph

    gt = jraph.GraphsTuple(nodes=np.eye(6, 3), edges=None, senders=np.array([0, 1]),
                           receivers=np.array([1, 2]), globals=None, n_node=np.array([7]),
                           n_edge=np.array([2]))
    with pytest.raises(ValueError, match=r"n_node sums to 7 but graphs_tuple.nodes has 6 rows"):
        from_jraph(gt, [0, 1, 1, 0, 1, 0])
    assert from_jraph(gt._replace(n_node=np.array([4, 2])), [0, 1, 1, 0, 1, 0]).num_nodes == 6


def test_label_messages_print_labels_as_integers():
    """A label out of range is printed as the integer it is ("got -1", not "got -1.0"), and a
    single bad label among several is not followed by "(and 0 more)"."""
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\*\*63\), got -1$"):
        from_edge_index(np.eye(3), [0, 1, -1], [[0], [1]])
    with pytest.raises(ValueError, match=r"got 5 \(and 1 more\)$"):
        from_edge_index(np.eye(4), np.array([0, 1, 5.0, 7.0]), [[0], [1]], num_classes=2)


def test_save_graph_npz_with_swapped_arguments_names_them(tmp_path):
    g = from_edge_index(np.eye(3), [0, 1, 1], [[0, 1], [1, 2]])
    with pytest.raises(TypeError, match=r"arguments are swapped"):
        save_graph_npz(g, tmp_path / "g.npz")
    with pytest.raises(TypeError, match=r"^path must be a file path"):
        save_graph_npz(3, g)
    with pytest.raises(TypeError, match=r"^graph must be a jaxaudit.graph.Graph, got dict"):
        save_graph_npz(tmp_path / "g.npz", {"features": np.eye(3)})
