"""The MLflow side of `costlab run`, on a real local MLflow store."""

import math
import time

import pytest

from costlab.search.recorder import Curve
from costlab.tracking import ExperimentTracker


def _trials(latencies_s):
    return Curve(latencies_s).trials  # trials 1..n with their best so far


def _tracker(tmp_path, experiment="e", parent="e"):
    """A `costlab run` process's tracker on the test's own MLflow store, its parent run started."""
    tracker = ExperimentTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", experiment)
    tracker.start_parent(parent, {}, "")
    return tracker


def _steps(tracker, run_id, key):
    return sorted(m.step for m in tracker.client.get_metric_history(run_id, key))


def test_resume_after_only_failed_trials_logs_each_step_once(tmp_path):
    tracker = _tracker(tmp_path)
    child = tracker.child("gemm", "lgbm", 0, {})
    tracker.log_trials(child, _trials([math.inf] * 4), flops=1.0)  # no best_latency_us logged yet

    again = _tracker(tmp_path)  # a second process resumes
    resumed = again.child("gemm", "lgbm", 0, {}, n_recorded=4)
    assert (resumed.run_id, resumed.last_step) == (child.run_id, 4)
    again.log_trials(resumed, _trials([math.inf] * 4 + [1e-3]), flops=1.0)  # replayed + one new trial
    assert _steps(again, child.run_id, "trial_failed") == [1, 2, 3, 4, 5]
    assert _steps(again, child.run_id, "best_latency_us") == [5]


def test_a_child_is_found_under_its_own_parent_only(tmp_path):
    first = _tracker(tmp_path, "shared", "config-a")
    a = first.child("gemm", "lgbm", 0, {})
    first.log_trials(a, _trials([1e-3] * 5), flops=1.0)

    second = _tracker(tmp_path, "shared", "config-b")  # another config logging to the same experiment
    b = second.child("gemm", "lgbm", 0, {}, n_recorded=0)
    assert b.run_id != a.run_id and b.last_step == 0
    second.log_trials(b, _trials([2e-3] * 3), flops=1.0)
    assert _steps(second, b.run_id, "best_latency_us") == [1, 2, 3]
    assert second.client.get_run(b.run_id).data.tags["mlflow.parentRunId"] == second.parent_id


def test_the_same_config_from_another_work_dir_logs_to_a_child_of_its_own(tmp_path):
    """Two processes of one config with two work_dirs took over one child run: their two curves
    went into one (steps logged twice, not monotone), which compare read as one seed."""
    first = _tracker(tmp_path)
    a = first.child("gemm", "lgbm", 0, {}, work_dir="runs/a")
    first.log_trials(a, _trials([1e-3] * 3), flops=1.0)
    second = _tracker(tmp_path)  # the same config and parent, run with work_dir=runs/b
    b = second.child("gemm", "lgbm", 0, {}, n_recorded=0, work_dir="runs/b")
    assert b.run_id != a.run_id and b.last_step == 0
    again = _tracker(tmp_path)  # runs/a resumed: its own child again
    assert again.child("gemm", "lgbm", 0, {}, n_recorded=3, work_dir="runs/a").run_id == a.run_id
    assert again.client.get_run(b.run_id).data.tags["costlab.work_dir"] == "runs/b"


def test_a_child_logged_before_the_work_dir_tag_is_continued_and_tagged(tmp_path):
    old = _tracker(tmp_path)
    a = old.child("gemm", "lgbm", 0, {})  # as costlab logged it before 2026-12-07
    old.log_trials(a, _trials([1e-3] * 3), flops=1.0)
    resumed = _tracker(tmp_path).child("gemm", "lgbm", 0, {}, n_recorded=3, work_dir="runs/e")
    assert (resumed.run_id, resumed.last_step) == (a.run_id, 3)
    assert old.client.get_run(a.run_id).data.tags["costlab.work_dir"] == "runs/e"


def test_a_child_ahead_of_its_database_is_set_aside_and_a_new_one_starts(tmp_path):
    """The session's tuning database was deleted: the old curve must not swallow the new one."""
    tracker = _tracker(tmp_path)
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


def test_a_child_logged_with_another_budget_is_set_aside_and_a_new_one_starts(tmp_path):
    tracker = _tracker(tmp_path)
    old = tracker.child("gemm", "lgbm", 0, {"trials": "6"})
    tracker.log_trials(old, _trials([1e-3] * 6), flops=1.0)
    tracker.finish_child(old, {}, [])
    assert tracker.child("gemm", "lgbm", 0, {"trials": "6"}, n_recorded=6).run_id == old.run_id  # same budget

    new = tracker.child("gemm", "lgbm", 0, {"trials": "12"}, n_recorded=6)
    assert new.run_id != old.run_id and (new.last_step, new.finished) == (0, False)  # the curve is logged again
    tags = tracker.client.get_run(old.run_id).data.tags
    assert tags["costlab.role"] == "stale-child"
    assert tags["costlab.stale_reason"] == "logged with a budget of 6 trials; the config now says 12"


def test_a_workload_key_with_quotes_finds_its_child_again(tmp_path):
    """A string workload param with an apostrophe crashed the child lookup (MLflow's filter
    parser); with both quote characters or a backslash the value cannot be quoted at all."""
    for key in ("op(name=it's)", "op(name=\"a\")", "op(name=it's \"b\")", "op(path=a\\b)"):
        tracker = _tracker(tmp_path)
        child = tracker.child(key, "lgbm", 0, {})
        tracker.log_trials(child, _trials([1e-3] * 3), flops=1.0)
        again = _tracker(tmp_path).child(key, "lgbm", 0, {}, n_recorded=3)
        assert (again.run_id, again.last_step) == (child.run_id, 3), key
        assert tracker.client.get_run(child.run_id).data.tags["costlab.workload"] == key


def test_an_offline_run_restores_a_deleted_experiment(tmp_path):
    """costlab train/evaluate logged nothing, after all their work, into an experiment someone
    had deleted in the UI ('Cannot set a deleted experiment'); tuning runs restored it already."""
    from mlflow.tracking import MlflowClient

    from costlab.tracking import log_offline_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    client.delete_experiment(client.create_experiment("offline", artifact_location=str(tmp_path / "mlruns")))
    run_id = log_offline_run(uri, "offline", "train", {"model": "lgbm"}, {"pairwise_accuracy": 0.7})
    run = client.get_run(run_id)
    assert run.data.metrics["pairwise_accuracy"] == 0.7
    assert client.get_experiment(run.info.experiment_id).lifecycle_stage == "active"


def test_a_new_experiments_artifacts_go_beside_its_sqlite_store_wherever_costlab_runs(tmp_path, monkeypatch):
    """They went to ./mlruns of the directory costlab ran in: a store given by its full path got
    its artifacts scattered over every directory it was used from (and the tests' over the
    repository)."""
    from costlab.tracking import log_offline_run

    store, elsewhere = tmp_path / "store" / "mlflow.db", tmp_path / "elsewhere"
    store.parent.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    tracker = _tracker(store.parent, "tuning")
    run_id = log_offline_run(f"sqlite:///{store}", "offline", "train", {"model": "lgbm"}, {"tau": 0.5},
                             per_task={"gemm": {"tau": 0.5}})
    for experiment in ("tuning", "offline"):
        location = tracker.client.get_experiment_by_name(experiment).artifact_location
        assert location.removeprefix("file://") == str(store.parent / "mlruns" / experiment)
    assert (store.parent / "mlruns" / "offline" / run_id / "artifacts" / "per_task_metrics.json").is_file()
    assert not (elsewhere / "mlruns").exists()


def test_ctrl_c_ends_the_running_children_of_its_own_process_even_one_it_has_not_been_handed(tmp_path):
    tracker = _tracker(tmp_path, "shared", "config-a")
    done = tracker.child("gemm", "lgbm", 0, {})
    tracker.finish_child(done, {}, [])
    # created by the store a moment before Ctrl-C: the caller never received its ChildRun
    just_created = tracker.child("gemm", "lgbm", 1, {})
    other = _tracker(tmp_path, "shared", "config-a")  # another process (machine) tuning the same config
    theirs = other.child("gemm", "lgbm", 2, {})

    tracker.end_running("KILLED")
    status = {run_id: tracker.client.get_run(run_id).info.status
              for run_id in (done.run_id, just_created.run_id, theirs.run_id, tracker.parent_id)}
    assert status == {done.run_id: "FINISHED", just_created.run_id: "KILLED", theirs.run_id: "RUNNING",
                      tracker.parent_id: "KILLED"}


def test_a_child_interrupted_before_its_params_gets_them_when_found_again(tmp_path):
    tracker = _tracker(tmp_path)
    child = tracker.child("gemm", "lgbm", 0, {"trials": "6"})  # as if Ctrl-C came before the rest
    again = _tracker(tmp_path)
    found = again.child("gemm", "lgbm", 0, {"trials": "6", "model_label": "lgbm", "seed": "0"}, n_recorded=0)
    assert found.run_id == child.run_id
    assert again.client.get_run(child.run_id).data.params == {"trials": "6", "model_label": "lgbm", "seed": "0"}


def test_ctrl_c_while_the_store_creates_a_child_ends_it(tmp_path):
    """The handler runs between bytecodes: the store may hold the new child before create_run returns."""
    tracker = _tracker(tmp_path)
    real_create = tracker.client.create_run

    def create_then_interrupted(*args, **kwargs):
        run = real_create(*args, **kwargs)
        tracker.end_running("KILLED")  # Ctrl-C before create_run returned
        return run

    tracker.client.create_run = create_then_interrupted
    child = tracker.child("gemm", "lgbm", 0, {})
    assert tracker.client.get_run(child.run_id).info.status == "KILLED"


def test_ctrl_c_just_after_a_child_finished_leaves_it_finished(tmp_path):
    tracker = _tracker(tmp_path)
    child = tracker.child("gemm", "lgbm", 0, {})
    real_terminate = tracker.client.set_terminated

    def terminate_then_interrupted(run_id, status=None, **kwargs):
        real_terminate(run_id, status=status, **kwargs)
        if run_id == child.run_id:
            tracker.end_running("KILLED")  # Ctrl-C before finish_child returned

    tracker.client.set_terminated = terminate_then_interrupted
    tracker.finish_child(child, {}, [])
    assert tracker.client.get_run(child.run_id).info.status == "FINISHED"
    assert tracker.client.get_run(tracker.parent_id).info.status == "KILLED"


@pytest.mark.parametrize("case", ["read-only store", "store in a folder it cannot write",
                                  "artifact folder it cannot write"])
def test_a_store_or_artifact_folder_that_takes_no_writes_is_refused_before_the_run(tmp_path, case):
    """A new store in a folder it cannot write spent almost 2 minutes in MLflow's retries; a
    read-only store, or an artifact folder (``mlruns`` beside the store) it cannot write, failed
    with MLflow's traceback once the run had started (and left the parent RUNNING). Each is now
    one message before anything runs."""
    import stat
    import subprocess

    from tests.e2e.helpers import COSTLAB, tiny_config, without_write_override

    locked = tmp_path / "locked"
    locked.mkdir()
    store = tmp_path / "mlflow.db"
    if case == "read-only store":
        ExperimentTracker(f"sqlite:///{store}", "made")  # a real store, then read-only
        store.chmod(0o444)
        said = f"{store} is not writable"
    elif case == "store in a folder it cannot write":
        store = locked / "mlflow.db"
        said = f"{locked} is not writable"
    else:
        store = locked.parent / "mlflow.db"
        locked = locked.rename(tmp_path / "mlruns")
        said = f"the artifacts of MLflow experiment 'e' (from mlflow.tracking_uri sqlite:///{store}) go to " \
               f"{locked / 'e'}: {locked} is not writable"
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    config = tiny_config(tmp_path, name="e", models=("random",), tracking_uri=f"sqlite:///{store}")
    started = time.monotonic()
    try:
        done = subprocess.run([*without_write_override(), *COSTLAB, "run", str(config)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
    finally:
        locked.chmod(stat.S_IRWXU)
        store.chmod(0o644) if store.exists() else None
    told = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2 and said in told and "Traceback" not in told, told[-2000:]
    assert time.monotonic() - started < 60  # before any tuning, and not after MLflow's retries
    assert not (tmp_path / "runs").exists()


def test_two_runs_opening_one_new_sqlite_store_at_once_both_get_it(tmp_path):
    """MLflow creates and migrates a new SQLite store when a process first opens it: two runs
    starting together both migrated it, and one stopped ('duplicate column name: step'; 3 of 3
    tries in the audit)."""
    import subprocess
    import sys

    code = "import sys; from costlab.tracking import check_reachable; check_reachable(sys.argv[1])"
    for attempt in range(3):
        uri = f"sqlite:///{tmp_path / f'mlflow{attempt}.db'}"
        opening = [subprocess.Popen([sys.executable, "-c", code, uri], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True) for _ in range(2)]
        for proc in opening:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]


def test_a_store_in_a_folder_the_user_cannot_write_is_still_read(tmp_path):
    """The lock taken while a new store is made is not taken for a made one: compare on a team's
    read-only store failed with 'Permission denied' on the lock beside it."""
    import stat
    import subprocess

    from tests.e2e.helpers import COSTLAB, without_write_override

    folder = tmp_path / "shared"
    folder.mkdir()
    store = folder / "mlflow.db"
    ExperimentTracker(f"sqlite:///{store}", "e")
    assert sorted(p.name for p in folder.iterdir()) == ["mlflow.db"]  # no lock file left beside it
    store.chmod(0o444)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        done = subprocess.run([*without_write_override(), *COSTLAB, "compare", "e", "--tracking-uri",
                               f"sqlite:///{store}", "--out", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=300)
    finally:
        folder.chmod(stat.S_IRWXU)
        store.chmod(0o644)
    said = " ".join((done.stdout + done.stderr).split())
    assert "Permission denied" not in said and "has no tuning run" in said, said[-2000:]


@pytest.mark.parametrize("uri, shown", [
    ("postgresql://costlab:TopSecret@127.0.0.1:5432/db", "postgresql://costlab:***@127.0.0.1:5432/db"),
    ("http://alice:s3c@h:5000", "http://alice:***@h:5000"),
    ("https://u:p@[::1]:5000/x?y=a@b", "https://u:***@[::1]:5000/x?y=a@b"),
    ("mysql+pymysql://u:p%40ss@h/db", "mysql+pymysql://u:***@h/db"),
    # SQLAlchemy reads a password up to the last '@', '/', '#' and '?' included
    ("postgresql://u:p/ss@host/db", "postgresql://u:***@host/db"),
    ("postgresql://u:p#ss@host/db", "postgresql://u:***@host/db"),
    ("postgresql://u:p?ss@host/db", "postgresql://u:***@host/db"),
    # nothing to hide: a path with '@', a user without password, no user
    ("sqlite:////tmp/a@b/x.db", "sqlite:////tmp/a@b/x.db"),
    ("file:///tmp/a@b", "file:///tmp/a@b"),
    ("http://alice@h:5000", "http://alice@h:5000"),
    ("http://h:5000/a@b", "http://h:5000/a@b"),
    ("databricks", "databricks"),
])
def test_a_uris_password_is_hidden_wherever_its_library_reads_one(uri, shown):
    from costlab.tracking import redact_uri

    assert redact_uri(uri) == shown


def test_a_password_in_mlflows_own_error_text_is_hidden_too(tmp_path, monkeypatch):
    """MLflow's 'API request to URL failed' holds the URL as given: costlab's message redacted the
    URI it named and then quoted MLflow's error, password and all (found by the diff review)."""
    from mlflow.tracking import MlflowClient

    from costlab.config import config_from_dict
    from costlab.experiment import TrackingServerDown, _stop_if_server_down
    from costlab.search.farm import free_port

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    uri = f"http://alice:s3cretPW@127.0.0.1:{free_port()}"
    cfg = config_from_dict({"name": "t", "target": "cpu", "workloads": [{"name": "gemm"}], "cost_models": ["random"],
                            "mlflow": {"tracking_uri": uri}, "work_dir": str(tmp_path)})
    with pytest.raises(Exception) as mlflow_error:
        MlflowClient(tracking_uri=uri).search_experiments()
    assert "s3cretPW" in str(mlflow_error.value)  # what MLflow says
    with pytest.raises(TrackingServerDown) as ours:
        _stop_if_server_down(cfg, "gemm · random · seed 0", mlflow_error.value)
    assert "s3cretPW" not in str(ours.value) and "alice:***@127.0.0.1" in str(ours.value)


def test_the_reachability_check_sends_a_uris_user_info_as_basic_authentication():
    import base64

    from costlab.tracking import _request_with_basic_auth

    request = _request_with_basic_auth("https://u:p%40ss%3Aw@[::1]:5000/health")
    assert request.full_url == "https://[::1]:5000/health"
    assert base64.b64decode(request.headers["Authorization"].removeprefix("Basic ")) == b"u:p@ss:w"
    assert not _request_with_basic_auth("http://h:5000/health").headers
