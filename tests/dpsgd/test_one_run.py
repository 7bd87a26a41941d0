"""The one-run audit of DP-SGD (Steinke, Nasr, Jagielski, arXiv 2305.08846): one training run,
m canaries included by fair coins, the score-based bounds beside the accountant."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from jaxaudit.dpsgd import DpsgdConfig, LogisticRegression, OneRunConfig, one_run_audit
from jaxaudit.dpsgd.one_run import one_run_scores
from jaxaudit.renyi import epsilon_lower_bounds
from jaxaudit.renyi.score_bounds import one_run_bounds

MODEL = LogisticRegression(num_classes=2)
X = jax.random.normal(jax.random.key(1), (16, 3))
Y = (X[:, 0] > 0).astype(jnp.int32)
PARAMS = MODEL.init(jax.random.key(0), X[:1])


def _gdp_epsilon(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP (Dong, Roth, Su 2019, Corollary 2.13), solved with scipy: an independent
    reference of the exact privacy of full-batch DP-GD on a Dirac canary."""
    def gap(eps: float) -> float:
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)
    return float(optimize.brentq(gap, 0.0, 100.0))


@pytest.mark.slow
def test_gradient_canaries_without_noise_are_the_dirac_sum_and_give_a_large_bound():
    lr, steps, clip = 0.5, 4, 2.0
    config = DpsgdConfig(clip, 0.0, lr, steps=steps)
    res = one_run_audit(jax.random.key(3), MODEL, PARAMS, (X, Y), config, OneRunConfig(1000))
    # σ = 0: canary j's coordinate moves by (η/n̄)·T·C when included, not at all otherwise
    expected = np.where(res.included, lr * steps * clip / X.shape[0], 0.0)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-6, atol=1e-7)
    assert 400 < res.included.sum() < 600
    assert res.accountant_epsilon == np.inf
    assert res.bounds.one_run > 3.0  # perfect separation of m = 1000 canaries
    # the bounds are epsilon_lower_bounds on (included, excluded) with the audit's m (fair coins)
    again = epsilon_lower_bounds(jax.random.split(jax.random.key(3))[1],
                                 res.scores[res.included], res.scores[~res.included], delta=1e-5,
                                 inclusion="coin")
    assert float(again.one_run) == float(res.bounds.one_run)
    assert float(again.fdp_one_run) == float(res.bounds.fdp_one_run)


@pytest.mark.slow
def test_gradient_canaries_under_huge_noise_give_a_bound_near_zero():
    config = DpsgdConfig(1.0, 1000.0, 0.5, steps=4)
    res = one_run_audit(jax.random.key(4), MODEL, PARAMS, (X, Y), config, OneRunConfig(200))
    assert res.bounds.one_run < 0.1
    assert 0.0 < res.accountant_epsilon < 0.1


@pytest.mark.slow
def test_input_canaries_one_run_in_the_batch():
    m = 50   # dpsgd.one_run.MIN_CANARIES
    cx = jax.random.normal(jax.random.key(5), (m, 3))
    cy = jax.random.randint(jax.random.key(6), (m,), 0, 2)
    config = DpsgdConfig(1.0, 1.0, 0.5, steps=3, sampling_rate=0.5)
    res = one_run_audit(jax.random.key(7), MODEL, PARAMS, (X, Y), config,
                        OneRunConfig(m, kind="input"), canaries=(cx, cy))
    assert res.scores.shape == (m,) and res.included.shape == (m,)
    assert np.all(res.scores <= 0.0)  # −CE
    assert 0.0 <= res.bounds.one_run <= res.accountant_epsilon
    with pytest.raises(ValueError, match="canaries"):
        one_run_audit(jax.random.key(7), MODEL, PARAMS, (X, Y), config,
                      OneRunConfig(m, kind="input"))
    with pytest.raises(ValueError, match="audit.kind"):
        one_run_audit(jax.random.key(7), MODEL, PARAMS, (X, Y), config,
                      OneRunConfig(m, kind="label"))


@pytest.mark.slow
def test_one_run_scores_traces_under_jit_and_vmap():
    def scores(key, sigma):
        return one_run_scores(key, MODEL, PARAMS, (X, Y), DpsgdConfig(1.0, sigma, 0.5, steps=2),
                              num_canaries=20)
    keys = jax.random.split(jax.random.key(8), 3)
    s, inc = jax.jit(jax.vmap(scores, in_axes=(0, None)))(keys, jnp.float32(1.0))
    assert s.shape == (3, 20) and inc.dtype == jnp.bool_
    s0, inc0 = scores(keys[0], 1.0)
    np.testing.assert_allclose(s[0], s0, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(inc[0], inc0)


@pytest.mark.slow
def test_one_run_bound_covers_the_exact_epsilon():
    """Over N independent one-run audits of full-batch DP-GD with gradient canaries, the one-run
    bound exceeds the exact ε (μ-GDP, μ = √T/σ, below the accountant's ε) no more often than
    1 − confidence: the count must not be significant under Bin(N, 1 − confidence) at 10⁻³."""
    n_audits, m, steps, sigma, delta, confidence = 40, 1000, 4, 1.0, 1e-5, 0.8
    config = DpsgdConfig(1.0, sigma, 0.5, steps=steps)
    run = jax.jit(jax.vmap(lambda k: one_run_scores(k, MODEL, PARAMS, (X, Y), config,
                                                    num_canaries=m)))
    scores, included = (np.asarray(a) for a in run(jax.random.split(jax.random.key(9),
                                                                      n_audits)))
    exact = _gdp_epsilon(np.sqrt(steps) / sigma, delta)
    res = one_run_audit(jax.random.key(10), MODEL, PARAMS, (X, Y), config,
                        OneRunConfig(m, delta=delta, confidence=confidence))
    assert exact < res.accountant_epsilon
    bounds = np.array([one_run_bounds(s[i], s[~i], delta, confidence=confidence)[0]
                       for s, i in zip(scores, included, strict=True)])
    above = int(np.sum(bounds > exact))
    assert stats.binom.sf(above - 1, n_audits, 1 - confidence) > 1e-3, (above, exact, bounds)
    assert np.median(bounds) > 0.5  # and the audit is not vacuous
