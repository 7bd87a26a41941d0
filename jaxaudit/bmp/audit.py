"""End-to-end node-level BMP audit (Yıldırım & Khosla, arXiv 2606.04069): sampler → vmapped
shadow GNNs → leave-one-out LiRA (Carlini et al., arXiv 2112.03570) → prior-aware Bayes
decisions → per-node error counts → per node: the certified lower bounds, the Bayesian posterior
over (ε_L, ε_R), the symmetric MP baseline and the Jeffreys estimate. Data flow and the reading of
each number: docs/bmp.md.

The audit runs in two stages, each a pure function: :func:`audit_attack` on all nodes (the attack
statistic, decisions, counts, AUCs and TPRs at low FPR; global, cheap) and :func:`audit_nodes` on
any subset of nodes (certified bounds, Jeffreys estimate, NUTS posterior), whose randomness is
per node, so the nodes can be split into work units (``jaxaudit.pipelines.run_bmp``) without
changing a number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import (
    ArgumentTypeError,
    check_choice,
    check_key,
    check_mask,
    check_probability,
    check_shape,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.bmp.certified import certified_epsilons
from jaxaudit.bmp.jeffreys import jeffreys_estimate
from jaxaudit.bmp.likelihood import as_attack_prior
from jaxaudit.bmp.posterior import (
    NutsConfig,
    PosteriorModel,
    posterior_nuts,
    posterior_quantiles,
)
from jaxaudit.graph.types import Graph, node_degrees
from jaxaudit.mia.types import ErrorCounts

if TYPE_CHECKING:
    import flax.linen as nn

    from jaxaudit.graph.samplers import Sampler
    from jaxaudit.graph.shadow_models import ShadowTraining

__all__ = ["TPR_FPRS", "AuditConfig", "BmpAttack", "BmpAudit", "BmpNodes", "assemble_audit",
           "audit_attack", "audit_bmp", "audit_from_scores", "audit_nodes", "audit_summary",
           "audit_table", "concat_nodes", "most_leaking"]

QUANTILES = (0.05, 0.5, 0.95)
#: The false-positive rates at which the global TPR of the attack is reported.
TPR_FPRS = (0.01, 0.001)


class AuditConfig(NamedTuple):
    """The settings of a BMP audit (:func:`audit_from_scores`, :func:`audit_bmp` and their
    stages :func:`audit_attack`, :func:`audit_nodes`); pass as ``config=AuditConfig(...)``.

    Attributes:
      attack: the membership attack, one of ``jaxaudit.mia.ATTACKS`` (default ``"lira"``:
        leave-one-out LiRA, Carlini et al., arXiv 2112.03570).
      fix_variance: the attack's fixed-variance variant (variances pooled over nodes; default
        False).
      model: the posterior's model, a :class:`jaxaudit.bmp.PosteriorModel` (default: its
        defaults, s ~ Beta(1, 1) and prior variance 10); the MP baseline is the same model with
        ``symmetric=True``, so ``model.symmetric`` must be False.
      confidence: joint confidence of the certified bounds (default 0.95).
      mp_baseline: also fit the symmetric MP model (default True; only with a Beta attack
        prior).
      nuts: the NUTS settings, a :class:`jaxaudit.bmp.NutsConfig` (default: its defaults, 4
        chains × (500 + 1000)).
    """

    attack: str = "lira"
    fix_variance: bool = False
    model: PosteriorModel = PosteriorModel()
    confidence: float = 0.95
    mp_baseline: bool = True
    nuts: NutsConfig = NutsConfig()

    def check(self) -> AuditConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration (its ``nuts`` included). The functions that take it call it first."""
        return _check_config(self)


def _check_config(config: object) -> AuditConfig:
    if not isinstance(config, AuditConfig):
        raise ArgumentTypeError(f"config must be a jaxaudit.bmp.AuditConfig, got "
                                f"{type(config).__name__}")
    if not isinstance(config.nuts, NutsConfig):
        raise ArgumentTypeError(f"config.nuts must be a jaxaudit.bmp.NutsConfig, got "
                                f"{type(config.nuts).__name__}")
    if not isinstance(config.model, PosteriorModel):
        raise ArgumentTypeError(f"config.model must be a jaxaudit.bmp.PosteriorModel, got "
                                f"{type(config.model).__name__}")
    check_config_fields(config)  # the flags, the numbers, config.model and config.nuts
    from jaxaudit.mia import ATTACKS

    check_choice("attack", config.attack, ATTACKS)
    check_probability("confidence", config.confidence, open_low=True, open_high=True)
    if config.model.symmetric:
        raise ValueError("config.model.symmetric must be False: the audit fits the symmetric "
                         "MP baseline itself (config.mp_baseline)")
    return config


class BmpAudit(NamedTuple):
    """Per-node audit results (N nodes; quantile arrays have shape (3, N) for 5%, 50%, 95%).

    Nodes never IN or never OUT in the shadow runs have no estimate: their entries are NaN.
    Which number to read (docs/bmp.md): ``certified_left/right`` are *bounds* (valid with
    probability ≥ ``confidence`` whatever the attack); ``epsilon_left/right`` are *Bayesian*
    posterior quantiles under the attack prior; ``epsilon_mp`` and ``jeffreys_left/right`` are
    baselines (estimates).

    Attributes:
      eta, eta_se: prior inclusion probabilities η_i and their standard errors.
      degree: node degrees.
      counts: ``ErrorCounts`` of the prior-aware Bayes test (LOO LiRA).
      certified_left, certified_right: certified lower bounds on ε_L, ε_R
        (:func:`jaxaudit.bmp.certified_epsilons`, joint confidence ``confidence`` per node).
      confidence: the certified bounds' joint confidence.
      epsilon_left, epsilon_right: Bayesian posterior quantiles of ε_L and ε_R.
      epsilon_mp: posterior quantiles of the symmetric MP ε fitted to the same counts (NaN when not
        fitted, e.g. with a fixed attack strength).
      jeffreys_left, jeffreys_right: quantiles of the optimal-attack Jeffreys estimator on the counts.
      auc: per-node AUC of the LOO attack statistic; global_auc: pooled over all (model, node)
        pairs.
      rhat, ess, divergences: NUTS diagnostics per node (MP run not included).
      masks, scores: the shadow runs (R, N) the audit used.
      attack: the attack's name (``jaxaudit.mia.ATTACKS``).
      global_tpr: the attack's TPR at the FPRs :data:`TPR_FPRS` (1% and 0.1%), pooled over all
        (model, node) pairs (estimates; NaN when unknown).
    """

    eta: jax.Array
    eta_se: jax.Array
    degree: jax.Array
    counts: ErrorCounts
    certified_left: jax.Array
    certified_right: jax.Array
    confidence: float
    epsilon_left: jax.Array
    epsilon_right: jax.Array
    epsilon_mp: jax.Array
    jeffreys_left: jax.Array
    jeffreys_right: jax.Array
    auc: jax.Array
    global_auc: jax.Array
    rhat: jax.Array
    ess: jax.Array
    divergences: jax.Array
    masks: jax.Array
    scores: jax.Array
    attack: str = "lira"
    global_tpr: jax.Array | None = None


class BmpAttack(NamedTuple):
    """The attack stage of the audit (:func:`audit_attack`), on all N nodes.

    Attributes:
      attack: the attack's name.
      statistic: (R, N) leave-one-out log-likelihood-ratio statistic Λ_ri.
      counts: ``ErrorCounts`` of the Bayes decisions "member iff Λ_ri + logit η_i > 0".
      auc: (N,) per-node AUC of Λ; global_auc: pooled over all (model, node) pairs.
      global_tpr: TPR at the FPRs :data:`TPR_FPRS`, pooled over all pairs (estimates).
      key_node: (N,) for node i the first node j with node i's counts: node i's draws use
        ``fold_in(key, j)`` (identical counts, identical draws, whatever the units).
    """

    attack: str
    statistic: jax.Array | np.ndarray
    counts: ErrorCounts
    auc: jax.Array
    global_auc: jax.Array
    global_tpr: jax.Array
    key_node: np.ndarray


class BmpNodes(NamedTuple):
    """The per-node stage of the audit (:func:`audit_nodes`) on M nodes; fields as in
    :class:`BmpAudit` (quantile arrays (3, M)); NaN for nodes without IN or OUT runs."""

    certified_left: np.ndarray
    certified_right: np.ndarray
    epsilon_left: np.ndarray
    epsilon_right: np.ndarray
    epsilon_mp: np.ndarray
    jeffreys_left: np.ndarray
    jeffreys_right: np.ndarray
    rhat: np.ndarray
    ess: np.ndarray
    divergences: np.ndarray


def _statistic(scores: np.ndarray, masks: np.ndarray, attack: str, fix_variance: bool
               ) -> jax.Array:
    """The attack's (R, N) LOO statistic on the log-likelihood-ratio scale."""
    from jaxaudit.mia import ATTACKS, attack_statistic

    if not isinstance(attack, str) or attack not in ATTACKS:
        raise ValueError(f"attack must be one of {list(ATTACKS)}, got {attack!r}")
    return attack_statistic(scores, masks, attack=attack, fix_variance=fix_variance)


def _check_runs(scores: ArrayLike, masks: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    check_mask("masks", masks)
    scores = np.asarray(scores, np.float32)
    masks = np.asarray(masks, bool)
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape (R, N), got {scores.shape}")
    check_shape("masks", masks, scores.shape)
    return scores, masks


def audit_attack(scores: ArrayLike, masks: ArrayLike, eta: ArrayLike,
                 config: AuditConfig = AuditConfig()) -> BmpAttack:
    """The attack stage of the audit, on all nodes (cheap; the variance pooling of
    ``fix_variance`` and the global metrics need every node).

    Λ_ri = the attack's leave-one-out statistic (``attack="lira"``: LiRA, Carlini et al.,
    arXiv 2112.03570; the others of ``jaxaudit.mia.ATTACKS``) → Bayes decisions "member iff
    Λ_ri + logit η_i > 0" → counts (X_i, N0_i, Y_i, N1_i); the per-node and global AUC and the
    global TPR at FPR 1% and 0.1% (:func:`jaxaudit.mia.tpr_at_fpr`), all estimates.

    Args:
      scores, masks: (R, N) scores and membership masks of the shadow runs.
      eta: (N,) prior inclusion probabilities.
      config: an :class:`AuditConfig`; this stage reads ``attack`` and ``fix_variance``.

    Returns:
      :class:`BmpAttack`.
    """
    from jaxaudit.mia import bayes_decision, error_counts, roc_auc, tpr_at_fpr

    config = _check_config(config)
    attack, fix_variance = config.attack, config.fix_variance
    scores, masks = _check_runs(scores, masks)
    num_nodes = scores.shape[1]
    eta = check_probability("eta", eta)
    check_shape("eta", eta, (num_nodes,))
    llr = _statistic(scores, masks, attack, bool(fix_variance))
    decisions = bayes_decision(llr, jnp.asarray(eta, jnp.float32))
    counts = ErrorCounts(*(np.asarray(c)  # type: ignore[arg-type]
                           for c in error_counts(decisions, masks)))
    auc = np.asarray(roc_auc(llr, masks, axis=0))
    flat, labels = np.asarray(llr).ravel(), masks.ravel()
    global_auc = np.asarray(roc_auc(flat, labels))
    tpr = np.asarray([float(tpr_at_fpr(flat, labels, fpr)) for fpr in TPR_FPRS])
    table = np.stack([np.asarray(c) for c in counts], axis=1)
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    key_node = first[inverse.ravel()].astype(np.int64)
    return BmpAttack(attack, llr, counts, jnp.asarray(auc), jnp.asarray(global_auc),
                     jnp.asarray(tpr), key_node)


def audit_nodes(key: jax.Array, counts: ErrorCounts, key_node: ArrayLike,
                config: AuditConfig = AuditConfig(), *,
                devices: Sequence[jax.Device] | None = None) -> BmpNodes:
    """The per-node stage of the audit on M nodes (any subset of the graph's).

    For every node with N0_i, N1_i ≥ 1: :func:`jaxaudit.bmp.certified_epsilons`,
    :func:`jaxaudit.bmp.jeffreys_estimate` and :func:`jaxaudit.bmp.posterior_nuts` (and its
    symmetric MP fit when ``config.mp_baseline`` and the attack prior is a Beta prior). Node i's
    randomness is ``k_i = fold_in(key, key_node[i])``, split in 3 for the posterior, the MP fit
    and the Jeffreys draws; nodes with the same ``key_node`` (:attr:`BmpAttack.key_node`: the
    same counts) are sampled once. A node's numbers therefore depend on its counts, its
    ``key_node`` and the settings only, not on the other nodes of the call.

    Args:
      key: PRNG key of the audit.
      counts: ``ErrorCounts`` of (M,) arrays.
      key_node: (M,) non-negative integers: the node index that keys each node's draws.
      config: an :class:`AuditConfig`; this stage reads ``model``, ``confidence``,
        ``mp_baseline`` and ``nuts``.
      devices: devices to shard the node axis over (None: all visible).

    Returns:
      :class:`BmpNodes`.
    """
    check_key("key", key)
    config = _check_config(config)
    counts = ErrorCounts(*(np.asarray(c) for c in counts))  # type: ignore[arg-type]
    num_nodes = int(np.shape(counts.fp)[0]) if np.ndim(counts.fp) == 1 else -1
    if num_nodes < 0:
        raise ValueError(f"counts must hold (M,) arrays, got shape {np.shape(counts.fp)}")
    key_node = np.asarray(key_node)
    check_shape("key_node", key_node, (num_nodes,))
    if not np.issubdtype(key_node.dtype, np.integer) or (key_node < 0).any():
        raise ValueError("key_node must hold non-negative integers")
    prior = as_attack_prior(config.model.attack_prior)
    confidence = config.confidence
    valid = (counts.n0 > 0) & (counts.n1 > 0)
    nan = np.full(num_nodes, np.nan)
    nan3 = np.full((len(QUANTILES), num_nodes), np.nan)
    cert_l, cert_r = nan.copy(), nan.copy()
    eps_l, eps_r, eps_mp = nan3.copy(), nan3.copy(), nan3.copy()
    jeff_l, jeff_r = nan3.copy(), nan3.copy()
    rhat, ess = nan.copy(), nan.copy()
    div = np.zeros(num_nodes, int)
    if valid.any():
        nodes, first, inverse = np.unique(key_node[valid], return_index=True,
                                          return_inverse=True)
        inverse = inverse.ravel()
        sub = ErrorCounts(*(np.asarray(c)[valid][first] for c in counts))
        keys = jax.vmap(jax.random.fold_in, (None, 0))(key, nodes.astype(np.uint32))
        k_post, k_mp, k_jeff = jnp.moveaxis(jax.vmap(lambda k: jax.random.split(k, 3))(keys),
                                            1, 0)
        cert = certified_epsilons(sub, confidence=confidence)
        cert_l[valid], cert_r[valid] = np.asarray(cert.epsilon_left)[inverse], np.asarray(
            cert.epsilon_right)[inverse]
        jeff = jax.vmap(lambda k, c: jeffreys_estimate(k, c, q=QUANTILES))(
            k_jeff, ErrorCounts(*(jnp.asarray(c, jnp.float32) for c in sub)))
        jeff_l[:, valid] = np.asarray(jeff.epsilon_left).T[:, inverse]
        jeff_r[:, valid] = np.asarray(jeff.epsilon_right).T[:, inverse]
        model = config.model._replace(attack_prior=prior)
        post = posterior_nuts(k_post, sub, model, config.nuts, devices=devices)
        eps_l[:, valid] = np.asarray(posterior_quantiles(post.epsilon_left, QUANTILES))[
            :, inverse]
        eps_r[:, valid] = np.asarray(posterior_quantiles(post.epsilon_right, QUANTILES))[
            :, inverse]
        rhat[valid] = np.asarray(post.rhat)[inverse]
        ess[valid] = np.asarray(post.ess)[inverse]
        div[valid] = np.asarray(post.divergences)[inverse]
        if config.mp_baseline and prior.fixed is None and not prior.optimal:
            # the symmetric model has its own (centered) coordinates
            mp_model = model._replace(symmetric=True, parameterization=None)
            mp = posterior_nuts(k_mp, sub, mp_model, config.nuts, devices=devices)
            eps_mp[:, valid] = np.asarray(posterior_quantiles(mp.epsilon_left, QUANTILES))[
                :, inverse]
    return BmpNodes(cert_l, cert_r, eps_l, eps_r, eps_mp, jeff_l, jeff_r, rhat, ess, div)


def concat_nodes(parts: Sequence[BmpNodes]) -> BmpNodes:
    """The :class:`BmpNodes` of consecutive node ranges joined into one (node axis last)."""
    return BmpNodes(*(np.concatenate([np.asarray(getattr(p, f)) for p in parts], axis=-1)
                      for f in BmpNodes._fields))


def assemble_audit(scores: ArrayLike, masks: ArrayLike, eta: ArrayLike, attacked: BmpAttack,
                   nodes: BmpNodes, config: AuditConfig = AuditConfig(), *,
                   eta_se: ArrayLike | None = None, degree: ArrayLike | None = None
                   ) -> BmpAudit:
    """The :class:`BmpAudit` of the two stages' results: :func:`audit_attack` on all N nodes and
    :func:`audit_nodes` on all of them (in node order; :func:`concat_nodes` joins the stage
    run on consecutive node ranges). Nothing is recomputed: a pipeline that stores the stages'
    results (work units, resumable) assembles the audit :func:`audit_from_scores` returns.

    Args:
      scores, masks: (R, N) scores and membership masks of the shadow runs.
      eta: (N,) prior inclusion probabilities.
      attacked: the attack stage's :class:`BmpAttack` (its ``statistic`` and ``key_node`` are
        not read).
      nodes: the per-node stage's :class:`BmpNodes`, node axis last, N nodes.
      config: the :class:`AuditConfig` the stages ran with (``confidence`` is reported).
      eta_se, degree: (N,) reported alongside (None: zeros).

    Returns:
      :class:`BmpAudit`.
    """
    config = _check_config(config)
    scores, masks = _check_runs(scores, masks)
    num_nodes = scores.shape[1]
    eta = check_probability("eta", eta)
    check_shape("eta", eta, (num_nodes,))
    for name, value in nodes._asdict().items():
        if np.shape(value)[-1:] != (num_nodes,):
            raise ValueError(f"nodes.{name} must cover the {num_nodes} nodes (last axis), got "
                             f"shape {np.shape(value)}")
    eta_se = np.zeros(num_nodes) if eta_se is None else np.asarray(eta_se, float)
    degree = np.zeros(num_nodes, int) if degree is None else np.asarray(degree)
    arr = jnp.asarray
    return BmpAudit(eta=arr(eta), eta_se=arr(eta_se), degree=arr(degree),
                    counts=ErrorCounts(*(arr(c) for c in attacked.counts)),
                    confidence=float(config.confidence), auc=arr(attacked.auc),
                    global_auc=arr(attacked.global_auc), masks=arr(masks), scores=arr(scores),
                    attack=attacked.attack, global_tpr=arr(attacked.global_tpr),
                    **{f: arr(v) for f, v in nodes._asdict().items()})


def audit_from_scores(key: jax.Array, scores: ArrayLike, masks: ArrayLike, eta: ArrayLike,
                      config: AuditConfig = AuditConfig(), *, eta_se: ArrayLike | None = None,
                      degree: ArrayLike | None = None,
                      devices: Sequence[jax.Device] | None = None) -> BmpAudit:
    """The audit from existing shadow runs: (R, N) scores and membership masks plus priors η.

    :func:`audit_attack` (LOO attack statistic Λ_ri → Bayes decisions "member iff
    Λ_ri + logit η_i > 0" → counts (X_i, N0_i, Y_i, N1_i), AUCs, TPR at 1% and 0.1% FPR) then
    :func:`audit_nodes` on all nodes: for every node with N0_i, N1_i ≥ 1,
    :func:`jaxaudit.bmp.certified_epsilons`, :func:`jaxaudit.bmp.posterior_nuts` (and its
    symmetric MP fit when ``config.mp_baseline`` and the attack prior is a Beta prior) and
    :func:`jaxaudit.bmp.jeffreys_estimate`, then :func:`assemble_audit`. Keys: node i draws
    from ``fold_in(key, j)``, j the first node with node i's counts (split in 3 for the
    posterior, the MP fit and the Jeffreys draws), so the numbers do not depend on how the nodes
    are split into units.

    Args:
      key: PRNG key.
      scores, masks: (R, N) scores and membership masks of the shadow runs.
      eta: (N,) prior inclusion probabilities.
      config: the audit's settings, an :class:`AuditConfig` (attack, priors, confidence, the
        MP baseline and the :class:`jaxaudit.bmp.NutsConfig`).
      eta_se, degree: reported alongside.
      devices: devices to shard the node axis of the posterior over (None: all visible).

    Returns:
      :class:`BmpAudit`.
    """
    check_key("key", key)
    config = _check_config(config)
    scores, masks = _check_runs(scores, masks)
    num_nodes = scores.shape[1]
    eta = check_probability("eta", eta)
    check_shape("eta", eta, (num_nodes,))
    attacked = audit_attack(scores, masks, eta, config)
    nodes = audit_nodes(key, attacked.counts, attacked.key_node, config, devices=devices)
    return assemble_audit(scores, masks, eta, attacked, nodes, config, eta_se=eta_se,
                          degree=degree)


def audit_bmp(key: jax.Array, graph: Graph, sampler: Sampler, model: str | nn.Module,
              num_models: int, config: AuditConfig = AuditConfig(), *,
              training: ShadowTraining | None = None, num_prior_draws: int = 1000,
              devices: Sequence[jax.Device] | None = None) -> BmpAudit:
    """Node-level BMP audit of a GNN training pipeline (sampler, model) on ``graph``.

    1. η_i = Pr(i ∈ S): :func:`jaxaudit.graph.inclusion_probabilities` (exact where the sampler
       has a closed form, else Monte Carlo over ``num_prior_draws``).
    2. R = ``num_models`` shadow models on R independent samples, one jit-compiled vmapped call:
       :func:`jaxaudit.graph.train_shadow_models` with the recipe ``training`` (scores =
       true-class logits).
    3. :func:`audit_from_scores` with ``config``: LOO LiRA, Bayes decisions with the node prior,
       per-node counts, certified bounds, Bayesian posteriors, the MP baseline and the Jeffreys
       estimate.

    Reading the result: ``certified_left/right`` are lower *bounds* that hold with probability
    ≥ ``confidence`` for any attack; the posterior's quantiles (``epsilon_left``,
    ``epsilon_right``) are *Bayesian*
    — calibrated under the model, and with the default agnostic attack prior they sit above the
    truth more often than their nominal probability when the attack is optimal (use
    ``AuditConfig(model=PosteriorModel(attack_prior="optimal"))`` if you believe the attack is
    the most powerful test).
    Keys: ``split(key, 3)`` for η, the shadow models and :func:`audit_from_scores`.

    Args:
      key: PRNG key.
      graph: a ``jaxaudit.graph.Graph``.
      sampler: ``(key, graph) -> Sample`` (``jaxaudit.graph.uniform_sampler(0.5)``, …).
      model: "gcn" | "sage" | "gat" or a flax module.
      num_models: R.
      config: the audit's settings, an :class:`AuditConfig`.
      training: the shadow-training recipe, a ``jaxaudit.graph.ShadowTraining`` (None: its
        defaults).
      num_prior_draws: Monte Carlo draws for η when the sampler has no closed form.
      devices: devices to shard the models and the nodes over (None: all visible).

    Returns:
      :class:`BmpAudit`.
    """
    from jaxaudit.graph import ShadowTraining, inclusion_probabilities, train_shadow_models

    check_key("key", key)
    training = ShadowTraining() if training is None else training
    config = _check_config(config)
    k_eta, k_shadow, k_post = jax.random.split(key, 3)
    eta, eta_se = inclusion_probabilities(k_eta, sampler, graph, num_draws=num_prior_draws)
    shadow = train_shadow_models(k_shadow, graph, sampler, model, num_models, training,
                                 devices=devices)
    return audit_from_scores(k_post, shadow.scores, shadow.masks,
                             np.clip(np.asarray(eta, float), 0.0, 1.0), config,
                             eta_se=np.asarray(eta_se), degree=node_degrees(graph),
                             devices=devices)


def audit_table(audit: BmpAudit) -> dict[str, np.ndarray]:
    """Per-node columns of an audit, named for what they are: ``certified_*`` (bounds at
    confidence ``audit.confidence``), ``bayes_*`` (posterior quantiles under the attack prior), ``mp_*`` and
    ``jeffreys_*`` (baseline estimates), plus η, degree, counts, AUC and NUTS diagnostics."""
    cols = {"node": np.arange(np.asarray(audit.eta).shape[0]), "eta": audit.eta,
            "eta_se": audit.eta_se, "degree": audit.degree, **audit.counts._asdict(),
            "certified_eps_l_lower": audit.certified_left, "certified_eps_r_lower": audit.certified_right}
    for name, q in (("bayes_eps_l", audit.epsilon_left), ("bayes_eps_r", audit.epsilon_right),
                    ("mp_eps", audit.epsilon_mp)):
        for row, p in enumerate(QUANTILES):
            cols[f"{name}_q{round(100 * p):02d}"] = q[row]
    for name, q in (("jeffreys_eps_l", audit.jeffreys_left), ("jeffreys_eps_r", audit.jeffreys_right)):
        cols[f"{name}_q05"], cols[f"{name}_q50"] = q[0], q[1]
    cols.update(auc=audit.auc, rhat=audit.rhat, ess=audit.ess, divergences=audit.divergences)
    return {k: np.asarray(v) for k, v in cols.items()}


def most_leaking(audit: BmpAudit, k: int = 20) -> np.ndarray:
    """Indices of the ``k`` nodes with the largest certified lower bound max(ε_L⁻, ε_R⁻) (ties
    broken by the posterior median of ε_R); nodes without counts last."""
    cert = np.fmax(np.asarray(audit.certified_left), np.asarray(audit.certified_right))
    med = np.asarray(audit.epsilon_right)[1]
    order = np.lexsort((-np.nan_to_num(med, nan=-np.inf), -np.nan_to_num(cert, nan=-np.inf)))
    return order[: int(k)]


def audit_summary(audit: BmpAudit) -> dict[str, Any]:
    """Headline numbers of an audit (JSON-ready): how many nodes, the attack, its global AUC and
    TPR at 1% and 0.1% FPR (``global_tpr_at_fpr``, keyed by the FPR; estimates), the spread of
    per-node leakage (certified bounds and Bayesian medians), BMP-R vs MP, and the
    sampler's health."""
    cert_r, cert_l = np.asarray(audit.certified_right), np.asarray(audit.certified_left)
    med_r, med_l, med_mp = (np.asarray(q)[1] for q in (audit.epsilon_right, audit.epsilon_left, audit.epsilon_mp))
    ok = ~np.isnan(med_r)
    mp_ok = ok & ~np.isnan(med_mp)
    rhat, ess, div = np.asarray(audit.rhat), np.asarray(audit.ess), np.asarray(audit.divergences)
    tprs = ([None] * len(TPR_FPRS) if audit.global_tpr is None
            else [float(t) for t in np.asarray(audit.global_tpr)])

    def stat(fn: Callable[[np.ndarray], Any], x: np.ndarray, mask: np.ndarray
            ) -> float | list[Any] | None:
        if not mask.any():
            return None
        value = fn(x[mask])
        return value if isinstance(value, list) else float(value)

    return {
        "num_nodes": int(ok.shape[0]), "num_models": int(np.asarray(audit.masks).shape[0]),
        "nodes_with_estimate": int(ok.sum()),
        "attack": audit.attack,
        "global_attack_auc": float(audit.global_auc),
        "global_tpr_at_fpr": {f"{fpr:g}": (None if tpr is None or np.isnan(tpr) else tpr)
                              for fpr, tpr in zip(TPR_FPRS, tprs, strict=True)},
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
