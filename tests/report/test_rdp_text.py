"""The rdp report says what each number is on its own line (one GDP test, one number)."""

from types import SimpleNamespace

import pytest

from jaxaudit.report import rdp as report


def _result(gdp_epsilon, gdp_mu):
    records = [SimpleNamespace(gdp_epsilon=gdp_epsilon, mu=gdp_mu)]
    eps_rows = report.epsilon_table(records, accountant_epsilon=3.0, accountant="pld",
                                    clopper_pearson=1.0, delta=1e-5)
    bounds = SimpleNamespace(num_tests=10, one_run_canaries=200, clopper_pearson=1.0,
                             gdp_epsilon=gdp_epsilon, mu=gdp_mu, one_run=1.2,
                             fdp_one_run=1.4, fdp_one_run_mu=0.4)
    return SimpleNamespace(header="h", rows=[], confidence=0.95, epsilon_at_delta=eps_rows,
                           score_bounds=report.score_bounds_rows(bounds, delta=1e-5),
                           violation=False, runs_needed_text="", title="")


@pytest.mark.parametrize("render", ["text", "markdown"])
def test_gdp_baseline_and_gdp_threshold_test_say_what_they_are_with_one_number(render):
    """The rdp --scores report showed "GDP baseline μ = 0.725, lower bound" beside "GDP
    threshold test μ = 0.301, estimate": one test, two random splits, two names for one kind.
    Now each line says what it is (an estimate; μ a bound; ε one only under a Gaussian
    profile), the score row names the baseline, and the ε printed is the same on both."""
    res = _result(1.59186, 0.65239)
    text = report.text_table(res) if render == "text" else report.markdown(res)
    lines = [line for line in text.splitlines() if "GDP" in line and "1.59" in line]
    baseline = next(line for line in lines if "GDP baseline" in line and "threshold" not in line)
    threshold = next(line for line in lines if "GDP threshold test" in line)
    assert "estimate" in baseline and "μ = 0.6523" in baseline and "lower bound on μ" in baseline
    assert "only if the profile is Gaussian" in baseline and "lower bound (" not in baseline
    assert "estimate (μ: bound)" in threshold and "the GDP baseline's test" in threshold
    assert "1.5919" in baseline and "1.5919" in threshold  # both to nearest: one number


def test_one_run_target_not_reached_is_said_in_the_result_and_the_printout():
    """--one-run --epsilon 1e9 floored σ at 0.001 and the accountant reported a far smaller ε
    with no note that the target was not reached."""
    import numpy as np

    from jaxaudit.pipelines.one_run import _target_note

    assert _target_note(4.0, 1e-5, 1.64, 4.0) == ""  # calibrated: nothing to say
    note = _target_note(1e9, 1e-5, 0.001, 5.5e7)
    assert "target ε = 1e+09 at δ = 1e-05 was not reached" in note
    assert "σ = 0.001" in note and "ε = 5.5e+07" in note
    res = SimpleNamespace(included=np.ones(50, bool), noise_multiplier=0.001, minutes=0.1,
                          accountant_epsilon=5.5e7, one_run=1.0, fdp_one_run_mu=1.0,
                          fdp_one_run=1.0, clopper_pearson=1.0, gdp_mu=1.0, gdp_epsilon=1.0,
                          note=note)
    lines = report.one_run_text(res).splitlines()
    assert lines[1] == f"note: {note}"  # right under the head, before the numbers
