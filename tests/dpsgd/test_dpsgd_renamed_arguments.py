"""docs/vocabulary.md in ``dpsgd``: ``significance`` (a failure probability) is now
``confidence`` = 1 − significance; the old name warns and keeps its old meaning."""

import warnings

import jax
import numpy as np
import pytest

from jaxaudit.dpsgd import audit_dpsgd
from jaxaudit.dpsgd.scores import MIN_SCORES, min_scores_per_world
from jaxaudit.renyi import CriticConfig, threshold_renyi_lower_bound

ACC = dict(noise_multiplier=1.0, sampling_rate=1.0, steps=1)
TINY = CriticConfig(hidden=(4,), steps=4, eval_every=2)


def _scores() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12)
    return 1.5 + rng.normal(size=200), rng.normal(size=200)


def _audit(**kw) -> np.ndarray:
    in_s, out_s = _scores()
    records = audit_dpsgd(jax.random.key(1), in_s, out_s, [2.0, 4.0], accountant_params=ACC,
                          config=TINY, **kw)
    return np.array([[r.dv_lower, r.gdp_lower, r.threshold_lower, r.gdp_mu] for r in records])


@pytest.mark.slow
def test_audit_dpsgd_significance_is_the_deprecated_complement_of_confidence():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = _audit(confidence=0.9)
        wider = _audit(confidence=0.999)
    with pytest.warns(DeprecationWarning, match="audit_dpsgd\\(significance="):
        old = _audit(significance=0.1)
    np.testing.assert_allclose(old, new, rtol=1e-9, atol=0)
    assert new[:, 1:].min() > 0                     # the baselines have power here
    assert (wider[:, 1:] < new[:, 1:]).all()        # more coverage, smaller lower bounds
    with pytest.raises(ValueError, match="confidence"):
        _audit(confidence=0.9, significance=0.1)
    with pytest.raises(ValueError, match="confidence"):
        _audit(confidence=1.0)


def test_min_scores_per_world_significance_is_the_deprecated_complement():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = min_scores_per_world(confidence=0.99)
        assert min_scores_per_world() == min_scores_per_world(confidence=0.95)
    with pytest.warns(DeprecationWarning, match="min_scores_per_world\\(significance="):
        assert min_scores_per_world(0.01) == new     # positional: still the failure probability
    with pytest.warns(DeprecationWarning):
        assert min_scores_per_world(significance=0.01) == new
    # the definition, checked by a scan of the bound itself at this coverage
    first = next(n for n in range(MIN_SCORES, 64) if float(np.atleast_1d(threshold_renyi_lower_bound(
        10.0 + np.arange(n) / n, np.arange(n) / n, [2.0], confidence=0.99))[0]) > 0)
    assert new == first
    with pytest.raises(ValueError, match="confidence"):
        min_scores_per_world(0.01, confidence=0.99)
    with pytest.raises(ValueError, match="confidence"):
        min_scores_per_world(confidence=1.0)
