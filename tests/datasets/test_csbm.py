"""CSBM: determinism, structure, and realised homophily/degree/density against the model."""

import jax
import numpy as np
import pytest

from jaxaudit.datasets import edge_homophily, make_csbm

N, C = 2708, 7
SMALL = dict(num_features=16)  # edges are what is tested; keep the feature matrix small


def _structure_ok(g):
    s, r = np.asarray(g.senders), np.asarray(g.receivers)
    assert (s != r).all()
    codes = s.astype(np.int64) * g.num_nodes + r
    assert len(np.unique(codes)) == len(codes)
    np.testing.assert_array_equal(np.sort(codes), np.sort(r.astype(np.int64) * g.num_nodes + s))


@pytest.mark.slow
def test_deterministic_for_a_key():
    """Same key, same graph, also with x64 on (it used to differ there: the uniform/normal draws
    followed the default float dtype); another key, another graph."""
    a = make_csbm(jax.random.key(3), **SMALL)
    c = make_csbm(jax.random.key(4), **SMALL)
    with jax.enable_x64(True):
        b = make_csbm(jax.random.key(3), **SMALL)
    for field in ("features", "labels", "senders", "receivers", "train_mask", "val_mask",
                  "test_mask"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert a.num_edges != c.num_edges or not np.array_equal(a.senders, c.senders)


@pytest.mark.parametrize("homophily", [0.1, 0.5, 0.8, 1.0])
def test_homophily_and_degree_match_parameters(homophily):
    """Realised edge homophily h_hat has sd sqrt(h (1 - h) / M) given M edges; M is a sum of
    independent Bernoullis with mean N d / 2 and sd below sqrt(N d / 2). Tolerance: 5 sd."""
    avg_degree = 3.9
    g = make_csbm(jax.random.key(11), N, C, avg_degree=avg_degree, homophily=homophily, **SMALL)
    _structure_ok(g)
    m_expected = N * avg_degree / 2
    m = g.num_edges // 2
    assert abs(m - m_expected) < 5 * np.sqrt(m_expected)
    h_hat = edge_homophily(g)
    assert abs(h_hat - homophily) <= 5 * np.sqrt(homophily * (1 - homophily) / m) + 1e-12


def test_mean_homophily_over_keys_is_unbiased():
    """Average of h_hat over 8 keys: within 5 sd of the mean (sd / sqrt(8))."""
    h = 0.3
    values = [
        edge_homophily(make_csbm(jax.random.key(k), N, C, homophily=h, **SMALL)) for k in range(8)
    ]
    sd = np.sqrt(h * (1 - h) / (N * 3.9 / 2))
    assert abs(np.mean(values) - h) < 5 * sd / np.sqrt(8)


def test_planetoid_like_split():
    g = make_csbm(jax.random.key(0), **SMALL)
    masks = [np.asarray(m) for m in (g.train_mask, g.val_mask, g.test_mask)]
    assert [int(m.sum()) for m in masks] == [20 * C, 500, 1000]
    assert not (masks[0] & masks[1]).any() and not (masks[0] & masks[2]).any()
    assert not (masks[1] & masks[2]).any()
    labels = np.asarray(g.labels)
    assert (np.bincount(labels[masks[0]], minlength=C) == 20).all()
    assert np.bincount(labels).max() - np.bincount(labels).min() <= 1
    assert g.name == "csbm" and g.num_classes == C and g.features.dtype == np.float32


def test_small_graph_split_shrinks():
    g = make_csbm(jax.random.key(0), num_nodes=60, num_classes=3, num_features=4, avg_degree=2.0)
    sizes = [int(np.asarray(m).sum()) for m in (g.train_mask, g.val_mask, g.test_mask)]
    assert sizes[0] == 30 and sizes[1] + sizes[2] == 30
    assert not np.asarray(g.train_mask & g.test_mask).any()


def test_gaussian_features_class_means():
    """x = mu_y + N(0, I): the within-class covariance is the identity; |mu_c| ~ signal."""
    f, s = 16, 3.0
    g = make_csbm(jax.random.key(5), num_features=f, feature_signal=s)
    x, y = np.asarray(g.features), np.asarray(g.labels)
    means = np.stack([x[y == c].mean(0) for c in range(C)])
    resid = x - means[y]
    assert abs(resid.var() - 1.0) < 0.03  # 43k draws: sd of the variance ~ 0.007
    # |mu_c|^2 ~ s^2 chi2_f / f: the average over classes has mean s^2, sd s^2 sqrt(2 / (C f)).
    norms2 = (means**2).sum(1) - f / (N / C)  # remove the estimation noise of the means
    assert abs(norms2.mean() - s**2) < 5 * s**2 * np.sqrt(2 / (C * f))
    g0 = make_csbm(jax.random.key(5), num_features=f, feature_signal=0.0)
    x0 = np.asarray(g0.features)
    means0 = np.stack([x0[y == c].mean(0) for c in range(C)])
    assert abs(((means0**2).sum(1) - f / (N / C)).mean()) < 0.3


def test_bernoulli_features_density():
    """Rates d exp(s g - s^2/2) have mean d: density over C*F rates within 5 sd."""
    d, s, f = 0.0127, 1.0, 1433
    g = make_csbm(jax.random.key(2), features="bernoulli", feature_density=d, feature_signal=s)
    x = np.asarray(g.features)
    assert set(np.unique(x)) <= {0.0, 1.0} and x.shape == (N, f)
    sd = d * np.sqrt((np.exp(s**2) - 1) / (C * f) + 1 / (N * f * d))
    assert abs(x.mean() - d) < 5 * sd


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(homophily=1.5), "homophily"),
        (dict(homophily=float("nan")), "homophily"),
        (dict(avg_degree=-1.0), "avg_degree"),
        (dict(avg_degree=3000.0), "avg_degree"),
        (dict(features="poisson"), "features"),
        (dict(num_classes=0), "num_classes"),
        (dict(num_nodes=2.5), "num_nodes"),
        (dict(num_nodes=float("nan")), "num_nodes"),
        (dict(num_features="16"), "num_features"),
        (dict(split=(20, 500, float("inf"))), "num_test"),
        (dict(split=(20, 500)), "split"),
        (dict(feature_signal=-1.0), "feature_signal"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_csbm(jax.random.key(0), **kwargs)


def test_key_must_be_a_prng_key():
    with pytest.raises(ValueError, match="key"):
        make_csbm(0)


@pytest.mark.parametrize("bad", [0, "0", np.uint32(7)])
def test_a_seed_in_place_of_a_key_is_a_type_error(bad):
    """The README's key rule: a TypeError (the library's ArgumentTypeError, also a ValueError)
    naming ``key`` for an integer or a string where a PRNG key belongs, as every key-taking
    function gives."""
    with pytest.raises(TypeError, match=r"key must be a JAX PRNG key"):
        make_csbm(bad, num_nodes=60, num_classes=2, **SMALL)
