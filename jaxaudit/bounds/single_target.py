"""The tightest valid single-target success under f-DP: the least of three valid routes.

One target with baseline success p (the prior mass of the guess's success set) is attacked
once. Three upper bounds on the probability that the attack succeeds hold under an f-DP
mechanism (replace-one neighbours), and none is below the others everywhere:

* **posterior** (Swanberg et al., arXiv:2507.08158): f-DP implies (ε, δ_f(ε))-DP for every ε,
  and under (ε, δ)-DP the success is at most β(ε, p) + δ with β = sigmoid(ε + logit p), so
  success ≤ inf_ε {β(ε, p) + δ_f(ε)}. The infimum is taken over ε continuously (μ-GDP: a
  24-point bracket then 48 golden-section steps; a sampled profile: every grid point), never on
  a grid that can stop before the optimum.
* **kgk_plus** (Kulynych, Gomez, Kaissis et al., arXiv:2507.06969; riskcal): success ≤ 1 − f(p),
  the largest TPR at FPR p.
* **fixed_point**, for an exact-match guess of a discrete secret (one attempt; p the largest
  prior mass, e.g. 1/K for a uniform prior over K values): the success a satisfies
  a ≤ 1 − f(r(1 − a)) with r = p/(1 − p), so a is at most the root of a = 1 − f(r(1 − a));
  for a uniform prior, a = 1 − f((1 − a)/(K − 1)). Derivation (ours, docs/bounds.md): with π
  the prior, P_x the output law for secret x and A_x the outputs on which the guess is x,
  a = Σ_x π(x) P_x(A_x). f-DP for the pair (P_y, P_x) and the test "reject on A_x" gives
  P_x(A_x) ≤ g(P_y(A_x)) with g = 1 − f increasing and concave, so P_x(A_x) ≤ g(t_x) for any
  average t_x = Σ_{y≠x} w_xy P_y(A_x); with w_xy = π(y)/(1 − π(x)) and Jensen over x,
  a ≤ g(Σ_y π(y) Σ_{x≠y} π(x)/(1 − π(x)) P_y(A_x)) ≤ g(r(1 − a)), since the A_x partition
  the outputs (Σ_{x≠y} P_y(A_x) = 1 − P_y(A_y)) and π(x)/(1 − π(x)) ≤ r. For a uniform prior,
  K-ary randomized response that keeps the secret with probability a and otherwise reports one
  of the K − 1 others uniformly attains the root: its trade-off is piecewise linear with kinks
  at ((1 − a)/(K − 1), 1 − a) and (1 − a, (1 − a)/(K − 1)), both on f when a is the root (f is
  symmetric), so it is f-DP and succeeds with probability a. Under ε-DP the root is
  sigmoid(ε + logit p) = β(ε, p); under μ-GDP at K = 2 it is Φ(μ/2). It is never above
  1 − f(p) (at a ≥ p, r(1 − a) ≤ p).

The result names the route that gave the least number. Ties go to the earlier route in
:data:`ROUTES`.

Numerics: under μ-GDP everything is closed form in Φ, Φ⁻¹ and log Φ (exact in the tails); the
fixed point is solved in z = Φ⁻¹(r(1 − a)), where it reads Φ(z) = r Φ(−z − μ), by Newton's
method on a log-space difference, returned at a point checked to lie at or above the root.
A sampled profile uses :func:`jaxaudit.bounds.tradeoff.profile_tpr`; its fixed point is a
64-step bisection on a, upper end returned. All cores are ``jax.numpy``: they jit, vmap and
differentiate (the bisections are fixed-length loops).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr, ndtr, ndtri

from jaxaudit.bounds._numerics import safe_logit
from jaxaudit.bounds.tradeoff import profile_tpr

__all__ = ["ROUTES", "SingleTargetBound", "gdp_routes", "profile_routes"]

#: The routes of :class:`SingleTargetBound`, in the order ``route`` indexes them.
ROUTES = ("posterior", "kgk_plus", "fixed_point")

_GOLDEN = 0.6180339887498949
_BISECTION_STEPS = 64
#: Newton steps of the posterior route under μ-GDP (5 leave 1e−8 relative, 6 rounding).
NEWTON_STEPS = 6
#: Newton steps of the fixed point under μ-GDP (converged to rounding by 4; checked after).
FIXED_POINT_STEPS = 4


class SingleTargetBound(NamedTuple):
    """Upper bounds on one target's attack success (all fields are BOUNDS; none is an estimate).

    Attributes:
      bound: the least of the three routes: the library's single-target number.
      route: int32 index into :data:`ROUTES` of the route that gave ``bound``.
      posterior: inf_ε β(ε, p) + δ_f(ε).
      epsilon: the ε at which ``posterior`` was attained.
      kgk_plus: 1 − f(p).
      fixed_point: the root of a = 1 − f(r(1 − a)), r = p/(1 − p), for an exact-match guess
        (1, the trivial bound, when the guess is not exact-match).
    """

    bound: jax.Array
    route: jax.Array
    posterior: jax.Array
    epsilon: jax.Array
    kgk_plus: jax.Array
    fixed_point: jax.Array


def _beta(p, eps):
    return jnp.where(p <= 0, 0.0, jax.nn.sigmoid(eps + safe_logit(p)))


def _combine(posterior, eps, kgk, fixed):
    stacked = jnp.stack(jnp.broadcast_arrays(posterior, kgk, fixed))
    route = jnp.argmin(stacked, axis=0).astype(jnp.int32)
    return SingleTargetBound(jnp.min(stacked, axis=0), route, posterior, eps, kgk, fixed)


# --------------------------------------------------------------------------------------------
# μ-GDP: closed forms
# --------------------------------------------------------------------------------------------


def _gdp_posterior(p, mu, z_p):
    """inf_ε β(ε, p) + δ_μ(ε) by Newton's method on the stationarity condition, safeguarded.

    d/dε [β + δ_μ] = β(1 − β) − e^ε Φ(b) with b = −ε/μ − μ/2, which vanishes where
    G(ε) = log(p(1 − p)) − 2 log(1 + (e^ε − 1)p) − log Φ(b) = 0, G'(ε) = −2β + φ(b)/(μ Φ(b)).
    Start: ε₀ = max(0, −μ(Φ⁻¹(p) + μ/2)), the optimum of e^ε p + δ_μ(ε) (the KGK+ envelope,
    which β ≤ e^ε p undercuts). Every iterate is clipped to [0, ε_hi]; the objective is
    evaluated at 0 and at the last iterate, and the lesser value is returned: any ε gives a valid bound, Newton only
    decides how tight it is (:data:`NEWTON_STEPS`)."""
    p_s = jnp.clip(p, 1e-300, 1.0 - 1e-16)
    log_p, log_q = jnp.log(p_s), jnp.log1p(-p_s)
    logit_p = log_p - log_q
    # ≥ μ²/2 − μ Φ⁻¹(min(p, 1/2)/1000) + 1: Φ⁻¹(x/1000) ≥ Φ⁻¹(x) − 3.3 for x ≤ 1/2
    eps_hi = mu * mu / 2.0 - mu * (jnp.minimum(z_p, 0.0) - 3.3) + 1.0
    half_log_2pi = 0.5 * jnp.log(2.0 * jnp.pi)

    def step(e):
        # log(1 + (e^ε − 1)p) = ε + log p − log β, so G = log q − log p − 2ε + 2 log β − log Φ(b)
        b = -e / mu - mu / 2.0
        lb = log_ndtr(b)
        log_beta = jax.nn.log_sigmoid(e + logit_p)
        g = log_q - log_p - 2.0 * e + 2.0 * log_beta - lb
        mills = jnp.exp(-0.5 * b * b - half_log_2pi - lb)
        slope = -2.0 * jnp.exp(log_beta) + mills / mu
        move = jnp.where(slope > 0, -g / jnp.where(slope > 0, slope, 1.0), jnp.sign(-g))
        return jnp.clip(e + move, 0.0, eps_hi)

    e = jnp.clip(-mu * (z_p + mu / 2.0), 0.0, eps_hi)
    for _ in range(NEWTON_STEPS):  # unrolled: XLA fuses the steps
        e = step(e)
    lb = log_ndtr(-e / mu - mu / 2.0)
    la = log_ndtr(-e / mu + mu / 2.0)
    delta = jnp.exp(la) * -jnp.expm1(jnp.minimum(e + lb - la, 0.0))
    value = jnp.minimum(1.0, _beta(p, e) + delta)
    # ε = 0: β = p and δ_μ(0) = Φ(μ/2) − Φ(−μ/2) = 1 − 2Φ(−μ/2)
    at_zero = jnp.minimum(1.0, p + 1.0 - 2.0 * ndtr(-mu / 2.0))
    better = value < at_zero
    return jnp.where(better, value, at_zero), jnp.where(better, e, 0.0)


def _gdp_fixed_point(p, mu, z_p):
    """Root a of a = Φ(Φ⁻¹(r(1 − a)) + μ) with r = p/(1 − p), solved in z = Φ⁻¹(r(1 − a)):
    h(z) = log Φ(−z − μ) + log r − log Φ(z) = 0, decreasing in z, with
    h'(z) = −λ(−z − μ) − λ(z), λ = φ/Φ (the inverse Mills ratio). Newton's method from
    z₀ = min(−μ/2, Φ⁻¹(p)) for p ≤ 1/2, else Φ⁻¹(p) (h(z₀) ≤ 0: z₀ is at or above the root),
    :data:`FIXED_POINT_STEPS` steps (converged to rounding by 4 for μ ≤ 6, K ≤ 10^8); the returned
    a = Φ(z + μ) is taken at a z with h(z) ≤ 0 (at or above the root, so a is at or above the
    fixed point): the last iterate moved up by its last step and a relative 1e−12, or z₀ if
    that point fails the check. p = 0 gives 0 (no success set), p = 1 gives 1."""
    p_s = jnp.clip(p, 1e-300, 1.0 - 1e-16)
    log_r = jnp.log(p_s) - jnp.log1p(-p_s)
    half_log_2pi = 0.5 * jnp.log(2.0 * jnp.pi)

    def h_and_slope(z):
        l1, l2 = log_ndtr(-z - mu), log_ndtr(z)
        mills1 = jnp.exp(-0.5 * (z + mu) ** 2 - half_log_2pi - l1)
        mills2 = jnp.exp(-0.5 * z * z - half_log_2pi - l2)
        return l1 + log_r - l2, -mills1 - mills2

    z0 = jnp.where(p_s <= 0.5, jnp.minimum(-mu / 2.0, z_p), z_p)

    def step(_, state):
        z, _ = state
        h, slope = h_and_slope(z)
        dz = -h / slope
        return z + dz, jnp.abs(dz)

    z, last = jax.lax.fori_loop(0, FIXED_POINT_STEPS, step, (z0, jnp.zeros_like(z0)))
    z_up = z + last + 1e-12 * (1.0 + jnp.abs(z))
    h_up, _ = h_and_slope(z_up)
    z_safe = jnp.where((h_up <= 0) & jnp.isfinite(z_up), z_up, z0)
    a = ndtr(z_safe + mu)
    return jnp.where(p <= 0, 0.0, jnp.where(p >= 1, 1.0, a))


def gdp_routes(p, mu, exact_match=False) -> SingleTargetBound:
    """The three routes under μ-GDP (jnp, no validation; p and μ broadcast; ``exact_match``
    static: the fixed-point route applies)."""
    p, mu = jnp.broadcast_arrays(*[jnp.asarray(x, jnp.result_type(p, mu, float)) for x in (p, mu)])
    z_p = ndtri(jnp.clip(p, 1e-300, 1.0 - 1e-16))  # Φ⁻¹(p), shared by the three routes
    posterior, eps = _gdp_posterior(p, mu, z_p)
    kgk = jnp.where(p <= 0, 0.0, jnp.where(p >= 1, 1.0, ndtr(z_p + mu)))  # 1 − f(p) = Φ(Φ⁻¹(p) + μ)
    fixed = _gdp_fixed_point(p, mu, z_p) if exact_match else jnp.ones_like(p)
    return _combine(posterior, eps, kgk, fixed)


# --------------------------------------------------------------------------------------------
# A sampled privacy profile (PLD, RDP, (ε, δ)-DP)
# --------------------------------------------------------------------------------------------


def _profile_fixed_point(p, epsilons, deltas):
    """Root of a = g(r(1 − a)), g = 1 − f of the sampled curve, r = p/(1 − p): 64 bisection
    steps on a ∈ [p, g(p)] (a ≥ p: the prior alone succeeds with p; a ≤ g(p): at a ≥ p,
    r(1 − a) ≤ p), the upper end returned."""
    g = lambda x: profile_tpr(x, epsilons, deltas)  # noqa: E731
    r = p / jnp.maximum(1.0 - p, 1e-300)

    def step(_, bracket):  # invariant: a ≤ g(r(1 − a)) at lo, not at hi
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = mid <= g(r * (1.0 - mid))
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    hi0 = jnp.minimum(g(p) * (1.0 + 1e-12), 1.0)
    _, hi = jax.lax.fori_loop(0, _BISECTION_STEPS, step, (p, hi0))
    return jnp.where(p >= 1, 1.0, hi)


def profile_routes(p, epsilons, deltas, exact_match=False) -> SingleTargetBound:
    """The three routes for a profile sampled at (ε_j, δ_j) (jnp, no validation): the posterior
    route is the minimum over the grid points (the profile is only known there)."""
    p = jnp.asarray(p, jnp.result_type(p, float))
    e, d = jnp.asarray(epsilons, p.dtype), jnp.asarray(deltas, p.dtype)
    values = jnp.minimum(1.0, _beta(p[..., None], e) + d)
    j = jnp.argmin(values, axis=-1)
    posterior, eps = jnp.min(values, axis=-1), e[j]
    kgk = profile_tpr(p, e, d)
    fixed = _profile_fixed_point(p, e, d) if exact_match else jnp.ones_like(p)
    return _combine(posterior, eps, kgk, fixed)
