"""Theory functions: region area, corner/inverse, containment of Bayes-optimal ROCs, posterior
interval identities, coordinate maps, composition, post-processing, MP baseline."""

import jax
import numpy as np
import pytest

from jaxaudit import bmp

EPS_PAIRS = [(0.5, 2.0), (1.0, 1.0), (3.0, 0.2), (0.05, 4.0)]


@pytest.mark.parametrize("eps_l,eps_r", EPS_PAIRS)
def test_region_area_matches_monte_carlo(eps_l, eps_r):
    key = jax.random.key(11)
    pts = np.asarray(jax.random.uniform(key, (1_000_000, 2)))
    for side in ("both", "right", "left"):
        inside = np.asarray(bmp.region.region_contains(pts[:, 0], pts[:, 1], eps_l, eps_r, side=side))
        p_hat = inside.mean()
        area = float(bmp.region.region_area(eps_l, eps_r, side=side))
        sd = np.sqrt(area * (1 - area) / pts.shape[0])
        assert abs(p_hat - area) <= 4 * sd + 1e-12, (side, p_hat, area)
    # half of the two-sided region lies below the diagonal (the band's parent)
    below = np.asarray(bmp.region.region_contains(pts[:, 0], pts[:, 1], eps_l, eps_r)) & (
        pts.sum(1) <= 1)
    half = float(bmp.likelihood.band_area(eps_l, eps_r, 0.0))
    assert abs(below.mean() - half) <= 4 * np.sqrt(half * (1 - half) / pts.shape[0])


def test_region_area_closed_forms_and_limits():
    e = np.linspace(0.1, 5, 7)
    np.testing.assert_allclose(bmp.region.region_area(e, e), np.tanh(e / 2), rtol=1e-6)
    np.testing.assert_allclose(bmp.region.mp_region_area(e), bmp.region.region_area(e, e), rtol=1e-6)
    # ε_R = inf: the region is bounded only by (ii)/(iii): area 1 − e^{−ε_L}
    np.testing.assert_allclose(bmp.region.region_area(e, np.inf), 1 - np.exp(-e), rtol=1e-6)
    assert float(bmp.region.region_area(0.0, 0.0)) == 0.0


@pytest.mark.parametrize("eps_l,eps_r", EPS_PAIRS)
def test_corner_inverse_round_trip(eps_l, eps_r):
    a, b = bmp.region.region_corner(eps_l, eps_r)
    el, er = bmp.region.epsilons_from_errors(a, b)
    np.testing.assert_allclose([el, er], [eps_l, eps_r], rtol=1e-5, atol=1e-6)
    # the corner is on both lower boundaries
    assert bool(bmp.region.region_contains(a, b, eps_l, eps_r, atol=1e-6))
    assert not bool(bmp.region.region_contains(a * 0.99, b * 0.99, eps_l, eps_r))
    # opposite convention: the error pair is read / written swapped
    b2, a2 = bmp.region.region_corner(eps_l, eps_r, null="member")
    np.testing.assert_allclose([a2, b2], [a, b], rtol=1e-6)
    assert bool(bmp.region.region_contains(b, a, eps_l, eps_r, null="member", atol=1e-6))
    el2, er2 = bmp.region.epsilons_from_errors(b, a, null="member")
    np.testing.assert_allclose([el2, er2], [el, er], rtol=1e-6)


def _random_mechanisms(seed, num=200, outputs=6):
    rng = np.random.default_rng(seed)
    p0 = rng.dirichlet(np.ones(outputs), size=num)
    p1 = rng.dirichlet(np.ones(outputs), size=num)
    return p0, p1, rng


@pytest.mark.slow
def test_bayes_optimal_roc_inside_region_and_tight():
    with jax.enable_x64(True):
        _check_bayes_optimal_roc()


def _check_bayes_optimal_roc():
    p0, p1, rng = _random_mechanisms(0)
    eps_l, eps_r = (np.asarray(x) for x in bmp.region.finite_mechanism_epsilons(p0, p1))
    etas = np.concatenate([rng.uniform(0.01, 0.99, 200), [1e-6, 0.5, 1 - 1e-6]])
    eta = np.broadcast_to(etas[:, None], (len(etas), len(p0)))
    a, b = (np.asarray(x) for x in bmp.region.bayes_optimal_errors(p0[None], p1[None], eta))
    violations = int((~np.asarray(bmp.region.region_contains(a, b, eps_l, eps_r, atol=1e-9))).sum())
    el, er = (np.asarray(x) for x in bmp.region.epsilons_from_errors(a, b))
    informative = np.abs(a + b - 1) > 1e-9  # skip the trivial tests (all / nothing)
    max_l = np.where(informative, el, 0).max(0)
    max_r = np.where(informative, er, 0).max(0)
    # posterior coordinates: precision and NPV within the BMP bounds
    fdr, for_ = (np.asarray(x) for x in bmp.region.to_posterior_coordinates(a, b, eta))
    ok = a > 0
    assert np.all((1 - fdr <= np.asarray(bmp.region.precision_bound(eta, eps_r)) + 1e-12) | ~ok)
    ok = b > 0
    assert np.all((1 - for_ <= np.asarray(bmp.region.npv_bound(eta, eps_l)) + 1e-12) | ~ok)
    assert violations == 0
    # the Bayes tests never certify more than the truth ...
    assert np.all(max_r <= eps_r + 1e-9) and np.all(max_l <= eps_l + 1e-9)
    # ... and the sup over the vertices of the likelihood-ratio ROC recovers it exactly
    order = np.argsort(-(np.log(p1) - np.log(p0)), axis=1)
    fpr = np.cumsum(np.take_along_axis(p0, order, 1), 1)[:, :-1]
    fnr = 1 - np.cumsum(np.take_along_axis(p1, order, 1), 1)[:, :-1]
    assert np.all(np.asarray(bmp.region.region_contains(fpr, fnr, eps_l[:, None], eps_r[:, None],
                                                 atol=1e-9)))
    roc_l, roc_r = bmp.region.epsilons_from_roc(fpr, fnr)
    np.testing.assert_allclose(roc_r, eps_r, rtol=1e-9)
    np.testing.assert_allclose(roc_l, eps_l, rtol=1e-9)


def test_posterior_interval_identities():
    p0, p1, rng = _random_mechanisms(1, num=50)
    eps_l, eps_r = (np.asarray(x) for x in bmp.region.finite_mechanism_epsilons(p0, p1))
    eta = rng.uniform(0.05, 0.95, (50, 1))
    post = eta * p1 / (eta * p1 + (1 - eta) * p0)
    lo, hi = (np.asarray(x) for x in bmp.region.posterior_interval(eta, eps_l[:, None], eps_r[:, None]))
    assert np.all(post >= lo * (1 - 1e-5)) and np.all(post <= hi * (1 + 1e-5))
    np.testing.assert_allclose(post.max(1), hi[:, 0], rtol=1e-6)
    np.testing.assert_allclose(post.min(1), lo[:, 0], rtol=1e-6)
    # posterior odds / prior odds = e^{±ε} at the ends
    odds = lambda p: p / (1 - p)
    np.testing.assert_allclose(np.log(odds(hi[:, 0]) / odds(eta[:, 0])), eps_r, rtol=1e-5)
    np.testing.assert_allclose(np.log(odds(eta[:, 0]) / odds(lo[:, 0])), eps_l, rtol=1e-5)


def test_joint_coordinates():
    rng = np.random.default_rng(3)
    a, b, eta = rng.uniform(size=(3, 1000))
    ja, jb = bmp.region.to_joint(a, b, eta)
    np.testing.assert_allclose(np.stack(bmp.region.from_joint(ja, jb, eta)), np.stack([a, b]), rtol=1e-5)
    inside = np.asarray(bmp.region.region_contains(a, b, 1.0, 2.0))
    back = bmp.region.from_joint(ja, jb, eta)
    assert np.array_equal(np.asarray(bmp.region.region_contains(*back, 1.0, 2.0, atol=1e-6)) | ~inside,
                          np.ones(1000, bool))


def test_composition_and_post_processing():
    p0, p1, rng = _random_mechanisms(4, num=30, outputs=4)
    q0, q1, _ = _random_mechanisms(5, num=30, outputs=3)
    e1 = bmp.region.finite_mechanism_epsilons(p0, p1)
    e2 = bmp.region.finite_mechanism_epsilons(q0, q1)
    prod0 = (p0[:, :, None] * q0[:, None, :]).reshape(30, -1)
    prod1 = (p1[:, :, None] * q1[:, None, :]).reshape(30, -1)
    tight = bmp.region.finite_mechanism_epsilons(prod0, prod1)
    np.testing.assert_allclose(np.stack(tight), np.stack(bmp.region.compose(*e1, *e2)), rtol=1e-5)
    kernel = rng.dirichlet(np.ones(5), size=(30, 4))  # random Markov kernels (4 → 5 outputs)
    post = bmp.region.finite_mechanism_epsilons(np.einsum("nw,nwv->nv", p0, kernel),
                                         np.einsum("nw,nwv->nv", p1, kernel))
    assert np.all(np.asarray(post[0]) <= np.asarray(e1[0]) + 1e-6)
    assert np.all(np.asarray(post[1]) <= np.asarray(e1[1]) + 1e-6)
    np.testing.assert_allclose(bmp.region.compose_with_sampling(1.0, 2.0, 0.5, np.inf), (1.5, np.inf))


def test_mp_baseline_dominates():
    rng = np.random.default_rng(6)
    a = rng.uniform(0.01, 0.6, 500)
    b = rng.uniform(0.01, 1, 500) * (1 - a)
    el, er = bmp.region.epsilons_from_errors(a, b)
    mp = np.asarray(bmp.region.mp_epsilon(a, b))
    assert np.all(mp >= np.asarray(el)) and np.all(mp >= np.asarray(er))
    assert np.all(np.asarray(bmp.region.region_contains(a, b, mp, mp, atol=1e-6)))


def test_inverse_above_diagonal_and_bad_input():
    # a test worse than random: its complement certifies the mirrored parameters
    el, er = bmp.region.epsilons_from_errors(0.7, 0.6)
    el2, er2 = bmp.region.epsilons_from_errors(0.3, 0.4)
    np.testing.assert_allclose([el, er], [el2, er2], rtol=1e-6)
    with pytest.raises(ValueError, match="side"):
        bmp.region.region_contains(0.1, 0.1, 1.0, 1.0, side="up")
    with pytest.raises(ValueError, match="null"):
        bmp.region.epsilons_from_errors(0.1, 0.1, null="x")


@pytest.mark.parametrize("alpha,beta", [(1.5, 0.0), (0.2, -0.1), (np.nan, 0.1), (0.1, 1.0 + 1e-3)])
def test_inverse_refuses_error_rates_outside_unit_interval(alpha, beta):
    """Hostile: epsilons_from_errors(1.5, 0) returned a finite ε (no such test exists)."""
    with pytest.raises(ValueError, match="alpha|beta"):
        bmp.region.epsilons_from_errors(alpha, beta)
    with pytest.raises(ValueError, match="alpha|beta"):
        bmp.region.mp_epsilon(alpha, beta)
    with pytest.raises(ValueError, match="fpr|fnr"):
        bmp.region.epsilons_from_roc(np.array([alpha]), np.array([beta]))


@pytest.mark.parametrize("bad", [np.nan, -0.5])
def test_area_and_corner_refuse_nan_and_negative_eps(bad):
    """Hostile: region_area(nan) returned 0, as for a perfectly private learner."""
    with pytest.raises(ValueError, match="eps_l"):
        bmp.region.region_area(bad, 1.0)
    with pytest.raises(ValueError, match="eps_r"):
        bmp.region.region_area(1.0, bad)
    with pytest.raises(ValueError, match="eps"):
        bmp.region.mp_region_area(bad)
    with pytest.raises(ValueError, match="eps_l"):
        bmp.region.region_corner(bad, 1.0)
    with pytest.raises(ValueError, match="eps_r"):
        bmp.region.tradeoff_curve(0.1, 1.0, bad)
    with pytest.raises(ValueError, match="eta"):
        bmp.region.posterior_interval(1.2, 1.0, 1.0)


def test_round_off_above_one_is_accepted():
    # a ROC's cumulative mass may end at 1 + 1 ulp: accepted as 1 (not a hostile input)
    # (α = 1, β = 0.3): its complement (α, β) = (0, 0.7) certifies ε_L = log(1/0.7), ε_R = inf
    el, er = bmp.region.epsilons_from_errors(np.nextafter(1.0, 2.0), 0.3)
    assert float(el) == pytest.approx(-np.log(0.7), rel=1e-6) and float(er) == np.inf
