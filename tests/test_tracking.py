"""The MLflow side of `costlab run`, on a real local MLflow store."""

import math

from costlab.search.recorder import Trial
from costlab.tracking import ExperimentTracker


def _trials(latencies_s, first=1):
    best, out = math.inf, []
    for i, lat in enumerate(latencies_s, start=first):
        best = min(best, lat)
        out.append(Trial(i, lat, best, float(i)))
    return out


def _steps(tracker, run_id, key):
    return sorted(m.step for m in tracker.client.get_metric_history(run_id, key))


def test_resume_after_only_failed_trials_logs_each_step_once(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "")
    child = tracker.child("gemm", "lgbm", 0, {})
    tracker.log_trials(child, _trials([math.inf] * 4), flops=1.0)  # no best_latency_us logged yet

    again = ExperimentTracker(uri, "e")  # a second process resumes
    again.start_parent("e", {}, "")
    resumed = again.child("gemm", "lgbm", 0, {}, n_recorded=4)
    assert (resumed.run_id, resumed.last_step) == (child.run_id, 4)
    again.log_trials(resumed, _trials([math.inf] * 4 + [1e-3]), flops=1.0)  # replayed + one new trial
    assert _steps(again, child.run_id, "trial_failed") == [1, 2, 3, 4, 5]
    assert _steps(again, child.run_id, "best_latency_us") == [5]


def test_a_child_is_found_under_its_own_parent_only(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = ExperimentTracker(uri, "shared")
    first.start_parent("config-a", {}, "")
    a = first.child("gemm", "lgbm", 0, {})
    first.log_trials(a, _trials([1e-3] * 5), flops=1.0)

    second = ExperimentTracker(uri, "shared")  # another config logging to the same experiment
    second.start_parent("config-b", {}, "")
    b = second.child("gemm", "lgbm", 0, {}, n_recorded=0)
    assert b.run_id != a.run_id and b.last_step == 0
    second.log_trials(b, _trials([2e-3] * 3), flops=1.0)
    assert _steps(second, b.run_id, "best_latency_us") == [1, 2, 3]
    assert second.client.get_run(b.run_id).data.tags["mlflow.parentRunId"] == second.parent_id


def test_a_child_ahead_of_its_database_is_set_aside_and_a_new_one_starts(tmp_path):
    """The session's tuning database was deleted: the old curve must not swallow the new one."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "")
    old = tracker.child("gemm", "lgbm", 0, {})
    tracker.log_trials(old, _trials([1e-3] * 6), flops=1.0)
    tracker.finish_child(old, {}, [])

    new = tracker.child("gemm", "lgbm", 0, {}, n_recorded=0)
    assert new.run_id != old.run_id and (new.last_step, new.finished) == (0, False)
    tags = tracker.client.get_run(old.run_id).data.tags
    assert tags["costlab.role"] == "stale-child"
    assert tags["costlab.stale_reason"] == "logged 6 trials; its tuning database now holds 0"
    # found again on the next rerun, while the stale one stays out of the results
    assert tracker.child("gemm", "lgbm", 0, {}, n_recorded=0).run_id == new.run_id
