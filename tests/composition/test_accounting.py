"""Every public numeric function of jaxaudit.accounting under jax.jit, jax.vmap (over a natural
axis) and jax.grad (where differentiable) equals its eager, validated call; gradients are
checked against central finite differences of the eager function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.accounting import (
    epsilon_for_delta,
    noise_for_epsilon,
    rdp_epsilons,
    sampled_gaussian_rdp,
)

ORDERS = (1.1, 1.5, 2.0, 3.0, 8.0)
SIGMAS = (0.9, 1.7, 3.2)


@pytest.fixture(autouse=True)
def _x64():
    # the eager calls run in float64 themselves; under a transform the caller's precision applies
    with jax.enable_x64(True):
        yield


def _central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


# ------------------------------------------------------------------------------------------
# sampled_gaussian_rdp (the core)


@pytest.mark.slow
def test_sampled_gaussian_rdp_jit_vmap_grad():
    eager = np.array([[float(sampled_gaussian_rdp(s, 0.1, a)) for a in ORDERS] for s in SIGMAS])
    jitted = jax.jit(lambda s: sampled_gaussian_rdp(s, 0.1, jnp.asarray(ORDERS)))
    np.testing.assert_allclose(jitted(SIGMAS[1]), eager[1], rtol=1e-9)
    over_sigma = jax.vmap(lambda s: sampled_gaussian_rdp(s, 0.1, jnp.asarray(ORDERS)))
    np.testing.assert_allclose(over_sigma(jnp.asarray(SIGMAS)), eager, rtol=1e-9)
    grad = jax.grad(lambda s: sampled_gaussian_rdp(s, 0.1, 1.5))(1.7)
    fd = _central(lambda s: float(sampled_gaussian_rdp(s, 0.1, 1.5)), 1.7, 1e-3)
    assert float(grad) == pytest.approx(fd, rel=1e-5)


# ------------------------------------------------------------------------------------------
# rdp_epsilons


def _rdp(sigma, q=0.1, steps=50):
    return rdp_epsilons(noise_multiplier=sigma, sampling_rate=q, steps=steps, orders=ORDERS)


@pytest.mark.slow
def test_rdp_epsilons_jit_vmap_grad():
    eager = np.stack([_rdp(s) for s in SIGMAS])
    assert isinstance(eager, np.ndarray) and eager.dtype == np.float64
    np.testing.assert_allclose(jax.jit(_rdp)(SIGMAS[0]), eager[0], rtol=1e-9)
    np.testing.assert_allclose(jax.vmap(_rdp)(jnp.asarray(SIGMAS)), eager, rtol=1e-9)
    # a second natural axis: the sampling rate
    qs = (0.01, 0.1, 0.5)
    by_q = jax.vmap(lambda q: _rdp(1.7, q))(jnp.asarray(qs))
    np.testing.assert_allclose(by_q, np.stack([_rdp(1.7, q) for q in qs]), rtol=1e-9)
    grad = jax.grad(lambda s: jnp.sum(_rdp(s)))(1.7)
    fd = _central(lambda s: float(np.sum(_rdp(s))), 1.7, 1e-3)
    assert float(grad) == pytest.approx(fd, rel=1e-5)


def test_rdp_epsilons_traced_orders():
    orders = jnp.asarray(ORDERS)
    traced = jax.jit(lambda a: rdp_epsilons(noise_multiplier=1.7, sampling_rate=0.1, steps=50,
                                            orders=a))(orders)
    np.testing.assert_allclose(traced, _rdp(1.7), rtol=1e-9)


# ------------------------------------------------------------------------------------------
# epsilon_for_delta


def _eps(sigma, delta=1e-5):
    return epsilon_for_delta(noise_multiplier=sigma, sampling_rate=0.1, steps=50, delta=delta,
                             orders=ORDERS)


@pytest.mark.slow
def test_epsilon_for_delta_jit_vmap_grad():
    eager = np.array([_eps(s) for s in SIGMAS])
    assert all(isinstance(_eps(s), float) for s in SIGMAS[:1])
    np.testing.assert_allclose(jax.jit(_eps)(SIGMAS[2]), eager[2], rtol=1e-9)
    np.testing.assert_allclose(jax.vmap(_eps)(jnp.asarray(SIGMAS)), eager, rtol=1e-9)
    deltas = (1e-6, 1e-5, 1e-3)
    by_delta = jax.vmap(lambda d: _eps(1.7, d))(jnp.asarray(deltas))
    np.testing.assert_allclose(by_delta, [_eps(1.7, d) for d in deltas], rtol=1e-9)
    grad = jax.grad(_eps)(1.7)
    fd = _central(_eps, 1.7, 1e-4)
    assert float(grad) == pytest.approx(fd, rel=1e-4) and float(grad) < 0


# ------------------------------------------------------------------------------------------
# noise_for_epsilon (accountant="rdp"; "pld" runs dp_accounting on the host)


def _sigma(epsilon):
    return noise_for_epsilon(epsilon, 1e-5, 50, 0.1, orders=ORDERS)


@pytest.mark.slow
def test_noise_for_epsilon_jit_vmap_grad():
    epsilons = (1.0, 2.0, 4.0)
    eager = np.array([_sigma(e) for e in epsilons])
    # the calibrated σ meets the target, and is the smallest that does
    for e, s in zip(epsilons, eager):
        assert _eps(s) <= e and _eps(s * (1 - 1e-9)) > e
    np.testing.assert_allclose(jax.jit(_sigma)(epsilons[1]), eager[1], rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(_sigma)(jnp.asarray(epsilons)), eager, rtol=1e-12)
    # implicit gradient dσ/dε = 1 / (dε/dσ), against finite differences of the eager σ
    grad = jax.grad(_sigma)(2.0)
    fd = _central(_sigma, 2.0, 1e-4)
    assert float(grad) == pytest.approx(fd, rel=1e-4) and float(grad) < 0


def test_noise_for_epsilon_pld_refuses_a_transform():
    with pytest.raises(ValueError, match="pld"):
        jax.jit(lambda e: noise_for_epsilon(e, 1e-5, 10, 1.0, accountant="pld"))(2.0)
