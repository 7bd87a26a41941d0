"""End-to-end node-level BMP audit (Yıldırım & Khosla, arXiv 2606.04069): sampler → vmapped
shadow GNNs → leave-one-out LiRA (Carlini et al., arXiv 2112.03570) → prior-aware Bayes
decisions → per-node error counts → per node: the certified lower bounds, the Bayesian posterior
over (ε_L, ε_R), the symmetric MP baseline and the Jeffreys estimate. Data flow and the reading of
each number: docs/bmp.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_probability, check_shape
from jaxaudit.bmp.certified import certified_epsilons
from jaxaudit.bmp.likelihood import PRIOR_VARIANCE, AttackPriorSpec, as_attack_prior
from jaxaudit.bmp.posterior import (
    NutsConfig,
    jeffreys_estimate,
    posterior_nuts,
    posterior_quantiles,
)
from jaxaudit.graph.types import Graph, node_degrees
from jaxaudit.mia.types import ErrorCounts

if TYPE_CHECKING:
    import flax.linen as nn

    from jaxaudit.graph.samplers import Sampler

__all__ = ["BmpAudit", "audit_bmp", "audit_from_scores", "audit_summary", "audit_table", "most_leaking",
           "node_degrees"]

QUANTILES = (0.05, 0.5, 0.95)


class BmpAudit(NamedTuple):
    """Per-node audit results (N nodes; quantile arrays have shape (3, N) for 5%, 50%, 95%).

    Nodes never IN or never OUT in the shadow runs have no estimate: their entries are NaN.
    Which number to read (docs/bmp.md): ``certified_l/r`` are *bounds* (valid with probability
    ≥ ``confidence`` whatever the attack); ``eps_l/eps_r`` are *Bayesian* posterior quantiles
    under the attack prior; ``eps_mp`` and ``jeffreys_l/r`` are baselines (estimates).

    Attributes:
      eta, eta_se: prior inclusion probabilities η_i and their standard errors.
      degree: node degrees.
      counts: ``ErrorCounts`` of the prior-aware Bayes test (LOO LiRA).
      certified_l, certified_r: certified lower bounds on ε_L, ε_R
        (:func:`jaxaudit.bmp.certified_epsilons`, joint level ``confidence`` per node).
      confidence: the certified bounds' joint confidence level.
      eps_l, eps_r: Bayesian posterior quantiles of ε_L and ε_R.
      eps_mp: posterior quantiles of the symmetric MP ε fitted to the same counts (NaN when not
        fitted, e.g. with a fixed attack strength).
      jeffreys_l, jeffreys_r: quantiles of the optimal-attack Jeffreys estimator on the counts.
      auc: per-node AUC of the LOO LiRA scores; global_auc: pooled over all (model, node) pairs.
      rhat, ess, divergences: NUTS diagnostics per node (MP run not included).
      masks, scores: the shadow runs (R, N) the audit used.
    """

    eta: jax.Array
    eta_se: jax.Array
    degree: jax.Array
    counts: ErrorCounts
    certified_l: jax.Array
    certified_r: jax.Array
    confidence: float
    eps_l: jax.Array
    eps_r: jax.Array
    eps_mp: jax.Array
    jeffreys_l: jax.Array
    jeffreys_r: jax.Array
    auc: jax.Array
    global_auc: jax.Array
    rhat: jax.Array
    ess: jax.Array
    divergences: jax.Array
    masks: jax.Array
    scores: jax.Array


def audit_from_scores(key: jax.Array, scores: ArrayLike, masks: ArrayLike, eta: ArrayLike, *,
                      eta_se: ArrayLike | None = None, degree: ArrayLike | None = None,
                      fix_variance: bool = False, attack_prior: AttackPriorSpec = None,
                      prior_variance: float = PRIOR_VARIANCE, confidence: float = 0.95,
                      num_warmup: int = 500, num_samples: int = 1000, num_chains: int = 4,
                      mp_baseline: bool = True, max_num_doublings: int | None = None,
                      chunk_size: int | None = None, devices: Sequence[jax.Device] | None = None,
                      min_ess: float | None = None) -> BmpAudit:
    """The audit from existing shadow runs: (R, N) scores and membership masks plus priors η.

    LOO LiRA log-likelihood ratios Λ_ri → Bayes decisions "member iff Λ_ri + logit η_i > 0" →
    counts (X_i, N0_i, Y_i, N1_i) → for every node with N0_i, N1_i ≥ 1:
    :func:`jaxaudit.bmp.certified_epsilons`, :func:`jaxaudit.bmp.posterior_nuts` (and its
    symmetric MP fit when ``mp_baseline`` and the attack prior is a Beta prior) and
    :func:`jaxaudit.bmp.jeffreys_estimate`. Keys: ``split(key, 3)`` for the posterior, the MP fit
    and the Jeffreys draws.

    Args:
      key: PRNG key.
      scores, masks: (R, N) scores and membership masks of the shadow runs.
      eta: (N,) prior inclusion probabilities; eta_se, degree: reported alongside.
      fix_variance: LiRA's fixed-variance variant.
      attack_prior: prior on the attack strength (:func:`jaxaudit.bmp.as_attack_prior`).
      prior_variance: half-normal prior variance of ε_L, ε_R.
      confidence: joint level of the certified bounds.
      num_warmup, num_samples, num_chains, max_num_doublings, chunk_size, devices, min_ess: NUTS
        settings (:func:`jaxaudit.bmp.posterior_nuts`).
      mp_baseline: also fit the symmetric MP model.

    Returns:
      :class:`BmpAudit`.
    """
    from jaxaudit.mia import bayes_decision, error_counts, lira_loo, roc_auc

    scores = np.asarray(scores, np.float32)
    masks = np.asarray(masks, bool)
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape (R, N), got {scores.shape}")
    check_shape("masks", masks, scores.shape)
    num_nodes = scores.shape[1]
    eta = check_probability("eta", eta)
    check_shape("eta", eta, (num_nodes,))
    eta_se = np.zeros(num_nodes) if eta_se is None else np.asarray(eta_se, float)
    degree = np.zeros(num_nodes, int) if degree is None else np.asarray(degree)
    prior = as_attack_prior(attack_prior)
    llr = lira_loo(scores, masks, fix_variance=fix_variance)
    decisions = bayes_decision(llr, jnp.asarray(eta, jnp.float32))
    # host copies (numpy) in ErrorCounts' fields, which are typed as error_counts' jax arrays
    counts = ErrorCounts(*(np.asarray(c)  # type: ignore[arg-type]
                           for c in error_counts(decisions, masks)))
    auc = np.asarray(roc_auc(llr, masks, axis=0))
    global_auc = roc_auc(np.asarray(llr).ravel(), masks.ravel())
    valid = (counts.n0 > 0) & (counts.n1 > 0)
    nan = np.full(num_nodes, np.nan)
    nan3 = np.full((len(QUANTILES), num_nodes), np.nan)
    cert_l, cert_r = nan.copy(), nan.copy()
    eps_l, eps_r, eps_mp = nan3.copy(), nan3.copy(), nan3.copy()
    jeff_l, jeff_r = nan3.copy(), nan3.copy()
    rhat, ess = nan.copy(), nan.copy()
    div = np.zeros(num_nodes, int)
    if valid.any():
        sub = ErrorCounts(*(np.asarray(c)[valid] for c in counts))
        k_post, k_mp, k_jeff = jax.random.split(key, 3)
        cert = certified_epsilons(sub, confidence=confidence)
        cert_l[valid], cert_r[valid] = cert.eps_l, cert.eps_r
        jeff = jeffreys_estimate(k_jeff, sub, q=QUANTILES)
        jeff_l[:, valid], jeff_r[:, valid] = jeff.eps_l, jeff.eps_r
        config = NutsConfig(num_warmup=num_warmup, num_samples=num_samples,
                            num_chains=num_chains, max_num_doublings=max_num_doublings,
                            chunk_size=chunk_size, min_ess=min_ess)
        kw: dict[str, Any] = dict(prior_variance=prior_variance, config=config, devices=devices)
        post = posterior_nuts(k_post, sub, attack_prior=prior, **kw)
        eps_l[:, valid] = np.asarray(posterior_quantiles(post.eps_l, QUANTILES))
        eps_r[:, valid] = np.asarray(posterior_quantiles(post.eps_r, QUANTILES))
        rhat[valid], ess[valid] = np.asarray(post.rhat), np.asarray(post.ess)
        div[valid] = np.asarray(post.divergences)
        if mp_baseline and prior.fixed is None and not prior.optimal:
            mp = posterior_nuts(k_mp, sub, attack_prior=prior, symmetric=True, **kw)
            eps_mp[:, valid] = np.asarray(posterior_quantiles(mp.eps_l, QUANTILES))
    arr = jnp.asarray
    return BmpAudit(eta=arr(eta), eta_se=arr(eta_se), degree=arr(degree),
                    counts=ErrorCounts(*(arr(c) for c in counts)), certified_l=arr(cert_l),
                    certified_r=arr(cert_r), confidence=float(confidence), eps_l=arr(eps_l),
                    eps_r=arr(eps_r), eps_mp=arr(eps_mp), jeffreys_l=arr(jeff_l),
                    jeffreys_r=arr(jeff_r), auc=arr(auc), global_auc=arr(global_auc),
                    rhat=arr(rhat), ess=arr(ess), divergences=arr(div), masks=arr(masks),
                    scores=arr(scores))


def audit_bmp(key: jax.Array, graph: Graph, sampler: Sampler, model: str | nn.Module,
              num_models: int, *, epochs: int = 200, learning_rate: float = 0.01,
              weight_decay: float = 5e-4, edge_access: str = "inductive",
              num_prior_draws: int = 1000, fix_variance: bool = False,
              attack_prior: AttackPriorSpec = None, prior_variance: float = PRIOR_VARIANCE,
              confidence: float = 0.95, num_warmup: int = 500, num_samples: int = 1000,
              num_chains: int = 4, mp_baseline: bool = True, max_num_doublings: int | None = None,
              chunk_size: int | None = None, devices: Sequence[jax.Device] | None = None,
              min_ess: float | None = None) -> BmpAudit:
    """Node-level BMP audit of a GNN training pipeline (sampler, model) on ``graph``.

    1. η_i = Pr(i ∈ S): :func:`jaxaudit.graph.inclusion_probabilities` (exact where the sampler
       has a closed form, else Monte Carlo over ``num_prior_draws``).
    2. R = ``num_models`` shadow models on R independent samples, one jit-compiled vmapped call:
       :func:`jaxaudit.graph.train_shadow_models` (scores = true-class logits).
    3. :func:`audit_from_scores`: LOO LiRA, Bayes decisions with the node prior, per-node counts,
       certified bounds, Bayesian posteriors, the MP baseline and the Jeffreys estimate.

    Reading the result: ``certified_l/r`` are lower *bounds* that hold with probability ≥
    ``confidence`` for any attack; the posterior's quantiles (``eps_l``, ``eps_r``) are *Bayesian*
    — calibrated under the model, and with the default agnostic attack prior they sit above the
    truth more often than their level when the attack is optimal (use
    ``attack_prior="optimal"`` if you believe the attack is the most powerful test).
    Keys: ``split(key, 3)`` for η, the shadow models and :func:`audit_from_scores`.

    Args:
      key: PRNG key.
      graph: a ``jaxaudit.datasets.Graph``.
      sampler: ``(key, graph) -> Sample`` (``jaxaudit.graph.uniform_sampler(0.5)``, …).
      model: "gcn" | "sage" | "gat" or a flax module.
      num_models: R.
      epochs, learning_rate, weight_decay, edge_access: shadow-training recipe.
      num_prior_draws: Monte Carlo draws for η when the sampler has no closed form.
      fix_variance, attack_prior, prior_variance, confidence, num_warmup, num_samples,
        num_chains, mp_baseline, max_num_doublings, chunk_size, devices, min_ess: see
        :func:`audit_from_scores`.

    Returns:
      :class:`BmpAudit`.
    """
    from jaxaudit.graph import inclusion_probabilities, train_shadow_models

    k_eta, k_shadow, k_post = jax.random.split(key, 3)
    eta, eta_se = inclusion_probabilities(k_eta, sampler, graph, num_draws=num_prior_draws)
    shadow = train_shadow_models(k_shadow, graph, sampler, model, num_models, epochs=epochs,
                                 learning_rate=learning_rate, weight_decay=weight_decay,
                                 edge_access=edge_access)
    return audit_from_scores(
        k_post, shadow.scores, shadow.masks, np.clip(np.asarray(eta, float), 0.0, 1.0),
        eta_se=np.asarray(eta_se), degree=node_degrees(graph), fix_variance=fix_variance,
        attack_prior=attack_prior, prior_variance=prior_variance, confidence=confidence,
        num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        mp_baseline=mp_baseline, max_num_doublings=max_num_doublings, chunk_size=chunk_size,
        devices=devices, min_ess=min_ess)


def audit_table(audit: BmpAudit) -> dict[str, np.ndarray]:
    """Per-node columns of an audit, named for what they are: ``certified_*`` (bounds at level
    ``audit.confidence``), ``bayes_*`` (posterior quantiles under the attack prior), ``mp_*`` and
    ``jeffreys_*`` (baseline estimates), plus η, degree, counts, AUC and NUTS diagnostics."""
    cols = {"node": np.arange(np.asarray(audit.eta).shape[0]), "eta": audit.eta,
            "eta_se": audit.eta_se, "degree": audit.degree, **audit.counts._asdict(),
            "certified_eps_l_lower": audit.certified_l, "certified_eps_r_lower": audit.certified_r}
    for name, q in (("bayes_eps_l", audit.eps_l), ("bayes_eps_r", audit.eps_r),
                    ("mp_eps", audit.eps_mp)):
        for row, level in enumerate(QUANTILES):
            cols[f"{name}_q{round(100 * level):02d}"] = q[row]
    for name, q in (("jeffreys_eps_l", audit.jeffreys_l), ("jeffreys_eps_r", audit.jeffreys_r)):
        cols[f"{name}_q05"], cols[f"{name}_q50"] = q[0], q[1]
    cols.update(auc=audit.auc, rhat=audit.rhat, ess=audit.ess, divergences=audit.divergences)
    return {k: np.asarray(v) for k, v in cols.items()}


def most_leaking(audit: BmpAudit, k: int = 20) -> np.ndarray:
    """Indices of the ``k`` nodes with the largest certified lower bound max(ε_L⁻, ε_R⁻) (ties
    broken by the posterior median of ε_R); nodes without counts last."""
    cert = np.fmax(np.asarray(audit.certified_l), np.asarray(audit.certified_r))
    med = np.asarray(audit.eps_r)[1]
    order = np.lexsort((-np.nan_to_num(med, nan=-np.inf), -np.nan_to_num(cert, nan=-np.inf)))
    return order[: int(k)]


def audit_summary(audit: BmpAudit) -> dict[str, Any]:
    """Headline numbers of an audit (JSON-ready): how many nodes, the global attack AUC, the
    spread of per-node leakage (certified bounds and Bayesian medians), BMP-R vs MP, and the
    sampler's health."""
    cert_r, cert_l = np.asarray(audit.certified_r), np.asarray(audit.certified_l)
    med_r, med_l, med_mp = (np.asarray(q)[1] for q in (audit.eps_r, audit.eps_l, audit.eps_mp))
    ok = ~np.isnan(med_r)
    mp_ok = ok & ~np.isnan(med_mp)
    rhat, ess, div = np.asarray(audit.rhat), np.asarray(audit.ess), np.asarray(audit.divergences)

    def stat(fn: Callable[[np.ndarray], Any], x: np.ndarray, mask: np.ndarray
            ) -> float | list[Any] | None:
        if not mask.any():
            return None
        value = fn(x[mask])
        return value if isinstance(value, list) else float(value)

    return {
        "num_nodes": int(ok.shape[0]), "num_models": int(np.asarray(audit.masks).shape[0]),
        "nodes_with_estimate": int(ok.sum()),
        "global_attack_auc": float(audit.global_auc),
        "per_node_auc_p10_p90": stat(lambda x: np.nanpercentile(x, [10, 90]).tolist(),
                                     np.asarray(audit.auc), ok),
        "confidence": audit.confidence,
        "certified_eps_r_median": stat(np.median, cert_r, ok),
        "certified_eps_r_max": stat(np.max, cert_r, ok),
        "certified_eps_l_max": stat(np.max, cert_l, ok),
        "fraction_certified_eps_r_positive": stat(lambda x: np.mean(x > 0), cert_r, ok),
        "bayes_eps_r_median": stat(np.median, med_r, ok),
        "bayes_eps_l_median": stat(np.median, med_l, ok),
        "bayes_eps_r_p10_p90": stat(lambda x: np.percentile(x, [10, 90]).tolist(), med_r, ok),
        "mp_eps_median": stat(np.median, med_mp, mp_ok),
        "fraction_bmp_r_below_mp": (float(np.mean(med_r[mp_ok] <= med_mp[mp_ok]))
                                    if mp_ok.any() else None),
        "fraction_rhat_le_1_05": stat(lambda x: np.mean(x <= 1.05), rhat, ok),
        "min_ess": stat(np.min, ess, ok),
        "divergences": int(div[ok].sum()) if ok.any() else 0,
    }
