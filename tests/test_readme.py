"""The README's Python example runs and gives the values its comments state."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_api_tour_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)  # noqa: S102
    np.testing.assert_allclose(float(namespace["beta"]), 0.231969, atol=1e-6)
    assert namespace["v"] == 255
    assert np.isfinite(float(namespace["log_tail"])) and float(namespace["log_tail"]) < -50
    assert namespace["counts"].fp.shape == (300,)
    assert namespace["post"].epsilon_right.shape == (4, 200)
    # the traceable kernel, jitted and vmapped over two nodes; node 0 has post's counts, so the
    # two medians of ε_R agree within Monte Carlo error (800 draws each)
    assert namespace["node_post"].epsilon_right.shape == (2, 4, 200)
    np.testing.assert_allclose(np.median(np.asarray(namespace["node_post"].epsilon_right)[0]),
                               np.median(np.asarray(namespace["post"].epsilon_right)), atol=0.3)
    assert float(namespace["est"].lower) <= float(namespace["truth"]) == 1.0
    np.testing.assert_allclose(namespace["accountant"], [100.0])
    # the pipelines: the bounds summary equals the function it wraps; the sweep's shapes
    assert namespace["b"].summary.count_bound == namespace["v"] == 255
    assert namespace["sweep"].scores.shape == namespace["sweep"].masks.shape == (4, 100)
    # the jitted end-to-end audit, vmapped over 5 prior vectors, equals the eager pipeline
    from jaxaudit import bmp, mia

    eps_l, eps_r, jeff_r = (np.asarray(namespace[k]) for k in ("eps_l", "eps_r", "jeff_r"))
    assert eps_l.shape == eps_r.shape == (5, 100) and jeff_r.shape == (5, 3, 100)
    scores, masks = namespace["scores"], namespace["masks"]
    for i, eta in enumerate(np.asarray(namespace["etas"])[[0, 4]]):
        counts = mia.error_counts(mia.bayes_decision(mia.lira_loo(scores, masks), eta), masks)
        eager = bmp.certified_epsilons(counts, confidence=0.95)
        row = 4 * i
        # float32 under jit: never above the eager float64 bound, and close to it
        assert np.all(eps_r[row] <= np.asarray(eager.epsilon_right) + 1e-6)
        np.testing.assert_allclose(eps_r[row], eager.epsilon_right, atol=1e-3)


def test_ci_runs_the_readme_commands_against_the_lock():
    """The README's quick start is two uv commands; .ci/run runs its test command verbatim with
    UV_LOCKED=1 (a stale uv.lock fails CI) and turns missing data into failures."""
    text = README.read_text()
    quick = re.search(r"## Quick start.*?```bash\n(.*?)```", text, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in quick.splitlines() if line.strip()]
    assert len(commands) == 2 and all(c.startswith("uv run ") for c in commands)
    assert commands[0] == "uv run jaxaudit bounds --epsilon 1 --uniform 10 --targets 1000"
    ci = (README.parent / ".ci" / "run").read_text()
    ci_lines = [line.split("#")[0].strip() for line in ci.splitlines()]

    def in_ci(command):
        return any(line == command or line.endswith(" " + command) for line in ci_lines)

    assert in_ci(commands[1])
    # The long statistical studies: a second README command, which CI also runs.
    tests_section = re.search(r"## Tests.*?```bash\n(.*?)```", text, flags=re.S).group(1)
    slow = [line.split("#")[0].strip() for line in tests_section.splitlines() if "-m slow" in line]
    assert slow == ["uv run pytest -q -n 2 -m slow tests"] and in_ci(slow[0])
    assert "export UV_LOCKED=1" in ci_lines and "export JAXAUDIT_REQUIRE_DATA=1" in ci_lines
    assert (README.parent / "uv.lock").is_file()
