"""Simulation-based calibration of the BMP posterior (Talts et al. 2018, arXiv 1804.06788):
draw (ε_L, ε_R, s, α, β) from the prior, counts from the likelihood, and check that the posterior
CDF at the true ε_L and ε_R (the continuous form of SBC's rank) is uniform. The deterministic grid
posterior stands in for NUTS here (no autocorrelation, cheap); test_posterior.py keeps NUTS equal
to the grid."""

import jax
import numpy as np
import pytest
from scipy import stats

from jaxaudit import bmp, mia

# module-scoped fixtures train shadow models and run NUTS: the whole module is a slow study
pytestmark = pytest.mark.slow

REPS = 120
N = 60
GRID = dict(num_epsilons=48, num_s=6, num_alpha_nodes=6, num_alpha_segments=12, num_knots=2049)
LEVEL = 0.01  # per KS test; two marginals per prior


def _prior_draws(key, prior: bmp.AttackPrior, reps):
    """(ε_L, ε_R, s) from the model's prior, the attack point uniform on the band, counts."""
    k_eps, k_s, k_uv, k_x, k_y = jax.random.split(key, 5)
    eps = np.abs(np.asarray(jax.random.normal(k_eps, (2, reps)))) * np.sqrt(bmp_prior_variance())
    if prior.optimal:  # the attack at the corner of R(ε)
        alpha, beta = (np.asarray(x) for x in bmp.region.region_corner(eps[0], eps[1]))
        fp = np.asarray(jax.random.binomial(k_x, N, alpha), float)
        fn = np.asarray(jax.random.binomial(k_y, N, beta), float)
        return eps, fp, fn
    if prior.fixed is None:
        s = np.asarray(jax.random.beta(k_s, prior.a, prior.b, (reps,)))
    else:
        s = np.full(reps, prior.fixed)
    u, v = np.asarray(jax.random.uniform(k_uv, (2, reps), minval=1e-6, maxval=1 - 1e-6))
    logit = lambda p: np.log(p) - np.log1p(-p)
    with jax.enable_x64(True):
        pos = np.stack([np.log(eps[0]), np.log(eps[1]), logit(u), logit(v),
                        logit(np.clip(s, 1e-12, 1 - 1e-12))], -1)
        point = bmp.likelihood.constrain_noncentered(pos)
        alpha, beta = np.asarray(point.alpha), np.asarray(point.beta)
    fp = np.asarray(jax.random.binomial(k_x, N, alpha), float)
    fn = np.asarray(jax.random.binomial(k_y, N, beta), float)
    return eps, fp, fn


def bmp_prior_variance():
    from jaxaudit.bmp.likelihood import PRIOR_VARIANCE

    return PRIOR_VARIANCE


def _sbc_pvalues(key, prior, fit_prior):
    eps, fp, fn = _prior_draws(key, prior, REPS)
    ranks = np.empty((2, REPS))
    for r in range(REPS):
        # the optimal-attack model's grid needs no quadrature: resolve it finely
        grid = bmp.posterior_grid(mia.ErrorCounts(fp[r], float(N), fn[r], float(N)),
                                  bmp.PosteriorModel(attack_prior=fit_prior),
                                  **(GRID | {"num_epsilons": 1000} if fit_prior.optimal else GRID))
        ranks[0, r] = grid.cdf("l", eps[0, r])
        ranks[1, r] = grid.cdf("r", eps[1, r])
    return [stats.kstest(ranks[j], "uniform").pvalue for j in range(2)], ranks


@pytest.mark.parametrize("prior", [bmp.AttackPrior(), bmp.AttackPrior(20.0, 1.0),
                                   bmp.AttackPrior(optimal=True)],
                         ids=["beta11", "beta20_1", "optimal"])
@pytest.mark.slow
def test_posterior_ranks_are_uniform(prior):
    """Fitted with the prior the data came from: both marginals' ranks pass KS at 1%."""
    pvals, ranks = _sbc_pvalues(jax.random.key(1804), prior, prior)
    hist = np.histogram(ranks, bins=5, range=(0, 1))[0]
    print(f"{prior.describe()}: KS p-values eps_L {pvals[0]:.3f}, eps_R {pvals[1]:.3f}; "
          f"rank histogram (5 bins, both) {hist.tolist()}")
    assert min(pvals) > LEVEL


def test_miscalibration_is_detected():
    """The test has power: data from near-optimal attacks (s ~ Beta(20, 1)) fitted with the
    agnostic Beta(1, 1) model put the truth low in the posterior (ranks pile up near 0)."""
    pvals, ranks = _sbc_pvalues(jax.random.key(1805), bmp.AttackPrior(20.0, 1.0),
                                bmp.AttackPrior())
    print(f"mismatched: KS p-values {pvals[0]:.2e}, {pvals[1]:.2e}; mean rank {ranks.mean():.3f}")
    assert min(pvals) < LEVEL
    assert ranks.mean() < 0.5
