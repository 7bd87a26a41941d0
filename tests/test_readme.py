"""The README's Python example runs and gives the values its comments state."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_api_tour_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)  # noqa: S102
    np.testing.assert_allclose(float(namespace["beta"]), 0.231969, atol=1e-6)
    assert namespace["v"] == 255
    assert np.isfinite(float(namespace["log_tail"])) and float(namespace["log_tail"]) < -50
    assert namespace["counts"].fp.shape == (300,)
    assert namespace["post"].eps_r.shape == (4, 200)
    assert float(namespace["est"].lower) <= float(namespace["truth"]) == 1.0
    np.testing.assert_allclose(namespace["accountant"], [100.0])
