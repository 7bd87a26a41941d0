"""docs/vocabulary.md's naming rule in ``renyi``: ``alpha`` (a Rényi order) is now ``order`` or
``orders`` in the same position, and ``delta``/``significance`` meaning a failure probability is now
``confidence`` = 1 − failure. Each old name warns with DeprecationWarning and keeps its OLD
meaning: the same number as the new name, and a different number when the argument changes (so
the test can fail if an alias were dropped on the floor)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit import renyi
from jaxaudit.renyi.estimate import corrected_objective
from jaxaudit.renyi.score_bounds import one_run_bounds
from jaxaudit.renyi.training import objective_standard_error

TINY = renyi.CriticConfig(hidden=(4,), steps=4, eval_every=2)


def _scores(seed: int = 7, n: int = 300, shift: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return shift + rng.normal(size=n), rng.normal(size=n)


def _critic_values(seed: int = 3) -> tuple[jax.Array, jax.Array]:
    kq, kp = jax.random.split(jax.random.key(seed))
    return (0.4 + 0.3 * jax.random.normal(kq, (200,)),
            0.3 * jax.random.normal(kp, (200,)))


def _new_quiet(call):
    """The new spelling does not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return call()


def _flat(tree) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(tree)])


def _same(a, b) -> None:
    np.testing.assert_allclose(_flat(a), _flat(b), rtol=1e-9, atol=0)


def _runs(r: renyi.RunsNeeded) -> tuple:
    return r.runs_per_world, r.pilot_bound, r.estimate


G_Q, G_P = _critic_values()
IN, OUT = _scores()

# (name, call with the order passed by keyword `kw`)
ORDER_CALLS = [
    ("gaussian_renyi", "order", lambda **kw: renyi.gaussian_renyi(1.0, 2.0, **kw)),
    ("laplace_renyi", "order", lambda **kw: renyi.laplace_renyi(1.0, 2.0, **kw)),
    ("binary_renyi", "order", lambda **kw: renyi.binary_renyi(0.6, 0.3, **kw)),
    ("dv_objective", "order", lambda **kw: renyi.dv_objective(G_Q, G_P, **kw)),
    ("corrected_objective", "order", lambda **kw: corrected_objective(G_Q, G_P, **kw)),
    ("objective_standard_error", "order",
     lambda **kw: objective_standard_error(G_Q, G_P, **kw)),
    ("dv_surrogate_loss", "order",
     lambda **kw: renyi.dv_surrogate_loss(G_Q, G_P, state=renyi.dv_ema_init(), rate=0.5,
                                          **kw)[0]),
    ("held_out_lower_bound", "order",
     lambda **kw: renyi.held_out_lower_bound(G_Q, G_P, lo=-1.5, hi=1.5, confidence=0.95, **kw)),
    ("theory_radius", "order",
     lambda **kw: renyi.theory_radius(bound=1.0, rademacher_q=0.01, rademacher_p=0.01,
                                      n_q=1000, n_p=1000, confidence=0.95, **kw)),
    ("threshold_renyi_lower_bound", "orders",
     lambda **kw: renyi.threshold_renyi_lower_bound(IN, OUT, confidence=0.95, **kw)),
    ("binned_renyi_lower_bound", "orders",
     lambda **kw: renyi.binned_renyi_lower_bound(IN, OUT, bins=(2, 3), **kw)),
    ("runs_needed", "orders", lambda **kw: _runs(renyi.runs_needed(IN[:60], OUT[:60], **kw))),
]


@pytest.mark.parametrize("name,new,call", ORDER_CALLS, ids=[c[0] for c in ORDER_CALLS])
def test_alpha_is_the_deprecated_name_of_the_order(name, new, call):
    expected = _new_quiet(lambda: call(**{new: 2.0}))
    with pytest.warns(DeprecationWarning, match=f"{name}\\(alpha=.*{new}="):
        old = call(alpha=2.0)
    _same(old, expected)
    other = _new_quiet(lambda: call(**{new: 3.0}))
    assert not np.allclose(_flat(other), _flat(expected))
    with pytest.raises(ValueError, match=f"{new} only"):
        call(alpha=2.0, **{new: 2.0})


def test_order_keeps_its_position_and_works_under_jit_and_vmap():
    np.testing.assert_allclose(float(renyi.gaussian_renyi(1.0, 2.0, 3.0)), 3.0 / 8.0, rtol=1e-6)
    f = jax.jit(jax.vmap(lambda a: renyi.dv_objective(G_Q, G_P, order=a)))
    np.testing.assert_allclose(f(jnp.array([1.5, 2.0])),
                               [float(renyi.dv_objective(G_Q, G_P, a)) for a in (1.5, 2.0)],
                               rtol=1e-5)
    # the alias also works inside a transform (the rename is Python-level)
    with pytest.warns(DeprecationWarning):
        g = jax.jit(lambda a: renyi.gaussian_renyi(1.0, 2.0, alpha=a))(2.0)
    assert float(g) == pytest.approx(0.25, rel=1e-6)


def test_train_critic_alpha_is_order():
    key = jax.random.key(11)
    x_q, x_p = jnp.asarray(IN[:64], jnp.float32), jnp.asarray(OUT[:64], jnp.float32)
    new = _new_quiet(lambda: renyi.train_critic(key, x_q, x_p, order=2.0, config=TINY))
    with pytest.warns(DeprecationWarning, match="train_critic\\(alpha="):
        old = renyi.train_critic(key, x_q, x_p, alpha=2.0, config=TINY)
    _same(old[0], new[0])


# (name, old keyword, call taking keyword arguments); `confidence` = 1 − old
FAILURE_CALLS = [
    ("held_out_lower_bound", "delta",
     lambda **kw: renyi.held_out_lower_bound(G_Q, G_P, 2.0, -1.5, 1.5, **kw)),
    ("theory_radius", "delta",
     lambda **kw: renyi.theory_radius(2.0, 1.0, 0.01, 0.01, 1000, 1000, **kw)),
    ("binned_renyi_lower_bound", "significance",
     lambda **kw: renyi.binned_renyi_lower_bound(IN, OUT, 2.0, bins=(2, 3), **kw)),
    ("runs_needed", "delta", lambda **kw: _runs(
        renyi.runs_needed(IN[:60], OUT[:60], 2.0, **kw))),
    ("one_run_bounds", "significance",
     lambda **kw: one_run_bounds(IN, OUT, 1e-5, **kw)[:3]),
]


@pytest.mark.parametrize("name,old,call", FAILURE_CALLS, ids=[c[0] for c in FAILURE_CALLS])
def test_failure_probability_is_the_deprecated_complement_of_confidence(name, old, call):
    expected = _new_quiet(lambda: call(confidence=0.9))
    with pytest.warns(DeprecationWarning, match=f"{name}\\({old}=.*confidence=1 - {old}"):
        value = call(**{old: 0.1})   # old meaning: the failure probability
    _same(value, expected)
    wider = _new_quiet(lambda: call(confidence=0.999))
    # more coverage, a smaller lower bound (or a larger radius / more runs)
    assert not np.allclose(_flat(wider), _flat(expected))
    with pytest.raises(ValueError, match="confidence"):
        call(confidence=0.9, **{old: 0.1})
    with pytest.raises(ValueError, match="confidence"):
        call(confidence=1.0)


def test_positional_failure_probability_still_means_delta():
    """held_out_lower_bound/theory_radius took δ positionally: that call keeps its meaning."""
    with pytest.warns(DeprecationWarning, match="held_out_lower_bound\\(delta="):
        old = renyi.held_out_lower_bound(G_Q, G_P, 2.0, -1.5, 1.5, 0.05, "hoeffding")
    new = renyi.held_out_lower_bound(G_Q, G_P, 2.0, -1.5, 1.5, method="hoeffding",
                                     confidence=0.95)
    _same(old, new)
    with pytest.warns(DeprecationWarning, match="theory_radius\\(delta="):
        old = renyi.theory_radius(2.0, 1.0, 0.01, 0.01, 1000, 1000, 0.05)
    _same(old, renyi.theory_radius(2.0, 1.0, 0.01, 0.01, 1000, 1000, confidence=0.95))
    with pytest.raises(ValueError, match="confidence"):
        renyi.theory_radius(2.0, 1.0, 0.01, 0.01, 1000, 1000)


@pytest.mark.slow
def test_estimate_renyi_and_renyi_estimator_delta_is_the_failure_probability():
    key = jax.random.key(5)
    x_q, x_p = IN[:80], OUT[:80]
    new = _new_quiet(lambda: renyi.estimate_renyi(key, x_q, x_p, orders=[1.5, 2.0],
                                                  confidence=0.9, config=TINY))
    with pytest.warns(DeprecationWarning) as record:
        old = renyi.estimate_renyi(key, x_q, x_p, alpha=[1.5, 2.0], delta=0.1, config=TINY)
    messages = " ".join(str(w.message) for w in record)
    assert "estimate_renyi(alpha=" in messages and "estimate_renyi(delta=" in messages
    _same(old.lower, new.lower)
    _same(old.point, new.point)
    # renyi_estimator: the pure builder
    args = (key, jnp.asarray(x_q, jnp.float32), jnp.asarray(x_p, jnp.float32), jnp.float32(2.0))
    fn_new = _new_quiet(lambda: renyi.renyi_estimator(confidence=0.9, config=TINY))
    with pytest.warns(DeprecationWarning, match="renyi_estimator\\(delta="):
        fn_old = renyi.renyi_estimator(delta=0.1, config=TINY)
    _same(fn_old(*args).lower, fn_new(*args).lower)
    with pytest.raises(ValueError, match="confidence"):
        renyi.renyi_estimator(delta=0.1, confidence=0.9)
