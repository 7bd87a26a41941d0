"""Refusals and out-of-domain answers of the bounds found by a hostile probe round: a Zipf prior
too large for memory, and traced ε < 0 or p < 0 (NaN / a vacuous count, not a plausible number).
"""

import numpy as np
import pytest

import jaxaudit.bounds.priors as priors_module
from jaxaudit.bounds import zipf_prior


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
