"""The validation layer at the public boundary under hostile input: strings, complex numbers, shapes that do not broadcast, non-keys and truthy strings for
flags are refused naming the argument; messages print plain numbers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit import bounds
from jaxaudit._validation import (
    check_at_least,
    check_instance,
    check_integer,
    check_nonnegative,
    plain,
)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: bounds.posterior_success("0.1", 1.0), "prior"),
    (lambda: bounds.posterior_success(0.1, "1"), "epsilon"),
    (lambda: bounds.success_count_bound(np.full(10, 0.1), 1.0, gamma="0.05"), "gamma"),
    (lambda: bounds.success_count_bound(["0.1", "0.2"], 1.0), "priors"),
    (lambda: bounds.success_count_bound(np.full(3, 0.1 + 0.1j), 1.0), "priors"),
    (lambda: bounds.balle_rero_rdp(0.1, "2", 1.0), "order"),
])
def test_numeric_strings_and_complex_values_refused(call, name):
    """Hostile 11: numeric strings for ε, γ, priors, α and complex priors were accepted."""
    with pytest.raises(TypeError, match=name):
        call()


def test_renyi_samples_as_strings_refused():
    from jaxaudit.renyi import estimate_renyi

    x = np.linspace(0.0, 1.0, 64)
    with pytest.raises((TypeError, ValueError), match="x_q"):
        estimate_renyi(jax.random.key(0), x.astype(str), x, 2.0)


def test_truthy_strings_for_flags_refused(tmp_path):
    """Hostile 11: log="yes" was accepted; download="no" started a download."""
    from jaxaudit.datasets import load_planetoid

    with pytest.raises(TypeError, match="log must be True or False"):
        bounds.poisson_binomial_tail([0.1, 0.2], 1, log="yes")
    with pytest.raises(TypeError, match="download must be True or False"):
        load_planetoid("cora", data_dir=tmp_path, download="no")
    assert not any(tmp_path.rglob("*"))  # nothing fetched, nothing created


def test_shapes_that_do_not_broadcast_are_named():
    """Hostile 10: shape-mismatched arguments to posterior_success gave a raw shape error."""
    with pytest.raises(ValueError, match=r"prior \(2,\), epsilon \(3,\)"):
        bounds.posterior_success([0.1, 0.2], [1.0, 2.0, 3.0])


@pytest.mark.slow
def test_integer_prng_key_refused():
    """Hostile 10: an integer PRNG key gave a raw JAX error deep inside."""
    from jaxaudit.datasets import make_csbm
    from jaxaudit.graph import ShadowTraining, train_shadow_models, uniform_sampler
    from jaxaudit.renyi import estimate_renyi

    graph = make_csbm(jax.random.key(0), num_nodes=40, num_classes=2, num_features=4)
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        train_shadow_models(0, graph, uniform_sampler(0.5), "gcn", 2, ShadowTraining(epochs=1))
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        estimate_renyi(7, np.zeros(64), np.ones(64), 2.0)
    # both key kinds are accepted
    for key in (jax.random.key(1), jax.random.PRNGKey(1)):
        train_shadow_models(key, graph, uniform_sampler(0.5), "gcn", 2, ShadowTraining(epochs=1))


def test_audit_dpsgd_refuses_2d_scores():
    """Hostile 11: 2-D scores were raveled silently."""
    from jaxaudit.accounting import RdpCurve
    from jaxaudit.dpsgd import audit_dpsgd

    scores = np.zeros((4, 8))
    curve = RdpCurve(np.array([2.0]), np.array([0.1]), "add_remove")
    with pytest.raises(ValueError, match=r"in_scores must be 1-D.*\(4, 8\)"):
        audit_dpsgd(jax.random.key(0), scores, scores.ravel(), curve)


def test_messages_print_plain_numbers():
    """Hostile 14 and small things: messages said "got array(-1.)"."""
    with pytest.raises(ValueError) as info:
        bounds.posterior_success(0.1, jnp.asarray(-1.0))
    assert "-1.0" in str(info.value) and "array" not in str(info.value)
    with pytest.raises(ValueError) as info:
        check_integer("steps", np.float64(2.5), minimum=1)
    assert str(info.value) == "steps must be an integer >= 1, got 2.5"
    with pytest.raises(ValueError) as info:
        check_nonnegative("mu", np.array([1.0, -2.0]))
    assert "got -2.0" in str(info.value)
    assert plain(jnp.asarray(0.0)) == "0.0" and plain(np.arange(3)) == "[0, 1, 2]"


def test_validation_is_skipped_under_jit_as_documented():
    """Hostile 12: under jax.jit there is no concrete value to check (README says so)."""
    out = jax.jit(bounds.posterior_success)(1.5, 1.0)
    assert not np.isfinite(float(out)) or not 0.0 <= float(out) <= 1.0
    with pytest.raises(ValueError, match="prior"):
        bounds.posterior_success(1.5, 1.0)


def test_check_at_least_bounds_nan_and_tracers():
    """One lower-bound check behind check_nonnegative, check_positive and check_order_limits:
    NaN and values below the bound are refused (the bound itself too when strict), +inf passes,
    a tracer passes unchecked."""
    np.testing.assert_array_equal(check_at_least("x", [1.0, np.inf], 1), [1.0, np.inf])
    with pytest.raises(ValueError, match=r"x must be > 1, got 1.0"):
        check_at_least("x", 1.0, 1, strict=True)
    with pytest.raises(ValueError, match=r"x must be >= 0 \(why\), got"):
        check_at_least("x", [0.5, np.nan], 0, note=" (why)")
    assert float(jax.jit(lambda v: check_at_least("x", v, 1) * 2)(-3.0)) == -6.0


def test_check_instance_names_the_public_home():
    from jaxaudit.dpsgd import DpsgdConfig
    config = DpsgdConfig(1.0, 1.0, 0.1)
    assert check_instance("config", config, DpsgdConfig) is config
    with pytest.raises(TypeError, match=r"config must be a jaxaudit\.dpsgd\.DpsgdConfig, got dict"):
        check_instance("config", {}, DpsgdConfig)
    with pytest.raises(ValueError):  # also a ValueError, as every argument error
        check_instance("config", {}, DpsgdConfig)


def test_paths_of_the_wrong_kind_and_empty_paths_are_named(tmp_path):
    from jaxaudit._validation import check_input_path, check_output_dir, check_output_file

    a_file = tmp_path / "f.txt"
    a_file.write_text("1")
    with pytest.raises(IsADirectoryError, match=r"--priors .* is a folder, not a file"):
        check_input_path("--priors", tmp_path)
    with pytest.raises(NotADirectoryError, match=r"DIR .* is a file, not a folder"):
        check_input_path("DIR", a_file, folder=True)
    with pytest.raises(FileNotFoundError, match=r"--graph file not found"):
        check_input_path("--graph", tmp_path / "missing.npz")
    for check in (check_input_path, check_output_dir, check_output_file):
        with pytest.raises(ValueError, match=r"--out must not be empty"):
            check("--out", "")
