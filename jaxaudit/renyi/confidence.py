"""Finite-sample lower confidence bounds on D_α from a critic, in RDP units.

Held-out bound (default, valid for *any* critic fixed before the test split is seen). With
g ∈ [lo, hi] on the test split,

    A = E_Q[e^{(α−1)g}],  B = E_P[e^{αg}],  D_α(Q‖P) ≥ J_α(g) = α/(α−1) log A − log B,

and with probability ≥ 1 − β (β = 1 − confidence, the failure probability; β/2 per term,
one-sided) A ≥ A_lo and B ≤ B_hi, where the radii are Hoeffding's, range·sqrt(log(2/β)/(2n)),
or the empirical Bernstein bound of Maurer & Pontil
(Theorem 4), sqrt(2 V̂ log(4/β)/n) + 7 range log(4/β)/(3(n−1)). Hence
ε_α ≥ α/(α−1) log A_lo − log B_hi. Everything is computed after dividing by the largest possible
value (e^{(α−1)hi}, e^{α hi}), so the variables lie in [e^{−(α−1)(hi−lo)}, 1] and nothing
overflows. A_lo is never below the smallest possible value of A (a deterministic bound), so the
result is always finite (possibly very negative = vacuous), never NaN.

Class-restricted ("theory") radius, the shape of Kim–Alabi–Varshney Theorem 3.2: for |g| ≤ M
and Rademacher complexity R_n(G),

    |D̂ − D_G| ≤ α/(α−1) e^{(α−1)M} [2(α−1) e^{(α−1)M} R_{n_Q} + 2 sinh((α−1)M) sqrt(log(4/β)/(2n_Q))]
              + e^{αM} [2α e^{αM} R_{n_P} + 2 sinh(αM) sqrt(log(4/β)/(2n_P))],

with R_n bounded by the norm-based bound of Golowich, Rakhlin & Shamir (2018) for ReLU networks.
Its O(e^{2αM}/√n) rate is minimax-optimal up to logs (their Theorem 3.3) but the constants make it
vacuous unless αM is small and n large; the held-out bound is the practical default.

Sample sizes matter: with ~100 held-out samples per world every rigorous bound is vacuous; about
10^4 samples per world are needed for informative bounds at moderate ε_α.

References:
  Maurer, Pontil, "Empirical Bernstein Bounds and Sample Variance Penalization", COLT 2009.
  Hoeffding, "Probability inequalities for sums of bounded random variables", JASA 1963.
  Golowich, Rakhlin, Shamir, "Size-Independent Sample Complexity of Neural Networks", COLT 2018.
  Kim, Alabi, Varshney (2026), arXiv 2605.21938, Theorems 3.2–3.3.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxaudit._validation import (
    as_scalar,
    check_choice,
    check_finite,
    check_nonnegative,
    check_nonnegative_finite,
    check_positive,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit.stats.numerics import float_arrays
from jaxaudit.stats.radii import bernstein_failure_radius, hoeffding_failure_radius

__all__ = [
    "RADII",
    "held_out_lower_bound",
    "rademacher_bound",
    "theory_radius",
]

#: Names accepted by ``estimate_renyi(radius=...)``.
RADII = ("bernstein", "hoeffding", "theory")


def _one_sided_radius(values, value_range, delta, method, n=None):
    n = values.shape[0] if n is None else n
    if method == "hoeffding":
        return hoeffding_failure_radius(n, value_range, delta)
    return bernstein_failure_radius(jnp.var(values, ddof=1), n, value_range, delta)


def _failure(confidence):
    """The failure probability 1 − confidence (a concrete confidence checked in [0, 1))."""
    if confidence is None:
        raise ValueError("confidence is required (e.g. confidence=0.95)")
    if not is_traced(confidence):
        confidence = check_probability("confidence", confidence, open_high=True)
    return 1.0 - confidence


def _check_order(name, value):
    """A finite order α > 1 (concrete values only)."""
    arr = check_finite(name, value)
    if (arr <= 1).any():
        raise ValueError(f"{name} must be > 1, got {plain(arr[arr <= 1].ravel()[0])}")
    return arr


def _check_sample_size(name, value):
    arr = check_finite(name, value)
    if (arr <= 1).any():
        raise ValueError(f"{name} must be > 1, got {plain(arr[arr <= 1].ravel()[0])}")
    return arr


def held_out_lower_bound(g_q: ArrayLike, g_p: ArrayLike, order: ArrayLike, lo: ArrayLike,
                         hi: ArrayLike, radius: str = "bernstein", *,
                         confidence: ArrayLike | None = None, num_q: ArrayLike | None = None,
                         num_p: ArrayLike | None = None) -> jax.Array:
    """Lower confidence bound on D_α(Q‖P) from a fixed critic evaluated on held-out samples.

    ε_α ≥ α/(α−1) log A_lo − log B_hi (module docstring; Kim, Alabi, Varshney, arXiv
    2605.21938, with the radii of Hoeffding or Maurer & Pontil, arXiv 0907.3740). Validates
    concrete arguments, then calls the traceable core (jit/vmap/grad work; traced arguments are
    not checked). The value is the raw bound, possibly negative (vacuous); a divergence is ≥ 0,
    so max(value, 0) is equally valid (``estimate_renyi`` reports that).

    Args:
      g_q: 1-D critic values on held-out Q samples (at least 2; values outside [lo, hi] are
        clipped to it).
      g_p: 1-D critic values on held-out P samples (likewise).
      order: order α > 1 (finite scalar).
      lo: a lower bound of the critic fixed before the held-out data were seen.
      hi: the matching upper bound (hi ≥ lo).
      radius: the concentration radius, "bernstein" (Maurer–Pontil) or "hoeffding".
      confidence: coverage of this bound, in [0, 1); its failure probability β = 1 − confidence
        is split evenly between the two terms (β/2 each); required (keyword).
      num_q: sample size to use in the Q radius (default ``len(g_q)``; other values only for
        planning, e.g. predicting the held-out bound from training values); > 1.
      num_p: likewise for P.

    Returns:
      ε such that D_α(Q‖P) ≥ ε with probability ≥ ``confidence`` over the held-out samples, in
      the dtype of ``g_q``. Always finite: at worst the trivial −(2α−1)(hi − lo)·α/(α−1)-type value.

    Examples:
      >>> import jax.numpy as jnp
      >>> g = jnp.linspace(-1.0, 1.0, 2000)
      >>> bool(held_out_lower_bound(g, g - 0.5, 2.0, -1.5, 1.0, confidence=0.95) < 1.0)
      True
    """
    check_choice("radius", radius, ("bernstein", "hoeffding"))
    delta = _failure(confidence)  # the bound's failure probability β
    if not is_traced(g_q, g_p, order, lo, hi, delta, num_q, num_p):
        for name, g in (("g_q", g_q), ("g_p", g_p)):
            arr = check_finite(name, g)
            if arr.ndim != 1 or arr.size < 2:
                raise ValueError(f"{name} must be a 1-D array of at least 2 values, got shape "
                                 f"{arr.shape}")
        alpha_np = _check_order("order", order)
        if alpha_np.ndim != 0:
            raise ValueError(f"order must be a scalar (vmap for several orders), got shape "
                             f"{alpha_np.shape}")
        lo_np, hi_np = as_scalar("lo", check_finite("lo", lo)), as_scalar("hi", check_finite("hi", hi))
        if hi_np < lo_np:
            raise ValueError(f"hi must be >= lo, got hi={plain(hi_np)} < lo={plain(lo_np)}")
        as_scalar("confidence", confidence)
        for name, size in (("num_q", num_q), ("num_p", num_p)):
            if size is not None:
                _check_sample_size(name, size)
    g_q = jnp.asarray(g_q)
    g_q = jnp.asarray(g_q, jnp.result_type(g_q, float))
    g_p = jnp.asarray(g_p, g_q.dtype)
    return _held_out_lower_bound(g_q, g_p, order, lo, hi, delta, radius, num_q, num_p)


def _held_out_lower_bound(g_q, g_p, alpha, lo, hi, delta, method="bernstein", n_q=None,
                          n_p=None) -> jax.Array:
    """The held-out bound (see :func:`held_out_lower_bound`). Unvalidated, traceable."""
    alpha = jnp.asarray(alpha, g_q.dtype)
    width = jnp.asarray(hi - lo, g_q.dtype)
    delta_term = delta / 2.0
    # The radii assume values in [lo, hi]. Clipping is a fixed function of g, so the bound is a
    # valid bound on J_α(clip(g, lo, hi)) ≤ D_α even when the caller's critic leaves the range
    # (without it, e^{αg} > e^{α hi} would make B_hi too small and the bound unsound).
    g_q = jnp.clip(g_q, lo, hi)
    g_p = jnp.clip(g_p, lo, hi)
    # A / e^{(α−1)hi} and B / e^{α hi}: variables in [e^{-(α−1)w}, 1] and [e^{-αw}, 1].
    y = jnp.exp((alpha - 1.0) * (g_q - hi))
    z = jnp.exp(alpha * (g_p - hi))
    y_min = jnp.exp(-(alpha - 1.0) * width)
    z_min = jnp.exp(-alpha * width)
    radius_y = _one_sided_radius(y, 1.0 - y_min, delta_term, method, n_q)
    radius_z = _one_sided_radius(z, 1.0 - z_min, delta_term, method, n_p)
    # log max(Ŷ − r, y_min), with log y_min = −(α−1)w exact even where y_min underflows.
    log_y_lo = jnp.maximum(jnp.log(jnp.maximum(jnp.mean(y) - radius_y, 0.0)),
                           -(alpha - 1.0) * width)
    log_z_hi = jnp.log(jnp.minimum(jnp.mean(z) + radius_z, 1.0))
    return alpha / (alpha - 1.0) * log_y_lo - log_z_hi


def rademacher_bound(params: Any, input_norm: ArrayLike, n: ArrayLike) -> jax.Array:
    """Norm-based bound on the empirical Rademacher complexity of the critic's class.

    Golowich, Rakhlin & Shamir (2018, arXiv 1712.06541), Theorem 1, for depth-L networks with
    1-Lipschitz, positive-homogeneous activations (ReLU): R_n ≤ B (sqrt(2 L log 2) + 1)
    Π_j ‖W_j‖_F / √n. Biases are absorbed by appending a constant unit (weights [[W, b], [0, 1]],
    Frobenius norm sqrt(‖W‖² + ‖b‖² + 1) for hidden layers), B = max_i sqrt(‖z_i‖² + 1) over
    standardised inputs z_i; the bounded output M·tanh(·/M) is 1-Lipschitz with value 0 at 0
    (contraction). The class is the norm ball at the trained weights' norms (a data-dependent
    class). Traceable (the layer structure is static); concrete ``input_norm``/``n`` checked.

    Args:
      params: the critic's ``params`` collection (flax Dense layers ``Dense_0`` ... ``Dense_L-1``).
      input_norm: B ≥ 0.
      n: sample size > 0.
    """
    if not is_traced(input_norm, n):
        check_nonnegative_finite("input_norm", input_norm)
        check_positive("n", n)
    layers = [params[name] for name in sorted(params, key=lambda s: int(s.split("_")[-1]))]
    depth = len(layers)
    product = jnp.asarray(1.0)
    for j, layer in enumerate(layers):
        sq = jnp.sum(layer["kernel"] ** 2) + jnp.sum(layer["bias"] ** 2)
        product = product * jnp.sqrt(sq + (1.0 if j < depth - 1 else 0.0))
    return jnp.asarray(input_norm) * (math.sqrt(2.0 * depth * math.log(2.0)) + 1.0) * product / (
        jnp.sqrt(n))


def theory_radius(order: ArrayLike, critic_bound: ArrayLike, rademacher_q: ArrayLike,
                  rademacher_p: ArrayLike, num_q: ArrayLike, num_p: ArrayLike, *,
                  confidence: ArrayLike | None = None) -> jax.Array:
    """The class-restricted radius |D̂ − D_G| (the shape of Kim, Alabi, Varshney, arXiv 2605.21938,
    Theorem 3.2).

    Validates concrete arguments, then calls the traceable core (jit/vmap/grad work).

    Args:
      order: order α > 1.
      critic_bound: the critic's output bound M ≥ 0 (|g| ≤ M).
      rademacher_q: R_{n_Q}(G) ≥ 0.
      rademacher_p: R_{n_P}(G) ≥ 0.
      num_q: number of Q samples n_Q (> 0).
      num_p: number of P samples n_P (> 0).
      confidence: coverage in [0, 1); its failure probability β = 1 − confidence is split β/2
        per term, hence log(4/β); required (keyword).
    """
    delta = _failure(confidence)  # the failure probability β of the radius
    if not is_traced(order, critic_bound, rademacher_q, rademacher_p, num_q, num_p, delta):
        _check_order("order", order)
        check_nonnegative_finite("critic_bound", critic_bound)
        check_nonnegative("rademacher_q", rademacher_q)
        check_nonnegative("rademacher_p", rademacher_p)
        check_positive("num_q", num_q)
        check_positive("num_p", num_p)
    return _theory_radius(*float_arrays(order, critic_bound, rademacher_q, rademacher_p, num_q,
                                        num_p, delta))


def _theory_radius(alpha, bound, rademacher_q, rademacher_p, n_q, n_p, delta):
    """The radius of :func:`theory_radius`. Unvalidated, traceable."""
    a1 = (alpha - 1.0) * bound
    a2 = alpha * bound
    log_term = jnp.log(4.0) - jnp.log(delta)
    term_q = jnp.exp(a1) * (
        2.0 * (alpha - 1.0) * jnp.exp(a1) * rademacher_q
        + 2.0 * jnp.sinh(a1) * jnp.sqrt(log_term / (2.0 * n_q))
    )
    term_p = jnp.exp(a2) * (
        2.0 * alpha * jnp.exp(a2) * rademacher_p
        + 2.0 * jnp.sinh(a2) * jnp.sqrt(log_term / (2.0 * n_p))
    )
    return alpha / (alpha - 1.0) * term_q + term_p


def input_norm_bound(z) -> jax.Array:
    """B = max_i sqrt(‖z_i‖² + 1) for standardised inputs z of shape (n, d)."""
    return jnp.sqrt(jnp.max(jnp.sum(z**2, axis=-1)) + 1.0)
