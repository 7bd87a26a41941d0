"""Secret extraction: priors and their pins, replace-one accounting, trie scoring against the
full-sequence likelihood, and the pipeline end to end at toy size."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.accounting import dpsgd_privacy
from jaxaudit.attacks import (
    SCORINGS,
    CharGRU,
    LmConfig,
    digit_prior,
    password_prior,
    secret_extraction,
    train_and_score,
)
from jaxaudit.attacks.char_model import candidate_trie, score_candidates, sequence_log_likelihood
from jaxaudit.attacks.corpus import (
    PAD,
    encode,
    filler_sentences,
    secret_corpus,
    secret_field,
    secret_prefix,
    user_records,
)
from jaxaudit.attacks.lm_training import train_dp_lm
from jaxaudit.attacks.secret_extraction import (
    SecretScores,
    attack_scores,
    extraction_result,
    secret_ranks,
)
from jaxaudit.attacks.secret_priors import ZIPF_EXPONENT, ZXCVBN_VERSION, load_password_ranks
from jaxaudit.bounds import gdp_delta, zipf_prior


def test_password_list_pinned():
    import importlib.metadata

    assert importlib.metadata.version("zxcvbn") == ZXCVBN_VERSION
    ranked = load_password_ranks()
    assert len(ranked) == 30000 and ranked[:4] == ["123456", "password", "12345678", "qwerty"]


def test_password_prior_is_truncated_zipf():
    p = password_prior(50)
    assert len(p.candidates) == 50 and math.isclose(p.probs.sum(), 1.0)
    ranked = load_password_ranks()
    ranks = np.array([ranked.index(c) + 1 for c in p.candidates])
    want = ranks ** -ZIPF_EXPONENT
    np.testing.assert_allclose(p.probs, want / want.sum(), rtol=1e-12)
    assert all(set(c) <= set("abcdefghijklmnopqrstuvwxyz0123456789") for c in p.candidates)
    # The exponent's calibration: rank-1 mass 0.009 over 10^7 passwords.
    assert abs(zipf_prior(ZIPF_EXPONENT, 10**7, [1])[0] - 0.009) < 1e-5


def test_digit_prior_uniform():
    p = digit_prior(3)
    assert len(p.candidates) == 1000 and p.candidates[7] == "007"
    np.testing.assert_allclose(p.probs, 1e-3)
    with pytest.raises(ValueError, match="length"):
        digit_prior(0)


def test_replace_one_accounting_matches_gdp_at_full_batch():
    """q = 1: T replace-one Gaussian steps (sensitivity 2C, noise σC) are exactly μ-GDP with
    μ = 2√T/σ; the calibrated σ must meet δ at ε and the PLD profile must not be below GDP's."""
    steps, eps, delta = 16, 2.0, 1e-5
    p = dpsgd_privacy(epsilon=eps, delta=delta, steps=steps, sampling_rate=1.0)
    mu = 2.0 * math.sqrt(steps) / p.noise_multiplier
    with jax.enable_x64(True):
        at_target = float(gdp_delta(eps, mu))
        exact = np.asarray(gdp_delta(p.epsilons, mu))
    assert at_target <= delta * 1.01
    # σ is the smallest such noise (to the bisection's 0.1 %): a 1 % smaller σ breaks δ.
    with jax.enable_x64(True):
        assert float(gdp_delta(eps, mu * 1.01)) > delta
    assert (p.deltas >= exact - 1e-6).all()
    np.testing.assert_allclose(p.deltas, exact, atol=2e-3)


@pytest.mark.slow
def test_trie_scores_equal_full_sequence_likelihood():
    model = CharGRU(hidden_dim=16)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
    cands = ["12", "123", "1", "ab", "b", "abc0"]
    trie = candidate_trie(cands)
    users = [3, 42]
    prefixes = [encode(secret_prefix(u), len(secret_prefix(u)) + 2)[:-1] for u in users]
    got = score_candidates(model, params, prefixes, trie, users_per_call=4)
    log_probs = jax.jit(lambda prm, t: jax.nn.log_softmax(model.apply(prm, t)))
    for i, u in enumerate(users):
        pre = secret_prefix(u)
        full = jnp.asarray(np.stack([encode(pre + c, 40) for c in cands]))
        logp = log_probs(params, full[:, :-1])
        terms = jnp.take_along_axis(logp, full[:, 1:, None], -1)[..., 0]
        terms = jnp.where(full[:, 1:] != 0, terms, 0.0)
        # The candidate's terms: everything after the prefix (its characters and EOS).
        want = terms[:, len(pre):].sum(1)
        np.testing.assert_allclose(got[i], np.asarray(want), atol=2e-4)
        # sequence_log_likelihood is the sum of all the terms.
        np.testing.assert_allclose(np.asarray(sequence_log_likelihood(model, params, full[:1])),
                                   np.asarray(terms[:1].sum(1)), rtol=1e-5)


def test_corpus_layout_and_filler_disjoint():
    prior = digit_prior(2)
    a = secret_corpus(jax.random.key(0), prior, num_secrets=3, num_filler=5, record_length=40)
    b = secret_corpus(jax.random.key(1), prior, num_secrets=2, num_filler=5, record_length=40,
                      first_user=100, filler_start=5)
    assert a.tokens.shape == (8, 40) and b.tokens.shape == (7, 40)
    text = lambda row: "".join("" if t < 3 else ("'" if t == 6 else " .,'"[t - 3] if t < 7
                                                 else "abcdefghijklmnopqrstuvwxyz0123456789"[t - 7])
                               for t in np.asarray(row))
    assert text(a.tokens[1]) == f"user 1's password is {prior.candidates[int(a.secrets[1])]}"
    assert not {text(r) for r in a.tokens[3:]} & {text(r) for r in b.tokens[2:]}
    sentences, version = filler_sentences()
    assert len(sentences) > 2000 and version.count(".") == 2


@pytest.mark.slow
def test_planted_secrets_found_without_noise():
    """ε = ∞, no noise, no effective clipping: a model trained on the secrets finds them all by
    likelihood; the prior attack finds none (all candidates tie, ties against the attacker);
    the bound is vacuous (n + 1) and the baseline is n·k/10^L. (The calibrated score is not
    asserted here: on a model this overfitted the other users' rows rate every secret highly
    too and the residual loses them; see docs/attacks.md.)"""
    prior = digit_prior(2)
    scored = train_and_score(jax.random.key(0), prior,
                             LmConfig(num_secrets=4, num_filler=0, steps=600, batch_size=4,
                                      clip_norm=1e6, learning_rate=3e-2, hidden_dim=64,
                                      record_length=32), epsilon=math.inf)
    assert scored.reference is None and scored.scores.shape == (4, 100)
    res = extraction_result(scored, prior, scoring="likelihood")
    assert int(res.successes) == 4 and bool(res.hits.all())
    assert int(res.count_bound) == 5 and float(res.noise_multiplier) == 0.0
    assert float(res.baseline) == pytest.approx(4 * 0.01)
    assert int(extraction_result(scored, prior, scoring="prior").successes) == 0
    assert 0 <= int(extraction_result(scored, prior).successes) <= 4


def test_prior_scoring_is_top_k_by_prior():
    """scoring="prior" guesses the k most likely candidates for everybody, whatever the model
    says: X_k is hit iff its prior rank is < k (the baseline's attack); ranks are the prior
    ranks exactly (the Zipf probabilities are strictly decreasing)."""
    prior = password_prior(200)
    rng = np.random.default_rng(0)
    n = 50
    secrets = rng.choice(200, size=n, p=prior.probs)
    scored = SecretScores(rng.normal(size=(n, 200)).astype(np.float32), None, secrets,
                          dpsgd_privacy(epsilon=2.0, delta=1e-5, steps=4, sampling_rate=0.5))
    ranks = secret_ranks(attack_scores(scored.scores, prior, "prior"), secrets)
    np.testing.assert_array_equal(ranks, secrets)
    for k in (1, 3, 10):
        res = extraction_result(scored, prior, scoring="prior", guesses=k)
        np.testing.assert_array_equal(np.asarray(res.hits), secrets < k)
        assert float(res.baseline) == pytest.approx(n * prior.probs[:k].sum())


def test_calibrated_score_formula_and_no_user_signal():
    """calibrated = log D + λ(ℓ_k − mean_{j≠k} ℓ_j), checked against a loop; when the model's
    likelihood ignores the user (every row the same) the residual is 0 and the ranking is the
    prior's exactly; a planted user-specific bump is found; reference = log D + λ(ℓ − ℓ_ref)."""
    prior = password_prior(100)
    rng = np.random.default_rng(1)
    n = 7
    ell = rng.normal(-20, 3, size=(n, 100)).astype(np.float32)
    ref = rng.normal(-20, 3, size=(n, 100)).astype(np.float32)
    logd = np.log(prior.probs)
    got = attack_scores(ell, prior, "calibrated", weight=0.5)
    for k in range(n):
        others = np.mean([ell[j].astype(np.float64) for j in range(n) if j != k], axis=0)
        np.testing.assert_allclose(got[k], logd + 0.5 * (ell[k] - others), rtol=1e-12)
    np.testing.assert_allclose(attack_scores(ell, prior, "reference", reference=ref),
                               logd + (ell.astype(np.float64) - ref), rtol=1e-12)
    np.testing.assert_array_equal(attack_scores(ell, prior, "likelihood"), ell)
    # No user signal: the same (non-constant) likelihood row for every user.
    flat = np.tile(ell[:1], (n, 1))
    secrets = rng.choice(100, size=n, p=prior.probs)
    np.testing.assert_array_equal(attack_scores(flat, prior, "calibrated"),
                                  attack_scores(flat, prior, "prior"))
    np.testing.assert_array_equal(secret_ranks(attack_scores(flat, prior), secrets), secrets)
    # The likelihood ranking of the same model follows the row, not the prior.
    assert (secret_ranks(attack_scores(flat, prior, "likelihood"), secrets) != secrets).any()
    # A user-specific bump of 30 nats on X_k makes X_k first for every user.
    bumped = flat.copy()
    bumped[np.arange(n), secrets] += 30.0
    assert (secret_ranks(attack_scores(bumped, prior), secrets) == 0).all()


@pytest.mark.slow
def test_private_run_counts_and_bound():
    prior = digit_prior(2)
    config = LmConfig(num_secrets=6, num_filler=20, steps=20, batch_size=8, hidden_dim=16,
                      record_length=32)
    res = secret_extraction(jax.random.key(1), prior, config, epsilon=1.0, guesses=3)
    # secret_extraction = train_and_score, then extraction_result (default: calibrated).
    again = extraction_result(train_and_score(jax.random.key(1), prior, config, epsilon=1.0),
                              prior, guesses=3)
    np.testing.assert_array_equal(np.asarray(res.hits), np.asarray(again.hits))
    assert 0 <= int(res.successes) <= 6 and res.hits.shape == (6,)
    assert float(res.noise_multiplier) > 0 and float(res.epsilon) == 1.0
    assert float(res.baseline) == pytest.approx(6 * 0.03)
    assert int(res.successes) < int(res.count_bound)
    assert float(res.top_prior) <= float(res.top_bound) <= 1.0


def test_secret_extraction_argument_errors():
    key, two = jax.random.key(0), LmConfig(num_secrets=2)
    with pytest.raises(ValueError, match="epsilon"):
        secret_extraction(key, digit_prior(1), two, epsilon=0.0)
    with pytest.raises(TypeError, match="prior"):
        secret_extraction(key, "digits", two, epsilon=1.0)
    with pytest.raises(ValueError, match="guesses"):
        secret_extraction(key, digit_prior(1), two, epsilon=1.0, guesses=0)
    with pytest.raises(ValueError, match="config.num_secrets"):
        secret_extraction(key, digit_prior(1), LmConfig(num_secrets=2.5), epsilon=1.0)
    with pytest.raises(TypeError, match="LmConfig"):
        secret_extraction(key, digit_prior(1), {"num_secrets": 2}, epsilon=1.0)
    with pytest.raises(ValueError, match="config.steps"):
        secret_extraction(key, digit_prior(1), two._replace(steps=10**12), epsilon=1.0)
    with pytest.raises(ValueError, match="scoring"):
        secret_extraction(key, digit_prior(1), two, epsilon=1.0, scoring="loss")
    with pytest.raises(ValueError, match="reference"):
        secret_extraction(key, digit_prior(1), two, epsilon=1.0, scoring="reference")
    with pytest.raises(ValueError, match="weight"):
        secret_extraction(key, digit_prior(1), two, epsilon=1.0, weight=-1.0)
    prior = digit_prior(1)
    with pytest.raises(ValueError, match="scoring"):
        attack_scores(np.zeros((2, 10)), prior, "exposure")
    with pytest.raises(ValueError, match="scores"):
        attack_scores(np.zeros((2, 9)), prior)
    with pytest.raises(ValueError, match="2 users"):
        attack_scores(np.zeros((1, 10)), prior, "calibrated")
    with pytest.raises(ValueError, match="reference"):
        attack_scores(np.zeros((2, 10)), prior, "reference", reference=np.zeros((3, 10)))
    assert SCORINGS[0] == "calibrated"


def _reference_ranks(scores, secrets):
    """Rank of each secret by the rule stated in secret_ranks' docstring, one candidate at a
    time: a candidate counts above the secret when its score is >= the secret's or NaN; a
    secret whose own score is not finite gets rank K (never an extraction)."""
    n, k = scores.shape
    out = []
    for i in range(n):
        own = scores[i, secrets[i]]
        if not math.isfinite(own):
            out.append(k)
            continue
        out.append(sum(1 for j in range(k) if j != secrets[i]
                       and (math.isnan(scores[i, j]) or scores[i, j] >= own)))
    return np.array(out)


def test_secret_ranks_non_finite_scores_never_an_extraction():
    """A diverged model's NaN row once gave rank -1, i.e. an extraction with any k (4/4 found
    at ε = 1, above the bound). NaN/inf own scores are now rank K; NaN
    candidates rank above the secret (against the attacker)."""
    rng = np.random.default_rng(24)
    scores = rng.normal(size=(6, 5))
    secrets = rng.integers(0, 5, size=6)
    scores[0] = np.nan                      # the whole row diverged
    scores[1, secrets[1]] = np.nan          # the secret's own score
    scores[2, secrets[2]] = np.inf
    scores[3, secrets[3]] = -np.inf
    scores[4, (secrets[4] + 1) % 5] = np.nan  # another candidate NaN
    ranks = secret_ranks(scores, secrets)
    np.testing.assert_array_equal(ranks, _reference_ranks(scores, secrets))
    assert (ranks[:4] == 5).all() and ranks[4] >= 1
    assert not (ranks[:4] < 5).any()  # not found even with every guess but the last


def test_extraction_result_counts_no_nan_extraction_and_warns():
    prior = digit_prior(1)
    scores = np.full((4, 10), np.nan, np.float32)
    scored = SecretScores(scores, None, np.arange(4),
                          dpsgd_privacy(epsilon=1.0, delta=1e-5, steps=4, sampling_rate=0.5))
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = extraction_result(scored, prior, scoring="likelihood", guesses=1)
    assert int(res.successes) == 0 and not np.asarray(res.hits).any()
    assert int(res.successes) < int(res.count_bound)


def test_train_and_score_refuses_non_finite_recipe():
    two = LmConfig(num_secrets=2)
    for bad in (math.inf, math.nan, 0.0):
        with pytest.raises(ValueError, match="learning_rate"):
            train_and_score(jax.random.key(0), digit_prior(1), two._replace(learning_rate=bad),
                            epsilon=1.0)
    with pytest.raises(ValueError, match="clip_norm"):
        train_and_score(jax.random.key(0), digit_prior(1), two._replace(clip_norm=math.inf),
                        epsilon=1.0)


def test_train_and_score_refuses_a_diverged_model(monkeypatch):
    """The fine-tuned model's scores are NaN (what an overflowing learning rate gives; the real
    run is the slow test below): refused, naming learning_rate and the divergence."""
    import importlib

    se = importlib.import_module("jaxaudit.attacks.secret_extraction")  # the module, not the
    # function of the same name that jaxaudit.attacks exports

    monkeypatch.setattr(se, "train_dp_lm", lambda key, model, tokens, config, **kw: "nan params")
    monkeypatch.setattr(se, "secret_scores",
                        lambda model, params, prior, n: np.full((n, 10), np.nan, np.float32))
    with pytest.raises(ValueError, match="diverged.*learning_rate"):
        train_and_score(jax.random.key(0), digit_prior(1),
                        LmConfig(num_secrets=2, num_filler=2, steps=1, hidden_dim=4,
                                 record_length=32), epsilon=math.inf)


@pytest.mark.slow
def test_train_and_score_huge_learning_rate_diverges_and_is_refused():
    """The hostile probe's run itself, at toy size: Adam with step 1e38 gives NaN scores.

    At the probe's 1e30, whether the forward pass overflows float32 depends on XLA's dot kernels:
    with YNNPACK's the scores were NaN, with Eigen's (the command's configuration since
    jaxaudit._xla_flags) they are finite, about -1e31, and rank the candidates validly, which
    is not a fake extraction. 1e38 overflows whichever kernel runs."""
    with pytest.raises(ValueError, match="diverged"):
        train_and_score(jax.random.key(0), digit_prior(1),
                        LmConfig(num_secrets=2, num_filler=2, steps=2, batch_size=4,
                                 learning_rate=1e38, clip_norm=1e6, hidden_dim=4,
                                 record_length=32), epsilon=math.inf)


def test_dpsgd_privacy_refuses_huge_finite_epsilon_and_caches():
    from jaxaudit.accounting.replace_one import MAX_DPSGD_EPSILON

    with pytest.raises(ValueError, match="epsilon must be at most"):
        dpsgd_privacy(epsilon=MAX_DPSGD_EPSILON * 10, delta=1e-5, steps=4, sampling_rate=0.5)
    a = dpsgd_privacy(epsilon=2.0, delta=1e-5, steps=4, sampling_rate=0.5)
    b = dpsgd_privacy(epsilon=2.0, delta=1e-5, steps=4, sampling_rate=0.5)
    assert a.noise_multiplier == b.noise_multiplier and a.deltas is not b.deltas  # cached, but not shared arrays
    np.testing.assert_array_equal(a.deltas, b.deltas)
    a.deltas[:] = 0.0
    assert (dpsgd_privacy(epsilon=2.0, delta=1e-5, steps=4, sampling_rate=0.5).deltas > 0).any()


def test_user_records_layout():
    """R records per user: R copies of each secret record, the filler cut in order into users
    of R sentences, the last padded with all-PAD rows; R = 1 is the record-level corpus."""
    prior = digit_prior(2)
    c = secret_corpus(jax.random.key(0), prior, num_secrets=2, num_filler=5, record_length=40)
    tok = np.asarray(c.tokens)
    units = np.asarray(user_records(c, 3))
    assert units.shape == (2 + 2, 3, 40)
    for u in range(2):
        assert (units[u] == tok[u]).all()
    np.testing.assert_array_equal(units[2], tok[2:5])
    np.testing.assert_array_equal(units[3, :2], tok[5:7])
    assert (units[3, 2] == PAD).all()
    np.testing.assert_array_equal(np.asarray(user_records(c, 1))[:, 0], tok)
    with pytest.raises(ValueError, match="records_per_user"):
        user_records(c, 0)


def _flat(tree):
    return jnp.concatenate([jnp.ravel(x) for x in jax.tree_util.tree_leaves(tree)])


@pytest.mark.slow
def test_user_level_dpsgd_clips_each_users_summed_gradient():
    """One noiseless full-batch step of SGD(1) moves θ by −Σ_u clip_C(∇ Σ_j ℓ_uj)/U: the clip
    applies to the user's SUMMED gradient (computed here directly, record by record), not to
    each record's (which gives another step: the test tells them apart)."""
    import optax

    prior = digit_prior(2)
    c = secret_corpus(jax.random.key(1), prior, num_secrets=2, num_filler=3, record_length=32)
    units = user_records(c, 2)  # 2 secret users (2 copies), 2 filler users (2 + 1 records)
    model = CharGRU(hidden_dim=8)
    p0 = model.init(jax.random.key(2), units[:1, 0])
    clip = 0.05
    p1 = train_dp_lm(jax.random.key(3), model, units,
                     LmConfig(steps=1, batch_size=units.shape[0], clip_norm=clip),
                     noise_multiplier=0.0, init_params=p0, optimizer=optax.sgd(1.0))
    step = _flat(p0) - _flat(p1)

    @jax.jit
    def record_grad(record):
        g = jax.grad(lambda p: -sequence_log_likelihood(model, p, record[None])[0])(p0)
        return _flat(g)

    def clipped(g):
        return g / jnp.maximum(1.0, jnp.linalg.norm(g) / clip)

    user_sum = [sum(record_grad(r) for r in np.asarray(u)) for u in np.asarray(units)]
    assert all(float(jnp.linalg.norm(g)) > clip for g in user_sum)  # clipping is active
    want = sum(clipped(g) for g in user_sum) / units.shape[0]
    np.testing.assert_allclose(np.asarray(step), np.asarray(want), rtol=2e-3, atol=1e-7)
    per_record = sum(clipped(record_grad(r)) for u in np.asarray(units) for r in u
                     if (r != PAD).any()) / units.shape[0]
    assert float(jnp.linalg.norm(step - per_record)) > 0.1 * float(jnp.linalg.norm(want))


def test_name_template():
    from jaxaudit.attacks import name_prior

    prior = name_prior(5)
    assert secret_field(prior) == "name" and secret_field(digit_prior(1)) == "password"
    c = secret_corpus(jax.random.key(0), prior, num_secrets=1, num_filler=0, record_length=40)
    want = encode("user 0's name is " + prior.candidates[int(c.secrets[0])], 40)
    np.testing.assert_array_equal(np.asarray(c.tokens[0]), want)


@pytest.mark.slow
def test_memorising_configuration_extracts_at_infinite_epsilon():
    """The curve's configuration (docs/attacks.md: few users, little filler, full batches,
    200 steps of Adam 2e-2, GRU 64, clipping C = 1 on) at toy size and ε = ∞: the likelihood
    attack extracts at least half of the planted passwords with one guess (prior: Zipf over
    2,000 zxcvbn passwords, top-1 mass 0.03), more than the prior's guess; the bound is
    vacuous (n + 1). ~30 s of CPU: slow."""
    prior = password_prior(2000)
    scored = train_and_score(jax.random.key(4), prior,
                             LmConfig(num_secrets=4, num_filler=4, steps=200, batch_size=8,
                                      learning_rate=2e-2, hidden_dim=64, record_length=36),
                             epsilon=math.inf)
    found = int(extraction_result(scored, prior, scoring="likelihood").successes)
    by_prior = int(extraction_result(scored, prior, scoring="prior").successes)
    assert found >= 2 and found > by_prior
    assert int(extraction_result(scored, prior).count_bound) == 5
