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
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple, TypeVar

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.base import get_filter_adapt_info_fn
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_chunk_size,
    check_finite,
    check_instance,
    check_integer,
    check_key,
    check_positive,
    check_positive_finite,
    is_traced,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.bmp import diagnostics, driver
from jaxaudit.bmp.likelihood import (
    DELTA_LINKS,
    PRIOR_VARIANCE,
    AttackPrior,
    AttackPriorSpec,
    LogDensity,
    as_attack_prior,
    make_log_density,
)
from jaxaudit.bmp.region import epsilons_from_errors
from jaxaudit.mia.types import ErrorCounts, validate_counts

__all__ = ["NutsConfig", "NutsPosterior", "PosteriorModel", "node_log_density", "nuts_node",
           "posterior_nuts", "posterior_quantiles"]

_R = TypeVar("_R")


class _SamplerSettings(NamedTuple):
    """The static settings of one compiled sampler (a cache key of :func:`_runner`): the
    :class:`NutsConfig` sizes, the resolved tree-depth caps and the model's δ link."""

    num_warmup: int
    num_samples: int
    num_chains: int
    max_num_doublings: int
    warmup_max_num_doublings: int
    target_acceptance_rate: float
    delta_link: str


class PosteriorModel(NamedTuple):
    """The model of the posterior over (ε_L, ε_R) (:mod:`jaxaudit.bmp.likelihood`; docs/bmp.md):
    what :func:`posterior_nuts`, :func:`nuts_node`, :func:`node_log_density` and
    :func:`jaxaudit.bmp.posterior_grid` fit, apart from the sampler (:class:`NutsConfig`). Pass
    it as the argument after the counts, ``model=PosteriorModel(...)``.

    Attributes:
      attack_prior: prior on the attack strength s: None (s ~ Beta(1, 1), agnostic), ``(a, b)``,
        a fixed s in [0, 1), ``"optimal"`` (the attack at the corner of R(ε)), or an
        :class:`jaxaudit.bmp.AttackPrior` (see :func:`jaxaudit.bmp.likelihood.as_attack_prior`).
      prior_variance: variance of the half-normal priors on ε_L, ε_R (default 10).
      parameterization: the sampler's coordinates, "centered", "noncentered" or None
        (automatic: centered for a Beta prior, non-centered for a fixed s, "corner" for
        ``attack_prior="optimal"``); see :func:`posterior_nuts`. The grid does not read it.
      symmetric: fit the symmetric MP model ε_L = ε_R instead (a Beta prior and the centered
        coordinates only; default False).
      delta_link: the centered coordinates' δ = ε − ε̂ link, "softplus" (default) or "exp"
        (δ = e^z; compared in benchmarks/bmp_delta_link.py). The grid does not read it.
    """

    attack_prior: AttackPriorSpec = None
    prior_variance: float = PRIOR_VARIANCE
    parameterization: str | None = None
    symmetric: bool = False
    delta_link: str = "softplus"

    def check(self) -> PosteriorModel:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, an
        ``ArgumentTypeError``, also a ``TypeError``); returns the model. The functions that take
        it call it first."""
        return _check_model(self)


def _check_model(model: object) -> PosteriorModel:
    model = check_instance("model", model, PosteriorModel)
    check_config_fields(model, "model")
    as_attack_prior(model.attack_prior)
    check_positive_finite("prior_variance", model.prior_variance)
    if model.delta_link not in DELTA_LINKS:
        raise ValueError(f"delta_link must be one of {DELTA_LINKS}, got {model.delta_link!r}")
    return model


class NutsPosterior(NamedTuple):
    """NUTS draws and diagnostics. Per-node fields have the node axis first (absent for scalar
    counts). Draws have shape (..., num_chains, num_samples).

    Attributes:
      epsilon_left, epsilon_right: draws of ε_L and ε_R.
      s: draws of the attack strength (constant when it was fixed).
      rhat: rank-normalised split-R-hat (Vehtari et al. 2021; bulk and folded tail), the larger
        of those of ε_L and ε_R (:func:`jaxaudit.bmp.diagnostics.rhat`).
      ess: bulk effective sample size (rank-normalised split chains), the smaller of those of
        ε_L and ε_R (:func:`jaxaudit.bmp.diagnostics.bulk_ess`).
      divergences: number of divergent transitions after warm-up (all chains).
      mean_steps: mean number of leapfrog steps per transition after warm-up.
      mcse_median: Monte Carlo standard error of the posterior median, the larger of those of
        ε_L and ε_R (:func:`jaxaudit.bmp.diagnostics.median_mcse`: from the ESS of the
        indicator of the median, Vehtari et al. 2021, section 4.3). The spread of the median
        over independent runs; it can be large even at a bulk ESS of several hundred where the
        marginal density at the median is low.
    """

    epsilon_left: jax.Array
    epsilon_right: jax.Array
    s: jax.Array
    rhat: jax.Array
    ess: jax.Array
    divergences: jax.Array
    mean_steps: jax.Array
    mcse_median: jax.Array | None = None


# ----------------------------------------------------------------------------------------------
# NUTS
# ----------------------------------------------------------------------------------------------

#: Largest thinning factor of :func:`posterior_nuts`'s ``min_ess`` rerun.
MAX_THIN = 8
#: Fewest lanes (padded rows) of a ``min_ess`` rerun.
RERUN_ROWS = 16

#: Default NUTS tree-depth caps of :func:`posterior_nuts` per parameterization (at most 2^d − 1
#: leapfrog steps per transition).
MAX_NUM_DOUBLINGS = {"centered": 3, "noncentered": 4, "corner": 3}
#: ... and during warm-up, where no draw is kept: one doubling fewer for the centered and corner
#: coordinates (the step size and mass matrix adapt as well; a third of the sampler's time).
WARMUP_MAX_NUM_DOUBLINGS = {"centered": 2, "noncentered": 4, "corner": 2}


def _initial_positions(key: jax.Array, counts: ErrorCounts, num_chains: int, dim: int,
                       parameterization: str) -> jax.Array:
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


def _on_coordinates(fn: Callable[[jax.Array], _R]) -> Callable[[tuple[jax.Array, ...]], _R]:
    """``fn`` of a (dim,) position as a function of the tuple of its coordinates."""
    return lambda coords: fn(jnp.stack(coords, axis=-1))


def _one_node(key: jax.Array, counts: ErrorCounts, prior_ab: tuple[jax.Array, jax.Array],
              thin: jax.Array, *, fixed_strength: float | None, prior_variance: float,
              sampler: _SamplerSettings, parameterization: str, symmetric: bool,
              thinned: bool = False) -> NutsPosterior:
    """Window adaptation + NUTS for one count set, ``num_chains`` chains (vmapped); when
    ``thinned``, ``num_samples × thin`` transitions of which every ``thin``-th is kept (``thin``
    a traced integer ≥ 1, so one compiled program serves every thinning; ignored otherwise).
    ``sampler``: the :class:`_SamplerSettings`."""
    (num_warmup, num_samples, num_chains, max_num_doublings, warmup_max_num_doublings,
     target_acceptance_rate, link) = sampler
    target = make_log_density(parameterization, counts, prior_variance=prior_variance,
                              strength_prior=prior_ab, attack_strength=fixed_strength,
                              symmetric=symmetric, link=link)
    dim = target.dim
    key_init, key_chains = jax.random.split(key)
    start = _initial_positions(key_init, counts, num_chains, dim, parameterization)
    # The sampler's position is a tuple of scalar coordinates rather than a (dim,) vector: vmapped
    # over nodes and chains each coordinate is then one contiguous array, and the log density's
    # gradient avoids strided slices of a (lanes, dim) array (about 2.5x cheaper on a CPU).
    init = tuple(start[:, j] for j in range(dim))
    logdensity = _on_coordinates(target.logdensity_fn)
    constrain = _on_coordinates(target.constrain)

    def chain(key: jax.Array, position: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        key_warm, key_draw = jax.random.split(key)
        warmup = blackjax.window_adaptation(
            blackjax.nuts, logdensity, target_acceptance_rate=target_acceptance_rate,
            adaptation_info_fn=get_filter_adapt_info_fn(),
            max_num_doublings=warmup_max_num_doublings)
        (state, params), _ = warmup.run(key_warm, position, num_steps=num_warmup)
        params = {**params, "max_num_doublings": max_num_doublings}  # not the warm-up's cap
        kernel = blackjax.nuts(logdensity, **params).step

        def step(state: Any, k: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
            state, info = kernel(k, state)
            c = constrain(state.position)
            return state, (c.epsilon_left, c.epsilon_right, c.s, info.is_divergent,
                           info.num_integration_steps)

        def thinned_step(state: Any, k: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
            def transition(carry: tuple[Any, jax.Array, jax.Array], k_t: jax.Array
                          ) -> tuple[tuple[Any, jax.Array, jax.Array], None]:
                state, div, steps = carry
                state, info = kernel(k_t, state)
                return (state, div + info.is_divergent, steps + info.num_integration_steps), None

            zero = jnp.zeros((), jnp.int32)
            state, div, steps = jax.lax.fori_loop(
                0, thin, lambda i, carry: transition(carry, jax.random.fold_in(k, i))[0],
                (state, zero, zero))
            c = constrain(state.position)
            return state, (c.epsilon_left, c.epsilon_right, c.s, div, steps / thin)

        if thinned:
            step = thinned_step

        _, out = jax.lax.scan(step, state, jax.random.split(key_draw, num_samples))
        return out

    eps_l, eps_r, s, div, steps = jax.vmap(chain)(jax.random.split(key_chains, num_chains), init)
    # rhat, ess and mcse are filled in by _diagnose, outside this program (its fast exact sort
    # needs 64-bit integers)
    # (the fields are typed as the arrays the public functions return; None only in between)
    return NutsPosterior(eps_l, eps_r, s, None, None,  # type: ignore[arg-type]
                         jnp.sum(div), jnp.mean(steps), None)


@jax.jit
@jax.vmap
def _diagnose_nodes(eps_l: jax.Array, eps_r: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(R-hat, ESS, MCSE of the median) per node: the larger rank-normalised split-R-hat, the
    smaller bulk ESS and the larger median MCSE of ε_L and ε_R."""
    rhat_l, ess_l, mcse_l = diagnostics._diagnose_all(eps_l)
    rhat_r, ess_r, mcse_r = diagnostics._diagnose_all(eps_r)
    return jnp.maximum(rhat_l, rhat_r), jnp.minimum(ess_l, ess_r), jnp.maximum(mcse_l, mcse_r)


def _diagnose(post: NutsPosterior) -> NutsPosterior:
    """Fill in ``rhat``, ``ess`` and ``mcse_median`` (in 64-bit mode, for the packed-integer sort
    of :mod:`jaxaudit.bmp.diagnostics`; returned in the draws' dtype)."""
    with jax.enable_x64(True):
        rhat, ess, mcse = _diagnose_nodes(post.epsilon_left, post.epsilon_right)
    dtype = post.epsilon_left.dtype
    return post._replace(rhat=rhat.astype(dtype), ess=ess.astype(dtype),
                         mcse_median=mcse.astype(dtype))


@functools.lru_cache(maxsize=16)
def _runner(fixed_strength: float | None, prior_variance: float, sampler: _SamplerSettings,
            parameterization: str, chunk_size: int | None, devices: tuple[jax.Device, ...] | None,
            symmetric: bool, thinned: bool = False) -> Callable[[tuple[Any, ...]], Any]:
    """The jit-compiled, node-vmapped sampler for one configuration (cached: calls with the same
    settings and the same padded node count reuse the compiled program). The Beta prior's (a, b)
    are per-node inputs, so every Beta prior shares one program."""
    fn = partial(_one_node, fixed_strength=fixed_strength, prior_variance=prior_variance,
                 sampler=sampler, parameterization=parameterization, symmetric=symmetric,
                 thinned=thinned)
    return driver.vmapped(fn, chunk_size=chunk_size, devices=devices)


class NutsConfig(NamedTuple):
    """Sampler settings of :func:`posterior_nuts` (pass as ``config=NutsConfig(...)``).

    Attributes:
      num_warmup, num_samples, num_chains: sampler sizes (num_chains ≥ 2: R-hat needs several).
      max_num_doublings: NUTS tree-depth cap (≥ 1; at most 2^d − 1 leapfrog steps per
        transition; the nodes move in lock-step, so the cap bounds the cost of the slowest lane).
        None: 3 (≤ 7 steps) for the centered and corner coordinates, 4 for the non-centered ones
        (whose funnel needs longer trajectories). Centered, on a Cora audit (2017 count tuples),
        cap 3 gives the same smallest ESS as cap 4 in half the time (docs/bmp.md, section 5).
      warmup_max_num_doublings: the cap during warm-up (None: 2 for the centered and corner
        coordinates, 4 for the non-centered ones, at most ``max_num_doublings``). Warm-up keeps
        no draws and only adapts the step size and mass matrix, which shorter trajectories
        estimate as well (on the Cora audit cap 2 cut the time by 13% with the same smallest
        bulk ESS; cap 1 lost a quarter of it).
      target_acceptance_rate: dual-averaging target in (0, 1).
      chunk_size: nodes per vmapped chunk (None: all at once). The node count is padded to a
        power-of-two number of chunks (or a size bucket), so calls with similar node counts
        reuse one compilation (NUTS programs take tens of seconds to compile on a CPU).
      min_ess: None, or a bulk ESS every count set should reach: the count sets below it are
        sampled once more, from a fresh key and warm-up, running ``k × num_samples``
        transitions and keeping every k-th (the same number of draws, k = ⌈1.25 min_ess / their
        smallest ESS⌉, 2 to 8); the rerun's draws and diagnostics replace the first ones (a
        RuntimeWarning names the count sets still below ``min_ess``). Costs a second compiled
        program the first time; k is an input of that program and its rows are padded to at
        least 16, so later calls reuse it whatever their k and number of rows.

    The model (priors, coordinates, the δ link) is a :class:`PosteriorModel`.
    """

    num_warmup: int = 500
    num_samples: int = 1000
    num_chains: int = 4
    max_num_doublings: int | None = None
    warmup_max_num_doublings: int | None = None
    target_acceptance_rate: float = 0.8
    chunk_size: int | None = None
    min_ess: float | None = None

    def check(self) -> NutsConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration. The functions that take it call it first."""
        return _check_nuts_config(self)


def _check_nuts_config(config: object) -> NutsConfig:
    config = check_instance("config", config, NutsConfig)
    check_config_fields(config)
    for name in ("num_warmup", "num_samples"):
        check_integer(name, getattr(config, name), minimum=1)
    check_integer("num_chains", config.num_chains, minimum=2)  # R-hat needs several chains
    for name in ("max_num_doublings", "warmup_max_num_doublings"):
        if getattr(config, name) is not None:
            check_integer(name, getattr(config, name), minimum=1)
    rate = float(check_finite("target_acceptance_rate", config.target_acceptance_rate))
    if not 0.0 < rate < 1.0:
        raise ValueError(f"target_acceptance_rate must lie in (0, 1), got {rate}")
    check_chunk_size(config.chunk_size)
    if config.min_ess is not None:
        check_positive_finite("min_ess", config.min_ess)
    return config


def _resolve(model: PosteriorModel, config: NutsConfig) -> tuple[AttackPrior, str, int, int]:
    """The attack prior, the coordinates and the two tree-depth caps a run uses (ValueError
    naming the field for a combination the model does not have)."""
    prior = as_attack_prior(model.attack_prior)
    check_positive("prior_variance", model.prior_variance)
    parameterization, symmetric = model.parameterization, model.symmetric
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
    max_num_doublings = config.max_num_doublings
    if max_num_doublings is None:
        max_num_doublings = MAX_NUM_DOUBLINGS[parameterization]
    warmup_max_num_doublings = config.warmup_max_num_doublings
    if warmup_max_num_doublings is None:
        warmup_max_num_doublings = min(WARMUP_MAX_NUM_DOUBLINGS[parameterization],
                                       max_num_doublings)
    if symmetric and parameterization != "centered":
        raise ValueError("symmetric=True needs the centered parameterization (a Beta prior on s)")
    if parameterization == "centered" and prior.fixed is not None:
        raise ValueError("parameterization='centered' needs a Beta attack_prior; use "
                         "'noncentered' for a fixed s")
    return prior, parameterization, int(max_num_doublings), int(warmup_max_num_doublings)


def node_log_density(counts: ErrorCounts | Sequence[ArrayLike],
                     model: PosteriorModel | None = None) -> LogDensity:
    """One node's posterior over (ε_L, ε_R) as a sampler target in blackjax's terms:
    ``LogDensity(logdensity_fn, constrain, dim)``.

    ``logdensity_fn(position)`` is the unnormalised log posterior of the model of
    :func:`posterior_nuts` (half-normal priors on ε_L, ε_R, the attack strength s ~
    ``model.attack_prior``, the attack point on the band R(ε) \\ R(sε), binomial counts) at a
    (dim,) unconstrained position, Jacobians included; ``constrain(position)`` maps a position
    to the model's quantities (``.epsilon_left``, ``.epsilon_right``, ``.s``, ``.alpha``,
    ``.beta``). The coordinates are those :func:`posterior_nuts` picks
    (``model.parameterization``). Run any blackjax sampler on
    it, inside your own ``jax.jit``/``jax.vmap`` (the counts may be traced: vmap over nodes;
    the other arguments are static); :func:`nuts_node` is the ready-made kernel. docs/bmp.md
    shows ``blackjax.nuts`` on it, vmapped over nodes.

    Args:
      counts: one node's ``ErrorCounts(fp, n0, fn, n1)`` (scalars; traced under a transform).
      model: the :class:`PosteriorModel` (None: its defaults).

    Returns:
      :class:`jaxaudit.bmp.likelihood.LogDensity`.

    Example:
      >>> from jaxaudit.mia import ErrorCounts
      >>> target = node_log_density(ErrorCounts(10.0, 100.0, 30.0, 100.0))
      >>> target.dim, bool(jnp.isfinite(target.logdensity_fn(jnp.zeros(target.dim))))
      (5, True)
    """
    counts = validate_counts(counts)
    if np.ndim(counts.fp) != 0:
        raise ValueError(f"counts must be one node's scalars (vmap over nodes), got shape "
                         f"{np.shape(counts.fp)}")
    model = _check_model(PosteriorModel() if model is None else model)
    prior, parameterization, _, _ = _resolve(model, NutsConfig())
    dtype = jnp.result_type(float)
    counts = ErrorCounts(*(jnp.asarray(c, dtype) for c in counts))
    return make_log_density(parameterization, counts, prior_variance=model.prior_variance,
                            strength_prior=(prior.a, prior.b), attack_strength=prior.fixed,
                            symmetric=model.symmetric, link=model.delta_link)


def nuts_node(key: jax.Array, counts: ErrorCounts | Sequence[ArrayLike],
              model: PosteriorModel | None = None, config: NutsConfig | None = None
              ) -> NutsPosterior:
    """NUTS on one node's posterior, traceable: blackjax's ``window_adaptation`` then ``nuts``
    on :func:`node_log_density`, ``config.num_chains`` chains vmapped, R-hat, bulk ESS and the
    median's MCSE computed in the same program. Works under the user's ``jax.jit`` and
    ``jax.vmap`` (over nodes: vmap ``key`` and ``counts`` together).

    It is the per-node program of :func:`posterior_nuts` (same initial points, warm-up, tree
    depth caps and coordinates), without the host driver's work: no deduplication, padding,
    chunking or device sharding (``config.chunk_size`` is not read), no ``min_ess`` rerun
    (``config.min_ess`` is not read) and no warning for unmixed chains (read ``rhat``). The
    draws come from other keys than :func:`posterior_nuts`', so they agree in distribution:
    medians within a few MCSE.

    Args:
      key: a PRNG key (one per node when vmapped).
      counts: one node's ``ErrorCounts(fp, n0, fn, n1)`` (scalars; traced under vmap).
      model: the :class:`PosteriorModel` (None: its defaults), as in :func:`posterior_nuts`.
      config: the sampler settings, a :class:`NutsConfig` (None: its defaults).

    Returns:
      :class:`NutsPosterior` with draws of shape (num_chains, num_samples) (a leading node axis
      when vmapped).

    Example:
      >>> from jaxaudit.mia import ErrorCounts
      >>> counts = ErrorCounts(jnp.array([10.0, 40.0]), jnp.array([100.0, 100.0]),
      ...                      jnp.array([30.0, 20.0]), jnp.array([100.0, 100.0]))
      >>> config = NutsConfig(num_warmup=100, num_samples=100, num_chains=2)
      >>> run = jax.jit(jax.vmap(lambda k, c: nuts_node(k, c, config=config)))
      >>> run(jax.random.split(jax.random.key(0), 2), counts).epsilon_right.shape
      (2, 2, 100)
    """
    check_key("key", key)
    model = _check_model(PosteriorModel() if model is None else model)
    config = _check_nuts_config(NutsConfig() if config is None else config)
    counts = validate_counts(counts)
    if np.ndim(counts.fp) != 0:
        raise ValueError(f"counts must be one node's scalars (vmap nuts_node over nodes), got "
                         f"shape {np.shape(counts.fp)}")
    prior, parameterization, max_num_doublings, warmup_max_num_doublings = _resolve(model, config)
    dtype = jnp.result_type(float)
    counts = ErrorCounts(*(jnp.asarray(c, dtype) for c in counts))
    sampler = _SamplerSettings(int(config.num_warmup), int(config.num_samples),
                               int(config.num_chains), max_num_doublings,
                               warmup_max_num_doublings, float(config.target_acceptance_rate),
                               str(model.delta_link))
    prior_ab = (jnp.asarray(prior.a, dtype), jnp.asarray(prior.b, dtype))
    post = _one_node(key, counts, prior_ab, jnp.ones((), jnp.int32),
                     fixed_strength=prior.fixed, prior_variance=float(model.prior_variance),
                     sampler=sampler, parameterization=parameterization,
                     symmetric=bool(model.symmetric))
    rhat_l, ess_l, mcse_l = diagnostics._diagnose_all(post.epsilon_left)
    rhat_r, ess_r, mcse_r = diagnostics._diagnose_all(post.epsilon_right)
    return post._replace(rhat=jnp.maximum(rhat_l, rhat_r), ess=jnp.minimum(ess_l, ess_r),
                         mcse_median=jnp.maximum(mcse_l, mcse_r))


def posterior_nuts(key: jax.Array, counts: ErrorCounts | Sequence[ArrayLike],
                   model: PosteriorModel | None = None, config: NutsConfig | None = None, *,
                   deduplicate: bool = True, devices: Sequence[jax.Device] | None = None
                   ) -> NutsPosterior:
    """Posterior over (ε_L, ε_R) by NUTS with window adaptation, vmapped over nodes.

    The model (a :class:`PosteriorModel`) is :mod:`jaxaudit.bmp.likelihood`'s: half-normal
    priors of variance ``model.prior_variance``, the attack strength s ~ ``model.attack_prior``
    (Beta(1, 1) by default), the attack point uniform on the band R(ε) \\ R(sε), binomial
    counts. The attack point is kept as latent variables (cheap gradients: no quadrature);
    ``model.parameterization`` chooses the coordinates:

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
    quantiles sit above the truth more often than their probability (a 5% quantile in more than
    5% of audits). Priors on s concentrated near 1
    raise that coverage but cannot bring the smaller side to 90% (the model cannot tell which
    side of R(ε) is tight), and NUTS mixes poorly under them; for an attack believed optimal use
    ``attack_prior="optimal"``, whose 5% quantiles cover at 0.91–0.96 per side under optimal
    attacks. :func:`jaxaudit.bmp.certified_epsilons` carries the guarantee (docs/bmp.md:
    coverage tables, calibration).

    How precise a median is: ``mcse_median`` (Vehtari et al. 2021, section 4.3; see
    :func:`jaxaudit.bmp.diagnostics.median_mcse`). A bulk ESS of a few hundred can still leave
    the median uncertain by a tenth or more where the marginal is flat there (e.g. a fixed s,
    whose support in (ε_L, ε_R) is L-shaped: docs/bmp.md, section 5).

    Steps: validate; deduplicate the count table (identical counts, identical posteriors); pad it
    to a size bucket; one jit-compiled call (:mod:`jaxaudit.bmp.driver` on
    :func:`jaxaudit.sharding.vmap_chunked`: chunks of ``config.chunk_size`` nodes run one after
    another, the node axis sharded over ``devices``) in which every (node, chain) runs its own
    window adaptation (``num_warmup`` steps) and ``num_samples`` NUTS transitions; then undo the
    padding and the deduplication.

    Args:
      key: PRNG key, or one key per count set (a key array of shape (N,) for (N,) counts): then
        count set i's draws depend on its own key and counts only, not on the other count sets
        (no deduplication; the ``min_ess`` rerun uses ``fold_in(key[i], 1)`` and its own
        thinning), so a table split into parts gives the draws of the whole table.
      counts: ``ErrorCounts(fp, n0, fn, n1)`` of scalars or of per-node arrays (N,).
      model: the :class:`PosteriorModel` (None: its defaults: s ~ Beta(1, 1), prior variance
        10, automatic coordinates, the asymmetric model).
      config: the sampler settings, a :class:`NutsConfig` (None: its defaults, 4 chains ×
        (500 + 1000)).
      deduplicate: sample once per distinct count tuple.
      devices: devices to shard the node axis over (None: all visible).

    Returns:
      :class:`NutsPosterior`.

    Example:
      >>> from jaxaudit.mia.types import ErrorCounts
      >>> post = posterior_nuts(jax.random.key(0), ErrorCounts(10, 100, 30, 100),
      ...                       config=NutsConfig(num_warmup=200, num_samples=200))
      >>> post.epsilon_left.shape
      (4, 200)
    """
    if is_traced(key, counts):
        raise TypeError(
            "posterior_nuts is a host driver (it deduplicates, pads and chunks the count table "
            "and reruns low-ESS rows) and cannot run under jax.jit/jax.vmap: use "
            "jaxaudit.bmp.nuts_node(key, counts, model, config) there (vmap it over nodes)")
    check_key("key", key)
    model = _check_model(PosteriorModel() if model is None else model)
    config = _check_nuts_config(NutsConfig() if config is None else config)
    counts = validate_counts(counts)
    prior, parameterization, max_num_doublings, warmup_max_num_doublings = _resolve(model, config)
    prior_variance, symmetric = float(model.prior_variance), bool(model.symmetric)

    chunk_size = None if config.chunk_size is None else int(config.chunk_size)
    per_row = _per_row_keys(key, counts)
    table = driver.count_table(counts, deduplicate=deduplicate and not per_row,
                               chunk_size=chunk_size)
    num_rows = table.num_rows
    sampler = _SamplerSettings(int(config.num_warmup), int(config.num_samples),
                               int(config.num_chains), int(max_num_doublings),
                               int(warmup_max_num_doublings),
                               float(config.target_acceptance_rate), str(model.delta_link))
    devices = None if devices is None else tuple(devices)

    def sample(key: jax.Array, rows: np.ndarray, chunk: int | None,
               thin: np.ndarray | None = None) -> NutsPosterior:
        """One compiled, node-vmapped run over ``rows``, diagnosed; ``thin``: per-row thinning
        (None: no thinning)."""
        dtype = jnp.result_type(float)
        prior_ab = tuple(jnp.full(rows.shape[0], x, dtype) for x in (prior.a, prior.b))
        thins = jnp.ones(rows.shape[0], jnp.int32) if thin is None else jnp.asarray(thin, jnp.int32)
        run = _runner(prior.fixed, prior_variance, sampler, parameterization, chunk,
                      devices, symmetric, thin is not None)
        if per_row:  # key: one key per row, padded as the rows are
            keys = key[np.minimum(np.arange(rows.shape[0]), key.shape[0] - 1)]
            return _diagnose(run((keys, driver.rows_as_counts(rows), prior_ab, thins)))
        return _diagnose(driver.run_rows(run, key, rows, prior_ab, thins))

    out = sample(key, table.rows, chunk_size)
    min_ess = config.min_ess
    if min_ess is not None:
        low = np.flatnonzero(np.asarray(out.ess[:num_rows]) < min_ess)
        if low.size:
            ess = np.maximum(np.asarray(out.ess)[low], 1.0)
            thins = np.clip(np.ceil(1.25 * min_ess / ess), 2, MAX_THIN).astype(np.int32)
            if not per_row:  # thinned for the smallest ESS
                thins[:] = thins.max()
            # One call for every row of the rerun, each with its own thinning (a traced input:
            # one compiled program serves them all), padded to at least RERUN_ROWS lanes, so
            # that later calls reuse the program (a new one costs ~15 s; the lanes, milliseconds)
            size = driver.size_bucket(max(low.size, RERUN_ROWS), None)
            sub = driver.pad_rows(table.rows[low], size)
            more_key = (jax.vmap(jax.random.fold_in, (0, None))(key[low], 1) if per_row
                        else jax.random.fold_in(key, 1))
            more = sample(more_key, sub, None, np.concatenate(
                [thins, np.full(size - low.size, thins[-1], np.int32)]))
            out = jax.tree.map(lambda a, b: a.at[low].set(b[:low.size].astype(a.dtype)), out, more)
            still = int(np.sum(np.asarray(out.ess[:num_rows]) < min_ess))
            if still:
                warnings.warn(f"{still} of {num_rows} distinct count sets stay below "
                              f"min_ess={min_ess:g} after a rerun thinned by {int(thins.max())}",
                              RuntimeWarning, stacklevel=2)
    _warn_unmixed(np.asarray(out.rhat[:num_rows]), prior)
    return table.restore(out)


def _per_row_keys(key: jax.Array, counts: ErrorCounts) -> bool:
    """Whether ``key`` holds one key per count set (ValueError naming ``key`` on a mismatch)."""
    typed = jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    batch = tuple(np.shape(key) if typed else np.shape(key)[:-1])
    if batch == ():
        return False
    if len(batch) != 1 or batch != tuple(np.shape(counts.fp)):
        raise ValueError(f"key must be one key or one key per count set (shape "
                         f"{np.shape(counts.fp)}), got keys of shape {batch}")
    return True


def _warn_unmixed(rhat: np.ndarray, prior: AttackPrior, threshold: float = 1.05) -> None:
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


def posterior_quantiles(draws: ArrayLike, q: ArrayLike | Sequence[float] = (0.05, 0.5, 0.95)
                       ) -> jax.Array:
    """Quantiles of draws pooled over the trailing (chain, sample) axes: shape (len(q), ...)."""
    draws = jnp.asarray(draws)
    flat = draws.reshape(draws.shape[:-2] + (-1,))
    return jnp.quantile(flat, jnp.asarray(q), axis=-1)
