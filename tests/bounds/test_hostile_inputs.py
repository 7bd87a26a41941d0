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
