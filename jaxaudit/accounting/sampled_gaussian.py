r"""Rényi DP of the Poisson-subsampled Gaussian mechanism, exact at every order, in jnp.

One step adds N(0, σ²) noise to a sum of clipped contributions, each example included with
probability q. For add/remove neighbours the mechanism's output distributions are, in the worst
direction, μ₀ = N(0, σ²) and the mixture μ = (1 − q) μ₀ + q μ₁ with μ₁ = N(1, σ²), and its RDP
at order α > 1 is (Mironov, Talwar, Zhang, arXiv 1908.10530, §3, Thm 4–5: the other direction
D_α(μ₀‖μ) is never larger)

    ε(α) = D_α(μ‖μ₀) = log A_α / (α − 1),
    A_α  = E_{z∼μ₀}[(μ(z)/μ₀(z))^α] = E_{z∼N(0,σ²)}[(1 − q + q·exp((2z − 1)/(2σ²)))^α].

T steps compose to T·ε(α). At q = 1 this is the Gaussian mechanism, ε(α) = α/(2σ²).

**Integer α** (§3.3): expanding μ^α binomially and using
∫ μ₀^{1−i} μ₁^i = exp((i² − i)/(2σ²)),

    A_α = Σ_{i=0}^{α} C(α, i) (1 − q)^{α−i} q^i exp((i² − i)/(2σ²))       (a finite sum).

**Fractional α** (§3.3): the binomial series of ((1 − q)μ₀ + qμ₁)^α converges only where the
expanded ratio is at most one, so the integral is split at z₀ = σ² log(1/q − 1) + 1/2, where
(1 − q)μ₀(z₀) = qμ₁(z₀). Below z₀ expand in powers of qμ₁/((1 − q)μ₀), above it in powers of
(1 − q)μ₀/(qμ₁); with j = α − i and Φ the standard normal cdf,

    A_α = Σ_{i≥0} C(α, i) (1 − q)^{α−i} q^i exp((i² − i)/(2σ²)) Φ((z₀ − i)/σ)
        + Σ_{i≥0} C(α, i) q^{α−i} (1 − q)^i exp((j² − j)/(2σ²)) Φ((j − z₀)/σ).

For i > α the coefficients C(α, i) alternate in sign; summing their *absolute values* (as
dp_accounting's ``_compute_log_a_frac`` does) overestimates A_α and, at q near 1/2, never settles
within its 1,000-term cap (its result is then ∞). Here the signs are kept: each series is a
signed ``logsumexp`` over a fixed number of terms (``num_terms``, a static length, so the
function jits, vmaps and differentiates). Beyond i ≈ α + z₀ the terms alternate and their
magnitudes fall like i^{−α−2}, so a partial sum is within one term of the limit; the last kept
term gets weight 1/2 (the mean of two consecutive partial sums), which leaves an error of the
order of the difference of two consecutive terms, O(N^{−α−3}). The alternating regime starts
only past i ≈ σ, so large σ needs more terms: against mpmath quadrature, 1,024 terms give ε(α)
to 2e−9 relative at q = 0.5, σ = 10, α = 1.01, but 2.8e−6 too high at σ = 100 (4,096 terms:
2e−8); the public entries size ``num_terms`` from the orders and σ (``docs/renyi.md``,
Accountant). Orders above ``num_terms − 512`` give NaN.

Everything is in log space (``logsumexp``, ``log1p``, ``log_ndtr``, ``gammaln``); call under
``jax.enable_x64(True)`` (the public :func:`jaxaudit.accounting.rdp_epsilons` does) because at
α near 1 and small q, log A_α ≈ (α − 1)·KL is far below float32 resolution.

Special values: q = 0 or σ = ∞ → 0; q = 1 → α/(2σ²); α = ∞ → ∞ (for q > 0, σ < ∞: the
likelihood ratio is unbounded); α ≤ 1 → NaN (α = 1 is the KL limit, not computed here).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, log_ndtr
from jax.typing import ArrayLike

__all__ = ["DEFAULT_NUM_TERMS", "TAIL_TERMS", "max_order", "sampled_gaussian_rdp"]

#: Terms kept in each series by default: orders up to ``DEFAULT_NUM_TERMS − TAIL_TERMS`` = 512.
DEFAULT_NUM_TERMS = 1024
#: Terms past α the fractional series keeps (its alternating tail decays like i^{−α−2}).
TAIL_TERMS = 512


def max_order(num_terms: int = DEFAULT_NUM_TERMS) -> int:
    """Largest finite order :func:`sampled_gaussian_rdp` computes with ``num_terms`` terms."""
    return num_terms - TAIL_TERMS


def _log_abs_binom_and_sign(alpha, i):
    """log |C(α, i)| and its sign for α > 0 and integers i ≥ 0 (α, i broadcast).

    For i < α + 1: gammaln(α + 1) − gammaln(i + 1) − gammaln(α − i + 1). Beyond, Γ(α − i + 1)
    has a negative argument; by the reflection formula Γ(1 − x) Γ(x) = π / sin(πx) with
    x = i − α > 0, log |Γ(α − i + 1)| = log π − log |sin(πα)| − gammaln(i − α), so only positive
    arguments reach ``gammaln``. The sign of C(α, i) = Π_{k<i} (α − k)/(k + 1) is (−1)^m with
    m = max(0, i − ⌊α⌋ − 1), the number of negative factors. At integer α the entries i > α
    (where C(α, i) = 0) are finite placeholders: the integer sum masks them out.
    """
    below = i < alpha + 1
    head = gammaln(alpha + 1) - gammaln(i + 1)
    lead = head - gammaln(jnp.where(below, alpha - i + 1, 1.0))
    frac = alpha - jnp.floor(alpha)
    frac = jnp.where(frac == 0, 0.5, jnp.minimum(frac, 1.0 - frac))  # no log(0) at integers
    log_sin = jnp.log(jnp.sin(jnp.pi * frac))
    tail = head + gammaln(jnp.where(below, 1.0, i - alpha)) + log_sin - jnp.log(jnp.pi)
    negatives = jnp.maximum(i - jnp.floor(alpha) - 1, 0.0)
    sign = 1.0 - 2.0 * jnp.mod(negatives, 2.0)
    return jnp.where(below, lead, tail), sign


def _log_a_integer(sigma, q, alpha, i, log_binom):
    """log A_α by the finite binomial sum (α integer; terms i > α masked out)."""
    keep = i <= alpha
    log_terms = (log_binom + i * jnp.log(q) + (alpha - i) * jnp.log1p(-q)
                 + (i * i - i) / (2 * sigma**2))
    return jax.nn.logsumexp(jnp.where(keep, log_terms, -jnp.inf), axis=-1)


def _log_a_fractional(sigma, q, alpha, i, log_binom, sign):
    """log A_α by the two signed series split at z₀ (α not an integer)."""
    log_q, log_1mq = jnp.log(q), jnp.log1p(-q)
    z0 = sigma**2 * (log_1mq - log_q) + 0.5
    j = alpha - i
    log_s0 = (log_binom + i * log_q + j * log_1mq + (i * i - i) / (2 * sigma**2)
              + log_ndtr((z0 - i) / sigma))
    log_s1 = (log_binom + j * log_q + i * log_1mq + (j * j - j) / (2 * sigma**2)
              + log_ndtr((j - z0) / sigma))
    # The series end in their alternating tails: the last kept term gets weight 1/2 (the mean
    # of two consecutive partial sums), which cuts the truncation error from O(N^{−α−2}) to
    # O(N^{−α−3}). Both partial integrals are positive, so the signed sums are too.
    weight = sign * jnp.where(i == i.shape[-1] - 1, 0.5, 1.0)
    log_a0 = jax.nn.logsumexp(log_s0, axis=-1, b=weight, return_sign=True)[0]
    log_a1 = jax.nn.logsumexp(log_s1, axis=-1, b=weight, return_sign=True)[0]
    return jnp.logaddexp(log_a0, log_a1)


def _log_a(sigma, q, alpha, num_terms):
    """log A_α for 0 < q < 1, 0 < σ < ∞, 1 < α ≤ max_order(num_terms) (shapes broadcast)."""
    i = jnp.arange(num_terms, dtype=sigma.dtype)
    sigma, q, alpha = sigma[..., None], q[..., None], alpha[..., None]
    log_binom, sign = _log_abs_binom_and_sign(alpha, i)
    integer = _log_a_integer(sigma, q, alpha, i, log_binom)
    fractional = _log_a_fractional(sigma, q, alpha, i, log_binom, sign)
    return jnp.where(alpha[..., 0] == jnp.round(alpha[..., 0]), integer, fractional)


@functools.partial(jax.jit, static_argnames="num_terms")
def sampled_gaussian_rdp(noise_multiplier: ArrayLike, sampling_rate: ArrayLike,
                         order: ArrayLike, *, num_terms: int = DEFAULT_NUM_TERMS) -> jax.Array:
    r"""Per-step RDP ε(α) of the Poisson-subsampled Gaussian mechanism (pure jnp, unvalidated).

    ε(α) = log A_α / (α − 1) with A_α = E_{z∼N(0,σ²)}[(1 − q + q·exp((2z − 1)/(2σ²)))^α]
    (Mironov, Talwar, Zhang, arXiv 1908.10530, §3.3): the finite binomial sum at integer α, the
    two signed series split at z₀ = σ² log(1/q − 1) + 1/2 at fractional α, α/(2σ²) at q = 1.
    See the module docstring for the derivation and the truncation error.

    Jitted (``num_terms`` static) and traceable: jit, vmap and grad (w.r.t. σ and q) go
    through; the arguments broadcast against each other. Precision is the caller's: use
    ``jax.enable_x64(True)``.

    Args:
      noise_multiplier: σ > 0 (σ = ∞ gives 0).
      sampling_rate: q ∈ [0, 1].
      order: α > 1 (∞ allowed; orders above ``num_terms − 512`` give NaN, α ≤ 1 gives NaN).
      num_terms: static number of terms per series (default 1024, i.e. α ≤ 512).

    Returns:
      ε(α) ≥ 0 for one step, with the broadcast shape of the arguments.

    Examples:
      >>> import jax
      >>> with jax.enable_x64(True):
      ...     print(round(float(sampled_gaussian_rdp(2.0, 1.0, 3.0)), 12))
      ...     print(round(float(sampled_gaussian_rdp(2.62, 0.5, 1.25)), 6))
      0.375
      0.023379

    References:
      Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
      arXiv 1908.10530 (2019), §3.3.
    """
    sigma, q, alpha = jnp.broadcast_arrays(*(jnp.asarray(a, dtype=float) for a in
                                             (noise_multiplier, sampling_rate, order)))
    limit = max_order(num_terms)
    # Placeholder values where a closed form decides, so no branch sees an inf/NaN (which would
    # poison gradients through jnp.where).
    closed = (q <= 0) | (q >= 1) | jnp.isinf(sigma) | jnp.isinf(alpha) | (alpha <= 1)
    closed = closed | (alpha > limit)
    q_s = jnp.where(closed, 0.5, q)
    sigma_s = jnp.where(closed, 1.0, sigma)
    alpha_s = jnp.where(closed, 2.0, alpha)
    log_a = _log_a(sigma_s, q_s, alpha_s, num_terms)
    general = jnp.maximum(log_a / (alpha_s - 1), 0.0)  # A_α ≥ 1: clip rounding below 0

    alpha_s2 = jnp.where(jnp.isinf(alpha), 2.0, alpha)
    sigma_s2 = jnp.where(jnp.isinf(sigma), 1.0, sigma)
    full = alpha_s2 / (2 * sigma_s2**2)
    too_high = jnp.isfinite(alpha) & (alpha > limit) & (q < 1)
    result = jnp.where(too_high, jnp.nan, jnp.where(q >= 1, full, general))
    result = jnp.where(jnp.isinf(alpha), jnp.inf, result)
    result = jnp.where((q <= 0) | jnp.isinf(sigma), 0.0, result)
    return jnp.where((alpha <= 1) | jnp.isnan(alpha), jnp.nan, result)
