"""attack_statistic: the one entry for LiRA (online, offline) and RMIA; offline LiRA against
numpy loops; leave-one-out; refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import spearmanr

from jaxaudit.mia import (
    ATTACKS,
    attack_statistic,
    bayes_decision,
    lira_loo,
    lira_offline,
    rmia,
    roc_auc,
)


def _planted(key, num_models, num_nodes, shift):
    k_mask, k_node, k_noise = jax.random.split(key, 3)
    masks = jax.random.bernoulli(k_mask, 0.5, (num_models, num_nodes))
    difficulty = 2.0 * jax.random.normal(k_node, (num_nodes,))
    scores = difficulty + shift * masks + jax.random.normal(k_noise, (num_models, num_nodes))
    return scores, masks


def test_attacks_listed():
    assert ATTACKS == ("lira", "lira_offline", "rmia")


@pytest.mark.parametrize("fix_variance", [False, True])
def test_lira_is_lira_loo(fix_variance):
    scores, masks = _planted(jax.random.key(0), 9, 13, 1.0)
    np.testing.assert_array_equal(
        attack_statistic(scores, masks, attack="lira", fix_variance=fix_variance),
        lira_loo(scores, masks, fix_variance=fix_variance))
    np.testing.assert_array_equal(attack_statistic(scores, masks), lira_loo(scores, masks))


@pytest.mark.slow
def test_other_attacks_are_their_functions():
    scores, masks = _planted(jax.random.key(1), 7, 9, 1.0)
    np.testing.assert_array_equal(attack_statistic(scores, masks, attack="lira_offline"),
                                  lira_offline(scores, masks))
    np.testing.assert_array_equal(
        attack_statistic(scores, masks, attack="rmia", gamma=2.0, a=0.3, calibration="global"),
        rmia(scores, masks, gamma=2.0, a=0.3, calibration="global"))


def _offline_reference(scores, masks, fix_variance):
    """Offline LiRA from its definition, in float64 loops (docstring of lira_offline)."""
    s, m = np.asarray(scores, np.float64), np.asarray(masks)
    num_models, num_nodes = s.shape
    out = np.zeros_like(s)

    def z_row(k, excluded):
        refs = [q for q in range(num_models) if q != k and q not in excluded]
        groups = [s[refs, i][~m[refs, i]] for i in range(num_nodes)]
        dof = sum(g.size - 1 for g in groups if g.size >= 2)
        pool = sum((g.size - 1) * g.var(ddof=1) for g in groups if g.size >= 2) / dof
        var = [pool if fix_variance or g.size < 2 else g.var(ddof=1) for g in groups]
        return np.array([(s[k, i] - groups[i].mean()) / np.sqrt(max(var[i], 1e-6))
                         for i in range(num_nodes)])

    for r in range(num_models):
        z = np.array([z_row(k, (r,)) for k in range(num_models)])
        others = [q for q in range(num_models) if q != r]
        z_in, z_out = z[others][m[others]], z[others][~m[others]]
        var = (((z_in - z_in.mean()) ** 2).sum() + ((z_out - z_out.mean()) ** 2).sum()) / (
            z_in.size + z_out.size - 2)
        out[r] = (z_in.mean() - z_out.mean()) / var * (z[r] - 0.5 * (z_in.mean() + z_out.mean()))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fix_variance", [False, True])
def test_lira_offline_matches_numpy_loops(fix_variance):
    # every node keeps >= 2 OUT references whichever two models are left out
    masks = jax.random.bernoulli(jax.random.key(2), 0.5, (8, 10)).at[:4].set(False)
    scores = 2.0 * masks + jax.random.normal(jax.random.key(3), (8, 10))
    got = np.asarray(lira_offline(scores, masks, fix_variance=fix_variance))
    np.testing.assert_allclose(got, _offline_reference(scores, masks, fix_variance),
                               rtol=1e-4, atol=1e-4)


def test_lira_offline_ranks_like_the_out_z_score():
    # the linear calibration keeps offline LiRA's ranking within each target model
    # >= 2 OUT references per node for every target: models 0-2 hold no node
    masks = jax.random.bernoulli(jax.random.key(4), 0.5, (16, 40)).at[:3].set(False)
    scores = 2.0 * masks + jax.random.normal(jax.random.key(14), (16, 40))
    stat = np.asarray(lira_offline(scores, masks))
    s, m = np.asarray(scores, np.float64), np.asarray(masks)
    for r in range(16):
        others = [q for q in range(16) if q != r]
        z = [(s[r, i] - s[others, i][~m[others, i]].mean()) / s[others, i][~m[others, i]].std(
            ddof=1) for i in range(40)]
        assert spearmanr(stat[r], z).statistic == pytest.approx(1.0)


@pytest.mark.parametrize("attack", ATTACKS)
def test_row_r_never_uses_model_r_membership(attack):
    scores, masks = _planted(jax.random.key(5), 7, 9, 1.0)
    base = np.asarray(attack_statistic(scores, masks, attack=attack))
    for r in (0, 4):
        flipped = masks.at[r].set(~masks[r])
        # equal up to float32 round-off of the moment sums (whole sums minus row r)
        np.testing.assert_allclose(
            np.asarray(attack_statistic(scores, flipped, attack=attack))[r], base[r],
            rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS)
def test_bayes_decision_beats_chance_on_planted_leak(attack):
    # per node IN ~ N(d + 1.5, 1), OUT ~ N(d, 1): the Bayes error at η = ½ is Φ(−0.75) = 0.23;
    # "member iff Λ > 0" must be far below chance (0.5) on 24 × 100 decisions (s.e. ≈ 0.01)
    scores, masks = _planted(jax.random.key(6), 24, 100, 1.5)
    stat = attack_statistic(scores, masks, attack=attack)
    error = float(jnp.mean(bayes_decision(stat, 0.5) != masks))
    assert error < 0.32, (attack, error)
    assert float(roc_auc(stat, masks)) > 0.75


@pytest.mark.slow
def test_jit_and_vmap():
    scores, masks = _planted(jax.random.key(7), 7, 9, 1.0)
    f = jax.jit(lambda s, m: attack_statistic(s, m, attack="lira_offline"))
    np.testing.assert_allclose(f(scores, masks), lira_offline(scores, masks), rtol=1e-5,
                               atol=1e-5)
    batch = jax.vmap(lambda s: attack_statistic(s, masks, attack="lira_offline"))(
        jnp.stack([scores, 2 * scores]))
    np.testing.assert_allclose(batch[1], lira_offline(2 * scores, masks), rtol=1e-4, atol=1e-4)
    grad = jax.grad(lambda s: lira_offline(s, masks)[0, 0])(scores)
    assert bool(jnp.all(jnp.isfinite(grad)))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"attack": "LiRA"}, "attack"), ({"attack": None}, "attack"),
    ({"attack": "lira", "gamma": 2.0}, "gamma"), ({"attack": "rmia", "delta": 0.1}, "delta"),
    ({"attack": "rmia", "fix_variance": 1}, "fix_variance"),
    ({"attack": "rmia", "a": 2.0}, "a must"),
])
def test_bad_arguments_are_refused_by_name(kwargs, match):
    scores, masks = _planted(jax.random.key(8), 4, 6, 1.0)
    with pytest.raises(ValueError, match=match):
        attack_statistic(scores, masks, **kwargs)


def test_lira_offline_refuses_bad_input():
    scores, masks = _planted(jax.random.key(9), 4, 6, 1.0)
    with pytest.raises(ValueError, match="at least 3 models"):
        lira_offline(scores[:2], masks[:2])
    with pytest.raises(ValueError, match="scores"):
        lira_offline(scores.at[1, 1].set(jnp.nan), masks)
    with pytest.raises(ValueError, match="masks"):
        lira_offline(scores, masks.T)
