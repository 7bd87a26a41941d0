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
from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_integer
from jaxaudit.accounting.guarantees import ApproxDP, GaussianDP, PureDP
from jaxaudit.bounds import prior_work
from jaxaudit.bounds.count_bound import (
    aggregate_gain,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.fdp import gdp_delta
from jaxaudit.bounds.success import gain, gain_ratio, posterior_success

__all__ = ["PrivacyModel", "PerTarget", "BoundsSummary", "summarize_bounds"]


class PrivacyModel(NamedTuple):
    """The mechanism's guarantee: ε-DP, (ε, δ)-DP, or μ-GDP (then ``epsilon``, if given, is only
    the ε at which the per-target β(ε, κ) is reported), under replace-one neighbours.

    The bounds' view of :mod:`jaxaudit.accounting.guarantees` (:meth:`guarantee`,
    :meth:`from_guarantee`); :func:`summarize_bounds` takes either.

    Attributes:
      epsilon: ε ≥ 0 (required unless ``gdp_mu`` is given).
      delta: δ ∈ [0, 1) of (ε, δ)-DP (0: pure ε-DP; ignored under μ-GDP).
      gdp_mu: μ > 0 of μ-GDP (f-DP bound, minimised over an ε grid).
    """

    epsilon: float | None = None
    delta: float = 0.0
    gdp_mu: float | None = None

    def describe(self) -> str:
        """e.g. ``"1-DP"``, ``"(1, 1e-06)-DP"``, ``"1-GDP (f-DP bound, ...)"``."""
        if self.gdp_mu is not None:
            return f"{self.gdp_mu:g}-GDP (f-DP bound, minimised over an ε grid)"
        if self.delta:
            return f"({self.epsilon:g}, {self.delta:g})-DP"
        return f"{self.epsilon:g}-DP"

    def tail(self, priors: ArrayLike, v: ArrayLike, gamma: float = 0.05) -> jax.Array:
        """Upper bound on Pr[L ≥ v] (:func:`success_tail` or :func:`success_tail_fdp`)."""
        if self.gdp_mu is not None:
            return success_tail_fdp(priors, self._delta_of_epsilon(), v, gamma=gamma)
        return success_tail(priors, self._epsilon(), v, self.delta)

    def count_bound(self, priors: ArrayLike, gamma: float = 0.05) -> int | jax.Array:
        """v_γ (:func:`success_count_bound` or :func:`success_count_bound_fdp`)."""
        if self.gdp_mu is not None:
            return success_count_bound_fdp(priors, self._delta_of_epsilon(), gamma)
        return success_count_bound(priors, self._epsilon(), self.delta, gamma)

    def _epsilon(self) -> float:
        """ε (ValueError when the model has none, as a μ-GDP model may not)."""
        if self.epsilon is None:
            raise ValueError("privacy needs epsilon (ε-DP or (ε, δ)-DP) or gdp_mu (μ-GDP)")
        return self.epsilon

    def _delta_of_epsilon(self) -> Callable:
        mu = self.gdp_mu
        if mu is None:
            raise ValueError("privacy has no gdp_mu")
        return lambda e: gdp_delta(e, mu)

    def guarantee(self) -> PureDP | ApproxDP | GaussianDP:
        """This model as the library's guarantee type (:mod:`jaxaudit.accounting.guarantees`),
        with relation ``"replace_one"``: the bounds' game changes one target's value."""
        self._checked()
        if self.gdp_mu is not None:
            return GaussianDP(self.gdp_mu, "replace_one")
        if self.delta:
            return ApproxDP(self._epsilon(), self.delta, "replace_one")
        return PureDP(self._epsilon(), "replace_one")

    @classmethod
    def from_guarantee(cls, guarantee: PureDP | ApproxDP | GaussianDP) -> PrivacyModel:
        """The model of a :class:`~jaxaudit.accounting.PureDP`, :class:`~jaxaudit.accounting.ApproxDP`
        or :class:`~jaxaudit.accounting.GaussianDP` guarantee under replace-one neighbours.

        An add/remove guarantee is refused (ValueError naming ``privacy.relation``): the bounds
        need replace-one, which it implies only through group privacy — convert it with
        ``guarantee.to_replace_one()`` (docs/vocabulary.md)."""
        if not isinstance(guarantee, PureDP | ApproxDP | GaussianDP):
            raise ValueError("privacy must be a PrivacyModel, PureDP, ApproxDP or GaussianDP, got "
                             f"{type(guarantee).__name__} (convert an RdpCurve with "
                             ".to_approx(delta))")
        if guarantee.relation != "replace_one":
            raise ValueError(f"privacy.relation must be 'replace_one' (the bounds' game replaces "
                             f"one target's value), got {guarantee.relation!r}: convert an "
                             "add/remove guarantee with .to_replace_one() (group privacy)")
        guarantee.validate()
        if isinstance(guarantee, GaussianDP):
            return cls(gdp_mu=float(np.asarray(guarantee.mu)))
        if isinstance(guarantee, ApproxDP):
            return cls(epsilon=float(np.asarray(guarantee.epsilon)),
                       delta=float(np.asarray(guarantee.delta)))
        return cls(epsilon=float(np.asarray(guarantee.epsilon)))

    def _checked(self) -> PrivacyModel:
        if self.gdp_mu is None and self.epsilon is None:
            raise ValueError("privacy needs epsilon (ε-DP or (ε, δ)-DP) or gdp_mu (μ-GDP)")
        if self.gdp_mu is not None and not self.gdp_mu > 0:
            raise ValueError(f"gdp_mu must be > 0, got {self.gdp_mu}")
        return self


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
      single_target_bound: the tail bound for one target of prior κ at v = 1.
      per_target: :class:`PerTarget` at the model's ε (None under μ-GDP without ε).
      baselines: prior work that applies, by name: ``kgk_plus``, ``balle_rero`` (pure DP),
        ``balle_rero_zcdp`` (μ-GDP as ρ = μ²/2), ``kgk_plus_count`` (KGK+ as a count bound by
        Markov's inequality, ⌈Σ_i b_i/γ⌉, n + 1 when above n), ``mmc_threshold`` (uniform
        prior over K ≥ 2 values, one guess; f̄⁻¹ of ε-DP, (ε, δ)-DP or μ-GDP), ``steinke_threshold`` (uniform
        prior over 2 values, one guess, DP).
      tightest_bound: the smallest valid count bound among ``count_bound`` and the count
        baselines (``kgk_plus_count``, ``mmc_threshold``, ``steinke_threshold``): each is a v
        with Pr[L ≥ v] ≤ γ, so their minimum is one too (n + 1 when all are vacuous).
      tightest: which one it was: ``"ours"``, ``"kgk_plus"``, ``"mmc"`` or ``"steinke"``
        (``"ours"`` on a tie).
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


def summarize_bounds(priors: ArrayLike, privacy: PrivacyModel | PureDP | ApproxDP | GaussianDP,
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
        eps, delta, mu = privacy.epsilon, privacy.delta, privacy.gdp_mu
        per_target = None
        if eps is not None:
            per_target = PerTarget(eps, float(posterior_success(kappa, eps)),
                                   float(gain(kappa, eps)), float(gain_ratio(kappa, eps)))
        if mu is not None:
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
        baselines["kgk_plus_count"] = _markov_count(np.asarray(kgk(p), dtype=np.float64), gamma)
        if uniform_support is not None and uniform_support >= 2 and attempts == 1:
            # MMC's test is for one guess per target; with several attempts it does not apply
            baselines["mmc_threshold"] = int(prior_work.mmc_threshold(n, n, uniform_support, inverse_blowup,
                                                           gamma))
        if uniform_support == 2 and mu is None and attempts == 1:
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
            # one target (n = 1): β(ε, κ) + δ, or inf_ε β(ε, κ) + δ_f(ε) under f-DP
            single_target_bound=float(privacy.tail(np.asarray([kappa]), 1, gamma)),
            per_target=per_target,
            baselines=baselines,
            tightest_bound=counts[tightest],
            tightest=tightest,
        )


def _markov_count(b: np.ndarray, gamma: float) -> int:
    """⌈Σ_i b_i/γ⌉ (at least 1), n + 1 when above n: the least v with Σ_i b_i/v ≤ γ, so that
    Markov's inequality Pr[L ≥ v] ≤ E[L]/v ≤ Σ_i b_i/v gives Pr[L ≥ v] ≤ γ. The float64 sum
    is rounded up by a relative 1e−9 before the ceiling (never one too small)."""
    n = b.size
    v = max(1, math.ceil(float(np.sum(b)) / gamma * (1.0 + 1e-9)))
    return v if v <= n else n + 1
