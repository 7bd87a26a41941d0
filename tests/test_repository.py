"""The repository explains itself without a developer's machine (issue 16, small things)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# absolute paths of a developer machine or CI workspace (a docstring once carried one)
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|Users|root|mnt)/[\w.-]+")


def test_no_machine_specific_paths_in_tracked_files():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    offenders = []
    for name in files:
        if not name.endswith((".py", ".md", ".toml", ".cfg", ".txt", ".yml", ".yaml")):
            continue
        text = (ROOT / name).read_text(errors="replace")
        offenders += [f"{name}: {m.group(0)}" for m in MACHINE_PATH.finditer(text)]
    assert not offenders, offenders
