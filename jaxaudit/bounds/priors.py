"""Encodings of attacks as baseline success probabilities p_i (the inputs of β(ε, p)).

The baseline success of target i for guess z_i is p_i(z_i) = Pr_{X'~D_i}[ℓ_i(X', z_i) = 1], the
prior mass of the guess's success set. Pass either the mass of the *realised* guess or the
worst-case p_i* = sup_z p_i(z) (run-independent; the only valid choice under approximate DP
unless one averages over outputs). Every function here returns either an exact p or a *valid
upper bound* on it (β is increasing in p, so an upper bound keeps the bound sound); which one is
stated in each docstring.

Concrete calls validate their arguments and return numpy float64 (priors are usually data
preparation, done once); traced arguments (inside the caller's ``jit``/``vmap``/``grad``) go to
the jnp formulas directly, unvalidated, so a prior can be mapped over (e.g. over π, a radius or
a batch of distributions) or differentiated. Arguments that set shapes (``attempts``, ``axis``,
``metric``, ``support_size``, ``threshold``) stay static, and Zipf's normaliser H_N(s) needs a
concrete exponent (mpmath).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    as_scalar,
    check_bool,
    check_choice,
    check_finite,
    check_integer,
    check_nonnegative,
    check_positive_finite,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit._validation.paths import available_memory
from jaxaudit.bounds.poisson_binomial import poisson_binomial_tail

__all__ = [
    "membership_prior",
    "top_k_mass",
    "ball_mass",
    "ball_mass_sup",
    "columns_prior",
    "zipf_prior",
    "uniform_prior",
]


def _distribution(name: str, probs, axis: int = -1) -> np.ndarray:
    p = check_probability(name, probs)
    if is_traced(p):
        return p
    if p.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got a scalar")
    total = p.sum(axis=axis)
    if not np.allclose(total, 1.0, rtol=0.0, atol=1e-6):
        raise ValueError(f"{name} must sum to 1 along axis {axis}, got sums {np.ravel(total)[:3]!r}")
    return p


def membership_prior(inclusion_prob: ArrayLike, guess: ArrayLike | None = None) -> np.ndarray:
    """Membership inference: p = π for a "member" guess, 1 − π for "non-member".

    Args:
      inclusion_prob: π ∈ [0, 1] per target (the prior probability of being in the data).
      guess: optional boolean array (True = "member"); ``None`` gives the worst case
        max(π, 1 − π) (the MAP guess). An abstention has p = 0: pass 0 for it.

    Returns:
      p, float64 array.

    Examples:
      >>> membership_prior([0.5, 0.9]).tolist()
      [0.5, 0.9]
    """
    pi = check_probability("inclusion_prob", inclusion_prob)
    xp = jnp if is_traced(pi, guess) else np
    if guess is None:
        return xp.maximum(pi, 1.0 - pi)
    if not is_traced(guess):
        guess = np.asarray(guess)
        if guess.dtype != bool:  # "no" or 0.3 would otherwise read as True ("member")
            raise ArgumentTypeError(f"guess must be boolean (True = member), got {plain(guess)}")
    return xp.where(guess, pi, 1.0 - pi)


def top_k_mass(probs: ArrayLike, attempts: int = 1, axis: int = -1) -> np.ndarray:
    """Largest prior mass of a set of ``attempts`` values (exact sup for k-attempt exact match).

    The prior of exact reconstruction with k attempts, and of attribute inference (pass the
    hidden attribute's prior conditioned on what the adversary knows about each target).

    Args:
      probs: prior over values, normalised along ``axis`` (e.g. (n_targets, K)).
      attempts: k ≥ 1 guesses per target.
      axis: axis holding the values.

    Returns:
      Sum of the k largest entries (exact p* = sup_z p(z)).

    Examples:
      >>> top_k_mass([0.5, 0.3, 0.2], attempts=2).item()
      0.8
    """
    p = _distribution("probs", probs, axis)
    attempts = check_integer("attempts", attempts, minimum=1)
    k = min(int(attempts), p.shape[axis])
    if is_traced(p):
        return jax.lax.top_k(jnp.moveaxis(p, axis, -1), k)[0].sum(axis=-1)  # type: ignore[return-value]  # traced: a jax array
    part = -np.partition(-p, k - 1, axis=axis)
    return np.take(part, np.arange(k), axis=axis).sum(axis=axis)


_METRICS = ("l1", "l2", "linf", "hamming")


def _distances(xp, values, centers, metric: str):
    diff = centers[:, None, :] - values[None, :, :]
    if metric == "l1":
        return xp.abs(diff).sum(-1)
    if metric == "l2":
        return xp.sqrt(xp.square(diff).sum(-1))
    if metric == "linf":
        return xp.abs(diff).max(-1)
    return (diff != 0).sum(-1).astype(diff.dtype)


def _ball_mass(xp, x, p, z, eta, metric: str):
    """Σ_{x: d(x, z) ≤ η} p(x) for each guess z (x: (K, d), p: (K,), z: (G, d)).

    A relative slack of 1e−12 on η: points at distance exactly η must count even when the float
    distance rounds just above it (|0.1 − 0.4| = 0.30000000000000004 > 0.3), since p has to be an
    upper bound on the success mass; a larger p only loosens the bound."""
    inside = _distances(xp, x, z, metric) <= eta + 1e-12 * xp.maximum(eta, 1.0)
    return inside.astype(p.dtype) @ p


def _support(values, probs):
    # NaN or inf points have no distance to a guess: their mass would silently drop out of every
    # ball, making p* (and every bound built on it) too small
    x = check_finite("values", values)
    if is_traced(x):
        x = jnp.asarray(x)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"values must be (K,) or (K, d), got shape {x.shape}")
    p = _distribution("probs", probs)
    if p.shape != (x.shape[0],):
        raise ValueError(f"probs must have shape ({x.shape[0]},), got {p.shape}")
    return x, p


def ball_mass(values: ArrayLike, probs: ArrayLike, guesses: ArrayLike, radius: ArrayLike,
              metric: str = "l2") -> np.ndarray:
    """Approximate reconstruction: prior mass within distance η of each guess (exact p(z)).

    Success ℓ(x, z) = 1[d(x, z) ≤ η]; p(z) = Σ_{x: d(x, z) ≤ η} D(x).

    Args:
      values: (K,) or (K, d) support of the prior.
      probs: (K,) prior masses.
      guesses: (G,) or (G, d) guesses z.
      radius: η ≥ 0.
      metric: ``"l1"``, ``"l2"``, ``"linf"`` or ``"hamming"``.

    Returns:
      (G,) masses.

    Examples:
      >>> ball_mass([0.0, 1.0, 2.0], [0.2, 0.5, 0.3], [0.5], 0.6).tolist()
      [0.7]
    """
    x, p = _support(values, probs)
    check_choice("metric", metric, _METRICS)
    eta = as_scalar("radius", radius)
    check_nonnegative("radius", eta)
    z = check_finite("guesses", guesses)
    xp = jnp if is_traced(x, p, z, eta) else np
    return _ball_mass(xp, x, p, xp.reshape(z, (-1, x.shape[1])), eta, metric)


def ball_mass_sup(values: ArrayLike, probs: ArrayLike, radius: ArrayLike, metric: str = "l2",
                  guesses_in_support: bool = False) -> float:
    """Upper bound on sup_z p(z) for success within distance η.

    If guesses are restricted to the support, the sup is the max over support points of the
    η-ball mass (exact). Otherwise any η-ball with positive mass contains a support point x₀ and
    (triangle inequality) lies inside the 2η-ball around x₀, so the max 2η-ball mass around
    support points is a valid upper bound.

    Args:
      values, probs: the prior (see :func:`ball_mass`).
      radius: η ≥ 0.
      metric: distance.
      guesses_in_support: whether guesses can only be support points.

    Returns:
      float: exact (guesses_in_support) or an upper bound on p*.
    """
    x, p = _support(values, probs)
    check_choice("metric", metric, _METRICS)
    r = as_scalar("radius", radius)
    check_nonnegative("radius", r)
    guesses_in_support = check_bool("guesses_in_support", guesses_in_support)
    eta = r if guesses_in_support else 2.0 * r
    if is_traced(x, p, r):
        return _ball_mass(jnp, x, p, x, eta, metric).max()
    return float(_ball_mass(np, x, p, x, eta, metric).max())


def columns_prior(column_probs: Sequence[ArrayLike], threshold: int) -> float:
    """Multi-attribute reconstruction: p* for "at least t of the hidden columns right".

    With independent columns, a guess z gets column j right with probability D_j(z_j), and
    Pr[#right ≥ t] is increasing in each D_j(z_j), so the sup is attained by guessing each
    column's mode: p* = Pr[PoiBin(max_v D_j(v)) ≥ t] (exact).

    Args:
      column_probs: sequence of 1-D priors, one per hidden column.
      threshold: t ≥ 1.

    Returns:
      float p*.

    Examples:
      >>> round(columns_prior([[0.5, 0.5], [0.9, 0.1]], 2), 6)
      0.45
    """
    columns = [_distribution(f"column_probs[{j}]", c) for j, c in enumerate(column_probs)]
    threshold = check_integer("threshold", threshold, minimum=1)
    if is_traced(columns):
        modes = jnp.stack([jnp.max(c) for c in columns])
        return poisson_binomial_tail(modes, threshold, method="recursion")  # type: ignore[return-value]  # traced: a jax array
    modes_np = np.array([c.max() for c in columns])
    return float(poisson_binomial_tail(modes_np, threshold, method="recursion"))


#: Bytes per value of :func:`zipf_prior`'s full support (int64 ranks, their float64 logarithms
#: and masses).
_ZIPF_BYTES_PER_VALUE = 24


def _check_full_support(n: int) -> None:
    """Refuse, before allocating, all N masses of a Zipf prior that the memory available now
    (``MemAvailable``, else the physical memory) does not hold."""
    available = available_memory()
    if available is None:
        return
    limit = available // _ZIPF_BYTES_PER_VALUE
    if n > limit:
        raise ValueError(
            f"support_size {n} is too large for all the masses of zipf_prior (ranks=None): "
            f"{n * _ZIPF_BYTES_PER_VALUE / 2**30:.3g} GiB, the memory available now holds at "
            f"most support_size {limit}; pass ranks= (the ranks you need), or use "
            "zipf_top_mass for the mass of the k most likely values")


def zipf_prior(exponent: float, support_size: int,
               ranks: ArrayLike | None = None) -> np.ndarray:
    """Zipf prior masses r^{−s}/H_N(s) of the given ranks (1 = most likely).

    H_N(s) = Σ_{r ≤ N} r^{−s} = ζ(s) − ζ(s, N + 1) (Hurwitz zeta, by analytic continuation also
    for s < 1), evaluated with mpmath, so N = 10^7 or more costs nothing.

    Args:
      exponent: s > 0.
      support_size: N ≥ 1.
      ranks: ranks to return (default: all N, only sensible for small N: refused, with a
        ValueError naming ``support_size``, beyond what the memory available now holds at
        24 bytes per value).

    Returns:
      float64 masses.

    Examples:
      >>> zipf_prior(1.0, 3).round(6).tolist()
      [0.545455, 0.272727, 0.181818]
    """
    s = float(check_positive_finite("exponent", exponent))
    support_size = check_integer("support_size", support_size, minimum=1)
    n = int(support_size)
    # 40 digits: near s = 1 both zetas are ≈ 1/(s − 1) and their difference cancels (at 15
    # digits s = 1 − 1e−9 lost 8 of them, leaving masses 6e−9 too small).
    with mpmath.workdps(40):
        if s == 1.0:
            harmonic = float(mpmath.harmonic(n))
        else:
            harmonic = float(mpmath.zeta(s) - mpmath.zeta(s, n + 1))
    if ranks is None:
        _check_full_support(n)
    r = np.arange(1, n + 1) if ranks is None else check_finite("ranks", ranks)
    if is_traced(r):
        return jnp.exp(-s * jnp.log(r) - math.log(harmonic))  # type: ignore[return-value]  # traced: a jax array
    if np.any(r < 1) or np.any(r > n) or np.any(r != np.floor(r)):
        raise ValueError(f"ranks must be integers in [1, {n}]")
    return np.exp(-s * np.log(r) - math.log(harmonic))


def zipf_top_mass(exponent: float, support_size: int, attempts: int = 1) -> float:
    """Mass H_k(s)/H_N(s) of the k = min(attempts, N) most likely values of a Zipf(s) prior
    over N values, from Hurwitz zetas (mpmath, 40 digits): nothing of length k or N is
    allocated, so N = 10^300 or k = 10^10 cost nothing. Exact up to float64 rounding.

    Examples:
      >>> round(zipf_top_mass(1.0, 3, 2), 6)   # (1 + 1/2) / (1 + 1/2 + 1/3)
      0.818182
    """
    s = float(check_positive_finite("exponent", exponent))
    n = check_integer("support_size", support_size, minimum=1, maximum=None)
    k = check_integer("attempts", attempts, minimum=1, maximum=None)
    if k >= n:
        return 1.0
    with mpmath.workdps(40):
        if s == 1.0:
            top, total = mpmath.harmonic(k), mpmath.harmonic(n)
        else:
            z = mpmath.zeta(s)
            top, total = z - mpmath.zeta(s, k + 1), z - mpmath.zeta(s, n + 1)
        return min(1.0, float(top / total))


def uniform_prior(alphabet_size: int, attempts: int = 1) -> float:
    """Uniform prior over K values with k attempts: p = min(1, k/K).

    K may be any Python int up to ``2**1000`` (a 64-bit secret has K = ``2**64``); p is the
    correctly rounded float64 of the exact ratio k/K (Python's int division), so the only
    error is the one rounding to float64.

    Examples:
      >>> uniform_prior(10)
      0.1
    """
    if is_traced(alphabet_size, attempts):
        return jnp.minimum(1.0, attempts / alphabet_size)  # type: ignore[return-value]  # traced: a jax array
    alphabet_size = check_integer("alphabet_size", alphabet_size, minimum=1, maximum=2**1000)
    attempts = check_integer("attempts", attempts, minimum=1, maximum=None)
    return min(1.0, attempts / alphabet_size)
