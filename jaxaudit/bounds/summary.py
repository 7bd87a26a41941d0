"""Every bound for one set of targets, side by side: the count bound and the bounds of prior work.

:func:`summarize_bounds` is what ``jaxaudit bounds`` prints (docs/bounds.md, "Data flow"): the
level-γ count bound v_γ of Swanberg et al. (arXiv 2507.08158) for the n targets, the aggregate
gain over the prior, the single-target bound at the largest prior κ = max_i p_i next to KGK+
and Balle et al.'s reconstruction robustness, and, for a uniform prior over K values, MMC's and
(K = 2, pure or approximate DP) Steinke et al.'s one-run thresholds. Each entry is a call of
a public function of :mod:`jaxaudit.bounds`; this module only decides which apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit.accounting.guarantees import ApproxDP, GaussianDP, PureDP
from jaxaudit.bounds.count_bound import (
    aggregate_gain,
    success_count_bound,
    success_count_bound_fdp,
    success_tail,
    success_tail_fdp,
)
from jaxaudit.bounds.fdp import gdp_delta
from jaxaudit.bounds.prior_work import (
    balle_rero_pure,
    balle_rero_zcdp,
    inverse_blowup_gdp,
    inverse_blowup_pure,
    kgk_bound_approx,
    kgk_bound_gdp,
    kgk_bound_pure,
    mmc_threshold,
    steinke_threshold,
)
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
        ``balle_rero_zcdp`` (μ-GDP as ρ = μ²/2), ``mmc_threshold`` (uniform prior, one guess,
        pure DP or GDP), ``steinke_threshold`` (uniform prior over 2 values, one guess, DP).
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
      uniform_support: K when the priors come from a uniform prior over K values (enables the
        one-run baselines that assume it: MMC, and Steinke et al. for K = 2).
      attempts: guesses per target (the one-run baselines need one).

    Returns:
      :class:`BoundsSummary`; ``summary._asdict()`` (with ``per_target._asdict()``) is the JSON
      that ``jaxaudit bounds --json`` writes.

    Examples:
      >>> s = summarize_bounds([0.1] * 1000, PrivacyModel(epsilon=1.0), uniform_support=10)
      >>> s.count_bound, round(s.aggregate_gain, 3), round(s.per_target.beta, 6)
      (255, 0.155, 0.231969)
    """
    if not isinstance(privacy, PrivacyModel):
        privacy = PrivacyModel.from_guarantee(privacy)
    privacy = privacy._checked()
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
            baselines = {"kgk_plus": float(kgk_bound_gdp(kappa, mu)),
                         "balle_rero_zcdp": float(balle_rero_zcdp(kappa, mu**2 / 2.0))}
            inverse_blowup = inverse_blowup_gdp(mu)
        elif delta:
            baselines = {"kgk_plus": float(kgk_bound_approx(kappa, privacy._epsilon(), delta))}
            inverse_blowup = None
        else:
            eps_dp = privacy._epsilon()
            baselines = {"kgk_plus": float(kgk_bound_pure(kappa, eps_dp)),
                         "balle_rero": float(balle_rero_pure(kappa, eps_dp))}
            inverse_blowup = inverse_blowup_pure(eps_dp)
        if uniform_support is not None and inverse_blowup is not None and attempts == 1:
            # MMC's test is for one guess per target; with several attempts it does not apply
            baselines["mmc_threshold"] = int(mmc_threshold(n, n, uniform_support, inverse_blowup,
                                                           gamma))
        if uniform_support == 2 and mu is None and attempts == 1:
            baselines["steinke_threshold"] = steinke_threshold(n, n, privacy._epsilon(), delta,
                                                               gamma)
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
        )
