"""High-probability bounds on the number of successfully attacked targets.

Theorem (Swanberg et al. 2025, pure ε-DP): conditionally on the output, the success count
L = Σ_i ℓ_i(X_i, z_i) is stochastically dominated by Σ_i S_i with independent
S_i ~ Bernoulli(β(ε, p_i)), so for every v

    Pr[L ≥ v] ≤ Pr[PoiBin(β(ε, p)) ≥ v]                                  (ε-DP)
    Pr[L ≥ v] ≤ Pr[PoiBin(β(ε, p)) ≥ v] + n·δ                           ((ε, δ)-DP)
    Pr[L ≥ v] ≤ inf_ε { Pr[PoiBin(β(ε, p)) ≥ v] + n·δ_f(ε) }            (f-DP)

and the level-γ count bound is v_γ = min{v : bound(v) ≤ γ} (n + 1 when no v ≤ n qualifies: the
bound is vacuous, never 0).

Which p to pass. Under pure ε-DP the bound holds conditionally on the output, so p_i may be the
prior mass of the *realised* guess (single-run valid) or any upper bound such as the worst-case
p_i* = sup_z p_i(z) (e.g. the top-k prior mass). Under approximate DP / f-DP the additive n·δ
term only controls the probability over the mechanism's randomness: the bound is valid with the
worst-case prior p_i* (run-independent), or for the *expectation over outputs* of the
output-dependent bound (which needs several runs of the mechanism to estimate); it is not valid
conditionally on a single output.

Numerics: the Poisson-binomial tails come from :mod:`jaxaudit.bounds.poisson_binomial` (float64,
relative accuracy in deep tails). ``success_count_bound_exact`` is the jit/vmap-able form (exact
recursion, O(n²)); the other functions validate their arguments and pick the recursion or the
tilted-FFT engine.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    as_scalar,
    as_vector,
    check_finite,
    check_integer,
    check_nonnegative,
    check_probability,
    is_traced,
)
from jaxaudit.bounds.poisson_binomial import (
    ISF_LOG_MARGIN,
    RECURSION_MAX_N,
    _pad_to_bucket,
    poisson_binomial_isf,
    poisson_binomial_logsf_exact,
    poisson_binomial_tail,
)
from jaxaudit.bounds.success import posterior_success

__all__ = [
    "count_bound_exact",
    "aggregate_gain",
    "success_tail",
    "success_count_bound",
    "success_count_bound_exact",
    "success_tail_fdp",
    "success_count_bound_fdp",
    "fdp_epsilon_grid",
]


def _priors(priors) -> np.ndarray:
    p = as_vector("priors", priors)
    check_probability("priors", p)
    return p


def _betas(p: np.ndarray, epsilon: float) -> np.ndarray:
    with jax.enable_x64(True):
        return np.asarray(posterior_success(jnp.asarray(p), jnp.asarray(float(epsilon))))


def success_tail(priors: ArrayLike, epsilon: ArrayLike, v: ArrayLike, delta: ArrayLike = 0.0, *,
                 method: str = "auto") -> jax.Array:
    """Upper bound on Pr[L ≥ v]: min(1, Pr[PoiBin(β(ε, p)) ≥ v] + n·δ).

    Args:
      priors: (n,) baseline success probabilities p_i ∈ [0, 1] (see the module docstring for
        which p to use).
      epsilon: ε ≥ 0.
      v: scalar or array of success counts.
      delta: δ ∈ [0, 1) of (ε, δ)-DP.
      method: Poisson-binomial engine (``"auto"``, ``"recursion"``, ``"fft"``).

    Returns:
      float64 JAX array shaped like ``v``.

    Raises:
      ValueError: priors outside [0, 1] or NaN, ε < 0, δ outside [0, 1), NaN in v.

    Examples:
      >>> round(float(success_tail([0.5] * 100, 1.0, 80)), 6)  # Pr[Bin(100, e/(1+e)) ≥ 80]
      0.071556
    """
    p = _priors(priors)
    epsilon, delta = as_scalar("epsilon", epsilon), as_scalar("delta", delta)
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    check_finite("v", v)
    tail = np.asarray(poisson_binomial_tail(_betas(p, epsilon), v, method=method))
    out = np.minimum(1.0, tail + p.size * float(delta))
    out = np.where(np.asarray(v) <= 0, 1.0, out)
    with jax.enable_x64(True):
        return jnp.asarray(out)


def success_count_bound(priors: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0,
                        gamma: float = 0.05, *, method: str = "auto") -> int:
    """v_γ = min{v : Pr[PoiBin(β(ε, p)) ≥ v] + n·δ ≤ γ}; n + 1 when none (vacuous).

    With probability ≥ 1 − γ fewer than v_γ targets are attacked successfully. Round-off is
    resolved conservatively: a tail within a relative 1e−9 of the budget counts as above it
    (``poisson_binomial.ISF_LOG_MARGIN``), so v_γ is never one too small.

    Args:
      priors: (n,) baseline success probabilities.
      epsilon: ε ≥ 0.
      delta: δ ∈ [0, 1).
      gamma: level γ ∈ (0, 1).
      method: Poisson-binomial engine.

    Returns:
      Python int in 1..n + 1.

    Raises:
      ValueError: bad priors, ε, δ or γ.

    Examples:
      >>> success_count_bound([0.5] * 1000, 1.0)   # uniform prior over K = 2 values
      755
    """
    p = _priors(priors)
    epsilon, delta = as_scalar("epsilon", epsilon), as_scalar("delta", delta)
    gamma = as_scalar("gamma", gamma)
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    budget = float(gamma) - p.size * float(delta)
    if budget <= 0.0:
        return p.size + 1
    return poisson_binomial_isf(_betas(p, epsilon), budget, method=method)


def aggregate_gain(priors: ArrayLike, count_bound: int) -> float:
    """Aggregate gain of a count bound over the prior: (min(v_γ, n) − Σ_i p_i) / n.

    The fraction of the n targets that an attack may get right, beyond the Σ_i p_i successes
    expected from the prior alone, before the level-γ bound v_γ rules it out (Swanberg et al.,
    arXiv:2507.08158). A vacuous bound (v_γ = n + 1) counts as n.

    Args:
      priors: (n,) baseline success probabilities p_i.
      count_bound: v_γ, e.g. from :func:`success_count_bound`.

    Returns:
      Python float in [−1, 1] (an upper bound on the gain, since v_γ is one).

    Examples:
      >>> aggregate_gain([0.1] * 1000, 255)
      0.155
    """
    p = _priors(priors)
    if p.size == 0:
        raise ValueError("priors must hold at least one target")
    v = check_integer("count_bound", count_bound)
    return (min(v, p.size) - float(p.sum())) / p.size


@jax.jit
def count_bound_exact(probs: jax.Array, log_gamma: jax.Array) -> jax.Array:
    """v_γ = min{v : Pr[S ≥ v] ≤ γ}, or n + 1 if none (jit-able recursion).

    Because v ↦ Pr[S ≥ v] is non-increasing, v_γ = #{v ∈ 0..n : Pr[S ≥ v] > γ}; the vacuous
    case (no v ≤ n qualifies) gives n + 1 automatically. The comparison keeps the safety margin
    ``ISF_LOG_MARGIN`` (a tail within a relative 1e−9 of γ counts as above γ), so that round-off
    never makes v_γ too small.

    Args:
      probs: (n,) success probabilities.
      log_gamma: log γ (scalar; may be −inf for γ = 0).

    Returns:
      int32 scalar v_γ.
    """
    logsf = poisson_binomial_logsf_exact(probs)
    return jnp.sum(logsf > log_gamma - ISF_LOG_MARGIN).astype(jnp.int32)


def success_count_bound_exact(priors: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0,
                              gamma: float = 0.05) -> jax.Array:
    """jit/vmap-able v_γ by the exact O(n²) recursion (no validation).

    Same value as :func:`success_count_bound` (for n up to a few thousand). Useful to vmap over
    ε or over prior vectors, e.g. ``jax.vmap(success_count_bound_exact, (None, 0))(p, eps_grid)``.

    Precision: a direct call with concrete arguments runs in float64 (x64 scoped to the call).
    Under ``jit``/``vmap`` the caller's precision applies: call it inside
    ``jax.enable_x64(True)``, because in float32 priors below ≈ 1.2e−38 are flushed to 0 (e.g.
    p = 3e−39 at ε = 100 has β ≈ 1 but would count as 0) and tails carry float32 rounding, either
    of which can make v_γ too small.

    Args:
      priors: (n,) p_i.
      epsilon, delta, gamma: scalars.

    Returns:
      int32 scalar v_γ (n + 1 when vacuous).
    """
    if is_traced(priors, epsilon, delta, gamma):
        return _success_count_bound_exact(priors, epsilon, delta, gamma)
    with jax.enable_x64(True):
        args = [jnp.asarray(np.asarray(a, dtype=np.float64)) for a in (priors, epsilon, delta, gamma)]
        return _success_count_bound_exact(*args)


@jax.jit
def _success_count_bound_exact(priors, epsilon, delta, gamma) -> jax.Array:
    priors = jnp.asarray(priors)
    n = priors.shape[0]
    beta = posterior_success(priors, epsilon)
    budget = gamma - n * delta
    log_budget = jnp.log(jnp.maximum(budget, jnp.finfo(beta.dtype).tiny))
    v = count_bound_exact(beta, log_budget)
    return jnp.where(budget > 0, v, n + 1).astype(jnp.int32)


def fdp_epsilon_grid(delta_of_epsilon: Callable, n: int, gamma: float = 0.05,
                     num: int = 64) -> np.ndarray:
    """Default ε grid for the f-DP bound: ``num`` points evenly spaced on [0, ε_max].

    ε_max is the smallest ε (to 1e−4, searched on [0, 200]; 200 if none) with
    n·δ_f(ε) ≤ γ/100; ``delta_of_epsilon`` is called twice, on vectors. Larger ε cannot help much: there the additive term is already below γ/100
    while β(ε, p), hence the Poisson-binomial tail, keeps growing. For μ-GDP this gives
    ε_max ≈ μ²/2 + μ·sqrt(2 ln(100 n/γ)). Any grid gives a *valid* bound (each ε does); the
    grid only affects how tight it is.

    Raises:
      ValueError: n < 0, γ outside (0, 1) or num < 1.
    """
    n = check_integer("n", n)
    gamma = as_scalar("gamma", gamma)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    num = check_integer("num", num, minimum=1)
    def first_small(grid):
        with jax.enable_x64(True):
            deltas = np.asarray(delta_of_epsilon(jnp.asarray(grid, dtype=jnp.float64)))
        ok = n * np.broadcast_to(deltas, grid.shape) <= gamma / 100.0
        return int(np.argmax(ok)) if ok.any() else None

    coarse = np.linspace(0.0, 200.0, 2001)  # step 0.1
    i = first_small(coarse)
    if i is None:
        hi = 200.0
    elif i == 0:
        hi = 0.0
    else:
        fine = np.linspace(coarse[i - 1], coarse[i], 1001)  # step 1e-4
        hi = float(fine[first_small(fine)])
    return np.linspace(0.0, hi, num)


def _fdp_setup(priors, delta_of_epsilon, gamma, epsilons):
    p = _priors(priors)
    if not callable(delta_of_epsilon):
        raise ValueError("delta_of_epsilon must be a callable ε ↦ δ_f(ε)")
    if epsilons is None:
        epsilons = fdp_epsilon_grid(delta_of_epsilon, p.size, gamma)
    eps = as_vector("epsilons", epsilons)
    check_nonnegative("epsilons", eps)
    with jax.enable_x64(True):
        deltas = np.asarray(delta_of_epsilon(jnp.asarray(eps)), dtype=np.float64)
    deltas = np.broadcast_to(deltas, eps.shape)
    check_probability("delta_of_epsilon(epsilons)", deltas)
    return p, eps, deltas


def success_tail_fdp(
    priors: ArrayLike, delta_of_epsilon: Callable, v: ArrayLike, epsilons: ArrayLike = None, *,
    gamma: float = 0.05, method: str = "auto",
) -> jax.Array:
    """f-DP bound on Pr[L ≥ v]: min over the ε grid of Pr[PoiBin(β(ε, p)) ≥ v] + n·δ_f(ε).

    The minimum is taken separately for each v. Valid with worst-case priors (or in expectation
    over outputs), see the module docstring.

    Args:
      priors: (n,) p_i.
      delta_of_epsilon: callable ε ↦ δ_f(ε), e.g. ``lambda e: gdp_delta(e, mu)``.
      v: scalar or array of counts.
      epsilons: ε grid (default :func:`fdp_epsilon_grid` with ``gamma``).
      gamma: level used only to build the default grid.
      method: Poisson-binomial engine.

    Returns:
      float64 JAX array shaped like ``v``.
    """
    check_probability("gamma", gamma, open_low=True, open_high=True)
    p, eps, deltas = _fdp_setup(priors, delta_of_epsilon, gamma, epsilons)
    check_finite("v", v)
    best = np.ones(np.shape(v))
    for e, d in zip(eps, deltas, strict=True):
        if p.size * d >= 1.0:
            continue
        tail = np.asarray(poisson_binomial_tail(_betas(p, e), v, method=method))
        best = np.minimum(best, tail + p.size * d)
    best = np.where(np.asarray(v) <= 0, 1.0, np.minimum(best, 1.0))
    with jax.enable_x64(True):
        return jnp.asarray(best)


def success_count_bound_fdp(priors: ArrayLike, delta_of_epsilon: Callable, gamma: float = 0.05,
                            epsilons: ArrayLike = None, *, method: str = "auto") -> int:
    """f-DP count bound: v_γ = min{v : inf_ε Pr[PoiBin(β(ε, p)) ≥ v] + n·δ_f(ε) ≤ γ}.

    Equivalently the minimum over the grid of the (ε, δ_f(ε)) count bounds, since
    "bound(v) ≤ γ for some ε" is what the infimum asks. For n ≤ ``RECURSION_MAX_N`` (and
    ``method`` auto/recursion) the whole grid runs as one vmapped jit call.

    Args:
      priors: (n,) p_i.
      delta_of_epsilon: callable ε ↦ δ_f(ε) (vectorised over a jnp array).
      gamma: level γ ∈ (0, 1).
      epsilons: ε grid (default :func:`fdp_epsilon_grid`).
      method: Poisson-binomial engine.

    Returns:
      Python int in 1..n + 1.

    Examples:
      >>> from jaxaudit.bounds import gdp_delta
      >>> success_count_bound_fdp([0.01] * 100, lambda e: gdp_delta(e, 1.0))
      35
    """
    gamma = as_scalar("gamma", gamma)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    p, eps, deltas = _fdp_setup(priors, delta_of_epsilon, gamma, epsilons)
    n = p.size
    keep = n * deltas < gamma
    if not keep.any():
        return n + 1
    eps, deltas = eps[keep], deltas[keep]
    if method in ("auto", "recursion") and (method == "recursion" or n <= RECURSION_MAX_N):
        padded = _pad_to_bucket(p)
        budgets = gamma - n * deltas
        with jax.enable_x64(True):
            beta = jax.vmap(posterior_success, (None, 0))(jnp.asarray(padded), jnp.asarray(eps))
            beta = jnp.where(jnp.arange(padded.size) < n, beta, 0.0)
            vs = jax.vmap(count_bound_exact)(beta, jnp.log(jnp.asarray(budgets)))
        return int(np.min(np.asarray(vs)))
    return min(poisson_binomial_isf(_betas(p, e), gamma - n * d, method=method)
               for e, d in zip(eps, deltas, strict=True))


