"""BMDP (the differential version of BMP) and the composition results of Bayesian membership
privacy (Yıldırım & Khosla, "Bayesian Membership Privacy for Graph Neural Networks",
arXiv 2606.04069: BMDP, its relation to BMP, BMP ∘ MP on one shared sample, BMP ∘ BMP over
independent rounds). Proofs, conditions and a worked example: docs/bmp.md, "BMDP and composition".

Notation. A sampler draws the node set S (law Pr(S = s)); the trainer Φ outputs W with law
p(w | s) given S = s. For node i, M_i = 1{i ∈ S}, S_{−i} = S \\ {i}, η_i = Pr(M_i = 1).

* **BMP** (region.py): the laws of W given M_i = 1 and M_i = 0 — mixtures over S_{−i} — satisfy
  e^{−ε_L} ≤ P_1^i(w)/P_0^i(w) ≤ e^{ε_R}.
* **BMDP**: the same ratio conditioned on every other node's membership, M_{−i} = m_{−i}:
  e^{−ε_L} ≤ p(w | m_{−i} ∪ {i})/p(w | m_{−i}) ≤ e^{ε_R} for every m_{−i} under which both
  memberships of i have positive probability. It is node-level add/remove DP of Φ on the
  sampler's support, and it is undefined where Pr(M_i = 1 | M_{−i}) ∈ {0, 1} on the whole support
  (fixed-size samplers: the size of S_{−i} determines M_i) — refused here.
* **Sampling leakage** (leakage.py): c_R^i = log sup_s Pr(S_{−i} = s | M_i = 1)/Pr(S_{−i} = s | M_i = 0),
  c_L^i the mirror; 0 for independent (Poisson) inclusion, +inf for fixed-size samplers.

Statements (proved in docs/bmp.md):

1. BMDP ⇒ BMP (:func:`bmp_from_bmdp`): (ε_L, ε_R)-BMDP with leakage (c_L, c_R) gives
   (ε_L + c_L, ε_R + c_R)-BMP; with independent inclusion (c = 0) the same parameters. BMP does
   not imply BMDP (an output can reveal M_i only in combination with another node's membership).
2. BMP ∘ MP, one shared sample (:func:`compose_shared_sample`): operations that are each
   (ε_L^t, ε_R^t)-BMDP, run on the same S, compose to (Σ_t ε_L^t + c_L, Σ_t ε_R^t + c_R)-BMP:
   compose at the BMDP level, add the sampling leakage once.
3. BMP ∘ BMP, independent rounds (:func:`compose_independent_rounds`): rounds that are each
   (ε_L^r, ε_R^r)-BMP and whose outputs are conditionally independent given M_i compose to
   (Σ_r ε_L^r, Σ_r ε_R^r)-BMP. BMP parameters of rounds that share a sample do not add (refused).

Only the abstract and a summary of arXiv 2606.04069 could be read when this was written, so the
statements above are given as the paper describes them, without its theorem numbers, and each is
proved in docs/bmp.md and checked by exact enumeration in tests/bmp/test_bmdp_composition.py.

The exact functions (:func:`bmp_epsilons`, :func:`bmdp_epsilons`, :func:`bmdp_errors`) take a
mechanism given by its full law on a tiny graph: the distinct samples ``masks`` (K, N), their
probabilities ``probs`` (K,) and the output law ``output_probs`` (K, W), row k = p(· | S = masks[k]).
Every public function checks concrete arguments (``ValueError`` naming the argument), then calls
a ``jax.numpy`` core: float64 eagerly, the default float dtype inside ``jax.jit`` / ``jax.vmap`` /
``jax.grad`` (where the checks are skipped; undefined values are NaN there instead of refused).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_mask,
    check_nonnegative,
    check_numeric,
    check_probability,
    is_traced,
    plain,
)
from jaxaudit.bmp.region import _finite_mechanism_epsilons, _region_contains

__all__ = [
    "bmdp_epsilons",
    "bmdp_errors",
    "bmdp_region_contains",
    "bmp_epsilons",
    "bmp_from_bmdp",
    "compose_independent_rounds",
    "compose_shared_sample",
    "structural_leakage",
]

#: tolerance on "probabilities sum to 1"
_SUM_TOL = 1e-6


# --------------------------------------------------------------------------------------------
# validation of an enumerated mechanism


def _check_law(masks: ArrayLike, probs: ArrayLike, output_probs: ArrayLike
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concrete (masks, probs, output_probs) of an enumerated mechanism, checked."""
    if np.ndim(masks) != 2:
        raise ValueError(f"masks must have shape (K, N), got {np.shape(masks)}")
    num = np.shape(masks)[0]
    if np.shape(probs) != (num,):
        raise ValueError(f"probs must have shape ({num},), got {np.shape(probs)}")
    if np.ndim(output_probs) != 2 or np.shape(output_probs)[0] != num:
        raise ValueError(f"output_probs must have shape ({num}, W), got {np.shape(output_probs)}")
    m = check_numeric("masks", masks)
    if not np.all((m == 0) | (m == 1)):
        raise ValueError("masks must be boolean (or 0/1) node masks")
    m = m.astype(bool)
    if len(np.unique(m, axis=0)) != num:
        raise ValueError("masks must be distinct samples (merge repeated samples, adding their "
                         "probabilities)")
    p = check_probability("probs", probs)
    if abs(p.sum() - 1) > _SUM_TOL:
        raise ValueError(f"probs must sum to 1, got {p.sum()!r}")
    out = check_probability("output_probs", output_probs)
    rows = out.sum(axis=1)
    if np.any(np.abs(rows - 1) > _SUM_TOL):
        k = int(np.argmax(np.abs(rows - 1)))
        raise ValueError(f"every row of output_probs must sum to 1 (the law of W given a sample), "
                         f"row {k} sums to {rows[k]!r}")
    return m, p, out


def _eta(masks: jax.Array, probs: jax.Array) -> jax.Array:
    return probs @ masks.astype(probs.dtype)


def _refuse_degenerate_prior(masks: np.ndarray, probs: np.ndarray) -> None:
    eta = probs @ masks
    bad = np.flatnonzero((eta <= 0) | (eta >= 1))
    if bad.size:
        raise ValueError(f"probs: node(s) {bad.tolist()} are sampled with probability 0 or 1 "
                         "(η_i ∈ {0, 1}); membership privacy needs 0 < η_i < 1")


# --------------------------------------------------------------------------------------------
# BMP of an enumerated mechanism


def bmp_epsilons(masks: ArrayLike, probs: ArrayLike, output_probs: ArrayLike
                 ) -> tuple[jax.Array, jax.Array]:
    """Exact (tight) BMP parameters (ε_L^i, ε_R^i) of every node of an enumerated mechanism.

    P_1^i(w) = Σ_s Pr(S = s) 1{i ∈ s} p(w | s)/η_i and P_0^i(w) = Σ_s Pr(S = s) 1{i ∉ s} p(w | s)/(1 − η_i)
    (the laws of W given M_i, mixtures over S_{−i}); ε_R^i = max_w log P_1^i(w)/P_0^i(w),
    ε_L^i = max_w log P_0^i(w)/P_1^i(w) (+inf where the supports differ), as
    :func:`jaxaudit.bmp.finite_mechanism_epsilons`. Definition: arXiv 2606.04069 (BMP).

    Args:
      masks: (K, N) bool, the distinct samples of the sampler's support (or a superset).
      probs: (K,) their probabilities, summing to 1.
      output_probs: (K, W), row k the law of the output W given S = masks[k].

    Returns:
      (eps_l, eps_r), two (N,) arrays. Refused (``ValueError``) when a node has η_i ∈ {0, 1}.
    """
    check_mask("masks", masks)
    if is_traced(masks, probs, output_probs):
        return _bmp_epsilons(jnp.asarray(masks), jnp.asarray(probs), jnp.asarray(output_probs))
    m, p, out = _check_law(masks, probs, output_probs)
    _refuse_degenerate_prior(m, p)
    with jax.enable_x64(True):
        eps_l, eps_r = _bmp_epsilons_jit(jnp.asarray(m), jnp.asarray(p, jnp.float64),
                                     jnp.asarray(out, jnp.float64))
        return eps_l, eps_r


def _bmp_epsilons(masks: jax.Array, probs: jax.Array, output_probs: jax.Array
                  ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`bmp_epsilons` (NaN for η_i ∈ {0, 1})."""
    dtype = jnp.result_type(probs, output_probs, float)
    m = masks.astype(dtype)
    probs, output_probs = probs.astype(dtype), output_probs.astype(dtype)
    eta = probs @ m                                       # (N,)
    joint1 = (m * probs[:, None]).T @ output_probs        # (N, W): Pr(M_i = 1, W = w)
    joint0 = ((1 - m) * probs[:, None]).T @ output_probs  # Pr(M_i = 0, W = w)
    ok = (eta > 0) & (eta < 1)
    p1 = joint1 / jnp.where(ok, eta, 1.0)[:, None]
    p0 = joint0 / jnp.where(ok, 1 - eta, 1.0)[:, None]
    eps_l, eps_r = _finite_mechanism_epsilons(p0, p1, axis=-1)
    return jnp.where(ok, eps_l, jnp.nan), jnp.where(ok, eps_r, jnp.nan)


# --------------------------------------------------------------------------------------------
# BMDP of an enumerated mechanism


def _pairs(masks: jax.Array, probs: jax.Array) -> jax.Array:
    """(K, K, N) bool: pair[k, k', i] iff masks[k'] = masks[k] ∪ {i} with i ∉ masks[k] and both
    samples of positive probability (a conditioning m_{−i} = masks[k] under which M_i is random)."""
    m = masks.astype(jnp.int32)
    diff = m[None, :, :] - m[:, None, :]                  # [k, k', j] = m_k'[j] − m_k[j]
    one_more = jnp.all(diff >= 0, axis=-1) & (jnp.sum(diff, axis=-1) == 1)
    live = (probs > 0)[:, None] & (probs > 0)[None, :]
    return (one_more & live)[:, :, None] & (diff == 1)


def bmdp_epsilons(masks: ArrayLike, probs: ArrayLike, output_probs: ArrayLike, *,
                  undefined: str = "raise") -> tuple[jax.Array, jax.Array]:
    """Exact (tight) BMDP parameters (ε_L^i, ε_R^i) of every node of an enumerated mechanism.

    BMDP conditions on every other node's membership: for every m_{−i} with
    0 < Pr(M_i = 1 | M_{−i} = m_{−i}) < 1::

        e^{−ε_L} ≤ Pr(W = w | M_i = 1, M_{−i} = m_{−i}) / Pr(W = w | M_i = 0, M_{−i} = m_{−i})
                 = p(w | m_{−i} ∪ {i}) / p(w | m_{−i}) ≤ e^{ε_R},

    so ε_R^i = max over such pairs of samples and outputs of log p(w | s ∪ {i})/p(w | s), ε_L^i the
    mirror (definition: arXiv 2606.04069, BMDP). Only the sampler's support matters.

    Args:
      masks, probs, output_probs: the enumerated mechanism (see :func:`bmp_epsilons`).
      undefined: "raise" (default) refuses nodes for which no conditioning leaves M_i random
        (Pr(M_i = 1 | M_{−i}) ∈ {0, 1} on the whole support, e.g. every fixed-size sampler: the
        size of S_{−i} gives M_i away, BMDP is undefined); "nan" returns NaN for them.

    Returns:
      (eps_l, eps_r), two (N,) arrays.
    """
    check_choice("undefined", undefined, ("raise", "nan"))
    check_mask("masks", masks)
    if is_traced(masks, probs, output_probs):
        return _bmdp_epsilons(jnp.asarray(masks), jnp.asarray(probs), jnp.asarray(output_probs))
    m, p, out = _check_law(masks, probs, output_probs)
    with jax.enable_x64(True):
        eps_l, eps_r = _bmdp_epsilons_jit(jnp.asarray(m), jnp.asarray(p, jnp.float64),
                                      jnp.asarray(out, jnp.float64))
    if undefined == "raise":
        bad = np.flatnonzero(np.isnan(np.asarray(eps_r)))
        if bad.size:
            raise ValueError(
                f"masks: BMDP is undefined for node(s) {bad.tolist()}: on the sampler's support "
                "the other nodes' memberships determine M_i (Pr(M_i = 1 | M_-i) is 0 or 1 for "
                "every m_-i, as under fixed-size sampling, where |S_-i| gives M_i away); use "
                "bmp_epsilons (BMP), or undefined='nan'")
    return eps_l, eps_r


def _bmdp_epsilons(masks: jax.Array, probs: jax.Array, output_probs: jax.Array
                   ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`bmdp_epsilons` (NaN where undefined)."""
    dtype = jnp.result_type(probs, output_probs, float)
    out = output_probs.astype(dtype)
    pair = _pairs(masks, probs)                                       # (K, K', N)
    # per ordered pair (k, k'): max_w log p(w|k')/p(w|k) and its mirror
    eps_l_kk, eps_r_kk = _finite_mechanism_epsilons(out[:, None, :], out[None, :, :], axis=-1)
    neg = jnp.asarray(-jnp.inf, dtype)
    eps_r = jnp.max(jnp.where(pair, eps_r_kk[:, :, None], neg), axis=(0, 1))
    eps_l = jnp.max(jnp.where(pair, eps_l_kk[:, :, None], neg), axis=(0, 1))
    defined = jnp.any(pair, axis=(0, 1))
    return jnp.where(defined, eps_l, jnp.nan), jnp.where(defined, eps_r, jnp.nan)


def bmdp_errors(masks: ArrayLike, probs: ArrayLike, output_probs: ArrayLike, decision: ArrayLike
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A test's error rates conditioned on every other node's membership (the BMDP view).

    The test declares "member" with probability φ(w) (``decision``). For node i and the
    conditioning m_{−i} = masks[k] (with i ∉ masks[k]):
    α[k, i] = E[φ(W) | M_i = 0, M_{−i} = m_{−i}] (FPR), β[k, i] = E[1 − φ(W) | M_i = 1, M_{−i} = m_{−i}]
    (FNR). (ε_L, ε_R)-BMDP holds for node i iff every valid (α[k, i], β[k, i]) of every test lies in
    R(ε_L, ε_R) (the BMP region of region.py applied conditionally; :func:`bmdp_region_contains`).

    Returns:
      (alpha, beta, valid): (K, N) arrays; ``valid[k, i]`` marks the conditionings under which
      M_i is random (both masks[k] and masks[k] ∪ {i} have positive probability); alpha and beta
      are NaN elsewhere.
    """
    check_mask("masks", masks)
    if is_traced(masks, probs, output_probs, decision):
        return _bmdp_errors(jnp.asarray(masks), jnp.asarray(probs), jnp.asarray(output_probs),
                            jnp.asarray(decision))
    m, p, out = _check_law(masks, probs, output_probs)
    if np.shape(decision) != (out.shape[1],):
        raise ValueError(f"decision must have shape ({out.shape[1]},), got {np.shape(decision)}")
    phi = check_probability("decision", decision)
    with jax.enable_x64(True):
        return _bmdp_errors_jit(jnp.asarray(m), jnp.asarray(p, jnp.float64),
                            jnp.asarray(out, jnp.float64), jnp.asarray(phi, jnp.float64))


def _bmdp_errors(masks: jax.Array, probs: jax.Array, output_probs: jax.Array, decision: jax.Array
                 ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`bmdp_errors`."""
    dtype = jnp.result_type(probs, output_probs, decision, float)
    declare = output_probs.astype(dtype) @ decision.astype(dtype)    # (K,) Pr(φ = 1 | S = s_k)
    pair = _pairs(masks, probs)                                       # (K, K', N)
    valid = jnp.any(pair, axis=1)                                     # (K, N)
    tpr = jnp.einsum("kjn,j->kn", pair.astype(dtype), declare)
    alpha = jnp.where(valid, declare[:, None], jnp.nan)
    beta = jnp.where(valid, 1 - tpr, jnp.nan)
    return alpha, beta, valid


def bmdp_region_contains(masks: ArrayLike, probs: ArrayLike, output_probs: ArrayLike,
                         decision: ArrayLike, eps_l: ArrayLike, eps_r: ArrayLike, *,
                         side: str = "both", atol: float = 1e-9) -> jax.Array:
    """Whether a test's conditional operating points all lie in R(ε_L, ε_R), per node (N,) bool.

    (ε_L, ε_R)-BMDP for node i ⇔ for every test and every conditioning m_{−i} under which M_i is
    random, the conditional (α, β) of :func:`bmdp_errors` satisfies the constraints of
    :func:`jaxaudit.bmp.region_contains`. A False proves that the mechanism is not
    (ε_L, ε_R)-BMDP for that node; True for one test is necessary, not sufficient (take the
    sup over tests, e.g. the likelihood-ratio tests, or use :func:`bmdp_epsilons`). Nodes with no
    valid conditioning give True (nothing to violate; :func:`bmdp_epsilons` refuses them).

    Args:
      eps_l, eps_r: BMDP parameters (≥ 0, +inf allowed), scalars or (N,).
      side: "both", "right" (BMDP-R) or "left" (BMDP-L).
      atol: slack on every constraint (round-off).
    """
    check_choice("side", side, ("both", "right", "left"))
    check_nonnegative("eps_l", eps_l)
    check_nonnegative("eps_r", eps_r)
    check_nonnegative("atol", atol)
    alpha, beta, valid = bmdp_errors(masks, probs, output_probs, decision)
    if is_traced(alpha, eps_l, eps_r):
        return _bmdp_region_contains(alpha, beta, valid, eps_l, eps_r, side=side, atol=atol)
    with jax.enable_x64(True):
        a64, b64, el64, er64 = _f64(alpha, beta, eps_l, eps_r)
        return _bmdp_region_contains(a64, b64, jnp.asarray(valid), el64, er64, side=side,
                                     atol=atol)


def _bmdp_region_contains(alpha: jax.Array, beta: jax.Array, valid: jax.Array, eps_l: ArrayLike,
                          eps_r: ArrayLike, *, side: str, atol: float) -> jax.Array:
    """Unvalidated, traceable core of :func:`bmdp_region_contains`."""
    inside = _region_contains(jnp.where(valid, alpha, 0.5), jnp.where(valid, beta, 0.5),
                              eps_l, eps_r, side=side, atol=atol)
    return jnp.all(inside | ~valid, axis=0)


_bmp_epsilons_jit = jax.jit(_bmp_epsilons)
_bmdp_epsilons_jit = jax.jit(_bmdp_epsilons)
_bmdp_errors_jit = jax.jit(_bmdp_errors)


# --------------------------------------------------------------------------------------------
# sampler structure


def structural_leakage(sampler: object) -> tuple[float, float]:
    """(c_L, c_R) of a sampler whose structure fixes it, or a refusal (``ValueError``).

    Independent inclusion (:class:`jaxaudit.graph.PoissonSampler`, q ∈ (0, 1)): M_i is
    independent of M_{−i}, so c_L = c_R = 0 for every node and BMDP equals node-level DP on all
    of 2^V. Every other built-in sampler — fixed-size uniform, snowball and random-walk sampling —
    draws a fixed number of nodes (snowball and random walk also make inclusions depend on the
    graph around i): the size of S_{−i} reveals M_i, so Pr(M_i = 1 | M_{−i}) ∈ {0, 1} (BMDP is
    undefined) and c = +inf (no finite BMP follows from a BMDP or MP guarantee); refused with that
    reason. A sampler of unknown structure is refused too: compute (c_L, c_R) with
    :func:`jaxaudit.bmp.sampling_leakage` (enumeration or draws) and pass them instead.
    """
    from jaxaudit.graph.samplers import (
        PoissonSampler,
        RandomWalkSampler,
        SnowballSampler,
        UniformSampler,
    )

    if isinstance(sampler, PoissonSampler):
        if not 0.0 < float(sampler.q) < 1.0:
            raise ValueError(f"sampler: Poisson sampling with q = {plain(sampler.q)} makes every "
                             "membership certain (η_i ∈ {0, 1}); membership privacy needs 0 < q < 1")
        return 0.0, 0.0
    fixed = {UniformSampler: "fixed-size uniform sampling",
             SnowballSampler: "snowball sampling (fixed target size, inclusions dependent through "
                              "the graph)",
             RandomWalkSampler: "random-walk sampling (fixed target size, inclusions dependent "
                                "through the graph)"}
    for kind, what in fixed.items():
        if isinstance(sampler, kind):
            raise ValueError(
                f"sampler: {what} draws a fixed number of nodes, round(ratio·N) whenever the "
                "graph allows, so |S_-i| reveals M_i: "
                "Pr(M_i = 1 | M_-i) is 0 or 1 (BMDP is undefined) and the sampling leakage is "
                "c = inf, so no finite BMP follows from a BMDP/MP guarantee of the trainer; the "
                "statement needs independent inclusion (Poisson sampling) or a finite c from "
                "sampling_leakage (e.g. a random sample size); else measure BMP directly "
                "(audit_bmp)")
    raise ValueError(f"sampler: cannot tell whether {type(sampler).__name__} includes nodes "
                     "independently; pass c_l and c_r (jaxaudit.bmp.sampling_leakage of its "
                     "enumerated law or of draws) instead of sampler")


def _leakage_args(c_l: ArrayLike | None, c_r: ArrayLike | None, sampler: object | None
                  ) -> tuple[ArrayLike, ArrayLike]:
    if sampler is not None:
        if c_l is not None or c_r is not None:
            raise ValueError("pass either sampler or (c_l, c_r), not both")
        return structural_leakage(sampler)
    if c_l is None or c_r is None:
        raise ValueError("pass the sampling leakage (c_l and c_r, from sampling_leakage) or a "
                         "sampler whose structure fixes it (Poisson: c = 0)")
    check_nonnegative("c_l", c_l)
    check_nonnegative("c_r", c_r)
    return c_l, c_r


def _f64(*values: ArrayLike) -> tuple[jax.Array, ...]:
    """Concrete values as float64 arrays (call inside ``jax.enable_x64``): sums of bounds are
    formed in float64, so that rounding cannot shrink them."""
    return tuple(jnp.asarray(np.asarray(v, np.float64)) for v in values)


def _check_pair(eps_l: ArrayLike, eps_r: ArrayLike, names: tuple[str, str] = ("eps_l", "eps_r")
                ) -> None:
    check_nonnegative(names[0], eps_l)
    check_nonnegative(names[1], eps_r)
    if np.shape(eps_l) != np.shape(eps_r):
        raise ValueError(f"{names[0]} and {names[1]} must have the same shape, got "
                         f"{np.shape(eps_l)} and {np.shape(eps_r)}")


# --------------------------------------------------------------------------------------------
# BMDP ⇒ BMP and the two composition results


def bmp_from_bmdp(eps_l: ArrayLike, eps_r: ArrayLike, *, c_l: ArrayLike | None = None,
                  c_r: ArrayLike | None = None, sampler: object | None = None
                  ) -> tuple[jax.Array, jax.Array]:
    """BMP parameters implied by BMDP parameters (arXiv 2606.04069, BMDP vs BMP).

    Statement: if the learner A = (S, Φ) is (ε_L, ε_R)-BMDP for node i and the sampler's
    leakage for i is (c_L^i, c_R^i), then A is (ε_L + c_L^i, ε_R + c_R^i)-BMP for node i. With
    independent inclusion (Poisson sampling, c = 0) BMDP ⇒ BMP with the same parameters (and the
    tight BMP parameters are then ≤ the BMDP ones); the converse fails (BMP ⇏ BMDP). Tight when W
    reveals S_{−i} and the BMDP ratio is extreme at the extreme sampling ratio (e.g.
    W = (S_{−i}, randomized response on M_i)).

    Args:
      eps_l, eps_r: BMDP parameters (≥ 0, +inf allowed), same shape.
      c_l, c_r: sampling leakage (≥ 0, +inf allowed), e.g. from ``sampling_leakage``; or
      sampler: a sampler whose structure fixes c (:func:`structural_leakage`: Poisson → 0; fixed-size,
        snowball and random-walk samplers are refused: BMDP is undefined under them).

    Returns:
      (eps_l, eps_r) of BMP.
    """
    if not is_traced(eps_l, eps_r):
        _check_pair(eps_l, eps_r)
    c_l, c_r = _leakage_args(c_l, c_r, sampler)
    if is_traced(eps_l, eps_r, c_l, c_r):
        return _bmp_from_bmdp(eps_l, eps_r, c_l, c_r)
    with jax.enable_x64(True):
        return _bmp_from_bmdp(*_f64(eps_l, eps_r, c_l, c_r))


def _bmp_from_bmdp(eps_l: ArrayLike, eps_r: ArrayLike, c_l: ArrayLike, c_r: ArrayLike
                   ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`bmp_from_bmdp`."""
    return jnp.asarray(eps_l) + c_l, jnp.asarray(eps_r) + c_r


def compose_shared_sample(eps_l: ArrayLike, eps_r: ArrayLike, *, c_l: ArrayLike | None = None,
                          c_r: ArrayLike | None = None, sampler: object | None = None,
                          axis: int = 0) -> tuple[jax.Array, jax.Array]:
    """BMP ∘ MP: several private operations on ONE shared sample (arXiv 2606.04069, composition
    of BMP with MP).

    Statement: draw S once; run operations Φ_1, …, Φ_T on it, Φ_t being node-level
    (ε_L^t, ε_R^t)-private given the rest of the sample (MP / BMDP: e^{−ε_L^t} ≤
    p_t(w_t | s ∪ {i}, w_{<t})/p_t(w_t | s, w_{<t}) ≤ e^{ε_R^t} for every s ∌ i on the sampler's
    support and every earlier output — independent operations or adaptive ones). Then
    W = (W_1, …, W_T) is (Σ_t ε_L^t + c_L^i, Σ_t ε_R^t + c_R^i)-BMP for node i: the ratios
    multiply at the BMDP level, and the sampling leakage is added ONCE (not once per operation).
    Tight when W reveals S_{−i} and each operation attains its ratio there.

    Args:
      eps_l, eps_r: the operations' node-level parameters (≥ 0, +inf allowed), same shape, the
        operations along ``axis``. These must be BMDP/MP parameters, not BMP ones: BMP
        parameters measured on a shared sample do not add (see
        :func:`compose_independent_rounds`).
      c_l, c_r: the sampler's leakage for the node(s) (≥ 0), broadcasting against the result; or
      sampler: a sampler whose structure fixes c (Poisson → 0; others refused, see
        :func:`structural_leakage`).
      axis: the operations' axis.

    Returns:
      (eps_l, eps_r) of BMP for the composed output.
    """
    if not is_traced(eps_l, eps_r):
        _check_pair(eps_l, eps_r)
        _check_axis(eps_l, axis)
    c_l, c_r = _leakage_args(c_l, c_r, sampler)
    if is_traced(eps_l, eps_r, c_l, c_r):
        return _compose_shared_sample(eps_l, eps_r, c_l, c_r, axis=axis)
    with jax.enable_x64(True):
        return _compose_shared_sample(*_f64(eps_l, eps_r, c_l, c_r), axis=axis)


def _check_axis(eps: ArrayLike, axis: int) -> None:
    ndim = np.ndim(eps)
    if ndim == 0:
        raise ValueError("eps_l must hold one value per operation/round along axis (at least 1-D), "
                         "got a scalar")
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"axis must index a dimension of eps_l (ndim {ndim}), got {axis}")


def _compose_shared_sample(eps_l: ArrayLike, eps_r: ArrayLike, c_l: ArrayLike, c_r: ArrayLike,
                           *, axis: int = 0) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`compose_shared_sample`."""
    return (jnp.sum(jnp.asarray(eps_l), axis=axis) + c_l,
            jnp.sum(jnp.asarray(eps_r), axis=axis) + c_r)


def compose_independent_rounds(eps_l: ArrayLike, eps_r: ArrayLike, *, axis: int = 0,
                               rounds: str = "independent") -> tuple[jax.Array, jax.Array]:
    """BMP ∘ BMP: independent sampling-and-training rounds (arXiv 2606.04069, composition of
    BMP with BMP).

    Statement: if round r is (ε_L^r, ε_R^r)-BMP for node i and the rounds' outputs are
    conditionally independent given M_i (each round draws its own sample of the other nodes,
    S_{−i}^{(r)} ~ Pr(S_{−i} | M_i), and trains with its own randomness), then
    W = (W_1, …, W_T) is (Σ_r ε_L^r, Σ_r ε_R^r)-BMP for node i. Since the Bayes factor of W is the
    product of the rounds' Bayes factors, the sums are the tight parameters when each ε^r is.
    Same prior η_i throughout: the posterior after T rounds lies in
    logit η_i + [−Σ ε_L^r, Σ ε_R^r] (:func:`jaxaudit.bmp.posterior_interval`).
    :func:`jaxaudit.bmp.compose` is the two-round case.

    Args:
      eps_l, eps_r: the rounds' BMP parameters (≥ 0, +inf allowed), same shape, rounds along
        ``axis``.
      axis: the rounds' axis.
      rounds: "independent" (the theorem's condition). "shared" — the rounds reuse one sample —
        is refused: given M_i the outputs are then dependent through S_{−i}, and BMP parameters
        do not add (two rounds can each be (0, 0)-BMP and together reveal M_i); compose the
        operations' BMDP parameters with :func:`compose_shared_sample` instead.

    Returns:
      (eps_l, eps_r) of BMP for the composed output.
    """
    check_choice("rounds", rounds, ("independent", "shared"))
    if rounds == "shared":
        raise ValueError(
            "rounds='shared': BMP parameters of rounds that reuse one sample do not add — given "
            "M_i their outputs are dependent through S_-i (e.g. W_1 = M_i xor M_j and W_2 = M_j "
            "are each (0, 0)-BMP under Poisson sampling, and together reveal M_i); compose the "
            "operations' node-level (BMDP) parameters with compose_shared_sample and add the "
            "sampling leakage once")
    if is_traced(eps_l, eps_r):
        return _compose_independent_rounds(eps_l, eps_r, axis=axis)
    _check_pair(eps_l, eps_r)
    _check_axis(eps_l, axis)
    with jax.enable_x64(True):
        return _compose_independent_rounds(*_f64(eps_l, eps_r), axis=axis)


def _compose_independent_rounds(eps_l: ArrayLike, eps_r: ArrayLike, *, axis: int = 0
                                ) -> tuple[jax.Array, jax.Array]:
    """Unvalidated, traceable core of :func:`compose_independent_rounds`."""
    return jnp.sum(jnp.asarray(eps_l), axis=axis), jnp.sum(jnp.asarray(eps_r), axis=axis)
