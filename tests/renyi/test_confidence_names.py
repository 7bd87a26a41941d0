"""The threshold-test baselines take ``confidence`` (docs/vocabulary.md): the joint coverage,
whose failure probability 1 − confidence is split between the two rates."""

import jax
import numpy as np
import pytest

from jaxaudit import renyi

KEY = jax.random.key(0)
BASELINES = [
    ("gdp_epsilon_lower_bound",
     lambda a, b, **kw: renyi.gdp_epsilon_lower_bound(KEY, a, b, 1e-5, **kw).epsilon),
    ("clopper_pearson_epsilon_lower_bound",
     lambda a, b, **kw: renyi.clopper_pearson_epsilon_lower_bound(KEY, a, b, 1e-5, **kw)),
    ("threshold_renyi_lower_bound",
     lambda a, b, **kw: float(renyi.threshold_renyi_lower_bound(KEY, a, b, 2.0, **kw))),
]


def _scores():
    rng = np.random.default_rng(7)
    return 2.0 + rng.normal(size=400), rng.normal(size=400)


@pytest.mark.parametrize("name,fn", BASELINES)
def test_confidence_is_the_coverage(name, fn):
    inn, out = _scores()
    new = fn(inn, out, confidence=0.9)
    assert new > 0                               # the test has power at this separation
    assert fn(inn, out) == fn(inn, out, confidence=0.95)   # the default
    # a lower coverage gives a larger bound: the argument is really used
    assert fn(inn, out, confidence=0.5) > new
    with pytest.raises(ValueError, match="confidence"):
        fn(inn, out, confidence=1.0)
    with pytest.raises(TypeError, match="significance"):
        fn(inn, out, significance=0.1)
