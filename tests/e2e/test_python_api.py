"""costlab called from a script or notebook: one real tuning run from Python."""

import logging
import sys

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
