"""The statistical model of a node-level audit: marginal likelihood and the reparameterised joint
densities that NUTS samples (the model of Yıldırım et al., arXiv 2504.16683, adapted to the asymmetric BMP
region of Yıldırım & Khosla, arXiv 2606.04069; our derivations are in docs/bmp.md).

Model, for one node (or one pooled group) with error counts (X, N0, Y, N1):

    ε_L, ε_R ~ half-normal(variance v)  (v = 10 by default),
    s ~ Beta(a, b)  (attack strength; default Beta(1, 1); or a fixed s, see :class:`AttackPrior`),
    (α, β) ~ Uniform(B(ε, s)),  B(ε, s) = lower half of R(ε_L, ε_R) \\ R(s ε_L, s ε_R),
    X ~ Bin(N0, α),  Y ~ Bin(N1, β).

The optimal-attack model (``attack_prior="optimal"``) replaces the band by its corner:
(α, β) = c(ε_L, ε_R), the most powerful test R(ε) allows (:func:`log_joint_corner`).

The band B is the quadrilateral with vertices A = (0, 1), c(ε), C = (1, 0), c(sε) (c = the region
corner); its area is (|R(ε)| − |R(sε)|)/2. For fixed α the band spans
β ∈ [β_min(α; ε), β_min(α; sε)] with β_min(α; ε) = max(1 − e^{ε_R} α, (1 − α) e^{−ε_L}).

Two densities:

* :func:`log_marginal_likelihood` integrates (α, β) out: the β-integral of a binomial pmf is a
  difference of regularised incomplete beta functions, the α-integral a Gauss–Legendre rule on
  segments split at the kinks (the corners) and around the bulk of both binomials. Accurate to
  ~1e-9 relative in float64; a few hundred ``betainc`` calls per value, so it serves as the
  reference, not as the NUTS target.
* :func:`log_joint_centered` / :func:`log_joint_noncentered`: the joint density of the latent attack
  point and the parameters on unconstrained coordinates (all Jacobians included). A gradient costs
  a handful of ``exp``/``log`` — the formulation NUTS runs on; :func:`log_joint_corner` is the
  optimal-attack model's.

References:
  Yıldırım & Khosla, arXiv 2606.04069 (BMP); Yıldırım et al., "MCMC for Bayesian estimation of
  differential privacy from membership inference attacks", ECML-PKDD 2025, arXiv 2504.16683.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, TypeAlias

import distrax
import jax
import jax.numpy as jnp
import numpy as np
from jax.nn import log_sigmoid, sigmoid, softplus
from jax.scipy.special import betainc, betaln, gammaln, logsumexp, xlog1py, xlogy
from jax.typing import ArrayLike

from jaxaudit.bmp.region import region_area, region_corner, tradeoff_curve
from jaxaudit.mia.types import ErrorCounts

__all__ = [
    "AttackPrior",
    "Constrained",
    "DELTA_LINKS",
    "LogDensity",
    "as_attack_prior",
    "band_area",
    "constrain_centered",
    "constrain_corner",
    "constrain_noncentered",
    "half_normal_logpdf",
    "log_joint_centered",
    "log_joint_corner",
    "log_joint_noncentered",
    "log_marginal_likelihood",
    "log_strength_prior",
    "make_log_density",
]

#: Default prior variance of ε_L and ε_R (half-normal; our choice, docs/bmp.md).
PRIOR_VARIANCE = 10.0


class AttackPrior(NamedTuple):
    """Prior on the attack: its strength s ∈ [0, 1) ~ Beta(a, b) or fixed, or an optimal attack.

    s says how close the attack comes to the most powerful test the mechanism allows: its
    operating point is uniform on the band R(ε) \\ R(sε), so s → 1 is an attack on the boundary of
    R(ε). Beta(1, 1) (the default) is agnostic about the attack's quality; Beta(a, 1) with large a
    (e.g. Beta(20, 1)) or a fixed s near 1 (e.g. 0.95) encodes the belief that the attack is nearly
    optimal. Neither tells the model *which* side of R(ε) is tight, so under an optimal attack the
    smaller ε's lower quantile still sits above the truth more often than its probability (a 5%
    quantile in more than 5% of audits; docs/bmp.md,
    section 4). ``optimal=True`` is the attack known to be optimal: its operating point is the
    corner c(ε) of R(ε), where both sides are tight, (α, β) = c(ε_L, ε_R). Build one with
    :func:`as_attack_prior`.
    """

    a: float = 1.0
    b: float = 1.0
    fixed: float | None = None
    optimal: bool = False

    def describe(self) -> str:
        """Short text form, e.g. ``"Beta(20, 1)"``, ``"s = 0.95"`` or ``"optimal (corner)"``."""
        if self.optimal:
            return "optimal (corner)"
        if self.fixed is not None:
            return f"s = {self.fixed:g}"
        return f"Beta({self.a:g}, {self.b:g})"


#: Largest Beta parameter of the attack prior (a Beta(10⁶, 10⁶) is already a point mass to
#: float32; beyond, (a − 1) log s overflows in the sampler's log density).
MAX_BETA_PARAMETER = 1e6

#: What :func:`as_attack_prior` accepts.
AttackPriorSpec: TypeAlias = AttackPrior | tuple[float, float] | list[float] | float | str | None


def as_attack_prior(spec: AttackPriorSpec = None) -> AttackPrior:
    """An :class:`AttackPrior` from ``None`` (Beta(1, 1)), an ``AttackPrior``, a pair ``(a, b)``
    (Beta(a, b)), a number (fixed s in [0, 1)), ``"optimal"`` (the attack at the corner of
    R(ε)), or a string ``"beta:A,B"`` / ``"fixed:S"`` / ``"uniform"`` / ``"optimal"`` (the command
    line's form). Raises ``ValueError`` naming ``attack_prior``.

    Example:
      >>> as_attack_prior((20, 1)).describe(), as_attack_prior("fixed:0.95").describe()
      ('Beta(20, 1)', 's = 0.95')
      >>> as_attack_prior("optimal").describe()
      'optimal (corner)'
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "uniform"):
        return AttackPrior()
    if isinstance(spec, str) and spec.strip().lower() == "optimal":
        return AttackPrior(optimal=True)
    if isinstance(spec, str):
        kind, _, rest = spec.partition(":")
        try:
            values = [float(v) for v in rest.split(",")]
        except ValueError:
            values = []
        if kind.strip().lower() == "beta" and len(values) == 2:
            spec = (values[0], values[1])
        elif kind.strip().lower() == "fixed" and len(values) == 1:
            spec = values[0]
        else:
            raise ValueError(f"attack_prior must read 'uniform', 'beta:A,B', 'fixed:S' or "
                             f"'optimal', got {spec!r}")
    if isinstance(spec, AttackPrior):
        if spec.optimal:
            return AttackPrior(optimal=True)
        a, b, fixed = spec.a, spec.b, spec.fixed
    elif isinstance(spec, tuple | list) and len(spec) == 2:
        (a, b), fixed = spec, None
    elif isinstance(spec, int | float | np.integer | np.floating) and not isinstance(spec, bool):
        a, b, fixed = 1.0, 1.0, float(spec)
    else:
        raise ValueError(f"attack_prior must be None, (a, b), a fixed s, 'optimal' or an "
                         f"AttackPrior, got {spec!r}")
    if fixed is not None:
        fixed = float(fixed)
        if not 0.0 <= fixed < 1.0:
            raise ValueError(f"attack_prior: a fixed s must lie in [0, 1), got {fixed}")
        return AttackPrior(1.0, 1.0, fixed)
    a, b = float(a), float(b)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"attack_prior: Beta(a, b) needs finite a, b > 0, got ({a}, {b})")
    if max(a, b) > MAX_BETA_PARAMETER:
        raise ValueError(
            f"attack_prior: Beta(a, b) needs a, b <= {MAX_BETA_PARAMETER:g}, got ({a:g}, {b:g}); "
            f"the sampler's float32 log density overflows beyond, and such a prior is a point "
            f"mass: use 'fixed:{a / (a + b):.6g}'")
    return AttackPrior(a, b, None)


def half_normal_logpdf(eps: ArrayLike, variance: ArrayLike = PRIOR_VARIANCE) -> jax.Array:
    """log of the half-normal density 2 N(ε; 0, v) on ε ≥ 0."""
    return jnp.log(2.0) + distrax.Normal(0.0, jnp.sqrt(variance)).log_prob(eps)


def log_strength_prior(log_s: jax.Array, log1m_s: ArrayLike, a: ArrayLike, b: ArrayLike
                      ) -> jax.Array:
    """log Beta(s; a, b) = (a − 1) log s + (b − 1) log(1 − s) − log B(a, b), from log s and
    log(1 − s). Written out rather than with ``distrax.Beta(a, b).log_prob(s)`` because near an
    optimal attack 1 − s underflows in s (the samplers carry log(1 − s) directly)."""
    a, b = jnp.asarray(a, log_s.dtype), jnp.asarray(b, log_s.dtype)
    safe = lambda c, x: jnp.where(c == 0, 0.0, c * jnp.where(jnp.isfinite(x), x, -1e30))
    return safe(a - 1, log_s) + safe(b - 1, log1m_s) - betaln(a, b)


def band_area(eps_l: ArrayLike, eps_r: ArrayLike, s: ArrayLike) -> jax.Array:
    """Area of the attack band, lower half of R(ε_L, ε_R) \\ R(s ε_L, s ε_R): (|R(ε)| − |R(sε)|)/2."""
    return 0.5 * (region_area(eps_l, eps_r) - region_area(s * eps_l, s * eps_r))


def _log_binom_coef(k: jax.Array, n: jax.Array) -> jax.Array:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _binomial_logpmf(k: jax.Array, n: jax.Array, p_log: jax.Array, q_log: jax.Array) -> jax.Array:
    """log Bin(k; n, p) given log p and log(1 − p)."""
    return (_log_binom_coef(k, n)
            + jnp.where(k > 0, k * p_log, 0.0) + jnp.where(n - k > 0, (n - k) * q_log, 0.0))


# ----------------------------------------------------------------------------------------------
# Marginal likelihood (reference)
# ----------------------------------------------------------------------------------------------

_ALPHA_SDS = (-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0)
_BETA_SDS = (-6.0, -2.0, 0.0, 2.0, 6.0)


def _lml_scalar(eps_l: jax.Array, eps_r: jax.Array, s: jax.Array, fp: jax.Array, n0: jax.Array,
                fn: jax.Array, n1: jax.Array, nodes: jax.Array, weights: jax.Array) -> jax.Array:
    dtype = nodes.dtype
    mean_a = (fp + 1.0) / (n0 + 2.0)
    sd_a = jnp.sqrt(mean_a * (1 - mean_a) / (n0 + 3.0))
    mean_b = (fn + 1.0) / (n1 + 2.0)
    sd_b = jnp.sqrt(mean_b * (1 - mean_b) / (n1 + 3.0))
    # Breakpoints: both corners, the bulk of Beta(X+1, N0−X+1), and the α where each of the four
    # boundary lines crosses the bulk of Beta(Y+1, N1−Y+1).
    b_targets = mean_b + jnp.asarray(_BETA_SDS, dtype) * sd_b
    line_pts = []
    for el, er in ((eps_l, eps_r), (s * eps_l, s * eps_r)):
        line_pts.append((1 - b_targets) * jnp.exp(-er))  # 1 − e^{ε_R} α = b
        line_pts.append(1 - b_targets * jnp.exp(el))  # (1 − α) e^{−ε_L} = b
    pts = jnp.concatenate([
        jnp.asarray([0.0, 1.0], dtype),
        jnp.stack([region_corner(eps_l, eps_r)[0], region_corner(s * eps_l, s * eps_r)[0]]),
        mean_a + jnp.asarray(_ALPHA_SDS, dtype) * sd_a,
        *line_pts,
    ])
    pts = jnp.sort(jnp.clip(pts, 0.0, 1.0))
    lo, hi = pts[:-1, None], pts[1:, None]
    alpha = (lo + (hi - lo) * (nodes + 1) / 2).ravel()
    w = ((hi - lo) / 2 * weights).ravel()
    lower = tradeoff_curve(alpha, eps_l, eps_r)
    upper = tradeoff_curve(alpha, s * eps_l, s * eps_r)
    # D = I_upper − I_lower, computed on the complementary tail above the mean for accuracy.
    a_par, b_par = fn + 1.0, n1 - fn + 1.0
    tail = lower > mean_b
    d_low = betainc(a_par, b_par, upper) - betainc(a_par, b_par, lower)
    d_high = betainc(b_par, a_par, 1 - lower) - betainc(b_par, a_par, 1 - upper)
    d = jnp.where(tail, d_high, d_low)
    log_f = _binomial_logpmf(fp, n0, jnp.log(alpha), jnp.log1p(-alpha))
    log_terms = jnp.where((d > 0) & (w > 0), jnp.log(jnp.where(d > 0, d, 1.0))
                          + jnp.log(jnp.where(w > 0, w, 1.0)) + log_f, -jnp.inf)
    return logsumexp(log_terms) - jnp.log(n1 + 1.0) - jnp.log(band_area(eps_l, eps_r, s))


def log_marginal_likelihood(eps_l: ArrayLike, eps_r: ArrayLike, s: ArrayLike, counts: ErrorCounts,
                            *, order: int = 16) -> jax.Array:
    """log p(X, Y | ε_L, ε_R, s) with the attack point (α, β) integrated out.

    p = (1/|B|) ∫_0^1 Bin(X; N0, α) [I_{u(α)}(Y+1, N1−Y+1) − I_{l(α)}(Y+1, N1−Y+1)] / (N1+1) dα,
    l(α) = β_min(α; ε), u(α) = β_min(α; sε), I the regularised incomplete beta function. The
    α-integral is Gauss–Legendre of the given order on 32 segments split at both corners, at
    the bulk of Beta(X+1, N0−X+1) and where the four boundary lines cross the bulk of
    Beta(Y+1, N1−Y+1). Use float64 (``jax.enable_x64``) for ~1e-9 relative accuracy.

    Args:
      eps_l, eps_r: BMP parameters (> 0), broadcastable.
      s: attack strength in [0, 1).
      counts: ``ErrorCounts(fp, n0, fn, n1)`` broadcastable with the parameters.
      order: Gauss–Legendre points per segment.

    Returns:
      The log-likelihood, broadcast over all inputs.
    """
    dtype = jnp.result_type(float)
    args = [jnp.asarray(x, dtype) for x in (eps_l, eps_r, s, *counts)]
    return _lml_jit(*args, order=int(order))


@functools.partial(jax.jit, static_argnames="order")
def _lml_jit(eps_l: jax.Array, eps_r: jax.Array, s: jax.Array, fp: jax.Array, n0: jax.Array,
             fn: jax.Array, n1: jax.Array, *, order: int) -> jax.Array:
    gl_nodes, gl_weights = np.polynomial.legendre.leggauss(order)
    nodes, weights = jnp.asarray(gl_nodes, eps_l.dtype), jnp.asarray(gl_weights, eps_l.dtype)

    def scalar(el: jax.Array, er: jax.Array, sv: jax.Array, x: jax.Array, m0: jax.Array,
               y: jax.Array, m1: jax.Array) -> jax.Array:
        return _lml_scalar(el, er, sv, x, m0, y, m1, nodes, weights)

    return jnp.vectorize(scalar)(eps_l, eps_r, s, fp, n0, fn, n1)


# ----------------------------------------------------------------------------------------------
# Reparameterised joint densities (NUTS targets)
# ----------------------------------------------------------------------------------------------


class Constrained(NamedTuple):
    """The model's quantities recovered from an unconstrained position."""

    epsilon_left: jax.Array
    epsilon_right: jax.Array
    s: jax.Array
    alpha: jax.Array
    beta: jax.Array


#: Links δ = ε − ε̂ = link(z) of the centered coordinates: "softplus" (the default) and "exp"
#: (δ = e^z; benchmarks/bmp_delta_link.py compares the two).
DELTA_LINKS = ("softplus", "exp")


def _log_sigmoid_pair(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(log σ(x), log σ(−x)) from one softplus: log σ(−x) = log σ(x) − x (the sampler evaluates
    these for every leapfrog step of every node, so each transcendental saved counts)."""
    ls = log_sigmoid(x)
    return ls, ls - x


def _check_link(link: str) -> str:
    if link not in DELTA_LINKS:
        raise ValueError(f"link must be one of {DELTA_LINKS}, got {link!r}")
    return link


def _delta_link(z: jax.Array, link: str = "softplus") -> tuple[jax.Array, jax.Array, jax.Array]:
    """δ = link(z) > 0 with log δ and log dδ/dz; ``link`` is "softplus" (default) or "exp".

    softplus rather than exp: δ ≈ e^z for small δ (the data's scale), but linear for large δ, so
    the half-normal prior's tail stays Gaussian in z (curvature 1/v) instead of the double
    exponential that e^z makes of it (curvature ε²/v, which NUTS steps tuned to the bulk overshoot:
    divergent transitions in the prior-driven upper tail). (softplus(z) is not computed as
    z − log σ(z): that cancels for z < 0, where δ is small.)"""
    if _check_link(link) == "exp":
        return jnp.exp(z), z, z
    delta = softplus(z)
    log_delta = jnp.where(z < -15.0, z, jnp.log(jnp.where(z < -15.0, 1.0, delta)))
    return delta, log_delta, log_sigmoid(z)


def _centered_parts(position: jax.Array, symmetric: bool = False, link: str = "softplus"
                   ) -> dict[str, Any]:
    a, b = position[..., 0], position[..., 1]
    log_alpha, log1m_alpha = _log_sigmoid_pair(a)
    log_sig_b, log_sig_mb = _log_sigmoid_pair(b)
    log_beta = log1m_alpha + log_sig_b  # β = (1 − α) σ(b)
    log1m_beta = jnp.logaddexp(log_alpha, log1m_alpha + log_sig_mb)
    eps_hat_l = -log_sig_b  # log((1 − α)/β)
    eps_hat_r = softplus(log_sig_mb - a)  # log((1 − β)/α)
    if symmetric:  # ε_L = ε_R = max(ε̂_L, ε̂_R) + δ(z)
        z_l = z_r = position[..., 2]
        t = position[..., 3]
        delta, log_delta, log_jac_z = _delta_link(z_l, link)
        eps_l = eps_r = jnp.maximum(eps_hat_l, eps_hat_r) + delta
        log_r_min = log_delta - jnp.log(eps_l)
    else:
        z_l, z_r, t = position[..., 2], position[..., 3], position[..., 4]
        delta_l, log_delta_l, jac_l = _delta_link(z_l, link)
        delta_r, log_delta_r, jac_r = _delta_link(z_r, link)
        eps_l = eps_hat_l + delta_l
        eps_r = eps_hat_r + delta_r
        # 1 − s_max = min(δ_L/ε_L, δ_R/ε_R), computed without cancellation
        log_r_min = jnp.minimum(log_delta_l - jnp.log(eps_l), log_delta_r - jnp.log(eps_r))
        log_jac_z = jac_l + jac_r
    # s = 1 − r with log r = σ(t) log r_min: the band density ∝ 1/(1 − s) near the optimal attack
    # becomes a logistic density in t (no funnel between t and z)
    log_sig_t, log_sig_mt = _log_sigmoid_pair(t)
    log_r = jnp.exp(log_sig_t) * log_r_min
    s = -jnp.expm1(log_r)
    log_jac_s = (log_r + jnp.log(-log_r_min) + log_sig_t + log_sig_mt)
    log_jac_ab = log_alpha + log1m_alpha + log1m_alpha + log_sig_b + log_sig_mb
    return dict(a=a, b=b, t=t, log_alpha=log_alpha, log1m_alpha=log1m_alpha,
                log_beta=log_beta, log1m_beta=log1m_beta, eps_l=eps_l, eps_r=eps_r, s=s,
                log_r=log_r, log_jac_s=log_jac_s, log_jac_z=log_jac_z, log_jac_ab=log_jac_ab,
                symmetric=symmetric)


def _log_band_near_optimal(eps_l: jax.Array, eps_r: jax.Array, s: jax.Array, log_r: jax.Array
                          ) -> jax.Array:
    """log |B(ε, s)| with r = 1 − s; for r < 1e-3 the first-order form r·(ε·∇|R|)/2 avoids the
    cancellation in |R(ε)| − |R(sε)| (relative error ≲ r)."""
    r = jnp.exp(log_r)
    e_l, e_r = jnp.exp(-eps_l), jnp.exp(-eps_r)
    a, b, c = -jnp.expm1(-eps_l), -jnp.expm1(-eps_r), -jnp.expm1(-(eps_l + eps_r))
    # ∂|R|/∂ε_L = b² e^{−ε_L}/c², ∂|R|/∂ε_R = a² e^{−ε_R}/c²
    slope = (eps_l * b * b * e_l + eps_r * a * a * e_r) / (c * c)
    small = r < 1e-3
    exact = band_area(eps_l, eps_r, jnp.where(small, 0.5, s))
    return jnp.log(jnp.where(small, 0.5 * r * slope, exact))


def constrain_centered(position: jax.Array, symmetric: bool = False, link: str = "softplus"
                      ) -> Constrained:
    """Map a centered position (a, b, z_L, z_R, t) (δ = link(z), softplus by default) — or
    (a, b, z, t) for the symmetric model — to (ε_L, ε_R, s, α, β)."""
    p = _centered_parts(position, symmetric, link)
    return Constrained(p["eps_l"], p["eps_r"], p["s"], jnp.exp(p["log_alpha"]),
                       jnp.exp(p["log_beta"]))


def log_joint_centered(position: jax.Array, counts: ErrorCounts,
                       prior_variance: ArrayLike = PRIOR_VARIANCE, symmetric: bool = False,
                       strength_prior: tuple[ArrayLike, ArrayLike] = (1.0, 1.0),
                       link: str = "softplus") -> jax.Array:
    """Log joint density (up to a constant) on the centered coordinates, for free s ~ Beta(a, b).

    Coordinates: α = σ(a), β = (1 − α) σ(b) (the lower half α + β ≤ 1); the tightest parameters
    of the point ε̂_L = log((1 − α)/β), ε̂_R = log((1 − β)/α); ε = ε̂ + softplus(z) (so
    (α, β) ∈ R(ε));
    s = 1 − r_min^{σ(t)} with r_min = 1 − s_max = min(δ_L/ε_L, δ_R/ε_R) (so s < s_max, i.e.
    (α, β) ∉ R(sε); the band density ∝ 1/(1 − s) near the optimum becomes logistic in t). Then

      log p = log HN(ε_L) + log HN(ε_R) + log Beta(s; a, b) − log|B(ε, s)|
              + log Bin(X; N0, α) + log Bin(Y; N1, β)
              + log σ'(a) + log(1 − α) + log σ'(b) + log σ(z_L) + log σ(z_R)
              + log r + log(−log r_min) + log σ'(t),

    the last two lines the Jacobian of (a, b, z_L, z_R, t) ↦ (α, β, ε_L, ε_R, s) (triangular). The
    data pin (a, b) along coordinate axes, which a diagonal mass matrix adapts to, while
    (z, t) stay prior-shaped: NUTS needs short trajectories.

    ``symmetric=True`` is the symmetric membership-privacy (MP) baseline fitted to the same
    counts: ε_L = ε_R = ε ~ half-normal, ε = max(ε̂_L, ε̂_R) + softplus(z), position (a, b, z, t).

    Args:
      position: array (..., 5) (or (..., 4) when symmetric).
      counts: ``ErrorCounts`` broadcastable with ``position[..., 0]``.
      prior_variance: variance v of the half-normal priors.
      symmetric: the tied (MP) model.
      strength_prior: (a, b) of the Beta prior on s (may be traced).
      link: δ = ε − ε̂ as a function of z: "softplus" (default; log σ(z) replaces the Jacobian
        terms log σ(z_L) + log σ(z_R) above) or "exp" (δ = e^z, Jacobian z).
    """
    p = _centered_parts(position, symmetric, link)
    fp, n0, fn, n1 = counts
    log_lik = (_binomial_logpmf(fp, n0, p["log_alpha"], p["log1m_alpha"])
               + _binomial_logpmf(fn, n1, p["log_beta"], p["log1m_beta"]))
    log_prior = half_normal_logpdf(p["eps_l"], prior_variance) + log_strength_prior(
        jnp.log(-jnp.expm1(p["log_r"])), p["log_r"], *strength_prior)
    if not symmetric:
        log_prior = log_prior + half_normal_logpdf(p["eps_r"], prior_variance)
    log_band = _log_band_near_optimal(p["eps_l"], p["eps_r"], p["s"], p["log_r"])
    log_jac = p["log_jac_ab"] + p["log_jac_z"] + p["log_jac_s"]
    return log_prior - log_band + log_lik + log_jac


def _noncentered_parts(position: jax.Array, attack_strength: ArrayLike | None,
                       strength_prior: tuple[ArrayLike, ArrayLike] = (1.0, 1.0)
                      ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    z_l, z_r, u_raw, v_raw = (position[..., i] for i in range(4))
    eps_l, eps_r = jnp.exp(z_l), jnp.exp(z_r)
    if attack_strength is None:
        t = position[..., 4]
        s = sigmoid(t)
        log_jac_s: ArrayLike = (log_sigmoid(t) + log_sigmoid(-t)
                     + log_strength_prior(log_sigmoid(t), log_sigmoid(-t), *strength_prior))
    else:
        s = jnp.asarray(attack_strength, eps_l.dtype)
        log_jac_s = 0.0
    # Band = triangle (A, B, D) ∪ triangle (C, B, D), B = c(ε), D = c(sε); a uniform (u, v) maps
    # onto it uniformly, continuously across the shared edge BD.
    b_a, b_b = region_corner(eps_l, eps_r)
    d_a, d_b = region_corner(s * eps_l, s * eps_r)
    area1 = 0.5 * jnp.abs(b_a * (d_b - 1) - (b_b - 1) * d_a)  # A = (0, 1)
    area2 = 0.5 * jnp.abs((b_a - 1) * d_b - b_b * (d_a - 1))  # C = (1, 0)
    p1 = area1 / (area1 + area2)
    u, v = sigmoid(u_raw), sigmoid(v_raw)
    first = u < p1
    r = jnp.where(first, u / p1, (1 - u) / (1 - p1))
    sqrt_r = jnp.sqrt(r)
    e_a = (1 - v) * b_a + v * d_a
    e_b = (1 - v) * b_b + v * d_b
    alpha = jnp.where(first, sqrt_r * e_a, (1 - sqrt_r) + sqrt_r * e_a)
    beta = jnp.where(first, (1 - sqrt_r) + sqrt_r * e_b, sqrt_r * e_b)
    log_jac = (z_l + z_r + log_sigmoid(u_raw) + log_sigmoid(-u_raw) + log_sigmoid(v_raw)
               + log_sigmoid(-v_raw) + log_jac_s)
    return eps_l, eps_r, s, alpha, beta, log_jac


def constrain_noncentered(position: jax.Array, attack_strength: ArrayLike | None = None
                         ) -> Constrained:
    """Map a non-centered position (log ε_L, log ε_R, logit u, logit v[, logit s]) to the model."""
    eps_l, eps_r, s, alpha, beta, _ = _noncentered_parts(position, attack_strength)
    return Constrained(eps_l, eps_r, jnp.broadcast_to(s, eps_l.shape), alpha, beta)


def log_joint_noncentered(position: jax.Array, counts: ErrorCounts,
                          prior_variance: ArrayLike = PRIOR_VARIANCE,
                          attack_strength: ArrayLike | None = None,
                          strength_prior: tuple[ArrayLike, ArrayLike] = (1.0, 1.0)) -> jax.Array:
    """Log joint density on the non-centered coordinates (log ε_L, log ε_R, logit u, logit v
    [, logit s]).

    (u, v) ~ Uniform(0, 1)² is mapped onto the band B(ε, s) by splitting it along the segment
    c(ε)–c(sε) into two triangles and using the area-preserving map
    P = (1 − √r) V_0 + √r((1 − v) c(ε) + v c(sε)) in each, with r = u/p_1 or (1 − u)/(1 − p_1),
    p_1 the first triangle's share of the area. The map has Jacobian |B| everywhere, which cancels
    the uniform density 1/|B|; so the joint density is

      log p = log HN(ε_L) + log HN(ε_R) + log Bin(X; N0, α) + log Bin(Y; N1, β)
              + z_L + z_R + log σ'(u_raw) + log σ'(v_raw) [+ log σ'(t) + log Beta(s; a, b)].

    Works for a fixed attack strength (``attack_strength`` in [0, 1)) as well as for a free
    s ~ Beta(a, b) (``attack_strength=None``, ``strength_prior=(a, b)``).
    """
    eps_l, eps_r, s, alpha, beta, log_jac = _noncentered_parts(position, attack_strength,
                                                               strength_prior)
    fp, n0, fn, n1 = counts
    log_lik = (_log_binom_coef(fp, n0) + xlogy(fp, alpha) + xlog1py(n0 - fp, -alpha)
               + _log_binom_coef(fn, n1) + xlogy(fn, beta) + xlog1py(n1 - fn, -beta))
    log_prior = half_normal_logpdf(eps_l, prior_variance) + half_normal_logpdf(eps_r, prior_variance)
    return log_prior + log_lik + log_jac


def _corner_parts(position: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """(a, b) ↦ α = σ(a), β = (1 − α) σ(b), and the ε whose region has (α, β) at its corner:
    ε_L = log((1 − α)/β) = softplus(−b), ε_R = log((1 − β)/α) = softplus(u), u = −a − softplus(b);
    with log |∂(ε_L, ε_R)/∂(a, b)| = log σ(−b) + log σ(u) (the map is triangular)."""
    a, b = position[..., 0], position[..., 1]
    log_alpha, log1m_alpha = _log_sigmoid_pair(a)
    log_sig_b, log_sig_mb = _log_sigmoid_pair(b)
    u = log_sig_mb - a
    eps_l, eps_r = -log_sig_b, softplus(u)
    log_beta = log1m_alpha + log_sig_b
    log1m_beta = log_alpha + eps_r  # 1 − β = α e^{ε_R} at the corner
    log_jac = log_sig_mb + log_sigmoid(u)
    return eps_l, eps_r, log_alpha, log1m_alpha, log_beta, log1m_beta, log_jac


def constrain_corner(position: jax.Array) -> Constrained:
    """Map a position (a, b) of the optimal-attack model to (ε_L, ε_R, s = 1, α, β)."""
    eps_l, eps_r, log_alpha, _, log_beta, _, _ = _corner_parts(position)
    return Constrained(eps_l, eps_r, jnp.ones_like(eps_l), jnp.exp(log_alpha), jnp.exp(log_beta))


def log_joint_corner(position: jax.Array, counts: ErrorCounts,
                     prior_variance: ArrayLike = PRIOR_VARIANCE) -> jax.Array:
    """Log joint density of the optimal-attack model on the coordinates (a, b).

    Model: ε_L, ε_R ~ HN(v); the attack is the most powerful test at the corner of R(ε),
    (α, β) = c(ε_L, ε_R); X ~ Bin(N0, α), Y ~ Bin(N1, β). The corner map is inverted by the
    region's inverse map ε = ε̂(α, β) (:func:`jaxaudit.bmp.epsilons_from_errors`), a bijection from
    the open triangle α + β < 1 onto (0, ∞)²; with α = σ(a), β = (1 − α) σ(b),

      log p = log HN(ε_L) + log HN(ε_R) + log Bin(X; N0, α) + log Bin(Y; N1, β)
              + log σ(−b) + log σ(−a − softplus(b)),

    the last line log |∂(ε_L, ε_R)/∂(a, b)|. The counts pin (a, b) along the axes, as in the
    centered coordinates (whose ε = ε̂ + δ, s < 1 this model fixes to δ = 0, s = 1).

    Args:
      position: array (..., 2).
      counts: ``ErrorCounts`` broadcastable with ``position[..., 0]``.
      prior_variance: variance v of the half-normal priors.
    """
    eps_l, eps_r, log_alpha, log1m_alpha, log_beta, log1m_beta, log_jac = _corner_parts(position)
    fp, n0, fn, n1 = counts
    log_lik = (_binomial_logpmf(fp, n0, log_alpha, log1m_alpha)
               + _binomial_logpmf(fn, n1, log_beta, log1m_beta))
    log_prior = half_normal_logpdf(eps_l, prior_variance) + half_normal_logpdf(eps_r, prior_variance)
    return log_prior + log_lik + log_jac


# ----------------------------------------------------------------------------------------------
# Log-density factories (what the samplers run on)
# ----------------------------------------------------------------------------------------------


class LogDensity(NamedTuple):
    """A sampler target in blackjax's terms: ``logdensity_fn(position)`` (the unnormalised log
    posterior of a (dim,) unconstrained position, what ``blackjax.nuts(logdensity_fn, ...)``
    takes), ``constrain(position) -> Constrained`` (the model's quantities, ε_L and ε_R among
    them) and the position's dimension ``dim``."""

    logdensity_fn: Callable[[jax.Array], jax.Array]
    constrain: Callable[[jax.Array], Constrained]
    dim: int


def make_log_density(parameterization: str, counts: ErrorCounts, *,
                     prior_variance: ArrayLike = PRIOR_VARIANCE,
                     strength_prior: tuple[ArrayLike, ArrayLike] = (1.0, 1.0),
                     attack_strength: ArrayLike | None = None, symmetric: bool = False,
                     link: str = "softplus") -> LogDensity:
    """The log joint density of one count set on the coordinates ``parameterization`` names, with
    every setting (the δ ``link`` included) bound as an argument — no module state.

    * ``"centered"``: :func:`log_joint_centered` (Beta prior on s; ``symmetric``, ``link``);
    * ``"noncentered"``: :func:`log_joint_noncentered` (``attack_strength`` a fixed s, or None);
    * ``"corner"``: :func:`log_joint_corner` (the optimal attack).

    Example:
      >>> target = make_log_density("centered", ErrorCounts(10.0, 100.0, 30.0, 100.0))
      >>> target.dim, bool(jnp.isfinite(target.logdensity_fn(jnp.zeros(5))))
      (5, True)
    """
    _check_link(link)
    if parameterization == "corner":
        return LogDensity(functools.partial(log_joint_corner, counts=counts,
                                            prior_variance=prior_variance), constrain_corner, 2)
    if parameterization == "centered":
        return LogDensity(
            functools.partial(log_joint_centered, counts=counts, prior_variance=prior_variance,
                              symmetric=symmetric, strength_prior=strength_prior, link=link),
            functools.partial(constrain_centered, symmetric=symmetric, link=link),
            4 if symmetric else 5)
    if parameterization == "noncentered":
        return LogDensity(
            functools.partial(log_joint_noncentered, counts=counts, prior_variance=prior_variance,
                              attack_strength=attack_strength, strength_prior=strength_prior),
            functools.partial(constrain_noncentered, attack_strength=attack_strength),
            4 if attack_strength is not None else 5)
    raise ValueError(f"parameterization must be 'centered', 'noncentered' or 'corner', got "
                     f"{parameterization!r}")
