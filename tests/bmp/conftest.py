"""Shared NUTS runs for the bmp tests.

Compiling a NUTS program (window adaptation + sampling, vmapped over nodes and chains) takes tens
of seconds on a CPU and dominates the cost of these tests, so every count set the posterior tests
need — the NUTS-vs-grid sets and the soundness simulation — goes through ONE call of
``posterior_nuts`` (one compiled program) in a session-scoped fixture.
"""

import jax
import numpy as np
import pytest
from bmp_shared import COUNT_SETS, NUTS, soundness_counts

from jaxaudit import bmp, mia


@pytest.fixture(scope="session")
def shared_nuts():
    """(posterior of the COUNT_SETS, posterior of the soundness counts, soundness counts)."""
    sound, _, _ = soundness_counts()
    grid_sets = mia.ErrorCounts(*(np.array([c[j] for c in COUNT_SETS], float) for j in range(4)))
    counts = mia.ErrorCounts(*(np.concatenate([g, s]) for g, s in zip(grid_sets, sound)))
    num = counts.fp.shape[0]
    post = bmp.posterior_nuts(jax.random.key(0), counts, deduplicate=False,
                              config=NUTS._replace(chunk_size=num))
    k = len(COUNT_SETS)
    return (jax.tree.map(lambda x: x[:k], post), jax.tree.map(lambda x: x[k:], post), sound)


@pytest.fixture(scope="session")
def strong_prior_nuts(shared_nuts):
    """Posterior under the strong-attack prior Beta(20, 1) of the soundness simulation's optimal
    attacks; same sampler settings and padded size as ``shared_nuts`` (its compiled program is
    reused: the Beta prior's (a, b) are inputs, not constants)."""
    from bmp_shared import SOUND_REPS

    sound = shared_nuts[2]
    num = len(COUNT_SETS) + 2 * SOUND_REPS
    opt = mia.ErrorCounts(*(c[:SOUND_REPS] for c in sound))
    return bmp.posterior_nuts(jax.random.key(20), opt, bmp.PosteriorModel(attack_prior=(20.0, 1.0)),
                              NUTS._replace(chunk_size=num), deduplicate=False), opt


@pytest.fixture(scope="session")
def optimal_prior_nuts(shared_nuts):
    """Posterior under ``attack_prior="optimal"`` of the COUNT_SETS and of the soundness
    simulation's optimal attacks, in one call (one compiled program)."""
    from bmp_shared import SOUND_REPS

    sound = shared_nuts[2]
    grid_sets = mia.ErrorCounts(*(np.array([c[j] for c in COUNT_SETS], float) for j in range(4)))
    counts = mia.ErrorCounts(*(np.concatenate([g, s[:SOUND_REPS]])
                               for g, s in zip(grid_sets, sound)))
    post = bmp.posterior_nuts(jax.random.key(30), counts, bmp.PosteriorModel(attack_prior="optimal"),
                              NUTS, deduplicate=False)
    k = len(COUNT_SETS)
    opt = mia.ErrorCounts(*(c[:SOUND_REPS] for c in sound))
    return jax.tree.map(lambda x: x[:k], post), jax.tree.map(lambda x: x[k:], post), opt
