"""Packed-bit dropout: exact Bernoulli rates, independence of packed fields, inverted scaling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.graph.dropout import Dropout, bernoulli_keep, bits_per_draw


def test_bits_per_draw():
    assert bits_per_draw(0.5) == 1
    assert bits_per_draw(0.25) == 2
    assert bits_per_draw(0.75) == 2
    assert bits_per_draw(0.4375) == 4
    assert bits_per_draw(1 / 256) == 8
    assert bits_per_draw(0.4) == 16
    assert bits_per_draw(1.0) == 1


@pytest.mark.slow
@pytest.mark.parametrize("keep", [0.5, 0.25, 0.4375, 0.4, 0.1])
def test_bernoulli_keep_rate_within_monte_carlo_error(keep):
    # 2e6 draws: the sample mean has sd sqrt(keep(1-keep)/n) <= 3.6e-4; allow 5 sd, plus the
    # documented 2^-16 rounding for rates that are not dyadic.
    shape = (2000, 1000)
    m = np.asarray(bernoulli_keep(jax.random.key(11), keep, shape))
    assert m.shape == shape and m.dtype == bool
    sd = np.sqrt(keep * (1 - keep) / m.size)
    assert abs(m.mean() - keep) < 5 * sd + 2.0**-16


def test_packed_fields_are_independent():
    # Neighbouring elements come from the same 32-bit word (different bits): their correlation,
    # and the correlation across a word boundary, must be zero within Monte Carlo error.
    m = np.asarray(bernoulli_keep(jax.random.key(12), 0.5, (10**6,)), np.float64)
    for lag in (1, 31, 32, 33):
        corr = np.corrcoef(m[:-lag], m[lag:])[0, 1]
        assert abs(corr) < 5 / np.sqrt(m.size), (lag, corr)
    # all 2^4 patterns of 4 consecutive bits equally frequent (chi-square, df 15, p ~ 1e-6 cut)
    quads = m[: (m.size // 4) * 4].reshape(-1, 4) @ np.array([1, 2, 4, 8])
    counts = np.bincount(quads.astype(int), minlength=16)
    expected = counts.sum() / 16
    assert ((counts - expected) ** 2 / expected).sum() < 50.0


def test_different_keys_give_different_masks():
    a = bernoulli_keep(jax.random.key(1), 0.5, (64, 64))
    b = bernoulli_keep(jax.random.key(2), 0.5, (64, 64))
    assert bool(jnp.any(a != b))


def test_bernoulli_keep_rejects_bad_probability():
    with pytest.raises(ValueError, match="keep"):
        bernoulli_keep(jax.random.key(0), 1.5, (3,))


def test_dropout_inverted_scaling_and_deterministic():
    x = jnp.ones((1000, 200))
    layer = Dropout(rate=0.5)
    y = layer.apply({}, x, deterministic=False, rngs={"dropout": jax.random.key(3)})
    vals = np.unique(np.asarray(y))
    np.testing.assert_allclose(vals, [0.0, 2.0])
    assert abs(float(y.mean()) - 1.0) < 5 * np.sqrt(1.0 / x.size)  # E[y] = x, sd 1/sqrt(n)
    np.testing.assert_array_equal(layer.apply({}, x, deterministic=True), x)
    np.testing.assert_array_equal(Dropout(rate=1.0).apply({}, x, deterministic=False,
                                                          rngs={"dropout": jax.random.key(0)}),
                                  jnp.zeros_like(x))


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_dropout_rejects_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        Dropout(rate=rate).apply({}, jnp.ones((2, 2)), deterministic=True)
