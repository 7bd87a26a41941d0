"""Calibration to a target risk: the returned σ (ε) meets the target, a little less noise (a
little more ε) does not, and the ε mode agrees with the closed forms."""

import math

import numpy as np
import pytest

from jaxaudit.bounds import RiskTarget, calibrate, epsilon_for_count, epsilon_for_success
from jaxaudit.bounds.calibrate import _metric
from jaxaudit.bounds.summary import PrivacyModel
from jaxaudit.cli.main import main


def test_epsilon_mode_matches_the_closed_forms():
    adv = calibrate(RiskTarget("advantage", 0.2))
    assert adv.epsilon <= 2 * math.atanh(0.2) and adv.epsilon == pytest.approx(2 * math.atanh(0.2), rel=1e-9)
    assert adv.achieved <= 0.2
    success = calibrate(RiskTarget("success", 0.05, prior=0.01))
    exact = epsilon_for_success([0.01], 0.05)
    assert success.epsilon <= exact + 1e-12 and success.epsilon == pytest.approx(exact, rel=1e-9)
    tpr = calibrate(RiskTarget("tpr", 0.1, fpr=1e-3))  # 1 − f(α) = e^ε α: ε = log(100)
    assert tpr.epsilon == pytest.approx(math.log(100), rel=1e-9) and tpr.achieved <= 0.1
    count = calibrate(RiskTarget("count", 300, prior=0.1, targets=1000))
    assert count.epsilon <= epsilon_for_count(np.full(1000, 0.1), 300) + 1e-9
    assert count.achieved <= 300


def test_refusals_name_the_field():
    with pytest.raises(ValueError, match="target.kind"):
        calibrate(RiskTarget("loss", 0.1))
    with pytest.raises(ValueError, match="target.prior"):
        calibrate(RiskTarget("success", 0.1))
    with pytest.raises(ValueError, match="target.fpr"):
        calibrate(RiskTarget("tpr", 0.1))
    with pytest.raises(ValueError, match="sampling_rate and steps"):
        calibrate(RiskTarget("advantage", 0.1), sampling_rate=0.01)
    with pytest.raises(ValueError, match="relation"):
        calibrate(RiskTarget("success", 0.1, prior=0.01), sampling_rate=0.01, steps=10,
                  relation="add_remove")
    with pytest.raises(ValueError, match="no ε"):
        calibrate(RiskTarget("success", 0.001, prior=0.01))


@pytest.mark.slow
def test_noise_for_success_at_prior_one_percent_is_least_and_below_riskcal():
    """σ for success ≤ 5% at prior 1%, q = 0.01, T = 1000, replace-one (riskcal: 0.995)."""
    target = RiskTarget("success", 0.05, prior=0.01)
    c = calibrate(target, sampling_rate=0.01, steps=1000)
    assert c.achieved <= 0.05 and 0.95 < c.noise < 0.995
    # the least σ, to the PLD's discretisation: its δ(ε) is monotone in σ only to ≈ 1e−4
    # relative, so the bracketing's 0.1% is checked as 1%
    less = PrivacyModel.from_dpsgd(sampling_rate=0.01, noise_multiplier=c.noise / 1.01,
                                   steps=1000)
    assert _metric(target, less) > 0.05
    uniform = calibrate(RiskTarget("success", 0.05, prior=0.01, exact_match=True),
                        sampling_rate=0.01, steps=1000)
    assert uniform.noise <= c.noise  # the fixed point route for a uniform prior over 100


@pytest.mark.slow
def test_command_line_calibrates_epsilon(capsys):
    assert main(["bounds", "--calibrate", "advantage=0.2"]) == 0
    out = capsys.readouterr().out
    assert f"ε = {2 * math.atanh(0.2):.6g}" in out.replace(f"{2 * math.atanh(0.2) + 1e-9:.6g}", f"{2 * math.atanh(0.2):.6g}")
    assert main(["bounds", "--calibrate", "success=0.05"]) == 2
    assert "--uniform is required" in capsys.readouterr().err
