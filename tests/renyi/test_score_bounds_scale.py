"""``epsilon_lower_bounds`` at scale: memory O(m) with a small constant (the one-run p-value
sums the binomial pmf over a window of width O(√m), not over 0..m for 16 thresholds at once),
and new numbers of scores compile nothing (the driver is host-side numpy/scipy; the traceable
core's static pmf windows are bucketed).

References: scipy's binomial pmf/sf for the windowed p-value (summed over the whole support),
and the peak resident memory of a fresh interpreter for the memory cap.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxaudit.renyi import epsilon_lower_bounds
from jaxaudit.renyi import score_bounds as sb


def _p_value_scipy(m, g, v, eps, delta):
    """Steinke et al.'s p-value over the whole support 0..v−1 with scipy (vectorised)."""
    q = 1.0 / (1.0 + np.exp(-eps))
    k = np.arange(v)
    upper = np.cumsum(stats.binom.pmf(k, g, q)[::-1])[::-1]   # P[k ≤ X < v]
    window = float(np.max(upper / (v - k))) if v > 0 else 0.0
    return min(stats.binom.sf(v - 1, g, q) + 2 * m * delta * window, 1.0)


@pytest.mark.parametrize("g,v,eps", [(150_000, 120_000, 1.2), (150_000, 80_000, 0.1),
                                     (150_000, 149_000, 4.0), (60_000, 45_000, 1.0)])
def test_windowed_p_value_matches_the_whole_support(g, v, eps):
    m, delta = 400_000, 1e-6
    length = sb._pmf_length(m)
    assert length < g   # the window is shorter than the support: the case under test
    with jax.enable_x64(True):
        p = float(jax.jit(sb._one_run_p_value, static_argnums=5)(
            jnp.asarray(float(m)), g, v, jnp.asarray(eps), jnp.asarray(delta), length))
    assert p == pytest.approx(_p_value_scipy(m, g, v, eps, delta), rel=1e-9, abs=1e-300)


def test_window_lengths_are_bucketed():
    assert sb._pmf_length(10) == sb._pmf_length(4000) == sb._MIN_LENGTH
    for m in (10**4, 10**5, 2 * 10**6, 8 * 10**6):
        n = sb._pmf_length(m)
        assert n & (n - 1) == 0 and n >= 2 * (20 * np.sqrt(m) + 2) + 2
    assert sb._pmf_length(2 * 10**6) <= 2**16   # 16 thresholds × 65536 × 8 B per array


@pytest.mark.slow
def test_a_new_size_in_the_same_bucket_compiles_nothing():
    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: compiles.append(event)
        if event == "/jax/core/compile/backend_compile_duration" else None)
    rng = np.random.default_rng(0)
    epsilon_lower_bounds(jax.random.key(0), rng.normal(1, 1, 300), rng.normal(0, 1, 300),
                         delta=1e-5)                      # warm: compiles (gdp_epsilon only)
    compiles.clear()
    # new sizes, in the first call's window bucket and beyond it (m > 4096 had its own
    # program), with both Bonferroni modes
    for n_in, n_out, mode in ((310, 290, "grid"), (1000, 1500, "hull"), (5000, 3000, "hull"),
                              (3000, 2500, "grid")):
        epsilon_lower_bounds(jax.random.key(1), rng.normal(1, 1, n_in),
                             rng.normal(0, 1, n_out), delta=1e-5, bonferroni=mode)
    assert compiles == []


_MEMORY_SCRIPT = textwrap.dedent("""
    import jax, numpy as np
    from jaxaudit.renyi import epsilon_lower_bounds
    rng = np.random.default_rng(0)
    n = 10**6
    res = epsilon_lower_bounds(jax.random.key(0), rng.normal(1, 1, n), rng.normal(0, 1, n),
                               delta=1e-5)
    assert res.one_run > 0, res
    # VmHWM is this process's own peak: getrusage's ru_maxrss keeps the parent's peak across
    # fork + exec (Linux records the old mm's high-water mark at exec), which under xdist is the
    # pytest worker's few GB, not this script's.
    with open("/proc/self/status") as f:
        print(next(line.split()[1] for line in f if line.startswith("VmHWM:")))  # KiB
""")

#: Peak resident memory allowed for 10⁶ + 10⁶ scores (measured 0.5 GB; it was 2.4 GB, and
#: 4·10⁶ + 4·10⁶ tried to allocate 7.9 GB).
_CAP_KIB = 1_200_000


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_a_million_scores_per_world_run_under_a_memory_cap():
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT], capture_output=True,
                         text=True, timeout=900, check=True)
    peak_kib = int(out.stdout.split()[-1])
    assert peak_kib < _CAP_KIB, f"peak RSS {peak_kib / 1e6:.2f} GB"
