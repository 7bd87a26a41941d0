"""Reconcile a point estimate of ε_α with the valid lower bounds of the same audit.

For each order α the audit has a point estimate ε̂_α (the Donsker–Varadhan held-out value,
Kim, Alabi & Varshney, arXiv 2605.21938, Sec. 4) and lower confidence bounds L_α^(1), …,
L_α^(k) (the DV bound itself, the threshold-test bound of a Clopper–Pearson test, and the
trivial bound 0, since ε_α = D_α(P‖Q) ≥ 0). Each bound holds with probability ≥ 1 − s. When

    ε̂_α < L_α := max_j L_α^(j),

the estimate is, at the bound's confidence, too low: ε_α ≥ L_α > ε̂_α. This happens in
practice because the DV estimate is the value of a *variational* objective at a learned critic,

    ε̂_α = J_α(ĝ) = α/(α−1) · log Ê_P[e^{(α−1)ĝ}] − log Ê_Q[e^{αĝ}],   E[J_α(ĝ)] ≲ D_α(P‖Q)

(Birrell et al., arXiv 2007.03814: every fixed g gives J_α(g) ≤ D_α), so a critic that has not found the optimum (few runs, an overlapping score distribution) gives
an estimate biased *downward*, while its standard error measures only the sampling spread of the
held-out average given that critic, not this bias. The reconciled estimate is

    ε̃_α = max(ε̂_α, L_α),      raised_α = [L_α > ε̂_α],

i.e. the estimate is raised to the best valid lower bound and flagged. ε̃_α is still an
estimate, not a bound; the flag tells the reader that the DV estimate alone would have
understated ε_α and that its standard error does not describe ε̃_α. Raising can only move the
estimate towards the truth when the bound holds (probability ≥ 1 − s); never below it.

Only bounds that hold without a model assumption belong in ``lower_bounds``: the GDP baseline's
α μ²/2 assumes a Gaussian privacy profile (Nasr et al., USENIX Security 2023) and is left out by
:func:`jaxaudit.pipelines.rdp.audit_rows`. Our choice of the rule and its reading are in docs/opacus.md.

The core is pure ``jnp``: it works inside ``jax.jit``, ``jax.vmap`` and ``jax.grad`` (the
gradient of ε̃ flows to whichever of estimate or bound is larger).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_broadcast,
    check_finite,
    check_nonnegative_finite,
    check_numeric,
    check_probability,
    is_traced,
)
from jaxaudit.stats.gdp import gdp_delta_core
from jaxaudit.stats.numerics import bisect, float_arrays

__all__ = [
    "ReconciledEstimate",
    "dp_to_rdp_gaussian",
    "dp_to_rdp_lower_bound",
    "gdp_mu_for_epsilon",
    "reconcile_estimate",
]


class ReconciledEstimate(NamedTuple):
    """A point estimate raised to the best valid lower bound.

    Attributes:
      estimate: max(point, best lower bound), shape of ``point``.
      raised: True where the bound exceeded the point estimate (the estimate was raised).
      lower_bound: the best lower bound per order (max over the bounds given).
    """

    estimate: jax.Array
    raised: jax.Array
    lower_bound: jax.Array


def _reconcile_core(point: jax.Array, lower_bounds: jax.Array) -> ReconciledEstimate:
    """ε̃ = max(ε̂, max_j L^(j)); raised = max_j L^(j) > ε̂ (traceable)."""
    bound = jnp.max(lower_bounds, axis=0)
    raised = bound > point
    return ReconciledEstimate(jnp.where(raised, bound, point), raised, bound)


def reconcile_estimate(point: ArrayLike, lower_bounds: ArrayLike) -> ReconciledEstimate:
    """Raise point estimates of ε_α to the best valid lower bound of the same order.

    ε̃_α = max(ε̂_α, max_j L_α^(j)) and raised_α = [max_j L_α^(j) > ε̂_α] (module docstring).

    Args:
      point: point estimates ε̂, a scalar or shape (k,) (one per order); −inf stands for "no
        estimate" (it is raised to the bound).
      lower_bounds: valid lower bounds, shape ``point.shape`` (one bound per order) or
        ``(m, *point.shape)`` (m bounds per order; the largest is used). −inf stands for "no
        bound"; NaN is refused.

    Returns:
      :class:`ReconciledEstimate` (estimate, raised, lower_bound) of ``point``'s shape.

    Raises:
      ValueError: NaN in either argument, or shapes that do not match.

    Example:
      >>> import jax.numpy as jnp
      >>> r = reconcile_estimate(jnp.array([0.535, 0.637, 2.0]),
      ...                        jnp.array([[0.942, 1.352, 1.0], [0.1, 0.2, 0.3]]))
      >>> [round(float(x), 3) for x in r.estimate], [bool(x) for x in r.raised]
      ([0.942, 1.352, 2.0], [True, True, False])

    References:
      Kim, Alabi & Varshney, arXiv 2605.21938 (the DV estimator and its lower bounds).
    """
    if not is_traced(point, lower_bounds):
        p = check_numeric("point", point)
        low = check_numeric("lower_bounds", lower_bounds)
        if np.isnan(p).any():
            raise ValueError(f"point must not contain NaN (use -inf for 'no estimate'), got "
                             f"{p.tolist()}")
        if np.isnan(low).any():
            raise ValueError("lower_bounds must not contain NaN (use -inf for 'no bound')")
        if low.shape != p.shape and low.shape[1:] != p.shape:
            raise ValueError(f"lower_bounds must have shape {p.shape} or (m, *{p.shape}), got "
                             f"{low.shape}")
    point = jnp.asarray(point)
    lower_bounds = jnp.asarray(lower_bounds, point.dtype if jnp.issubdtype(
        point.dtype, jnp.floating) else None)
    if lower_bounds.ndim == point.ndim:
        lower_bounds = lower_bounds[None]
    return _reconcile_core(point, lower_bounds)


# ---------------------------------------------------------------------------------------------
# (ε, δ) → RDP: the two conversions of a score-based ε lower bound (docs/renyi.md, "[31] in RDP
# units, two ways").
# ---------------------------------------------------------------------------------------------


@jax.custom_jvp
def _gdp_mu_for_epsilon_core(epsilon: jax.Array, delta: jax.Array) -> jax.Array:
    """The μ with δ_μ(ε) = δ (the GDP parameter whose (ε, δ) curve passes through (ε, δ)).
    Unvalidated, traceable; 0 < δ < 1/2.

    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) increases in μ from 0 (μ → 0) to 1 (μ → ∞).
    Bracket: at μ_hi² = 8(ε − log(1 − 2δ)) (≥ 2ε), Φ(−ε/μ + μ/2) ≥ 1/2 and e^ε Φ(−ε/μ − μ/2) ≤
    e^ε Φ(−μ/2) ≤ e^{ε − μ²/8}/2 = (1 − 2δ)/2, so δ_μ_hi(ε) ≥ δ. The lower end of the final
    bracket is returned (δ_μ(ε) < δ there): never above the exact μ, up to the rounding of δ_μ.
    """
    hi = jnp.sqrt(8.0 * (epsilon - jnp.log1p(-2.0 * delta)))
    lo, _ = bisect(lambda mu: gdp_delta_core(epsilon, mu) >= delta, jnp.zeros_like(hi), hi)
    return lo


@_gdp_mu_for_epsilon_core.defjvp
def _gdp_mu_for_epsilon_jvp(primals: tuple, tangents: tuple) -> tuple[jax.Array, jax.Array]:
    """dμ = (dδ + e^ε Φ(b) dε) / φ(a), a = −ε/μ + μ/2, b = a − μ (implicit function theorem on
    δ_μ(ε) = δ: ∂δ_μ/∂ε = −e^ε Φ(b), ∂δ_μ/∂μ = φ(a)); zero where μ = 0."""
    epsilon, delta = primals
    d_eps, d_delta = tangents
    mu = _gdp_mu_for_epsilon_core(epsilon, delta)
    interior = mu > 0
    mu_s = jnp.where(interior, mu, jnp.ones_like(mu))
    a = -epsilon / mu_s + mu_s / 2.0
    d_mu = (d_delta + jnp.exp(epsilon + norm.logcdf(a - mu_s)) * d_eps) / jnp.exp(norm.logpdf(a))
    return mu, jnp.where(interior, d_mu, jnp.zeros_like(d_mu))


_gdp_mu_for_epsilon_jit = jax.jit(_gdp_mu_for_epsilon_core)


def _check_gdp_inputs(epsilon: ArrayLike, delta: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    eps = check_nonnegative_finite("epsilon", epsilon)
    dlt = check_probability("delta", delta, open_low=True)
    if (dlt >= 0.5).any():
        raise ValueError(f"delta must lie in (0, 1/2), got {dlt.tolist()}")
    check_broadcast(epsilon=epsilon, delta=delta)
    return eps, dlt


def _check_order(order: ArrayLike) -> np.ndarray:
    arr = check_finite("order", order)
    if (arr <= 1).any():
        raise ValueError(f"order must be > 1 (a finite Rényi order), got {arr.tolist()}")
    return arr


def _check_rdp_inputs(epsilon: ArrayLike, delta: ArrayLike, order: ArrayLike
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ε, δ and α of the (ε, δ) → RDP conversions, checked and broadcast-compatible."""
    eps, dlt = _check_gdp_inputs(epsilon, delta)
    alpha = _check_order(order)
    check_broadcast(epsilon=epsilon, delta=delta, order=order)
    return eps, dlt, alpha


def gdp_mu_for_epsilon(epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray | jax.Array:
    """μ such that μ-GDP's (ε, δ) curve passes through (ε, δ): the inverse in μ of
    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su, arXiv 1905.02383, Cor. 2.13).

    The inverse of :func:`jaxaudit.renyi.gdp_epsilon` in its other argument: gdp_epsilon(μ, δ)
    = ε. Bisection (128 steps, float64 for concrete input) on a proven bracket; the lower end
    is returned (never above the exact μ).

    Args:
      epsilon: ε ≥ 0, finite.
      delta: DP's δ ∈ (0, 1/2) (broadcasts with ``epsilon``).

    Returns:
      Concrete inputs: a float64 numpy array; traced: a jax array in the inputs' dtype.

    Examples:
      >>> round(float(gdp_mu_for_epsilon(10.0, 1e-5)), 4)   # ε = 10 at δ = 1e−5 is μ ≈ 2.0004
      2.0004
    """
    if is_traced(epsilon, delta):
        return _gdp_mu_for_epsilon_core(*float_arrays(epsilon, delta))
    eps, dlt = _check_gdp_inputs(epsilon, delta)
    with jax.enable_x64(True):
        return np.asarray(_gdp_mu_for_epsilon_jit(jnp.asarray(eps, jnp.float64),
                                                  jnp.asarray(dlt, jnp.float64)))


def _dp_to_rdp_gaussian_core(epsilon: jax.Array, delta: jax.Array, order: jax.Array) -> jax.Array:
    """α μ(ε, δ)²/2 (see :func:`dp_to_rdp_gaussian`). Unvalidated, traceable."""
    mu = _gdp_mu_for_epsilon_core(epsilon, delta)
    return order * mu * mu / 2.0


def dp_to_rdp_gaussian(epsilon: ArrayLike, delta: ArrayLike, order: ArrayLike
                       ) -> np.ndarray | jax.Array:
    """Kim, Alabi & Varshney's conversion of an (ε, δ) value to RDP units: ε_α = α μ²/2 with μ
    solving δ_μ(ε) = δ.

    The authors' code (GitHub bkim34/RDP_audit, ``convert_empirical_dp_to_rdp``) applies it to
    each audit's ε_emp of [31] (Annamalai & De Cristofaro, arXiv 2405.14106; δ = 1e−5) and
    reports the *mean over audits* as "[31]" at order α; the same map of the accountant's ε is
    their "theory" column. Since [31]'s ε_emp is itself ε_{μ_lo}(δ) of a Clopper–Pearson μ lower
    bound, this returns α μ_lo²/2 of that audit (the round trip ε → μ is exact).

    What it assumes: the mechanism's trade-off function is exactly Gaussian, G_μ* (true for the
    Gaussian mechanism and full-batch DP-GD). Then ε_α = α μ*²/2 (Rényi divergences depend on
    the pair only through its trade-off curve), μ(·, δ) is increasing, and an ε lower bound
    ε_lo ≤ ε_μ*(δ) gives α μ(ε_lo, δ)²/2 ≤ ε_α: a valid lower bound. Without that assumption it
    is **not** a lower bound on ε_α: a pair whose privacy loss is ε-ish on a tiny mass has the
    same ε(δ) as μ-GDP but a far smaller ε_α (docs/renyi.md has a two-point example with
    ε(1e−5) = 10 and ε_2 ≈ 1.2, where this conversion says 4.0). Use
    :func:`dp_to_rdp_lower_bound` for the assumption-free (and, at audit δ, weak) bound.

    Args:
      epsilon: ε ≥ 0 (finite).
      delta: δ ∈ (0, 1/2).
      order: Rényi order(s) α > 1, finite (broadcasts).

    Returns:
      α μ(ε, δ)²/2; concrete inputs: float64 numpy array; traced: jax array.

    Examples:
      >>> round(float(dp_to_rdp_gaussian(10.0, 1e-5, 2.0)), 3)   # the paper's theory at ε = 10
      4.002
    """
    if is_traced(epsilon, delta, order):
        return _dp_to_rdp_gaussian_core(*float_arrays(epsilon, delta, order))
    eps, dlt, alpha = _check_rdp_inputs(epsilon, delta, order)
    with jax.enable_x64(True):
        return np.asarray(jax.jit(_dp_to_rdp_gaussian_core)(
            jnp.asarray(eps, jnp.float64), jnp.asarray(dlt, jnp.float64),
            jnp.asarray(alpha, jnp.float64)))


def _dp_to_rdp_lower_bound_core(epsilon: jax.Array, delta: jax.Array, order: jax.Array
                               ) -> jax.Array:
    """max(0, ε − [log(1/δ) + (α−1) log(α−1) − α log α]/(α−1)). Unvalidated, traceable."""
    alpha = order
    shift = (-jnp.log(delta) + (alpha - 1.0) * jnp.log(alpha - 1.0) - alpha * jnp.log(alpha)) / (
        alpha - 1.0)
    return jnp.maximum(epsilon - shift, 0.0)


def dp_to_rdp_lower_bound(epsilon: ArrayLike, delta: ArrayLike, order: ArrayLike
                          ) -> np.ndarray | jax.Array:
    """An RDP lower bound implied by an (ε, δ) lower bound, for every mechanism.

    Canonne, Kamath & Steinke (arXiv 2004.00010, Proposition 12): (α, ε_α)-RDP implies (ε', δ)-DP
    with ε' = ε_α + [log(1/δ) + (α−1) log(α−1) − α log α]/(α−1). So if the mechanism is *not*
    (ε, δ)-DP for any ε below ε_lo (what a score-based ε lower bound says), then

        ε_α ≥ ε_lo − [log(1/δ) + (α−1) log(α−1) − α log α]/(α−1),

    clipped at 0. No model assumption, but at audit δ the shift is large (α = 2, δ = 1e−5:
    10.13), so it is vacuous below ε_lo ≈ 10 at α = 2.

    Args:
      epsilon: an ε lower bound ε_lo ≥ 0 at δ (finite).
      delta: δ ∈ (0, 1/2).
      order: Rényi order(s) α > 1, finite.

    Returns:
      The bound on ε_α; concrete inputs: float64 numpy array; traced: jax array.

    Examples:
      >>> round(float(dp_to_rdp_lower_bound(20.0, 1e-5, 2.0)), 3)
      9.873
    """
    if is_traced(epsilon, delta, order):
        return _dp_to_rdp_lower_bound_core(*float_arrays(epsilon, delta, order))
    eps, dlt, alpha = _check_rdp_inputs(epsilon, delta, order)
    with np.errstate(divide="ignore"):
        shift = (-np.log(dlt) + (alpha - 1.0) * np.log(alpha - 1.0) - alpha * np.log(alpha)) / (
            alpha - 1.0)
    return np.asarray(np.maximum(eps - shift, 0.0), dtype=np.float64)
