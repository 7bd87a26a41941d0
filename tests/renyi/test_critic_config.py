"""CriticConfig: our default critic and Kim et al.'s (PAPER_CRITIC_CONFIG), and its EMA at work."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.renyi import PAPER_CRITIC_CONFIG, CriticConfig, dv_objective, train_critic
from jaxaudit.renyi.training import check_config, make_critic


def _gaussian_scores(seed, n, shift=1.0):
    k_q, k_p = jax.random.split(jax.random.key(seed))
    return shift + jax.random.normal(k_q, (n,)), jax.random.normal(k_p, (n,))


def test_paper_config_is_valid_and_is_the_papers_architecture():
    config = check_config(PAPER_CRITIC_CONFIG)
    assert config.hidden_dims == (100, 100) and config.batch_size == 400
    assert config.ema_rate is not None and config.ema_rate < 1  # the EMA is on
    critic = make_critic(config)
    x = jnp.linspace(-3.0, 3.0, 7)[:, None]
    variables = critic.init(jax.random.key(0), x)
    kernels = [v["kernel"].shape for v in variables["params"].values()]
    assert kernels == [(1, 100), (100, 100), (100, 1)]


@pytest.mark.slow
def test_paper_config_trains_on_small_gaussian_scores():
    # Q = N(1, 1), P = N(0, 1), D_2 = 1. Train on 600 per world; evaluate the fixed critic on
    # 20,000 fresh draws per world (Monte Carlo SE of J_2 below 0.05 for this smooth g).
    x_q, x_p = _gaussian_scores(0, 600)
    variables, history = train_critic(jax.random.key(1), x_q, x_p, 2.0, PAPER_CRITIC_CONFIG)
    critic = make_critic(PAPER_CRITIC_CONFIG)
    f_q, f_p = _gaussian_scores(2, 20_000)
    j = float(dv_objective(critic.apply(variables, f_q[:, None]),
                           critic.apply(variables, f_p[:, None]), 2.0))
    assert 0.5 < j < 1.0 + 0.15  # learnt most of D_2, and J_α(g) ≤ D_α for a fixed g
    assert history.objective.shape == (PAPER_CRITIC_CONFIG.steps,)
    assert int(history.best_step) == PAPER_CRITIC_CONFIG.steps  # final parameters, no selection


@pytest.mark.slow
def test_paper_config_ema_is_active_on_minibatches():
    x_q, x_p = _gaussian_scores(3, 1000)
    config = PAPER_CRITIC_CONFIG._replace(steps=20)
    key = jax.random.key(4)
    variables, ema = train_critic(key, x_q, x_p, 2.0, config)
    plain_vars, plain = train_critic(key, x_q, x_p, 2.0, config._replace(ema_rate=1.0))
    b = config.ema_rate
    log_ema, plain_ema = np.asarray(ema.log_ema, np.float64), np.asarray(plain.log_ema, np.float64)
    # Same key: same minibatches and the same first step (the EMA starts at the batch value).
    np.testing.assert_allclose(log_ema[0], plain_ema[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ema.objective[:2], plain.objective[:2], rtol=1e-5, atol=1e-6)
    # Step 2 sees the same parameters, so with rate 1 the row is that batch's log-mean-exp and
    # the EMA row is log((1 − b) e^{row 1} + b e^{batch}): the average is in use.
    expected = np.logaddexp(np.log1p(-b) + plain_ema[0], np.log(b) + plain_ema[1])
    np.testing.assert_allclose(log_ema[1], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(log_ema[1], plain_ema[1], rtol=0, atol=1e-6)
    # The state changes across steps, and the corrected gradient moves the critic elsewhere.
    assert np.ptp(log_ema, axis=0).min() > 0
    diffs = jax.tree.map(lambda a, c: float(jnp.max(jnp.abs(a - c))), variables["params"],
                         plain_vars["params"])
    assert max(jax.tree.leaves(diffs)) > 1e-6


@pytest.mark.slow
def test_default_config_is_full_batch_without_ema():
    # Rate 1 on the full batch: each logged average is the plain log-mean-exp, so the logged
    # objective is exactly α/(α−1)·lme((α−1)g_q) − lme(α g_p) of those rows.
    config = CriticConfig(steps=30, validation_fraction=0.0)
    assert config.batch_size is None and config.ema_rate is None
    x_q, x_p = _gaussian_scores(5, 300)
    _, history = train_critic(jax.random.key(6), x_q, x_p, 2.0, config)
    log_ema = np.asarray(history.log_ema, np.float64)
    np.testing.assert_allclose(history.objective, 2.0 * log_ema[:, 0] - log_ema[:, 1],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("field, value", [("ema_rate", 0.0), ("batch_size", 0),
                                          ("hidden_dims", (100, 0)), ("learning_rate", -1e-4)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"config.{field}"):
        check_config(PAPER_CRITIC_CONFIG._replace(**{field: value}))
