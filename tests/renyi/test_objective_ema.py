"""DV objective, log-mean-exp and the log-space EMA surrogate (jaxaudit.renyi.objective/ema)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from jaxaudit.renyi import dv_objective, dv_surrogate_loss, ema_log_mean_exp, gaussian_renyi
from jaxaudit.renyi.ema import dv_ema_init, ema_surrogate
from jaxaudit.renyi.objective import log_mean_exp


def test_log_mean_exp_matches_scipy_and_does_not_overflow():
    x = np.random.default_rng(0).normal(size=(7, 5)) * 30
    np.testing.assert_allclose(log_mean_exp(jnp.asarray(x, jnp.float32), axis=0),
                               special.logsumexp(x, axis=0) - np.log(7), rtol=1e-5)
    np.testing.assert_allclose(log_mean_exp(jnp.asarray(x)), special.logsumexp(x) - np.log(35),
                               rtol=1e-5)
    big = jnp.full((4,), 500.0, jnp.float32)
    assert float(log_mean_exp(big)) == pytest.approx(500.0)


def _population_j(g, alpha, shift):
    """J_α(g) for Q = N(shift, 1), P = N(0, 1) by quadrature (float64)."""
    a = integrate.quad(lambda x: stats.norm.pdf(x, shift) * np.exp((alpha - 1) * g(x)), -40, 40,
                       limit=200)[0]
    b = integrate.quad(lambda x: stats.norm.pdf(x) * np.exp(alpha * g(x)), -40, 40, limit=200)[0]
    return alpha / (alpha - 1) * np.log(a) - np.log(b)


@pytest.mark.parametrize("alpha", [1.25, 2.0, 4.0])
def test_variational_formula_in_rdp_units(alpha):
    shift = 1.3
    truth = alpha * shift**2 / 2
    assert float(gaussian_renyi(shift, 1.0, alpha)) == pytest.approx(truth, rel=1e-6)
    optimum = lambda x: shift * x - shift**2 / 2 + 0.7  # log dQ/dP + c
    assert _population_j(optimum, alpha, shift) == pytest.approx(truth, rel=1e-7)
    # Any other g stays below D_α (the property that makes held-out estimates valid).
    for g in (lambda x: np.sin(x), lambda x: 0.5 * shift * x, lambda x: np.clip(3 * x, -2, 2)):
        assert _population_j(g, alpha, shift) < truth


def test_dv_objective_monte_carlo_and_shift_invariance():
    k1, k2 = jax.random.split(jax.random.key(0))
    shift, alpha = 0.8, 2.0
    x_q = shift + jax.random.normal(k1, (400_000,))
    x_p = jax.random.normal(k2, (400_000,))
    g = lambda x: shift * x
    value = float(dv_objective(g(x_q), g(x_p), alpha))
    # Monte Carlo tolerance: relative sd of e^{αg} under P is sqrt(e^{α²Δ²} − 1) ≈ 2.3 → 0.4%·5.
    assert value == pytest.approx(alpha * shift**2 / 2, rel=0.03)
    shifted = float(dv_objective(g(x_q) + 3.7, g(x_p) + 3.7, alpha))
    assert shifted == pytest.approx(value, abs=2e-5)


def test_ema_update_averages_in_log_space():
    ema = ema_log_mean_exp(0.25)
    state = ema.init()
    log_ema, state = ema.update(jnp.log(jnp.array([1.0, 3.0])), state)   # first: mean = 2
    assert float(jnp.exp(log_ema)) == pytest.approx(2.0)
    log_ema, state = ema.update(jnp.log(jnp.array([6.0])), state)       # 0.75·2 + 0.25·6 = 3
    assert float(jnp.exp(log_ema)) == pytest.approx(3.0, rel=1e-6)
    assert int(state.count) == 2


def test_surrogate_gradient_equals_corrected_gradient():
    rng = np.random.default_rng(1)
    feats = jnp.asarray(rng.normal(size=(16, 3)), jnp.float32)
    theta = jnp.asarray([0.3, -1.2, 0.8], jnp.float32)
    log_ema = jnp.float32(0.9)
    grad = jax.grad(lambda t: ema_surrogate(feats @ t, log_ema))(theta)
    x = np.asarray(feats, np.float64) @ np.asarray(theta, np.float64)
    analytic = (np.exp(x)[:, None] * np.asarray(feats, np.float64)).sum(0) / (16 * np.exp(0.9))
    np.testing.assert_allclose(grad, analytic, rtol=1e-5)
    value = ema_surrogate(feats @ theta, log_ema)
    assert float(value) == pytest.approx(special.logsumexp(x) - np.log(16), rel=1e-6)


def _features_and_critic():
    rng = np.random.default_rng(2)
    f_q = jnp.asarray(rng.normal(size=(32, 4)), jnp.float32)
    f_p = jnp.asarray(rng.normal(size=(48, 4)), jnp.float32)
    return f_q, f_p


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.5, 3.0])
def test_rate_one_is_the_plain_gradient(alpha):
    f_q, f_p = _features_and_critic()
    theta = jnp.asarray([0.5, -0.2, 0.1, 0.9], jnp.float32)
    plain = jax.grad(lambda t: -dv_objective(f_q @ t, f_p @ t, alpha))(theta)
    state = dv_ema_init()
    # Several steps with rate 1: the state never matters.
    for _ in range(3):
        (loss, state), grad = jax.value_and_grad(
            lambda t, s: dv_surrogate_loss(f_q @ t, f_p @ t, alpha, s, 1.0), has_aux=True
        )(theta, state)
        np.testing.assert_allclose(grad, plain, rtol=2e-5, atol=1e-6)
        assert float(loss) == pytest.approx(-float(dv_objective(f_q @ theta, f_p @ theta, alpha)),
                                            rel=1e-6)


def test_ema_gradient_uses_the_moving_average():
    f_q, f_p = _features_and_critic()
    alpha, rate = 2.0, 0.1
    theta0 = jnp.asarray([0.1, 0.1, 0.1, 0.1], jnp.float32)
    theta1 = jnp.asarray([0.6, -0.4, 0.3, 0.2], jnp.float32)
    state = dv_ema_init()
    _, state = dv_surrogate_loss(f_q @ theta0, f_p @ theta0, alpha, state, rate)
    grad = jax.grad(lambda t: dv_surrogate_loss(f_q @ t, f_p @ t, alpha, state, rate)[0])(theta1)
    # Analytic corrected gradient in float64.
    fq, fp = np.asarray(f_q, np.float64), np.asarray(f_p, np.float64)
    t0, t1 = np.asarray(theta0, np.float64), np.asarray(theta1, np.float64)
    lme = lambda x: special.logsumexp(x) - np.log(x.size)
    ema_q = np.exp(np.logaddexp(np.log(0.9) + lme((alpha - 1) * fq @ t0),
                                np.log(0.1) + lme((alpha - 1) * fq @ t1)))
    ema_p = np.exp(np.logaddexp(np.log(0.9) + lme(alpha * fp @ t0),
                                np.log(0.1) + lme(alpha * fp @ t1)))
    g_q = (np.exp((alpha - 1) * fq @ t1)[:, None] * (alpha - 1) * fq).mean(0) / ema_q
    g_p = (np.exp(alpha * fp @ t1)[:, None] * alpha * fp).mean(0) / ema_p
    np.testing.assert_allclose(grad, -(alpha / (alpha - 1) * g_q - g_p), rtol=2e-5)


def test_no_overflow_at_alpha_m_200_in_float32():
    alpha, bound = 10.0, 20.0  # α·M = 200: e^{200} overflows float32
    f_q, f_p = _features_and_critic()
    theta = jnp.asarray([3.0, -2.0, 1.0, 4.0], jnp.float32)
    crit = lambda f, t: bound * jnp.tanh(f @ t / bound)
    state = dv_ema_init(jnp.float32)
    (loss, state), grad = jax.value_and_grad(
        lambda t, s: dv_surrogate_loss(crit(f_q, t), crit(f_p, t), alpha, s, 0.5), has_aux=True
    )(theta, state)
    assert np.isfinite(float(loss)) and np.all(np.isfinite(np.asarray(grad)))
    assert np.isfinite(float(state.p.log_ema)) and float(state.p.log_ema) > 100
    # And it equals the plain gradient computed analytically in float64 (softmax weights; first
    # update: the EMA is the batch value).
    fq, fp, t = (np.asarray(a, np.float64) for a in (f_q, f_p, theta))
    hq, hp = fq @ t, fp @ t
    gq, gp = bound * np.tanh(hq / bound), bound * np.tanh(hp / bound)
    dq = (1 - np.tanh(hq / bound) ** 2)[:, None] * fq   # ∂g/∂θ
    dp = (1 - np.tanh(hp / bound) ** 2)[:, None] * fp
    wq = special.softmax((alpha - 1) * gq)
    wp = special.softmax(alpha * gp)
    plain = -(alpha / (alpha - 1) * (alpha - 1) * wq @ dq - alpha * wp @ dp)
    lme = lambda x: special.logsumexp(x) - np.log(x.size)
    loss64 = -(alpha / (alpha - 1) * lme((alpha - 1) * gq) - lme(alpha * gp))
    np.testing.assert_allclose(grad, plain, rtol=1e-4, atol=1e-6)
    assert float(loss) == pytest.approx(loss64, rel=1e-5)


def test_surrogate_is_shift_invariant():
    f_q, f_p = _features_and_critic()
    theta = jnp.asarray([0.4, 0.3, -0.5, 0.2], jnp.float32)
    for rate in (1.0, 0.2):
        def grad_at(c, rate=rate):
            state = dv_ema_init()
            _, state = dv_surrogate_loss(f_q @ theta * 0.5 + c, f_p @ theta * 0.5 + c, 2.0,
                                         state, rate)
            return jax.grad(lambda t: dv_surrogate_loss(f_q @ t + c, f_p @ t + c, 2.0, state,
                                                        rate)[0])(theta)
        np.testing.assert_allclose(grad_at(0.0), grad_at(25.0), rtol=1e-4, atol=1e-5)
