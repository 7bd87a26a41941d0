"""Exact Poisson-binomial distribution with relative accuracy in deep tails, as XLA code.

S = Σ_i B_i with independent B_i ~ Bernoulli(q_i), i = 1..n. Two exact algorithms, both pure
``jax.numpy`` (they run inside ``jax.jit``/``jax.vmap``; no host round trip):

* **recursion** (small n): the pmf recursion ``dp ← dp·(1 − q) + shift(dp)·q`` run in log space
  with ``logaddexp``. Every step adds non-negative terms, so every entry of the pmf keeps relative
  accuracy (≈ n·1e−16) however small it is, down to the smallest float64 logarithm; tails are
  reverse cumulative log-sum-exps, summed from the top. O(n²) work (one scan step per Bernoulli):
  ``method="auto"`` uses it for n ≤ ``RECURSION_MAX_N`` = 256, beyond which the FFT path is faster
  and, for tails, equally accurate (both are tested against mpmath).
* **fft** (large n): ShiftConvolve-style divide and conquer (Peres, Lee and Keich 2020). To
  evaluate Pr[S ≥ v] the distribution is *exponentially tilted* so that its mean sits at v:
  tilting every Bernoulli by e^{θk} gives again a Poisson-binomial, with
  q_i(θ) = sigmoid(logit q_i + θ), and

      Pr[S = k] = Pr[S_θ = k] · exp(log M(θ) − θ k),   log M(θ) = Σ_i log(1 − q_i + q_i e^θ).

  The tilted pmf is computed with exact recursions on blocks of ``LEAF`` Bernoullis combined
  pairwise by FFT convolution (``jnp.fft``, float64). FFT round-off is ≈ 1e−16 *relative to the
  peak* of the tilted pmf, and the peak sits at v, so the terms that make up the tail keep a
  relative accuracy ≈ 1e−13 after un-tilting; the tail is then summed from the top,
  Σ_{k ≥ v} Pr[S_θ = k] e^{−θ(k−μ_θ)}, never as 1 − cdf. Each tilt is accurate in a window of k
  around v (where the tilted pmf is ≥ ``WINDOW`` × its peak); several requested v share a tilt
  when they fall in its window. O(n log² n) per tilt.

Static shapes: the data-dependent parts (how many tilts, where) are ``lax.while_loop`` s over
fixed-shape states; q is padded with zeros (a q = 0 Bernoulli never adds to S) to 4, 5, 6 or 7
times a power of two, so one compiled program serves every n in a bucket. Certain (q = 1) and
impossible (q = 0) Bernoullis need no special case: they tilt to themselves.

Precision: the public functions validate concrete inputs and compute in float64 (x64 scoped to
the call; float32 and bfloat16 inputs are upcast). Inside the caller's ``jit``/``vmap``/``grad``
the cores follow the caller's precision: enable x64 there (``jax.enable_x64(True)``), since in
float32 the FFT round-off floor is ≈ 1e−7 of the peak and tails lose their relative accuracy
(a float32 derivative of the FFT path is refused with a ``TypeError`` that says so).
Subnormal q are kept (their logarithms are read from their bits, not flushed to 0 by XLA).
Results are non-negative (probabilities) or ≤ 0 (their logarithms).

References:
  Peres, Lee, Keich. "Exactly computing the tail of the Poisson-Binomial distribution."
  ACM TOMS 47(4), 2021. arXiv:2004.07429.
  Hong. "On computing the distribution function for the Poisson binomial distribution."
  CSDA 59, 2013 (the DFT-CF method whose round-off this module avoids).
"""

from __future__ import annotations

import math
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
    check_bool,
    check_choice,
    check_finite,
    check_probability,
    is_traced,
)
from jaxaudit.bounds._numerics import Concrete, logaddexp, safe_log

__all__ = [
    "RECURSION_MAX_N",
    "poisson_binomial_logpmf",
    "_logpmf_recursion",
    "_logsf_recursion",
    "poisson_binomial_tail",
    "poisson_binomial_isf",
]

#: Largest n for which ``method="auto"`` uses the recursion.
RECURSION_MAX_N = 256
#: Bernoullis per exact leaf block of the FFT path.
LEAF = 16
#: A tilt is trusted where the tilted pmf is at least WINDOW × its peak and 1e12 × the FFT
#: round-off floor (measured from the most negative raw FFT value: ≈ 4e−16 × peak at n = 10^3,
#: 2e−14 × peak at n = 10^6); the relative error there is ≲ 1e−10.
WINDOW = 1e-3
#: Safety margin of the count bounds, on the log scale: v_γ is the smallest v whose *computed*
#: tail is ≤ γ·e^{−ISF_LOG_MARGIN}. The engines' tails carry a relative error ≲ 1e−10 in either
#: direction, so without a margin a γ within that error of Pr[S ≥ v] (e.g. γ = 11/1024 − 1 ulp for
#: Bin(10, 1/2), whose Pr[S ≥ 9] is 11/1024) could give a v_γ one too small. With it, v_γ is never
#: below the exact definition's value and exceeds it only when γ lies within a relative 1e−9 of a
#: tail value (ties, too, are resolved upward).
ISF_LOG_MARGIN = 1e-9
#: The tilt θ is searched in [−THETA_MAX, THETA_MAX]: |logit q| ≤ 745 for every float64 q in
#: (0, 1), and a tilted mean within 1/2 of either end of 1..n (n ≤ 10^8) needs |θ| ≤ 745 + 20.
THETA_MAX = 800.0
_METHODS = ("auto", "recursion", "fft")


# --------------------------------------------------------------------------------------------
# Recursion (O(n²))
# --------------------------------------------------------------------------------------------


@jax.jit
def _logpmf_recursion(probs: jax.Array) -> jax.Array:
    """log Pr[S = k], k = 0..n, by the exact log-space recursion (jit-able, O(n²)).

    ``lp_k ← logaddexp(lp_k + log(1 − q_i), lp_{k−1} + log q_i)`` for i = 1..n, starting from the
    point mass at 0. No validation (use :func:`poisson_binomial_logpmf` at the boundary); the
    precision follows the caller's x64 setting (the public wrappers enable it).

    Args:
      probs: (n,) success probabilities in [0, 1].

    Returns:
      (n + 1,) log-probabilities; −inf for impossible counts.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> with jax.enable_x64(True):
      ...     lp = _logpmf_recursion(jnp.array([0.5, 0.5]))
      >>> [round(float(x), 6) for x in jnp.exp(lp)]
      [0.25, 0.5, 0.25]
    """
    return _pmf_recursion(jnp.asarray(probs))


def _at_zero(n, dtype):
    """log of the point mass at 0 over 0..n: Pr[S_0 = k] = Pr[S_0 ≥ k] = 1[k = 0] for k ≥ 0."""
    return jnp.full((n + 1,), -jnp.inf, dtype).at[0].set(0.0)


def _float(probs):
    return jnp.asarray(probs, jnp.result_type(probs, float))


@jax.custom_jvp
def _pmf_recursion(probs):
    """log Pr[S = k], k = 0..n (x_{−1} = log 0), differentiable also at q_i ∈ {0, 1}."""
    probs = _float(probs)
    return _log_recursion(probs, _at_zero(probs.shape[0], probs.dtype), -jnp.inf)


@_pmf_recursion.defjvp
def _pmf_recursion_jvp(primals, tangents):
    probs = _float(primals[0])
    return _log_recursion_jvp(probs, tangents[0], _at_zero(probs.shape[0], probs.dtype),
                              -jnp.inf)


@jax.custom_jvp
def _tail_recursion(probs):
    """log Pr[S ≥ v], v = 0..n (x_{−1} = log Pr[S ≥ −1] = 0), differentiable also at
    q_i ∈ {0, 1}."""
    probs = _float(probs)
    return _log_recursion(probs, _at_zero(probs.shape[0], probs.dtype), 0.0)


@_tail_recursion.defjvp
def _tail_recursion_jvp(primals, tangents):
    probs = _float(primals[0])
    return _log_recursion_jvp(probs, tangents[0], _at_zero(probs.shape[0], probs.dtype), 0.0)


def _log_recursion(probs, init, below):
    """x_v ← logaddexp(x_v + log(1 − q_i), x_{v−1} + log q_i) over i, from ``init``, with
    x_{−1} = ``below``: the pmf from the point mass at 0 (x_{−1} = log 0), the tail from
    Pr[S_0 ≥ v] = 1[v ≤ 0] (x_{−1} = log Pr[S ≥ −1] = 0)."""
    first = jnp.full((1,), below, dtype=probs.dtype)

    def step(x, q):
        return _mix(x, jnp.concatenate([first, x[:-1]]), q), None

    out, _ = jax.lax.scan(step, init, probs)
    return out


def _mix(x, shifted, q):
    """log((1 − q) e^x + q e^shifted): one step of the log-space recursion."""
    return logaddexp(x + jnp.log1p(-q), shifted + safe_log(q))


def _log_recursion_jvp(probs, dprobs, init, below):
    """The recursion and its exact forward derivative, also where some q_i is 0 or 1.

    Differentiating the log-space steps directly breaks there: log q and log(1 − q) have
    infinite slopes, and a count that is impossible after step i (P = 0, log P = −inf) can
    carry a non-zero derivative (at q_i = 0, ∂ Pr[S_i ≥ v]/∂q_i = Pr[S_{i−1} = v − 1]) that a
    later step turns into a positive probability. The tangent is therefore carried in two
    parts: r = dP/P where P > 0 (the log-derivative) and the absolute dP where P = 0. With
    P' = (1 − q) P + q P_shifted, the step is
        dP' = (1 − q) dP + q dP_shifted + dq (P_shifted − P),
    written for r' = dP'/P' with the weights c_x = (1 − q) P/P', c_s = q P_shifted/P' (both in
    [0, 1]) and w = P/P'. Every operation on the tangents is linear with coefficients from the
    primal values, so reverse mode transposes it. Where the final P is 0 (an impossible count)
    the log's derivative is reported as 0.
    """
    dtype = probs.dtype
    dprobs = jnp.asarray(dprobs, dtype)
    first = jnp.full((1,), below, dtype=dtype)
    zero = jnp.zeros((1,), dtype)
    big = math.log(float(jnp.finfo(dtype).max)) - 10.0  # exp(big) is finite

    def step(state, qd):
        x, r, a = state
        q, dq = qd
        s = jnp.concatenate([first, x[:-1]])
        r_s, a_s = jnp.concatenate([zero, r[:-1]]), jnp.concatenate([zero, a[:-1]])
        lx, ls = x + jnp.log1p(-q), s + safe_log(q)
        out = logaddexp(lx, ls)
        pos = out > -jnp.inf
        ref = jnp.where(pos, out, 0.0)

        def rel(log_term):  # e^{log_term − out} where both are finite, else 0
            ok = pos & (log_term > -jnp.inf)
            return jnp.where(ok, jnp.exp(jnp.where(ok, log_term - ref, 0.0)), 0.0)

        c_x, c_s, w_x, w_s = rel(lx), rel(ls), rel(x), rel(s)
        inv = jnp.where(pos, jnp.exp(jnp.minimum(-ref, big)), 0.0)  # 1/P'
        r_new = (c_x * r + c_s * r_s + (w_s - w_x) * dq
                 + ((1.0 - q) * a + q * a_s) * inv)
        a_new = (1.0 - q) * a + q * a_s + (jnp.exp(s) - jnp.exp(x)) * dq
        return (out, jnp.where(pos, r_new, 0.0), jnp.where(pos, 0.0, a_new)), None

    zeros = jnp.zeros_like(init)
    (out, r, _), _ = jax.lax.scan(step, (init, zeros, zeros), (probs, dprobs))
    return out, r


@jax.jit
def _logsf_recursion(probs: jax.Array) -> jax.Array:
    """log Pr[S ≥ v] for v = 0..n by the tail recursion (jit-able, O(n²)).

    Pr[S_i ≥ v] = (1 − q_i) Pr[S_{i−1} ≥ v] + q_i Pr[S_{i−1} ≥ v − 1], in log space from
    Pr[S_0 ≥ v] = 1[v ≤ 0]: every step adds non-negative terms (no 1 − cdf), so every tail keeps
    relative accuracy however small it is, and its derivative in q is finite (it is the form to
    differentiate).

    Args:
      probs: (n,) success probabilities in [0, 1].

    Returns:
      (n + 1,) values; entry v is log Pr[S ≥ v] (entry 0 is 0).
    """
    return jnp.minimum(_tail_recursion(jnp.asarray(probs)), 0.0).at[0].set(0.0)


# --------------------------------------------------------------------------------------------
# Tilted divide and conquer (O(n log² n) per tilt)
# --------------------------------------------------------------------------------------------


def _bucket(n: int) -> int:
    """Padded length so that the jit cache is reused across n: n rounded up to 4, 5, 6 or 7 times
    a power of two (≥ LEAF): at most 25% padding, four compiled programs per doubling of n."""
    step = max(LEAF, 1 << max(0, (n - 1).bit_length() - 3))
    return -(-max(n, 1) // step) * step


def _pad(x: jax.Array, size: int, value=0.0) -> jax.Array:
    """x followed by ``value`` up to ``size`` (static)."""
    return jnp.concatenate([x, jnp.full((size - x.shape[0],), value, dtype=x.dtype)])


def _pmf_divide_conquer(q: jax.Array) -> jax.Array:
    """pmf of PoiBin(q) for q of length N, a multiple of LEAF (absolute error ≈ 1e−16 × peak).

    Exact recursions on blocks of LEAF Bernoullis (vectorised over blocks), then pairwise FFT
    convolutions level by level, all blocks of a level in one batched rfft (an odd block count is
    evened with the identity pmf [1, 0, …]). Two pmfs of length L convolve to length 2L − 1; the
    FFT has length 2(L − 1), so the top entry wraps onto entry 0: both are the exact products
    a_0·b_0 and a_top·b_top, set directly.
    """
    blocks = q.shape[0] // LEAF
    qq = q.reshape(blocks, LEAF)
    zero = jnp.zeros((blocks, 1), q.dtype)

    def leaf_step(j, dp):
        c = jax.lax.dynamic_slice_in_dim(qq, j, 1, axis=1)
        return dp * (1.0 - c) + jnp.concatenate([zero, dp[:, :-1]], axis=1) * c

    dp = jax.lax.fori_loop(0, LEAF, leaf_step,
                           jnp.zeros((blocks, LEAF + 1), q.dtype).at[:, 0].set(1.0))
    while dp.shape[0] > 1:
        if dp.shape[0] % 2:
            dp = jnp.concatenate([dp, jnp.zeros((1, dp.shape[1]), q.dtype).at[0, 0].set(1.0)])
        a, b = dp[0::2], dp[1::2]
        nfft = 2 * (dp.shape[1] - 1)
        conv = jnp.fft.irfft(jnp.fft.rfft(a, nfft, axis=1) * jnp.fft.rfft(b, nfft, axis=1),
                             nfft, axis=1)
        conv = conv.at[:, 0].set(a[:, 0] * b[:, 0])
        dp = jnp.concatenate([conv, (a[:, -1] * b[:, -1])[:, None]], axis=1)
    return dp[0, : q.shape[0] + 1]  # beyond N: identity blocks' (zero) counts


def _denoise(raw: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Zero the FFT round-off outside the pmf's bulk; clip the rest to be non-negative.

    The most negative raw entry measures the round-off floor (true values are ≥ 0). A
    Poisson-binomial pmf is log-concave, hence unimodal: outside the run around the mode where the
    raw pmf exceeds 10 × floor the true values are below that and decay geometrically, while the
    round-off there would otherwise pile up in undamped tail sums (≈ n × floor).

    Returns:
      (pmf, floor).
    """
    idx = jnp.arange(raw.shape[0])
    peak_at = jnp.argmax(raw)
    floor = jnp.maximum(-jnp.min(raw), _tiny(raw.dtype))
    small = raw <= 10.0 * floor
    low = jnp.max(jnp.where(small & (idx < peak_at), idx + 1, 0))
    high = jnp.min(jnp.where(small & (idx > peak_at), idx, raw.shape[0]))
    pmf = jnp.where((idx >= low) & (idx < high), jnp.maximum(raw, 0.0), 0.0)
    return pmf, floor


class _Tilt:
    """One exponential tilt θ of PoiBin(q): the tilted pmf and where it is trustworthy.

    Un-tilting uses the tilted mean μ_θ as reference so that no term of size θ·n is formed:
    log Pr[S = k] = log pmf_θ(k) − θ(k − μ_θ) − Σ_i KL_i, with
    KL_i = θ q_i(θ) − log(1 − q_i + q_i e^θ) ≥ 0 (the tilt's Kullback–Leibler divergence per
    Bernoulli, summed without cancellation).
    """

    def __init__(self, log_q, log_1mq, theta):
        self.theta = theta
        log_mi = jnp.logaddexp(log_1mq, log_q + theta)
        q_theta = jnp.exp(log_q + theta - log_mi)
        self.mu = jnp.sum(q_theta)
        self.neg_kl = jnp.sum(log_mi - theta * q_theta)
        raw = _pmf_divide_conquer(q_theta)
        self.pmf, floor = _denoise(raw)
        peak = jnp.max(self.pmf)
        # Round-off near the bulk is ≈ 10 × the floor seen in the far tails (measured), so a
        # relative accuracy of 1e−10 (with a 10× margin) needs pmf ≥ 1e12 × floor; never wider
        # than WINDOW × peak.
        good = self.pmf >= jnp.maximum(WINDOW * peak, 1e12 * jnp.maximum(floor, 1e-16 * peak))
        size = self.pmf.shape[0]
        self.lo = jnp.argmax(good).astype(jnp.int32)
        self.hi = (size - 1 - jnp.argmax(good[::-1])).astype(jnp.int32)
        self.ks = jnp.arange(size, dtype=self.pmf.dtype)

    def logpmf(self):
        """log Pr[S = k] for every k (trusted on [lo, hi])."""
        return _log_pmf(self.pmf) - self.theta * (self.ks - self.mu) + self.neg_kl

    def logsf(self):
        """log Pr[S ≥ v] for every v, trusted for v in [lo, hi] when θ ≥ 0 (summed from the top:
        every term is non-negative, no cancellation):
        log Pr[S ≥ v] = log T(v) − θ(v − μ_θ) − Σ_i KL_i with T(v) = Σ_{k ≥ v} pmf_θ(k) e^{−θ(k−v)}.
        """
        log_t = _log_decayed_tail_sums(self.pmf, self.theta)
        return jnp.minimum(log_t - self.theta * (self.ks - self.mu) + self.neg_kl, 0.0)


def _log_pmf(x):
    """log x for the (non-negative) tilted pmf and its sums, −inf at 0 with a finite derivative.
    Cheaper than ``safe_log``: a subnormal entry, 1e−308 below the peak that the tilt puts near
    1, may be read as 0."""
    positive = x > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, x, 1.0)), -jnp.inf)


#: Block length of :func:`_log_decayed_tail_sums`.
_SUM_BLOCK = 16
#: Stand-in for log 0 in its block filter (exp of it is 0; far below any log-probability).
_LOG_ZERO = -1e300


def _log_zero(dtype) -> float:
    """:data:`_LOG_ZERO` in ``dtype``: −1e300 in float64, −max/2 in narrower floats (where −1e300
    would overflow to −inf, with numpy's "overflow encountered in cast" at trace time)."""
    return _LOG_ZERO if jnp.dtype(dtype) == jnp.float64 else -0.5 * float(jnp.finfo(dtype).max)


def _tiny(dtype) -> float:
    """A positive floor for divisions: 1e−300 in float64, the smallest normal number in narrower
    floats (1e−300 would flush to 0 there)."""
    return 1e-300 if jnp.dtype(dtype) == jnp.float64 else float(jnp.finfo(dtype).tiny)


def _log_decayed_tail_sums(pmf, theta):
    """log T(v), T(v) = Σ_{k ≥ v} pmf(k) e^{−θ(k−v)} for every v (θ ≥ 0; pmf ≥ 0).

    T(v) = pmf(v) + e^{−θ} T(v + 1), a first-order filter run from the top. Blocked: within
    blocks of B entries by one (B × B) matrix product with the weights e^{−θ j}, j < B (all ≤ 1:
    no overflow; a weight that underflows belongs to a term below 1e−300 of T(v)); across blocks
    by the same filter on the block sums, in log space (a cumulative log-sum-exp over n/B
    entries, centred at the peak block so that no term of size θ·n is formed). Every term is
    non-negative: relative accuracy ≈ B·1e−16.
    """
    size = pmf.shape[0]
    blocks = -(-size // _SUM_BLOCK)
    x = jnp.concatenate([pmf, jnp.zeros(blocks * _SUM_BLOCK - size, pmf.dtype)])
    x = x.reshape(blocks, _SUM_BLOCK)
    j = jnp.arange(_SUM_BLOCK, dtype=pmf.dtype)
    gap = j[:, None] - j[None, :]  # k − v within a block
    weights = jnp.where(gap >= 0, jnp.exp(-theta * jnp.maximum(gap, 0.0)), 0.0)
    local = x @ weights  # (blocks, B): Σ_{k ≥ v, same block} pmf(k) e^{−θ(k−v)}
    # C_b = T(start of block b) = local[b, 0] + e^{−θB} C_{b+1}, in log space, centred at the peak
    # (−inf, for empty blocks, floored at _LOG_ZERO: a logaddexp of two −inf has a NaN derivative)
    b = jnp.arange(blocks, dtype=pmf.dtype)
    centre = jnp.argmax(local[:, 0]).astype(pmf.dtype)
    log_zero = _log_zero(pmf.dtype)
    scaled = jnp.maximum(_log_pmf(local[:, 0]), log_zero) - theta * _SUM_BLOCK * (b - centre)
    log_c = jax.lax.cumlogsumexp(scaled, reverse=True) + theta * _SUM_BLOCK * (b - centre)
    log_next = jnp.concatenate([log_c[1:], jnp.full((1,), log_zero, pmf.dtype)])
    # T(v) = local(v) + e^{−θ(start of next block − v)} C_{next}
    carry = log_next[:, None] - theta * (_SUM_BLOCK - j)[None, :]
    return jnp.logaddexp(_log_pmf(local), carry).reshape(-1)[:size]


class _Prepared:
    """PoiBin(q) for q padded to its bucket: logs, certain and possible counts, mean."""

    def __init__(self, q):
        self.q = _pad(q, _bucket(q.shape[0]))
        self.log_q = safe_log(self.q)
        self.log_1mq = jnp.log1p(-self.q)
        self.logit_q = self.log_q - self.log_1mq
        inner = (self.log_q > -jnp.inf) & (self.q < 1.0)  # q > 0 is False for a flushed subnormal
        self.n_one = jnp.sum(self.q == 1.0, dtype=jnp.int32)
        self.top = self.n_one + jnp.sum(inner, dtype=jnp.int32)  # largest possible count
        self.mean = jnp.sum(self.q)
        self.log_prob_top = jnp.sum(jnp.where(inner, self.log_q, 0.0))  # log Pr[S = top], exact

    def theta_for(self, target):
        """θ with Σ sigmoid(logit q_i + θ) ≈ target, n_one < target < top (safeguarded Newton
        in a bracket; only the tilt's location depends on θ, the un-tilting uses the same θ
        exactly, so a fraction of a standard deviation is enough)."""
        def mean_var(theta):
            s = jax.nn.sigmoid(self.logit_q + theta)
            return jnp.sum(s), jnp.sum(s * (1.0 - s))

        def cond(state):
            _, _, _, it, done = state
            return ~done & (it < 200)

        def body(state):
            theta, lo, hi, it, _ = state
            mean, var = mean_var(theta)
            done = jnp.abs(mean - target) <= jnp.maximum(0.05, 0.02 * jnp.sqrt(var))
            lo = jnp.where(mean < target, theta, lo)
            hi = jnp.where(mean < target, hi, theta)
            step = theta + (target - mean) / jnp.maximum(var, _tiny(var.dtype))
            new = jnp.where((lo < step) & (step < hi), step, 0.5 * (lo + hi))
            return jnp.where(done, theta, new), lo, hi, it + 1, done

        zero = jnp.zeros((), self.q.dtype)
        state = (zero, zero - THETA_MAX, zero + THETA_MAX, 0, jnp.array(False))
        return jax.lax.while_loop(cond, body, state)[0]

    def tilt_at(self, v) -> _Tilt:
        """The tilt whose mean sits at v (θ = 0 for v at or below the mean)."""
        target = jnp.clip(v, self.n_one + 0.5, self.top - 0.5)
        theta = jnp.where(v <= self.mean, 0.0, self.theta_for(target))
        return _Tilt(self.log_q, self.log_1mq, theta)


def _logsf_fft_tilts(q, v):
    """log Pr[S ≥ v] for integer-valued v (any shape) by tilts, v's sharing a tilt when they fall
    in its trusted window (a ``lax.while_loop`` over the smallest v not yet served); also the
    tilt θ that served each v (0 where the value is exact)."""
    prep = _Prepared(q)
    flat = jnp.ravel(v).astype(prep.q.dtype)
    exact = jnp.where(flat <= prep.n_one, 0.0,
                      jnp.where(flat > prep.top, -jnp.inf, prep.log_prob_top))
    done = (flat <= prep.n_one) | (flat >= prep.top)

    def body(state):
        out, thetas, done = state
        v0 = jnp.min(jnp.where(done, jnp.inf, flat))
        tilt = prep.tilt_at(v0)
        upper = jnp.maximum(tilt.hi, v0)
        served = ~done & (flat <= upper)
        idx = jnp.clip(flat, 0, prep.q.shape[0]).astype(jnp.int32)
        return (jnp.where(served, tilt.logsf()[idx], out), jnp.where(served, tilt.theta, thetas),
                done | served)

    out, thetas, _ = jax.lax.while_loop(lambda s: jnp.any(~s[2]), body,
                                        (exact, jnp.zeros_like(exact), done))
    return out.reshape(jnp.shape(v)), thetas


@jax.custom_jvp
def _logsf_fft(q, v):
    """:func:`_logsf_fft_tilts` without the tilts; differentiable in q (see the JVP below)."""
    return _logsf_fft_tilts(q, v)[0]


@_logsf_fft.defjvp
def _logsf_fft_jvp(primals, tangents):
    """The tail's derivative in q, through the FFT at the tilts the value used, held fixed.

    For any fixed θ the un-tilted value is exact (θ only moves where the tilted pmf is
    accurate), so ∂/∂q log Pr[S ≥ v] is the derivative of the tilted formula at that θ; the
    search for θ (a ``while_loop``, which reverse mode cannot differentiate) stays outside.
    Counts whose value is exact (v ≤ n_one, v ≥ top) are differentiated in closed form; their
    FFT branch is evaluated at a count inside the support so that no ∞·0 reaches the gradient.
    """
    q, v = primals
    if jnp.result_type(q) != jnp.float64:
        raise TypeError(
            "the derivative of the FFT Poisson-binomial tail (method='fft', or 'auto' with "
            f"n > {RECURSION_MAX_N}) needs float64, got {jnp.result_type(q)}: in float32 the FFT "
            "round-off (about 1e-7 of the tilted pmf's peak) makes forward mode NaN and reverse "
            "mode off by about 0.1%. Differentiate inside `with jax.enable_x64(True):` (float64 "
            "inputs), or pass method='recursion' (O(n²), accurate in float32).")
    out, thetas = _logsf_fft_tilts(q, v)
    flat = jnp.ravel(v)

    def at_fixed_tilts(q):
        prep = _Prepared(q)
        f = flat.astype(prep.q.dtype)
        edge = (f <= prep.n_one) | (f >= prep.top)
        inside = jnp.clip(f, prep.n_one + 1, jnp.maximum(prep.top - 1, prep.n_one + 1))
        idx = jnp.clip(jnp.where(edge, inside, f), 0, prep.q.shape[0]).astype(jnp.int32)
        stopped = jax.lax.stop_gradient(thetas)
        tilted = jax.lax.map(
            lambda a: _Tilt(prep.log_q, prep.log_1mq, a[0]).logsf()[a[1]], (stopped, idx))
        exact = jnp.where(f <= prep.n_one, 0.0,
                          jnp.where(f > prep.top, -jnp.inf, prep.log_prob_top))
        return jnp.where(edge, exact, tilted)

    _, dout = jax.jvp(at_fixed_tilts, (q,), (tangents[0],))
    return out, dout.reshape(jnp.shape(v)).astype(out.dtype)


def _logpmf_fft(q):
    """log pmf for k = 0..n (n = q's length): tilts placed so that their trusted windows cover
    the possible counts n_one..top, upwards then downwards from the untilted one."""
    n = q.shape[0]
    prep = _Prepared(q)
    ks = jnp.arange(prep.q.shape[0] + 1, dtype=jnp.int32)
    out = jnp.where((ks < prep.n_one) | (ks > prep.top), -jnp.inf, jnp.nan)
    out = jnp.where(ks == prep.n_one, jnp.sum(jnp.where(prep.q < 1.0, prep.log_1mq, 0.0)), out)
    out = jnp.where(ks == prep.top, prep.log_prob_top, out)
    base = prep.tilt_at(prep.mean)
    fill = (ks >= base.lo) & (ks <= base.hi) & (ks > prep.n_one) & (ks < prep.top)
    out = jnp.where(fill, base.logpmf(), out)

    def up(state):
        out, edge = state
        tilt = prep.tilt_at(jnp.minimum(edge, prep.top - 0.5).astype(prep.q.dtype))
        fill = (ks >= edge) & (ks <= jnp.maximum(tilt.hi, edge)) & (ks < prep.top)
        return jnp.where(fill, tilt.logpmf(), out), jnp.maximum(tilt.hi, edge + 1)

    def down(state):
        out, edge = state
        theta = prep.theta_for(jnp.maximum(edge, prep.n_one + 0.5).astype(prep.q.dtype))
        tilt = _Tilt(prep.log_q, prep.log_1mq, theta)
        fill = (ks <= edge) & (ks >= jnp.minimum(tilt.lo, edge)) & (ks > prep.n_one)
        return jnp.where(fill, tilt.logpmf(), out), jnp.minimum(tilt.lo, edge - 1)

    out, _ = jax.lax.while_loop(lambda s: s[1] < prep.top - 1, up, (out, base.hi))
    out, _ = jax.lax.while_loop(lambda s: s[1] > prep.n_one + 1, down, (out, base.lo))
    return jnp.minimum(out, 0.0)[: n + 1]


def _bahadur_rao_crossing(prep: _Prepared, log_gamma):
    """Approximate v with log Pr[S ≥ v] = log γ (upper tail), to place the first tilt.

    Bahadur–Rao for a lattice variable tilted to mean v = μ(θ):
    log Pr[S ≥ v] ≈ log M(θ) − θ μ(θ) − log((1 − e^{−θ}) σ(θ) sqrt(2π)). Solved for θ by
    safeguarded Newton (the leading term has derivative −θ σ²(θ)); only a starting point.
    """
    tiny = _tiny(prep.q.dtype)
    def parts(theta):
        log_mi = jnp.logaddexp(prep.log_1mq, prep.log_q + theta)
        s = jnp.exp(prep.log_q + theta - log_mi)
        mean, var = jnp.sum(s), jnp.sum(s * (1.0 - s))
        approx = (jnp.sum(log_mi - theta * s)
                  - jnp.log(-jnp.expm1(-theta) * jnp.sqrt(2.0 * jnp.pi * jnp.maximum(var, tiny))))
        return approx - log_gamma, mean, var

    var0 = jnp.sum(prep.q * (1.0 - prep.q))
    hi0 = jnp.maximum(1e-6, jnp.sqrt(-2.0 * log_gamma / jnp.maximum(var0, tiny)))

    def widen(state):
        lo, hi = state
        return hi, 2.0 * hi

    lo, hi = jax.lax.while_loop(lambda s: (parts(s[1])[0] > 0) & (s[1] < 1e4), widen,
                                (jnp.asarray(1e-12, prep.q.dtype), hi0.astype(prep.q.dtype)))

    def body(state):
        theta, lo, hi, it, _ = state
        g, _, var = parts(theta)
        done = jnp.abs(g) < 1e-3
        lo, hi = jnp.where(g > 0, theta, lo), jnp.where(g > 0, hi, theta)
        step = theta + g / jnp.maximum(theta * var, tiny)
        new = jnp.where((lo < step) & (step < hi), step, 0.5 * (lo + hi))
        return jnp.where(done, theta, new), lo, hi, it + 1, done

    theta = jax.lax.while_loop(lambda s: ~s[4] & (s[3] < 60), body,
                               (0.5 * (lo + hi), lo, hi, 0, jnp.array(False)))[0]
    return parts(theta)[1]


def _isf_fft(q, log_gamma):
    """v_γ = min{v : log Pr[S ≥ v] ≤ log γ} by tilted evaluations that bracket the crossing.

    The bracket a < v_γ ≤ b starts as (n_one, top) (Pr[S ≥ n_one] = 1 > γ; Pr[S ≥ top] is exact);
    each tilt gives trusted log sf on its window [lo, hi], which tightens the bracket; the next
    tilt is placed by a secant step on log sf from the window's edge (log sf is concave for the
    log-concave Poisson binomial, so the step overshoots at worst and the next window brackets),
    the first one beyond the untilted window by Bahadur–Rao. Every b is a v whose tail is known to
    be ≤ γ, so the result is sound even if the loop stopped at its iteration cap.
    """
    prep = _Prepared(q)
    dtype = prep.q.dtype
    size = prep.q.shape[0] + 1
    ks = jnp.arange(size, dtype=jnp.int32)

    def cond(state):
        a, b, _, it = state
        return (b > a + 1) & (it < 400)

    def body(state):
        a, b, v_guess, it = state
        tilt = prep.tilt_at(v_guess)
        logsf = tilt.logsf()
        lo = jnp.where(tilt.theta == 0.0, 0,
                       jnp.minimum(tilt.lo, jnp.floor(v_guess).astype(jnp.int32)))
        hi = jnp.minimum(jnp.maximum(tilt.hi, jnp.ceil(v_guess).astype(jnp.int32)), prep.top)
        window = (ks >= lo) & (ks <= hi)
        above, below = window & (logsf > log_gamma), window & (logsf <= log_gamma)
        a = jnp.maximum(a, jnp.max(jnp.where(above, ks, -1))).astype(jnp.int32)
        b = jnp.minimum(b, jnp.min(jnp.where(below, ks, size))).astype(jnp.int32)
        any_below = jnp.any(below)
        at = lambda k: logsf[jnp.clip(k, 0, size - 1)]  # noqa: E731
        up_slope = jnp.where(hi > lo, at(hi) - at(hi - 1), -1.0)
        down_slope = jnp.where(hi > lo, at(lo + 1) - at(lo), -1.0)
        guess = jnp.where(
            any_below,
            lo + (log_gamma - at(lo)) / jnp.minimum(down_slope, -1e-12),
            jnp.where(it == 0, _bahadur_rao_crossing(prep, log_gamma),
                      hi + (log_gamma - at(hi)) / jnp.minimum(up_slope, -1e-12)))
        guess = jnp.clip(guess, a + 1.0, b - 1.0)
        v_next = jnp.where(jnp.abs(guess - v_guess) >= 0.5, guess, 0.5 * (a + b))
        return a, b, v_next.astype(dtype), it + 1

    state = (prep.n_one, prep.top, prep.mean, 0)
    _, b, _, _ = jax.lax.while_loop(cond, body, state)
    return jnp.where(prep.log_prob_top > log_gamma, prep.top + 1, b).astype(jnp.int32)


# --------------------------------------------------------------------------------------------
# Cores (pure jnp; the public functions below validate, then call them)
# --------------------------------------------------------------------------------------------


def _rounding_margin(dtype, size: int) -> float:
    """Extra log margin for a tail computed in a dtype narrower than float64 (inside the caller's
    ``jit``/``vmap`` with x64 off): 16·n·ulp, above the relative error of β and of the n-step
    recursion in that dtype, so that a threshold searched on the computed tail stays on the
    safe side (v_γ never too small, an inverse ε never too large). 0 in float64, where
    :data:`ISF_LOG_MARGIN` covers the round-off."""
    dtype = jnp.dtype(dtype)
    return 0.0 if dtype == jnp.float64 else 16.0 * size * float(jnp.finfo(dtype).eps)


def _choose(method: str, n: int) -> str:
    check_choice("method", method, _METHODS)
    if method == "auto":
        return "recursion" if n <= RECURSION_MAX_N else "fft"
    return method


@partial(jax.jit, static_argnames="method")
def _logpmf_core(probs: jax.Array, method: str = "auto") -> jax.Array:
    """log Pr[S = k], k = 0..n, with no validation (jit/vmap-able; the precision of ``probs``)."""
    probs = jnp.asarray(probs)
    n = probs.shape[0]
    if _choose(method, n) == "recursion":
        return _logpmf_recursion(_pad(probs, _bucket(n)))[: n + 1]
    return _logpmf_fft(probs)


@partial(jax.jit, static_argnames="method")
def _logsf_core(probs: jax.Array, v: jax.Array, method: str = "auto") -> jax.Array:
    """log Pr[S ≥ v] (shape of ``v``; v ≤ 0 gives 0, v > n gives −inf, a fractional v is read
    as ceil(v)), with no validation (jit/vmap-able)."""
    probs = jnp.asarray(probs)
    n = probs.shape[0]
    v = jnp.ceil(jnp.asarray(v, dtype=jnp.result_type(probs, float)))
    if _choose(method, n) == "recursion":
        logsf = _logsf_recursion(_pad(probs, _bucket(n)))
        inner = logsf[jnp.clip(v, 0, logsf.shape[0] - 1).astype(jnp.int32)]
        return jnp.where(v <= 0, 0.0, jnp.where(v > n, -jnp.inf, inner))
    return jnp.where(v > n, -jnp.inf, _logsf_fft(probs, v))


@partial(jax.jit, static_argnames="method")
def _isf_core(probs: jax.Array, log_gamma: jax.Array, method: str = "auto") -> jax.Array:
    """v_γ = min{v ∈ 0..n : log Pr[S ≥ v] ≤ log γ − ISF_LOG_MARGIN} (int32; n + 1 if none;
    log γ = −inf for γ = 0), with no validation (jit/vmap-able)."""
    probs = jnp.asarray(probs)
    n = probs.shape[0]
    dtype = jnp.result_type(probs, float)
    log_gamma = (jnp.asarray(log_gamma, dtype=dtype) - ISF_LOG_MARGIN
                 - _rounding_margin(dtype, _bucket(n)))
    if _choose(method, n) == "recursion":
        # v_γ = #{v ∈ 0..n : log Pr[S ≥ v] > log γ} (the tail is non-increasing in v)
        logsf = _logsf_recursion(_pad(probs, _bucket(n)))
        return jnp.sum(logsf[: n + 1] > log_gamma).astype(jnp.int32)
    return _isf_fft(probs, log_gamma)


def _x64(fn, probs, *args, **kwargs):
    """Call the core ``fn(probs, *args, **kwargs)``: traced arguments go straight through;
    concrete ones run in float64 (x64 scoped to the call) with probs padded with zeros to its
    bucket (a q = 0 Bernoulli never adds to S), so that one compiled program serves every n of
    a bucket and a call under the caller's transform (which pads inside the core) computes the
    same arrays."""
    if is_traced(probs, *args, *kwargs.values()):
        return fn(jnp.asarray(probs), *args, **kwargs)
    with jax.enable_x64(True):
        q = np.asarray(probs, dtype=np.float64)
        q = jnp.asarray(np.concatenate([q, np.zeros(_bucket(q.size) - q.size)]))
        to64 = lambda a: a if isinstance(a, str) else jnp.asarray(np.asarray(a, np.float64))  # noqa: E731
        return fn(q, *[to64(a) for a in args], **{k: to64(a) for k, a in kwargs.items()})


def _padded_counts(v):
    """Concrete counts v flattened and padded with zeros to a bucket length (zeros are served
    at once), and the function that undoes it on the result."""
    v = np.asarray(v, dtype=np.float64)
    flat = v.ravel()
    padded = np.concatenate([flat, np.zeros(_bucket(flat.size) - flat.size)])
    return padded, lambda out: out[: flat.size].reshape(v.shape)


def _check_probs(probs):
    q = as_vector("probs", probs)
    check_probability("probs", q)
    return q


def _check_counts(name: str, v):
    """Finite integer-valued counts (a fractional count has no meaning for S)."""
    arr = check_finite(name, v)
    if not is_traced(arr) and (arr != np.round(arr)).any():
        bad = arr[arr != np.round(arr)].ravel()[0]
        raise ValueError(f"{name} must hold integer counts, got {float(bad)!r}")
    return arr


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def poisson_binomial_logpmf(probs: ArrayLike, *, method: str = "auto") -> jax.Array:
    """log Pr[S = k] for k = 0..n, S ~ PoiBin(probs), each entry to relative accuracy.

    Works inside ``jit``/``vmap`` (then no validation; enable x64 for float64).

    Args:
      probs: (n,) success probabilities in [0, 1] (float32 and bfloat16 accepted; computed in
        float64).
      method: ``"recursion"`` (exact log-space recursion, O(n²)), ``"fft"`` (tilted divide and
        conquer, O(n log² n) per tilt; the whole pmf needs tilts covering 0..n, about
        2·sqrt(n) of them for spread-out probabilities, so prefer :func:`poisson_binomial_tail`
        when only tails are needed) or ``"auto"`` (recursion for n ≤ ``RECURSION_MAX_N``).

    Returns:
      (n + 1,) float64 JAX array of log-probabilities (−inf for impossible counts).

    Raises:
      ValueError: probs outside [0, 1], NaN, not 1-D, or an unknown method.

    Examples:
      >>> import numpy as np
      >>> lp = poisson_binomial_logpmf([0.1, 0.2, 0.2])
      >>> np.round(np.exp(np.asarray(lp)), 6).tolist()
      [0.576, 0.352, 0.068, 0.004]
    """
    q = _check_probs(probs)
    check_choice("method", method, _METHODS)
    if is_traced(q):
        return _logpmf_core(q, method=method)
    return _x64(_logpmf_core, q, method=method)[: q.size + 1]


def poisson_binomial_tail(probs: ArrayLike, v: ArrayLike, *, log: bool = False,
                          method: str = "auto") -> jax.Array:
    """Pr[S ≥ v] (or its log) for S ~ PoiBin(probs), with relative accuracy in deep tails.

    The tail is summed from the top (never 1 − cdf), so values down to ≈ 1e−300 (and far below,
    with ``log=True``) keep ≈ 1e−12 relative accuracy. v ≤ 0 gives 1, v > n gives 0. Works
    inside ``jit``/``vmap``/``grad`` (then no validation; enable x64 for float64). Derivatives
    in probs are exact also at q_i ∈ {0, 1} (∂ Pr[S ≥ v]/∂q_i = Pr[S_{−i} = v − 1]); at an
    impossible count (Pr = 0) they are reported as 0. The FFT path is differentiated in float64
    only (see Raises).

    Args:
      probs: (n,) success probabilities in [0, 1].
      v: scalar or array of integer thresholds.
      log: return log Pr[S ≥ v] (−inf for v > n).
      method: ``"auto"``, ``"recursion"`` or ``"fft"`` (see :func:`poisson_binomial_logpmf`).

    Returns:
      float64 JAX array with the shape of ``v``.

    Raises:
      ValueError: bad probs (outside [0, 1], NaN, not 1-D), v not finite integers, unknown
        method.
      TypeError: a derivative of the FFT path (n > ``RECURSION_MAX_N``) in float32, where its
        round-off makes it wrong; the message names the fix (``jax.enable_x64(True)``, or
        ``method="recursion"``).

    Examples:
      >>> float(poisson_binomial_tail([0.5] * 10, 10))
      0.0009765625
      >>> round(float(poisson_binomial_tail([1e-3] * 300, 300, log=True)), 9)  # 300 log(1e-3)
      -2072.326583695
    """
    q = _check_probs(probs)
    v = _check_counts("v", v)
    log = check_bool("log", log)
    check_choice("method", method, _METHODS)
    if is_traced(q, v):
        out = _logsf_core(jnp.asarray(q), v, method=method)
        return out if log else jnp.exp(out)
    padded, unpad = _padded_counts(v)
    out = unpad(np.asarray(_x64(_logsf_core, q, padded, method=method)))
    with jax.enable_x64(True):  # numpy's exp keeps subnormal tails (XLA on CPU flushes them)
        return jnp.asarray(out if log else np.exp(out))


@overload
def poisson_binomial_isf(probs: Concrete, gamma: float, *, method: str = ...) -> int: ...
@overload
def poisson_binomial_isf(probs: ArrayLike | Sequence[float], gamma: ArrayLike, *,
                         method: str = ...) -> int | jax.Array: ...
def poisson_binomial_isf(probs: ArrayLike | Sequence[float], gamma: ArrayLike, *,
                         method: str = "auto") -> int | jax.Array:
    """v_γ = min{v ∈ 0..n : Pr[S ≥ v] ≤ γ}; n + 1 when no v ≤ n qualifies.

    Conservative at ties: the computed tail must be ≤ γ·e^{−1e−9} (``ISF_LOG_MARGIN``; in
    float32 under the caller's ``jit``/``vmap``, a further 16·n ulp), so round-off never gives a
    v one too small; a γ within a relative 1e−9 of a tail value gives the next v.

    Args:
      probs: (n,) success probabilities in [0, 1].
      gamma: level in [0, 1) (γ = 0 asks for the smallest v with Pr[S ≥ v] = 0).
      method: ``"auto"``, ``"recursion"`` or ``"fft"``.

    Returns:
      Python int (an int32 array inside ``jit``/``vmap``).

    Raises:
      ValueError: bad probs, gamma outside [0, 1), unknown method.

    Examples:
      >>> poisson_binomial_isf([0.5] * 10, 0.05)  # Pr[Bin(10, 1/2) ≥ 9] = 0.0107
      9
    """
    q = _check_probs(probs)
    gamma = as_scalar("gamma", gamma)
    check_probability("gamma", gamma, open_high=True)
    check_choice("method", method, _METHODS)
    if is_traced(q, gamma):
        return _isf_core(q, jnp.log(gamma), method=method)
    return int(_x64(_isf_core, q, math.log(gamma) if gamma > 0 else -math.inf, method=method))
