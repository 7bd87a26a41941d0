"""Deterministic grid posterior over (ε_L, ε_R) of one count set: the reference the NUTS sampler
(:func:`jaxaudit.bmp.posterior_nuts`) is checked against.

The model is :mod:`jaxaudit.bmp.likelihood`'s (Yıldırım & Khosla, arXiv 2606.04069; Yıldırım et
al., arXiv 2504.16683); the quadrature and its accuracy are described in docs/bmp.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlog1py, xlogy
from jax.typing import ArrayLike
from scipy import special as sp_special

from jaxaudit._validation import check_integer, check_positive
from jaxaudit.bmp.likelihood import (
    AttackPrior,
    as_attack_prior,
    band_area,
    half_normal_logpdf,
)
from jaxaudit.bmp.posterior import PosteriorModel, _check_model
from jaxaudit.bmp.region import epsilons_from_errors, region_corner, tradeoff_curve
from jaxaudit.mia.types import ErrorCounts, validate_counts

__all__ = ["GridPosterior", "posterior_grid"]


class GridPosterior(NamedTuple):
    """Grid posterior of one count set.

    Attributes:
      epsilon: grid of cell midpoints shared by ε_L and ε_R, shape (n,).
      log_density: normalised log posterior density on the (ε_L, ε_R) grid, shape (n, n).
      marginal_left, marginal_right: marginal densities of ε_L and ε_R on the grid, shape (n,).
    """

    epsilon: jax.Array
    log_density: jax.Array
    marginal_left: jax.Array
    marginal_right: jax.Array

    def cdf(self, which: str, x: ArrayLike) -> np.ndarray:
        """Marginal CDF of ``which`` ("l" or "r") at ``x`` (piecewise-constant density)."""
        edges, cdf = self._edges_cdf(which)
        return np.interp(np.asarray(x), edges, cdf)

    def quantile(self, which: str, q: ArrayLike) -> np.ndarray:
        """Quantile(s) of the marginal of ``which`` ("l" or "r"), piecewise-constant density."""
        edges, cdf = self._edges_cdf(which)
        return np.interp(np.asarray(q), cdf, edges)

    def density_at(self, which: str, x: ArrayLike) -> np.ndarray:
        dens = np.asarray(self.marginal_left if which == "l" else self.marginal_right, np.float64)
        return np.interp(np.asarray(x), np.asarray(self.epsilon, np.float64), dens)

    def _edges_cdf(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        if which not in ("l", "r"):
            raise ValueError(f"which must be 'l' or 'r', got {which!r}")
        dens = np.asarray(self.marginal_left if which == "l" else self.marginal_right, np.float64)
        eps = np.asarray(self.epsilon, np.float64)
        h = eps[1] - eps[0]
        edges = np.concatenate([[eps[0] - h / 2], eps + h / 2])
        cdf = np.concatenate([[0.0], np.cumsum(dens * h)])
        return edges, cdf / cdf[-1]


def _beta_tables(counts: ErrorCounts, num_alpha_segments: int, num_alpha_nodes: int, num_knots: int,
                 z_max: float = 30.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host-side tables: nodes for the α-integral on the logit-quantile scale of
    Beta(X+1, N0−X+1) (so the binomial weight becomes the logistic density), and the logit-CDF of
    Beta(Y+1, N1−Y+1) on a uniform β grid (for the β-integral)."""
    fp, n0, fn, n1 = (float(c) for c in counts)
    x, w = np.polynomial.legendre.leggauss(num_alpha_nodes)
    edges = np.linspace(-z_max, z_max, num_alpha_segments + 1)
    zs = ((edges[:-1, None] + edges[1:, None]) / 2 + (edges[1:, None] - edges[:-1, None]) / 2 * x)
    wz = ((edges[1:, None] - edges[:-1, None]) / 2 * w).ravel() * sp_special.expit(zs.ravel()) * (
        sp_special.expit(-zs.ravel()))
    zs = zs.ravel()
    alpha_nodes = np.where(zs < 0, sp_special.betaincinv(fp + 1, n0 - fp + 1, sp_special.expit(zs)),
                           1 - sp_special.betaincinv(n0 - fp + 1, fp + 1, sp_special.expit(-zs)))
    beta_grid = np.linspace(0.0, 1.0, num_knots)
    a_par, b_par = fn + 1, n1 - fn + 1
    with np.errstate(divide="ignore"):
        log_cdf = np.log(sp_special.betainc(a_par, b_par, beta_grid))
        log_ccdf = np.log(sp_special.betainc(b_par, a_par, 1 - beta_grid))
    z_table = np.clip(log_cdf - log_ccdf, -4 * z_max, 4 * z_max)
    return alpha_nodes, wz, z_table


def _logit_cdf(x: jax.Array, z_table: jax.Array) -> jax.Array:
    n = z_table.shape[0] - 1
    pos = jnp.clip(x, 0.0, 1.0) * n
    i0 = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, n - 1)
    frac = pos - i0
    return z_table[i0] * (1 - frac) + z_table[i0 + 1] * frac


@jax.jit
def _grid_log_lik(eps_l: jax.Array, eps_r: jax.Array, s: jax.Array, alpha_nodes: jax.Array,
                  alpha_weights: jax.Array, z_table: jax.Array, n0: jax.Array, n1: jax.Array
                 ) -> jax.Array:
    """log p(X, Y | ε, s) by quadrature on Beta quantile nodes and a tabulated Beta CDF."""
    lower = tradeoff_curve(alpha_nodes, eps_l[..., None], eps_r[..., None])
    upper = tradeoff_curve(alpha_nodes, s * eps_l[..., None], s * eps_r[..., None])
    zl = _logit_cdf(lower, z_table)
    zu = _logit_cdf(upper, z_table)
    sig = jax.nn.sigmoid
    d = jnp.where(zl > 0, sig(-zl) - sig(-zu), sig(zu) - sig(zl))
    mass = jnp.sum(alpha_weights * jnp.maximum(d, 0.0), axis=-1)
    area = band_area(eps_l, eps_r, s)
    ok = (mass > 0) & (area > 0)
    return jnp.where(ok, jnp.log(jnp.where(ok, mass, 1.0)) - jnp.log(jnp.where(ok, area, 1.0)),
                     -jnp.inf) - jnp.log(n0 + 1.0) - jnp.log(n1 + 1.0)


@jax.jit
def _corner_log_lik(eps_l: jax.Array, eps_r: jax.Array, fp: jax.Array, n0: jax.Array, fn: jax.Array,
                    n1: jax.Array) -> jax.Array:
    """log Bin(X; N0, α) + log Bin(Y; N1, β) at the corner (α, β) = c(ε_L, ε_R) (up to the
    binomial coefficients, constant in ε)."""
    alpha, beta = region_corner(eps_l, eps_r)
    return (xlogy(fp, alpha) + xlog1py(n0 - fp, -alpha) + xlogy(fn, beta)
            + xlog1py(n1 - fn, -beta))


def posterior_grid(counts: ErrorCounts | Sequence[ArrayLike],
                   model: PosteriorModel | None = None, *, epsilon_max: float | None = None,
                   num_epsilons: int = 160, num_s: int = 16, num_alpha_nodes: int = 8,
                   num_alpha_segments: int = 16, num_knots: int = 8193) -> GridPosterior:
    """Deterministic grid posterior of the same model as :func:`posterior_nuts` (one count set).

    p(ε_L, ε_R | X, Y) ∝ HN(ε_L) HN(ε_R) ∫_0^1 p(X, Y | ε, s) Beta(s; a, b) ds on a regular grid
    of cell midpoints on (0, epsilon_max]², the s-integral by Gauss–Jacobi quadrature for the Beta
    weight (``num_s`` points; Gauss–Legendre for Beta(1, 1); one point for a fixed s); for
    ``model.attack_prior="optimal"`` the likelihood is Bin(X; N0, α) Bin(Y; N1, β) at the corner
    (α, β) = c(ε) of R(ε), evaluated directly in ε (no change of coordinates). The
    marginal likelihood is computed by a quadrature independent of
    :func:`jaxaudit.bmp.log_marginal_likelihood`: the α-integral on Beta(X+1, N0−X+1) quantile
    nodes (the binomial weight becomes uniform), the β-integral from the Beta(Y+1, N1−Y+1)
    logit-CDF interpolated on a uniform β grid. Runs in float64; the returned arrays are in the
    default float dtype. The grid is shared by both axes: when a marginal's central 90% spans
    fewer than 8 cells a RuntimeWarning says so (raise ``num_epsilons`` or lower
    ``epsilon_max``).

    Args:
      counts: one count set ``ErrorCounts(fp, n0, fn, n1)`` (scalars).
      model: the :class:`jaxaudit.bmp.PosteriorModel`, as in :func:`posterior_nuts` (None: its
        defaults); the grid reads its priors (``attack_prior``, ``prior_variance``), not the
        sampler's coordinates, and has no symmetric model.
      epsilon_max: upper end of the grid (None: from the counts); num_epsilons: grid cells per
        axis.
      num_s: quadrature points of the s-integral.
      num_alpha_nodes, num_alpha_segments: Gauss–Legendre nodes per segment and segments of the
        α-integral.
      num_knots: points of the interpolated β logit-CDF table.

    Returns:
      :class:`GridPosterior`.
    """
    counts = validate_counts(counts)
    if counts.fp.ndim != 0:
        raise ValueError("posterior_grid takes one count set (scalars)")
    model = _check_model(PosteriorModel() if model is None else model)
    if model.symmetric:
        raise ValueError("posterior_grid has no symmetric model: use model.symmetric=False")
    prior = as_attack_prior(model.attack_prior)
    prior_variance = model.prior_variance
    check_positive("prior_variance", prior_variance)
    for name, value in (("num_epsilons", num_epsilons), ("num_s", num_s),
                        ("num_alpha_nodes", num_alpha_nodes),
                        ("num_alpha_segments", num_alpha_segments)):
        check_integer(name, value, minimum=1)
    check_integer("num_knots", num_knots, minimum=3)
    with jax.enable_x64(True):
        out = _posterior_grid(counts, prior=prior, prior_variance=prior_variance,
                              eps_max=epsilon_max, num_eps=int(num_epsilons), num_s=int(num_s),
                              num_alpha_nodes=int(num_alpha_nodes),
                              num_alpha_segments=int(num_alpha_segments),
                              num_knots=int(num_knots))
    _warn_unresolved(out)
    return GridPosterior(*(jnp.asarray(x) for x in out))


def _warn_unresolved(grid: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], min_cells: int = 8
                    ) -> None:
    """RuntimeWarning when a marginal's central 90% spans fewer than ``min_cells`` grid cells:
    the grid is shared by both axes, so a posterior concentrated on one axis (e.g. ε_R ≈ 0.02
    while ε_L spreads to 6) is not resolved and its quantiles are off by up to a cell."""
    eps, _, marginal_l, marginal_r = grid
    h = eps[1] - eps[0]
    for name, dens in (("ε_L", marginal_l), ("ε_R", marginal_r)):
        cdf = np.cumsum(dens) * h
        cdf = cdf / cdf[-1]
        cells = np.searchsorted(cdf, 0.95) - np.searchsorted(cdf, 0.05) + 1
        if cells < min_cells:
            warnings.warn(
                f"posterior_grid: the central 90% of the {name} marginal spans {cells} grid "
                f"cell(s) of width {h:.3g}, too few to resolve the posterior (both marginals' "
                "quantiles can be off). Pass a larger num_epsilons or a smaller epsilon_max",
                RuntimeWarning, stacklevel=3)


def _strength_nodes(prior: AttackPrior, num_s: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) of the s-integral against the prior on s."""
    if prior.fixed is not None:
        return np.asarray([prior.fixed]), np.asarray([1.0])
    # Beta(a, b) on s = (x + 1)/2 is the Jacobi weight (1 − x)^{b−1} (1 + x)^{a−1} on [−1, 1]
    x, w = sp_special.roots_jacobi(num_s, prior.b - 1.0, prior.a - 1.0)
    return (x + 1) / 2, w / w.sum()


def _posterior_grid(counts: ErrorCounts, *, prior: AttackPrior, prior_variance: float,
                    eps_max: float | None, num_eps: int, num_s: int, num_alpha_nodes: int,
                    num_alpha_segments: int, num_knots: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if eps_max is None:
        a = (counts.fp + 0.5) / (counts.n0 + 1)
        b = (counts.fn + 0.5) / (counts.n1 + 1)
        eps_max = float(np.max(epsilons_from_errors(a, b))) + 4.5 * float(np.sqrt(prior_variance))
        if prior.optimal:
            # no prior-driven upper tail: the data bound ε (its largest plausible value is at the
            # smallest plausible error rates), so a tighter range resolves concentrated posteriors
            fp, n0, fn, n1 = (float(c) for c in counts)
            a_lo = sp_special.betaincinv(fp + 0.5, n0 - fp + 0.5, 1e-9)
            b_lo = sp_special.betaincinv(fn + 0.5, n1 - fn + 0.5, 1e-9)
            eps_hi = float(np.max(epsilons_from_errors(a_lo, b_lo)))
            eps_max = min(eps_max, max(eps_hi, 0.5))
    h = eps_max / num_eps
    eps = (np.arange(num_eps) + 0.5) * h
    eps_l, eps_r = jnp.meshgrid(jnp.asarray(eps), jnp.asarray(eps), indexing="ij")
    if prior.optimal:
        log_lik = _corner_log_lik(eps_l, eps_r, *(jnp.asarray(c, jnp.float64) for c in counts))
    else:
        s_nodes, s_weights = _strength_nodes(prior, num_s)
        tables = tuple(jnp.asarray(t) for t in _beta_tables(counts, num_alpha_segments,
                                                             num_alpha_nodes, num_knots))
        num0, num1 = jnp.asarray(counts.n0, jnp.float64), jnp.asarray(counts.n1, jnp.float64)
        log_liks = jnp.stack([_grid_log_lik(eps_l, eps_r, jnp.float64(s), *tables, num0, num1)
                              for s in s_nodes])
        log_lik = jax.scipy.special.logsumexp(
            log_liks + jnp.log(jnp.asarray(s_weights))[:, None, None], axis=0)
    log_post = (log_lik + half_normal_logpdf(eps_l, prior_variance)
                + half_normal_logpdf(eps_r, prior_variance))
    log_post = np.array(log_post, np.float64)
    log_post -= np.log(np.sum(np.exp(log_post - log_post.max())) * h * h) + log_post.max()
    dens = np.exp(log_post)
    return eps, log_post, dens.sum(1) * h, dens.sum(0) * h
