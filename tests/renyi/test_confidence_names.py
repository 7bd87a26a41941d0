"""The threshold-test baselines take ``confidence`` (docs/vocabulary.md); the deprecated
``significance`` (the total failure probability) warns and keeps its meaning."""

import warnings

import numpy as np
import pytest

from jaxaudit import renyi

BASELINES = [
    ("gdp_epsilon_lower_bound", lambda a, b, **kw: renyi.gdp_epsilon_lower_bound(a, b, 1e-5, **kw).epsilon),
    ("clopper_pearson_epsilon_lower_bound",
     lambda a, b, **kw: renyi.clopper_pearson_epsilon_lower_bound(a, b, 1e-5, **kw)),
    ("threshold_renyi_lower_bound",
     lambda a, b, **kw: float(renyi.threshold_renyi_lower_bound(a, b, 2.0, **kw))),
]


def _scores():
    rng = np.random.default_rng(7)
    return 2.0 + rng.normal(size=400), rng.normal(size=400)


@pytest.mark.parametrize("name,fn", BASELINES)
def test_significance_is_the_deprecated_complement_of_confidence(name, fn):
    inn, out = _scores()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = fn(inn, out, confidence=0.9)
    with pytest.warns(DeprecationWarning, match="confidence"):
        old = fn(inn, out, significance=0.1)
    assert new > 0                               # the test has power at this separation
    assert old == pytest.approx(new, rel=1e-9)   # significance = 1 − confidence
    # a different coverage gives a different bound: the argument is really used
    assert fn(inn, out, confidence=0.5) > new
    with pytest.raises(ValueError, match="confidence"):
        fn(inn, out)
    with pytest.raises(ValueError, match="confidence"):
        fn(inn, out, confidence=1.0)
    with pytest.raises(ValueError, match="confidence"):
        fn(inn, out, confidence=0.9, significance=0.1)
