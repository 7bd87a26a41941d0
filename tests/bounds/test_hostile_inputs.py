"""Hostile inputs that used to give a wrong number instead of an error (or a flushed value):
each case failed before its fix."""

import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from jaxaudit._validation import ArgumentTypeError
from jaxaudit.bounds import (
    ball_mass,
    ball_mass_sup,
    membership_prior,
    poisson_binomial_isf,
    poisson_binomial_tail,
    posterior_success,
    success_count_bound,
    zipf_prior,
)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_ball_mass_refuses_non_finite_support(bad):
    # a NaN point holding 0.9 of the prior is in no ball: p* came out 0.1 instead of >= 0.9
    with pytest.raises(ValueError, match="values"):
        ball_mass_sup([bad, 1.0], [0.9, 0.1], 0.5)
    with pytest.raises(ValueError, match="values"):
        ball_mass([bad, 1.0], [0.9, 0.1], [1.0], 0.5)
    with pytest.raises(ValueError, match="guesses"):
        ball_mass([0.0, 1.0], [0.9, 0.1], [bad], 0.5)


def test_ball_mass_refuses_numeric_strings():
    with pytest.raises(ArgumentTypeError, match="values"):
        ball_mass_sup(["0", "1"], [0.5, 0.5], 0.5)
    with pytest.raises(ArgumentTypeError, match="guesses"):
        ball_mass([0.0, 1.0], [0.5, 0.5], ["1"], 0.5)


@pytest.mark.parametrize("guess", ["no", [0.3], 1])
def test_membership_prior_refuses_non_bool_guess(guess):
    with pytest.raises(ArgumentTypeError, match="guess"):
        membership_prior([0.3], guess=guess)
    assert membership_prior([0.3, 0.3], guess=[True, False]).tolist() == [0.3, 0.7]


def test_zipf_prior_refuses_string_ranks():
    with pytest.raises(ArgumentTypeError, match="ranks"):
        zipf_prior(1.0, 5, ["1"])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["recursion", "fft"])
def test_subnormal_probabilities_are_not_flushed(method):
    n = 200 if method == "recursion" else 300
    tail = float(poisson_binomial_tail([1e-310] * n, n, log=True, method=method))
    assert tail == pytest.approx(n * math.log(1e-310), rel=1e-13)
    # the count bound sees them too: Pr[S >= n] = 1e-310^n > 0 at γ = 0 gives v_0 = n + 1
    assert poisson_binomial_isf([1e-310] * n, 0.0, method=method) == n + 1


def test_subnormal_prior_keeps_its_posterior_success():
    with mpmath.workdps(30):
        p, e = mpmath.mpf(1e-310), mpmath.e ** 700
        exact = float(e * p / (1 + (e - 1) * p))
    with jax.enable_x64(True):
        assert float(posterior_success(1e-310, 700.0)) == pytest.approx(exact, rel=1e-12)
        beta = jax.jit(posterior_success)(jnp.float64(1e-310), jnp.float64(700.0))
    assert float(beta) == pytest.approx(exact, rel=1e-12)


def test_fractional_count_is_refused():
    with pytest.raises(ValueError, match="v"):
        poisson_binomial_tail([0.5] * 4, 2.5)


def test_bfloat16_probabilities_are_upcast():
    q = jnp.full(10, 0.5, dtype=jnp.bfloat16)  # 0.5 is exact in bfloat16
    assert float(poisson_binomial_tail(q, 10)) == 2.0**-10
    assert poisson_binomial_isf(q, 0.05) == 9


@pytest.mark.parametrize(("args", "name"), [
    (([0.5, np.nan], 1.0), "priors"), (([0.5, 0.5], np.nan), "epsilon"),
    (([0.5, 0.5], 1.0, np.nan), "delta"), (([0.5, 0.5], 1.0, 0.0, np.nan), "gamma"),
])
def test_exact_count_bound_refuses_nan(args, name):
    with pytest.raises(ValueError, match=name):
        success_count_bound(*args, method="recursion")


# --- integers beyond 64 bits, memory limits, BOM files, ρ out of range -------------------


@pytest.mark.parametrize("huge", [2**64, 10**30, 2**70])
def test_check_integer_names_huge_python_ints(huge):
    # np.isfinite on a Python int >= 2**64 raised a TypeError
    from jaxaudit._validation import check_integer

    with pytest.raises(ValueError, match=r"^count must be an integer <= 9223372036854775807"):
        check_integer("count", huge)
    assert check_integer("count", huge, maximum=None) == huge  # exact, not via a float
    with pytest.raises(ValueError, match="count"):
        check_integer("count", 1e300)


def test_uniform_prior_over_64_bit_secrets():
    from jaxaudit.bounds.priors import uniform_prior

    assert uniform_prior(2**64) == 2.0**-64
    assert uniform_prior(2**64, attempts=2**70) == 1.0
    assert uniform_prior(2**1000) == 2.0**-1000
    with pytest.raises(ValueError, match="alphabet_size"):
        uniform_prior(2**1001)


@pytest.mark.slow
def test_bounds_over_a_64_bit_uniform_secret(tmp_path):
    from jaxaudit.pipelines.bounds import BoundsConfig, run_bounds

    result = run_bounds(BoundsConfig(epsilon=1.0, prior=f"uniform:{2**64}", targets=1000))
    assert result.priors[0] == 2.0**-64
    assert result.summary.count_bound == 1  # fewer than one target: none
    with pytest.raises(ValueError, match="max_count"):
        run_bounds(BoundsConfig(max_count=10**30, prior="uniform:10", targets=10))


def test_zipf_top_mass_needs_no_range_of_length_attempts():
    # zipf:0.9,1e12 with 10^10 attempts allocated a 74.5 GiB arange
    from jaxaudit.bounds.priors import zipf_top_mass
    from jaxaudit.bounds.registry import prior_by_name

    s, n, k = 0.9, 10**12, 10**10
    with mpmath.workdps(40):
        z = mpmath.zeta(s)
        want = float((z - mpmath.zeta(s, k + 1)) / (z - mpmath.zeta(s, n + 1)))
    assert prior_by_name("zipf:0.9,1e12", attempts=k).baseline == pytest.approx(want, rel=1e-12)
    assert 0.0 < prior_by_name("zipf:0.9,1e300").baseline < 1e-20
    # small cases against the explicit sum
    for s, n, k in [(1.0, 3, 2), (0.5, 50, 7), (2.0, 10, 10), (1.3, 5, 99)]:
        explicit = zipf_prior(s, n)[: min(k, n)].sum()
        assert zipf_top_mass(s, n, k) == pytest.approx(explicit, rel=1e-12)


@pytest.mark.slow
def test_too_many_targets_refused_before_allocating(monkeypatch):
    from jaxaudit.pipelines import bounds as pipeline

    monkeypatch.setattr(pipeline, "available_memory", lambda: 4000 * pipeline.BYTES_PER_TARGET)
    assert pipeline.max_targets() == 4000
    with pytest.raises(ValueError, match=r"targets must lie in \[1, 4000\] \(available memory"):
        pipeline.run_bounds(pipeline.BoundsConfig(epsilon=1.0, prior="uniform:10", targets=4001))
    assert pipeline.run_bounds(pipeline.BoundsConfig(epsilon=1.0, prior="uniform:10",
                                                     targets=4000)).priors.size == 4000


def test_priors_text_file_with_a_byte_order_mark(tmp_path):
    from jaxaudit.pipelines.bounds import BoundsConfig, run_bounds

    path = tmp_path / "priors.txt"
    path.write_bytes(b"\xef\xbb\xbf0.1\n0.2\n")
    result = run_bounds(BoundsConfig(epsilon=1.0, priors_file=str(path)))
    assert result.priors.tolist() == [0.1, 0.2]


@pytest.mark.parametrize("rho", [1e300, 1e-300])
def test_rhos_out_of_range_are_named(rho):
    from jaxaudit.pipelines.attacks import MarginalsConfig, check_marginals_config

    with pytest.raises(ValueError, match="^rhos: "):
        check_marginals_config(MarginalsConfig(rhos=(rho,)))
