"""The BMP error region and the maps between BMP parameters and attack errors (Yıldırım & Khosla,
arXiv 2606.04069; the derivations of the formulas below are in docs/bmp.md).

Convention: H0 = "node i is not a member". A membership test declares "member" with probability
φ(w); its type-I error is α = E_0[φ] (false-positive rate) and its type-II error is
β = E_1[1 − φ] (false-negative rate). Every function taking or returning (α, β) accepts
``null="member"`` for the opposite convention (H0 = member: α = FNR, β = FPR): the error pair is
read / written swapped, while ε_L, ε_R keep the library's meaning (ε_R bounds how much an output
can raise the odds of "member"). Since swapping α ↔ β together with ε_L ↔ ε_R leaves the region's
formulas unchanged, a caller who wants everything in the opposite convention can equally pass the
swapped ε's with the default flag.

A learner is (ε_L, ε_R)-BMP for node i iff every test's (α, β) lies in

    R(ε_L, ε_R) = {(α, β) ∈ [0, 1]²: e^{ε_R} α + β ≥ 1,  α + e^{ε_L} β ≥ 1,
                                      α + e^{ε_L} β ≤ e^{ε_L},  e^{ε_R} α + β ≤ e^{ε_R}}.

The first two constraints bound the region below the diagonal α + β = 1 (the useful tests); the
last two are their mirror images above it (the complemented tests).

Every public function checks concrete arguments (error rates and priors in [0, 1], ε ≥ 0 with
+inf allowed, no NaN: ``ValueError`` naming the argument), then computes in ``jax.numpy``; inside
``jax.jit``/``jax.vmap``/``jax.grad`` the checks are skipped. Three maps that
:mod:`jaxaudit.bmp.composition` and :mod:`jaxaudit.bmp.jeffreys` apply to values they computed
themselves also have an unvalidated core ``_<name>`` (region_contains, epsilons_from_errors,
finite_mechanism_epsilons).

References:
  Yıldırım & Khosla, "Bayesian Membership Privacy for Graph Neural Networks", arXiv 2606.04069.
  Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015,
  arXiv 1311.0776 (the symmetric ε-DP region of a test's (α, β)).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.nn import sigmoid
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_nonnegative,
    check_nonnegative_finite,
    check_numeric,
    check_probability,
    is_traced,
)

__all__ = [
    "bayes_optimal_errors",
    "compose",
    "compose_with_sampling",
    "epsilons_from_errors",
    "epsilons_from_roc",
    "finite_mechanism_epsilons",
    "from_joint",
    "mp_epsilon",
    "mp_region_area",
    "npv_bound",
    "posterior_interval",
    "precision_bound",
    "region_area",
    "region_contains",
    "region_corner",
    "to_joint",
    "to_posterior_coordinates",
    "tradeoff_curve",
]

_SIDES = ("both", "right", "left")
_NULLS = ("non-member", "member")


def _check_side(side: str) -> None:
    if side not in _SIDES:
        raise ValueError(f"side must be one of {_SIDES}, got {side!r}")


#: Error rates and probabilities computed as sums (a ROC's cumulative masses, p0 @ K) may leave
#: [0, 1] by round-off; within this slack they are accepted (and used as given).
_ROUND_OFF = 1e-6


def _check_rate(name: str, value: ArrayLike) -> None:
    """A probability in [0, 1] up to round-off (_ROUND_OFF); NaN refused. Skipped when traced."""
    if is_traced(value):
        return
    arr = check_numeric(name, value)
    clipped = np.clip(arr, 0.0, 1.0)
    check_probability(name, np.where(np.abs(arr - clipped) <= _ROUND_OFF, clipped, arr))


def _check_null(null: str) -> None:
    if null not in _NULLS:
        raise ValueError(f"null must be one of {_NULLS}, got {null!r}")


def _orient(alpha: jax.Array, beta: jax.Array, null: str) -> tuple[jax.Array, jax.Array]:
    _check_null(null)
    return (alpha, beta) if null == "non-member" else (beta, alpha)


def region_contains(alpha: ArrayLike, beta: ArrayLike, eps_l: ArrayLike, eps_r: ArrayLike, *,
                    side: str = "both", null: str = "non-member", atol: float = 0.0) -> jax.Array:
    """Whether the operating point (α, β) is allowed by (ε_L, ε_R)-BMP.

    Constraints: (i) e^{ε_R} α + β ≥ 1, (ii) α + e^{ε_L} β ≥ 1,
    (iii) α + e^{ε_L} β ≤ e^{ε_L}, (iv) e^{ε_R} α + β ≤ e^{ε_R}. BMP-R (``side="right"``) keeps
    (i) and (iv) (P_1(E) ≤ e^{ε_R} P_0(E) for E and its complement); BMP-L (``side="left"``)
    keeps (ii) and (iii).

    Args:
      alpha: false-positive rate(s) α ∈ [0, 1].
      beta: false-negative rate(s) β ∈ [0, 1].
      eps_l, eps_r: BMP parameters (≥ 0, +inf allowed).
      side: "both" (BMP), "right" (BMP-R) or "left" (BMP-L).
      null: "non-member" (default convention) or "member" (swaps α and β).
      atol: slack added to every constraint (for floating-point round-off).

    Returns:
      Boolean array, broadcast over the inputs.
    """
    _check_null(null)
    _check_side(side)
    _check_rate("alpha", alpha)
    _check_rate("beta", beta)
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    check_nonnegative_finite("atol", atol)
    return _region_contains(alpha, beta, eps_l, eps_r, side=side, null=null, atol=atol)


def _region_contains(alpha: ArrayLike, beta: ArrayLike, eps_l: ArrayLike, eps_r: ArrayLike, *,
                     side: str = "both", null: str = "non-member", atol: float = 0.0) -> jax.Array:
    """Unvalidated, traceable core of :func:`region_contains`."""
    _check_side(side)
    alpha, beta = _orient(jnp.asarray(alpha), jnp.asarray(beta), null)
    er, el = jnp.exp(jnp.asarray(eps_r)), jnp.exp(jnp.asarray(eps_l))
    c1 = er * alpha + beta >= 1 - atol
    c2 = alpha + el * beta >= 1 - atol
    # (iii), (iv) written divided by e^ε so that ε = inf stays finite.
    c3 = alpha / el + beta <= 1 + atol
    c4 = alpha + beta / er <= 1 + atol
    if side == "right":
        return c1 & c4
    if side == "left":
        return c2 & c3
    return c1 & c2 & c3 & c4


def _safe_ratio(num: jax.Array, den: jax.Array, at_zero: ArrayLike) -> jax.Array:
    ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), at_zero)


def region_area(eps_l: ArrayLike, eps_r: ArrayLike, *, side: str = "both") -> jax.Array:
    """Area of R(ε_L, ε_R) in the unit square.

    |R| = (e^{ε_L} − 1)(e^{ε_R} − 1)/(e^{ε_L+ε_R} − 1), half of it below the diagonal;
    BMP-R: 1 − e^{−ε_R}; BMP-L: 1 − e^{−ε_L}. Computed as
    (1 − e^{−ε_L})(1 − e^{−ε_R})/(1 − e^{−ε_L−ε_R}) so that large and infinite ε are exact.

    Example:
      >>> float(region_area(1.0, 1.0))  # (e − 1)/(e + 1)
      0.46211...
    """
    _check_side(side)
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    eps_l, eps_r = jnp.asarray(eps_l), jnp.asarray(eps_r)
    if side == "right":
        return -jnp.expm1(-eps_r)
    if side == "left":
        return -jnp.expm1(-eps_l)
    num = jnp.expm1(-eps_l) * jnp.expm1(-eps_r)
    return _safe_ratio(num, -jnp.expm1(-(eps_l + eps_r)), 0.0)


def region_corner(eps_l: ArrayLike, eps_r: ArrayLike, *, null: str = "non-member"
                 ) -> tuple[jax.Array, jax.Array]:
    """The most powerful allowed test: the corner where constraints (i) and (ii) meet.

    α* = (e^{ε_L} − 1)/(e^{ε_L+ε_R} − 1), β* = (e^{ε_R} − 1)/(e^{ε_L+ε_R} − 1). At
    ε_L = ε_R = 0 the region is the diagonal and (½, ½) is returned.

    Returns:
      (alpha_star, beta_star) (swapped under ``null="member"``).
    """
    _check_null(null)
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    eps_l, eps_r = jnp.asarray(eps_l), jnp.asarray(eps_r)
    den = -jnp.expm1(-(eps_l + eps_r))  # 1 − e^{−ε_L−ε_R}
    a = _safe_ratio(jnp.exp(-eps_r) * -jnp.expm1(-eps_l), den, 0.5)
    b = _safe_ratio(jnp.exp(-eps_l) * -jnp.expm1(-eps_r), den, 0.5)
    return _orient(a, b, null)


def tradeoff_curve(alpha: ArrayLike, eps_l: ArrayLike, eps_r: ArrayLike) -> jax.Array:
    """Smallest β an (ε_L, ε_R)-BMP learner allows at false-positive rate α.

    β_min(α) = max(1 − e^{ε_R} α, (1 − α) e^{−ε_L}, 0).
    """
    _check_rate("alpha", alpha)
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    alpha = jnp.asarray(alpha)
    return jnp.maximum(jnp.maximum(1 - jnp.exp(eps_r) * alpha,
                                   (1 - alpha) * jnp.exp(-jnp.asarray(eps_l))), 0.0)


def epsilons_from_errors(alpha: ArrayLike, beta: ArrayLike, *, null: str = "non-member"
                        ) -> tuple[jax.Array, jax.Array]:
    """The tightest (ε_L, ε_R) one operating point certifies (the inverse of the region).

    ε_R = max(log((1 − β)/α), log(β/(1 − α)), 0) = max(log(TPR/FPR), …),
    ε_L = max(log((1 − α)/β), log(α/(1 − β)), 0) = max(log(TNR/FNR), …);
    the second terms matter only above the diagonal (α + β > 1). A zero error gives +inf.

    Returns:
      (eps_l, eps_r) in the library's convention.
    """
    _check_null(null)
    _check_rate("alpha", alpha)
    _check_rate("beta", beta)
    return _epsilons_from_errors(alpha, beta, null=null)


def _epsilons_from_errors(alpha: ArrayLike, beta: ArrayLike, *, null: str = "non-member"
                         ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`epsilons_from_errors`."""
    alpha, beta = _orient(jnp.asarray(alpha), jnp.asarray(beta), null)
    # log(num/den); 0/0 (a trivial test) carries no information
    def log_ratio(num: jax.Array, den: jax.Array) -> jax.Array:
        return jnp.where(num > 0, jnp.log(num) - jnp.log(den), -jnp.inf)

    zero = jnp.zeros_like(alpha + beta)
    eps_r = jnp.maximum(jnp.maximum(log_ratio(1 - beta, alpha), log_ratio(beta, 1 - alpha)), zero)
    eps_l = jnp.maximum(jnp.maximum(log_ratio(1 - alpha, beta), log_ratio(alpha, 1 - beta)), zero)
    return eps_l, eps_r


def epsilons_from_roc(fpr: ArrayLike, fnr: ArrayLike, *, null: str = "non-member"
                     ) -> tuple[jax.Array, jax.Array]:
    """Sup over the operating points of a ROC curve (last axis) of :func:`epsilons_from_errors`."""
    _check_null(null)
    _check_rate("fpr", fpr)
    _check_rate("fnr", fnr)
    eps_l, eps_r = _epsilons_from_errors(fpr, fnr, null=null)
    return jnp.max(eps_l, axis=-1), jnp.max(eps_r, axis=-1)


def mp_epsilon(alpha: ArrayLike, beta: ArrayLike, *, null: str = "non-member") -> jax.Array:
    """Symmetric membership-privacy (pure ε-DP region) baseline: the smallest ε with
    (α, β) ∈ R(ε, ε), i.e. max(ε_L, ε_R) of :func:`epsilons_from_errors` (so ε_MP ≥ both)."""
    _check_null(null)
    _check_rate("alpha", alpha)
    _check_rate("beta", beta)
    eps_l, eps_r = _epsilons_from_errors(alpha, beta, null=null)
    return jnp.maximum(eps_l, eps_r)


def mp_region_area(epsilon: ArrayLike) -> jax.Array:
    """Area of the symmetric region R(ε, ε): (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    check_nonnegative("epsilon", epsilon)
    return jnp.tanh(jnp.asarray(epsilon) / 2)


def posterior_interval(eta: ArrayLike, eps_l: ArrayLike, eps_r: ArrayLike
                      ) -> tuple[jax.Array, jax.Array]:
    """Range of the attacker's posterior π_i(1|w) under (ε_L, ε_R)-BMP with prior η.

    η e^{−ε_L}/(η e^{−ε_L} + 1 − η) ≤ π_i(1|w) ≤ η e^{ε_R}/(η e^{ε_R} + 1 − η), i.e. the posterior
    log-odds lie within [logit η − ε_L, logit η + ε_R].
    """
    _check_rate("eta", eta)
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    logit_eta = jnp.log(eta) - jnp.log1p(-jnp.asarray(eta))
    return sigmoid(logit_eta - eps_l), sigmoid(logit_eta + eps_r)


def precision_bound(eta: ArrayLike, eps_r: ArrayLike) -> jax.Array:
    """BMP-R in posterior coordinates: precision ≤ η e^{ε_R}/(1 − η + η e^{ε_R})."""
    _check_rate("eta", eta)
    check_nonnegative("eps_r", eps_r)
    return posterior_interval(eta, 0.0, eps_r)[1]


def npv_bound(eta: ArrayLike, eps_l: ArrayLike) -> jax.Array:
    """BMP-L in posterior coordinates: NPV ≤ (1 − η) e^{ε_L}/((1 − η) e^{ε_L} + η)."""
    _check_rate("eta", eta)
    check_nonnegative("eps_l", eps_l)
    return posterior_interval(1 - jnp.asarray(eta), 0.0, eps_l)[1]


def to_joint(alpha: ArrayLike, beta: ArrayLike, eta: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """(α, β) → joint coordinates a = (1 − η) α = Pr(declare member, non-member),
    b = η β = Pr(declare non-member, member); R_η is the image of R under this map."""
    _check_rate("alpha", alpha)
    _check_rate("beta", beta)
    _check_rate("eta", eta)
    return (1 - jnp.asarray(eta)) * alpha, jnp.asarray(eta) * beta


def from_joint(a: ArrayLike, b: ArrayLike, eta: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Inverse of :func:`to_joint`: (a, b) → (a/(1 − η), b/η)."""
    _check_rate("a", a)
    _check_rate("b", b)
    _check_rate("eta", eta)
    return jnp.asarray(a) / (1 - jnp.asarray(eta)), jnp.asarray(b) / jnp.asarray(eta)


def to_posterior_coordinates(alpha: ArrayLike, beta: ArrayLike, eta: ArrayLike
                            ) -> tuple[jax.Array, jax.Array]:
    """(α, β) → (1 − precision, false-omission rate) for prior η.

    precision = η(1 − β)/(η(1 − β) + (1 − η) α); FOR = η β/(η β + (1 − η)(1 − α)).
    """
    _check_rate("alpha", alpha)
    _check_rate("beta", beta)
    _check_rate("eta", eta)
    eta = jnp.asarray(eta)
    tp, fp = eta * (1 - beta), (1 - eta) * alpha
    fn, tn = eta * beta, (1 - eta) * (1 - alpha)
    return fp / (tp + fp), fn / (fn + tn)


def compose(eps_l1: ArrayLike, eps_r1: ArrayLike, eps_l2: ArrayLike, eps_r2: ArrayLike
           ) -> tuple[jax.Array, jax.Array]:
    """Composition of two rounds whose outputs are conditionally independent given M_i (fresh
    samples each round): (ε_L1 + ε_L2, ε_R1 + ε_R2)."""
    check_nonnegative("eps_l1", eps_l1)
    check_nonnegative("eps_r1", eps_r1)
    check_nonnegative("eps_l2", eps_l2)
    check_nonnegative("eps_r2", eps_r2)
    return jnp.asarray(eps_l1) + eps_l2, jnp.asarray(eps_r1) + eps_r2


def compose_with_sampling(eps_l_phi: ArrayLike, eps_r_phi: ArrayLike, c_l: ArrayLike, c_r: ArrayLike
                         ) -> tuple[jax.Array, jax.Array]:
    """Prior bound (a): a node-level (ε_L^Φ, ε_R^Φ)-private trainer given S_{−i} run on a sample
    with sampling leakage (c_L, c_R) is (ε_L^Φ + c_L, ε_R^Φ + c_R)-BMP (also BMP ∘ MP, and a
    shared-sample composition at the BMDP level followed by adding c once). BMDP itself, both
    composition results and their refusals: :mod:`jaxaudit.bmp.composition`."""
    check_nonnegative("eps_l_phi", eps_l_phi)
    check_nonnegative("eps_r_phi", eps_r_phi)
    check_nonnegative("c_l", c_l)
    check_nonnegative("c_r", c_r)
    return jnp.asarray(eps_l_phi) + c_l, jnp.asarray(eps_r_phi) + c_r


def finite_mechanism_epsilons(p0: ArrayLike, p1: ArrayLike, *, axis: int = -1
                             ) -> tuple[jax.Array, jax.Array]:
    """Tight (ε_L, ε_R) of a mechanism with finite output laws P_0 (non-member), P_1 (member).

    ε_R = max_w log(p_1(w)/p_0(w)), ε_L = max_w log(p_0(w)/p_1(w)) over outputs with positive
    mass (+inf when the supports differ). Post-processing by any kernel K can only shrink both:
    ``finite_mechanism_epsilons(p0 @ K, p1 @ K)`` is componentwise ≤.
    """
    _check_rate("p0", p0)
    _check_rate("p1", p1)
    return _finite_mechanism_epsilons(p0, p1, axis=axis)


def _finite_mechanism_epsilons(p0: ArrayLike, p1: ArrayLike, *, axis: int = -1
                              ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`finite_mechanism_epsilons`."""
    p0, p1 = jnp.asarray(p0), jnp.asarray(p1)
    lr = jnp.log(p1) - jnp.log(p0)
    keep = (p0 > 0) | (p1 > 0)
    eps_r = jnp.max(jnp.where(keep, lr, -jnp.inf), axis=axis)
    eps_l = jnp.max(jnp.where(keep, -lr, -jnp.inf), axis=axis)
    return jnp.maximum(eps_l, 0.0), jnp.maximum(eps_r, 0.0)


def bayes_optimal_errors(p0: ArrayLike, p1: ArrayLike, eta: ArrayLike
                        ) -> tuple[jax.Array, jax.Array]:
    """(α, β) of the Bayes-optimal test for prior η on a finite mechanism (outputs on the last axis).

    Declares "member" iff η p_1(w) > (1 − η) p_0(w) (equivalently B_i(w) > (1 − η)/η).
    """
    _check_rate("p0", p0)
    _check_rate("p1", p1)
    _check_rate("eta", eta)
    p0, p1 = jnp.asarray(p0), jnp.asarray(p1)
    eta = jnp.expand_dims(jnp.asarray(eta), -1)
    member = eta * p1 > (1 - eta) * p0
    alpha = jnp.sum(jnp.where(member, p0, 0.0), axis=-1)
    beta = jnp.sum(jnp.where(member, 0.0, p1), axis=-1)
    return alpha, beta
