"""PrivacyModel's own parameters are checked before any bound is computed: a negative, NaN,
boolean, string or array ε, δ or μ is refused naming the field (a negative ε gave a
single-target "bound" below the prior), and a privacy curve must start at ε = 0 (the advantage
is δ(0): a grid from ε = 1 reported δ(1), far below the true advantage)."""

import math

import numpy as np
import pytest

from jaxaudit.bounds import PrivacyModel, RiskTarget, calibrate, single_target_success


@pytest.mark.parametrize(("model", "field"), [
    (PrivacyModel(epsilon=-1.0), "privacy.epsilon"),
    (PrivacyModel(epsilon=float("nan")), "privacy.epsilon"),
    (PrivacyModel(epsilon="1"), "privacy.epsilon"),
    (PrivacyModel(epsilon=True), "privacy.epsilon"),
    (PrivacyModel(epsilon=np.array([1.0, 2.0])), "privacy.epsilon"),
    (PrivacyModel(epsilon=1.0, delta=float("nan")), "privacy.delta"),
    (PrivacyModel(epsilon=1.0, delta=1.0), "privacy.delta"),
    (PrivacyModel(mu=True), "mu"),
    (PrivacyModel(mu="1"), "mu"),
    (PrivacyModel(mu=np.array([1.0, 2.0])), "mu"),
    (PrivacyModel(mu=float("nan")), "mu"),
])
def test_bad_model_parameters_are_refused_naming_the_field(model, field):
    with pytest.raises((ValueError, TypeError), match=field):
        single_target_success(0.1, model)
    with pytest.raises((ValueError, TypeError), match=field):
        model.advantage()


def test_a_negative_epsilon_no_longer_gives_a_bound_below_the_prior():
    with pytest.raises(ValueError, match=r"privacy.epsilon must be >= 0, got -1.0"):
        single_target_success(0.3, PrivacyModel(epsilon=-1.0))


def test_a_curve_must_start_at_epsilon_zero():
    model = PrivacyModel(epsilons=np.array([1.0, 2.0]), deltas=np.array([0.01, 0.001]))
    with pytest.raises(ValueError, match=r"privacy.epsilons must start at 0"):
        model.advantage()
    with pytest.raises(ValueError, match=r"privacy.epsilons must start at 0"):
        single_target_success(0.3, model)
    # the same points with δ(0) of (1, 0.01)-DP added give the true advantage
    d0 = (math.e - 1 + 0.02) / (math.e + 1)
    full = PrivacyModel(epsilons=np.array([0.0, 1.0, 2.0]), deltas=np.array([d0, 0.01, 0.001]))
    assert full.advantage() == d0


def test_valid_models_still_pass():
    for model in (PrivacyModel(epsilon=0.0), PrivacyModel(epsilon=math.inf),
                  PrivacyModel(epsilon=1.0, delta=1e-5), PrivacyModel(mu=math.inf),
                  PrivacyModel(epsilon=np.float32(1.0), delta=np.float64(0.0))):
        assert 0.1 <= float(single_target_success(0.1, model).bound) <= 1.0


def test_calibrate_names_target_exact_match():
    with pytest.raises((ValueError, TypeError), match=r"target.exact_match must be True or False"):
        calibrate(RiskTarget("success", 0.1, prior=0.01, exact_match="yes"))


def test_pure_dp_bound_is_never_below_the_prior():
    """At ε = 0 the KGK+ line 1 − e^{−ε}(1 − p) rounded one ulp below p for a third of the
    priors and won the minimum: a bound below the success the prior alone attains."""
    ps = np.linspace(0.001, 0.999, 999)
    for eps in (0.0, 1e-12, 0.5):
        r = single_target_success(ps, PrivacyModel(epsilon=eps))
        assert np.all(np.asarray(r.bound) >= ps)
        assert np.all(np.asarray(r.route) == 0)
    r0 = single_target_success(ps, PrivacyModel(epsilon=0.0))
    assert np.all(np.asarray(r0.bound) == ps)  # β(0, p) = p exactly


def test_calibrating_success_to_the_prior_gives_epsilon_zero():
    for prior in (0.01, 0.003, 0.3):
        c = calibrate(RiskTarget("success", prior, prior=prior))
        assert c.epsilon == 0.0 and c.achieved <= prior


def test_advantage_is_rounded_up_as_documented():
    """advantage() says "Rounded up": its float64 closed forms were a few ulps below the exact
    value for about half of the models (δ_μ(0) by 6e-11 relative at μ = 1e-6)."""
    import mpmath as mp

    with mp.workdps(40):
        for mu in np.geomspace(1e-8, 40, 60):
            exact = mp.erf(mp.mpf(float(mu)) / (2 * mp.sqrt(2)))
            got = PrivacyModel(mu=float(mu)).advantage()
            assert exact <= got <= exact * (1 + 1e-14)
        for eps in np.geomspace(1e-8, 40, 30):
            for delta in (0.0, 1e-9, 0.3):
                e = mp.mpf(float(eps))
                exact = (mp.e ** e - 1 + 2 * mp.mpf(delta)) / (mp.e ** e + 1)
                got = PrivacyModel(epsilon=float(eps), delta=delta).advantage()
                assert exact <= got <= exact * (1 + 1e-14) + 1e-300
    assert PrivacyModel(mu=math.inf).advantage() == 1.0
