"""Exact Poisson-binomial distribution with relative accuracy in deep tails.

S = Σ_i B_i with independent B_i ~ Bernoulli(q_i), i = 1..n. Two exact algorithms:

* **recursion** (small n, jit-compiled JAX): the pmf recursion
  ``dp ← dp·(1 − q) + shift(dp)·q`` run in log space with ``logaddexp``. Every step adds
  non-negative terms, so every entry of the pmf keeps relative accuracy (≈ n·1e−16) however small
  it is, down to the smallest float64 logarithm; tails are reverse cumulative log-sum-exps, summed
  from the top. O(n²) work (one scan step per Bernoulli): ``method="auto"`` uses it for
  n ≤ ``RECURSION_MAX_N`` = 256, beyond which the FFT path is faster and, for tails, equally
  accurate (both are tested against mpmath).
* **fft** (large n, host numpy/scipy): ShiftConvolve-style divide and conquer (Peres, Lee and
  Keich 2020). To evaluate Pr[S ≥ v] the distribution is *exponentially tilted* so that its mean
  sits at v: tilting every Bernoulli by e^{θk} gives again a Poisson-binomial, with
  q_i(θ) = sigmoid(logit q_i + θ), and

      Pr[S = k] = Pr[S_θ = k] · exp(log M(θ) − θ k),   log M(θ) = Σ_i log(1 − q_i + q_i e^θ).

  The tilted pmf is computed with exact float64 recursions on blocks of ``LEAF`` Bernoullis
  combined pairwise by FFT convolution (scipy.fft, float64). FFT round-off is ≈ 1e−16 *relative
  to the peak* of the tilted pmf, and the peak sits at v, so the terms that make up the tail keep
  a relative accuracy ≈ 1e−13 after un-tilting; the tail is then summed from the top,
  Σ_{k ≥ v} Pr[S_θ = k] e^{−θ(k−v)}, never as 1 − cdf. Each tilt is accurate in a window of
  k around v (where the tilted pmf is ≥ ``WINDOW`` × its peak); several requested v share a tilt
  when they fall in its window. O(n log² n) per tilt.

Why host code: the FFT path runs a data-dependent number of tilts, with block sizes that change
level by level; numpy/scipy.fft in float64 on the host does this with no recompilation and is
faster than ``jnp.fft`` on CPU (benchmarks/README.md). The results are returned as JAX arrays, and the
O(n²) recursion — the form to call inside ``jax.jit`` — is :func:`poisson_binomial_logpmf_exact`.

Precision: everything runs in float64 (numpy float64 on the host; the JAX recursion inside a
``jax.enable_x64(True)`` scope in the public wrappers). float32 inputs are accepted and upcast.
Results are non-negative (probabilities) or ≤ 0 (their logarithms).

References:
  Peres, Lee, Keich. "Exactly computing the tail of the Poisson-Binomial distribution."
  ACM TOMS 47(4), 2021. arXiv:2004.07429.
  Hong. "On computing the distribution function for the Poisson binomial distribution."
  CSDA 59, 2013 (the DFT-CF method whose round-off this module avoids).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.fft
import scipy.signal
from jax.typing import ArrayLike
from scipy.special import expit, log_expit, logit

from jaxaudit._validation import (
    as_vector,
    check_bool,
    check_choice,
    check_finite,
    check_probability,
)

__all__ = [
    "RECURSION_MAX_N",
    "poisson_binomial_logpmf",
    "poisson_binomial_logpmf_exact",
    "poisson_binomial_logsf_exact",
    "poisson_binomial_tail",
    "poisson_binomial_isf",
]

#: Largest n (after removing q = 0 and q = 1) for which ``method="auto"`` uses the recursion.
RECURSION_MAX_N = 256
#: Bernoullis per exact leaf block of the FFT path.
LEAF = 16
#: A tilt is trusted where the tilted pmf is at least WINDOW × its peak and 1e12 × the FFT
#: round-off floor (measured from the most negative raw FFT value: ≈ 4e−16 × peak at n = 10^3,
#: 2e−14 × peak at n = 10^6); the relative error there is ≲ 1e−10.
WINDOW = 1e-3
_LOG_WINDOW = math.log(WINDOW)
#: Safety margin of the count bounds, on the log scale: v_γ is the smallest v whose *computed*
#: tail is ≤ γ·e^{−ISF_LOG_MARGIN}. The engines' tails carry a relative error ≲ 1e−10 in either
#: direction, so without a margin a γ within that error of Pr[S ≥ v] (e.g. γ = 11/1024 − 1 ulp for
#: Bin(10, 1/2), whose Pr[S ≥ 9] is 11/1024) could give a v_γ one too small. With it, v_γ is never
#: below the exact definition's value and exceeds it only when γ lies within a relative 1e−9 of a
#: tail value (ties, too, are resolved upward).
ISF_LOG_MARGIN = 1e-9
_METHODS = ("auto", "recursion", "fft")


# --------------------------------------------------------------------------------------------
# JAX recursion (jit-able)
# --------------------------------------------------------------------------------------------


@jax.jit
def poisson_binomial_logpmf_exact(probs: jax.Array) -> jax.Array:
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
      ...     lp = poisson_binomial_logpmf_exact(jnp.array([0.5, 0.5]))
      >>> [round(float(x), 6) for x in jnp.exp(lp)]
      [0.25, 0.5, 0.25]
    """
    probs = jnp.asarray(probs)
    n = probs.shape[0]
    log_q = jnp.log(probs)
    log_1mq = jnp.log1p(-probs)
    init = jnp.full((n + 1,), -jnp.inf, dtype=log_q.dtype).at[0].set(0.0)
    neg_inf = jnp.full((1,), -jnp.inf, dtype=log_q.dtype)

    def step(lp, lq):
        shifted = jnp.concatenate([neg_inf, lp[:-1]])
        return jnp.logaddexp(lp + lq[1], shifted + lq[0]), None

    lp, _ = jax.lax.scan(step, init, (log_q, log_1mq))
    return lp


@jax.jit
def poisson_binomial_logsf_exact(probs: jax.Array) -> jax.Array:
    """log Pr[S ≥ v] for v = 0..n by the recursion, summed from the top (jit-able).

    Args:
      probs: (n,) success probabilities in [0, 1].

    Returns:
      (n + 1,) values; entry v is log Pr[S ≥ v] (entry 0 is 0).
    """
    lp = poisson_binomial_logpmf_exact(probs)
    logsf = jax.lax.cumlogsumexp(lp, reverse=True)
    return jnp.minimum(logsf, 0.0)


def _bucket(n: int) -> int:
    """Padded length (a power of two ≥ 16) so that the jit cache is reused across n."""
    return max(16, 1 << max(0, (n - 1).bit_length()))


def _pad_to_bucket(q: np.ndarray) -> np.ndarray:
    """q followed by zeros up to its bucket length (a q = 0 Bernoulli never adds to S)."""
    padded = np.zeros(_bucket(q.size))
    padded[: q.size] = q
    return padded


def _recursion_on_host(fn, q: np.ndarray) -> np.ndarray:
    """Host entry to a jitted recursion ``fn`` (logpmf or logsf): pad q to its bucket, call in
    float64 (x64 scoped to the call), return the (n + 1,) float64 entries for S over q."""
    with jax.enable_x64(True):
        out = fn(jnp.asarray(_pad_to_bucket(q), dtype=jnp.float64))
        return np.asarray(out)[: q.size + 1]


# --------------------------------------------------------------------------------------------
# Host divide and conquer with exponential tilting
# --------------------------------------------------------------------------------------------


def _pmf_divide_conquer(q: np.ndarray) -> np.ndarray:
    """pmf of PoiBin(q) (float64, absolute error ≈ 1e−16 × peak), length q.size + 1.

    Exact float64 recursions on blocks of LEAF Bernoullis (vectorised over blocks), then
    pairwise FFT convolutions level by level, all blocks of a level in one batched rfft.
    """
    m = q.size
    if m == 0:
        return np.ones(1)
    blocks = -(-m // LEAF)
    qq = np.zeros(blocks * LEAF)
    qq[:m] = q
    qq = qq.reshape(blocks, LEAF)
    dp = np.zeros((blocks, LEAF + 1))
    dp[:, 0] = 1.0
    for j in range(LEAF):
        c = qq[:, j : j + 1]
        dp[:, 1 : j + 2] = dp[:, 1 : j + 2] * (1.0 - c) + dp[:, 0 : j + 1] * c
        dp[:, 0] *= 1.0 - c[:, 0]
    while dp.shape[0] > 1:
        if dp.shape[0] % 2:
            identity = np.zeros((1, dp.shape[1]))
            identity[0, 0] = 1.0
            dp = np.concatenate([dp, identity])
        length = dp.shape[1]
        out = 2 * length - 1
        nfft = scipy.fft.next_fast_len(out, real=True)
        fa = scipy.fft.rfft(dp[0::2], nfft, axis=1)
        fa *= scipy.fft.rfft(dp[1::2], nfft, axis=1)
        dp = scipy.fft.irfft(fa, nfft, axis=1)[:, :out]
    return dp[0, : m + 1]


def _denoise(raw: np.ndarray) -> np.ndarray:
    """Zero the FFT round-off outside the pmf's bulk; clip the rest to be non-negative.

    The most negative raw entry measures the round-off floor (true values are ≥ 0). A
    Poisson-binomial pmf is log-concave, hence unimodal: outside the run around the mode where the
    raw pmf exceeds 10 × floor the true values are below that and decay geometrically, while the
    round-off there would otherwise pile up in undamped tail sums (≈ n × floor).
    """
    peak_at = int(np.argmax(raw))
    floor = max(-float(raw.min()), 1e-300)
    big = raw > 10.0 * floor
    low = peak_at - int(np.argmin(big[peak_at::-1])) + 1 if not big[: peak_at + 1].all() else 0
    high = peak_at + int(np.argmin(big[peak_at:])) if not big[peak_at:].all() else raw.size
    pmf = np.zeros_like(raw)
    pmf[low:high] = np.maximum(raw[low:high], 0.0)
    return pmf


class _Tilt:
    """One exponential tilt θ of PoiBin(q): the tilted pmf and where it is trustworthy."""

    def __init__(self, logit_q: np.ndarray, log_1mq: np.ndarray, theta: float):
        self.theta = float(theta)
        self.log_m = float(np.sum(log_1mq + np.logaddexp(0.0, logit_q + theta)))
        raw = _pmf_divide_conquer(expit(logit_q + theta))
        self.pmf = _denoise(raw)
        peak = self.pmf.max()
        floor = max(-float(raw.min()), 1e-16 * peak)
        # Round-off near the bulk is ≈ 10 × the floor seen in the far tails (measured), so a
        # relative accuracy of 1e−10 (with a 10× margin) needs pmf ≥ 1e12 × floor; never wider
        # than WINDOW × peak.
        good = np.nonzero(self.pmf >= max(WINDOW * peak, 1e12 * floor))[0]
        self.lo, self.hi = int(good[0]), int(good[-1])

    def logpmf(self, ks: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.pmf[ks]) + self.log_m - self.theta * ks

    def logsf(self) -> np.ndarray:
        """log Pr[S ≥ v] for all v = 0..m, trusted for v in [lo, hi] when θ ≥ 0.

        S(v) = Σ_{k ≥ v} pmf_θ(k) e^{−θ(k−v)} obeys S(v) = pmf_θ(v) + e^{−θ} S(v + 1): a stable
        first-order filter run from the top (no cancellation: all terms are non-negative).
        """
        decay = math.exp(-self.theta)
        s = scipy.signal.lfilter([1.0], [1.0, -decay], self.pmf[::-1])[::-1]
        ks = np.arange(self.pmf.size)
        with np.errstate(divide="ignore"):
            out = np.log(np.maximum(s, 0.0)) + self.log_m - self.theta * ks
        return np.minimum(out, 0.0)


def _solve_tilt(logit_q: np.ndarray, target: float) -> float:
    """θ with Σ sigmoid(logit q_i + θ) ≈ target (safeguarded Newton; 0 < target < m).

    Only the *location* of the tilt depends on θ (the un-tilting uses the same θ exactly), so a
    tolerance of a fraction of a standard deviation is enough.
    """
    def mean_var(theta):
        s = expit(logit_q + theta)
        return float(s.sum()), float((s * (1.0 - s)).sum())

    lo, hi = -1.0, 1.0
    while mean_var(lo)[0] > target:
        lo *= 2.0
    while mean_var(hi)[0] < target:
        hi *= 2.0
    theta = 0.0 if lo < 0.0 < hi else 0.5 * (lo + hi)
    for _ in range(100):
        mean, var = mean_var(theta)
        if abs(mean - target) <= max(0.05, 0.02 * math.sqrt(var)):
            break
        if mean < target:
            lo = theta
        else:
            hi = theta
        step = theta + (target - mean) / max(var, 1e-300)
        theta = step if lo < step < hi else 0.5 * (lo + hi)
    return theta


class _Prepared:
    """PoiBin(q) with the certain (q = 1) and impossible (q = 0) Bernoullis removed."""

    def __init__(self, probs):
        q = as_vector("probs", probs)
        check_probability("probs", q)
        self.n = q.size
        self.n_one = int(np.sum(q == 1.0))
        self.q = q[(q > 0.0) & (q < 1.0)]
        self.m = self.q.size
        with np.errstate(divide="ignore"):
            self.logit_q = logit(self.q)
        self.log_1mq = np.log1p(-self.q)
        self.mean = float(self.q.sum())

    def tilt_at(self, v: float) -> _Tilt:
        theta = 0.0 if v <= self.mean else _solve_tilt(self.logit_q, min(v, self.m - 0.5))
        return _Tilt(self.logit_q, self.log_1mq, theta)

    def log_prob_all(self) -> float:
        """log Pr[S' = m] = Σ log q_i (exact)."""
        return float(np.sum(log_expit(self.logit_q)))


def _logsf_fft(prep: _Prepared, vs: np.ndarray) -> np.ndarray:
    """log Pr[S' ≥ v] for integer v in 1..m, grouping v's by shared tilts."""
    out = np.full(vs.shape, np.nan)
    todo = np.unique(vs)
    while todo.size:
        v0 = int(todo[0])
        if v0 >= prep.m:
            out[vs == v0] = prep.log_prob_all()
            todo = todo[1:]
            continue
        tilt = prep.tilt_at(v0)
        logsf = tilt.logsf()
        upper = max(tilt.hi, v0)
        served = todo[todo <= upper]
        for v in served:
            out[vs == v] = logsf[int(v)]
        todo = np.setdiff1d(todo, served)
    return out


def _logpmf_fft(prep: _Prepared) -> np.ndarray:
    """log pmf of S' for k = 0..m: tilts placed so that their trusted windows cover 0..m."""
    m = prep.m
    out = np.full(m + 1, np.nan)
    out[0] = float(prep.log_1mq.sum())
    out[m] = prep.log_prob_all()
    base = prep.tilt_at(prep.mean)
    ks = np.arange(base.lo, base.hi + 1)
    out[ks] = base.logpmf(ks)
    # Upward: each new tilt centred at the upper edge of the covered range.
    edge = base.hi
    while edge < m - 1:
        tilt = _Tilt(prep.logit_q, prep.log_1mq, _solve_tilt(prep.logit_q, min(edge, m - 0.5)))
        ks = np.arange(edge, max(tilt.hi, edge) + 1)
        out[ks] = tilt.logpmf(ks)
        edge = max(tilt.hi, edge + 1)
    edge = base.lo
    while edge > 1:
        tilt = _Tilt(prep.logit_q, prep.log_1mq, _solve_tilt(prep.logit_q, max(edge, 0.5)))
        ks = np.arange(min(tilt.lo, edge), edge + 1)
        out[ks] = tilt.logpmf(ks)
        edge = min(tilt.lo, edge - 1)
    return np.minimum(out, 0.0)


def _bahadur_rao_crossing(prep: _Prepared, log_gamma: float) -> float:
    """Approximate v with log Pr[S' ≥ v] = log γ (upper tail), to place the first tilt.

    Bahadur–Rao for a lattice variable tilted to mean v = μ(θ):
    log Pr[S' ≥ v] ≈ log M(θ) − θ μ(θ) − log((1 − e^{−θ}) σ(θ) sqrt(2π)). Solved for θ by
    safeguarded Newton (the leading term has derivative −θ σ²(θ)); only a starting point.
    """
    def parts(theta):
        s = expit(prep.logit_q + theta)
        mean, var = float(s.sum()), float((s * (1.0 - s)).sum())
        log_m = float(np.sum(prep.log_1mq + np.logaddexp(0.0, prep.logit_q + theta)))
        approx = (log_m - theta * mean
                  - math.log(-math.expm1(-theta) * math.sqrt(2.0 * math.pi * max(var, 1e-300))))
        return approx - log_gamma, mean, var

    var0 = float((prep.q * (1.0 - prep.q)).sum())
    lo, hi = 1e-12, max(1e-6, math.sqrt(-2.0 * log_gamma / max(var0, 1e-300)))
    while parts(hi)[0] > 0 and hi < 1e4:
        lo, hi = hi, 2.0 * hi
    theta = 0.5 * (lo + hi)
    for _ in range(60):
        g, mean, var = parts(theta)
        if abs(g) < 1e-3:
            break
        if g > 0:
            lo = theta
        else:
            hi = theta
        step = theta + g / max(theta * var, 1e-300)
        theta = step if lo < step < hi else 0.5 * (lo + hi)
    return parts(theta)[1]


def _choose(method: str, m: int) -> str:
    check_choice("method", method, _METHODS)
    if method == "auto":
        return "recursion" if m <= RECURSION_MAX_N else "fft"
    return method


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def poisson_binomial_logpmf(probs: ArrayLike, *, method: str = "auto") -> jax.Array:
    """log Pr[S = k] for k = 0..n, S ~ PoiBin(probs), each entry to relative accuracy.

    Args:
      probs: (n,) success probabilities in [0, 1] (float32 accepted; computed in float64).
      method: ``"recursion"`` (exact log-space recursion, O(n²), JAX), ``"fft"`` (tilted divide
        and conquer on the host, O(n log² n) per tilt; the whole pmf needs tilts covering
        0..n, about 2·sqrt(n) of them for spread-out probabilities, so prefer
        :func:`poisson_binomial_tail` when only tails are needed) or ``"auto"`` (recursion for
        n ≤ ``RECURSION_MAX_N``).

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
    prep = _Prepared(probs)
    how = _choose(method, prep.m)
    if prep.m == 0:
        core = np.zeros(1)
    elif how == "recursion":
        core = _recursion_on_host(poisson_binomial_logpmf_exact, prep.q)
    else:
        core = _logpmf_fft(prep)
    full = np.full(prep.n + 1, -np.inf)
    full[prep.n_one : prep.n_one + prep.m + 1] = core
    with jax.enable_x64(True):
        return jnp.asarray(full)


def poisson_binomial_tail(probs: ArrayLike, v: ArrayLike, *, log: bool = False,
                          method: str = "auto") -> jax.Array:
    """Pr[S ≥ v] (or its log) for S ~ PoiBin(probs), with relative accuracy in deep tails.

    The tail is summed from the top (never 1 − cdf), so values down to ≈ 1e−300 (and far below,
    with ``log=True``) keep ≈ 1e−12 relative accuracy. v ≤ 0 gives 1, v > n gives 0; a
    non-integer v means Pr[S ≥ ceil(v)].

    Args:
      probs: (n,) success probabilities in [0, 1].
      v: scalar or array of thresholds (finite).
      log: return log Pr[S ≥ v] (−inf for v > n).
      method: ``"auto"``, ``"recursion"`` or ``"fft"`` (see :func:`poisson_binomial_logpmf`).

    Returns:
      float64 JAX array with the shape of ``v``.

    Raises:
      ValueError: bad probs (outside [0, 1], NaN, not 1-D), non-finite v, unknown method.

    Examples:
      >>> float(poisson_binomial_tail([0.5] * 10, 10))
      0.0009765625
      >>> round(float(poisson_binomial_tail([1e-3] * 300, 300, log=True)), 9)  # 300 log(1e-3)
      -2072.326583695
    """
    prep = _Prepared(probs)
    check_finite("v", v)
    log = check_bool("log", log)
    v_arr = np.ceil(np.asarray(v, dtype=np.float64)) - prep.n_one
    how = _choose(method, prep.m)
    out = np.where(v_arr <= 0, 0.0, -np.inf)
    inner = (v_arr >= 1) & (v_arr <= prep.m)
    if inner.any():
        vs = v_arr[inner].astype(np.int64)
        if how == "recursion":
            out[inner] = _recursion_on_host(poisson_binomial_logsf_exact, prep.q)[vs]
        else:
            out[inner] = _logsf_fft(prep, vs)
    out = np.minimum(out, 0.0)
    with jax.enable_x64(True):
        return jnp.asarray(out if log else np.exp(out))


def poisson_binomial_isf(probs: ArrayLike, gamma: float, *, method: str = "auto") -> int:
    """v_γ = min{v ∈ 0..n : Pr[S ≥ v] ≤ γ}; n + 1 when no v ≤ n qualifies.

    Conservative at ties: the computed tail must be ≤ γ·e^{−1e−9} (``ISF_LOG_MARGIN``), so
    round-off never gives a v one too small; a γ within a relative 1e−9 of a tail value gives the
    next v.

    Args:
      probs: (n,) success probabilities in [0, 1].
      gamma: level in [0, 1) (γ = 0 asks for the smallest v with Pr[S ≥ v] = 0).
      method: ``"auto"``, ``"recursion"`` or ``"fft"``.

    Returns:
      Python int.

    Raises:
      ValueError: bad probs, gamma outside [0, 1), unknown method.

    Examples:
      >>> poisson_binomial_isf([0.5] * 10, 0.05)  # Pr[Bin(10, 1/2) ≥ 9] = 0.0107
      9
    """
    prep = _Prepared(probs)
    check_probability("gamma", gamma, open_high=True)
    how = _choose(method, prep.m)
    log_gamma = math.log(gamma) if gamma > 0 else -math.inf
    # S = S' + n_one with S' over the q in (0, 1); Pr[S ≥ v] = 1 > γ for v ≤ n_one, so
    # v_γ(S) = n_one + v_γ(S'), where v_γ(S') ∈ 1..m+1 (m + 1: no v' ≤ m qualifies).
    if prep.m == 0:
        return prep.n_one + 1
    if how == "recursion":
        # v_γ = #{v ∈ 0..m : log Pr[S' ≥ v] > log γ − margin} (the tail is non-increasing in v)
        logsf = _recursion_on_host(poisson_binomial_logsf_exact, prep.q)
        core = int(np.sum(logsf > log_gamma - ISF_LOG_MARGIN))
    else:
        core = _isf_fft(prep, log_gamma - ISF_LOG_MARGIN)
    return prep.n_one + core


def _isf_fft(prep: _Prepared, log_gamma: float) -> int:
    """v_γ for S' by tilted evaluations that bracket the crossing.

    v_γ is the smallest v with log sf(v) ≤ log γ. The bracket a < v_γ ≤ b starts as (0, m + 1);
    each tilt gives trusted log sf on its window [lo, hi], which tightens the bracket; the next
    tilt is placed by a secant step on log sf from the window's edge (log sf is concave for the
    log-concave Poisson binomial, so the step overshoots at worst and the next window brackets).
    """
    m = prep.m
    if prep.log_prob_all() > log_gamma:
        return m + 1
    a, b = 0, m
    v_guess = prep.mean
    for iteration in range(400):
        tilt = prep.tilt_at(v_guess)
        logsf = tilt.logsf()
        lo = 0 if tilt.theta == 0.0 else min(tilt.lo, int(math.floor(v_guess)))
        hi = min(max(tilt.hi, int(math.ceil(v_guess))), m)
        seg = logsf[lo : hi + 1]
        above = np.nonzero(seg > log_gamma)[0]
        below = np.nonzero(seg <= log_gamma)[0]
        if above.size:
            a = max(a, lo + int(above[-1]))
        if below.size:
            b = min(b, lo + int(below[0]))
        if b <= a + 1:
            return b
        if below.size == 0 and iteration == 0:
            guess = _bahadur_rao_crossing(prep, log_gamma)
        elif below.size == 0:
            slope = seg[-1] - seg[-2] if seg.size > 1 else -1.0
            guess = hi + (log_gamma - seg[-1]) / min(slope, -1e-12)
        else:
            slope = seg[1] - seg[0] if seg.size > 1 else -1.0
            guess = lo + (log_gamma - seg[0]) / min(slope, -1e-12)
        guess = min(max(guess, a + 1.0), b - 1.0)
        v_guess = guess if abs(guess - v_guess) >= 0.5 else 0.5 * (a + b)
    raise RuntimeError("poisson_binomial_isf did not converge")  # pragma: no cover
