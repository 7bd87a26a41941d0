"""Refusals and out-of-domain answers of the bounds found by a hostile probe round: a Zipf prior
too large for memory, and traced ε < 0 or p < 0 (NaN / a vacuous count, not a plausible number).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxaudit.bounds.priors as priors_module
from jaxaudit.bounds import posterior_success, success_count_bound, success_tail, zipf_prior


def test_zipf_prior_refuses_a_support_beyond_memory_before_allocating():
    """zipf_prior(1, 10^12) tried to allocate 7.28 TiB (a MemoryError after a long wait)."""
    with pytest.raises(ValueError, match=r"support_size 1000000000000 .*ranks=.*zipf_top_mass"):
        zipf_prior(1.0, 10**12)
    # the ranks route is the cheap one: N = 10^12 costs nothing there (mass of rank 1 = 1/H_N)
    harmonic = np.log(1e12) + np.euler_gamma + 1 / (2e12)
    np.testing.assert_allclose(zipf_prior(1.0, 10**12, ranks=[1, 2]),
                               [1 / harmonic, 0.5 / harmonic], rtol=1e-12)


def test_zipf_prior_memory_limit_is_the_available_memory(monkeypatch):
    monkeypatch.setattr(priors_module, "available_memory", lambda: 24 * 1000)
    assert zipf_prior(1.0, 1000).shape == (1000,)
    with pytest.raises(ValueError, match="at most support_size 1000"):
        zipf_prior(1.0, 1001)


@pytest.mark.parametrize(("prior", "epsilon"), [(0.3, -1.0), (-0.5, 1.0), (1.5, 1.0),
                                                (0.3, float("nan"))])
def test_traced_out_of_domain_posterior_is_nan(prior, epsilon):
    """jit(posterior_success)(0.3, −1) gave 0.136 (below the prior) and (−0.5, 1) gave 0."""
    assert np.isnan(jax.jit(posterior_success)(prior, epsilon))
    assert np.isnan(jax.jit(success_tail)(jnp.array([0.2, prior]), epsilon, 1))


@pytest.mark.parametrize(("bad_prior", "epsilon"), [(0.1, -1.0), (-0.5, 1.0), (1.5, 1.0),
                                                    (0.1, float("nan"))])
def test_traced_out_of_domain_count_bound_is_vacuous(bad_prior, epsilon):
    """A bad traced ε or prior gave a plausible, too small count (2 for ε = −1); it is now the
    vacuous n + 1, which claims nothing."""
    priors = np.full(100, 0.1)
    count = jax.jit(success_count_bound)
    # the valid case, against scipy's binomial quantile: v_γ = isf(γ) + 1 for a uniform prior
    beta = np.e * 0.1 / (1 + (np.e - 1) * 0.1)
    assert int(count(jnp.asarray(priors), 1.0)) == int(scipy.stats.binom.isf(0.05, 100, beta)) + 1
    bad = priors.copy()
    bad[3] = bad_prior
    assert int(count(jnp.asarray(bad), epsilon)) == 101
