"""Crash safety: ``kill -9`` at several points of ``costlab run``, then resume.

The kill points are found in MetaSchedule's live task log: during the second
batch's build, during its run, and during a cost-model update (TVM's XGBModel logs
each boosting round). After each kill, re-running the config must keep every record
measured before the kill, complete the budget, and continue the same MLflow child
run (one run, steps 1..budget, no duplicates).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from mlflow.tracking import MlflowClient

from tests.e2e.helpers import COSTLAB, run_cli, tiny_config

pytestmark = pytest.mark.slow
TRIALS = 12
PER_ITER = 4

KILL_POINTS = {
    # name: (log marker, occurrence to wait for). A kill during the build loses the batch in
    # flight as one during the run does (its records are written once it is measured), so only
    # the run is tested: each point costs about 50 s of the suite's 15 minutes.
    "during-run": ("sample(s) to runner", 2),
    "during-model-update": ("XGB iter", 1),
}


def _record_lines(tmp):
    files = list((tmp / "runs").rglob("database_tuning_record.json"))
    return files[0].read_text().splitlines() if files else []


def _log_text(tmp):
    """MetaSchedule's live logs (the task scheduler's and the task's)."""
    return "".join(p.read_text(errors="replace") for p in (tmp / "runs").rglob("logs/*.log"))


def _repeats(lines) -> list[tuple[int, int]]:
    """(trial, the earlier trial it repeats) for each record whose trace an earlier one has."""
    first, repeats = {}, []
    for trial, line in enumerate(lines, 1):
        trace = json.dumps(json.loads(line)[1][0])
        if trace in first:
            repeats.append((trial, first[trace]))
        first.setdefault(trace, trial)
    return repeats


def test_a_larger_budget_continues_without_measuring_a_schedule_again(tmp_path):
    """Resumed, MetaSchedule's search remembers nothing of the database: with the same seed its
    first batch came back, and trials 9-12 measured trials 1-4 again."""
    config = tiny_config(tmp_path, name="longer", models=("random",), trials=8,
                         search={"trials": 8, "trials_per_iter": PER_ITER, "population_size": 32,
                                 "init_measured_ratio": 0.0})
    run_cli("run", config, cwd=tmp_path)
    run_cli("run", config, "search.trials=12", cwd=tmp_path)
    lines = _record_lines(tmp_path)
    assert len(lines) == 12 and _repeats(lines) == []


@pytest.mark.parametrize("kill_point", list(KILL_POINTS))
def test_kill_then_resume_loses_nothing(tmp_path, kill_point):
    marker, occurrence = KILL_POINTS[kill_point]
    config = tiny_config(tmp_path, name="resume", models=("tvm-xgb",), trials=TRIALS,
                         search={"trials": TRIALS, "trials_per_iter": PER_ITER, "population_size": 32})
    proc = subprocess.Popen([*COSTLAB, "run", str(config)], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 400
    try:
        while (tmp_path / "runs").exists() is False or _log_text(tmp_path).count(marker) < occurrence:
            assert proc.poll() is None, f"costlab run ended before {kill_point}"
            assert time.time() < deadline, f"never reached {kill_point}"
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    before = _record_lines(tmp_path)
    # both kill points come after the first batch was measured, and so written to the database
    assert PER_ITER <= len(before) < TRIALS
    planned = " ".join(run_cli("run", config, "--dry-run", cwd=tmp_path).stdout.split())
    assert f"resumes at {len(before)}/{TRIALS} trials" in planned  # the killed session's records as they are

    run_cli("run", config, cwd=tmp_path)
    after = _record_lines(tmp_path)
    assert len(after) == TRIALS
    assert after[: len(before)] == before  # nothing measured before the kill was lost
    assert _repeats(after) == []  # the resumed search drew the database's best, measured none again

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("resume")
    children = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'child'")
    assert len(children) == 1  # the child run continued, no half-finished duplicate
    (child,) = children
    assert child.info.status == "FINISHED"
    steps = sorted(m.step for m in client.get_metric_history(child.info.run_id, "best_latency_us"))
    assert steps == list(range(1, TRIALS + 1))
    # every trial's time is known: a kill while the model trained on a batch kept the batch's times
    timed = sorted(m.step for m in client.get_metric_history(child.info.run_id, "elapsed_s"))
    assert timed == list(range(1, TRIALS + 1))


def _run_until_the_second_batch_is_measured(tmp_path, name: str) -> subprocess.Popen:
    """`costlab run` of a random model in its own process group, once its second batch is in the runner."""
    config = tiny_config(tmp_path, name=name, models=("random",), trials=TRIALS,
                         search={"trials": TRIALS, "trials_per_iter": PER_ITER, "population_size": 32})
    proc = subprocess.Popen([*COSTLAB, "run", str(config)], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 400
    while not (tmp_path / "runs").exists() or _log_text(tmp_path).count("sample(s) to runner") < 2:
        assert proc.poll() is None and time.time() < deadline, "never reached the second batch's run"
        time.sleep(0.05)
    return proc


def _left_in_group(pgid: int) -> list[str]:
    """The processes still in the group after up to 15 s (killed workers take a moment to be reaped)."""
    deadline = time.time() + 15
    while (leftovers := subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True,
                                       text=True).stdout.split()) and time.time() < deadline:
        time.sleep(0.2)
    return leftovers


def test_ctrl_c_stops_the_run_at_once_and_keeps_the_records(tmp_path):
    """SIGINT (Ctrl-C) while a batch is measured: exit at once, no worker left behind."""
    proc = _run_until_the_second_batch_is_measured(tmp_path, "ctrl-c")
    workers = subprocess.run(["pgrep", "-g", str(proc.pid), "-f", "tvm.exec.popen_worker"], capture_output=True,
                             text=True).stdout.split()
    assert workers, "no builder or runner worker running during the second batch"
    for worker in workers:  # Ctrl-C reaches no worker (it would print a KeyboardInterrupt traceback)
        blocked = int(next(line for line in open(f"/proc/{worker}/status") if line.startswith("SigBlk:")).split()[1], 16)
        assert blocked & (1 << (signal.SIGINT - 1)), f"worker {worker} takes SIGINT"
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group; the workers must not outlive it
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert _left_in_group(proc.pid) == [], "processes left behind"
    assert "run the same command again to resume" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert PER_ITER <= len(_record_lines(tmp_path)) < TRIALS  # the first batch is kept
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("ctrl-c").experiment_id])
    # both were left RUNNING; the child resumes from KILLED on the next run
    assert sorted((r.data.tags["costlab.role"], r.info.status) for r in runs) == [("child", "KILLED"),
                                                                                 ("parent", "KILLED")]


def test_second_process_on_same_experiment_is_refused(tmp_path):
    """While a run holds the experiment, a second is refused (its budget is large enough that it
    is still tuning then; a tiny one could finish while the second process starts)."""
    config = tiny_config(tmp_path, name="locked", models=("random",), trials=400)
    first = subprocess.Popen([*COSTLAB, "run", str(config)], cwd=tmp_path, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not (tmp_path / "runs" / ".costlab.lock").exists():
            assert first.poll() is None and time.time() < deadline
            time.sleep(0.1)
        second = run_cli("run", config, cwd=tmp_path, check=False)
        assert first.poll() is None, "the first run ended before the second was checked"
        assert second.returncode == 2, second.stderr
        said = " ".join(second.stderr.split())
        assert f"another costlab run is working in work_dir {tmp_path / 'runs'} " in said, said
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_ends_the_runs_as_killed_not_running(tmp_path, sig):
    """`timeout` and batch schedulers send SIGTERM (to costlab alone, not its group): it left the
    parent and child runs RUNNING, a dead run that compare could not tell from a live one."""
    proc = _run_until_the_second_batch_is_measured(tmp_path, "term")
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, stderr
    assert f"stopped by {sig.name}: every measured record is in the tuning databases" in stderr
    assert _left_in_group(proc.pid) == [], "processes left behind"
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("term").experiment_id])
    assert sorted(r.info.status for r in runs) == ["KILLED", "KILLED"]
