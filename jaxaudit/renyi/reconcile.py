"""Reconcile a point estimate of ε_α with the valid lower bounds of the same audit.

For each order α the audit has a point estimate ε̂_α (the Donsker–Varadhan held-out value,
Kim, Alabi & Varshney, arXiv 2605.21938, Sec. 4) and lower confidence bounds L_α^(1), …,
L_α^(k) (the DV bound itself, the threshold-test bound of a Clopper–Pearson test, and the
trivial bound 0, since ε_α = D_α(P‖Q) ≥ 0). Each bound holds with probability ≥ 1 − s. When

    ε̂_α < L_α := max_j L_α^(j),

the estimate is, at the bound's confidence level, too low: ε_α ≥ L_α > ε̂_α. This happens in
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
from jax.typing import ArrayLike

from jaxaudit._validation import check_numeric, is_traced

__all__ = ["ReconciledEstimate", "reconcile_estimate"]


class ReconciledEstimate(NamedTuple):
    """A point estimate raised to the best valid lower bound.

    Attributes:
      estimate: max(point, best lower bound), shape of ``point``.
      raised: True where the bound exceeded the point estimate (the estimate was raised).
      bound: the best lower bound per order (max over the bounds given).
    """

    estimate: jax.Array
    raised: jax.Array
    bound: jax.Array


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
      :class:`ReconciledEstimate` (estimate, raised, bound) of ``point``'s shape.

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
