"""Ray at a wrong address fails within seconds naming it (before: ray.init retried for 833 s),
and the raylet's messages (retries, in ANSI colours) go to stderr, never into stdout, where a
command's JSON summary is."""

import os
import time

import pytest

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # before ray is imported
pytest.importorskip("ray")

from jaxaudit.runs.ray_backend import check_reachable, import_ray, run_units_ray  # noqa: E402


def test_a_closed_port_fails_at_once_naming_the_address():
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="127.0.0.1:1"):
        run_units_ray(["a"], lambda name: {}, lambda name, arrays: None, address="127.0.0.1:1")
    assert time.monotonic() - start < 30
    with pytest.raises(OSError, match="ray://127.0.0.1:1"):
        check_reachable("ray://127.0.0.1:1")
    check_reachable("auto")  # no port: left to Ray


def test_raylet_messages_go_to_stderr(capsys):
    ray = import_ray()
    ray._private.worker.print_to_stdstream(
        {"lines": ["raylet retry message"], "pid": "raylet", "is_err": False},
        ignore_prefix=False)
    out, err = capsys.readouterr()
    assert "raylet retry message" not in out
    assert "raylet retry message" in err
