"""A one-run audit of DP-SGD: m canaries, each included by a fair coin, in ONE training run.

Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training Run", arXiv 2305.08846;
Mahloujifar, Melis, Chaudhuri, "Auditing f-Differential Privacy in One Run", arXiv 2410.22235.

Canary j (j < m) is included iff the fair coin b_j ~ Bernoulli(1/2) drawn from the key is 1.
DP-SGD then trains once on D⁻ plus the included canaries (each canary is one example: it is
Poisson-sampled at rate q like the data, clipped to C, and covered by the noise σC), every
canary is scored "higher = member", and the scores of the included and of the excluded canaries
go to :func:`jaxaudit.renyi.epsilon_lower_bounds` (its m = len(in) + len(out) is the number of
canaries, as the one-run theorems require). Two canary kinds:

* ``"input"`` (black-box): m extra examples (inputs and labels, e.g. images with wrong labels)
  appended to the batch with membership weight b_j; score −CE(canary_j; θ_T).
* ``"gradient"`` (white-box, Dirac canaries): the parameters are extended by an extra block of m
  coordinates that the model never reads (a parameter vector beside the model's pytree; the
  data's gradient there is exactly 0, so the data's clipped gradients are unchanged). Canary j
  is the gradient C·e_j (norm C, so clipping leaves it as it is), added to the clipped sum at
  every step in which it is sampled; the noise N(0, σ²C²) covers the extra block like every
  other coordinate. Score: (θ_0 − θ_T)·e_j, which is (η/n̄)(C·Σ_t s_{t,j} b_j + noise), higher
  for members. This is the tightest one-run audit: the canary's coordinate sees exactly the
  Gaussian mechanism.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxaudit._validation import (
    check_choice,
    check_finite,
    check_integer,
    check_key,
    check_labels,
    check_probability,
    is_traced,
)
from jaxaudit._validation.core import check_config_fields
from jaxaudit.dpsgd.config import DpsgdConfig, check_dpsgd_config
from jaxaudit.dpsgd.ghost import _per_example_losses
from jaxaudit.dpsgd.models import fast_apply
from jaxaudit.dpsgd.private_aggregate import dp_noisy_sum
from jaxaudit.dpsgd.private_step import _clipped_sum_fn
from jaxaudit.dpsgd.scores import accountant_epsilon

__all__ = ["KINDS", "OneRunAudit", "OneRunConfig", "one_run_audit", "one_run_scores"]

#: Canary kinds: black-box input canaries, white-box Dirac gradient canaries.
KINDS = ("input", "gradient")
#: The bounds need at least 8 scores per world (:data:`jaxaudit.renyi.score_bounds.MIN_SCORES`).
_MIN_PER_WORLD = 8
#: Fewest canaries an audit takes. The coins are independent and fair, as the one-run theorems
#: assume (balancing them, e.g. by a permutation, would make each coin depend on the others,
#: which the theorems do not cover), so a world holds fewer than 8 canaries with probability
#: 2·P[Bin(m, ½) ≤ 7]: 0.80 at m = 16 (most seeds were refused), 2.1e-7 at m = 50.
MIN_CANARIES = 50


class OneRunConfig(NamedTuple):
    """The settings of a one-run audit (the DP-SGD recipe itself is a
    :class:`jaxaudit.dpsgd.DpsgdConfig`).

    Attributes:
      num_canaries: m ≥ :data:`MIN_CANARIES` (50) canaries, each included by a fair coin
        (with fewer, the coins too often leave fewer than 8 in one world, which the bounds
        need).
      kind: ``"gradient"`` (default: white-box Dirac gradient canaries in an extra parameter
        block the model never reads) or ``"input"`` (black-box: extra examples, scored by −CE).
      delta: δ ∈ (0, 1) of the accountant's ε and of the (ε, δ) bounds (default 1e-5).
      confidence: coverage of each bound, in (0, 1) (default 0.95).
      bonferroni: the one-run audits' thresholds, as in
        :func:`jaxaudit.renyi.epsilon_lower_bounds` (default ``"grid"``).
    """

    num_canaries: int
    kind: str = "gradient"
    delta: float = 1e-5
    confidence: float = 0.95
    bonferroni: str = "grid"

    def check(self) -> OneRunConfig:
        """Every field checked (a ``ValueError`` naming it; a value of the wrong kind, such as
        ``"yes"`` for a flag or 16.0 for a count, an ``ArgumentTypeError``, also a ``TypeError``);
        returns the configuration with Python numbers. The functions that take it call it first."""
        return _check_audit(self)


class OneRunAudit(NamedTuple):
    """Result of :func:`one_run_audit`.

    Attributes:
      scores: (m,) float32 canary scores, higher = member.
      included: (m,) bool, the fair coins (canary j was in the training run).
      bounds: :class:`jaxaudit.renyi.ScoreBounds` on (scores[included], scores[~included]):
        ``one_run``, ``clopper_pearson``, ``gdp_mu``, ``fdp_one_run_mu`` are lower bounds
        (each at ``confidence``); ``gdp_epsilon``, ``fdp_one_run`` are estimates (see there).
      accountant_epsilon: the accountant's ε at δ of the run (an upper bound; RDP accountant;
        +inf at σ = 0).
    """

    scores: np.ndarray
    included: np.ndarray
    bounds: Any
    accountant_epsilon: float


def _check_audit(audit: Any) -> OneRunConfig:
    if not isinstance(audit, OneRunConfig):
        raise ValueError(f"audit must be a jaxaudit.dpsgd.OneRunConfig, got {type(audit).__name__}")
    check_config_fields(audit, "audit")
    m = check_integer("audit.num_canaries", audit.num_canaries, minimum=MIN_CANARIES)
    check_choice("audit.kind", audit.kind, KINDS)
    check_probability("audit.delta", audit.delta, open_low=True, open_high=True)
    check_probability("audit.confidence", audit.confidence, open_low=True, open_high=True)
    return audit._replace(num_canaries=m, delta=float(audit.delta),
                          confidence=float(audit.confidence))


def _check_canaries(model: nn.Module, inputs: np.ndarray | jax.Array, kind: str, m: int,
                    canaries: Any) -> None:
    if kind == "gradient":
        if canaries is not None:
            raise ValueError("canaries are examples of the 'input' kind; gradient canaries are "
                             "Dirac gradients built here (pass canaries=None)")
        return
    if canaries is None:
        raise ValueError("audit.kind='input' needs canaries=(inputs (m, ...), labels (m,))")
    cx, cy = canaries
    if is_traced(cx) or is_traced(cy):
        return
    if np.shape(cx) != (m, *inputs.shape[1:]) or np.shape(cy) != (m,):
        raise ValueError(f"canaries must be inputs of shape {(m, *inputs.shape[1:])} and labels "
                         f"of shape {(m,)}, got {np.shape(cx)} and {np.shape(cy)}")
    check_finite("canaries inputs", np.asarray(cx))
    check_labels("canaries labels", np.asarray(cy), getattr(model, "num_classes", None))


def one_run_scores(key: jax.Array, model: nn.Module, init_params: Any,
                   data: tuple[ArrayLike, ArrayLike], config: DpsgdConfig, *, num_canaries: int,
                   kind: str = "gradient", canaries: tuple[ArrayLike, ArrayLike] | None = None
                   ) -> tuple[jax.Array, jax.Array]:
    """The training run of a one-run audit: ``(scores (m,), included (m,) bool)``. Traceable
    (jit/vmap over ``key`` and ``config.noise_multiplier``); :func:`one_run_audit` adds the
    bounds.

    Keys: ``k_coins, k_train = jax.random.split(key)``; the coins are
    ``jax.random.bernoulli(k_coins, 0.5, (m,))``; step t uses the t-th of
    ``jax.random.split(k_train, T)`` (its noise, and with q < 1 a Poisson mask from a split of
    it). The normaliser is n̄ = q|D⁻| as in :func:`jaxaudit.dpsgd.canary_runs`.
    """
    config = check_dpsgd_config(config)
    m = check_integer("num_canaries", num_canaries, minimum=1)
    check_choice("kind", kind, KINDS)
    x, y = jnp.asarray(data[0], jnp.float32), jnp.asarray(data[1], jnp.int32)
    n = x.shape[0]
    _check_canaries(model, x, kind, m, canaries)
    k_coins, k_train = jax.random.split(key)
    included = jax.random.bernoulli(k_coins, 0.5, (m,))
    coins = included.astype(jnp.float32)
    q, c = config.sampling_rate, config.clip_norm
    normalizer = max(q * n, 1e-12)
    prepare, clipped_sum = _clipped_sum_fn(model, config.method, config.block_size)
    tx = optax.chain(dp_noisy_sum(c, config.noise_multiplier, normalizer=1.0),
                     optax.sgd(config.learning_rate / normalizer))
    if kind == "input":
        assert canaries is not None  # checked above
        cx, cy = jnp.asarray(canaries[0], jnp.float32), jnp.asarray(canaries[1], jnp.int32)
        x_all, y_all = jnp.concatenate([x, cx]), jnp.concatenate([y, cy])
        member = jnp.concatenate([jnp.ones((n,), jnp.float32), coins])
        params0 = init_params
    else:
        x_all, y_all, member = x, y, jnp.ones((n,), jnp.float32)
        params0 = {"model": init_params, "canary": jnp.zeros((m,), jnp.float32)}
    features = prepare(x_all)

    def body(carry: Any, k: jax.Array) -> tuple[Any, None]:
        params, state = carry
        mask, canary_mask = member, coins
        if q < 1.0:
            k, k_data, k_canary = jax.random.split(k, 3)
            mask = member * jax.random.bernoulli(k_data, q, member.shape)
            canary_mask = coins * jax.random.bernoulli(k_canary, q, coins.shape)
        if kind == "input":
            summed, _ = clipped_sum(params, features, y_all, mask, c)
        else:
            data_sum, _ = clipped_sum(params["model"], features, y_all, mask, c)
            summed = {"model": data_sum, "canary": c * canary_mask}
        updates, state = tx.update(summed, state, params, noise_key=k)
        return (optax.apply_updates(params, updates), state), None

    (params, _), _ = jax.lax.scan(body, (params0, tx.init(params0)),
                                  jax.random.split(k_train, config.steps), unroll=config.unroll)
    if kind == "input":
        logits = fast_apply(model, params, cx)
        scores = -_per_example_losses(logits, cy)
    else:
        scores = params0["canary"] - params["canary"]  # (θ_0 − θ_T)·e_j: higher = member
    return scores, included


#: :func:`one_run_scores` compiled once per (model, recipe, m, kind).
_jitted_scores = jax.jit(one_run_scores, static_argnames=("model", "config", "num_canaries",
                                                          "kind"))


def one_run_audit(key: jax.Array, model: nn.Module, init_params: Any,
                  data: tuple[ArrayLike, ArrayLike], config: DpsgdConfig, audit: OneRunConfig,
                  *, canaries: tuple[ArrayLike, ArrayLike] | None = None) -> OneRunAudit:
    """Audit DP-SGD in ONE training run with m canaries (Steinke et al., arXiv 2305.08846).

    Trains once (:func:`one_run_scores`: canary j in the run iff a fair coin from ``key`` says
    so), then computes every score-based bound of :func:`jaxaudit.renyi.epsilon_lower_bounds`
    on (scores of the included canaries, scores of the excluded ones), beside the accountant's
    ε of the same run (:func:`jaxaudit.dpsgd.scores.accountant_epsilon`, RDP, at
    ``audit.delta``). Host-side (the bounds have data-dependent sizes); inside ``jax.jit`` or
    ``jax.vmap`` call :func:`one_run_scores`.

    Args:
      key: PRNG key (``k_run, k_bounds = jax.random.split(key)``: the run, then the bounds'
        held-out splits and tie-breaking).
      model: a flax module; init_params: its parameters (``model.init``'s format), θ_0.
      data: (inputs (N, ...), labels (N,)) = D⁻.
      config: :class:`jaxaudit.dpsgd.DpsgdConfig` (C, σ, η, T, q, the gradient path).
      audit: :class:`OneRunConfig` (m, kind, δ, confidence, Bonferroni rule).
      canaries: ``kind="input"`` only: (inputs (m, ...), labels (m,)) of the m canaries.

    Returns:
      :class:`OneRunAudit`.

    Raises:
      ValueError: bad arguments (m below :data:`MIN_CANARIES` among them), a traced one, or
        fewer than 8 canaries in one world (probability 2.1e-7 at m = 50; another key or a
        larger m).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxaudit.dpsgd import DpsgdConfig, LogisticRegression, OneRunConfig, one_run_audit
      >>> model = LogisticRegression(num_classes=2)
      >>> x = jax.random.normal(jax.random.key(1), (32, 3)); y = (x[:, 0] > 0).astype(int)
      >>> params = model.init(jax.random.key(0), x[:1])
      >>> res = one_run_audit(jax.random.key(2), model, params, (x, y),
      ...                     DpsgdConfig(1.0, 2.0, 0.5, steps=10), OneRunConfig(200))
      >>> bool(0.0 <= res.bounds.one_run <= res.accountant_epsilon)
      True
    """
    from jaxaudit.renyi.score_bounds import epsilon_lower_bounds

    for name, value in (("key", key), ("init_params", init_params), ("data", data),
                        ("config", config), ("canaries", canaries)):
        if is_traced(value):
            raise ValueError(f"{name} is traced: one_run_audit runs on the host; inside jax.jit "
                             "or jax.vmap call jaxaudit.dpsgd.one_run.one_run_scores")
    check_key("key", key)
    config = check_dpsgd_config(config)
    audit = _check_audit(audit)
    inputs, labels = (np.asarray(a) for a in data)
    check_finite("data inputs", inputs)
    if labels.ndim != 1 or labels.shape[0] != inputs.shape[0] or labels.shape[0] < 1:
        raise ValueError(f"data labels must have shape ({inputs.shape[0]},), got {labels.shape}")
    check_labels("data labels", labels, getattr(model, "num_classes", None))
    _check_canaries(model, inputs, audit.kind, audit.num_canaries, canaries)
    k_run, k_bounds = jax.random.split(key)
    scores, included = _jitted_scores(k_run, model, init_params, (inputs, labels), config,
                                      num_canaries=audit.num_canaries, kind=audit.kind,
                                      canaries=canaries)
    scores, included = np.asarray(scores), np.asarray(included, bool)
    n_in = int(included.sum())
    if min(n_in, included.size - n_in) < _MIN_PER_WORLD:
        raise ValueError(f"the coins included {n_in} of {included.size} canaries: the bounds "
                         f"need at least {_MIN_PER_WORLD} in each world (fair coins leave fewer "
                         f"with probability 2·P[Bin(m, 1/2) < {_MIN_PER_WORLD}], 2.1e-7 at m = "
                         f"{MIN_CANARIES}); use another key or raise num_canaries")
    bounds = epsilon_lower_bounds(k_bounds, scores[included], scores[~included],
                                  delta=audit.delta, confidence=audit.confidence,
                                  bonferroni=audit.bonferroni, inclusion="coin")
    eps = (float("inf") if config.noise_multiplier == 0.0 else accountant_epsilon(
        noise_multiplier=config.noise_multiplier, sampling_rate=config.sampling_rate,
        steps=config.steps, delta=audit.delta))
    return OneRunAudit(scores, included, bounds, eps)
