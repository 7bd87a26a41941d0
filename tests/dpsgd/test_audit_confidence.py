"""``confidence`` in ``dpsgd`` (docs/vocabulary.md): the coverage of every lower bound, in (0, 1)."""

import jax
import numpy as np
import pytest

from jaxaudit.accounting import RdpCurve, rdp_epsilons
from jaxaudit.dpsgd import audit_dpsgd
from jaxaudit.dpsgd.scores import MIN_SCORES, min_scores_per_world
from jaxaudit.renyi import CriticConfig, threshold_renyi_lower_bound

ORDERS = np.array([2.0, 4.0])
ACC = RdpCurve(ORDERS, rdp_epsilons(orders=ORDERS, noise_multiplier=1.0, sampling_rate=1.0,
                                    steps=1), "add_remove")
TINY = CriticConfig(hidden_dims=(4,), steps=4, eval_every=2)


def _scores() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12)
    return 1.5 + rng.normal(size=200), rng.normal(size=200)


def _audit(**kw) -> np.ndarray:
    in_s, out_s = _scores()
    audit = audit_dpsgd(jax.random.key(1), in_s, out_s, ACC, critic=TINY, **kw)
    return np.stack([audit.dv_lower, audit.gdp_lower, audit.threshold_lower, audit.mu], axis=1)


@pytest.mark.slow
def test_audit_dpsgd_confidence_widens_the_bounds():
    new = _audit(confidence=0.9)
    wider = _audit(confidence=0.999)
    assert new[:, 1:].min() > 0                     # the baselines have power here
    assert (wider[:, 1:] < new[:, 1:]).all()        # more coverage, smaller lower bounds
    with pytest.raises(ValueError, match="confidence"):
        _audit(confidence=1.0)


def test_min_scores_per_world_at_a_confidence():
    new = min_scores_per_world(confidence=0.99)
    assert min_scores_per_world() == min_scores_per_world(confidence=0.95)
    assert min_scores_per_world(0.99) == new
    # the definition, checked by a scan of the bound itself at this coverage
    first = next(n for n in range(MIN_SCORES, 64) if float(np.atleast_1d(threshold_renyi_lower_bound(jax.random.key(0),
        10.0 + np.arange(n) / n, np.arange(n) / n, [2.0], confidence=0.99))[0]) > 0)
    assert new == first
    with pytest.raises(ValueError, match="confidence"):
        min_scores_per_world(confidence=1.0)
