"""BMDP and the composition results (jaxaudit.bmp.composition) against direct computation on tiny
graphs: every sample of a 5-node graph is enumerated with its exact probability (Poisson sampling,
a snowball sampler with a random size, fixed-size uniform sampling), the mechanisms have known
output laws, and the privacy losses are recomputed here with plain loops over samples and outputs
(independent of the library's vectorised cores)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit import bmp
from jaxaudit.graph import poisson_sampler, random_walk_sampler, snowball_sampler, uniform_sampler

N = 5
SENDERS = np.array([0, 0, 1, 1, 2, 3])
RECEIVERS = np.array([1, 2, 2, 3, 3, 4])
#: law of the snowball sample size 0..N (full support: every subset is reachable with teleport)
SIZE_LAW = np.array([0.05, 0.15, 0.25, 0.25, 0.2, 0.1])


# ------------------------------------------------------------------------------- samplers


def all_subsets(n: int = N) -> np.ndarray:
    return np.array(list(itertools.product([False, True], repeat=n)))


def poisson_law(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    masks = all_subsets(len(q))
    return masks, np.prod(np.where(masks, q, 1 - q), axis=1)


def snowball_law() -> tuple[np.ndarray, np.ndarray]:
    """Frontier-growth snowball sample with a random size and teleport 0.2 (dependent inclusion,
    finite node-dependent sampling leakage)."""
    return bmp.leakage.snowball_distribution(SENDERS, RECEIVERS, N, SIZE_LAW, teleport=0.2)


def uniform_law(k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    masks = all_subsets()
    masks = masks[masks.sum(1) == k]
    return masks, np.full(len(masks), 1 / len(masks))


Q = np.array([0.3, 0.5, 0.6, 0.4, 0.7])


# ------------------------------------------------------------------------------- mechanisms


def softmax_mechanism(masks: np.ndarray, seed: int, outputs: int = 4) -> np.ndarray:
    """p(w | s) ∝ exp(Σ_j s_j θ_jw + Σ_{(a,b) ∈ E} s_a s_b ψ_ew): a graph-dependent randomized
    mechanism with full support whose privacy loss for a node depends on the other memberships."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.8, (N, outputs))
    psi = rng.normal(0.0, 0.8, (len(SENDERS), outputs))
    m = masks.astype(float)
    logits = m @ theta + (m[:, SENDERS] * m[:, RECEIVERS]) @ psi
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def rr(eps: float) -> np.ndarray:
    """Randomized response on a bit: rr[m, y] = Pr(Y = y | bit = m)."""
    keep = np.exp(eps) / (1 + np.exp(eps))
    return np.array([[keep, 1 - keep], [1 - keep, keep]])


def reveal_rest_and_rr(masks: np.ndarray, target: int, eps: tuple[float, ...]) -> np.ndarray:
    """W = (S_{-target}, Y_1, …, Y_T), Y_t randomized response on M_target with ε_t: output law
    over the 2^(N-1) codes of S_{-target} times 2^T answers."""
    others = [j for j in range(N) if j != target]
    out = np.zeros((len(masks), 2 ** (N - 1) * 2 ** len(eps)))
    for k, mask in enumerate(masks):
        code = int(sum(int(mask[j]) << b for b, j in enumerate(others)))
        m = int(mask[target])
        for ys in itertools.product([0, 1], repeat=len(eps)):
            idx = code * 2 ** len(eps) + int(sum(y << b for b, y in enumerate(ys)))
            out[k, idx] = np.prod([rr(e)[m, y] for e, y in zip(eps, ys)])
    return out


def product_mechanism(*outs: np.ndarray) -> np.ndarray:
    """Operations run on the same sample with independent randomness: p(w_1, w_2 | s) = Π_t p_t."""
    joint = outs[0]
    for out in outs[1:]:
        joint = (joint[:, :, None] * out[:, None, :]).reshape(len(joint), -1)
    return joint


# ------------------------------------------------------------------------------- references


def ref_eps(p0: np.ndarray, p1: np.ndarray) -> tuple[float, float]:
    """(ε_L, ε_R) = (max_w log p0/p1, max_w log p1/p0) over outputs with mass, by a loop."""
    eps_l = eps_r = 0.0
    for a, b in zip(p0.ravel(), p1.ravel()):
        if a == 0 and b == 0:
            continue
        eps_r = max(eps_r, np.inf if a == 0 else np.log(b / a) if b > 0 else 0.0)
        eps_l = max(eps_l, np.inf if b == 0 else np.log(a / b) if a > 0 else 0.0)
    return eps_l, eps_r


def ref_member_laws(masks, probs, out, i):
    """Laws of W given M_i = 0 and M_i = 1 (mixtures over S_{-i}), by a loop over samples."""
    p0, p1 = np.zeros(out.shape[1]), np.zeros(out.shape[1])
    w0 = w1 = 0.0
    for mask, p, o in zip(masks, probs, out):
        if mask[i]:
            p1, w1 = p1 + p * o, w1 + p
        else:
            p0, w0 = p0 + p * o, w0 + p
    return p0 / w0, p1 / w1


def ref_bmp(masks, probs, out):
    return np.array([ref_eps(*ref_member_laws(masks, probs, out, i)) for i in range(N)]).T


def ref_bmdp(masks, probs, out):
    """Sup over conditionings m_{-i} with both memberships possible, by a loop over samples."""
    law = {frozenset(np.flatnonzero(m).tolist()): (p, o) for m, p, o in zip(masks, probs, out)}
    res = np.full((2, N), np.nan)
    for i in range(N):
        for s, (p, o) in law.items():
            t = s | {i}
            if i in s or p == 0 or t not in law or law[t][0] == 0:
                continue
            el, er = ref_eps(o, law[t][1])
            res[0, i] = el if np.isnan(res[0, i]) else max(res[0, i], el)
            res[1, i] = er if np.isnan(res[1, i]) else max(res[1, i], er)
    return res


def ref_leakage(masks, probs):
    """(c_L, c_R) per node: sup over s of the log ratio of Pr(S_{-i} = s | M_i = 1) and
    Pr(S_{-i} = s | M_i = 0), by a loop over samples."""
    c = np.zeros((2, N))
    for i in range(N):
        given = [{}, {}]
        for mask, p in zip(masks, probs):
            rest = frozenset(np.flatnonzero(mask).tolist()) - {i}
            given[int(mask[i])][rest] = given[int(mask[i])].get(rest, 0.0) + p
        tot = [sum(g.values()) for g in given]
        keys = sorted(set(given[0]) | set(given[1]), key=sorted)
        p0 = np.array([given[0].get(k, 0.0) / tot[0] for k in keys])
        p1 = np.array([given[1].get(k, 0.0) / tot[1] for k in keys])
        c[:, i] = ref_eps(p0, p1)
    return c[0], c[1]


LAWS = {"poisson": lambda: poisson_law(Q), "snowball": snowball_law}


# ------------------------------------------------------------------------------- definitions


@pytest.mark.parametrize("law", sorted(LAWS))
def test_exact_bmp_and_bmdp_match_direct_enumeration(law):
    masks, probs = LAWS[law]()
    out = softmax_mechanism(masks, seed=1)
    np.testing.assert_allclose(np.stack(bmp.composition.bmp_epsilons(masks, probs, out)),
                               ref_bmp(masks, probs, out), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.stack(bmp.composition.bmdp_epsilons(masks, probs, out)),
                               ref_bmdp(masks, probs, out), rtol=1e-9, atol=1e-12)


def test_bmdp_errors_match_direct_conditional_errors():
    masks, probs = snowball_law()
    out = softmax_mechanism(masks, seed=2)
    phi = np.array([0.0, 1.0, 0.3, 1.0])
    alpha, beta, valid = (np.asarray(x) for x in bmp.composition.bmdp_errors(masks, probs, out, phi))
    index = {tuple(m): k for k, m in enumerate(masks)}
    for k, mask in enumerate(masks):
        for i in range(N):
            with_i = mask.copy()
            with_i[i] = True
            j = index.get(tuple(with_i))
            ok = not mask[i] and j is not None and probs[k] > 0 and probs[j] > 0
            assert valid[k, i] == ok
            if ok:
                assert alpha[k, i] == pytest.approx(out[k] @ phi, abs=1e-12)
                assert beta[k, i] == pytest.approx(1 - out[j] @ phi, abs=1e-12)


def test_bmdp_region_holds_for_every_test_and_is_tight():
    """(ε_L, ε_R)-BMDP ⇔ every test's conditional (α, β) lies in R(ε_L, ε_R): all 16 deterministic
    tests on 4 outputs pass at the exact BMDP parameters, and the likelihood-ratio tests break a
    region shrunk by 0.05 on either side."""
    masks, probs = snowball_law()
    out = softmax_mechanism(masks, seed=3)
    eps_l, eps_r = (np.asarray(x) for x in bmp.composition.bmdp_epsilons(masks, probs, out))
    tests = np.array(list(itertools.product([0.0, 1.0], repeat=out.shape[1])))
    inside = np.stack([np.asarray(bmp.composition.bmdp_region_contains(masks, probs, out, phi, eps_l, eps_r))
                       for phi in tests])
    assert inside.all()
    for side, shrunk in (("right", (eps_l, eps_r - 0.05)), ("left", (eps_l - 0.05, eps_r))):
        shrunk = tuple(np.maximum(s, 0.0) for s in shrunk)
        found = np.stack([np.asarray(bmp.composition.bmdp_region_contains(masks, probs, out, phi, *shrunk,
                                                              side=side)) for phi in tests])
        assert not found.all(axis=0).any()  # for every node some test leaves the shrunk region


# ------------------------------------------------------------------------------- BMDP vs BMP


def test_bmdp_implies_bmp_with_independent_inclusion():
    """Poisson (heterogeneous q): c = 0 and the exact BMP is ≤ the BMDP bound for every node."""
    masks, probs = poisson_law(Q)
    c_l, c_r = ref_leakage(masks, probs)
    np.testing.assert_allclose([c_l, c_r], 0.0, atol=1e-12)
    out = softmax_mechanism(masks, seed=4)
    d_l, d_r = bmp.composition.bmdp_epsilons(masks, probs, out)
    bound = np.stack(bmp.composition.bmp_from_bmdp(d_l, d_r, sampler=poisson_sampler(0.4)))
    direct = ref_bmp(masks, probs, out)
    assert np.all(bound >= direct - 1e-12)
    assert np.all(direct < bound - 1e-3)  # strict here: the mixture over S_{-i} averages the loss


def test_bmdp_equals_bmp_when_the_output_depends_on_the_node_only():
    masks, probs = poisson_law(Q)
    target, eps = 2, 0.9
    out = rr(eps)[masks[:, target].astype(int)]  # randomized response on M_target alone
    bmp_l, bmp_r = ref_bmp(masks, probs, out)[:, target]
    d_l, d_r = (np.asarray(x)[target] for x in bmp.composition.bmdp_epsilons(masks, probs, out))
    assert (d_l, d_r) == pytest.approx((eps, eps), abs=1e-12)
    assert (bmp_l, bmp_r) == pytest.approx((d_l, d_r), abs=1e-12)


def test_bmdp_implies_bmp_plus_leakage_under_dependent_sampling():
    """Snowball with a random size: 0 < c < inf per node; BMP ≤ BMDP + c for every node."""
    masks, probs = snowball_law()
    c_l, c_r = ref_leakage(masks, probs)
    assert np.all(c_r > 0) and np.all(np.isfinite(c_r))
    for seed in range(3):
        out = softmax_mechanism(masks, seed=10 + seed)
        d_l, d_r = bmp.composition.bmdp_epsilons(masks, probs, out)
        bound = np.stack(bmp.composition.bmp_from_bmdp(d_l, d_r, c_l=c_l, c_r=c_r))
        assert np.all(bound >= ref_bmp(masks, probs, out) - 1e-12)


def test_bmdp_plus_leakage_is_attained_when_the_output_reveals_the_rest():
    masks, probs = snowball_law()
    c_l, c_r = ref_leakage(masks, probs)
    target, eps = 1, 0.7
    out = reveal_rest_and_rr(masks, target, (eps,))
    d_l, d_r = (np.asarray(x)[target] for x in bmp.composition.bmdp_epsilons(masks, probs, out))
    assert (d_l, d_r) == pytest.approx((eps, eps), abs=1e-12)
    bound = [float(b) for b in bmp.composition.bmp_from_bmdp(d_l, d_r, c_l=c_l[target], c_r=c_r[target])]
    assert ref_bmp(masks, probs, out)[:, target] == pytest.approx(bound, abs=1e-9)


def test_bmp_does_not_imply_bmdp():
    """W = M_0 when node 1 is sampled, a fair coin otherwise: BMDP for node 0 is infinite (given
    M_1 = 1 the output is M_0), BMP finite (log 3 on each side at Pr(M_1 = 1) = 1/2)."""
    masks, probs = poisson_law(Q)
    out = np.where(masks[:, 1:2], np.eye(2)[masks[:, 0].astype(int)], 0.5)
    d_l, d_r = (np.asarray(x)[0] for x in bmp.composition.bmdp_epsilons(masks, probs, out))
    b_l, b_r = ref_bmp(masks, probs, out)[:, 0]
    assert np.isinf(d_l) and np.isinf(d_r)
    assert (b_l, b_r) == pytest.approx((np.log(3), np.log(3)), abs=1e-12)
    np.testing.assert_allclose(np.stack(bmp.composition.bmp_epsilons(masks, probs, out))[:, 0], [b_l, b_r])


# ------------------------------------------------------------------------------- composition


@pytest.mark.parametrize("law", sorted(LAWS))
def test_shared_sample_composition_bounds_the_direct_bmp(law):
    """BMP ∘ MP: two operations on one sample; the direct BMP of (W_1, W_2) is ≤ the sum of their
    BMDP parameters plus the sampling leakage, for every node."""
    masks, probs = LAWS[law]()
    c_l, c_r = ref_leakage(masks, probs)
    out1, out2 = softmax_mechanism(masks, seed=20), softmax_mechanism(masks, seed=21, outputs=3)
    d1, d2 = np.stack(bmp.composition.bmdp_epsilons(masks, probs, out1)), np.stack(bmp.composition.bmdp_epsilons(
        masks, probs, out2))
    bound = np.stack(bmp.composition.compose_shared_sample(np.stack([d1[0], d2[0]]), np.stack([d1[1], d2[1]]),
                                               c_l=c_l, c_r=c_r))
    joint = product_mechanism(out1, out2)
    assert np.all(bound >= ref_bmp(masks, probs, joint) - 1e-12)
    # the BMDP of the composed operation is itself at most the sum (composition at BMDP level)
    assert np.all(np.stack(bmp.composition.bmdp_epsilons(masks, probs, joint)) <= d1 + d2 + 1e-12)


def test_shared_sample_composition_is_attained():
    """W = (S_{-t}, Y_1, Y_2), randomized responses on M_t with ε = 0.4 and 0.8 on one snowball
    sample: the direct BMP equals ε_1 + ε_2 + c exactly (c added once)."""
    masks, probs = snowball_law()
    c_l, c_r = ref_leakage(masks, probs)
    target, eps = 3, (0.4, 0.8)
    bound = bmp.composition.compose_shared_sample(np.array(eps), np.array(eps), c_l=c_l[target],
                                      c_r=c_r[target])
    direct = ref_bmp(masks, probs, reveal_rest_and_rr(masks, target, eps))[:, target]
    assert direct == pytest.approx([float(b) for b in bound], abs=1e-9)


def test_independent_rounds_compose_exactly():
    """BMP ∘ BMP: each round draws its own S_{-i} given M_i (snowball law) and trains its own
    mechanism; the direct BMP of (W_1, W_2), from the joint law enumerated over pairs of samples,
    equals the sum of the rounds' BMP parameters."""
    masks, probs = snowball_law()
    out1, out2 = softmax_mechanism(masks, seed=30), softmax_mechanism(masks, seed=31, outputs=3)
    e1, e2 = ref_bmp(masks, probs, out1), ref_bmp(masks, probs, out2)
    bound = np.stack(bmp.composition.compose_independent_rounds(np.stack([e1[0], e2[0]]),
                                                    np.stack([e1[1], e2[1]])))
    for i in range(N):
        joint = []
        for m in (0, 1):
            cond = np.where(masks[:, i] == m, probs, 0.0)
            cond = cond / cond.sum()
            law = np.zeros((out1.shape[1], out2.shape[1]))
            for k1, k2 in itertools.product(np.flatnonzero(cond), repeat=2):
                law += cond[k1] * cond[k2] * np.outer(out1[k1], out2[k2])
            joint.append(law)
        assert bound[:, i] == pytest.approx(ref_eps(*joint), abs=1e-9)


def test_shared_rounds_are_refused_and_would_be_unsound():
    """W_1 = M_0 xor M_1 and W_2 = M_1 on one Poisson(1/2) sample: each is (0, 0)-BMP for node 0,
    together they reveal M_0 — BMP parameters on a shared sample do not add."""
    masks, probs = poisson_law(np.full(N, 0.5))
    out1 = np.eye(2)[(masks[:, 0] ^ masks[:, 1]).astype(int)]
    out2 = np.eye(2)[masks[:, 1].astype(int)]
    e1, e2 = ref_bmp(masks, probs, out1)[:, 0], ref_bmp(masks, probs, out2)[:, 0]
    np.testing.assert_allclose([e1, e2], 0.0, atol=1e-12)
    assert np.all(np.isinf(ref_bmp(masks, probs, product_mechanism(out1, out2))[:, 0]))
    with pytest.raises(ValueError, match="rounds='shared'.*compose_shared_sample"):
        bmp.composition.compose_independent_rounds(np.stack([e1[:1], e2[:1]]), np.stack([e1[1:], e2[1:]]),
                                       rounds="shared")
    # composing at the BMDP level instead is sound: W_1 alone has infinite BMDP for node 0
    d1 = np.stack(bmp.composition.bmdp_epsilons(masks, probs, out1))[:, 0]
    assert np.all(np.isinf(d1))


# ------------------------------------------------------------------------------- refusals


def test_bmdp_refused_under_fixed_size_sampling():
    masks, probs = uniform_law()
    out = softmax_mechanism(masks, seed=5)
    with pytest.raises(ValueError, match=r"BMDP is undefined for node\(s\) \[0, 1, 2, 3, 4\]"):
        bmp.composition.bmdp_epsilons(masks, probs, out)
    assert np.all(np.isnan(np.stack(bmp.composition.bmdp_epsilons(masks, probs, out, undefined="nan"))))
    # BMP itself is defined there (and infinite leakage is not needed to compute it)
    assert np.all(np.isfinite(np.stack(bmp.composition.bmp_epsilons(masks, probs, out))))


def test_bmdp_refused_for_fixed_size_snowball():
    masks, probs = bmp.leakage.snowball_distribution(SENDERS, RECEIVERS, N, 3, teleport=0.2)
    with pytest.raises(ValueError, match="BMDP is undefined"):
        bmp.composition.bmdp_epsilons(masks, probs, softmax_mechanism(masks, seed=6))


@pytest.mark.parametrize("sampler, what", [
    (uniform_sampler(0.5), "fixed-size uniform"),
    (snowball_sampler(0.5), "snowball"),
    (random_walk_sampler(0.5), "random-walk"),
])
def test_structure_refusals(sampler, what):
    for call in (lambda: bmp.composition.structural_leakage(sampler),
                 lambda: bmp.composition.bmp_from_bmdp(0.5, 0.5, sampler=sampler),
                 lambda: bmp.composition.compose_shared_sample(np.ones(2), np.ones(2), sampler=sampler)):
        with pytest.raises(ValueError, match=f"sampler: {what}.*BMDP is undefined.*c = inf"):
            call()


def test_structure_poisson_and_unknown_samplers():
    assert bmp.composition.structural_leakage(poisson_sampler(0.3)) == (0.0, 0.0)
    eps = bmp.composition.compose_shared_sample(np.array([0.2, 0.5]), np.array([0.1, 0.4]),
                                    sampler=poisson_sampler(0.3))
    assert [float(e) for e in eps] == pytest.approx([0.7, 0.5])
    with pytest.raises(ValueError, match="q = 1.0"):
        bmp.composition.structural_leakage(poisson_sampler(1.0))

    class Custom:
        def __call__(self, key, graph):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(ValueError, match="cannot tell whether Custom.*sampling_leakage"):
        bmp.composition.bmp_from_bmdp(0.5, 0.5, sampler=Custom())


def test_bad_input():
    masks, probs = poisson_law(Q)
    out = softmax_mechanism(masks, seed=7)
    with pytest.raises(ValueError, match="eps_l must be >= 0"):
        bmp.composition.bmp_from_bmdp(-0.1, 0.5, c_l=0.0, c_r=0.0)
    with pytest.raises(ValueError, match="eps_r"):
        bmp.composition.compose_independent_rounds(np.ones(2), np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="c_r must be >= 0"):
        bmp.composition.compose_shared_sample(np.ones(2), np.ones(2), c_l=0.0, c_r=-1.0)
    with pytest.raises(ValueError, match="same shape"):
        bmp.composition.compose_independent_rounds(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="at least 1-D"):
        bmp.composition.compose_independent_rounds(1.0, 1.0)
    with pytest.raises(ValueError, match="axis"):
        bmp.composition.compose_shared_sample(np.ones(2), np.ones(2), c_l=0.0, c_r=0.0, axis=1)
    with pytest.raises(ValueError, match="either sampler or"):
        bmp.composition.bmp_from_bmdp(0.1, 0.1, c_l=0.0, c_r=0.0, sampler=poisson_sampler(0.5))
    with pytest.raises(ValueError, match="c_l and c_r"):
        bmp.composition.bmp_from_bmdp(0.1, 0.1)
    with pytest.raises(ValueError, match="eps_l must be numeric"):
        bmp.composition.bmp_from_bmdp("0.1", 0.1, c_l=0.0, c_r=0.0)
    with pytest.raises(ValueError, match="rounds must be one of"):
        bmp.composition.compose_independent_rounds(np.ones(2), np.ones(2), rounds="fresh")
    with pytest.raises(ValueError, match="probs must sum to 1"):
        bmp.composition.bmp_epsilons(masks, probs * 0.9, out)
    with pytest.raises(ValueError, match="probs must lie in"):
        bmp.composition.bmdp_epsilons(masks, np.where(np.arange(len(probs)) == 0, -0.1, probs), out)
    with pytest.raises(ValueError, match="output_probs.*row 0"):
        bmp.composition.bmp_epsilons(masks, probs, np.where(np.arange(4) == 0, out + 0.1, out))
    with pytest.raises(ValueError, match="output_probs must have shape"):
        bmp.composition.bmp_epsilons(masks, probs, out[:-1])
    with pytest.raises(ValueError, match="probs must have shape"):
        bmp.composition.bmdp_epsilons(masks, probs[:-1], out)
    with pytest.raises(ValueError, match="masks must be distinct"):
        bmp.composition.bmp_epsilons(np.concatenate([masks, masks[:1]]), np.append(probs, 0.0),
                         np.concatenate([out, out[:1]]))
    with pytest.raises(ValueError, match="masks must be boolean"):
        bmp.composition.bmp_epsilons(masks * 2, probs, out)
    with pytest.raises(ValueError, match=r"node\(s\) \[0\].*0 < η_i < 1"):
        bmp.composition.bmp_epsilons(masks, np.where(masks[:, 0], 0.0, probs) / probs[~masks[:, 0]].sum(), out)
    with pytest.raises(ValueError, match="decision must have shape"):
        bmp.composition.bmdp_errors(masks, probs, out, np.ones(3))
    with pytest.raises(ValueError, match="decision must lie in"):
        bmp.composition.bmdp_errors(masks, probs, out, np.array([0.0, 1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match="undefined must be one of"):
        bmp.composition.bmdp_epsilons(masks, probs, out, undefined="skip")


# ------------------------------------------------------------------------------- transforms


def test_under_jit_vmap_and_grad():
    masks, probs = snowball_law()
    outs = np.stack([softmax_mechanism(masks, seed=s) for s in (40, 41, 42)])
    eager = np.stack([np.stack(bmp.composition.bmdp_epsilons(masks, probs, o)) for o in outs])
    batched = jax.jit(jax.vmap(lambda o: jnp.stack(bmp.composition.bmdp_epsilons(masks, probs, o))))(
        jnp.asarray(outs, jnp.float32))
    np.testing.assert_allclose(batched, eager, rtol=1e-4, atol=1e-5)
    eager_bmp = np.stack(bmp.composition.bmp_epsilons(masks, probs, outs[0]))
    np.testing.assert_allclose(jax.jit(lambda o: jnp.stack(bmp.composition.bmp_epsilons(masks, probs, o)))(
        jnp.asarray(outs[0], jnp.float32)), eager_bmp, rtol=1e-4, atol=1e-5)
    # undefined BMDP is NaN under jit (no refusal possible there)
    u_masks, u_probs = uniform_law()
    u = jax.jit(lambda o: bmp.composition.bmdp_epsilons(u_masks, u_probs, o)[1])(
        jnp.asarray(softmax_mechanism(u_masks, seed=8), jnp.float32))
    assert np.all(np.isnan(u))

    def total(e: jax.Array, c: jax.Array) -> jax.Array:
        el, er = bmp.composition.compose_shared_sample(e, 2 * e, c_l=c, c_r=c)
        ind = bmp.composition.compose_independent_rounds(e, e)
        return el + er + ind[0] + jnp.sum(jnp.stack(bmp.composition.bmp_from_bmdp(e[0], e[1], c_l=c, c_r=c)))

    g_e, g_c = jax.jit(jax.grad(total, argnums=(0, 1)))(jnp.array([0.2, 0.3]), jnp.array(0.1))
    np.testing.assert_allclose(g_e, [5.0, 5.0])  # 1 + 2 + 1 + (1 for e[0] or e[1])
    assert float(g_c) == pytest.approx(4.0)


def test_grad_of_exact_bmp_matches_finite_differences():
    """d ε_R^i / d (a logit of the mechanism) through bmp_epsilons, against central differences
    (float64)."""
    masks, probs = poisson_law(Q)
    rng = np.random.default_rng(9)
    theta = rng.normal(0.0, 0.8, (N, 3))

    def eps_r(th: jax.Array) -> jax.Array:
        out = jax.nn.softmax(jnp.asarray(masks, th.dtype) @ th, axis=-1)
        return jnp.sum(bmp.composition.bmp_epsilons(masks, probs, out)[1])

    with jax.enable_x64(True):
        th = jnp.asarray(theta, jnp.float64)
        grad = np.asarray(jax.jit(jax.grad(eps_r))(th))
        value = jax.jit(eps_r)
        h = 1e-6
        for j, w in [(0, 0), (2, 1), (4, 2)]:
            e = np.zeros_like(theta)
            e[j, w] = h
            fd = (float(value(th + e)) - float(value(th - e))) / (2 * h)
            assert grad[j, w] == pytest.approx(fd, rel=1e-5, abs=1e-7)
