"""Canary runs (one vmapped call == individual runs), the audit on a known Gaussian mechanism, and
an MNIST smoke test of every stage."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxaudit.accounting import RdpCurve, rdp_epsilons
from jaxaudit.datasets import load_mnist
from jaxaudit.dpsgd import (
    MLP,
    DpsgdAudit,
    DpsgdConfig,
    LogisticRegression,
    SmallCNN,
    audit_dpsgd,
    blank_canary,
    canary_runs,
    pretrain,
    train_run,
    worst_case_label,
)


def _curve(orders, sigma, steps):
    """The full-batch accountant's add/remove RDP curve, the guarantee the audit checks."""
    orders = np.asarray(orders, np.float64)
    return RdpCurve(orders, rdp_epsilons(orders=orders, noise_multiplier=sigma,
                                         sampling_rate=1.0, steps=steps), "add_remove")


@pytest.mark.slow
def test_vmapped_runs_equal_individual_runs():
    model = MLP(hidden_dims=(6,), num_classes=3)
    kx, ky, kp, kr = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(kx, (7, 5))
    y = jax.random.randint(ky, (7,), 0, 3)
    params = model.init(kp, x[:1])
    canary = (jnp.zeros(5), 1)
    cfg = DpsgdConfig(noise_multiplier=0.7, clip_norm=0.5, steps=4, learning_rate=0.4)
    r = 3
    # chunk_size=4 over 2R = 6 runs: two chunks, the second padded
    in_s, out_s = canary_runs(kr, model, params, (x, y), canary, cfg, num_runs=r, chunk_size=4)
    assert in_s.shape == out_s.shape == (r,)
    keys = jax.random.split(kr, 2 * r)
    for i in range(r):
        a = train_run(keys[i], model, params, (x, y), canary, cfg, include_canary=True)
        b = train_run(keys[r + i], model, params, (x, y), canary, cfg, include_canary=False)
        np.testing.assert_allclose(in_s[i], a, rtol=1e-5)
        np.testing.assert_allclose(out_s[i], b, rtol=1e-5)
    assert len(np.unique(np.concatenate([in_s, out_s]))) == 2 * r  # runs use distinct noise


@pytest.mark.slow
def test_audit_on_gaussian_mechanism_run_stays_below_truth():
    """One full-batch step of a zero-initialised 2-class logistic regression whose canary gradient
    is clipped: the canary's logit margin is exactly N(m + s/σ·…, s²) in vs N(m, s²) out, i.e.
    the Gaussian mechanism with μ = 1/σ, whose ε_α = α/(2σ²) equals the accountant's."""
    model = LogisticRegression(num_classes=2)
    params = jax.tree.map(jnp.zeros_like, model.init(jax.random.key(1), jnp.zeros((1, 1))))
    x, y = jnp.array([[0.3]]), jnp.array([0])
    sigma = 1.0
    in_s, out_s = canary_runs(jax.random.key(2), model, params, (x, y), (jnp.array([1.0]), 1),
                              DpsgdConfig(noise_multiplier=sigma, clip_norm=0.1, steps=1,
                                          learning_rate=1.0), num_runs=2000)
    # the score is log p; its logit is the Gaussian statistic
    li, lo = (s - np.log1p(-np.exp(s.astype(np.float64))) for s in (in_s, out_s))
    pooled = np.sqrt((li.var() + lo.var()) / 2)
    assert abs((li.mean() - lo.mean()) / pooled - 1 / sigma) < 5 * np.sqrt(2 / 2000)
    assert stats.levene(li, lo).pvalue > 1e-3  # same spread in both worlds
    orders = [1.5, 2.0, 3.0]
    audit = audit_dpsgd(jax.random.key(3), in_s, out_s, _curve(orders, sigma, 1))
    assert isinstance(audit, DpsgdAudit) and audit.order.shape == (3,)
    for rec, a in zip(audit.per_order(), orders):
        truth = a / (2 * sigma**2)
        assert rec.order == a
        np.testing.assert_allclose(rec.accountant, truth, rtol=1e-9)
        assert rec.dv_lower <= truth and rec.gdp_lower <= truth and rec.threshold_lower <= truth
        assert not rec.violation
        assert rec.dv_point > 0.4 * truth  # informative at 10^3 held-out runs
        assert rec.dv_lower > 0  # 2000 runs per world give a non-vacuous bound here


@pytest.mark.slow
def test_audit_flags_a_violation():
    """Scores of a mechanism far less private than claimed: the audit must say so."""
    k1, k2 = jax.random.split(jax.random.key(4))
    in_s = np.asarray(4.0 + jax.random.normal(k1, (1000,)))
    out_s = np.asarray(jax.random.normal(k2, (1000,)))
    rec = audit_dpsgd(jax.random.key(5), in_s, out_s, _curve([2.0], 10.0, 1)).per_order()[0]
    assert rec.accountant == pytest.approx(0.01)
    assert rec.violation and rec.dv_lower > rec.accountant


def test_audit_bad_input():
    s = np.zeros(10)
    acc = _curve([2.0], 1.0, 1)
    with pytest.raises(ValueError, match="orders"):
        audit_dpsgd(jax.random.key(0), s, s, RdpCurve(np.array([1.0]), np.array([0.5]),
                                                       "add_remove"))
    with pytest.raises(TypeError, match="accountant"):
        audit_dpsgd(jax.random.key(0), s, s, {"noise_multiplier": 1.0})
    with pytest.raises(ValueError, match="accountant.relation"):
        audit_dpsgd(jax.random.key(0), s, s, RdpCurve(np.array([2.0]), np.array([0.5]),
                                                       "replace_one"))
    with pytest.raises(ValueError, match="in_scores"):
        audit_dpsgd(jax.random.key(0), s + np.nan, s, acc)


def test_canary_runs_bad_input():
    model = LogisticRegression(num_classes=2)
    x, y = jnp.ones((3, 2)), jnp.array([0, 1, 0])
    params = model.init(jax.random.key(0), x[:1])
    cfg = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=2, learning_rate=0.1)
    with pytest.raises(ValueError, match="canary input"):
        canary_runs(jax.random.key(0), model, params, (x, y), (jnp.zeros(3), 0), cfg, num_runs=2)
    with pytest.raises(ValueError, match="sampling_rate"):
        canary_runs(jax.random.key(0), model, params, (x, y), (jnp.zeros(2), 0),
                    cfg._replace(sampling_rate=0.0), num_runs=2)
    with pytest.raises(ValueError, match="num_runs"):
        canary_runs(jax.random.key(0), model, params, (x, y), (jnp.zeros(2), 0), cfg, num_runs=0)
    with pytest.raises(TypeError, match="DpsgdConfig"):
        canary_runs(jax.random.key(0), model, params, (x, y), (jnp.zeros(2), 0),
                    dict(cfg._asdict()), num_runs=2)


@pytest.mark.slow
@pytest.mark.needs_data("mnist")
def test_mnist_smoke_every_stage():
    images, labels = load_mnist(split="test")
    x = images.astype(np.float32) / 255.0
    model = SmallCNN()
    init = pretrain(jax.random.key(0), model, x[1000:1256], labels[1000:1256], steps=10,
                    batch_size=32)
    canary = blank_canary((28, 28))
    label = worst_case_label(model, init, canary)
    logits = model.apply(init, canary[None])[0]
    assert label == int(np.argmin(logits)) and 0 <= label < 10
    sigma, steps = 2.0, 3
    in_s, out_s = canary_runs(jax.random.key(1), model, init, (x[:100], labels[:100]),
                              (canary, label),
                              DpsgdConfig(noise_multiplier=sigma, clip_norm=1.0, steps=steps,
                                          learning_rate=0.5), num_runs=4)
    assert in_s.shape == out_s.shape == (4,)
    assert np.isfinite(in_s).all() and (in_s <= 0).all() and (out_s <= 0).all()  # −CE ≤ 0
    records = audit_dpsgd(jax.random.key(2), in_s, out_s, _curve([1.5, 2.0], sigma, steps))
    for rec in records.per_order():
        np.testing.assert_allclose(rec.accountant, rec.order * steps / (2 * sigma**2), rtol=1e-9)
        assert np.isfinite([rec.dv_point, rec.dv_lower, rec.gdp_lower, rec.threshold_lower]).all()
        assert not rec.violation


def _auc(a, b):
    """Mann–Whitney AUC of a over b and its Hanley–McNeil standard error."""
    auc = np.mean(a[:, None] > b[None, :]) + 0.5 * np.mean(a[:, None] == b[None, :])
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    na, nb = len(a), len(b)
    se = np.sqrt((auc * (1 - auc) + (na - 1) * (q1 - auc**2) + (nb - 1) * (q2 - auc**2)) / (na * nb))
    return auc, se


@pytest.mark.slow
@pytest.mark.needs_data("mnist")
def test_worst_case_initialisation_is_more_distinguishable():
    """MLP on MNIST, C = 10 (canary gradient unclipped): from the pretrained initialisation the
    blank canary's worst-case label is nearly impossible and its gradient is about twice as large
    as from a random initialisation, so in/out canary scores separate better (higher AUC)."""
    images, labels = load_mnist(split="test")
    x = images.astype(np.float32) / 255.0
    model = MLP(hidden_dims=(32,))
    worst = pretrain(jax.random.key(0), model, x[5000:6000], labels[5000:6000], steps=300,
                     learning_rate=1e-2)
    random_init = model.init(jax.random.key(5), x[:1])
    canary = blank_canary((28, 28))
    cfg = DpsgdConfig(noise_multiplier=0.5, clip_norm=10.0, steps=10, learning_rate=0.5)
    aucs = {}
    for name, params in (("worst", worst), ("random", random_init)):
        label = worst_case_label(model, params, canary)
        in_s, out_s = canary_runs(jax.random.key(1), model, params, (x[:50], labels[:50]),
                                  (canary, label), cfg, num_runs=200)
        aucs[name] = _auc(in_s, out_s)
    (a_w, se_w), (a_r, se_r) = aucs["worst"], aucs["random"]
    assert a_w > 0.5 and a_r > 0.5
    assert a_w - a_r > 1.5 * np.hypot(se_w, se_r), aucs


def test_canary_runs_refuses_bad_labels_nan_canary_and_inf_hyperparameters():
    """Hostile 5 and 6: labels outside [0, num_classes), fractional labels, a NaN canary, an
    infinite clip norm or learning rate were accepted (NaN or truncated training)."""
    model = LogisticRegression(num_classes=2)
    x, y = jnp.ones((3, 2)), jnp.array([0, 1, 0])
    params = model.init(jax.random.key(0), x[:1])
    cfg = DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=2, learning_rate=0.1)
    kw = dict(num_runs=2)
    key, canary = jax.random.key(0), (jnp.zeros(2), 0)
    with pytest.raises(ValueError, match=r"private_data labels must lie in \[0, num_classes=2\)"):
        canary_runs(key, model, params, (x, jnp.array([0, 2, 0])), canary, cfg, **kw)
    with pytest.raises(ValueError, match="private_data labels must be integer"):
        canary_runs(key, model, params, (x, jnp.array([0.0, 0.5, 1.0])), canary, cfg, **kw)
    with pytest.raises(ValueError, match="canary label must lie"):
        canary_runs(key, model, params, (x, y), (jnp.zeros(2), -1), cfg, **kw)
    with pytest.raises(ValueError, match="canary input must be finite"):
        canary_runs(key, model, params, (x, y), (jnp.array([0.0, jnp.nan]), 0), cfg, **kw)
    for name in ("clip_norm", "learning_rate", "noise_multiplier"):
        with pytest.raises(ValueError, match=f"config.{name} must be finite"):
            canary_runs(key, model, params, (x, y), canary,
                        cfg._replace(**{name: float("inf")}), **kw)
