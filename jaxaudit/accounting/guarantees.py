"""Privacy guarantees: one family of types, with the neighbouring relation as a field.

A guarantee says what a mechanism M promises for every pair of neighbouring datasets D ~ D':

* :class:`PureDP` — ε-DP: Pr[M(D) ∈ S] ≤ e^ε Pr[M(D') ∈ S] (Dwork, McSherry, Nissim, Smith 2006).
* :class:`ApproxDP` — (ε, δ)-DP: Pr[M(D) ∈ S] ≤ e^ε Pr[M(D') ∈ S] + δ.
* :class:`GaussianDP` — μ-GDP: every test between M(D) and M(D') is at least as hard as testing
  N(0, 1) against N(μ, 1) (Dong, Roth, Su, arXiv 1905.02383).
* :class:`RdpCurve` — (α, ε_α)-RDP at each order α: D_α(M(D) ‖ M(D')) ≤ ε_α (Mironov,
  arXiv 1702.07476).
* :class:`PldProfile` — a privacy profile δ(ε) on an ε grid (an upper bound on the hockey-stick
  divergence, e.g. from a privacy-loss-distribution accountant), with the mechanism's reported
  (ε, δ) point and its noise.

``relation`` names the neighbours: ``"add_remove"`` (D' is D with one record added or removed —
the usual DP-SGD accounting, Opacus, ``accounting.rdp``) or ``"replace_one"`` (D' is D with one
record's value replaced — what an attribute-inference or reconstruction game changes, and what
``bounds`` and ``attacks`` need). A replace-one pair is two add/remove steps, so an add/remove
guarantee implies a replace-one one by group privacy with groups of two
(:meth:`PureDP.to_replace_one` and friends); the converse does not hold in general.

Every type is a frozen dataclass registered as a JAX pytree: the numbers are leaves (so a
guarantee passes through ``jax.jit``/``jax.vmap``), ``relation`` is static metadata. Construction
checks only the relation (JAX rebuilds pytrees with placeholder leaves); :meth:`validate` checks
concrete numbers and names the bad field.

Conversions here call the library's one implementation of each formula (``jaxaudit.stats.gdp``
for μ-GDP, ``accounting.rdp`` for RDP → (ε, δ)).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Self, get_args

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_nonnegative,
    check_orders,
    check_probability,
    is_traced,
)
from jaxaudit.stats.gdp import gdp_delta_core, gdp_to_rdp_core
from jaxaudit.stats.numerics import bisect, float_arrays

__all__ = [
    "RELATIONS",
    "Relation",
    "PureDP",
    "ApproxDP",
    "GaussianDP",
    "RdpCurve",
    "PldProfile",
    "Guarantee",
    "check_relation",
]

#: The neighbouring relations: one record added or removed, or one record's value replaced.
Relation = Literal["add_remove", "replace_one"]
#: The values of the relation field: ("add_remove", "replace_one").
RELATIONS: tuple[str, ...] = get_args(Relation)


def check_relation(name: str, relation: object) -> None:
    """ValueError naming ``name`` unless ``relation`` is one of :data:`RELATIONS`."""
    if not isinstance(relation, str) or relation not in RELATIONS:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, RELATIONS))}, "
                         f"got {relation!r}")


class _Base:
    relation: Relation

    def __post_init__(self) -> None:
        check_relation(f"{type(self).__name__}.relation", self.relation)

    def __repr__(self) -> str:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return f"{type(self).__name__}(" + ", ".join(
            f"{f.name}={_plain_value(getattr(self, f.name))!r}" for f in fields) + ")"

    def _doubled(self, field: str) -> Self:
        """Self if already replace-one, else the replace-one guarantee with ``field`` doubled."""
        if self.relation == "replace_one":
            return self
        return dataclasses.replace(  # type: ignore[type-var]
            self, **{field: 2.0 * getattr(self, field)}, relation="replace_one")

    #: The check of each numeric field (run by :meth:`validate` on concrete values).
    _checks: ClassVar[dict[str, Callable[[str, Any], Any]]] = {}

    def validate(self) -> Self:
        """Self, after checking concrete fields (ValueError naming the field)."""
        for field, check in self._checks.items():
            value = getattr(self, field)
            if not is_traced(value):
                check(f"{type(self).__name__}.{field}", value)
        return self


@dataclasses.dataclass(frozen=True, repr=False)
class PureDP(_Base):
    """ε-DP under ``relation`` neighbours.

    Attributes:
      epsilon: ε ≥ 0 (∞ allowed: no guarantee).
      relation: ``"add_remove"`` or ``"replace_one"``.

    Examples:
      >>> PureDP(1.0, "add_remove").to_replace_one()
      PureDP(epsilon=2.0, relation='replace_one')
    """

    epsilon: ArrayLike
    relation: Relation
    _checks = {"epsilon": check_nonnegative}

    def to_approx(self) -> ApproxDP:
        """ε-DP is (ε, 0)-DP."""
        return ApproxDP(self.epsilon, 0.0, self.relation)

    def to_replace_one(self) -> PureDP:
        """Replace-one from add/remove by group privacy (two steps): 2ε (Dwork & Roth, "The
        Algorithmic Foundations of Differential Privacy", Theorem 2.2). Unchanged if already
        replace-one."""
        return self._doubled("epsilon")


@dataclasses.dataclass(frozen=True, repr=False)
class ApproxDP(_Base):
    """(ε, δ)-DP under ``relation`` neighbours.

    Attributes:
      epsilon: ε ≥ 0.
      delta: DP's δ ∈ [0, 1].
      relation: ``"add_remove"`` or ``"replace_one"``.
    """

    epsilon: ArrayLike
    delta: ArrayLike
    relation: Relation
    _checks = {"epsilon": check_nonnegative, "delta": check_probability}

    def to_replace_one(self) -> ApproxDP:
        """Replace-one from add/remove by group privacy over the two steps D → D∖{x} → D':
        (2ε, (1 + e^ε) δ) (apply the definition twice; Dwork & Roth, Theorem 2.2 for δ = 0).
        Unchanged if already replace-one."""
        if self.relation == "replace_one":
            return self
        xp = jnp if is_traced(self.epsilon, self.delta) else np
        eps = xp.asarray(self.epsilon, dtype=float)
        delta = xp.minimum((1.0 + xp.exp(eps)) * xp.asarray(self.delta, dtype=float), 1.0)
        return ApproxDP(2.0 * eps, delta, "replace_one")


@dataclasses.dataclass(frozen=True, repr=False)
class GaussianDP(_Base):
    """μ-GDP under ``relation`` neighbours (Dong, Roth, Su, arXiv 1905.02383).

    Attributes:
      mu: μ ≥ 0 (∞ allowed).
      relation: ``"add_remove"`` or ``"replace_one"``.

    Examples:
      >>> g = GaussianDP(1.0, "replace_one")
      >>> round(float(g.delta_of_epsilon(1.0)), 4)
      0.1269
    """

    mu: ArrayLike
    relation: Relation
    _checks = {"mu": check_nonnegative}

    def delta_of_epsilon(self, epsilon: ArrayLike) -> jax.Array:
        """δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Corollary 2.13;
        :func:`jaxaudit.stats.gdp.gdp_delta_core`, the library's one copy). Traceable."""
        epsilon, mu = float_arrays(epsilon, self.mu)
        return gdp_delta_core(epsilon, mu)

    def to_approx(self, delta: ArrayLike) -> ApproxDP:
        """(ε, δ)-DP at the given δ with ε the smallest value with δ_μ(ε) ≤ δ, rounded *up* (the
        upper end of a 128-step bisection on δ_μ, so the claim holds). Concrete inputs are computed in
        float64 (numpy results); traced ones in their dtype (float32: up to the rounding of δ_μ)."""
        if not is_traced(self.mu, delta):  # concrete: in float64, so the claim holds
            with jax.enable_x64(True):
                mu64, d64 = jnp.asarray(self.mu, jnp.float64), jnp.asarray(delta, jnp.float64)
                eps = np.asarray(jax.device_get(_gdp_epsilon_upper_jit(mu64, d64)))
            return ApproxDP(eps, np.asarray(delta, np.float64), self.relation)
        mu, d = float_arrays(self.mu, delta)
        return ApproxDP(_gdp_epsilon_upper(mu, d), d, self.relation)

    def to_rdp(self, orders: ArrayLike) -> RdpCurve:
        """(α, α μ²/2)-RDP at every order (Mironov, arXiv 1702.07476, Proposition 7;
        :func:`jaxaudit.stats.gdp_to_rdp`). Traceable."""
        mu, a = float_arrays(self.mu, orders)
        return RdpCurve(a, gdp_to_rdp_core(mu, a), self.relation)

    def to_replace_one(self) -> GaussianDP:
        """Replace-one from add/remove: 2μ-GDP (group privacy of GDP for groups of two; Dong,
        Roth, Su, arXiv 1905.02383, Theorem 2.14). Unchanged if already replace-one."""
        return self._doubled("mu")


@dataclasses.dataclass(frozen=True, repr=False)
class RdpCurve(_Base):
    """(α, ε_α)-RDP at each order α under ``relation`` neighbours (Mironov, arXiv 1702.07476).

    Attributes:
      orders: (K,) Rényi orders α > 1.
      epsilons: (K,) ε_α ≥ 0.
      relation: ``"add_remove"`` or ``"replace_one"``.
    """

    orders: ArrayLike
    epsilons: ArrayLike
    relation: Relation
    _checks = {"orders": check_orders, "epsilons": check_nonnegative}

    def validate(self) -> Self:
        """Self, after checking concrete fields (ValueError naming the field)."""
        super().validate()
        if not is_traced(self.orders, self.epsilons) and (
                np.shape(self.orders) != np.shape(self.epsilons)):
            raise ValueError(f"RdpCurve.epsilons must have the shape of orders "
                             f"{np.shape(self.orders)}, got {np.shape(self.epsilons)}")
        return self

    def to_approx(self, delta: ArrayLike) -> ApproxDP:
        """(ε, δ)-DP by dp_accounting's RDP conversion rule (the KL shortcut and Canonne,
        Kamath, Steinke, arXiv 2004.00010, Prop. 12), minimised over the orders:
        :func:`jaxaudit.accounting.rdp` 's one copy. Traceable."""
        from jaxaudit.accounting.rdp import _epsilon_from_rdp

        orders, eps, d = float_arrays(self.orders, self.epsilons, delta)
        return ApproxDP(_epsilon_from_rdp(orders, eps, d), d, self.relation)


@dataclasses.dataclass(frozen=True, repr=False)
class PldProfile(_Base):
    """A mechanism's privacy profile δ(ε) on a grid and its reported (ε, δ) point.

    Attributes:
      epsilon: ε at ``delta`` (inf when there is no noise).
      delta: DP's δ of that point.
      noise_multiplier: σ of the mechanism (DP-SGD's noise multiplier; for marginals the
        per-cell standard deviation, a cell count's sensitivity being 1); 0 without noise.
      epsilons: (G,) grid of ε, increasing, starting at 0.
      deltas: (G,) δ(ε) on the grid, an upper bound on the mechanism's privacy profile.
      relation: ``"add_remove"`` or ``"replace_one"``.
    """

    epsilon: float
    delta: float
    noise_multiplier: float
    epsilons: np.ndarray
    deltas: np.ndarray
    relation: Relation
    _checks = {"epsilon": check_nonnegative, "delta": check_probability,
               "noise_multiplier": check_nonnegative, "epsilons": check_nonnegative,
               "deltas": check_probability}

    def delta_of_epsilon(self, epsilon: ArrayLike) -> np.ndarray:
        """δ(ε) looked up on the grid, rounding ε *down* to a grid point (δ is decreasing in ε,
        so this is an upper bound); 1 below the grid. Host side (numpy)."""
        e = np.asarray(epsilon, dtype=np.float64)
        i = np.searchsorted(self.epsilons, e, side="right") - 1
        out = np.where(i >= 0, self.deltas[np.clip(i, 0, None)], 1.0)
        return out

    def to_approx(self) -> ApproxDP:
        """The reported point (ε, δ)."""
        return ApproxDP(self.epsilon, self.delta, self.relation)


# numbers are pytree leaves (jit/vmap see them), the relation is static metadata
jax.tree_util.register_dataclass(PureDP, data_fields=["epsilon"], meta_fields=["relation"])
jax.tree_util.register_dataclass(ApproxDP, data_fields=["epsilon", "delta"], meta_fields=["relation"])
jax.tree_util.register_dataclass(GaussianDP, data_fields=["mu"], meta_fields=["relation"])
jax.tree_util.register_dataclass(RdpCurve, data_fields=["orders", "epsilons"], meta_fields=["relation"])
jax.tree_util.register_dataclass(PldProfile, data_fields=["epsilon", "delta", "noise_multiplier", "epsilons", "deltas"], meta_fields=["relation"])


def _gdp_epsilon_upper(mu: jax.Array, d: jax.Array) -> jax.Array:
    """Smallest ε with δ_μ(ε) ≤ δ, the upper end of the final bracket (cf.
    :func:`jaxaudit.stats.gdp.gdp_epsilon_core`, which returns the lower end for lower bounds).
    0 when μ = 0 or δ ≥ 1 or δ_μ(0) ≤ δ; ∞ when δ = 0 < μ or μ = ∞. Traceable."""
    regular = (mu > 0) & jnp.isfinite(mu) & (d > 0)
    mu_s = jnp.where(regular, mu, jnp.ones_like(mu))
    d_s = jnp.where(regular, d, jnp.full_like(d, 0.5))
    # δ_μ(ε) < Φ(−ε/μ + μ/2) ≤ δ at ε ≥ μ²/2 − μ Φ⁻¹(δ): a valid upper end of the bracket
    eps_hi = jnp.maximum(mu_s * mu_s / 2.0 - mu_s * jax.scipy.special.ndtri(d_s), 0.0)
    _, hi = bisect(lambda e: gdp_delta_core(e, mu_s) <= d_s, jnp.zeros_like(eps_hi), eps_hi)
    hi = jnp.where(gdp_delta_core(jnp.zeros_like(hi), mu_s) <= d_s, 0.0, hi)
    return jnp.where(regular, hi, jnp.where((mu == 0) | (d >= 1), 0.0, jnp.inf))


_gdp_epsilon_upper_jit = jax.jit(_gdp_epsilon_upper)

#: Any of the guarantee types.
Guarantee = PureDP | ApproxDP | GaussianDP | RdpCurve | PldProfile


def _plain_value(value: object) -> object:
    """A 0-d concrete number as a Python float (readable reprs); anything else unchanged."""
    if isinstance(value, str) or is_traced(value):
        return value
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.dtype.kind in "biuf":
        return float(arr.item())
    return value
