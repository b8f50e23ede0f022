"""costlab called from a script or notebook: one real tuning run from Python."""

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from costlab.config import config_from_dict
from costlab.experiment import QUIETED_LOGGERS, run_experiment

pytestmark = pytest.mark.slow


def test_a_run_from_python_puts_back_the_process_state_it_changes(tmp_path):
    """A run seeds numpy's global RNG per session, sets loggers' levels and gives torch one
    thread (graph models); from a notebook, those stayed changed after the call returned."""
    import torch

    torch.set_num_threads(2)
    np.random.seed(1234)
    expected_draw = np.random.RandomState(1234).random_sample()
    levels = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    cfg = config_from_dict({
        "name": "from-python", "target": "cpu",
        "workloads": [{"name": "gemm", "params": {"M": 32, "N": 32, "K": 32}}],
        "cost_models": ["gnn"], "seeds": [0],
        "search": {"trials": 4, "trials_per_iter": 4, "population_size": 16},
        "measure": {"number": 2, "repeat": 1, "min_repeat_ms": 1}, "builder": {"workers": 1},
        "mlflow": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"}, "work_dir": str(tmp_path / "runs"),
    })
    (outcome,) = run_experiment(cfg)
    assert outcome.status == "finished" and outcome.trials == 4, outcome
    assert np.random.random_sample() == expected_draw
    assert {name: logging.getLogger(name).level for name in QUIETED_LOGGERS} == levels
    assert sys.modules["torch"].get_num_threads() == 2


def test_the_python_example_runs_each_step(tmp_path):
    """experiments/python_api.py, which the README's "Use costlab from Python" section follows, on
    the smallest committed dataset (copied: its feature cache is written beside it)."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "datasets" / "h200-llm-ops", tmp_path / "dataset")
    done = subprocess.run([sys.executable, str(root / "experiments" / "python_api.py"), "--dataset",
                           str(tmp_path / "dataset"), "--work-dir", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("1. lgbm on ") and "Kendall tau" in line for line in lines)
    assert any(line.startswith("2. example-linear: ") and line.endswith("model checks passed") for line in lines)
    assert any(line.startswith("   tuned with it: 8 trials, best ") for line in lines)
    assert any(line.startswith("3. a hand-built schedule: ") for line in lines)
    (curve,) = [line for line in lines if line.startswith("4. gemm(M=64,N=64,K=64")]
    assert curve.count(",") >= 7  # one best latency per measured trial
