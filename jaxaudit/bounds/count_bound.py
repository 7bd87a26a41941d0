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
relative accuracy in deep tails). Every function here is a validated entry in front of a pure
``jax.numpy`` core: concrete calls validate and compute in float64 (x64 scoped to the call);
inside the caller's ``jit``/``vmap`` they just compute, in the caller's precision (enable x64
there: float32 flushes priors below ≈ 1.2e−38 to 0 and loses the tails' relative accuracy,
either of which can make v_γ too small). The count bounds are integers found by a bracketing
search on the tail inside ``lax.while_loop``, so they vmap over ε, δ, γ or prior vectors, e.g.
``jax.vmap(lambda e: success_count_bound(p, e))(eps_grid)`` under ``jax.enable_x64(True)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    as_scalar,
    as_vector,
    check_choice,
    check_integer,
    check_nonnegative,
    check_probability,
    is_traced,
)
from jaxaudit.bounds._numerics import Concrete
from jaxaudit.bounds.poisson_binomial import (
    _METHODS,
    RECURSION_MAX_N,
    _check_counts,
    _isf_core,
    _logsf_core,
    _padded_counts,
    _x64,
)
from jaxaudit.bounds.success import _posterior_success

__all__ = [
    "aggregate_gain",
    "success_tail",
    "success_count_bound",
    "success_tail_fdp",
    "success_count_bound_fdp",
    "fdp_epsilon_grid",
]


def _priors(priors):
    """The (n,) priors, checked: probabilities, and at least one target (an empty prior would
    give the vacuous n + 1 = 1, a claim about no one)."""
    p = as_vector("priors", priors)
    check_probability("priors", p)
    if jnp.shape(p)[0] == 0:
        raise ValueError("priors must hold at least one target, got an empty array")
    return p


def _check_method(method: str) -> None:
    check_choice("method", method, _METHODS)


# --------------------------------------------------------------------------------------------
# Cores (pure jnp, no validation)
# --------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames="method")
def _beta_logsf(priors, epsilon, v, method: str = "auto") -> jax.Array:
    """log Pr[PoiBin(β(ε, p)) ≥ v] (shape of v)."""
    return _logsf_core(_posterior_success(jnp.asarray(priors), epsilon), v, method=method)


def _add_delta(xp, log_tail, v, n, delta):
    """min(1, tail + n·δ), 1 for v ≤ 0, with ``xp`` = jnp (traced) or np (concrete: numpy's
    exp keeps a subnormal tail, which XLA on CPU would flush to 0)."""
    v = xp.asarray(v)
    return xp.where(v <= 0, 1.0, xp.minimum(1.0, xp.exp(log_tail) + n * delta))


def _success_tail_core(priors, epsilon, v, delta=0.0, method: str = "auto") -> jax.Array:
    """min(1, Pr[PoiBin(β(ε, p)) ≥ v] + n·δ), 1 for v ≤ 0 (shape of v; no validation)."""
    n = jnp.shape(priors)[0]
    return _add_delta(jnp, _beta_logsf(priors, epsilon, v, method=method), v, n, delta)


@partial(jax.jit, static_argnames="method")
def _success_count_bound_core(priors, epsilon, delta=0.0, gamma=0.05,
                             method: str = "auto") -> jax.Array:
    """v_γ = min{v : Pr[PoiBin(β(ε, p)) ≥ v] + n·δ ≤ γ} (int32; n + 1 when none, and for
    out-of-domain input, where β is NaN; no validation)."""
    priors = jnp.asarray(priors)
    n = priors.shape[0]
    beta = _posterior_success(priors, epsilon)
    budget = gamma - n * delta
    log_budget = jnp.log(jnp.maximum(budget, jnp.finfo(beta.dtype).tiny))
    v = _isf_core(beta, log_budget, method=method)
    # a NaN β (traced ε < 0 or NaN, p outside [0, 1] or NaN) claims nothing: the vacuous n + 1
    valid = (budget > 0) & ~jnp.any(jnp.isnan(beta))
    return jnp.where(valid, v, n + 1).astype(jnp.int32)


def _over_grid(fn, epsilons, deltas, method: str, size: int):
    """fn(ε, δ) for every grid point: one vmapped call for the recursion, a sequential
    ``lax.map`` in small batches for the FFT path (its work arrays are O(n) per ε)."""
    if method == "recursion" or (method == "auto" and size <= RECURSION_MAX_N):
        return jax.vmap(fn)(epsilons, deltas)
    return jax.lax.map(lambda ed: fn(*ed), (epsilons, deltas), batch_size=4)


@partial(jax.jit, static_argnames="method")
def _beta_logsf_grid(priors, epsilons, v, method: str = "auto") -> jax.Array:
    """log Pr[PoiBin(β(ε_j, p)) ≥ v] for every ε_j of the grid: shape (grid,) + v's shape."""
    zeros = jnp.zeros_like(jnp.asarray(epsilons))
    return _over_grid(lambda e, _: _beta_logsf(priors, e, v, method=method),
                      jnp.asarray(epsilons), zeros, method, jnp.shape(priors)[0])


def _success_tail_fdp_core(priors, epsilons, deltas, v, method: str = "auto") -> jax.Array:
    """min over the grid of min(1, Pr[PoiBin(β(ε_j, p)) ≥ v] + n·δ_j), 1 for v ≤ 0."""
    n = jnp.shape(priors)[0]
    logs = _beta_logsf_grid(priors, epsilons, v, method=method)
    deltas = jnp.reshape(jnp.asarray(deltas), (-1,) + (1,) * jnp.ndim(v))
    return jnp.min(_add_delta(jnp, logs, v, n, deltas), axis=0)


@partial(jax.jit, static_argnames="method")
def _success_count_bound_fdp_core(priors, epsilons, deltas, gamma=0.05,
                                 method: str = "auto") -> jax.Array:
    """min over the grid of the (ε_j, δ_j) count bounds (int32; n + 1 when none)."""
    vs = _over_grid(lambda e, d: _success_count_bound_core(priors, e, d, gamma, method=method),
                    jnp.asarray(epsilons), jnp.asarray(deltas), method, jnp.shape(priors)[0])
    return jnp.min(vs)


def _betas(p: np.ndarray, epsilon) -> np.ndarray:
    """β(ε, p) in float64 on concrete values (the cores' formula)."""
    with jax.enable_x64(True):
        return np.asarray(_posterior_success(jnp.asarray(p), jnp.asarray(float(epsilon))))


def _count_bound(beta: np.ndarray, n: int, delta, gamma, method: str) -> int:
    """v_γ on concrete β: what :func:`_success_count_bound_core` computes, run as its two jitted
    parts (β, then :func:`_isf_core`), so that the compiled engine is shared with
    :func:`poisson_binomial_isf` instead of compiled again for every public function."""
    budget = float(gamma) - n * float(delta)
    if budget <= 0.0:
        return n + 1
    return int(_x64(_isf_core, beta, math.log(budget), method=method))


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def success_tail(priors: ArrayLike, epsilon: ArrayLike, v: ArrayLike, delta: ArrayLike = 0.0, *,
                 method: str = "auto") -> jax.Array:
    """Upper bound on Pr[L ≥ v]: min(1, Pr[PoiBin(β(ε, p)) ≥ v] + n·δ).

    Args:
      priors: (n,) baseline success probabilities p_i ∈ [0, 1] (see the module docstring for
        which p to use).
      epsilon: ε ≥ 0.
      v: scalar or array of integer success counts.
      delta: δ ∈ [0, 1) of (ε, δ)-DP.
      method: Poisson-binomial engine (``"auto"``, ``"recursion"``, ``"fft"``).

    Returns:
      float64 JAX array shaped like ``v``.

    Raises:
      ValueError: priors outside [0, 1] or NaN, ε < 0, δ outside [0, 1), v not integers.

    Examples:
      >>> round(float(success_tail([0.5] * 100, 1.0, 80)), 6)  # Pr[Bin(100, e/(1+e)) ≥ 80]
      0.071556
    """
    p = _priors(priors)
    epsilon, delta = as_scalar("epsilon", epsilon), as_scalar("delta", delta)
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    v = _check_counts("v", v)
    _check_method(method)
    if is_traced(p, epsilon, v, delta):
        return _success_tail_core(jnp.asarray(p), epsilon, v, delta, method=method)
    padded, unpad = _padded_counts(v)
    log_tail = unpad(np.asarray(_x64(_logsf_core, _betas(p, epsilon), padded, method=method)))
    with jax.enable_x64(True):
        return jnp.asarray(_add_delta(np, log_tail, v, p.size, delta))


@overload
def success_count_bound(priors: Concrete, epsilon: float, delta: float = ..., gamma: float = ...,
                        *, method: str = ...) -> int: ...
@overload
def success_count_bound(priors: ArrayLike | Sequence[float], epsilon: ArrayLike,
                        delta: ArrayLike = ..., gamma: ArrayLike = ..., *, method: str = ...
                        ) -> int | jax.Array: ...
def success_count_bound(priors: ArrayLike | Sequence[float], epsilon: ArrayLike,
                        delta: ArrayLike = 0.0, gamma: ArrayLike = 0.05, *, method: str = "auto"
                        ) -> int | jax.Array:
    """v_γ = min{v : Pr[PoiBin(β(ε, p)) ≥ v] + n·δ ≤ γ}; n + 1 when none (vacuous).

    With probability ≥ 1 − γ fewer than v_γ targets are attacked successfully. Round-off is
    resolved conservatively: a tail within a relative 1e−9 of the budget counts as above it
    (``poisson_binomial.ISF_LOG_MARGIN``; in float32 under the caller's ``jit``/``vmap`` a
    further 16·n ulp), so v_γ is never one too small. vmaps over ε, δ, γ and priors (enable x64
    in the caller, see the module docstring).

    Args:
      priors: (n,) baseline success probabilities.
      epsilon: ε ≥ 0.
      delta: δ ∈ [0, 1).
      gamma: level γ ∈ (0, 1).
      method: Poisson-binomial engine.

    Returns:
      Python int in 1..n + 1 (an int32 array inside ``jit``/``vmap``).

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
    _check_method(method)
    if is_traced(p, epsilon, delta, gamma):
        return _success_count_bound_core(jnp.asarray(p), epsilon, delta, gamma, method=method)
    return _count_bound(_betas(p, epsilon), p.size, delta, gamma, method)


@overload
def aggregate_gain(priors: Concrete, count_bound: int) -> float: ...
@overload
def aggregate_gain(priors: ArrayLike | Sequence[float], count_bound: ArrayLike
                   ) -> float | jax.Array: ...
def aggregate_gain(priors: ArrayLike | Sequence[float], count_bound: ArrayLike
                   ) -> float | jax.Array:
    """Aggregate gain of a count bound over the prior: (min(v_γ, n) − Σ_i p_i) / n.

    The fraction of the n targets that an attack may get right, beyond the Σ_i p_i successes
    expected from the prior alone, before the level-γ bound v_γ rules it out (Swanberg et al.,
    arXiv:2507.08158). A vacuous bound (v_γ = n + 1) counts as n.

    Args:
      priors: (n,) baseline success probabilities p_i.
      count_bound: v_γ, e.g. from :func:`success_count_bound`.

    Returns:
      Python float in [−1, 1] (an upper bound on the gain, since v_γ is one); a JAX scalar
      inside ``jit``/``vmap``.

    Examples:
      >>> aggregate_gain([0.1] * 1000, 255)
      0.155
    """
    p = _priors(priors)
    if p.shape[0] == 0:
        raise ValueError("priors must hold at least one target")
    if is_traced(p, count_bound):
        return _aggregate_gain(jnp.asarray(p), count_bound)
    v = check_integer("count_bound", count_bound)
    return (min(v, p.size) - float(p.sum())) / p.size


def _aggregate_gain(p, v):
    n = p.shape[0]
    return (jnp.minimum(v, n) - jnp.sum(p)) / n


def fdp_epsilon_grid(delta_of_epsilon: Callable, n: int, gamma: float = 0.05,
                     num: int = 64) -> np.ndarray | jax.Array:
    """Default ε grid for the f-DP bound: ``num`` points evenly spaced on [0, ε_max].

    ε_max is the smallest ε (to 1e−4, searched on [0, 200]; 200 if none) with
    n·δ_f(ε) ≤ γ/100; ``delta_of_epsilon`` is called twice, on vectors. Larger ε cannot help
    much: there the additive term is already below γ/100 while β(ε, p), hence the
    Poisson-binomial tail, keeps growing. For μ-GDP this gives
    ε_max ≈ μ²/2 + μ·sqrt(2 ln(100 n/γ)). Any grid gives a *valid* bound (each ε does); the
    grid only affects how tight it is. Concrete arguments give a float64 numpy grid; inside the
    caller's ``jit``/``vmap`` (a traced ``n`` or γ, or a ``delta_of_epsilon`` that closes over a
    traced μ) the same search runs in jnp (``num`` stays static).

    Raises:
      ValueError: n < 0, γ outside (0, 1) or num < 1 (concrete arguments).
    """
    num = check_integer("num", num, minimum=1)
    if is_traced(n, gamma, delta_of_epsilon(jnp.zeros((1,)))):
        return _fdp_epsilon_grid_traced(delta_of_epsilon, n, gamma, num)
    n = check_integer("n", n)
    gamma = as_scalar("gamma", gamma)
    check_probability("gamma", gamma, open_low=True, open_high=True)

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


def _fdp_epsilon_grid_traced(delta_of_epsilon: Callable, n: ArrayLike, gamma: ArrayLike,
                             num: int) -> jax.Array:
    """:func:`fdp_epsilon_grid` in jnp (no validation; ``num`` static): the same search, a
    coarse grid of step 0.1 on [0, 200] then a fine one of step 1e−4, by ``argmax`` instead of
    host indexing, so that the default grid is built inside the user's ``jit``/``vmap`` (e.g.
    when ``delta_of_epsilon`` closes over a traced μ)."""
    coarse = jnp.linspace(0.0, 200.0, 2001)

    def first_small(grid):
        ok = n * jnp.broadcast_to(delta_of_epsilon(grid), grid.shape) <= gamma / 100.0
        return jnp.argmax(ok), jnp.any(ok)

    i, found = first_small(coarse)
    fine = jnp.linspace(coarse[jnp.maximum(i - 1, 0)], coarse[i], 1001)
    j, _ = first_small(fine)
    hi = jnp.where(~found, 200.0, jnp.where(i == 0, 0.0, fine[j]))
    return jnp.linspace(0.0, hi, num)


def _fdp_setup(priors, delta_of_epsilon, gamma, epsilons):
    p = _priors(priors)
    if not callable(delta_of_epsilon):
        raise ValueError("delta_of_epsilon must be a callable ε ↦ δ_f(ε)")
    if epsilons is None:
        traced_delta = is_traced(delta_of_epsilon(jnp.zeros((1,))))
        if traced_delta or is_traced(p, gamma):  # inside the user's jit/vmap
            epsilons = _fdp_epsilon_grid_traced(delta_of_epsilon, jnp.shape(p)[0], gamma, 64)
        else:
            epsilons = fdp_epsilon_grid(delta_of_epsilon, p.shape[0], gamma)
    eps = as_vector("epsilons", epsilons)
    check_nonnegative("epsilons", eps)
    if is_traced(p, eps):
        return p, eps, jnp.broadcast_to(delta_of_epsilon(eps), eps.shape)
    with jax.enable_x64(True):
        deltas = delta_of_epsilon(jnp.asarray(eps))
    if is_traced(deltas):  # δ_f closes over a traced parameter (the caller vmaps over μ)
        return p, eps, jnp.broadcast_to(deltas, eps.shape)
    deltas = np.broadcast_to(np.asarray(deltas, dtype=np.float64), eps.shape)
    check_probability("delta_of_epsilon(epsilons)", deltas)
    return p, eps, deltas


def success_tail_fdp(
    priors: ArrayLike, delta_of_epsilon: Callable, v: ArrayLike, epsilons: ArrayLike | None = None, *,
    gamma: float = 0.05, method: str = "auto",
) -> jax.Array:
    """f-DP bound on Pr[L ≥ v]: min over the ε grid of Pr[PoiBin(β(ε, p)) ≥ v] + n·δ_f(ε).

    The minimum is taken separately for each v. Valid with worst-case priors (or in expectation
    over outputs), see the module docstring.

    Args:
      priors: (n,) p_i.
      delta_of_epsilon: callable ε ↦ δ_f(ε) (jnp, vectorised), e.g.
        ``lambda e: gdp_delta(e, mu)``.
      v: scalar or array of integer counts.
      epsilons: ε grid (default :func:`fdp_epsilon_grid` with ``gamma``; required inside
        ``jit``/``vmap`` when ``gamma`` is traced).
      gamma: level used only to build the default grid.
      method: Poisson-binomial engine.

    Returns:
      float64 JAX array shaped like ``v``.
    """
    check_probability("gamma", gamma, open_low=True, open_high=True)
    p, eps, deltas = _fdp_setup(priors, delta_of_epsilon, gamma, epsilons)
    v = _check_counts("v", v)
    _check_method(method)
    if is_traced(p, eps, deltas, v):
        return _success_tail_fdp_core(jnp.asarray(p), eps, deltas, v, method=method)
    padded, unpad = _padded_counts(v)
    best = np.ones(np.shape(v))
    for e, d in zip(eps, deltas, strict=True):
        log_tail = unpad(np.asarray(_x64(_logsf_core, _betas(p, e), padded, method=method)))
        best = np.minimum(best, _add_delta(np, log_tail, v, p.size, d))
    with jax.enable_x64(True):
        return jnp.asarray(best)


def success_count_bound_fdp(priors: ArrayLike, delta_of_epsilon: Callable, gamma: float = 0.05,
                            epsilons: ArrayLike | None = None, *, method: str = "auto"
                            ) -> int | jax.Array:
    """f-DP count bound: v_γ = min{v : inf_ε Pr[PoiBin(β(ε, p)) ≥ v] + n·δ_f(ε) ≤ γ}.

    Equivalently the minimum over the grid of the (ε, δ_f(ε)) count bounds, since
    "bound(v) ≤ γ for some ε" is what the infimum asks. The grid runs as one vmapped call
    (recursion) or a ``lax.map`` (FFT path).

    Args:
      priors: (n,) p_i.
      delta_of_epsilon: callable ε ↦ δ_f(ε) (vectorised over a jnp array).
      gamma: level γ ∈ (0, 1).
      epsilons: ε grid (default :func:`fdp_epsilon_grid`).
      method: Poisson-binomial engine.

    Returns:
      Python int in 1..n + 1 (an int32 array inside ``jit``/``vmap``).

    Examples:
      >>> from jaxaudit.bounds import gdp_delta
      >>> success_count_bound_fdp([0.01] * 100, lambda e: gdp_delta(e, 1.0))
      35
    """
    gamma = as_scalar("gamma", gamma)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    p, eps, deltas = _fdp_setup(priors, delta_of_epsilon, gamma, epsilons)
    _check_method(method)
    if is_traced(p, eps, deltas, gamma):
        return _success_count_bound_fdp_core(jnp.asarray(p), eps, deltas, gamma, method=method)
    return min(_count_bound(_betas(p, e), p.size, d, gamma, method)
               for e, d in zip(eps, deltas, strict=True))
