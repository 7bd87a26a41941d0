"""Shared test configuration: data directory and CPU-only JAX."""

import os
from pathlib import Path

_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "JAXAUDIT_DATA" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["JAXAUDIT_DATA"] = str(_SHARED_DATA)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
