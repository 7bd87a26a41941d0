"""The inverse question: which ε protects a prior?

Given the adversary's prior and a target, the largest ε under which an ε-DP (or (ε, δ)-DP)
mechanism keeps the attack at or below the target:

* per target, β(ε, p_i) ≤ s for every i: since β(ε, p) = sigmoid(ε + logit p) is increasing in
  ε, ε* = min_i (logit s − logit p_i) = logit s − logit max_i p_i (closed form);
* in aggregate, v_γ(ε) ≤ V (v_γ of :func:`jaxaudit.bounds.success_count_bound`: with
  probability ≥ 1 − γ fewer than V targets are attacked successfully): v_γ ≤ V holds
  iff Pr[PoiBin(β(ε, p)) ≥ V] + n·δ ≤ γ (the tail is non-increasing in v), and that tail is
  increasing in ε, so ε* is found by bisection on ε with the exact tail.

Both are rounded *down* (a returned ε never exceeds the exact answer, so it always protects),
+inf when every ε does (e.g. s = 1, or fewer than V targets with p_i > 0) and −inf when no ε ≥ 0
does (a prior already above s; γ − n·δ ≤ 0; a tail above γ at ε = 0). Pure ``jax.numpy`` cores
behind validated entries, as everywhere in :mod:`jaxaudit.bounds`: they jit and vmap (over
targets s or V, levels γ, prior vectors).

References:
  Swanberg, Annamalai, Hayes, Balle, Smith. "A Unified Framework for Adversary-Aware
  Differential Privacy Bounds." arXiv:2507.08158.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    check_probability,
    is_traced,
)
from jaxaudit.bounds._numerics import Concrete, safe_logit
from jaxaudit.bounds.poisson_binomial import (
    _METHODS,
    ISF_LOG_MARGIN,
    THETA_MAX,
    _logsf_core,
    _rounding_margin,
    _x64,
)
from jaxaudit.bounds.success import _posterior_success

__all__ = ["epsilon_for_success", "epsilon_for_count"]

#: Bisection steps of :func:`epsilon_for_count` on [0, EPSILON_MAX]: 800/2^64 ≈ 4e−17.
_STEPS = 64
#: β(ε, p) = sigmoid(ε + logit p) is within a rounding of 1 for every float64 p > 0 beyond it.
EPSILON_MAX = THETA_MAX
#: The inverse's target: a tail at most γ·e^{−2·ISF_LOG_MARGIN}, one margin inside the count
#: bound's threshold γ·e^{−ISF_LOG_MARGIN}. The count bound and the bisection evaluate the same
#: tail by different paths (the FFT engine's bracketing search tilts at other points than the
#: one-count tail), which differ by a relative ≈ 1e−13; with one margin for both, a bisection that
#: stops within 1e−16 of the threshold left ``success_count_bound(p, ε*)`` = V + 1 for some priors.
#: The rule both follow: v_γ counts a tail within a relative ISF_LOG_MARGIN of γ as above γ, and
#: the inverse returns an ε whose tail is a further ISF_LOG_MARGIN below that.
INVERSE_LOG_MARGIN = 2.0 * ISF_LOG_MARGIN


@jax.custom_jvp
def _round_down(x):
    """The float just below ``x`` (finite x): the float64 evaluation may round up by an ulp.

    Its derivative is 1 (the tangent passes through): the rounding moves x by one ulp, and
    ``nextafter`` has no differentiation rule of its own."""
    return jnp.where(jnp.isfinite(x), jnp.nextafter(x, jnp.asarray(-jnp.inf, x.dtype)), x)


@_round_down.defjvp
def _round_down_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _round_down(x), dx


@jax.jit
def _epsilon_for_success_core(priors, max_success) -> jax.Array:
    """min_i (logit s − logit p_i), rounded down; −inf if negative (no validation)."""
    priors = jnp.asarray(priors)
    s, p_max = jnp.asarray(max_success, priors.dtype), jnp.max(priors)
    eps = jnp.maximum(_round_down(safe_logit(s) - safe_logit(p_max)), 0.0)
    # s = 1 or max p = 0: every ε protects (∞ − ∞ when both: NaN → ∞, β(ε, 0) = 0 ≤ 1)
    eps = jnp.where((s == 1) | (safe_logit(p_max) == -jnp.inf), jnp.inf, eps)
    # β(0, p) = p: a prior above s is above it at every ε ≥ 0
    return jnp.where(p_max > s, -jnp.inf, eps)


@overload
def epsilon_for_success(priors: Concrete, max_success: float) -> float: ...
@overload
def epsilon_for_success(priors: ArrayLike | Sequence[float], max_success: ArrayLike
                        ) -> float | jax.Array: ...
def epsilon_for_success(priors: ArrayLike | Sequence[float], max_success: ArrayLike
                        ) -> float | jax.Array:
    """Largest ε with β(ε, p_i) ≤ s for every target: logit s − logit max_i p_i, rounded down.

    For one target this is logit(s) − logit(p): the ε at which the posterior success
    sigmoid(ε + logit p) reaches s.

    Args:
      priors: (n,) baseline success probabilities p_i ∈ [0, 1] (a scalar: one target).
      max_success: target s ∈ [0, 1] on every target's posterior success.

    Returns:
      ε ≥ 0 as a Python float (a JAX scalar inside ``jit``/``vmap``); +inf when every ε
      protects (s = 1 or all p_i = 0), −inf when none does (some p_i > s).

    Raises:
      ValueError: priors or max_success outside [0, 1] or NaN.

    Examples:
      >>> round(epsilon_for_success(0.1, 0.5), 6)   # logit(0.5) − logit(0.1) = log 9
      2.197225
    """
    p = as_vector("priors", priors)
    check_probability("priors", p)
    s = as_scalar("max_success", max_success)
    check_probability("max_success", s)
    if is_traced(p, s):
        return _epsilon_for_success_core(jnp.asarray(p), s)
    if p.size == 0:
        raise ValueError("priors must hold at least one target")
    with jax.enable_x64(True):
        return float(_epsilon_for_success_core(jnp.asarray(p), jnp.float64(s)))


@partial(jax.jit, static_argnames="method")
def _epsilon_for_count_core(priors, max_count, gamma=0.05, delta=0.0, n=None,
                           method: str = "auto") -> jax.Array:
    """Largest ε with v_γ(ε) ≤ V by bisection on ε ∈ [0, EPSILON_MAX] (no validation; ``n`` is
    the number of targets when priors are padded with zeros, default their length)."""
    priors = jnp.asarray(priors)
    n = priors.shape[0] if n is None else n
    as_float = lambda a: jnp.asarray(a, jnp.result_type(a, float))  # noqa: E731
    return _count_root(method, priors, jnp.asarray(max_count, priors.dtype), as_float(gamma),
                       as_float(delta), as_float(n))


def _log_budget(priors, gamma, delta, n):
    """log(γ − n·δ) less the count bounds' safety margins (the bisection's target)."""
    budget = gamma - n * delta
    return (jnp.log(jnp.maximum(budget, jnp.finfo(priors.dtype).tiny)) - INVERSE_LOG_MARGIN
            - _rounding_margin(priors.dtype, priors.shape[0]))


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _count_root(method, priors, count, gamma, delta, n):
    """The bisection (primal; rounded down: the last ε that passed). Its derivative is set by
    the implicit function theorem in :func:`_count_root_jvp`."""
    budget = gamma - n * delta
    log_budget = _log_budget(priors, gamma, delta, n)

    def protects(eps):
        tail = _logsf_core(_posterior_success(priors, eps), count, method=method)
        return (budget > 0) & (tail <= log_budget)

    def bisect(_, bracket):  # invariant: protects(lo), not protects(hi)
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = protects(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    zero = jnp.zeros((), priors.dtype)
    lo, _ = jax.lax.fori_loop(0, _STEPS, bisect, (zero, zero + EPSILON_MAX))
    return jnp.where(protects(zero + EPSILON_MAX), jnp.inf,
                     jnp.where(protects(zero), lo, -jnp.inf))


@_count_root.defjvp
def _count_root_jvp(method, primals, tangents):
    """dε* = −(∂F/∂p·dp + ∂F/∂γ·dγ + ∂F/∂δ·dδ)/(∂F/∂ε) at the root ε* of
    F(p, γ, δ, ε) = log Pr[PoiBin(β(ε, p)) ≥ V] − log(γ − n·δ) (the margins are constants);
    0 where ε* is ±inf or F is flat in ε. V and n are integers: no tangent."""
    priors, count, gamma, delta, n = primals
    dp, _, dgamma, ddelta, _ = (jnp.zeros(jnp.shape(x), jnp.result_type(x, float))
                                if t.dtype == jax.dtypes.float0 else t
                                for t, x in zip(tangents, primals, strict=True))
    eps = _count_root(method, *primals)
    finite = jnp.isfinite(eps)
    at = jnp.where(finite, eps, 0.0)

    def excess(p, g, d, e):
        tail = _logsf_core(_posterior_success(p, e), count, method=method)
        return tail - _log_budget(p, g, d, n)

    _, num = jax.jvp(excess, (priors, gamma, delta, at),
                     (dp, dgamma, ddelta, jnp.zeros_like(at)))
    _, slope = jax.jvp(lambda e: excess(priors, gamma, delta, e), (at,), (jnp.ones_like(at),))
    ok = finite & (slope != 0) & jnp.isfinite(slope)
    return eps, jnp.where(ok, -num / jnp.where(ok, slope, 1.0), 0.0).astype(eps.dtype)


@overload
def epsilon_for_count(priors: Concrete, max_count: int, *, gamma: float = ...,
                      delta: float = ..., method: str = ...) -> float: ...
@overload
def epsilon_for_count(priors: ArrayLike | Sequence[float], max_count: ArrayLike, *,
                      gamma: ArrayLike = ..., delta: ArrayLike = ..., method: str = ...
                      ) -> float | jax.Array: ...
def epsilon_for_count(priors: ArrayLike | Sequence[float], max_count: ArrayLike, *,
                      gamma: ArrayLike = 0.05, delta: ArrayLike = 0.0, method: str = "auto"
                      ) -> float | jax.Array:
    """Largest ε with v_γ ≤ V: Pr[PoiBin(β(ε, p)) ≥ V] + n·δ ≤ γ, by bisection on ε.

    v_γ(ε) (:func:`~jaxaudit.bounds.success_count_bound`) is non-decreasing in ε, and v_γ ≤ V
    holds iff the tail bound at V is ≤ γ (with the count bounds' safety margin, so that the
    returned ε gives ``success_count_bound(priors, ε, delta, gamma) <= max_count``). 64 steps on
    [0, 800] (to ≈ 1e−16); the result is the last ε that passed (rounded down). Inside the
    caller's ``jit``/``vmap`` in float32 the tail is compared with a further margin of 16·n ulp,
    so the result stays below the exact answer there too (≈ 1e−4 relative lower at n = 100).

    Under ``jax.grad``/``jvp`` the derivative is that of the exact root ε* of
    T(p, γ, δ, ε) = Pr[PoiBin(β(ε, p)) ≥ V] = γ − n·δ, by the implicit function theorem:
    ∂ε*/∂p_i = −(∂T/∂p_i)/(∂T/∂ε) (likewise for γ and δ); the bisection's rounding down stays
    in the value. The count V is an integer, so v_γ itself is a step function of ε and p; what
    is differentiated is the boundary ε*(p) of the region {v_γ ≤ V} at fixed V: a smooth
    function of the prior, γ and δ (V has no derivative). The derivative is 0 where ε* is ±inf.

    Args:
      priors: (n,) baseline success probabilities p_i ∈ [0, 1].
      max_count: V, an integer count in 0..n + 1 (v_γ ≤ V: with probability ≥ 1 − γ fewer than
        V targets are attacked successfully).
      gamma: level γ ∈ (0, 1).
      delta: δ ∈ [0, 1) of (ε, δ)-DP.
      method: Poisson-binomial engine (``"auto"``, ``"recursion"``, ``"fft"``).

    Returns:
      ε as a Python float (a JAX scalar inside ``jit``/``vmap``); +inf when every ε protects,
      −inf when none does.

    Raises:
      ValueError: bad priors, max_count not an integer ≥ 0, γ outside (0, 1), δ outside [0, 1).

    Examples:
      >>> eps = epsilon_for_count([0.5] * 1000, 755)   # v_γ(1) = 755 for this prior
      >>> from jaxaudit.bounds import success_count_bound
      >>> success_count_bound([0.5] * 1000, eps) <= 755 < success_count_bound([0.5] * 1000, eps + 1e-3)
      True
    """
    p = as_vector("priors", priors)
    check_probability("priors", p)
    gamma, delta = as_scalar("gamma", gamma), as_scalar("delta", delta)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    check_probability("delta", delta, open_high=True)
    check_choice("method", method, _METHODS)
    if is_traced(p, max_count, gamma, delta):
        return _epsilon_for_count_core(jnp.asarray(p), max_count, gamma, delta, method=method)
    count = check_integer("max_count", max_count)
    if p.size == 0:
        raise ValueError("priors must hold at least one target")
    return float(_x64(_epsilon_for_count_core, p, float(count), gamma, delta, n=np.float64(p.size),
                      method=method))
