"""Every bound for one set of targets, side by side: the count bound and the bounds of prior work.

:func:`summarize_bounds` is what ``jaxaudit bounds`` prints (docs/bounds.md, "Data flow"): the
level-γ count bound v_γ of Swanberg et al. (arXiv 2507.08158) for the n targets, the aggregate
gain over the prior, the single-target bound at the largest prior κ = max_i p_i next to KGK+
and Balle et al.'s reconstruction robustness, and, for a uniform prior over K values, MMC's and
(K = 2, pure or approximate DP) Steinke et al.'s one-run thresholds. Each entry is a call of
a public function of :mod:`jaxaudit.bounds`; this module only decides which apply.

The tightest valid count bound. Each count bound here is a deterministic threshold v with
Pr[L ≥ v] ≤ γ for the same game: ours (v_γ), MMC's first rejecting count (uniform prior over
K ≥ 2 values, one guess per target, f-DP), Steinke et al.'s (K = 2, ε- or (ε, δ)-DP) and KGK+
turned into a count by Markov's inequality (Pr[L ≥ v] ≤ E[L]/v ≤ Σ_i b_i/v with b_i the KGK+
bound on target i's success, so v = ⌈Σ_i b_i/γ⌉). Each statement holds on its own, so the
smallest of them holds too: :attr:`BoundsSummary.tightest_bound` reports it and
:attr:`BoundsSummary.tightest` which one it was (docs/bounds.md, "Fig. 1 with numbers").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    as_scalar,
    as_vector,
    check_bool,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
    is_traced,
)
from jaxaudit.accounting.guarantees import ApproxDP, GaussianDP, PldProfile, PureDP, check_relation
from jaxaudit.accounting.replace_one import dpsgd_delta_function
from jaxaudit.bounds import prior_work
from jaxaudit.bounds.count_bound import (
    aggregate_gain,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.fdp import approx_dp_delta, gdp_delta
from jaxaudit.bounds.poisson_binomial import ISF_LOG_MARGIN
from jaxaudit.bounds.single_target import (
    ROUTES,
    SingleTargetBound,
    gdp_routes,
    profile_routes,
)
from jaxaudit.bounds.success import _posterior_success, gain, gain_ratio, posterior_success
from jaxaudit.bounds.tradeoff import gdp_tpr, profile_grid, profile_tpr

__all__ = ["PrivacyModel", "PerTarget", "BoundsSummary", "summarize_bounds",
           "single_target_success"]

#: ulps by which :meth:`PrivacyModel.advantage` rounds its float64 closed form up (the
#: closed forms were up to 3e-16 relative below the exact value; δ_μ(0) 6e-11 at μ = 1e-6).
_ADVANTAGE_ULPS = 4


class PrivacyModel(NamedTuple):
    """The mechanism's guarantee: ε-DP, (ε, δ)-DP, μ-GDP, or a whole privacy curve (f-DP).

    Under μ-GDP (``mu``) ``epsilon``, if given, is only the ε at which the per-target
    β(ε, κ) is reported. A privacy curve (``epsilons``, ``deltas``: the mechanism is
    (ε_j, δ_j)-DP at every grid point, δ_j an upper bound, as a PLD accountant's pessimistic
    estimate is) stands for the trade-off function it implies (:mod:`jaxaudit.bounds.tradeoff`),
    and every bound is then computed from that curve rather than from one (ε, δ) point: build it
    with :meth:`from_dpsgd`, :meth:`from_accountant` (a dp_accounting PLD or RDP accountant, or
    a PLD) or :meth:`from_guarantee` (a :class:`~jaxaudit.accounting.PldProfile`).

    The bounds' view of :mod:`jaxaudit.accounting.guarantees` (:meth:`guarantee`,
    :meth:`from_guarantee`); :func:`summarize_bounds` takes either. The attack bounds
    (single target, count) need ``relation="replace_one"``; the membership quantities
    (:meth:`advantage`, :meth:`tpr_at_fpr`) hold under either relation.

    Attributes:
      epsilon: ε ≥ 0 (required unless ``mu`` or a curve is given).
      delta: δ ∈ [0, 1) of (ε, δ)-DP (0: pure ε-DP; ignored under μ-GDP).
      mu: μ > 0 of μ-GDP (closed-form trade-off f(α) = Φ(−Φ⁻¹(α) − μ)).
      epsilons: (G,) increasing ε grid from 0 of a privacy curve (or None).
      deltas: (G,) δ(ε_j), upper bounds (or None).
      relation: ``"replace_one"`` (default) or ``"add_remove"``.
    """

    epsilon: float | None = None
    delta: float = 0.0
    mu: float | None = None
    epsilons: np.ndarray | None = None
    deltas: np.ndarray | None = None
    relation: str = "replace_one"

    def describe(self) -> str:
        """e.g. ``"1-DP"``, ``"(1, 1e-06)-DP"``, ``"1-GDP (f-DP bound, ...)"``."""
        if self.epsilons is not None:
            return (f"privacy curve δ(ε) on {np.size(self.epsilons)} points, δ(0) = "
                    f"{float(np.asarray(self.deltas)[0]):.4g} (f-DP bound)")
        if self.mu is not None:
            return f"{self.mu:g}-GDP (f-DP bound)"
        if self.delta:
            return f"({self.epsilon:g}, {self.delta:g})-DP"
        return f"{self.epsilon:g}-DP"

    # -- constructors ---------------------------------------------------------------------

    @classmethod
    def from_profile(cls, delta_of_epsilon: Callable[[np.ndarray], np.ndarray],
                     relation: str = "replace_one") -> PrivacyModel:
        """The curve of a vectorised δ(ε) (numpy in, numpy out, upper bounds), sampled by
        :func:`jaxaudit.bounds.tradeoff.profile_grid` (1601 points to the ε where δ ≤ 1e−15)."""
        check_relation("relation", relation)
        grid, deltas = profile_grid(delta_of_epsilon)
        return cls(epsilons=grid, deltas=deltas, relation=relation)

    @classmethod
    def from_dpsgd(cls, *, sampling_rate: float, noise_multiplier: float, steps: int,
                   relation: str = "replace_one") -> PrivacyModel:
        """T steps of Poisson-subsampled DP-SGD (rate q, noise multiplier σ) from dp_accounting's
        PLD (pessimistic discretisation: δ(ε) is an upper bound) under ``relation``
        (:func:`jaxaudit.accounting.replace_one.dpsgd_delta_function`).

        Examples:
          >>> m = PrivacyModel.from_dpsgd(sampling_rate=0.01, noise_multiplier=1.0, steps=1000)
          >>> round(m.advantage(), 3)
          0.264
        """
        return cls.from_profile(dpsgd_delta_function(
            sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, steps=steps,
            relation=relation), relation)

    @classmethod
    def from_accountant(cls, accountant: Any, relation: str | None = None) -> PrivacyModel:
        """A dp_accounting ``PLDAccountant`` or ``RdpAccountant`` (after ``compose``), or a
        ``PrivacyLossDistribution``: its δ(ε) on the profile grid. ``relation`` defaults to the
        accountant's ``neighboring_relation``; a PLD needs it given."""
        relation = relation if relation is not None else _relation_of(accountant)
        check_relation("relation", relation)
        if hasattr(accountant, "get_delta_for_epsilon"):  # a PrivacyLossDistribution
            def delta_fn(e):
                return np.asarray(accountant.get_delta_for_epsilon(list(np.atleast_1d(e))),
                                  dtype=np.float64).reshape(np.shape(e))
        elif hasattr(accountant, "get_delta"):
            def delta_fn(e):
                flat = [accountant.get_delta(float(x)) for x in np.ravel(e)]
                return np.asarray(flat, dtype=np.float64).reshape(np.shape(e))
        else:
            raise ValueError("accountant must be a dp_accounting PLDAccountant, RdpAccountant or "
                             f"PrivacyLossDistribution, got {type(accountant).__name__}")
        return cls.from_profile(delta_fn, relation)

    # -- what the model bounds ------------------------------------------------------------

    def single_target(self, priors: ArrayLike, exact_match: bool = False) -> SingleTargetBound:
        """:func:`single_target_success` for this model."""
        return single_target_success(priors, self, exact_match=exact_match)

    def advantage(self) -> float:
        """The largest advantage TPR − FPR of any membership test: δ(0) of the curve (Kulynych
        et al., arXiv:2407.06496); 2Φ(μ/2) − 1 under μ-GDP; (e^ε − 1 + 2δ)/(e^ε + 1) under
        (ε, δ)-DP. Rounded up."""
        self._checked()
        if self.epsilons is not None:
            return float(np.asarray(self.deltas, dtype=np.float64)[0])
        with jax.enable_x64(True):  # float64 (the entries round up into the inputs' dtype)
            if self.mu is not None:  # δ_μ(0) = Φ(μ/2) − Φ(−μ/2) = erf(μ/(2√2)), no cancellation
                value = math.erf(float(self.mu) / (2.0 * math.sqrt(2.0)))
            else:
                value = float(approx_dp_delta(0.0, self._epsilon(), self.delta))
        # float64 evaluation is within a few ulps of the exact value, on either side: round up
        for _ in range(_ADVANTAGE_ULPS):
            value = math.nextafter(value, 1.0)
        return value

    def tpr_at_fpr(self, fpr: ArrayLike) -> jax.Array:
        """The largest TPR of any membership test at FPR α: 1 − f(α), exact in the tails
        (:mod:`jaxaudit.bounds.tradeoff`); float64."""
        check_probability("fpr", fpr)
        self._checked()
        with jax.enable_x64(True):
            a = jnp.asarray(np.asarray(fpr, dtype=np.float64))
            if self.mu is not None and self.epsilons is None:
                return gdp_tpr(a, jnp.float64(self.mu))
            e, d = self._curve()
            return profile_tpr(a, jnp.asarray(e), jnp.asarray(d))

    def tail(self, priors: ArrayLike, v: ArrayLike, gamma: float = 0.05) -> jax.Array:
        """Upper bound on Pr[L ≥ v] (:func:`success_tail` or :func:`success_tail_fdp`)."""
        self._replace_one()
        if self.mu is not None or self.epsilons is not None:
            return success_tail_fdp(priors, self._delta_of_epsilon(), v, gamma=gamma)
        return success_tail(priors, self._epsilon(), v, self.delta)

    def count_bound(self, priors: ArrayLike, gamma: float = 0.05) -> int | jax.Array:
        """v_γ (:func:`success_count_bound` or :func:`success_count_bound_fdp`)."""
        self._replace_one()
        if self.mu is not None or self.epsilons is not None:
            v = success_count_bound_fdp(priors, self._delta_of_epsilon(), gamma)
            if np.size(priors) == 1 and not is_traced(priors, v):
                # one target: Pr[L ≥ 1] is its success, so every route is valid for this count
                single = float(np.max(np.asarray(single_target_success(priors, self).bound)))
                v = min(int(v), 1 if single <= gamma * (1.0 - ISF_LOG_MARGIN) else 2)
            return v
        return success_count_bound(priors, self._epsilon(), self.delta, gamma)

    def _epsilon(self) -> float:
        """ε (ValueError when the model has none, as a μ-GDP model may not)."""
        if self.epsilon is None:
            raise ValueError("privacy needs epsilon (ε-DP or (ε, δ)-DP) or mu (μ-GDP)")
        return self.epsilon

    def _curve(self) -> tuple[np.ndarray, np.ndarray]:
        """(ε_j, δ_j) of the model: its curve, or (ε, δ)-DP's δ(ε) sampled on [0, ε] (64
        points; the trade-off of (ε, δ)-DP is attained at ε itself)."""
        if self.epsilons is not None:
            return (np.asarray(self.epsilons, dtype=np.float64),
                    np.asarray(self.deltas, dtype=np.float64))
        eps = self._epsilon()
        grid = np.linspace(0.0, eps, 64) if np.isfinite(eps) else np.zeros(1)
        with jax.enable_x64(True):
            deltas = np.asarray(approx_dp_delta(grid, eps, self.delta), dtype=np.float64)
        return grid, deltas

    def _delta_of_epsilon(self) -> Callable:
        if self.epsilons is not None:
            grid = np.asarray(self.epsilons, dtype=np.float64)
            deltas = np.asarray(self.deltas, dtype=np.float64)

            def lookup(e):  # ε rounded down to the grid: δ is non-increasing, an upper bound
                i = np.searchsorted(grid, np.asarray(e, dtype=np.float64), side="right") - 1
                return np.where(i >= 0, deltas[np.clip(i, 0, None)], 1.0)

            return lookup
        mu = self.mu
        if mu is None:
            raise ValueError("privacy has no mu")
        return lambda e: gdp_delta(e, mu)

    def _replace_one(self) -> PrivacyModel:
        self._checked()
        if self.relation != "replace_one":
            raise ValueError(f"privacy.relation must be 'replace_one' for attack bounds (the game "
                             f"replaces one target's value), got {self.relation!r}")
        return self

    def guarantee(self) -> PureDP | ApproxDP | GaussianDP:
        """This model as the library's guarantee type (:mod:`jaxaudit.accounting.guarantees`),
        with relation ``"replace_one"``: the bounds' game changes one target's value."""
        self._checked()
        if self.epsilons is not None:
            raise ValueError("a privacy curve has no single guarantee type: use its epsilons "
                             "and deltas")
        if self.mu is not None:
            return GaussianDP(self.mu, "replace_one")
        if self.delta:
            return ApproxDP(self._epsilon(), self.delta, "replace_one")
        return PureDP(self._epsilon(), "replace_one")

    @classmethod
    def from_guarantee(cls, guarantee: PureDP | ApproxDP | GaussianDP | PldProfile
                       ) -> PrivacyModel:
        """The model of a :class:`~jaxaudit.accounting.PureDP`, :class:`~jaxaudit.accounting.ApproxDP`,
        :class:`~jaxaudit.accounting.GaussianDP` or :class:`~jaxaudit.accounting.PldProfile`
        (its whole δ(ε) grid) guarantee under replace-one neighbours.

        An add/remove guarantee is refused (ValueError naming ``privacy.relation``): the bounds
        need replace-one, which it implies only through group privacy — convert it with
        ``guarantee.to_replace_one()`` (docs/vocabulary.md)."""
        if not isinstance(guarantee, PureDP | ApproxDP | GaussianDP | PldProfile):
            raise ValueError("privacy must be a PrivacyModel, PureDP, ApproxDP, GaussianDP or "
                             f"PldProfile, got {type(guarantee).__name__} (convert an RdpCurve "
                             "with .to_approx(delta))")
        if guarantee.relation != "replace_one":
            raise ValueError(f"privacy.relation must be 'replace_one' (the bounds' game replaces "
                             f"one target's value), got {guarantee.relation!r}: convert an "
                             "add/remove guarantee with .to_replace_one() (group privacy)")
        guarantee.validate()
        if isinstance(guarantee, PldProfile):
            return cls(epsilons=np.asarray(guarantee.epsilons, dtype=np.float64),
                       deltas=np.asarray(guarantee.deltas, dtype=np.float64))
        if isinstance(guarantee, GaussianDP):
            return cls(mu=float(np.asarray(guarantee.mu)))
        if isinstance(guarantee, ApproxDP):
            return cls(epsilon=float(np.asarray(guarantee.epsilon)),
                       delta=float(np.asarray(guarantee.delta)))
        return cls(epsilon=float(np.asarray(guarantee.epsilon)))

    def _checked(self) -> PrivacyModel:
        check_relation("privacy.relation", self.relation)
        if self.epsilons is not None or self.deltas is not None:
            e = check_nonnegative("privacy.epsilons", as_vector("privacy.epsilons", self.epsilons))
            d = check_probability("privacy.deltas", as_vector("privacy.deltas", self.deltas))
            if e.shape != d.shape or e.size == 0 or np.any(np.diff(e) <= 0):
                raise ValueError("privacy.epsilons must be a non-empty increasing grid with one "
                                 f"δ per point, got shapes {e.shape} and {d.shape}")
            if e[0] != 0:  # δ(0) is the advantage and bounds every FPR's line: it must be there
                raise ValueError(f"privacy.epsilons must start at 0 (δ(0) is needed), got {e[0]!r}")
            return self
        if self.mu is None and self.epsilon is None:
            raise ValueError("privacy needs epsilon (ε-DP or (ε, δ)-DP) or mu (μ-GDP)")
        if self.mu is not None:
            check_positive("mu", _real_scalar("mu", self.mu))
        if self.epsilon is not None:
            check_nonnegative("privacy.epsilon", _real_scalar("privacy.epsilon", self.epsilon))
        check_probability("privacy.delta", _real_scalar("privacy.delta", self.delta), open_high=True)
        return self


def _real_scalar(name: str, value: Any) -> Any:
    """A concrete real scalar (a bool, string or array refused, naming ``name``); traced
    values pass unchecked."""
    if isinstance(value, bool | np.bool_):
        raise ArgumentTypeError(f"{name} must be a real number, got {value!r}")
    return as_scalar(name, value)


def _relation_of(accountant: Any) -> str:
    rel = getattr(accountant, "neighboring_relation", None)
    name = getattr(rel, "name", None)
    relations = {"ADD_OR_REMOVE_ONE": "add_remove", "REPLACE_ONE": "replace_one"}
    if name not in relations:
        raise ValueError("relation must be given ('replace_one' or 'add_remove'): the "
                         f"accountant {type(accountant).__name__} does not say")
    return relations[name]


def single_target_success(priors: ArrayLike, privacy: PrivacyModel | PureDP | ApproxDP
                          | GaussianDP | PldProfile, *, exact_match: bool = False
                          ) -> SingleTargetBound:
    """The tightest valid bound on one target's attack success, and which route gave it.

    The least of three upper bounds (:mod:`jaxaudit.bounds.single_target`; docs/bounds.md):
    ``posterior`` inf_ε β(ε, p) + δ_f(ε) (Swanberg et al., arXiv:2507.08158; ε optimised
    continuously under μ-GDP), ``kgk_plus`` 1 − f(p) (Kulynych et al., arXiv:2507.06969), and,
    with ``exact_match`` (the guess is one value of a discrete secret and succeeds iff it is the
    secret; p is then the largest prior mass, 1/K for a uniform prior over K values),
    ``fixed_point``: the root of a = 1 − f(r(1 − a)) with r = p/(1 − p), which K-ary randomized
    response attains for a uniform prior. Under pure ε-DP all three are β(ε, p) or above.

    Inside the caller's ``jit``/``vmap``/``grad`` (a traced prior, or a ``PrivacyModel`` with a
    traced ``mu``) it computes in the caller's precision without checks; concrete calls are
    checked and computed in float64.

    Args:
      priors: baseline success p ∈ [0, 1] (any shape).
      privacy: a replace-one :class:`PrivacyModel` or guarantee.
      exact_match: the game is an exact-match guess with one attempt (p the largest prior mass).

    Returns:
      :class:`~jaxaudit.bounds.single_target.SingleTargetBound` (``bound``, ``route`` index into
      ``single_target.ROUTES``, and each route's number).

    Examples:
      >>> r = single_target_success(0.1, PrivacyModel(mu=1.0), exact_match=True)
      >>> round(float(r.bound), 4), ROUTES[int(r.route)]   # a uniform prior over 10 values
      (0.329, 'fixed_point')
    """
    if not isinstance(privacy, PrivacyModel):
        privacy = PrivacyModel.from_guarantee(privacy)
    exact_match = check_bool("exact_match", exact_match)
    if not is_traced(priors, privacy.mu, privacy.epsilon, privacy.delta):
        privacy._replace_one()
        p = check_probability("priors", priors)
        with jax.enable_x64(True):
            return _routes(privacy, jnp.asarray(np.asarray(p, dtype=np.float64)), exact_match)
    return _routes(privacy, jnp.asarray(priors), exact_match)


_gdp_routes_jit = jax.jit(gdp_routes, static_argnames="exact_match")
_profile_routes_jit = jax.jit(profile_routes, static_argnames="exact_match")


def _routes(privacy: PrivacyModel, p: jax.Array, exact_match: bool) -> SingleTargetBound:
    """The routes for ``privacy`` (jitted cores: one compiled program per shape and dtype)."""
    if privacy.mu is not None and privacy.epsilons is None:
        return _gdp_routes_jit(p, privacy.mu, exact_match=exact_match)
    if privacy.epsilons is None and not privacy.delta:  # pure ε-DP: β is tight
        eps = privacy._epsilon()
        beta = _posterior_success(p, eps)
        kgk = prior_work._kgk_approx(p, eps, 0.0)
        # β ≤ 1 − f(p) = min(e^ε p, 1 − e^{−ε}(1 − p)) exactly, and β ≥ p (the prior alone
        # attains p): the bound is β, never rounded below p (at ε = 0 both forms lost an ulp),
        # and p itself at ε = 0 (where β = p exactly)
        bound = jnp.where(eps == 0, p, jnp.maximum(beta, p))
        return SingleTargetBound(bound, jnp.zeros(beta.shape, jnp.int32),
                                 beta, jnp.full_like(beta, eps), kgk,
                                 beta if exact_match else jnp.ones_like(beta))
    e, d = privacy._curve()
    return _profile_routes_jit(p, jnp.asarray(e, p.dtype), jnp.asarray(d, p.dtype),
                               exact_match=exact_match)


class PerTarget(NamedTuple):
    """β(ε, κ) of the most exposed target and its gain over κ (upper bounds)."""

    epsilon: float
    beta: float
    gain: float
    ratio: float


class BoundsSummary(NamedTuple):
    """Result of :func:`summarize_bounds` (bounds are upper bounds; ``expected_baseline_successes``
    is the prior's expectation Σ p_i).

    Attributes:
      privacy: :meth:`PrivacyModel.describe`.
      targets: n.
      gamma: γ.
      count_bound: v_γ (n + 1 when vacuous).
      vacuous: v_γ > n.
      expected_baseline_successes: Σ_i p_i.
      aggregate_gain: :func:`aggregate_gain`.
      max_prior: κ = max_i p_i.
      single_target_bound: the least valid bound on the success of one target of prior κ
        (:func:`single_target_success`).
      per_target: :class:`PerTarget` at the model's ε (None under μ-GDP without ε).
      baselines: prior work that applies, by name: ``kgk_plus``, ``balle_rero`` (pure DP),
        ``balle_rero_zcdp`` (μ-GDP as ρ = μ²/2), ``kgk_plus_count`` (KGK+ as a count bound by
        Markov's inequality, ⌈Σ_i b_i/γ⌉ with b_i the least per-target bound, n + 1 when
        above n), ``mmc_threshold`` (uniform
        prior over K ≥ 2 values, one guess; f̄⁻¹ of ε-DP, (ε, δ)-DP or μ-GDP), ``steinke_threshold`` (uniform
        prior over 2 values, one guess, DP).
      tightest_bound: the smallest valid count bound among ``count_bound`` and the count
        baselines (``kgk_plus_count``, ``mmc_threshold``, ``steinke_threshold``): each is a v
        with Pr[L ≥ v] ≤ γ, so their minimum is one too (n + 1 when all are vacuous).
      tightest: which one it was: ``"ours"``, ``"kgk_plus"``, ``"mmc"`` or ``"steinke"``
        (``"ours"`` on a tie).
      single_target_route: the route that gave ``single_target_bound``
        (:func:`single_target_success`: ``"posterior"``, ``"kgk_plus"`` or ``"fixed_point"``).
    """

    privacy: str
    targets: int
    gamma: float
    count_bound: int
    vacuous: bool
    expected_baseline_successes: float
    aggregate_gain: float
    max_prior: float
    single_target_bound: float
    per_target: PerTarget | None
    baselines: dict
    tightest_bound: int
    tightest: str
    single_target_route: str = "posterior"


def summarize_bounds(priors: ArrayLike,
                     privacy: PrivacyModel | PureDP | ApproxDP | GaussianDP | PldProfile,
                     *, gamma: float = 0.05,
                     uniform_support: int | None = None, attempts: int = 1) -> BoundsSummary:
    """Every bound of :mod:`jaxaudit.bounds` for these targets, side by side.

    Args:
      priors: (n,) baseline success p_i of each target.
      privacy: the mechanism's :class:`PrivacyModel`, or a replace-one
        :class:`~jaxaudit.accounting.PureDP`, :class:`~jaxaudit.accounting.ApproxDP` or
        :class:`~jaxaudit.accounting.GaussianDP` (:meth:`PrivacyModel.from_guarantee`).
      gamma: level γ ∈ (0, 1) of the count bound and of the one-run tests.
      uniform_support: K ≥ 1 when the priors come from a uniform prior over K values (enables
        the one-run baselines that assume it: MMC for K ≥ 2, and Steinke et al. for K = 2).
      attempts: guesses per target (the one-run baselines need one).

    Returns:
      :class:`BoundsSummary`; ``summary._asdict()`` (with ``per_target._asdict()``) is the JSON
      that ``jaxaudit bounds --json`` writes.

    Examples:
      >>> s = summarize_bounds([0.1] * 1000, PrivacyModel(epsilon=1.0), uniform_support=10)
      >>> s.count_bound, round(s.aggregate_gain, 3), round(s.per_target.beta, 6)
      (255, 0.155, 0.231969)
      >>> s.tightest_bound, s.tightest
      (255, 'ours')
    """
    if not isinstance(privacy, PrivacyModel):
        privacy = PrivacyModel.from_guarantee(privacy)
    privacy = privacy._checked()
    if uniform_support is not None:
        uniform_support = check_integer("uniform_support", uniform_support, minimum=1,
                                        maximum=2**1000)
    with jax.enable_x64(True):
        v_gamma = int(privacy.count_bound(priors, gamma))  # validates priors and gamma
        p = np.asarray(priors, dtype=np.float64).ravel()
        if p.size == 0:
            raise ValueError("priors must hold at least one target")
        n, kappa = p.size, float(p.max())
        eps, delta, mu = privacy.epsilon, privacy.delta, privacy.mu
        curve = privacy.epsilons is not None
        uniform_k = (uniform_support if uniform_support is not None and uniform_support >= 2
                     and attempts == 1 else None)
        # one target: the least of the valid routes (posterior, 1 − f, the uniform fixed point)
        single = single_target_success(kappa, privacy, exact_match=uniform_k is not None)
        per_target = None
        if eps is not None and not curve:
            per_target = PerTarget(eps, float(posterior_success(kappa, eps)),
                                   float(gain(kappa, eps)), float(gain_ratio(kappa, eps)))
        if curve:
            e_j, d_j = privacy._curve()
            kgk = lambda k: profile_tpr(jnp.asarray(k), jnp.asarray(e_j), jnp.asarray(d_j))  # noqa: E731
            baselines = {"kgk_plus": float(kgk(kappa))}
            inverse_blowup = _curve_inverse_blowup(e_j, d_j)
        elif mu is not None:
            kgk = lambda k: prior_work.kgk_bound_gdp(k, mu)  # noqa: E731
            baselines = {"kgk_plus": float(kgk(kappa)),
                         "balle_rero_zcdp": float(prior_work.balle_rero_zcdp(kappa, mu**2 / 2.0))}
            inverse_blowup = prior_work.inverse_blowup_gdp(mu)
        elif delta:
            kgk = lambda k: prior_work.kgk_bound_dp(k, privacy._epsilon(), delta)  # noqa: E731
            baselines = {"kgk_plus": float(kgk(kappa))}
            inverse_blowup = prior_work.inverse_blowup_dp(privacy._epsilon(), delta)
        else:
            eps_dp = privacy._epsilon()
            kgk = lambda k: prior_work.kgk_bound_dp(k, eps_dp)  # noqa: E731
            baselines = {"kgk_plus": float(kgk(kappa)),
                         "balle_rero": float(prior_work.balle_rero_pure(kappa, eps_dp))}
            inverse_blowup = prior_work.inverse_blowup_dp(eps_dp)
        # Markov's inequality needs only E[L] = Σ_i Pr[target i attacked] ≤ Σ_i b_i: any valid
        # per-target bound serves, so b_i is the least of the routes (docs/bounds.md)
        b = np.asarray(single_target_success(p, privacy, exact_match=uniform_k is not None).bound,
                       dtype=np.float64)
        baselines["kgk_plus_count"] = _markov_count(np.minimum(b, np.asarray(kgk(p))), gamma)
        if uniform_k is not None:
            # MMC's test is for one guess per target; with several attempts it does not apply
            baselines["mmc_threshold"] = int(prior_work.mmc_threshold(n, n, uniform_k,
                                                                      inverse_blowup, gamma))
        if uniform_support == 2 and mu is None and not curve and attempts == 1:
            baselines["steinke_threshold"] = prior_work.steinke_threshold(n, n, privacy._epsilon(), delta,
                                                               gamma)
        # the valid count bounds, ours first (a tie goes to ours)
        counts = {name: int(v) for name, v in (
            ("ours", v_gamma), ("kgk_plus", baselines["kgk_plus_count"]),
            ("mmc", baselines.get("mmc_threshold")),
            ("steinke", baselines.get("steinke_threshold"))) if v is not None}
        tightest = min(counts, key=counts.__getitem__)
        return BoundsSummary(
            privacy=privacy.describe(),
            targets=n,
            gamma=gamma,
            count_bound=v_gamma,
            vacuous=v_gamma > n,
            expected_baseline_successes=float(p.sum()),
            aggregate_gain=aggregate_gain(p, v_gamma),
            max_prior=kappa,
            single_target_bound=float(single.bound),
            per_target=per_target,
            baselines=baselines,
            tightest_bound=counts[tightest],
            tightest=tightest,
            single_target_route=ROUTES[int(single.route)],
        )


def _curve_inverse_blowup(epsilons: np.ndarray, deltas: np.ndarray) -> Callable:
    """f̄⁻¹ of a sampled curve: 1 − f = min_j g_j with g_j the (ε_j, δ_j) blow-up, so its least
    preimage is max_j g_j⁻¹(y) (a jnp function of y, for MMC's recursion)."""
    e, d = np.asarray(epsilons), np.asarray(deltas)

    def inverse(y):
        y = jnp.asarray(y)[..., None]
        scaled = jnp.exp(-e) * (y - d)
        upper = jnp.where(y >= 1.0, 1.0 - d, (1.0 - d) - jnp.exp(e) * (1.0 - y))
        one = jnp.where(y >= 1.0, 1.0 - d, jnp.clip(jnp.maximum(scaled, upper), 0.0, 1.0))
        return jnp.max(one, axis=-1)

    return inverse


def _markov_count(b: np.ndarray, gamma: float) -> int:
    """⌈Σ_i b_i/γ⌉ (at least 1), n + 1 when above n: the least v with Σ_i b_i/v ≤ γ, so that
    Markov's inequality Pr[L ≥ v] ≤ E[L]/v ≤ Σ_i b_i/v gives Pr[L ≥ v] ≤ γ. The float64 sum
    is rounded up by a relative 1e−9 before the ceiling (never one too small)."""
    n = b.size
    v = max(1, math.ceil(float(np.sum(b)) / gamma * (1.0 + 1e-9)))
    return v if v <= n else n + 1
