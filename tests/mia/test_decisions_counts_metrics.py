"""Decisions, error counts and metrics against brute-force numpy/scipy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from jaxaudit.mia import (
    ErrorCounts,
    bayes_decision,
    error_counts,
    fixed_fpr_decision,
    membership_advantage,
    roc_auc,
    tpr_at_fpr,
)
from jaxaudit.mia.decisions import threshold_decision


def test_bayes_decision_is_posterior_above_half():
    llr = jnp.array([[-2.0, 0.1, 3.0, -jnp.inf, jnp.inf]])
    eta = jnp.array([0.9, 0.4, 0.05, 1.0, 0.0])
    d = np.asarray(bayes_decision(llr, eta))
    post = 1 / (1 + np.exp(-(np.array([-2.0, 0.1, 3.0]) + np.log(eta[:3] / (1 - eta[:3])))))
    assert list(d[0, :3]) == list(post > 0.5)
    assert d[0, 3] and not d[0, 4]  # η = 1 always member, η = 0 never
    with pytest.raises(ValueError, match="eta"):
        bayes_decision(llr, jnp.array([0.5, 0.5, 1.5, 0.5, 0.5]))


def test_error_counts_brute_force():
    key = jax.random.key(3)
    d = jax.random.bernoulli(key, 0.4, (20, 9))
    m = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.6, (20, 9))
    c = error_counts(d, m)
    assert isinstance(c, ErrorCounts)
    dn, mn = np.asarray(d), np.asarray(m)
    for i in range(9):
        assert c.fp[i] == sum(dn[r, i] and not mn[r, i] for r in range(20))
        assert c.fn[i] == sum((not dn[r, i]) and mn[r, i] for r in range(20))
        assert c.n0[i] == (~mn[:, i]).sum() and c.n1[i] == mn[:, i].sum()
    with pytest.raises(ValueError, match="masks"):
        error_counts(d, m[:, :3])


def test_roc_auc_matches_mann_whitney_with_ties():
    key = jax.random.key(4)
    scores = jnp.round(jax.random.normal(key, (300,)), 1)  # many ties
    labels = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.3, (300,))
    s, y = np.asarray(scores), np.asarray(labels)
    u = mannwhitneyu(s[y], s[~y]).statistic / (y.sum() * (~y).sum())
    assert float(roc_auc(scores, labels)) == pytest.approx(u, abs=1e-5)


def test_roc_auc_large_pooled_sample():
    # 2 x 60k scores: n1 * n0 exceeds int32; N(1, 1) vs N(0, 1) has AUC Phi(1/sqrt 2) = 0.7602
    key = jax.random.key(8)
    labels = jnp.arange(120_000) % 2 == 0
    scores = jax.random.normal(key, (120_000,)) + labels
    # s.e. ~0.0015
    assert float(roc_auc(scores, labels)) == pytest.approx(0.76025, abs=0.006)


def test_per_node_metrics_match_columns():
    key = jax.random.key(5)
    scores = jax.random.normal(key, (40, 6))
    labels = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, (40, 6))
    s = np.asarray(scores + labels)
    y = np.asarray(labels)
    per = np.asarray(roc_auc(s, y, axis=0))
    for i in range(6):
        ref = mannwhitneyu(s[y[:, i], i], s[~y[:, i], i]).statistic / (y[:, i].sum() * (~y[:, i]).sum())
        assert per[i] == pytest.approx(ref, abs=1e-5)


def _tpr_reference(s, y, fpr):
    best = 0.0
    for t in np.concatenate([[-np.inf], np.unique(s)]):
        pred = s > t
        if pred[~y].mean() <= fpr:
            best = max(best, pred[y].mean())
    return best


@pytest.mark.parametrize("fpr", [1e-2, 1e-3, 0.1])
def test_tpr_at_fpr_brute_force(fpr):
    key = jax.random.key(6)
    y = np.asarray(jax.random.bernoulli(key, 0.5, (1500,)))
    s = np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (1500,))) + 1.5 * y
    assert float(tpr_at_fpr(s, y, fpr)) == pytest.approx(_tpr_reference(s, y, fpr), abs=1e-6)


def test_fixed_fpr_decision_respects_fpr():
    key = jax.random.key(7)
    masks = jax.random.bernoulli(key, 0.5, (200, 5))
    llr = jax.random.normal(jax.random.fold_in(key, 1), (200, 5)) + masks
    for per_node in (True, False):
        d = np.asarray(fixed_fpr_decision(llr, masks, 0.1, per_node=per_node))
        m = np.asarray(masks)
        if per_node:
            assert all(d[~m[:, i], i].mean() <= 0.1 for i in range(5))
        else:
            assert d[~m].mean() <= 0.1


def test_membership_advantage_and_threshold():
    labels = np.array([1, 1, 0, 0, 0], bool)
    d = threshold_decision(np.array([2.0, -1.0, 0.5, -3.0, -2.0]), 0.0)
    assert float(membership_advantage(d, labels)) == pytest.approx(0.5 - 1 / 3)
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr(np.zeros(3), np.ones(3, bool), 1.5)
    with pytest.raises(ValueError, match="labels"):
        roc_auc(np.zeros(3), np.ones(4, bool))


def test_error_counts_refuses_scores_and_zero_models():
    """Hostile 3 and 11: float scores were accepted as decisions (every nonzero a "member"),
    and zero models gave empty counts."""
    from jaxaudit.mia import error_counts

    masks = np.array([[True, False], [False, True]])
    scores = np.array([[0.3, -1.2], [2.0, 0.0]])
    with pytest.raises(TypeError, match="decisions must be boolean"):
        error_counts(scores, masks)
    with pytest.raises(ValueError, match="R >= 1"):
        error_counts(np.zeros((0, 2), bool), np.zeros((0, 2), bool))
    counts = error_counts(np.array([[1, 0], [1, 1]]), masks)  # 0/1 integers are decisions
    np.testing.assert_array_equal(counts.fp, [1, 0])
    np.testing.assert_array_equal(counts.fn, [0, 0])


def test_empty_counts_refused():
    """Hostile 10: empty counts reached the posterior (IndexError deep inside)."""
    from jaxaudit.bmp import NutsConfig, posterior_nuts
    from jaxaudit.mia import ErrorCounts
    from jaxaudit.mia.types import validate_counts

    empty = ErrorCounts(*(np.zeros(0, np.int32),) * 4)
    with pytest.raises(ValueError, match="counts must hold at least one node"):
        validate_counts(empty)
    with pytest.raises(ValueError, match="counts must hold at least one node"):
        posterior_nuts(jax.random.key(0), empty, config=NutsConfig(num_warmup=10, num_samples=10))


def test_membership_advantage_refuses_scores_as_decisions():
    """Hostile: float scores were thresholded at 0.5 silently and taken as decisions."""
    labels = np.array([1, 1, 0, 0], bool)
    with pytest.raises(ValueError, match="decisions must be boolean"):
        membership_advantage(np.array([0.7, 0.2, 0.6, 0.1]), labels)
    with pytest.raises(ValueError, match="decisions"):
        membership_advantage(np.array([2, 0, 1, 0]), labels)
    # 0/1 numbers are decisions: TPR − FPR = 1/2 − 1/2 by hand
    assert float(membership_advantage(np.array([1.0, 0.0, 1.0, 0.0]), labels)) == 0.0
    assert float(membership_advantage(np.array([1, 1, 0, 1]), labels)) == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [[1, 0, 2, 0], [1, 0, 0.5, 0], [1, 0, np.nan, 0]])
def test_metrics_refuse_labels_outside_zero_one(bad):
    """Hostile: labels 2 or 0.5 were cast to True silently."""
    scores = np.array([3.0, 1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="labels must be boolean"):
        roc_auc(scores, np.array(bad))
    with pytest.raises(ValueError, match="labels must be boolean"):
        tpr_at_fpr(scores, np.array(bad), 0.5)
    with pytest.raises(ValueError, match="labels must be boolean"):
        membership_advantage(np.array([1, 0, 1, 0]), np.array(bad))
    # 0/1 integers and floats are labels: AUC by hand (positives 3.0, 1.0 vs negatives 2.0, 0.0)
    assert float(roc_auc(scores, np.array([1.0, 1.0, 0.0, 0.0]))) == pytest.approx(0.75)


def test_decisions_refuse_nan_scores():
    with pytest.raises(ValueError, match="scores must not contain NaN"):
        threshold_decision(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="llr must not contain NaN"):
        bayes_decision(np.array([0.1, np.nan]), 0.5)


def test_masks_must_be_boolean_eagerly_and_under_jit():
    """A mask of 0.7 is refused by every entry point that takes masks: by value when concrete,
    by dtype under jax.jit (a traced float cannot be checked for 0/1)."""
    from jaxaudit.mia import error_counts, lira_loo, roc_auc

    decisions = jnp.array([[True, False], [False, True], [True, True]])
    half = jnp.array([[0.7, 0.0], [1.0, 0.0], [0.0, 1.0]])
    scores = jnp.array([[1.0, 0.0], [0.5, 2.0], [0.1, 0.3]])
    with pytest.raises(ValueError, match="masks must be boolean"):
        error_counts(decisions, half)
    with pytest.raises(TypeError, match="masks must be boolean"):
        jax.jit(error_counts)(decisions, half)
    with pytest.raises(TypeError, match="masks must be boolean"):
        jax.jit(lira_loo)(scores, half)
    with pytest.raises(TypeError, match="labels must be boolean"):
        jax.jit(roc_auc)(scores, half)
    # 0/1 floats stay accepted eagerly, and boolean masks under jit give the eager counts
    exact = jnp.round(half)
    np.testing.assert_array_equal(np.asarray(error_counts(decisions, exact).fp),
                                  np.asarray(jax.jit(error_counts)(decisions, exact > 0.5).fp))
