"""Resume after ``kill -9``: no measured record is lost and the budget completes."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from mlflow.tracking import MlflowClient

from tests.e2e.helpers import COSTLAB, run_cli, tiny_config

pytestmark = pytest.mark.slow
TRIALS = 16


def _record_lines(tmp):
    files = list((tmp / "runs").rglob("database_tuning_record.json"))
    return files[0].read_text().splitlines() if files else []


def test_kill_after_first_batch_then_resume(tmp_path):
    config = tiny_config(tmp_path, name="resume", models=("tvm-xgb",), trials=TRIALS)
    proc = subprocess.Popen([*COSTLAB, "run", str(config)], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 400
    try:
        while len(_record_lines(tmp_path)) < 1:
            assert proc.poll() is None, "costlab run ended before its first batch"
            assert time.time() < deadline, "no batch measured in time"
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = _record_lines(tmp_path)
    assert 1 <= len(before) < TRIALS

    run_cli("run", config, cwd=tmp_path)
    after = _record_lines(tmp_path)
    assert len(after) == TRIALS
    assert after[: len(before)] == before  # nothing measured before the kill was lost

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("resume")
    children = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'child'")
    assert len(children) == 1  # the child run continued, no half-finished duplicate
    (child,) = children
    assert child.info.status == "FINISHED"
    steps = sorted(m.step for m in client.get_metric_history(child.info.run_id, "best_latency_us"))
    assert steps == list(range(1, TRIALS + 1))
