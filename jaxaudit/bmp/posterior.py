"""Posterior over (ε_L, ε_R) from attack error counts: NUTS (vmapped over nodes), a deterministic
grid reference, and the optimal-attack Jeffreys estimator.

The model is :mod:`jaxaudit.bmp.likelihood`'s; what the posterior promises (it is a Bayesian
posterior of an attack of *unknown* strength, calibrated in the sense of simulation-based
calibration, not a frequentist bound under optimal attacks) and the coverage tables are in
docs/bmp.md. The certified frequentist bound is :func:`jaxaudit.bmp.certified_epsilons`.

References:
  Hoffman & Gelman, "The No-U-Turn Sampler", JMLR 2014 (arXiv 1111.4246); blackjax (Cabezas et
  al., 2024, arXiv 2402.10797). Yıldırım et al., "MCMC for Bayesian estimation of differential
  privacy from membership inference attacks", ECML-PKDD 2025, arXiv 2504.16683 (the model and
  the optimal-attack baseline). Vehtari et al., "Rank-normalization, folding, and
  localization: an improved R-hat", arXiv 1903.08008 (the diagnostics' reading).
"""

from __future__ import annotations

import functools
import warnings
from functools import partial
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.base import get_filter_adapt_info_fn
from jax.scipy.special import xlog1py, xlogy
from scipy import special as sp_special

from jaxaudit._validation import (
    check_chunk_size,
    check_finite,
    check_integer,
    check_positive,
    check_positive_finite,
)
from jaxaudit.bmp import diagnostics
from jaxaudit.bmp.jeffreys import JeffreysEstimate, jeffreys_estimate
from jaxaudit.bmp.likelihood import (
    PRIOR_VARIANCE,
    AttackPrior,
    as_attack_prior,
    band_area,
    constrain_centered,
    constrain_corner,
    constrain_noncentered,
    half_normal_logpdf,
    log_joint_centered,
    log_joint_corner,
    log_joint_noncentered,
)
from jaxaudit.bmp.region import epsilons_from_errors, region_corner, tradeoff_curve
from jaxaudit.mia.types import ErrorCounts, validate_counts
from jaxaudit.sharding import vmap_chunked

__all__ = [
    "GridPosterior",
    "JeffreysEstimate",
    "NutsPosterior",
    "jeffreys_estimate",
    "posterior_grid",
    "posterior_nuts",
    "posterior_quantiles",
    "validate_counts",
]


class NutsPosterior(NamedTuple):
    """NUTS draws and diagnostics. Per-node fields have the node axis first (absent for scalar
    counts). Draws have shape (..., num_chains, num_samples).

    Attributes:
      eps_l, eps_r: draws of ε_L and ε_R.
      s: draws of the attack strength (constant when it was fixed).
      rhat: rank-normalised split-R-hat (Vehtari et al. 2021; bulk and folded tail), the larger
        of those of ε_L and ε_R (:func:`jaxaudit.bmp.diagnostics.rhat`).
      ess: bulk effective sample size (rank-normalised split chains), the smaller of those of
        ε_L and ε_R (:func:`jaxaudit.bmp.diagnostics.bulk_ess`).
      divergences: number of divergent transitions after warm-up (all chains).
      mean_steps: mean number of leapfrog steps per transition after warm-up.
    """

    eps_l: jax.Array
    eps_r: jax.Array
    s: jax.Array
    rhat: jax.Array
    ess: jax.Array
    divergences: jax.Array
    mean_steps: jax.Array


# ----------------------------------------------------------------------------------------------
# NUTS
# ----------------------------------------------------------------------------------------------

#: Largest thinning factor of :func:`posterior_nuts`'s ``min_ess`` rerun.
MAX_THIN = 8

#: Default NUTS tree-depth caps of :func:`posterior_nuts` per parameterization (at most 2^d − 1
#: leapfrog steps per transition).
MAX_NUM_DOUBLINGS = {"centered": 3, "noncentered": 4, "corner": 3}
#: ... and during warm-up, where no draw is kept: one doubling fewer for the centered and corner
#: coordinates (the step size and mass matrix adapt as well; a third of the sampler's time).
WARMUP_MAX_NUM_DOUBLINGS = {"centered": 2, "noncentered": 4, "corner": 2}


def _initial_positions(key, counts, num_chains, dim, parameterization):
    """Over-dispersed starting points around the counts' operating point."""
    fp, n0, fn, n1 = counts
    alpha = (fp + 0.5) / (n0 + 1.0)
    beta = jnp.minimum((fn + 0.5) / (n1 + 1.0), 0.98 * (1 - alpha))
    noise = jax.random.normal(key, (num_chains, dim), dtype=alpha.dtype)
    if parameterization in ("centered", "corner"):
        a = jnp.log(alpha) - jnp.log1p(-alpha)
        q = beta / (1 - alpha)
        b = jnp.log(q) - jnp.log1p(-q)
        center = jnp.stack([a, b, jnp.log(0.5), jnp.log(0.5), 0.0 * a][:dim])
        return center + 0.3 * noise
    center = jnp.zeros((dim,), alpha.dtype)
    eps_l, eps_r = epsilons_from_errors(alpha, beta)
    center = center.at[0].set(jnp.log(eps_l + 0.5)).at[1].set(jnp.log(eps_r + 0.5))
    return center + 0.3 * noise


def _on_coordinates(fn):
    """``fn`` of a (dim,) position as a function of the tuple of its coordinates."""
    return lambda coords: fn(jnp.stack(coords, axis=-1))


def _one_node(key, counts, prior_ab, *, fixed_strength, prior_variance, num_warmup, num_samples,
              num_chains, max_num_doublings, warmup_max_num_doublings, parameterization,
              target_acceptance_rate, symmetric, thin=1):
    """Window adaptation + NUTS for one count set, ``num_chains`` chains (vmapped); with
    ``thin`` > 1, ``num_samples × thin`` transitions of which every ``thin``-th is kept."""
    if parameterization == "corner":
        logdensity = partial(log_joint_corner, counts=counts, prior_variance=prior_variance)
        constrain = constrain_corner
        dim = 2
    elif parameterization == "centered":
        logdensity = partial(log_joint_centered, counts=counts, prior_variance=prior_variance,
                             symmetric=symmetric, strength_prior=prior_ab)
        constrain = partial(constrain_centered, symmetric=symmetric)
        dim = 4 if symmetric else 5
    else:
        logdensity = partial(log_joint_noncentered, counts=counts, prior_variance=prior_variance,
                             attack_strength=fixed_strength, strength_prior=prior_ab)
        constrain = partial(constrain_noncentered, attack_strength=fixed_strength)
        dim = 4 if fixed_strength is not None else 5
    key_init, key_chains = jax.random.split(key)
    init = _initial_positions(key_init, counts, num_chains, dim, parameterization)
    # The sampler's position is a tuple of scalar coordinates rather than a (dim,) vector: vmapped
    # over nodes and chains each coordinate is then one contiguous array, and the log density's
    # gradient avoids strided slices of a (lanes, dim) array (about 2.5x cheaper on a CPU).
    init = tuple(init[:, j] for j in range(dim))
    logdensity = _on_coordinates(logdensity)
    constrain = _on_coordinates(constrain)

    def chain(key, position):
        key_warm, key_draw = jax.random.split(key)
        warmup = blackjax.window_adaptation(
            blackjax.nuts, logdensity, target_acceptance_rate=target_acceptance_rate,
            adaptation_info_fn=get_filter_adapt_info_fn(),
            max_num_doublings=warmup_max_num_doublings)
        (state, params), _ = warmup.run(key_warm, position, num_steps=num_warmup)
        params = {**params, "max_num_doublings": max_num_doublings}  # not the warm-up's cap
        kernel = blackjax.nuts(logdensity, **params).step

        def step(state, k):
            state, info = kernel(k, state)
            c = constrain(state.position)
            return state, (c.eps_l, c.eps_r, c.s, info.is_divergent, info.num_integration_steps)

        def thinned_step(state, k):
            def transition(carry, k_t):
                state, div, steps = carry
                state, info = kernel(k_t, state)
                return (state, div + info.is_divergent, steps + info.num_integration_steps), None

            zero = jnp.zeros((), jnp.int32)
            (state, div, steps), _ = jax.lax.scan(transition, (state, zero, zero),
                                                  jax.random.split(k, thin))
            c = constrain(state.position)
            return state, (c.eps_l, c.eps_r, c.s, div, steps / thin)

        if thin > 1:
            step = thinned_step

        _, out = jax.lax.scan(step, state, jax.random.split(key_draw, num_samples))
        return out

    eps_l, eps_r, s, div, steps = jax.vmap(chain)(jax.random.split(key_chains, num_chains), init)
    # rhat and ess are filled in by _diagnose, outside this program (its fast exact sort needs
    # 64-bit integers)
    return NutsPosterior(eps_l, eps_r, s, None, None, jnp.sum(div), jnp.mean(steps))


@jax.jit
@jax.vmap
def _diagnose_nodes(eps_l, eps_r):
    """(R-hat, ESS) per node: the larger rank-normalised split-R-hat and the smaller bulk ESS of
    ε_L and ε_R."""
    d_l, d_r = diagnostics.diagnose(eps_l), diagnostics.diagnose(eps_r)
    return jnp.maximum(d_l.rhat, d_r.rhat), jnp.minimum(d_l.ess, d_r.ess)


def _diagnose(post: NutsPosterior) -> NutsPosterior:
    """Fill in ``rhat`` and ``ess`` (in 64-bit mode, for the packed-integer sort of
    :mod:`jaxaudit.bmp.diagnostics`; returned in the draws' dtype)."""
    with jax.enable_x64(True):
        rhat, ess = _diagnose_nodes(post.eps_l, post.eps_r)
    dtype = post.eps_l.dtype
    return post._replace(rhat=rhat.astype(dtype), ess=ess.astype(dtype))


@functools.lru_cache(maxsize=16)
def _runner(fixed_strength, prior_variance, num_warmup, num_samples, num_chains,
            max_num_doublings, warmup_max_num_doublings, parameterization, target_acceptance_rate,
            chunk_size, devices, symmetric, thin=1):
    """The jit-compiled, node-vmapped sampler for one configuration (cached: calls with the same
    settings and the same padded node count reuse the compiled program). The Beta prior's (a, b)
    are per-node inputs, so every Beta prior shares one program."""
    fn = partial(_one_node, fixed_strength=fixed_strength, prior_variance=prior_variance,
                 num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                 max_num_doublings=max_num_doublings,
                 warmup_max_num_doublings=warmup_max_num_doublings,
                 parameterization=parameterization,
                 target_acceptance_rate=target_acceptance_rate, symmetric=symmetric, thin=thin)
    return vmap_chunked(lambda xs: fn(*xs), chunk_size=chunk_size, devices=devices)


def _count_table(counts: ErrorCounts) -> np.ndarray:
    """(num_nodes, 4) float table of the counts (fp, n0, fn, n1)."""
    return np.stack([np.atleast_1d(c).ravel() for c in counts], axis=1)


def _deduplicate(table: np.ndarray):
    """Distinct rows and, for every original row, the index of its distinct row (identical counts
    have identical posteriors: sample once, share the draws)."""
    uniq, inverse = np.unique(table, axis=0, return_inverse=True)
    return uniq, inverse.ravel()


def _size_bucket(num_rows: int, chunk_size: int | None) -> int:
    """Padded row count: a few sizes only, so that tables of similar sizes share one compiled
    program. Without chunks: powers of two up to 1024, then multiples of 256. With chunks of
    ``chunk_size``: a power-of-two number of chunks."""
    if chunk_size is None:
        if num_rows <= 1024:
            return 1 if num_rows <= 1 else 2 ** int(np.ceil(np.log2(num_rows)))
        return -(-num_rows // 256) * 256
    num_chunks = -(-num_rows // chunk_size)
    return chunk_size * 2 ** int(np.ceil(np.log2(num_chunks)))


def _pad_rows(table: np.ndarray, size: int) -> np.ndarray:
    """Repeat the last row up to ``size`` rows (the padding lanes' results are dropped)."""
    return np.concatenate([table, np.repeat(table[-1:], size - table.shape[0], axis=0)])


def _check_nuts_settings(num_warmup, num_samples, num_chains, max_num_doublings,
                         warmup_max_num_doublings, target_acceptance_rate, prior_variance,
                         chunk_size):
    for name, value in (("num_warmup", num_warmup), ("num_samples", num_samples)):
        check_integer(name, value, minimum=1)
    check_integer("num_chains", num_chains, minimum=2)  # R-hat needs several chains
    for name, value in (("max_num_doublings", max_num_doublings),
                        ("warmup_max_num_doublings", warmup_max_num_doublings)):
        if value is not None:
            check_integer(name, value, minimum=1)
    rate = float(check_finite("target_acceptance_rate", target_acceptance_rate))
    if not 0.0 < rate < 1.0:
        raise ValueError(f"target_acceptance_rate must lie in (0, 1), got {rate}")
    check_positive("prior_variance", prior_variance)
    check_chunk_size(chunk_size)


def posterior_nuts(key, counts, *, attack_prior=None, num_warmup: int = 500,
                   num_samples: int = 1000, num_chains: int = 4,
                   prior_variance: float = PRIOR_VARIANCE, max_num_doublings: int | None = None,
                   warmup_max_num_doublings: int | None = None,
                   parameterization: str | None = None, target_acceptance_rate: float = 0.8,
                   symmetric: bool = False, deduplicate: bool = True,
                   chunk_size: int | None = None, devices=None,
                   min_ess: float | None = None) -> NutsPosterior:
    """Posterior over (ε_L, ε_R) by NUTS with window adaptation, vmapped over nodes.

    The model is :mod:`jaxaudit.bmp.likelihood`'s: half-normal priors of variance
    ``prior_variance``, the attack strength s ~ ``attack_prior`` (Beta(1, 1) by default), the
    attack point uniform on the band R(ε) \\ R(sε), binomial counts. The attack point is kept as
    latent variables (cheap gradients: no quadrature); ``parameterization`` chooses the
    coordinates:

    * ``"centered"`` (default for a Beta prior): logits of (α, β/(1 − α)),
      softplus⁻¹(ε − ε̂(α, β)) and
      logit(s/s_max) — the data pin the first two coordinates along axes, so the adapted diagonal
      mass matrix makes the posterior nearly isotropic and trajectories short;
    * ``"noncentered"`` (required for a fixed s): (log ε_L, log ε_R[, logit s]) plus a uniform
      (u, v) mapped onto the band. It mixes poorly when the counts pin (α, β) tightly (large N):
      prefer a Beta prior concentrated near 1 (e.g. Beta(20, 1)) to a fixed s (docs/bmp.md);
    * ``"corner"`` (the only one, and automatic, for ``attack_prior="optimal"``): the attack at
      the corner of R(ε), coordinates (logit α, logit(β/(1 − α))) with ε = ε̂(α, β)
      (:func:`jaxaudit.bmp.log_joint_corner`).

    A Bayesian posterior, not a frequentist bound: under the default Beta(1, 1) an optimal
    attack's operating point is read as a weaker attack on a leakier mechanism, so the lower
    quantiles sit above the truth more often than their level. Priors on s concentrated near 1
    raise that coverage but cannot bring the smaller side to 90% (the model cannot tell which
    side of R(ε) is tight), and NUTS mixes poorly under them; for an attack believed optimal use
    ``attack_prior="optimal"``, whose 5% quantiles cover at 0.91–0.96 per side under optimal
    attacks. :func:`jaxaudit.bmp.certified_epsilons` carries the guarantee (docs/bmp.md:
    coverage tables, calibration).

    Steps: validate; deduplicate the count table (identical counts, identical posteriors); pad it
    to a size bucket; one jit-compiled call (:func:`jaxaudit.sharding.vmap_chunked`: chunks of
    ``chunk_size`` nodes run one after another, the node axis sharded over ``devices``) in which
    every (node, chain) runs its own window adaptation (``num_warmup`` steps) and ``num_samples``
    NUTS transitions; then undo the padding and the deduplication.

    Args:
      key: PRNG key.
      counts: ``ErrorCounts(fp, n0, fn, n1)`` of scalars or of per-node arrays (N,).
      attack_prior: prior on the attack: None (s ~ Beta(1, 1)), ``(a, b)``, a fixed s in
        [0, 1), ``"optimal"`` (the corner of R(ε)), or an :class:`jaxaudit.bmp.AttackPrior`
        (see :func:`jaxaudit.bmp.as_attack_prior`).
      num_warmup, num_samples, num_chains: sampler sizes.
      prior_variance: variance of the half-normal priors on ε_L, ε_R.
      max_num_doublings: NUTS tree-depth cap (≥ 1; at most 2^d − 1 leapfrog steps per
        transition; the nodes move in lock-step, so the cap bounds the cost of the slowest lane).
        None: 3 (≤ 7 steps) for the centered coordinates, 4 for the non-centered ones (whose
        funnel needs longer trajectories). Centered, on a Cora audit (2017 count tuples), cap 3
        gives the same smallest ESS as cap 4 (≥ 480, raw draws) in half the time: the trajectories
        average 6.4 steps either way, but with cap 4 every transition waits for the lane that
        doubles a fourth time (docs/bmp.md, section 5). The corner model's 2-d posterior: 3.
      warmup_max_num_doublings: the cap during warm-up (None: 2 for the centered and corner
        coordinates, 4 for the non-centered ones, at most ``max_num_doublings``). Warm-up keeps
        no draws and only adapts the step size and mass matrix, which shorter trajectories
        estimate as well: on the Cora audit, cap 2 in warm-up cut the time by 13% with the same
        smallest bulk ESS; cap 1 lost a quarter of it.
      parameterization: "centered", "noncentered" or None (automatic; "corner" is implied by
        ``attack_prior="optimal"``).
      target_acceptance_rate: dual-averaging target in (0, 1).
      symmetric: fit the symmetric MP baseline ε_L = ε_R instead (centered only).
      deduplicate: sample once per distinct count tuple.
      chunk_size: nodes per vmapped chunk (None: all at once). The node count is padded to a
        power-of-two number of chunks (or a size bucket), so calls with similar node counts reuse
        one compilation (NUTS programs take tens of seconds to compile on a CPU).
      devices: devices to shard the node axis over (None: all visible).
      min_ess: None, or a bulk ESS every count set should reach: the count sets below it are
        sampled once more, from a fresh key and warm-up, running ``k × num_samples``
        transitions and keeping every k-th (the same number of draws, k = ⌈1.25 min_ess / their
        smallest ESS⌉, 2 to 8); the rerun's draws and diagnostics replace the first ones (a
        RuntimeWarning names the count sets still below ``min_ess``).
        Costs a second compiled program the first time. The hard count sets are the degenerate
        ones whose attack is wrong on (nearly) every run (docs/bmp.md, section 5).

    Returns:
      :class:`NutsPosterior`.

    Example:
      >>> from jaxaudit.mia.types import ErrorCounts
      >>> post = posterior_nuts(jax.random.key(0), ErrorCounts(10, 100, 30, 100),
      ...                       num_warmup=200, num_samples=200)
      >>> post.eps_l.shape
      (4, 200)
    """
    counts = validate_counts(counts)
    prior = as_attack_prior(attack_prior)
    _check_nuts_settings(num_warmup, num_samples, num_chains, max_num_doublings,
                         warmup_max_num_doublings, target_acceptance_rate, prior_variance,
                         chunk_size)
    if min_ess is not None:
        check_positive_finite("min_ess", min_ess)
    if prior.optimal:
        if parameterization not in (None, "corner"):
            raise ValueError(f"attack_prior='optimal' has its own coordinates; leave "
                             f"parameterization=None, got {parameterization!r}")
        if symmetric:
            raise ValueError("symmetric=True needs a Beta attack_prior, not 'optimal'")
        parameterization = "corner"
    elif parameterization is None:
        parameterization = "centered" if prior.fixed is None else "noncentered"
    if parameterization not in ("centered", "noncentered", "corner") or (
            parameterization == "corner" and not prior.optimal):
        raise ValueError(f"parameterization must be 'centered' or 'noncentered', got "
                         f"{parameterization!r}")
    if max_num_doublings is None:
        max_num_doublings = MAX_NUM_DOUBLINGS[parameterization]
    if warmup_max_num_doublings is None:
        warmup_max_num_doublings = min(WARMUP_MAX_NUM_DOUBLINGS[parameterization],
                                       max_num_doublings)
    if symmetric and parameterization != "centered":
        raise ValueError("symmetric=True needs the centered parameterization (a Beta prior on s)")
    if parameterization == "centered" and prior.fixed is not None:
        raise ValueError("parameterization='centered' needs a Beta attack_prior; use "
                         "'noncentered' for a fixed s")

    table = _count_table(counts)
    num_given = table.shape[0]
    inverse = None
    if deduplicate:
        table, inverse = _deduplicate(table)
    num_rows = table.shape[0]
    table = _pad_rows(table, _size_bucket(num_rows, chunk_size))
    settings = (prior.fixed, float(prior_variance), int(num_warmup), int(num_samples),
                int(num_chains), int(max_num_doublings), int(warmup_max_num_doublings),
                parameterization, float(target_acceptance_rate))
    devices = None if devices is None else tuple(devices)

    def sample(key, table, chunk, thin=1):
        """One compiled, node-vmapped run over the rows of ``table``, diagnosed."""
        dtype = jnp.result_type(float)
        rows = ErrorCounts(*(jnp.asarray(table[:, j], dtype) for j in range(4)))
        prior_ab = tuple(jnp.full(table.shape[0], x, dtype) for x in (prior.a, prior.b))
        run = _runner(*settings, chunk, devices, bool(symmetric), thin)
        return _diagnose(run((jax.random.split(key, table.shape[0]), rows, prior_ab)))

    out = sample(key, table, None if chunk_size is None else int(chunk_size))
    if min_ess is not None:
        low = np.flatnonzero(np.asarray(out.ess[:num_rows]) < min_ess)
        if low.size:
            smallest = max(float(np.nanmin(np.asarray(out.ess)[low])), 1.0)
            thin = int(np.clip(np.ceil(1.25 * min_ess / smallest), 2, MAX_THIN))
            sub = _pad_rows(table[low], _size_bucket(low.size, None))
            more = sample(jax.random.fold_in(key, 1), sub, None, thin)
            out = jax.tree.map(lambda a, b: a.at[low].set(b[:low.size].astype(a.dtype)), out,
                               more)
            still = int(np.sum(np.asarray(out.ess[:num_rows]) < min_ess))
            if still:
                warnings.warn(f"{still} of {num_rows} distinct count sets stay below "
                              f"min_ess={min_ess:g} after a rerun thinned by {thin}",
                              RuntimeWarning, stacklevel=2)
    _warn_unmixed(np.asarray(out.rhat[:num_rows]), prior)
    out = jax.tree.map(lambda x: x[inverse] if inverse is not None else x[:num_rows], out)
    if counts.fp.ndim == 0:
        return jax.tree.map(lambda x: x[0], out)
    assert out.rhat.shape[0] == num_given
    return jax.tree.map(lambda x: x.reshape(counts.fp.shape + x.shape[1:]), out)


def _warn_unmixed(rhat: np.ndarray, prior, threshold: float = 1.05) -> None:
    """RuntimeWarning when some count sets' chains disagree (R-hat above ``threshold``, Vehtari
    et al. 2021's recommended 1.01 relaxed to the 1.05 the audits report): their draws are not a
    posterior yet. Strong priors on s are the usual cause (docs/bmp.md, section 5)."""
    bad = ~(rhat <= threshold)  # NaN counts as unmixed
    if bad.any():
        warnings.warn(
            f"NUTS chains have not mixed for {int(bad.sum())} of {bad.size} distinct count sets "
            f"(R-hat > {threshold}, attack prior {prior.describe()}): their quantiles are not "
            "reliable; run longer (num_warmup, num_samples), or use posterior_grid for them",
            RuntimeWarning, stacklevel=3)


def posterior_quantiles(draws, q=(0.05, 0.5, 0.95)):
    """Quantiles of draws pooled over the trailing (chain, sample) axes: shape (len(q), ...)."""
    draws = jnp.asarray(draws)
    flat = draws.reshape(draws.shape[:-2] + (-1,))
    return jnp.quantile(flat, jnp.asarray(q), axis=-1)


# ----------------------------------------------------------------------------------------------
# Deterministic grid posterior (reference)
# ----------------------------------------------------------------------------------------------


class GridPosterior(NamedTuple):
    """Grid posterior of one count set.

    Attributes:
      eps: grid of cell midpoints shared by ε_L and ε_R, shape (n,).
      log_density: normalised log posterior density on the (ε_L, ε_R) grid, shape (n, n).
      marginal_l, marginal_r: marginal densities of ε_L and ε_R on the grid, shape (n,).
    """

    eps: jax.Array
    log_density: jax.Array
    marginal_l: jax.Array
    marginal_r: jax.Array

    def cdf(self, which: str, x):
        """Marginal CDF of ``which`` ("l" or "r") at ``x`` (piecewise-constant density)."""
        edges, cdf = self._edges_cdf(which)
        return np.interp(np.asarray(x), edges, cdf)

    def quantile(self, which: str, q):
        """Quantile(s) of the marginal of ``which`` ("l" or "r"), piecewise-constant density."""
        edges, cdf = self._edges_cdf(which)
        return np.interp(np.asarray(q), cdf, edges)

    def density_at(self, which: str, x):
        dens = np.asarray(self.marginal_l if which == "l" else self.marginal_r, np.float64)
        return np.interp(x, np.asarray(self.eps, np.float64), dens)

    def _edges_cdf(self, which):
        if which not in ("l", "r"):
            raise ValueError(f"which must be 'l' or 'r', got {which!r}")
        dens = np.asarray(self.marginal_l if which == "l" else self.marginal_r, np.float64)
        eps = np.asarray(self.eps, np.float64)
        h = eps[1] - eps[0]
        edges = np.concatenate([[eps[0] - h / 2], eps + h / 2])
        cdf = np.concatenate([[0.0], np.cumsum(dens * h)])
        return edges, cdf / cdf[-1]


def _beta_tables(counts, num_alpha_segments, alpha_order, num_knots, z_max=30.0):
    """Host-side tables: nodes for the α-integral on the logit-quantile scale of
    Beta(X+1, N0−X+1) (so the binomial weight becomes the logistic density), and the logit-CDF of
    Beta(Y+1, N1−Y+1) on a uniform β grid (for the β-integral)."""
    fp, n0, fn, n1 = (float(c) for c in counts)
    x, w = np.polynomial.legendre.leggauss(alpha_order)
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


def _logit_cdf(x, z_table):
    n = z_table.shape[0] - 1
    pos = jnp.clip(x, 0.0, 1.0) * n
    i0 = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, n - 1)
    frac = pos - i0
    return z_table[i0] * (1 - frac) + z_table[i0 + 1] * frac


@jax.jit
def _grid_log_lik(eps_l, eps_r, s, alpha_nodes, alpha_weights, z_table, n0, n1):
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
def _corner_log_lik(eps_l, eps_r, fp, n0, fn, n1):
    """log Bin(X; N0, α) + log Bin(Y; N1, β) at the corner (α, β) = c(ε_L, ε_R) (up to the
    binomial coefficients, constant in ε)."""
    alpha, beta = region_corner(eps_l, eps_r)
    return (xlogy(fp, alpha) + xlog1py(n0 - fp, -alpha) + xlogy(fn, beta)
            + xlog1py(n1 - fn, -beta))


def posterior_grid(counts, *, attack_prior=None, prior_variance: float = PRIOR_VARIANCE,
                   eps_max: float | None = None, num_eps: int = 160, num_s: int = 16,
                   alpha_order: int = 8, num_alpha_segments: int = 16,
                   num_knots: int = 8193) -> GridPosterior:
    """Deterministic grid posterior of the same model as :func:`posterior_nuts` (one count set).

    p(ε_L, ε_R | X, Y) ∝ HN(ε_L) HN(ε_R) ∫_0^1 p(X, Y | ε, s) Beta(s; a, b) ds on a regular grid
    of cell midpoints on (0, eps_max]², the s-integral by Gauss–Jacobi quadrature for the Beta
    weight (``num_s`` points; Gauss–Legendre for Beta(1, 1); one point for a fixed s); for
    ``attack_prior="optimal"`` the likelihood is Bin(X; N0, α) Bin(Y; N1, β) at the corner
    (α, β) = c(ε) of R(ε), evaluated directly in ε (no change of coordinates). The
    marginal likelihood is computed by a quadrature independent of
    :func:`jaxaudit.bmp.log_marginal_likelihood`: the α-integral on Beta(X+1, N0−X+1) quantile
    nodes (the binomial weight becomes uniform), the β-integral from the Beta(Y+1, N1−Y+1)
    logit-CDF interpolated on a uniform β grid. Runs in float64; the returned arrays are in the
    default float dtype. The grid is shared by both axes: when a marginal's central 90% spans
    fewer than 8 cells a RuntimeWarning says so (raise ``num_eps`` or lower ``eps_max``).
    """
    counts = validate_counts(counts)
    if counts.fp.ndim != 0:
        raise ValueError("posterior_grid takes one count set (scalars)")
    prior = as_attack_prior(attack_prior)
    check_positive("prior_variance", prior_variance)
    for name, value in (("num_eps", num_eps), ("num_s", num_s), ("alpha_order", alpha_order),
                        ("num_alpha_segments", num_alpha_segments)):
        check_integer(name, value, minimum=1)
    check_integer("num_knots", num_knots, minimum=3)
    with jax.enable_x64(True):
        out = _posterior_grid(counts, prior=prior, prior_variance=prior_variance,
                              eps_max=eps_max, num_eps=int(num_eps), num_s=int(num_s),
                              alpha_order=int(alpha_order),
                              num_alpha_segments=int(num_alpha_segments),
                              num_knots=int(num_knots))
    _warn_unresolved(out)
    return GridPosterior(*(jnp.asarray(x) for x in out))


def _warn_unresolved(grid, min_cells: int = 8) -> None:
    """RuntimeWarning when a marginal's central 90% spans fewer than ``min_cells`` grid cells:
    the grid is shared by both axes, so a posterior concentrated on one axis (e.g. ε_R ≈ 0.02
    while ε_L spreads to 6) is not resolved and its quantiles are off by up to a cell."""
    eps, _, marginal_l, marginal_r = grid
    h = eps[1] - eps[0]
    for name, dens in (("eps_l", marginal_l), ("eps_r", marginal_r)):
        cdf = np.cumsum(dens) * h
        cdf = cdf / cdf[-1]
        cells = np.searchsorted(cdf, 0.95) - np.searchsorted(cdf, 0.05) + 1
        if cells < min_cells:
            warnings.warn(
                f"posterior_grid: the central 90% of the {name} marginal spans {cells} grid "
                f"cell(s) of width {h:.3g}, too few to resolve the posterior (both marginals' "
                "quantiles can be off). Pass a larger num_eps or a smaller eps_max",
                RuntimeWarning, stacklevel=3)


def _strength_nodes(prior: AttackPrior, num_s: int):
    """Nodes and weights (summing to 1) of the s-integral against the prior on s."""
    if prior.fixed is not None:
        return np.asarray([prior.fixed]), np.asarray([1.0])
    # Beta(a, b) on s = (x + 1)/2 is the Jacobi weight (1 − x)^{b−1} (1 + x)^{a−1} on [−1, 1]
    x, w = sp_special.roots_jacobi(num_s, prior.b - 1.0, prior.a - 1.0)
    return (x + 1) / 2, w / w.sum()


def _posterior_grid(counts, *, prior, prior_variance, eps_max, num_eps, num_s, alpha_order,
                    num_alpha_segments, num_knots):
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
                                                             alpha_order, num_knots))
        n0, n1 = jnp.asarray(counts.n0, jnp.float64), jnp.asarray(counts.n1, jnp.float64)
        log_liks = jnp.stack([_grid_log_lik(eps_l, eps_r, jnp.float64(s), *tables, n0, n1)
                              for s in s_nodes])
        log_lik = jax.scipy.special.logsumexp(
            log_liks + jnp.log(jnp.asarray(s_weights))[:, None, None], axis=0)
    log_post = (log_lik + half_normal_logpdf(eps_l, prior_variance)
                + half_normal_logpdf(eps_r, prior_variance))
    log_post = np.array(log_post, np.float64)
    log_post -= np.log(np.sum(np.exp(log_post - log_post.max())) * h * h) + log_post.max()
    dens = np.exp(log_post)
    return eps, log_post, dens.sum(1) * h, dens.sum(0) * h
