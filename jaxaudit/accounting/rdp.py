"""Rényi-DP accounting of the (Poisson-subsampled) Gaussian mechanism.

Which computation is whose:

* the RDP ε_α of T steps (:func:`rdp_epsilons`) is **ours**: the exact, traceable jnp
  computation of :func:`jaxaudit.accounting.sampled_gaussian.sampled_gaussian_rdp` (Mironov,
  Talwar, Zhang, arXiv 1908.10530, §3.3), times T. dp_accounting's fractional-order RDP for
  q < 1 sums the absolute values of an alternating series: 47–57% high at α ∈ {1.1, 1.25} for
  q = 0.1, σ = 2, and infinite at α ≤ 1.5 for q = 0.5, σ = 2.62 (``docs/renyi.md``, Accountant).
* the conversion to (ε, δ) (:func:`epsilon_for_delta`) is dp_accounting's formula
  (``rdp_privacy_accountant.compute_epsilon``: the KL shortcut and Canonne, Kamath, Steinke,
  arXiv 2004.00010, Prop. 12), re-written in jnp so it jits, and applied to our ε_α;
* the noise calibration (:func:`noise_for_epsilon`) is ours for ``accountant="rdp"`` (bisection
  on :func:`epsilon_for_delta`) and dp_accounting's ``PLDAccountant`` with
  ``calibrate_dp_mechanism`` for ``accountant="pld"`` (host only; its absl warnings are silenced).

References:
  Mironov, "Rényi Differential Privacy", CSF 2017 (arXiv 1702.07476).
  Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
  arXiv 1908.10530 (2019).
  Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", arXiv 2004.00010.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    as_scalar,
    check_integer,
    check_numeric,
    check_orders,
    check_positive,
    check_probability,
    is_traced,
)
from jaxaudit.accounting.sampled_gaussian import (
    DEFAULT_NUM_TERMS,
    TAIL_TERMS,
    sampled_gaussian_rdp,
)

__all__ = ["DEFAULT_ORDERS", "rdp_epsilons", "epsilon_for_delta", "noise_for_epsilon"]

#: Orders used when none are given (dp_accounting's default grid plus a few small ones).
DEFAULT_ORDERS: tuple[float, ...] = (
    1.1, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0,
    16.0, 20.0, 24.0, 28.0, 32.0, 64.0, 128.0, 256.0,
)

#: Largest finite order a concrete call accepts (the series then holds 2^17 terms per order).
MAX_ORDER = 100_000.0

#: Smallest noise multiplier a concrete call accepts: below it α T / (2σ²) leaves float64
#: (ε_α would be ∞ or NaN); ∞ is allowed (no privacy loss).
MIN_NOISE = 1e-100

#: Largest ε the PLD accountant is asked for (:func:`pld_epsilon`, ``noise_for_epsilon(...,
#: accountant="pld")``): its grid holds about ε / 10⁻³ privacy losses, so an ε of 10⁹ (σ = 10⁻³⁰⁰
#: or T = 10¹⁵) would need TiBs; an audit against such an ε is vacuous anyway.
MAX_PLD_EPSILON = 1000.0

#: Most steps the PLD accountant composes (10⁷ steps take 160 s on a 2-core AMD EPYC; its
#: grid grows with T: 10¹⁵ steps would need 221 TiB).
MAX_PLD_STEPS = 10_000_000

#: Noise multiplier above which the PLD accountant is evaluated at this σ instead (ε is
#: non-increasing in σ, so the ε returned stays an upper bound; dp_accounting overflows on σ²
#: near 10¹⁶⁰ and gives ε = 0 from here on).
MAX_PLD_NOISE = 1e12


@contextlib.contextmanager
def _quiet_absl():
    """Raise absl's verbosity to ERROR for the duration (dp_accounting logs warnings such as
    "Excluding this order from the epsilon computation" through absl), then restore it."""
    from absl import logging as absl_logging

    before = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.ERROR)
    try:
        yield
    finally:
        absl_logging.set_verbosity(before)


def _check_mechanism(noise_multiplier, sampling_rate, steps):
    """Concrete σ > 0 (∞ allowed), q ∈ (0, 1], integer T ≥ 1; traced values pass through."""
    sigma = check_positive("noise_multiplier", as_scalar("noise_multiplier", noise_multiplier))
    if not is_traced(sigma) and float(sigma) < MIN_NOISE:
        raise ValueError(f"noise_multiplier must be at least {MIN_NOISE:g} (below it ε_α = "
                         f"α·T/(2σ²) overflows float64), got {float(sigma)!r}")
    q = check_probability("sampling_rate", as_scalar("sampling_rate", sampling_rate),
                          open_low=True)
    steps = steps if is_traced(steps) else check_integer("steps", steps, minimum=1)
    return sigma, q, steps


def _check_rdp_orders(name: str, orders):
    """Orders α > 1, +∞ allowed (ε_∞ = ∞), at most :data:`MAX_ORDER` otherwise (1-D)."""
    if is_traced(orders):
        return jnp.atleast_1d(orders)
    arr = np.atleast_1d(check_numeric(name, orders))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    finite = arr[~(np.isposinf(arr))]
    if finite.size:
        check_orders(name, finite)  # NaN, −∞ and α ≤ 1 (including the KL limit α = 1) refused
    if (finite > MAX_ORDER).any():
        raise ValueError(f"{name} must be at most {MAX_ORDER:g} (or inf), got "
                         f"{float(finite.max())!r}")
    return arr


def _num_terms(orders, sigma=None) -> int:
    """Series length for concrete arguments: a power of two ≥ max finite α + TAIL_TERMS + 16σ
    (at least DEFAULT_NUM_TERMS, at most 2^17). The alternating tail sets in only past i ≈ σ:
    at σ = 100, q = 0.5, α = 1.01, 1,024 terms leave a 2e−6 relative excess, 4,096 terms 2e−8."""
    if is_traced(orders):
        return DEFAULT_NUM_TERMS
    arr = np.asarray(orders, dtype=np.float64)
    finite = arr[np.isfinite(arr)]
    top = float(finite.max()) if finite.size else 0.0
    if sigma is not None and not is_traced(sigma) and np.isfinite(float(sigma)):
        top += 16.0 * min(float(sigma), 2.0**13)
    return min(max(DEFAULT_NUM_TERMS, 1 << math.ceil(math.log2(top + TAIL_TERMS + 1))), 1 << 17)


def _as_float64(value):
    return jnp.asarray(np.asarray(value, dtype=np.float64))


@functools.partial(jax.jit, static_argnames="num_terms")
def _rdp_epsilons(sigma, q, steps, orders, num_terms=DEFAULT_NUM_TERMS):
    return steps * sampled_gaussian_rdp(sigma, q, orders, num_terms=num_terms)


def rdp_epsilons(
    *, noise_multiplier: float, sampling_rate: float, steps: int, orders: ArrayLike,
) -> np.ndarray:
    """RDP guarantee ε_α of ``steps`` rounds of the Poisson-subsampled Gaussian mechanism.

    ε_α(T) = T · log A_α / (α − 1) with A_α = E_{z∼N(0,σ²)}[(1 − q + q·exp((2z − 1)/(2σ²)))^α]
    (add/remove neighbours; Mironov, Talwar, Zhang, arXiv 1908.10530, §3.3), computed exactly at
    every real order by :func:`jaxaudit.accounting.sampled_gaussian.sampled_gaussian_rdp` (ours,
    in jnp — not dp_accounting, whose fractional orders are loose or infinite for q < 1). At
    ``sampling_rate = 1`` this is ε_α = α T / (2 σ²) = α μ² / 2 with μ = √T / σ.

    Concrete arguments are validated and computed in float64 (x64 scoped to the call), with
    enough series terms for the largest order and σ. Under ``jax.jit``/``jax.vmap``/``jax.grad`` (any
    argument traced) nothing is checked, the caller's precision applies (use
    ``jax.enable_x64(True)``) and orders above 512 give NaN.

    Args:
      noise_multiplier: σ, the noise standard deviation in units of the clipping norm (> 0).
      sampling_rate: q ∈ (0, 1], the Poisson sampling probability of each example.
      steps: T ≥ 1, the number of composed rounds.
      orders: one order α > 1 or a sequence of them (Mironov's D_α units; ``inf`` gives ∞;
        α = 1, the KL limit, is refused).

    Returns:
      float64 array of ε_α with the shape of ``np.atleast_1d(orders)`` (a ``jax.Array`` when
      traced).

    Examples:
      >>> float(rdp_epsilons(noise_multiplier=2.0, sampling_rate=1.0, steps=8, orders=[2.0])[0])
      2.0
      >>> rdp_epsilons(noise_multiplier=2.62, sampling_rate=0.5, steps=100,
      ...              orders=[1.25, 1.5]).round(3)
      array([2.338, 2.831])

    References:
      Mironov, Talwar, Zhang (2019), arXiv 1908.10530, §3.3.
    """
    sigma, q, steps = _check_mechanism(noise_multiplier, sampling_rate, steps)
    alphas = _check_rdp_orders("orders", orders)
    num_terms = _num_terms(alphas, sigma)
    if is_traced(sigma, q, steps, alphas):
        return steps * sampled_gaussian_rdp(sigma, q, alphas, num_terms=num_terms)
    with jax.enable_x64(True):
        eps = _rdp_epsilons(*map(_as_float64, (sigma, q, steps, alphas)), num_terms=num_terms)
        return np.asarray(eps, dtype=np.float64)


def _epsilon_from_rdp(orders, rdp, delta):
    """(ε, δ) from RDP values: dp_accounting's ``compute_epsilon`` in jnp (traceable).

    Per order: ε = 0 when δ² + expm1(−ε_α) > 0 (the KL bound δ ≤ √(1 − e^{−ε_α}) already holds);
    else, for α > 1.01, ε = ε_α + log(1 − 1/α) − log(δ α)/(α − 1) (Canonne, Kamath, Steinke,
    arXiv 2004.00010, Prop. 12); else ∞. The result is max(0, min over orders).
    """
    finite = jnp.isfinite(orders)
    a = jnp.where(finite, orders, 2.0)
    converted = rdp + jnp.log1p(-1.0 / a) - jnp.log(delta * a) / (a - 1.0)
    converted = jnp.where(finite & (a > 1.01), converted, jnp.inf)
    per_order = jnp.where(delta**2 + jnp.expm1(-rdp) > 0, 0.0, converted)
    return jnp.maximum(jnp.min(per_order, axis=-1), 0.0)


@functools.partial(jax.jit, static_argnames="num_terms")
def _epsilon_for_delta(sigma, q, steps, delta, orders, num_terms=DEFAULT_NUM_TERMS):
    rdp = steps * sampled_gaussian_rdp(sigma, q, orders, num_terms=num_terms)
    return _epsilon_from_rdp(orders, rdp, delta)


def epsilon_for_delta(*, noise_multiplier: float, sampling_rate: float, steps: int,
                      delta: ArrayLike, orders: Sequence[float] | None = None) -> float:
    """(ε, δ)-DP guarantee of the same mechanism by RDP conversion.

    ε = max(0, min_α ε̃_α) over ``orders``, with ε_α = :func:`rdp_epsilons` (ours) and
    ε̃_α = ε_α + log(1 − 1/α) − log(δ α)/(α − 1) (α > 1.01; Canonne, Kamath, Steinke,
    arXiv 2004.00010, Prop. 12), or 0 when δ² > 1 − exp(−ε_α) — dp_accounting's
    ``compute_epsilon`` rule, written in jnp so this function jits, vmaps and differentiates
    (w.r.t. σ, q, δ) like :func:`rdp_epsilons`.

    Args:
      noise_multiplier: σ > 0.
      sampling_rate: q ∈ (0, 1].
      steps: T ≥ 1.
      delta: target δ ∈ (0, 1).
      orders: orders to optimise the conversion over (default :data:`DEFAULT_ORDERS`).

    Returns:
      ε (float; a ``jax.Array`` scalar when traced) such that the mechanism is (ε, δ)-DP.

    Examples:
      >>> round(epsilon_for_delta(noise_multiplier=1.0, sampling_rate=1.0, steps=1,
      ...                         delta=1e-5), 3)
      4.753
    """
    sigma, q, steps = _check_mechanism(noise_multiplier, sampling_rate, steps)
    delta = check_probability("delta", as_scalar("delta", delta), open_low=True,
                              open_high=True)
    alphas = _check_rdp_orders("orders", DEFAULT_ORDERS if orders is None else orders)
    num_terms = _num_terms(alphas, sigma)
    if is_traced(sigma, q, steps, delta, alphas):
        return _epsilon_for_delta(sigma, q, steps, delta, alphas, num_terms=num_terms)
    with jax.enable_x64(True):
        eps = _epsilon_for_delta(*map(_as_float64, (sigma, q, steps, delta, alphas)),
                                 num_terms=num_terms)
        return float(eps)


def _check_pld_steps(steps: int) -> None:
    if int(steps) > MAX_PLD_STEPS:
        raise ValueError(f"steps={int(steps)} is above {MAX_PLD_STEPS}, the most the PLD "
                         "accountant composes (its grid grows with the steps); use the RDP "
                         "accountant")


def pld_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int,
                delta: float) -> float:
    """(ε, δ)-DP guarantee by dp_accounting's privacy-loss-distribution accountant (value
    discretisation 10⁻³, nearly tight; host only).

    The RDP guarantee (:func:`epsilon_for_delta`, an upper bound on the PLD one) is computed first:
    above :data:`MAX_PLD_EPSILON` the PLD grid would not fit in memory and a ValueError says so.
    σ above :data:`MAX_PLD_NOISE` is evaluated at that σ (an upper bound; ε is 0 there).

    Raises:
      ValueError: bad arguments, or an RDP ε above :data:`MAX_PLD_EPSILON`.

    Example:
      >>> round(pld_epsilon(noise_multiplier=5.0, sampling_rate=1.0, steps=100, delta=1e-5), 1)
      10.0
    """
    sigma, q, steps = _check_mechanism(noise_multiplier, sampling_rate, steps)
    _check_pld_steps(steps)
    upper = epsilon_for_delta(noise_multiplier=sigma, sampling_rate=q, steps=steps, delta=delta)
    if not upper <= MAX_PLD_EPSILON:
        raise ValueError(
            f"the PLD accountant cannot hold this mechanism (noise_multiplier={float(sigma)!r}, "
            f"sampling_rate={float(q)!r}, steps={int(steps)}): its RDP epsilon at delta={delta!r} "
            f"is {upper:.4g}, above {MAX_PLD_EPSILON:g} (the PLD grid would not fit in memory); "
            "use the RDP accountant, or more noise or fewer steps")
    import dp_accounting

    gaussian = dp_accounting.GaussianDpEvent(min(float(sigma), MAX_PLD_NOISE))
    step = gaussian if float(q) == 1.0 else dp_accounting.PoissonSampledDpEvent(float(q), gaussian)
    pld = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    with _quiet_absl():
        pld.compose(dp_accounting.SelfComposedDpEvent(step, int(steps)))
        return float(pld.get_epsilon(float(delta)))


ACCOUNTANTS = ("rdp", "pld")

#: Bracket of the ``accountant="rdp"`` calibration: σ ∈ [1e−3, 1e6], bisected in log σ.
SIGMA_RANGE = (1e-3, 1e6)
_BISECTIONS = 64  # log(1e9) / 2^64 ≈ 1e−18: σ to float64 resolution


def _calibrate_rdp(epsilon, delta, steps, q, orders, num_terms):
    """Smallest σ in :data:`SIGMA_RANGE` with ε(σ) ≤ ``epsilon`` (bisection in log σ; returns
    the upper end of the last bracket, so the target always holds); ∞ when even σ = 1e6 fails."""
    def eps_of(log_sigma):
        rdp = steps * sampled_gaussian_rdp(jnp.exp(log_sigma), q, orders, num_terms=num_terms)
        return _epsilon_from_rdp(orders, rdp, delta)

    lo, hi = (jnp.log(jnp.asarray(v, dtype=jnp.result_type(float))) for v in SIGMA_RANGE)

    def halve(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = eps_of(mid) <= epsilon
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo_ok, hi_ok = eps_of(jnp.stack([lo, hi])[:, None]) <= epsilon  # one evaluation, two σ
    _, hi_end = jax.lax.fori_loop(0, _BISECTIONS, halve, (lo, hi))
    return jnp.where(lo_ok, jnp.exp(lo), jnp.where(hi_ok, jnp.exp(hi_end), jnp.inf))


@functools.partial(jax.custom_jvp, nondiff_argnums=(5,))
def _noise_for_epsilon_rdp(epsilon, delta, steps, q, orders, num_terms):
    return _calibrate_rdp(epsilon, delta, steps, q, orders, num_terms)


@_noise_for_epsilon_rdp.defjvp
def _noise_for_epsilon_rdp_jvp(num_terms, primals, tangents):
    """Implicit function theorem on ε(σ, δ, q) = ε_target: dσ = (dε − ∂ε/∂θ·dθ) / (∂ε/∂σ)."""
    epsilon, delta, steps, q, orders = primals
    d_epsilon, d_delta, _, d_q, _ = tangents
    sigma = _noise_for_epsilon_rdp(epsilon, delta, steps, q, orders, num_terms)
    interior = jnp.isfinite(sigma) & (sigma > SIGMA_RANGE[0])
    sigma_s = jnp.where(interior, sigma, 1.0)

    def eps_of(s, d, qq):
        rdp = steps * sampled_gaussian_rdp(s, qq, orders, num_terms=num_terms)
        return _epsilon_from_rdp(orders, rdp, d)

    _, slope = jax.jvp(lambda s: eps_of(s, delta, q), (sigma_s,), (jnp.ones_like(sigma_s),))
    _, moved = jax.jvp(lambda d, qq: eps_of(sigma_s, d, qq), (delta, q), (d_delta, d_q))
    return sigma, jnp.where(interior, (d_epsilon - moved) / slope, 0.0)


_noise_for_epsilon_rdp_jit = jax.jit(_noise_for_epsilon_rdp, static_argnums=5)


def noise_for_epsilon(epsilon: ArrayLike, delta: ArrayLike, steps: int, sampling_rate: float, *,
                      orders: ArrayLike | None = None, accountant: str = "rdp") -> float:
    """Smallest noise multiplier σ for which T rounds are (ε, δ)-DP.

    ``accountant="rdp"`` (ours): bisection in log σ on :func:`epsilon_for_delta` (exact RDP of
    the sampled Gaussian, dp_accounting's conversion rule) over σ ∈ [1e−3, 1e6]; the returned σ
    always meets the target. It jits and vmaps (over ε, δ, q), and its gradient is the implicit
    one, dσ/dε = 1 / (∂ε/∂σ). ``accountant="pld"``: dp_accounting's ``PLDAccountant`` with
    ``calibrate_dp_mechanism`` (host only, not traceable).

    The RDP conversion to (ε, δ) is loose: at full batch, T = 100, (10, 1e−5) it gives
    σ = 5.30 (μ = √T/σ = 1.887) where the privacy-loss-distribution accountant gives the nearly
    exact σ = 5.00 (μ = 2.000, the μ-GDP value). Annamalai & De Cristofaro (arXiv 2405.14106)
    calibrate with a PRV accountant, i.e. the tight value: use ``"pld"`` to audit at their
    noise level.

    Args:
      epsilon: target ε > 0.
      delta: target δ ∈ (0, 1).
      steps: T ≥ 1.
      sampling_rate: q ∈ (0, 1].
      orders: orders for the RDP accountant (default :data:`DEFAULT_ORDERS`).
      accountant: "rdp" (default, the bound the RDP audit compares with) or "pld" (tight).

    Returns:
      σ (float; a ``jax.Array`` scalar when traced) at which the chosen accountant certifies
      (ε, δ) (``"pld"``: up to dp_accounting's calibration tolerance).

    Raises:
      ValueError: bad arguments, an unknown accountant, ``"pld"`` under a JAX transform or with
        ε above :data:`MAX_PLD_EPSILON`, or a target no σ ≤ 1e6 reaches.

    Example:
      >>> round(noise_for_epsilon(10.0, 1e-5, 100, 1.0, accountant="pld"), 2)
      5.0
      >>> round(noise_for_epsilon(10.0, 1e-5, 100, 1.0), 2)
      5.3
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    epsilon = check_positive("epsilon", as_scalar("epsilon", epsilon))
    delta = check_probability("delta", as_scalar("delta", delta), open_low=True, open_high=True)
    _, q, steps = _check_mechanism(1.0, sampling_rate, steps)
    alphas = _check_rdp_orders("orders", DEFAULT_ORDERS if orders is None else orders)
    traced = is_traced(epsilon, delta, q, steps, alphas)
    if accountant == "rdp":
        num_terms = _num_terms(alphas)
        if traced:
            return _noise_for_epsilon_rdp(epsilon, delta, steps, q, alphas, num_terms)
        with jax.enable_x64(True):
            sigma = float(_noise_for_epsilon_rdp_jit(
                *map(_as_float64, (epsilon, delta, steps, q, alphas)), num_terms))
        if not math.isfinite(sigma):
            raise ValueError(f"no noise multiplier up to {SIGMA_RANGE[1]:g} reaches epsilon="
                             f"{float(epsilon)!r} at delta={float(delta)!r} over these orders")
        return sigma
    if traced:
        raise ValueError("accountant='pld' runs dp_accounting on the host and cannot be traced "
                         "(jit/vmap/grad); use accountant='rdp' or call it outside the transform")
    if float(epsilon) > MAX_PLD_EPSILON:
        raise ValueError(f"epsilon={float(epsilon)!r} is above {MAX_PLD_EPSILON:g}, the largest "
                         "the PLD accountant calibrates (its grid would not fit in memory); use "
                         "accountant='rdp'")
    _check_pld_steps(steps)
    import dp_accounting

    steps, q = int(steps), float(q)
    # dp_accounting searches upwards from σ = 1; where σ = 1 is far from the target (T = 10¹⁵)
    # its PLD would not fit in memory, so the search starts at the RDP calibration instead (PLD
    # is tighter: its σ is at most that one).
    guess = 1.0
    if epsilon_for_delta(noise_multiplier=1.0, sampling_rate=q, steps=steps,
                         delta=float(delta)) > MAX_PLD_EPSILON:
        guess = noise_for_epsilon(epsilon, delta, steps, q, orders=orders)

    def event(sigma: float) -> dp_accounting.DpEvent:
        gaussian = dp_accounting.GaussianDpEvent(sigma)
        step = gaussian if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gaussian)
        return dp_accounting.SelfComposedDpEvent(step, steps)

    # The PLD discretisation blows up for σ ≪ 1 (a grid of 10^12 losses at σ = 10^-3).
    with _quiet_absl():
        return float(
            dp_accounting.calibrate_dp_mechanism(
                lambda: dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3),
                event,
                float(epsilon),
                float(delta),
                bracket_interval=dp_accounting.LowerEndpointAndGuess(min(0.2, guess / 2), guess),
            )
        )
