"""The NUTS kernel in blackjax's terms: ``nuts_node`` under the user's jit and vmap over nodes
against the host driver ``posterior_nuts`` (medians within a few MCSE), blackjax's own ``nuts``
on ``node_log_density`` (docs/bmp.md's blocks, run as written), the refusal of the host driver
under tracing, and one key check for every random entry point."""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit import bmp
from jaxaudit.mia import ErrorCounts

DOC = Path(__file__).resolve().parents[2] / "docs" / "bmp.md"
COUNTS = ErrorCounts(10.0, 100.0, 30.0, 100.0)


def _doc_blocks() -> list[str]:
    """The python blocks of docs/bmp.md's section "NUTS as a building block"."""
    text = DOC.read_text()
    section = text.split("### NUTS as a building block", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.slow
def test_docs_kernel_blocks_run_and_agree_with_posterior_nuts():
    """nuts_node under jit∘vmap over 3 nodes, blackjax.nuts by hand on node_log_density, and
    posterior_nuts on the same counts: the posterior medians of ε_R agree within 4 combined
    MCSE (nuts_node vs posterior_nuts, both report mcse_median) and within 0.15 for the single
    hand-written chain of 1000 draws (its MCSE is not computed; 0.15 is several times the
    MCSE of the 4-chain runs here, ≈ 0.01–0.03)."""
    blocks = _doc_blocks()
    assert len(blocks) == 2
    ns: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), ns)  # noqa: S102
    post, host = ns["post"], ns["host"]
    assert post.epsilon_right.shape == (3, 4, 500) and post.rhat.shape == (3,)
    assert np.all(np.asarray(post.rhat) < 1.05) and np.all(np.asarray(post.ess) > 100)
    kernel, driver = np.asarray(ns["medians"]), np.asarray(ns["host_medians"])
    mcse = np.hypot(np.asarray(post.mcse_median), np.asarray(host.mcse_median))
    assert np.all(np.abs(kernel - driver) <= 4 * mcse), (kernel, driver, mcse)
    np.testing.assert_allclose(np.asarray(ns["by_hand"]), driver, atol=0.15)


@pytest.mark.slow
def test_nuts_node_single_node_is_one_row_of_the_vmap():
    """One node under jit equals its row of the vmapped call with the same key (the node axis
    adds nothing to a node's program), up to float reassociation of the batched kernels."""
    config = bmp.NutsConfig(num_warmup=50, num_samples=50, num_chains=2)
    counts = ErrorCounts(jnp.array([10.0, 40.0]), jnp.full(2, 100.0), jnp.array([30.0, 20.0]),
                         jnp.full(2, 100.0))
    keys = jax.random.split(jax.random.key(3), 2)
    both = jax.jit(jax.vmap(lambda k, c: bmp.nuts_node(k, c, config=config)))(keys, counts)
    one = jax.jit(lambda k, c: bmp.nuts_node(k, c, config=config))(
        keys[1], ErrorCounts(*(c[1] for c in counts)))
    np.testing.assert_allclose(np.asarray(one.epsilon_right), np.asarray(both.epsilon_right)[1],
                               rtol=1e-4, atol=1e-4)


def test_node_log_density_is_the_model_of_posterior_nuts():
    """node_log_density picks posterior_nuts' coordinates for each attack prior and equals
    make_log_density with the same settings; it runs on traced counts."""
    from jaxaudit.bmp.likelihood import make_log_density

    for prior, dim in ((None, 5), (0.5, 4), ("optimal", 2), ((20.0, 1.0), 5)):
        target = bmp.node_log_density(COUNTS, bmp.PosteriorModel(attack_prior=prior))
        assert target.dim == dim, prior
    target = bmp.node_log_density(COUNTS, bmp.PosteriorModel(prior_variance=4.0))
    ref = make_log_density("centered", COUNTS, prior_variance=4.0)
    x = jnp.array([0.1, -0.2, 0.3, 0.0, 0.5])
    assert float(target.logdensity_fn(x)) == pytest.approx(float(ref.logdensity_fn(x)), rel=1e-6)
    lp = jax.jit(jax.vmap(lambda fp: bmp.node_log_density(
        ErrorCounts(fp, 100.0, 30.0, 100.0), bmp.PosteriorModel(prior_variance=4.0)).logdensity_fn(x)))(
        jnp.array([10.0, 20.0]))
    assert lp.shape == (2,) and float(lp[0]) == pytest.approx(float(ref.logdensity_fn(x)),
                                                              rel=1e-5)
    with pytest.raises(ValueError, match="one node"):
        bmp.node_log_density(ErrorCounts(*(np.array([1.0, 2.0]),) * 2,
                                         *(np.array([3.0, 4.0]),) * 2))
    with pytest.raises(ValueError, match="delta_link"):
        bmp.node_log_density(COUNTS, bmp.PosteriorModel(delta_link="tanh"))


def test_posterior_nuts_under_a_transform_names_the_kernel():
    with pytest.raises(TypeError, match="nuts_node"):
        jax.jit(lambda fp: bmp.posterior_nuts(
            jax.random.key(0), ErrorCounts(fp, 100.0, 30.0, 100.0)))(10.0)
    with pytest.raises(TypeError, match="nuts_node"):
        jax.vmap(lambda k: bmp.posterior_nuts(k, COUNTS))(jax.random.split(jax.random.key(0), 2))


@pytest.mark.parametrize("call", [
    lambda: bmp.posterior_nuts(0, COUNTS),
    lambda: bmp.nuts_node(0, COUNTS),
    lambda: bmp.jeffreys_estimate(0, COUNTS),
    lambda: bmp.audit_nodes(0, ErrorCounts(*(np.array([1, 2]),) * 2, *(np.array([3, 4]),) * 2),
                            np.array([0, 1])),
    lambda: bmp.audit_from_scores(0, np.zeros((4, 3)), np.eye(4, 3, dtype=bool),
                                  np.full(3, 0.5)),
    lambda: bmp.leakage.snowball_draws(0, np.array([0]), np.array([1]), 2, 1, 3),
])
def test_random_entry_points_refuse_a_non_key_alike(call):
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        call()
