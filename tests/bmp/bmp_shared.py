"""Constants and data shared by the bmp tests (imported by conftest.py and the test modules).

Compiling a NUTS program (window adaptation + sampling, vmapped over nodes and chains) takes tens
of seconds on a CPU and dominates the cost of these tests, so every count set the posterior tests
need — the NUTS-vs-grid sets and the soundness simulation — goes through ONE call of
``posterior_nuts`` (one compiled program) in a session-scoped fixture.
"""

import numpy as np

from jaxaudit import bmp, mia

#: count sets (X, N0, Y, N1) checked against the grid posterior
COUNT_SETS = [(10, 100, 30, 100), (2, 60, 40, 60), (25, 80, 25, 80), (0, 40, 12, 50),
              (45, 120, 5, 90)]
#: soundness simulation: known (ε_L, ε_R), repetitions, runs per side
SOUND_EPS, SOUND_REPS, SOUND_N = (1.0, 2.0), 100, 100
#: the one NUTS configuration of the posterior tests
NUTS = bmp.NutsConfig(num_warmup=400, num_samples=1500, num_chains=4)
#: the one NUTS configuration of the audit and CLI tests (same settings + chunk: one program)
AUDIT_NUTS = bmp.NutsConfig(num_warmup=150, num_samples=200, num_chains=2, chunk_size=128)


def soundness_counts():
    """100 optimal attacks (the corner of R(1, 2)) and 100 model-consistent attacks (s ~ U(0, 1),
    the point uniform on the band), N0 = N1 = 100 runs each; α = FPR drawn on the N0 OUT runs,
    β = FNR on the N1 IN runs."""
    (eps_l, eps_r), reps, n = SOUND_EPS, SOUND_REPS, SOUND_N
    rng = np.random.default_rng(2026)
    a_star, b_star = (float(x) for x in bmp.region.region_corner(eps_l, eps_r))
    s, u, v = rng.uniform(size=(3, reps))

    def logit(x):
        return np.log(x) - np.log1p(-x)

    pos = np.stack([np.full(reps, np.log(eps_l)), np.full(reps, np.log(eps_r)), logit(u),
                    logit(v), logit(s)], -1)
    band = bmp.likelihood.constrain_noncentered(pos)
    alpha = np.concatenate([np.full(reps, a_star), np.asarray(band.alpha)])
    beta = np.concatenate([np.full(reps, b_star), np.asarray(band.beta)])
    full = np.full(2 * reps, float(n))
    return mia.ErrorCounts(rng.binomial(n, alpha).astype(float), full,
                           rng.binomial(n, beta).astype(float), full), alpha, beta


