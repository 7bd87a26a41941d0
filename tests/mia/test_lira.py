"""LiRA leave-one-out against closed forms and brute-force references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

from jaxaudit.mia import lira_loo, roc_auc


def _synthetic(key, num_models, num_nodes, mu_in, sd_in, mu_out, sd_out):
    k_mask, k_noise = jax.random.split(key)
    masks = jax.random.bernoulli(k_mask, 0.5, (num_models, num_nodes))
    z = jax.random.normal(k_noise, (num_models, num_nodes))
    scores = jnp.where(masks, mu_in + sd_in * z, mu_out + sd_out * z)
    return scores, masks


def test_loo_fit_matches_brute_force():
    scores, masks = _synthetic(jax.random.key(0), 12, 7, 1.0, 0.7, -0.5, 1.3)
    llr = np.asarray(lira_loo(scores, masks))
    s, m = np.asarray(scores, np.float64), np.asarray(masks)
    for r in range(12):
        for i in range(7):
            others = np.delete(np.arange(12), r)
            x_in = s[others, i][m[others, i]]
            x_out = s[others, i][~m[others, i]]
            if len(x_in) < 2 or len(x_out) < 2:
                continue
            ref = norm.logpdf(s[r, i], x_in.mean(), x_in.std(ddof=1)) - norm.logpdf(
                s[r, i], x_out.mean(), x_out.std(ddof=1))
            assert llr[r, i] == pytest.approx(ref, rel=1e-3, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("fix_variance", [False, True])
def test_auc_matches_analytic_equal_variance(fix_variance):
    # IN ~ N(mu, 1), OUT ~ N(0, 1): the LR test is monotone in s, AUC = Phi(mu / sqrt(2)).
    mu = 1.0
    scores, masks = _synthetic(jax.random.key(1), 128, 160, mu, 1.0, 0.0, 1.0)
    auc = float(roc_auc(lira_loo(scores, masks, fix_variance=fix_variance), masks))
    analytic = norm.cdf(mu / np.sqrt(2))
    # Monte Carlo s.e. of a pooled AUC with ~10k IN and ~10k OUT scores is ~0.004; the fitted
    # Gaussians (63 shadows a side) add a small downward bias. Allow 4 s.e.
    assert abs(auc - analytic) < 0.016, (auc, analytic)


def test_auc_matches_analytic_unequal_variance():
    # IN ~ N(0.5, 0.5^2), OUT ~ N(0, 1): Λ(s) is quadratic; AUC = P(Λ(X1) > Λ(X0)), computed
    # here by numerical integration of the exact Gaussians.
    mu1, s1, s0 = 0.5, 0.5, 1.0
    scores, masks = _synthetic(jax.random.key(2), 128, 160, mu1, s1, 0.0, s0)
    auc = float(roc_auc(lira_loo(scores, masks), masks))
    grid = np.linspace(-8, 8, 40001)
    lam = norm.logpdf(grid, mu1, s1) - norm.logpdf(grid, 0.0, s0)
    f0 = norm.pdf(grid, 0, s0) * (grid[1] - grid[0])
    f1 = norm.pdf(grid, mu1, s1) * (grid[1] - grid[0])
    order = np.argsort(lam)
    cdf1_below = np.cumsum(f1[order])  # P(Λ(X1) <= λ) at sorted λ
    analytic = float(np.sum(f0[order] * (1.0 - cdf1_below)))
    assert abs(auc - analytic) < 0.016, (auc, analytic)


def test_no_shadows_gives_zero_llr():
    masks = jnp.array([[True, True], [True, False], [True, True]])
    scores = jnp.array([[1.0, 2.0], [0.5, 0.1], [0.7, 3.0]])
    llr = lira_loo(scores, masks)
    assert np.all(np.asarray(llr[:, 0]) == 0.0)  # node 0 never OUT: no evidence


def test_bad_input():
    with pytest.raises(ValueError, match="masks"):
        lira_loo(jnp.zeros((4, 3)), jnp.zeros((4, 2), bool))
    with pytest.raises(ValueError, match="scores"):
        lira_loo(jnp.full((4, 3), jnp.nan), jnp.zeros((4, 3), bool))
    with pytest.raises(ValueError, match="R >= 2"):
        lira_loo(jnp.zeros((1, 3)), jnp.zeros((1, 3), bool))


def test_infinite_score_refused_not_spread():
    """Hostile 7: one +inf score put NaNs in other nodes' columns through the pooled variance."""
    masks = jax.random.bernoulli(jax.random.key(3), 0.5, (8, 4))
    scores = np.array(masks + 0.1 * jax.random.normal(jax.random.key(4), (8, 4)))
    scores[2, 1] = np.inf
    with pytest.raises(ValueError, match="scores must be finite"):
        lira_loo(scores, masks)


@pytest.mark.slow
@pytest.mark.parametrize("magnitude", [1e19, 1e30, 1e37])
def test_huge_finite_scores_give_the_rescaled_llr(magnitude):
    """Hostile: scores >= 1e19 (float32) overflowed the squared moments (inf / NaN Λ). Λ is
    invariant under s -> k s + c, so huge scores must give the Λ of the unit-scale scores."""
    scores, masks = _synthetic(jax.random.key(5), 16, 6, 1.0, 0.7, -0.5, 1.3)
    ref = np.asarray(lira_loo(scores, masks))
    for fix_variance in (False, True):
        ref = np.asarray(lira_loo(scores, masks, fix_variance=fix_variance))
        big = np.asarray(lira_loo(np.asarray(scores, np.float32) * np.float32(magnitude), masks,
                                  fix_variance=fix_variance))
        assert np.all(np.isfinite(big))
        np.testing.assert_allclose(big, ref, rtol=1e-3, atol=1e-3)
    # a shift far beyond the spread: float32 resolves nothing at 1e30, every score is equal
    flat = np.asarray(lira_loo(np.full((8, 3), magnitude, np.float32), masks[:8, :3]))
    assert np.all(np.isfinite(flat))
