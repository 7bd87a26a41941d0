"""Joint reconstruction of every target's hidden values from noisy marginals (RAP-rank style).

The Bayes attack of :mod:`jaxaudit.attacks.marginals` scores one target at a time and replaces
the other targets by their prior means. This attack fits *all* targets' hidden values at once
to the release, as the reconstruction attacks on census statistics do (Dick et al., PNAS 2023,
arXiv 2211.03128: relaxed adaptive projection, Aydore et al., arXiv 2103.06641, repeated from
random starts, candidates ranked by how often they appear).

Notation of :class:`jaxaudit.attacks.marginals.MarginalsGame`: the release is
Y = C_rest + Σ_i e(h_i, q_i) + Z, Z ~ N(0, σ² I), with e(h, q) the 0/1 vector of the m cells
the record (h, q) falls in. Write r = Y − C_rest (the informed adversary knows C_rest).

Relaxation. Each target gets a distribution q_i = softmax(θ_i) over its H hidden values; the
relaxed table's marginals are Σ_i Σ_h q_i(h) e(h, q_i). The loss is the Gaussian negative
log-likelihood of the release at those marginals, plus (``prior=True``) the expected negative
log prior,

    L(θ) = ‖r − Σ_i Σ_h q_i(h) e(h, q_i)‖² / (2σ²) − Σ_i Σ_h q_i(h) log D_i(h),

minimised by Adam from ``restarts`` random starts θ ~ N(0, I). At σ → 0 the first term
dominates and L is an exact-fit program over the relaxed tables (σ = 0 is evaluated as
σ² = 10⁻¹²); the second term makes the attack fall back to the prior's MAP when the noise
swamps the signal. The relaxed program is heavily under-determined (many fractional tables fit
the release exactly), so its argmax rounds badly; a sharpening term
−κ_t Σ_i ‖q_i‖²/(2σ²), κ_t rising linearly from 0 to ``sharpen`` over the steps, pulls the
tables toward one-hot ones (an integral table gains n, the most it can: ‖q_i‖² ≤ 1). The
optimiser works on σ²·L (Adam is invariant to the scale, and σ → 0 stays finite), and the
variance in front of the prior term starts at σ² + ``anneal`` and falls as (1 − t/T)² to σ²
(a homotopy from a noisier release: early steps stay near the prior's likely values, late
steps fit the release; ``anneal = 0`` fits at σ² throughout).

Rounding. Each restart's argmax is refined by ``integer_sweeps`` sweeps of coordinate descent
on the same objective over integer tables (iterated conditional modes): target i moves to

    argmin_h Σ_s (½ − R_i[c_s(h, q_i)]) / σ² − log D_i(h),   R_i = r − Σ_{j≠i} e(h_j, q_j),

the exact single-target MAP given the others' current values (the m cells of one record lie in
m distinct marginals, so ‖R_i − e(h)‖² = ‖R_i‖² + Σ_s (1 − 2R_i[c_s])). A sweep never increases
the objective. Costs are compared in σ² units (Σ_s (½ − R_i[c_s]) − σ² log D_i(h)); values
within 10⁻³ of the best are ties, won by the largest prior: at σ → 0 the prior term is below
float32 resolution, and this makes the noiseless attack the prior's choice among equally
good fits.

Result. The guess is the rounded table of the restart with the smallest integer objective
(ties again to the largest prior); a
target's confidence (for ranking, as in RAP-rank) is the fraction of restarts whose rounded
table gives it the same value, and ``probability`` the mean relaxed mass on it.

References:
  Dick, Dwork, Kearns, Liu, Roth, Vietri, Wu, "Confidence-ranked reconstruction of census
  microdata from published statistics", PNAS 120(8), 2023, arXiv 2211.03128.
  Aydore, Brown, Kearns, Kenthapadi, Melis, Roth, Siva, "Differentially Private Query Release
  Through Adaptive Projection", ICML 2021, arXiv 2103.06641.
  Besag, "On the statistical analysis of dirty pictures", JRSS B 48(3), 1986 (iterated
  conditional modes).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    as_scalar,
    check_bool,
    check_finite,
    check_integer,
    check_key,
    check_nonnegative_finite,
    check_positive_finite,
    check_shape,
    is_traced,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.attacks.marginals import MarginalsGame

__all__ = ["JointReconstruction", "MAX_STEPS", "ReconstructionConfig",
           "check_reconstruction_config", "joint_reconstruction"]

#: Floor of log D_i(h) (a hidden value the prior rules out, D_i(h) = 0, would give −∞·0).
LOG_PRIOR_FLOOR = -69.0  # log(1e-30)
#: σ² used for σ = 0 (the noiseless limit), as in :func:`marginals_posterior`.
MIN_VARIANCE = 1e-12
#: Objectives (in squared counts, σ² × the objective) closer than this are ties, broken by the
#: prior: at σ → 0 the prior term σ² log D is below float32 resolution.
TIE = 1e-3


#: Most Adam steps per start and coordinate-descent sweeps (both are loop counts of one
#: compiled program; 10⁶ Adam steps already take minutes on the Fair game).
MAX_STEPS = 10**6


class ReconstructionConfig(NamedTuple):
    """Settings of :func:`joint_reconstruction` (static: one compiled program per value).

    Attributes:
      restarts: random starts θ ~ N(0, I) (default 4, ≥ 1).
      steps: Adam steps per start (default 1000; 1 to :data:`MAX_STEPS`).
      learning_rate: Adam's step size (default 0.1, > 0).
      prior: include the expected log prior (the informed adversary's D_i) in the objective
        (default True); False fits the release alone, as RAP does.
      integer_sweeps: coordinate-descent sweeps over the targets after rounding (default 3;
        0: argmax only; at most :data:`MAX_STEPS`).
      sharpen: final weight κ ≥ 0 of the term −κ Σ_i ‖q_i‖²/(2σ²) that pulls the relaxed tables
        toward one-hot ones (default 1.0; 0: the plain relaxation).
      anneal: extra variance (≥ 0, squared counts) of the prior term at the first step, falling
        to 0 at the last (default 10.0; 0: none).
    """

    restarts: int = 4
    steps: int = 1000
    learning_rate: float = 0.1
    prior: bool = True
    integer_sweeps: int = 3
    sharpen: float = 1.0
    anneal: float = 10.0

    def check(self) -> ReconstructionConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration with Python values. The functions that take it call it first."""
        return check_reconstruction_config(self)


def check_reconstruction_config(config: Any) -> ReconstructionConfig:
    """``config`` checked field by field (errors name ``config.<field>``), as Python values."""
    if not isinstance(config, ReconstructionConfig):
        raise ArgumentTypeError(f"config must be a jaxaudit.attacks.ReconstructionConfig, got "
                                f"{type(config).__name__}")
    check_config_fields(config, "config")
    restarts = check_integer("config.restarts", config.restarts, minimum=1)
    counts = {}
    for field, low in (("steps", 1), ("integer_sweeps", 0)):
        value = check_integer(f"config.{field}", getattr(config, field), minimum=low)
        if value > MAX_STEPS:
            raise ValueError(f"config.{field} must be an integer in [{low}, {MAX_STEPS}], got "
                             f"{value}")
        counts[field] = value
    return ReconstructionConfig(
        restarts, counts["steps"],
        float(check_positive_finite("config.learning_rate", config.learning_rate)),
        check_bool("config.prior", config.prior), counts["integer_sweeps"],
        float(check_nonnegative_finite("config.sharpen", config.sharpen)),
        float(check_nonnegative_finite("config.anneal", config.anneal)))


class JointReconstruction(NamedTuple):
    """The joint attack's guesses and their ranking scores (all JAX arrays).

    Attributes:
      guess: (n,) int32 index into ``game.hidden_values`` of each target's guess.
      confidence: (n,) fraction of restarts whose rounded table agrees with ``guess``.
      probability: (n,) mean over restarts of the relaxed tables' mass on ``guess``.
      objective: (restarts,) σ² × the integer objective of each restart's rounded table,
        ½‖r − Σ_i e(h_i, q_i)‖² − σ² Σ_i log D_i(h_i) (squared counts; lower is better, the
        guess is the smallest).
      relaxed: (restarts, n, H) the fitted relaxed tables softmax(θ).
    """

    guess: jax.Array
    confidence: jax.Array
    probability: jax.Array
    objective: jax.Array
    relaxed: jax.Array


def _marginals(table: jax.Array, target_cells: jax.Array, size: int) -> jax.Array:
    """Σ_i Σ_h table[i, h] e(h, q_i): (size,) from an (n, H) table and (n, H, m) cells."""
    weights = jnp.broadcast_to(table[:, :, None], target_cells.shape)
    return jnp.zeros(size, table.dtype).at[target_cells.ravel()].add(weights.ravel())


def _integer_objective(guess: jax.Array, target_cells: jax.Array, log_prior: jax.Array,
                       residual: jax.Array, variance: jax.Array) -> jax.Array:
    """σ² × the objective of an integer table: ½‖r − Σ_i e(h_i, q_i)‖² − σ² Σ_i log D_i(h_i)."""
    n = guess.shape[0]
    cells = target_cells[jnp.arange(n), guess]  # (n, m)
    fit = residual - jnp.zeros_like(residual).at[cells.ravel()].add(1.0)
    return 0.5 * jnp.sum(fit**2) - variance * jnp.sum(log_prior[jnp.arange(n), guess])


def _icm(guess: jax.Array, target_cells: jax.Array, log_prior: jax.Array, residual: jax.Array,
         variance: jax.Array, sweeps: int) -> jax.Array:
    """``sweeps`` sweeps of iterated conditional modes on the integer objective (in σ² units;
    values within :data:`TIE` of the best are tied and the tie goes to the largest prior)."""
    n = guess.shape[0]
    rest = residual - jnp.zeros_like(residual).at[
        target_cells[jnp.arange(n), guess].ravel()].add(1.0)

    def visit(carry, i):
        rest, guess = carry
        own = target_cells[i, guess[i]]  # (m,)
        r_i = rest.at[own].add(1.0)  # R_i: the release without target i
        cost = jnp.sum(0.5 - r_i[target_cells[i]], axis=1) - variance * log_prior[i]
        tied = cost <= jnp.min(cost) + TIE
        best = jnp.argmax(jnp.where(tied, log_prior[i], -jnp.inf)).astype(guess.dtype)
        return (r_i.at[target_cells[i, best]].add(-1.0), guess.at[i].set(best)), None

    def sweep(_, carry):
        return jax.lax.scan(visit, carry, jnp.arange(n))[0]

    return jax.lax.fori_loop(0, sweeps, sweep, (rest, guess))[1]


def _joint_reconstruction(key: jax.Array, target_cells: ArrayLike, log_prior: ArrayLike,
                          residual: ArrayLike, sigma: ArrayLike,
                          config: ReconstructionConfig) -> JointReconstruction:
    """The unvalidated, traceable attack (see the module docstring); jit/vmap-able in ``key``,
    ``log_prior``, ``residual`` and ``sigma`` (``config`` is static).

    Args:
      key: PRNG key (the random starts).
      target_cells: (n, H, m) integer cell index of target i's record with hidden value h.
      log_prior: (n, H) log D_i(h).
      residual: (release_size,) r = Y − C_rest.
      sigma: per-cell noise σ ≥ 0.
      config: :class:`ReconstructionConfig`.

    Returns:
      :class:`JointReconstruction`.
    """
    restarts, steps, learning_rate, prior, integer_sweeps, sharpen, anneal = config
    target_cells = jnp.asarray(target_cells)
    residual = jnp.asarray(residual, jnp.float32)
    log_prior = jnp.maximum(jnp.asarray(log_prior, jnp.float32), LOG_PRIOR_FLOOR)
    log_prior = jnp.where(jnp.isnan(log_prior), LOG_PRIOR_FLOOR, log_prior)
    variance = jnp.maximum(jnp.asarray(sigma, jnp.float32) ** 2, MIN_VARIANCE)
    prior_weight = 1.0 if prior else 0.0
    n, big_h = log_prior.shape
    size = residual.shape[0]
    optimizer = optax.adam(learning_rate)
    lp = log_prior * prior_weight

    # σ² × L(θ) (Adam is invariant to the scale; in σ² units σ → 0 stays finite).
    def loss(theta: jax.Array, kappa: jax.Array, var_t: jax.Array) -> jax.Array:
        table = jax.nn.softmax(theta, axis=-1)
        fit = residual - _marginals(table, target_cells, size)
        return 0.5 * (jnp.sum(fit**2) - kappa * jnp.sum(table**2)) - var_t * jnp.sum(table * lp)

    def fit_one(k: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        theta = jax.random.normal(k, (n, big_h), jnp.float32)

        def step(carry, t):
            theta, state = carry
            frac = t / steps
            grads = jax.grad(loss)(theta, sharpen * frac, variance + anneal * (1.0 - frac) ** 2)
            updates, state = optimizer.update(grads, state, theta)
            return (optax.apply_updates(theta, updates), state), None

        theta = jax.lax.scan(step, (theta, optimizer.init(theta)), jnp.arange(steps))[0][0]
        table = jax.nn.softmax(theta, axis=-1)
        guess = _icm(jnp.argmax(table, axis=-1).astype(jnp.int32), target_cells, lp,
                     residual, variance, integer_sweeps)
        return table, guess, _integer_objective(guess, target_cells, lp, residual, variance)

    tables, guesses, objectives = jax.vmap(fit_one)(jax.random.split(key, restarts))
    # the best restart; restarts within TIE of it are tied and the largest prior wins
    prior_mass = jnp.sum(jnp.take_along_axis(lp[None], guesses[..., None], axis=-1)[..., 0],
                         axis=1)
    tied = objectives <= jnp.min(objectives) + TIE
    best = guesses[jnp.argmax(jnp.where(tied, prior_mass, -jnp.inf))]
    confidence = jnp.mean(guesses == best[None, :], axis=0)
    probability = jnp.mean(jnp.take_along_axis(tables, best[None, :, None], axis=-1)[..., 0],
                           axis=0)
    return JointReconstruction(best, confidence, probability, objectives, tables)


_jitted = jax.jit(_joint_reconstruction, static_argnames=("config",))


def _check_game(game: MarginalsGame) -> None:
    """The parts of ``game`` the attack reads: (n, H, m) integer cells inside the release, an
    (n, H) log prior and (release_size,) known counts, n ≥ 1 (errors name ``game.<field>``)."""
    if not isinstance(game, MarginalsGame):
        raise ArgumentTypeError(f"game must be a MarginalsGame (marginals_game(...)), "
                                f"got {type(game).__name__}")
    size = check_integer("game.release_size", game.release_size, minimum=1)
    cells = np.asarray(game.target_cells)
    if cells.ndim != 3 or cells.shape[0] < 1 or cells.shape[1] < 1 or cells.shape[2] < 1:
        raise ValueError(f"game.target_cells must have shape (n, H, m) with n, H, m >= 1 (at "
                         f"least one target), got {cells.shape}")
    if cells.dtype == bool or not np.issubdtype(cells.dtype, np.integer):
        raise ArgumentTypeError(f"game.target_cells must be integer cell indices, got dtype "
                                f"{cells.dtype}")
    if cells.min() < 0 or cells.max() >= size:
        bad = int(cells.min() if cells.min() < 0 else cells.max())
        raise ValueError(f"game.target_cells must index the release, 0..{size - 1}, got {bad} "
                         "(a cell outside the release would be clamped into another one)")
    check_shape("game.log_prior", game.log_prior, cells.shape[:2])
    check_shape("game.rest_counts", game.rest_counts, (size,))


def joint_reconstruction(key: jax.Array, game: MarginalsGame, release: ArrayLike,
                         noise_multiplier: ArrayLike,
                         config: ReconstructionConfig = ReconstructionConfig()
                         ) -> JointReconstruction:
    """Fit every target's hidden values jointly to the noisy marginals (RAP-rank style).

    Relaxed tables q_i = softmax(θ_i) minimise
    ‖r − Σ_i Σ_h q_i(h) e(h, q_i)‖²/(2σ²) − Σ_i ⟨q_i, log D_i⟩ (r = release − known rows'
    marginals; the prior term only with ``config.prior``; plus the sharpening term) by Adam
    from ``config.restarts`` random starts; each argmax is refined by coordinate descent on the
    integer objective, and the best restart is the guess (details and references in
    :mod:`jaxaudit.attacks.reconstruction`). Works under the user's ``jax.jit``/``jax.vmap``
    over ``key``, ``release`` and ``noise_multiplier``.

    Args:
      key: PRNG key (the random starts).
      game: the :class:`jaxaudit.attacks.marginals.MarginalsGame` (its ``rest_counts``,
        ``target_cells`` and ``log_prior``; ``truth`` is not used).
      release: (release_size,) the noisy marginals (:func:`release_marginals`).
      noise_multiplier: the per-cell noise σ ≥ 0 (0: the noiseless limit, an exact-fit
        program).
      config: :class:`ReconstructionConfig` (restarts, Adam steps and step size, the prior
        term, integer sweeps, sharpening, annealing).

    Returns:
      :class:`JointReconstruction`.

    Raises:
      ValueError: a bad argument (named), or a game whose cells fall outside the release or
        that has no target.

    Examples:
      >>> import jax
      >>> from jaxaudit.attacks import load_fair, marginals_game, release_marginals
      >>> game = marginals_game(jax.random.key(0), load_fair(),
      ...     attributes=["age", "educ", "religious", "occupation"],
      ...     hidden_attributes=["religious", "occupation"], num_targets=10)
      >>> y = release_marginals(jax.random.key(1), game, 0.0)
      >>> r = joint_reconstruction(jax.random.key(2), game, y, 0.0)
      >>> r.guess.shape
      (10,)
    """
    _check_game(game)
    config = check_reconstruction_config(config)
    check_key("key", key)  # passes tracers through, as do the checks below
    check_shape("release", release, (int(game.release_size),))
    residual: Any
    if is_traced(release):
        residual = jnp.asarray(release) - jnp.asarray(game.rest_counts, jnp.asarray(release).dtype)
    else:
        residual = check_finite("release", release) - np.asarray(game.rest_counts, np.float64)
    sigma = as_scalar("noise_multiplier", noise_multiplier)
    check_nonnegative_finite("noise_multiplier", sigma)
    return _jitted(key, game.target_cells, game.log_prior, residual, sigma, config)
