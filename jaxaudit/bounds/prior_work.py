"""Prior-work bounds on attack success, for comparison with the adversary-aware bound.

κ denotes the baseline (prior) success of a single target. All bounds are upper bounds on the
probability that the attack succeeds.

* KGK+ (Kulynych, Gomez, Kaissis, Hayes, Balle, du Pin Calmon, Raisaro, NeurIPS 2025,
  arXiv:2507.06969): success ≤ 1 − f(κ) for an f-DP mechanism.
* Balle–Cherubin–Hayes reconstruction robustness (S&P 2022, arXiv:2201.04845).
* Hayes–Mahloujifar–Balle (NeurIPS 2023, arXiv:2302.07225): 1 − T(κ) for a dominating pair.
* Steinke–Nasr–Jagielski one-run auditing (NeurIPS 2023, arXiv:2305.08846).
* Mahloujifar–Melis–Chaudhuri one-run f-DP reconstruction audit (MMC, ICML 2025,
  arXiv:2410.22235).

Every bound is pure ``jax.numpy`` behind a validated entry: the single-target closed forms
broadcast; the one-run p-value sums log-gamma binomial terms, its threshold and MMC's are
fixed-step bisections and MMC's recursion a ``lax.fori_loop``, so all of them run inside the
caller's ``jit``/``vmap`` (concrete calls compute in float64).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import overload

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp
from jax.scipy.stats import norm
from jax.typing import ArrayLike

from jaxaudit._rounding import upper_bound
from jaxaudit._validation import (
    as_scalar,
    check_at_least,
    check_integer,
    check_nonnegative,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit.bounds._numerics import checked_upper_bound

__all__ = [
    "kgk_bound_dp",
    "kgk_bound_gdp",
    "balle_rero_rdp",
    "balle_rero_zcdp",
    "balle_rero_pure",
    "hayes_gaussian",
    "steinke_p_value",
    "steinke_threshold",
    "mmc_reject",
    "mmc_threshold",
    "inverse_blowup_dp",
    "inverse_blowup_gdp",
]


@checked_upper_bound()
def kgk_bound_gdp(kappa: ArrayLike, mu: ArrayLike) -> jax.Array:
    """KGK+ under μ-GDP: 1 − f(κ) = Φ(Φ⁻¹(κ) + μ).

    Examples:
      >>> round(float(kgk_bound_gdp(0.5, 1.0)), 5)
      0.84134
    """
    return _gauss_shift(kappa, mu)


@jax.jit
def _gauss_shift(kappa, shift):
    return norm.cdf(norm.ppf(kappa) + shift)


def kgk_bound_dp(kappa: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0) -> jax.Array:
    """KGK+ under (ε, δ)-DP: min(1, e^ε κ + δ, 1 − e^{−ε}(1 − δ − κ)); δ = 0 is ε-DP.

    Examples:
      >>> round(float(kgk_bound_dp(0.5, 1.0)), 6)
      0.81606
    """
    check_probability("kappa", kappa)
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    return upper_bound(_kgk_approx, kappa, epsilon, delta)


def _scaled(kappa, eps):
    """e^ε κ with the convention e^ε·0 = 0 (also at ε = ∞: a success set of prior mass 0)."""
    return jnp.where(kappa == 0, 0.0, jnp.exp(eps) * kappa)


@jax.jit
def _kgk_approx(kappa, eps, delta):
    return jnp.minimum(jnp.minimum(1.0, _scaled(kappa, eps) + delta),
                       1.0 - jnp.exp(-eps) * (1.0 - delta - kappa))


def balle_rero_rdp(kappa: ArrayLike, order: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Reconstruction robustness under (α, ε)-RDP: min(1, (κ e^ε)^{(α−1)/α}).

    ``order`` is the Rényi order α > 1 (α = ∞ gives the ε-DP bound min(1, e^ε κ)) and
    ``epsilon`` the RDP ε at that order. Balle, Cherubin & Hayes, arXiv 2201.04845.

    Examples:
      >>> round(float(balle_rero_rdp(0.01, 2.0, 1.0)), 6)
      0.164872
    """
    check_probability("kappa", kappa)
    check_nonnegative("epsilon", epsilon)
    check_at_least("order", order, 1, strict=True)
    return upper_bound(_balle_rdp, kappa, order, epsilon)


@jax.jit
def _balle_rdp(kappa, order, eps):
    # exponent 1 − 1/α (α = ∞ gives pure DP); κ = 0 gives 0 even at ε_α = ∞ (no ∞ − ∞).
    log_term = jnp.where(kappa == 0, -jnp.inf, jnp.log(kappa) + eps)
    return jnp.minimum(1.0, jnp.exp((1.0 - 1.0 / order) * log_term))


@checked_upper_bound()
def balle_rero_zcdp(kappa: ArrayLike, rho: ArrayLike) -> jax.Array:
    """Reconstruction robustness under ρ-zCDP: exp(−(sqrt(ln 1/κ) − sqrt ρ)²) if ρ < ln(1/κ), else 1.

    Examples:
      >>> round(float(balle_rero_zcdp(0.01, 1.0)), 6)
      0.268948
    """
    log_inv = -jnp.log(kappa)
    value = jnp.exp(-jnp.square(jnp.sqrt(log_inv) - jnp.sqrt(rho)))
    return jnp.where(rho < log_inv, value, 1.0)


@checked_upper_bound()
def balle_rero_pure(kappa: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Reconstruction robustness under ε-DP: min(1, e^ε κ).

    Examples:
      >>> float(balle_rero_pure(0.5, 1.0))
      1.0
    """
    return jnp.minimum(1.0, _scaled(kappa, epsilon))


@checked_upper_bound(positive=("sigma",))
def hayes_gaussian(kappa: ArrayLike, sensitivity: ArrayLike, sigma: ArrayLike) -> jax.Array:
    """Hayes–Mahloujifar–Balle bound for the Gaussian mechanism: Φ(Φ⁻¹(κ) + Δ/σ).

    Examples:
      >>> round(float(hayes_gaussian(0.5, 1.0, 1.0)), 5)
      0.84134
    """
    return _gauss_shift(kappa, sensitivity / sigma)


def _log_binom_pmf(r: int, epsilon):
    """log Pr[Bin(r, q) = k], k = 0..r, q = e^ε/(1 + e^ε) (0·log 0 = 0 at ε = ∞)."""
    k = jnp.arange(r + 1, dtype=jnp.result_type(epsilon, float))
    log_q, log_1mq = jax.nn.log_sigmoid(epsilon), jax.nn.log_sigmoid(-epsilon)
    succ = jnp.where(k == 0, 0.0, k * log_q)
    fail = jnp.where(k == r, 0.0, (r - k) * log_1mq)
    return gammaln(r + 1.0) - gammaln(k + 1.0) - gammaln(r - k + 1.0) + succ + fail


@partial(jax.jit, static_argnames="r")
def _steinke_p_value(m, r: int, v, epsilon, delta=0.0) -> jax.Array:
    """The p-value of :func:`steinke_p_value` (jnp; ``r`` static, the rest may be traced)."""
    logpmf = _log_binom_pmf(r, epsilon)
    k = jnp.arange(r + 1)
    beta = jnp.exp(logsumexp(jnp.where(k >= v, logpmf, -jnp.inf)))
    # a = max_{i = 1..v} Pr[v > Bin ≥ v − i]/i = max_{k < v} Σ_{j = k}^{v−1} pmf(j) / (v − k)
    below = jnp.cumsum(jnp.where(k < v, jnp.exp(logpmf), 0.0)[::-1])[::-1]
    a = jnp.max(jnp.where(k < v, below / jnp.maximum(v - k, 1), 0.0))
    return jnp.minimum(1.0, beta + a * delta * 2 * m)


@overload
def steinke_p_value(m: int, r: int, v: int, epsilon: float, delta: float = ...) -> float: ...
@overload
def steinke_p_value(m: int | jax.Array, r: int, v: int | jax.Array, epsilon: float | jax.Array,
                    delta: float | jax.Array = ...) -> float | jax.Array: ...
def steinke_p_value(m: int | jax.Array, r: int, v: int | jax.Array, epsilon: float | jax.Array,
                    delta: float | jax.Array = 0.0) -> float | jax.Array:
    """Steinke–Nasr–Jagielski one-run p-value for v correct out of r guesses on m canaries.

    Pure ε-DP: Pr[W ≥ v] ≤ β := Pr[Bin(r, q) ≥ v], q = e^ε/(1 + e^ε). Under (ε, δ)-DP (their
    Theorem 3.1): p = min(1, β + a·δ·2m) with a = max_{i = 1..v} Pr[v > Bin(r, q) ≥ v − i] / i.
    The binomial terms are exp(log-gamma) in float64, summed without cancellation. ``r`` sets a
    shape (static); ``m``, ``v``, ε and δ may be traced (``jit``/``vmap``/``grad`` in ε, δ).

    Args:
      m: number of canaries (m ≥ r).
      r: number of guesses made (non-abstentions).
      v: number of correct guesses.
      epsilon: ε ≥ 0.
      delta: δ ∈ [0, 1).

    Returns:
      The p-value (Python float; a JAX scalar inside ``jit``/``vmap``).

    Examples:
      >>> round(steinke_p_value(1000, 100, 80, 1.0), 10)
      0.0715562468
    """
    r = check_integer("r", r, minimum=1)
    if is_traced(m, v, epsilon, delta):
        return _steinke_p_value(m, r, v, epsilon, delta)
    m = check_integer("m", m, minimum=1)
    v = check_integer("v", v)
    if v > r:
        raise ValueError(f"v must be an integer in [0, r], got {plain(v)}")
    epsilon, delta = as_scalar("epsilon", epsilon), as_scalar("delta", delta)
    if r > m:
        raise ValueError(f"r must be <= m, got r={r!r}, m={plain(m)}")
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    with jax.enable_x64(True):
        return float(_steinke_p_value(m, r, v, epsilon, delta))


@partial(jax.jit, static_argnames="r")
def _steinke_threshold(m, r: int, epsilon, delta=0.0, gamma=0.05) -> jax.Array:
    """The threshold of :func:`steinke_threshold` (jnp; fixed-iteration bisection on v)."""
    def bisect(_, bracket):
        lo, hi = bracket
        mid = (lo + hi) // 2
        rejects = _steinke_p_value(m, r, mid, epsilon, delta) <= gamma
        live = hi - lo > 1
        return jnp.where(live & ~rejects, mid, lo), jnp.where(live & rejects, mid, hi)

    # p-value(0) = 1 > γ; hi = r + 1 stands for "no v ≤ r rejects"
    steps = (r + 2).bit_length()
    _, hi = jax.lax.fori_loop(0, steps, bisect, (jnp.int32(0), jnp.int32(r + 1)))
    return hi


@overload
def steinke_threshold(m: int, r: int, epsilon: float, delta: float = ...,
                      gamma: float = ...) -> int: ...
@overload
def steinke_threshold(m: int | jax.Array, r: int, epsilon: float | jax.Array,
                      delta: float | jax.Array = ..., gamma: float | jax.Array = ...
                      ) -> int | jax.Array: ...
def steinke_threshold(m: int | jax.Array, r: int, epsilon: float | jax.Array,
                      delta: float | jax.Array = 0.0, gamma: float | jax.Array = 0.05
                      ) -> int | jax.Array:
    """Smallest v with :func:`steinke_p_value` ``(m, r, v, ε, δ) ≤ γ``; r + 1 if none.

    The number of correct guesses (of r on m canaries) from which Steinke et al.'s one-run test
    rejects ε-DP (or (ε, δ)-DP) at level γ: the one-run audit's analogue of the count bound v_γ.
    Found by bisection on v ∈ 0..r + 1 (the p-value is non-increasing in v), a fixed number of
    steps, so it vmaps over ε, δ and γ (``r`` is static).

    Args:
      m: number of canaries (m ≥ r).
      r: number of guesses made.
      epsilon: ε ≥ 0.
      delta: δ ∈ [0, 1).
      gamma: level γ ∈ (0, 1).

    Returns:
      Python int in 1..r + 1 (an int32 array inside ``jit``/``vmap``).

    Examples:
      >>> steinke_threshold(1000, 1000, 1.0)  # membership (K = 2) at ε = 1
      755
    """
    r = check_integer("r", r, minimum=1)
    if is_traced(m, epsilon, delta, gamma):
        return _steinke_threshold(m, r, epsilon, delta, gamma)
    check_probability("gamma", gamma, open_low=True, open_high=True)
    steinke_p_value(m, r, 0, epsilon, delta)  # validates m, ε, δ
    with jax.enable_x64(True):
        return int(_steinke_threshold(m, r, float(epsilon), float(delta), float(gamma)))


def inverse_blowup_dp(epsilon: float, delta: float = 0.0) -> Callable:
    """f̄⁻¹ for (ε, δ)-DP (δ = 0: ε-DP): the least x with f̄(x) ≥ y, where f̄ = 1 − f is
    x ↦ min(1, δ + e^ε x, 1 − e^{−ε}(1 − δ − x)).

    Returns y ↦ max(e^{−ε}(y − δ), 1 − δ − e^ε (1 − y)) (clipped to [0, 1]; 1 − δ at y ≥ 1),
    a jnp function: a concrete y gives a Python float (computed in float64), a traced y (inside
    :func:`mmc_reject`'s loop, or the caller's ``jit``) a JAX scalar. (ε, δ)-DP is f-DP for
    this trade-off (Dong, Roth, Su, arXiv 1905.02383, Prop. 2.5), so MMC's audit applies; the
    least preimage is the conservative choice (a larger f̄⁻¹ only makes the audit reject
    earlier).
    """
    check_nonnegative("epsilon", epsilon)
    check_probability("delta", delta, open_high=True)
    return partial(_float64_or_traced, _inverse_blowup_dp, (epsilon, delta))


def _inverse_blowup_dp(y, params):
    eps, delta = params[0], params[1]
    scaled = jnp.exp(-eps) * (y - delta)
    # 1 − δ − e^ε(1 − y) without ∞·0 at ε = ∞, y = 1
    upper = jnp.where(y >= 1.0, 1.0 - delta, (1.0 - delta) - jnp.exp(eps) * (1.0 - y))
    return jnp.where(y >= 1.0, 1.0 - delta, jnp.clip(jnp.maximum(scaled, upper), 0.0, 1.0))


def inverse_blowup_gdp(mu: float) -> Callable:
    """f̄⁻¹ for μ-GDP: y ↦ Φ(Φ⁻¹(y) − μ) (a jnp function, as :func:`inverse_blowup_dp`)."""
    check_nonnegative("mu", mu)
    return partial(_float64_or_traced, _inverse_blowup_gdp, mu)


def _inverse_blowup_gdp(y, mu):
    return norm.cdf(norm.ppf(jnp.clip(y, 0.0, 1.0)) - mu)


def _float64_or_traced(fn, param, y):
    if is_traced(param, y):
        return fn(y, param)
    with jax.enable_x64(True):
        return float(fn(jnp.float64(y), jnp.float64(param)))


def _captures_tracer(fn) -> bool:
    """Whether a callable holds a traced value (a partial's arguments, a closure's cells): an
    inverse blow-up built from a traced ε or μ inside the caller's ``vmap``."""
    held = [getattr(fn, "args", ()), getattr(fn, "keywords", None) or {}]
    held += [cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()]
    return is_traced(held)


def _mmc_check(m, c_guesses, alphabet_size, gamma, inverse_blowup=None):
    for name, val in (("m", m), ("c_guesses", c_guesses)):
        check_integer(name, val, minimum=1)
    # K may be a 64-bit secret space or larger: the recursion uses it as a float (K − 1)
    check_integer("alphabet_size", alphabet_size, minimum=1, maximum=2**1000)
    if inverse_blowup is not None and not callable(inverse_blowup):
        raise ValueError(f"inverse_blowup must be a callable y ↦ f̄⁻¹(y), got {inverse_blowup!r}")
    if c_guesses > m:
        raise ValueError(f"c_guesses must be <= m, got {plain(c_guesses)} > {plain(m)}")
    if alphabet_size < 2:
        raise ValueError(f"alphabet_size must be >= 2, got {plain(alphabet_size)}")
    check_probability("gamma", gamma, open_low=True, open_high=True)


def _mmc_reject_core(m, c_guesses, c_correct, alphabet_size, inverse_blowup, gamma):
    """MMC's recursion in jnp (a ``lax.fori_loop`` over i = c − 1, …, 0)."""
    dtype = jnp.result_type(float)
    c, cp = jnp.asarray(c_correct), jnp.asarray(c_guesses)
    r = gamma * c / m
    h = gamma * (cp - c) / m

    def step(j, state):
        r, h = state
        i = c - 1 - j
        h_new = jnp.maximum(h, (alphabet_size - 1) * inverse_blowup(r))
        return r + (i / (cp - i)) * (h_new - h), h_new

    r, h = jax.lax.fori_loop(0, c, step, (jnp.asarray(r, dtype), jnp.asarray(h, dtype)))
    return r + h > cp / m


def mmc_reject(m: int, c_guesses: int, c_correct: int, alphabet_size: int,
               inverse_blowup: Callable, gamma: float = 0.05) -> bool | jax.Array:
    """MMC one-run reconstruction audit: does c_correct of c_guesses reject f-DP at level γ?

    m canaries are drawn uniformly from an alphabet of size K = ``alphabet_size``; the auditor
    makes c′ guesses of which c are correct. With r_c = γc/m, h_c = γ(c′ − c)/m (MMC's τ is our γ) and for
    i = c − 1, …, 0:
        h_i = max(h_{i+1}, (K − 1)·f̄⁻¹(r_{i+1})),
        r_i = r_{i+1} + (i/(c′ − i))·(h_i − h_{i+1}),
    the audit rejects iff r_0 + h_0 > c′/m.

    Args:
      m: number of canaries.
      c_guesses: c′, guesses made.
      c_correct: c, correct guesses.
      alphabet_size: K ≥ 2.
      inverse_blowup: f̄⁻¹, a jnp function y ↦ f̄⁻¹(y), e.g. :func:`inverse_blowup_gdp` or
        :func:`inverse_blowup_dp` (it runs inside a ``lax.fori_loop``).
      gamma: level γ ∈ (0, 1) (MMC's τ): under f-DP the audit rejects with probability ≤ γ.

    Returns:
      True when f-DP is rejected (a JAX bool inside ``jit``/``vmap``; float64 when concrete).
    """
    if is_traced(m, c_guesses, c_correct, alphabet_size, gamma) or _captures_tracer(inverse_blowup):
        return _mmc_reject_core(m, c_guesses, c_correct, alphabet_size, inverse_blowup, gamma)
    _mmc_check(m, c_guesses, alphabet_size, gamma, inverse_blowup)
    if check_integer("c_correct", c_correct) > c_guesses:
        raise ValueError(f"c_correct must be an integer in [0, c_guesses], got {plain(c_correct)}")
    with jax.enable_x64(True):
        return bool(_mmc_reject_core(m, c_guesses, c_correct, float(alphabet_size), inverse_blowup,
                                     gamma))


def _mmc_threshold_core(m, c_guesses, alphabet_size, inverse_blowup, gamma, steps: int):
    reject = lambda c: _mmc_reject_core(m, c_guesses, c, alphabet_size, inverse_blowup, gamma)  # noqa: E731

    def bisect(_, bracket):  # invariant: no rejection at lo, rejection at hi
        lo, hi = bracket
        mid = (lo + hi) // 2
        rejects = reject(mid)
        live = hi - lo > 1
        return jnp.where(live & ~rejects, mid, lo), jnp.where(live & rejects, mid, hi)

    c_guesses = jnp.asarray(c_guesses, jnp.int32)
    _, hi = jax.lax.fori_loop(0, steps, bisect, (jnp.int32(0), c_guesses + 1))
    return jnp.where(reject(0), 0, hi)


def mmc_threshold(m: int, c_guesses: int, alphabet_size: int,
                  inverse_blowup: Callable, gamma: float = 0.05) -> int | jax.Array:
    """Smallest c_correct for which :func:`mmc_reject` rejects; c_guesses + 1 if none.

    Found by bisection (rejection is monotone in c_correct), a fixed number of steps
    (⌈log₂(c′ + 2)⌉, from a concrete ``c_guesses``), so it vmaps over ``gamma``, ``m`` or the
    privacy parameter inside ``inverse_blowup``.

    Returns:
      Python int (an int32 array inside ``jit``/``vmap``).
    """
    if is_traced(m, alphabet_size, gamma) or _captures_tracer(inverse_blowup):
        steps = (check_integer("c_guesses", c_guesses, minimum=1) + 2).bit_length()
        return _mmc_threshold_core(m, c_guesses, alphabet_size, inverse_blowup, gamma, steps)
    _mmc_check(m, c_guesses, alphabet_size, gamma, inverse_blowup)
    with jax.enable_x64(True):
        return int(_mmc_threshold_core(m, c_guesses, float(alphabet_size), inverse_blowup, gamma,
                                       (int(c_guesses) + 2).bit_length()))
