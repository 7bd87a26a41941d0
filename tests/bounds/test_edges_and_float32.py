"""Derivatives at the edges of [0, 1] and the float32 paths, against exact references.

* ∂ Pr[S ≥ v]/∂q_i = Pr[S_{−i} = v − 1] (exact enumeration), also where some q_i is 0 or 1;
* ∂β/∂p = e^ε/(1 + (e^ε − 1)p)², e^ε at p = 0 and e^{−ε} at p = 1;
* the float32 FFT tail refuses to be differentiated (with the fix in the message), and tracing
  the count bound in float32 raises no numpy warning;
* the inverse ε in float32 under jit/vmap stays below the exact root (mpmath), as promised.
"""

import itertools
import math
import warnings

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from jaxaudit.bounds import (
    epsilon_for_count,
    poisson_binomial_tail,
    posterior_success,
    success_count_bound,
    success_tail,
)


def _tail_by_enumeration(q, v):
    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(q)):
        if sum(bits) >= v:
            total += math.prod(qi if b else 1.0 - qi for qi, b in zip(q, bits, strict=True))
    return total


def _pmf_without(q, i, k):
    """Pr[S_{−i} = k] by enumeration: the exact derivative of Pr[S ≥ k + 1] in q_i."""
    rest = np.delete(q, i)
    return _tail_by_enumeration(rest, k) - _tail_by_enumeration(rest, k + 1)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_tail_gradient_where_probabilities_are_zero_or_one(dtype):
    with jax.enable_x64(dtype == jnp.float64):
        q = jnp.array([0.0, 1.0, 0.5], dtype)
        f = lambda p: poisson_binomial_tail(p, 2)  # noqa: E731  1 − (1 − q_0)(1 − q_2) + ...
        assert jax.grad(f)(q).tolist() == [0.5, 0.5, 1.0]
        assert jax.jacfwd(f)(q).tolist() == [0.5, 0.5, 1.0]


def test_tail_gradient_matches_enumeration_with_certain_and_impossible_bernoullis():
    q = np.array([0.0, 1.0, 0.3, 0.7, 0.0, 0.2])
    with jax.enable_x64(True):
        for v in range(0, 5):  # the possible counts: S ≤ 4
            grad = np.asarray(jax.grad(lambda p, v=v: poisson_binomial_tail(p, v))(jnp.asarray(q)))
            exact = [_pmf_without(q, i, v - 1) if v >= 1 else 0.0 for i in range(q.size)]
            np.testing.assert_allclose(grad, exact, rtol=1e-12, atol=1e-15)
            log_grad = np.asarray(jax.grad(
                lambda p, v=v: poisson_binomial_tail(p, v, log=True))(jnp.asarray(q)))
            np.testing.assert_allclose(log_grad, np.asarray(exact) / _tail_by_enumeration(q, v),
                                       rtol=1e-12, atol=1e-15)
        # the count bound's tail in ε, through β and the recursion (q = β(ε, p) with p = 0, 1)
        p = np.array([0.0, 1.0, 0.25])
        d = float(jax.grad(lambda e: success_tail(jnp.asarray(p), e, 2))(1.0))
        beta = math.e * 0.25 / (1 + (math.e - 1) * 0.25)
        assert d == pytest.approx(beta * (1 - beta), rel=1e-12)  # ∂β/∂ε, Pr = β for v = 2


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_posterior_success_gradient_at_the_edges(dtype):
    rel = 1e-15 if dtype == jnp.float64 else 2e-7
    with jax.enable_x64(dtype == jnp.float64):
        grad = jax.grad(lambda p: posterior_success(p, jnp.asarray(1.0, dtype)))
        assert float(grad(jnp.asarray(0.0, dtype))) == pytest.approx(math.e, rel=rel)
        assert float(grad(jnp.asarray(1.0, dtype))) == pytest.approx(math.exp(-1), rel=rel)
        for p in (1e-3, 0.3, 0.9):
            exact = mpmath.e / (1 + (mpmath.e - 1) * mpmath.mpf(p)) ** 2
            assert float(grad(jnp.asarray(p, dtype))) == pytest.approx(float(exact), rel=rel * 8)


def test_fft_tail_derivative_in_float32_is_refused_with_the_fix():
    q = jnp.asarray(np.random.default_rng(0).uniform(0.0, 0.3, 2000), jnp.float32)
    f = lambda x: success_tail(jnp.concatenate([x[None], q[1:]]), 1.0, 500)  # noqa: E731
    for diff in (jax.jacfwd, jax.grad):
        with pytest.raises(TypeError, match=r"enable_x64.*method='recursion'"):
            diff(f)(jnp.float32(0.2))


def test_tracing_the_count_bound_in_float32_warns_nothing():
    q = jnp.asarray(np.random.default_rng(1).uniform(0.0, 0.3, 2000), jnp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jax.make_jaxpr(lambda e: success_count_bound(q, e))(1.0)
        jax.make_jaxpr(lambda e: success_tail(q, e, 500))(1.0)


def _epsilon_root(p, n, count, gamma=0.05):
    """ε with Pr[Bin(n, β(ε, p)) ≥ count] = γ, by 200 bisection steps in 60-digit mpmath."""
    with mpmath.workdps(60):
        def tail(eps):
            beta = 1 / (1 + mpmath.exp(-eps) * (1 - mpmath.mpf(p)) / p)
            return sum(mpmath.binomial(n, k) * beta**k * (1 - beta) ** (n - k)
                       for k in range(count, n + 1))
        lo, hi = mpmath.mpf(0), mpmath.mpf(50)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid) <= gamma else (lo, mid)
        return lo


@pytest.mark.parametrize(("p", "n", "count"), [
    (0.1, 100, 20), (0.5, 10, 9), (0.5, 100, 62),
    pytest.param(0.1, 1000, 120, marks=pytest.mark.slow),  # the FFT path in float32
])
@pytest.mark.slow
def test_inverse_epsilon_in_float32_under_jit_and_vmap_is_rounded_down(p, n, count):
    root = _epsilon_root(p, n, count)
    priors = jnp.full(n, p, jnp.float32)
    eager = epsilon_for_count(np.full(n, p), count)
    jitted = float(jax.jit(lambda q: epsilon_for_count(q, count))(priors))
    mapped = jax.vmap(lambda g: epsilon_for_count(priors, count, gamma=g))(
        jnp.array([0.05, 0.05], jnp.float32))
    assert eager <= root
    assert jitted <= root and float(mapped[0]) <= root
    assert jitted == pytest.approx(float(root), rel=1e-2)  # rounded down, not far


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [0.05, 11 / 1024, 1e-4])
def test_count_bound_in_float32_under_jit_is_never_below_the_exact_quantile(gamma):
    """v_γ traced in float32 (x64 off) is never below the exact binomial definition (scipy),
    also at γ = Pr[Bin(10, 1/2) ≥ 9] = 11/1024, where float32 round-off sits at the tie."""
    import scipy.stats

    for n, p, eps in ((10, 0.5, 0.0), (100, 0.1, 1.0), (200, 0.5, 0.3), (200, 0.01, 2.0)):
        beta = math.exp(eps) * p / (1 + math.expm1(eps) * p)
        tails = scipy.stats.binom.sf(np.arange(n + 1) - 1, n, beta)  # Pr[S ≥ v], v = 0..n
        below = np.nonzero(tails <= gamma)[0]
        exact = int(below[0]) if below.size else n + 1
        traced = int(jax.jit(lambda q, e: success_count_bound(q, e, gamma=gamma))(
            jnp.full(n, p, jnp.float32), jnp.float32(eps)))
        assert exact <= traced <= exact + 1
