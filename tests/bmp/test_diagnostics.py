"""Rank-normalised split-R̂ and bulk ESS: equal to blackjax's implementations (with and without
the 64-bit packed sort, with ties), against the AR(1) closed form, exact invariances, scipy's
ranks."""

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxaudit.bmp import diagnostics

_diagnose = jax.jit(diagnostics.diagnose)  # one compilation per shape, not one per operation


def _ar1(key, rho, num_chains, num_samples):
    """Stationary Gaussian AR(1) chains x_t = ρ x_{t−1} + √(1 − ρ²) e_t."""
    e = jax.random.normal(key, (num_samples, num_chains))

    def step(x, e_t):
        x = rho * x + np.sqrt(1 - rho**2) * e_t
        return x, x

    _, xs = jax.lax.scan(step, e[0], e[1:])
    return jnp.concatenate([e[:1], xs]).T


def _cases():
    x = _ar1(jax.random.key(8), 0.7, 4, 501) + jnp.asarray([0.0, 0.1, -0.2, 0.4])[:, None]
    ties = jnp.round(x, 1)  # many ties
    stuck = x.at[1, 100:300].set(x[1, 100])  # a chain repeating one state
    zeros = x.at[:, ::7].set(0.0).at[0, ::11].set(-0.0)  # signed zeros are one value
    return [x, jnp.exp(x), ties, stuck, zeros]


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["sort", "packed"])
def test_diagnostics_equal_blackjax(x64):
    """Same values as blackjax.diagnostics.rhat / ess_bulk, on both sort paths."""
    for case, x in enumerate(_cases()):
        with jax.enable_x64(x64):
            d = jax.jit(diagnostics.diagnose)(x)
            want_rhat = blackjax.diagnostics.rhat(x)
            want_ess = blackjax.diagnostics.ess_bulk(x)
        np.testing.assert_allclose(float(d.rhat), float(want_rhat), rtol=1e-5, err_msg=str(case))
        np.testing.assert_allclose(float(d.ess), float(want_ess), rtol=1e-4, err_msg=str(case))


@pytest.mark.slow
def test_vmapped_over_nodes_matches_one_by_one():
    x = jnp.stack(_cases()[:3])
    with jax.enable_x64(True):
        batch = jax.jit(jax.vmap(diagnostics.diagnose))(x)
    for i in range(3):
        one = diagnostics.diagnose(x[i])
        np.testing.assert_allclose(float(batch.rhat[i]), float(one.rhat), rtol=1e-5)
        np.testing.assert_allclose(float(batch.ess[i]), float(one.ess), rtol=1e-4)


def test_bulk_ess_matches_ar1_closed_form():
    """ESS of stationary AR(1) chains of n draws in all → n (1 − ρ)/(1 + ρ); rank-normalising a
    Gaussian chain leaves its autocorrelation nearly unchanged. 8 chains × 4000 draws: the
    estimator's relative sd is about 5% at ρ = 0.9; tolerance 15%."""
    for rho, key in ((0.0, 0), (0.5, 1), (0.9, 2)):
        x = _ar1(jax.random.key(key), rho, 8, 4000)
        want = x.size * (1 - rho) / (1 + rho)
        got = float(_diagnose(x).ess)
        assert abs(got / want - 1) < 0.15, (rho, got, want)


@pytest.mark.slow
def test_invariant_under_monotone_maps():
    """Rank-based: exp(x) and x³ + 2 have the same R̂ and bulk ESS as x; the raw-draw ESS of the
    heavy-tailed exp(3x) differs (so the test can tell the two apart)."""
    x = _ar1(jax.random.key(3), 0.6, 4, 1000)
    base = _diagnose(x)
    for y in (jnp.exp(x), x**3 + 2.0):
        d = _diagnose(y)
        np.testing.assert_allclose(float(d.ess), float(base.ess), rtol=1e-5)
        np.testing.assert_allclose(float(d.rhat), float(base.rhat), rtol=1e-5)
    raw = float(blackjax.diagnostics.effective_sample_size(jnp.exp(3 * x)))
    assert abs(raw / float(base.ess) - 1) > 0.1


@pytest.mark.slow
def test_rank_normalize_uses_average_ranks():
    """Normal scores of scipy's average ranks (ties averaged), Blom's offset."""
    x = jnp.asarray([[3.0, 1.0, 2.0, 2.0], [5.0, 1.0, 4.0, 2.0]])
    r = stats.rankdata(np.asarray(x).ravel(), method="average")
    want = stats.norm.ppf((r - 0.375) / (x.size + 0.25)).reshape(x.shape)
    for x64 in (False, True):
        with jax.enable_x64(x64):
            got = np.asarray(diagnostics.rank_normalize(x))
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_split_rhat_sees_what_the_classic_rhat_misses():
    """Chains that drift (each goes from −1 to +1 over its run) have equal means, so the classic
    R̂ is ≈ 1; the split-R̂ compares first and second halves and flags them. Chains with equal
    medians but different scales are flagged by the folded (tail) R̂."""
    noise = 0.3 * jax.random.normal(jax.random.key(5), (4, 1000))
    drift = jnp.linspace(-1.0, 1.0, 1000) + noise
    assert float(blackjax.diagnostics.potential_scale_reduction(drift)) < 1.01
    assert float(_diagnose(drift).rhat) > 1.1
    scales = jnp.asarray([0.2, 1.0, 1.0, 5.0])[:, None] * jax.random.normal(
        jax.random.key(6), (4, 1000))
    assert float(_diagnose(scales).rhat) > 1.05
    iid = jax.random.normal(jax.random.key(7), (4, 1000))
    assert float(_diagnose(iid).rhat) < 1.01


def test_split_chains_halves():
    x = jnp.arange(14.0).reshape(2, 7)
    np.testing.assert_array_equal(np.asarray(diagnostics.split_chains(x)),
                                  [[0, 1, 2], [7, 8, 9], [3, 4, 5], [10, 11, 12]])


@pytest.mark.slow
def test_bulk_ess_and_rhat_are_the_fields_of_diagnose():
    x = _ar1(jax.random.key(9), 0.3, 3, 64)
    d = _diagnose(x)
    np.testing.assert_allclose(float(jax.jit(diagnostics.bulk_ess)(x)), float(d.ess), rtol=1e-5)
    np.testing.assert_allclose(float(jax.jit(diagnostics.rhat)(x)), float(d.rhat), rtol=1e-5)


def test_bad_shapes_raise():
    for bad in (jnp.ones(10), jnp.ones((4, 3)), jnp.ones((2, 4, 10))):
        with pytest.raises(ValueError, match="draws must have shape"):
            diagnostics.diagnose(bad)


@pytest.mark.slow
def test_median_mcse_iid_matches_the_closed_form():
    """Independent N(0, 1) draws, 4 × 1000: MCSE of the q-quantile = √(q(1 − q)/n)/φ(Φ⁻¹(q))
    (asymptotic; 0.0198 for the median). The median's estimate from one set of draws lies within
    20% of it; the 5% quantile's within a factor 2 (its width comes from ±14 order statistics
    in the sparse tail, a noisy local density)."""
    x = jax.random.normal(jax.random.key(11), (4, 1000))
    for q, rel in ((0.5, 0.2), (0.05, 1.0)):
        got = float(diagnostics.quantile_mcse(x, q))
        want = np.sqrt(q * (1 - q) / 4000) / stats.norm.pdf(stats.norm.ppf(q))
        assert abs(got - want) <= rel * want, (q, got, want)
    assert float(diagnostics.median_mcse(x)) == float(diagnostics.quantile_mcse(x, 0.5))


@pytest.mark.slow
def test_median_mcse_matches_the_spread_over_independent_runs():
    """AR(1) chains with ρ = 0.9, 4 × 1000, 400 independent runs: the sd of their medians
    (Monte Carlo, relative se 3.5%) and the mean reported MCSE agree within 15%, and both match
    the asymptotic sd of the median, √(τ/(4n))/φ(0) with the indicator's integrated
    autocorrelation time τ = 1 + 2 Σ_k (2/π) arcsin(ρ^k) (the orthant probability of a
    bivariate normal), within 15%."""
    keys = jax.random.split(jax.random.key(12), 400)
    runs = jax.vmap(lambda k: _ar1(k, 0.9, 4, 1000))(keys)
    medians = np.median(np.asarray(runs).reshape(400, -1), axis=1)
    mcse = np.asarray(jax.jit(jax.vmap(diagnostics.median_mcse))(runs))
    spread = medians.std(ddof=1)
    tau = 1 + 2 * np.sum(2 / np.pi * np.arcsin(0.9 ** np.arange(1, 2000)))
    closed = np.sqrt(tau / (4 * 4000)) / stats.norm.pdf(0.0)
    assert abs(mcse.mean() / spread - 1) <= 0.15, (mcse.mean(), spread)
    assert abs(spread / closed - 1) <= 0.15 and abs(mcse.mean() / closed - 1) <= 0.15
