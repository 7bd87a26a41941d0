"""Marginal likelihood vs brute-force 2-D integration; the reparameterised joint densities'
Jacobians (autodiff) and their global normalisation (quadrature over the latent attack point)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxaudit import bmp, mia
from jaxaudit.bmp.likelihood import half_normal_logpdf

# (counts, eps_l, eps_r, s), including N0, N1 = 1000
CASES = [
    ((30, 100, 20, 100), 1.0, 2.0, 0.3),
    ((0, 50, 5, 60), 0.5, 3.0, 0.0),
    ((400, 1000, 150, 1000), 2.0, 1.5, 0.7),
    ((12, 1000, 900, 1000), 0.2, 0.8, 0.5),
    ((3, 20, 17, 20), 4.0, 4.0, 0.9),
    ((100, 1000, 300, 500), 3.0, 0.5, 0.2),
]


def _binom_pmf(k, n):
    """Fast scalar binomial pmf in p (scipy.stats' per-call overhead dominates quad otherwise)."""
    log_c = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    def pmf(p):
        if p <= 0 or p >= 1:
            return float((p <= 0 and k == 0) or (p >= 1 and k == n))
        return math.exp(log_c + k * math.log(p) + (n - k) * math.log1p(-p))

    return pmf


def _brute_force(counts, eps_l, eps_r, s):
    """Nested adaptive quadrature of Bin(X; N0, α) Bin(Y; N1, β) over the band, / its area."""
    fp, n0, fn, n1 = counts
    pmf_a, pmf_b = _binom_pmf(fp, n0), _binom_pmf(fn, n1)

    def lower(a, el, er):
        return max(1 - np.exp(er) * a, (1 - a) * np.exp(-el), 0.0)

    def inner(a):
        lo, hi = lower(a, eps_l, eps_r), lower(a, s * eps_l, s * eps_r)
        if hi <= lo:
            return 0.0
        mode = fn / n1
        pts = [mode] if lo < mode < hi else None
        return integrate.quad(pmf_b, lo, hi, points=pts,
                              epsabs=0, epsrel=1e-12, limit=200)[0]

    corners = [float(bmp.region.region_corner(eps_l, eps_r)[0]),
               float(bmp.region.region_corner(s * eps_l, s * eps_r)[0])]
    sd = np.sqrt(max(fp * (n0 - fp), 1) / n0**3)
    pts = sorted({min(max(p, 1e-9), 1 - 1e-9) for p in corners + [fp / n0 + k * sd
                                                                     for k in (-6, -2, 0, 2, 6)]})
    val = integrate.quad(lambda a: pmf_a(a) * inner(a), 0, 1, points=pts,
                         epsabs=0, epsrel=1e-12, limit=1000)[0]
    area = 0.5 * (float(bmp.region.region_area(eps_l, eps_r)) - float(bmp.region.region_area(s * eps_l,
                                                                                  s * eps_r)))
    return np.log(val) - np.log(area)


@pytest.fixture(scope="module")
def lml_values():
    """All cases in one vectorised call (one compilation)."""
    counts = mia.ErrorCounts(*(np.array([c[0][j] for c in CASES]) for j in range(4)))
    with jax.enable_x64(True):
        vals = bmp.likelihood.log_marginal_likelihood(np.array([c[1] for c in CASES]),
                                           np.array([c[2] for c in CASES]),
                                           np.array([c[3] for c in CASES]), counts)
    return np.asarray(vals)


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(CASES)))
def test_log_marginal_likelihood_matches_brute_force(lml_values, case):
    counts, eps_l, eps_r, s = CASES[case]
    want = _brute_force(counts, eps_l, eps_r, s)
    # 1e-6 relative on the likelihood itself
    assert abs(np.expm1(lml_values[case] - want)) < 1e-6, (lml_values[case], want)


def _constrained_log_joint(eps_l, eps_r, s, alpha, beta, counts, free_s, ab=(1.0, 1.0)):
    """log p(ε, s, α, β, X, Y) written directly in the model's own coordinates."""
    fp, n0, fn, n1 = counts
    inside = (bool(bmp.region.region_contains(alpha, beta, eps_l, eps_r, atol=1e-9))
              and not bool(bmp.region.region_contains(alpha, beta, s * eps_l, s * eps_r))
              and alpha + beta <= 1 + 1e-12)
    assert inside
    return (half_normal_logpdf(eps_l) + half_normal_logpdf(eps_r)
            - np.log(float(bmp.likelihood.band_area(eps_l, eps_r, s)))
            + stats.binom.logpmf(fp, n0, alpha) + stats.binom.logpmf(fn, n1, beta)
            + (stats.beta.logpdf(s, *ab) if free_s else 0.0))


@pytest.mark.parametrize("seed,ab", [(0, (1.0, 1.0)), (1, (1.0, 1.0)), (2, (20.0, 1.0)),
                                     (3, (0.5, 2.0))])
@pytest.mark.slow
def test_centered_joint_jacobian(seed, ab):
    counts = mia.ErrorCounts(7.0, 60.0, 21.0, 50.0)
    with jax.enable_x64(True):
        pos = jnp.asarray(np.random.default_rng(seed).normal(size=5))
        to_vec = lambda p: jnp.stack(bmp.likelihood.constrain_centered(p)[:5])
        jac = jax.jacfwd(to_vec)(pos)
        log_det = float(jnp.linalg.slogdet(jac)[1])
        lp = float(bmp.likelihood.log_joint_centered(pos, counts, strength_prior=ab))
        e_l, e_r, s, a, b = (float(x) for x in bmp.likelihood.constrain_centered(pos))
        want = float(_constrained_log_joint(e_l, e_r, s, a, b, counts, True, ab))
    np.testing.assert_allclose(lp - log_det, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed,strength,ab", [(0, None, (1.0, 1.0)), (1, None, (20.0, 1.0)),
                                              (2, 0.4, (1.0, 1.0)), (3, 0.0, (1.0, 1.0))])
@pytest.mark.slow
def test_noncentered_joint_jacobian(seed, strength, ab):
    counts = mia.ErrorCounts(7.0, 60.0, 21.0, 50.0)
    dim = 5 if strength is None else 4
    with jax.enable_x64(True):
        pos = jnp.asarray(np.random.default_rng(seed).normal(size=dim))
        idx = [0, 1, 3, 4, 2] if strength is None else [0, 1, 3, 4]  # (ε_L, ε_R, α, β[, s])
        to_vec = lambda p: jnp.stack(bmp.likelihood.constrain_noncentered(p, strength))[jnp.asarray(idx)]
        jac = jax.jacfwd(to_vec)(pos)
        log_det = float(jnp.linalg.slogdet(jac)[1])
        lp = float(bmp.likelihood.log_joint_noncentered(pos, counts, attack_strength=strength,
                                             strength_prior=ab))
        e_l, e_r, s, a, b = (float(x) for x in bmp.likelihood.constrain_noncentered(pos, strength))
        want = float(_constrained_log_joint(e_l, e_r, s, a, b, counts, strength is None, ab))
    np.testing.assert_allclose(lp - log_det, want, rtol=1e-8, atol=1e-8)


@pytest.mark.slow
def test_noncentered_map_integrates_to_marginal_likelihood():
    """Uniform (u, v) pushed onto the band: E[Bin Bin] equals the marginal likelihood."""
    counts = mia.ErrorCounts(12.0, 80.0, 30.0, 70.0)
    eps_l, eps_r, s = 1.3, 2.1, 0.4
    x, w = np.polynomial.legendre.leggauss(24)
    with jax.enable_x64(True):
        b_a, b_b = bmp.region.region_corner(eps_l, eps_r)
        d_a, d_b = bmp.region.region_corner(s * eps_l, s * eps_r)
        a1 = 0.5 * abs(float(b_a * (d_b - 1) - (b_b - 1) * d_a))
        a2 = 0.5 * abs(float((b_a - 1) * d_b - b_b * (d_a - 1)))
        p1 = a1 / (a1 + a2)
        # split u at the seam p1, 8 panels each side; v on 8 panels
        def panels(lo, hi, k):
            e = np.linspace(lo, hi, k + 1)
            return ((e[:-1, None] + e[1:, None]) / 2 + (e[1:, None] - e[:-1, None]) / 2 * x
                    ).ravel(), ((e[1:, None] - e[:-1, None]) / 2 * w).ravel()
        ua, uw_a = panels(0, p1, 8)
        ub, uw_b = panels(p1, 1, 8)
        u, uw = np.concatenate([ua, ub]), np.concatenate([uw_a, uw_b])
        v, vw = panels(0, 1, 4)
        uu, vv = np.meshgrid(u, v, indexing="ij")
        pos = jnp.stack([jnp.full(uu.shape, np.log(eps_l)), jnp.full(uu.shape, np.log(eps_r)),
                         jnp.log(uu) - jnp.log1p(-uu), jnp.log(vv) - jnp.log1p(-vv)], -1)
        c = bmp.likelihood.constrain_noncentered(pos, s)
        lik = stats.binom.pmf(12, 80, np.asarray(c.alpha)) * stats.binom.pmf(30, 70,
                                                                             np.asarray(c.beta))
        quad = np.sum(lik * uw[:, None] * vw[None, :])
        exact = float(jnp.exp(bmp.likelihood.log_marginal_likelihood(eps_l, eps_r, s, counts)))
        # every mapped point lies in the band
        assert np.all(np.asarray(bmp.region.region_contains(c.alpha, c.beta, eps_l, eps_r, atol=1e-9)))
    np.testing.assert_allclose(quad, exact, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_corner_joint_jacobian(seed):
    """The optimal-attack density on (a, b) = the model in (ε_L, ε_R) — half-normals and the
    binomials at the corner c(ε) (scipy) — plus log |∂ε/∂(a, b)| by autodiff; and the point is
    the corner of its region."""
    counts = mia.ErrorCounts(7.0, 60.0, 21.0, 50.0)
    fp, n0, fn, n1 = counts
    with jax.enable_x64(True):
        pos = jnp.asarray(np.random.default_rng(seed).normal(size=2) * 2.0)
        to_eps = lambda p: jnp.stack(bmp.likelihood.constrain_corner(p)[:2])
        log_det = float(jnp.linalg.slogdet(jax.jacfwd(to_eps)(pos))[1])
        lp = float(bmp.likelihood.log_joint_corner(pos, counts))
        c = bmp.likelihood.constrain_corner(pos)
        e_l, e_r = float(c.epsilon_left), float(c.epsilon_right)
        a_star, b_star = (float(x) for x in bmp.region.region_corner(e_l, e_r))
        np.testing.assert_allclose([float(c.alpha), float(c.beta)], [a_star, b_star], rtol=1e-10)
        np.testing.assert_allclose([e_l, e_r], [float(x) for x in bmp.region.epsilons_from_errors(
            1 / (1 + np.exp(-float(pos[0]))), float(c.beta))], rtol=1e-10)
        want = (float(half_normal_logpdf(e_l) + half_normal_logpdf(e_r))
                + stats.binom.logpmf(fp, n0, a_star) + stats.binom.logpmf(fn, n1, b_star))
    assert float(c.s) == 1.0
    np.testing.assert_allclose(lp - log_det, want, rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_delta_link_is_an_argument():
    """The centered density under δ = e^z equals the softplus one at the same (α, β, ε, s) up to
    the change of variables z ↦ z' = softplus⁻¹(e^z): log p_exp(z) = log p_softplus(z') + z −
    log σ(z') per slack (the two links' log dδ/dz). Both are selected by an argument
    (``link=``, and ``NutsConfig.delta_link`` for the sampler), so neither call changes the other,
    and the factory binds the same density."""
    from jaxaudit.bmp.likelihood import make_log_density

    counts = mia.ErrorCounts(30.0, 100.0, 20.0, 100.0)
    pos32 = jax.random.normal(jax.random.key(3), (16, 5))
    with jax.enable_x64(True):
        pos = jnp.asarray(pos32, jnp.float64)
        z = pos[:, 2:4]
        z_sp = jnp.log(jnp.expm1(jnp.exp(z)))  # softplus(z_sp) = e^z
        pos_sp = pos.at[:, 2:4].set(z_sp)
        lp_exp = bmp.likelihood.log_joint_centered(pos, counts, link="exp")
        lp_sp = bmp.likelihood.log_joint_centered(pos_sp, counts)
        jac = jnp.sum(z - jax.nn.log_sigmoid(z_sp), axis=1)
        np.testing.assert_allclose(np.asarray(lp_exp), np.asarray(lp_sp + jac), rtol=1e-9)
        c_exp = bmp.likelihood.constrain_centered(pos, link="exp")
        c_sp = bmp.likelihood.constrain_centered(pos_sp)
        for a, b in zip(c_exp, c_sp):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9)
        target = make_log_density("centered", counts, link="exp")
        np.testing.assert_array_equal(np.asarray(target.logdensity_fn(pos)), np.asarray(lp_exp))
        assert target.dim == 5
    with pytest.raises(ValueError, match="link"):
        bmp.likelihood.log_joint_centered(pos, counts, link="tanh")
    with pytest.raises(ValueError, match="parameterization"):
        make_log_density("polar", counts)


@pytest.mark.parametrize("spec", ["beta:1e300,1e300", (1.0, 1e7), "beta:2e6,1"])
def test_absurd_beta_attack_prior_refused(spec):
    """Hostile input: beta:1e300,1e300 was accepted and overflowed the float32 log density."""
    with pytest.raises(ValueError, match=r"a, b <= 1e\+06.*fixed:"):
        bmp.likelihood.as_attack_prior(spec)
    assert bmp.likelihood.as_attack_prior("beta:1e6,1e6").a == 1e6
