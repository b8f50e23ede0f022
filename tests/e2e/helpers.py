"""Helpers of the end-to-end tests: write a tiny config, run the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

COSTLAB = [sys.executable, "-m", "costlab"]


def tiny_config(tmp: Path, name: str = "tiny", models=("tvm-xgb", "random"), trials: int = 16,
                tracking_uri: str | None = None, seeds=(0,), builder_workers: int | None = 1, **extra) -> Path:
    """A config of a 32x32x32 GEMM on the host CPU. ``builder_workers``: 1 by default, because
    the suite runs two test files at once on two cores and each builder worker process imports
    TVM again; None for the default (every core), as a user's config has it."""
    cfg = {
        "name": name,
        "target": "cpu",
        "workloads": [{"name": "gemm", "params": {"M": 32, "N": 32, "K": 32}}],
        "cost_models": list(models),
        "seeds": list(seeds),
        "search": {"trials": trials, "trials_per_iter": 8, "population_size": 32},
        "measure": {"number": 2, "repeat": 1, "min_repeat_ms": 1},
        "mlflow": {"tracking_uri": tracking_uri or f"sqlite:///{tmp / 'mlflow.db'}"},
        "work_dir": str(tmp / "runs"),
    }
    if builder_workers is not None:
        cfg["builder"] = {"workers": builder_workers}
    cfg.update(extra)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_cli(*args, cwd: Path, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([*COSTLAB, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"costlab {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def without_write_override() -> list[str]:
    """A command prefix under which this user's file modes hold: root reads them as advice
    (CAP_DAC_OVERRIDE), so root drops that capability with util-linux's ``setpriv``."""
    import shutil

    import pytest

    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made here")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
