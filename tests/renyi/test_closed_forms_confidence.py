"""Closed forms (quadrature) and the confidence radii / held-out bound (coverage simulations)."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from jaxaudit.renyi import (
    dv_objective,
    gaussian_renyi,
    held_out_lower_bound,
    laplace_renyi,
    theory_radius,
)
from jaxaudit.stats import bernstein_radius, hoeffding_radius


def _renyi_quad(logpdf_q, logpdf_p, alpha, breakpoints):
    """D_α(Q‖P) = 1/(α−1) log ∫ q^α p^{1−α} with mpmath quadrature (50 digits)."""
    mpmath.mp.dps = 50
    f = lambda x: mpmath.exp(alpha * logpdf_q(x) + (1 - alpha) * logpdf_p(x))
    points = [-mpmath.inf, *breakpoints, mpmath.inf]
    return float(mpmath.log(mpmath.quad(f, points)) / (alpha - 1))


@pytest.mark.slow
@pytest.mark.parametrize("alpha,shift,scale", [(1.5, 0.5, 1.0), (2.0, 1.0, 1.0), (3.0, 2.0, 0.7),
                                                (10.0, 1.0, 2.0)])
def test_laplace_closed_form_by_quadrature(alpha, shift, scale):
    lq = lambda x: -abs(x - shift) / scale - mpmath.log(2 * scale)
    lp = lambda x: -abs(x) / scale - mpmath.log(2 * scale)
    expected = _renyi_quad(lq, lp, alpha, [0, shift])
    assert float(laplace_renyi(shift, scale, alpha)) == pytest.approx(expected, rel=1e-5)
    # symmetric in the two arguments (the reverse divergence by quadrature)
    assert _renyi_quad(lp, lq, alpha, [0, shift]) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("alpha,shift,sigma", [(1.25, 0.5, 1.0), (3.0, 2.0, 1.5)])
def test_gaussian_closed_form_by_quadrature(alpha, shift, sigma):
    lq = lambda x: -((x - shift) ** 2) / (2 * sigma**2)
    lp = lambda x: -(x**2) / (2 * sigma**2)
    # the normalising constants cancel: ∫ q^α p^{1−α} with common constant
    mpmath.mp.dps = 50
    norm = mpmath.sqrt(2 * mpmath.pi) * sigma
    f = lambda x: mpmath.exp(alpha * lq(x) + (1 - alpha) * lp(x)) / norm
    expected = float(mpmath.log(mpmath.quad(f, [-mpmath.inf, 0, mpmath.inf])) / (alpha - 1))
    assert float(gaussian_renyi(shift, sigma, alpha)) == pytest.approx(expected, rel=1e-6)


def test_laplace_large_exponent_is_finite():
    value = float(laplace_renyi(50.0, 1.0, 20.0))
    assert np.isfinite(value) and value == pytest.approx(
        (np.log(20 / 39) + 19 * 50) / 19, rel=1e-6)


@pytest.mark.parametrize("method", ["hoeffding", "bernstein"])
def test_one_sided_radius_coverage(method):
    """Upper confidence bound mean + r covers E X in ≥ 1 − δ of 4000 simulated samples."""
    rng = np.random.default_rng(3)
    delta, n = 0.1, 1000
    x = rng.beta(0.3, 3.0, size=(4000, n))   # skewed, in [0, 1], mean 0.3/3.3
    mean = 0.3 / 3.3
    if method == "hoeffding":
        radius = np.asarray(hoeffding_radius(n, 1.0, confidence=1 - delta))
    else:
        radius = np.asarray(bernstein_radius(jnp.var(x, axis=1, ddof=1), n, 1.0,
                                             confidence=1 - delta))
    miss = np.mean(x.mean(1) + radius < mean)
    assert miss <= delta
    # Bernstein adapts to the small variance: much tighter than Hoeffding here.
    if method == "bernstein":
        assert np.median(radius) < 0.6 * float(hoeffding_radius(n, 1.0, confidence=1 - delta))


def test_held_out_bound_is_below_point_and_never_nan():
    key = jax.random.key(4)
    g_q = jax.random.uniform(key, (500,), minval=-1.0, maxval=1.0)
    g_p = g_q - 0.3
    for method in ("hoeffding", "bernstein"):
        lower = held_out_lower_bound(g_q, g_p, 2.0, -1.3, 1.0, radius=method, confidence=0.95)
        assert float(lower) < float(dv_objective(g_q, g_p, 2.0))
    # Tiny samples and a huge range: A_lo would be ≤ 0 without the deterministic floor.
    lower = held_out_lower_bound(jnp.array([5.0, -5.0]), jnp.array([5.0, 5.0]), 30.0, -5.0, 5.0,
                                 radius="hoeffding", confidence=0.99)
    assert np.isfinite(float(lower)) and float(lower) < 0
    # Large α·M in float32: no overflow.
    lower = held_out_lower_bound(jnp.full((50,), 20.0), jnp.full((50,), -20.0), 10.0, -20.0, 20.0,
                                 radius="bernstein", confidence=0.95)
    assert np.isfinite(float(lower))


@pytest.mark.slow
def test_held_out_bound_coverage_for_a_fixed_critic():
    """Fixed g, Gaussian pair: the bound exceeds the population J_α(g) (≤ D_α) in ≤ δ + 3 sd."""
    alpha, shift, delta, n, reps = 2.0, 1.0, 0.1, 300, 2000
    bound_lo, bound_hi = -2.0, 2.0
    g = lambda x: jnp.clip(shift * x - shift**2 / 2, bound_lo, bound_hi)
    # population J_α(g) by a 2·10^6-point Monte Carlo in float64 numpy (error ≈ 1e-3)
    rng = np.random.default_rng(5)
    zq = np.clip(shift * (shift + rng.normal(size=2_000_000)) - shift**2 / 2, -2, 2)
    zp = np.clip(shift * rng.normal(size=2_000_000) - shift**2 / 2, -2, 2)
    j_pop = alpha / (alpha - 1) * np.log(np.mean(np.exp((alpha - 1) * zq))) - np.log(
        np.mean(np.exp(alpha * zp)))
    kq, kp = jax.random.split(jax.random.key(6))
    x_q = shift + jax.random.normal(kq, (reps, n))
    x_p = jax.random.normal(kp, (reps, n))
    for method in ("hoeffding", "bernstein"):
        lowers = jax.vmap(lambda a, b, m=method: held_out_lower_bound(
            g(a), g(b), alpha, bound_lo, bound_hi, radius=m, confidence=1 - delta))(x_q, x_p)
        rate = float(jnp.mean(lowers > j_pop - 2e-3))
        assert rate <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
    assert j_pop <= alpha * shift**2 / 2


def test_theory_radius_shape():
    r1 = theory_radius(2.0, 1.0, 0.01, 0.01, 1000, 1000, confidence=0.95)
    r2 = theory_radius(2.0, 1.0, 0.005, 0.005, 4000, 4000, confidence=0.95)
    r3 = theory_radius(2.0, 2.0, 0.01, 0.01, 1000, 1000, confidence=0.95)
    assert 0 < float(r2) < float(r1) < float(r3)
    # The Rademacher terms enter with e^{2αM}: check the P term at R = 0 exactly.
    r0 = float(theory_radius(2.0, 1.0, 0.0, 0.0, 1000, 1000, confidence=0.95))
    expected = (2.0 * np.exp(1.0) * 2 * np.sinh(1.0) * np.sqrt(np.log(80) / 2000)
                + np.exp(2.0) * 2 * np.sinh(2.0) * np.sqrt(np.log(80) / 2000))
    assert r0 == pytest.approx(expected, rel=1e-5)


def test_held_out_bound_clips_critic_values_outside_the_range():
    """Values outside [lo, hi] must not break the radii (regression: they were used unclipped).

    Identical worlds: every J_α(g) ≤ D_α = 0, so the bound must be ≤ 0 in ≥ 1 − δ of
    repetitions, even when the critic overshoots the declared range.
    """
    reps, n, delta = 200, 500, 0.1
    x = jax.random.normal(jax.random.key(16), (2, reps, n))
    for method in ("hoeffding", "bernstein"):
        lowers = jax.vmap(lambda a, b, m=method: held_out_lower_bound(
            a, b, 2.0, -0.1, 0.1, radius=m, confidence=1 - delta))(x[0], x[1])
        assert np.mean(np.asarray(lowers) > 0) <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
        # equal to the bound of the clipped critic
        clipped = jax.vmap(lambda a, b, m=method: held_out_lower_bound(
            jnp.clip(a, -0.1, 0.1), jnp.clip(b, -0.1, 0.1), 2.0, -0.1, 0.1, radius=m,
            confidence=1 - delta))(x[0], x[1])
        np.testing.assert_allclose(lowers, clipped, rtol=1e-6)


def _reference_lower_bound(g_q, g_p, alpha, lo, hi, delta, method):
    """Independent float64 evaluation of the held-out bound of docs/renyi.md, "Bounds" (δ/2 per term).

    A = mean e^{(α−1)g_q} ∈ [e^{(α−1)lo}, e^{(α−1)hi}], B = mean e^{αg_p} ∈ [e^{α lo}, e^{α hi}];
    Hoeffding: range·sqrt(ln(2/δ)/(2n)); Maurer–Pontil: sqrt(2 V̂ ln(4/δ)/n) + 7 R ln(4/δ)/(3(n−1)).
    """
    def upper_radius(x, low, high):
        n = x.size
        if method == "hoeffding":
            return (high - low) * np.sqrt(np.log(2 / delta) / (2 * n))
        log_term = np.log(2 / (delta / 2))
        return (np.sqrt(2 * np.var(x, ddof=1) * log_term / n)
                + 7 * (high - low) * log_term / (3 * (n - 1)))

    g_q, g_p = np.clip(np.asarray(g_q, np.float64), lo, hi), np.clip(np.asarray(g_p, np.float64),
                                                                      lo, hi)
    a, b = np.exp((alpha - 1) * g_q), np.exp(alpha * g_p)
    a_range = (np.exp((alpha - 1) * lo), np.exp((alpha - 1) * hi))
    b_range = (np.exp(alpha * lo), np.exp(alpha * hi))
    a_lo = max(a.mean() - upper_radius(a, *a_range), a_range[0])
    b_hi = min(b.mean() + upper_radius(b, *b_range), b_range[1])
    return alpha / (alpha - 1) * np.log(a_lo) - np.log(b_hi)


@pytest.mark.parametrize("method", ["hoeffding", "bernstein"])
def test_held_out_bound_matches_an_independent_reference(method):
    """Exact constants: δ/2 per term, ranges of e^{(α−1)g} and e^{αg} after clipping to [lo, hi],
    V̂ with denominator n − 1, the deterministic floor of A."""
    rng = np.random.default_rng(17)
    for alpha, lo, hi, n in ((2.0, -1.0, 1.5, 400), (1.25, -0.5, 0.2, 50), (4.0, -2.0, 2.0, 3000)):
        g_q = rng.normal(0.3, 0.8, n)
        g_p = rng.normal(-0.2, 0.8, n)
        got = float(held_out_lower_bound(jnp.asarray(g_q, jnp.float32), jnp.asarray(
            g_p, jnp.float32), alpha, lo, hi, radius=method, confidence=0.95))
        assert got == pytest.approx(_reference_lower_bound(g_q, g_p, alpha, lo, hi, 0.05, method),
                                    rel=2e-4, abs=2e-4)
