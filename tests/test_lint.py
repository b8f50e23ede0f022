"""The code passes ruff's checks as configured in pyproject.toml (pyflakes: unused imports
and variables, undefined names, redefinitions)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    done = subprocess.run([ruff, "check", "costlab", "tests", "experiments"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
