"""A real, tiny ``costlab run``: real TVM builder and runner, real MLflow (sqlite store)."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow
TRIALS = 16


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    config = tiny_config(tmp, trials=TRIALS, builder_workers=None)  # the builder as a user has it
    proc = run_cli("run", config, cwd=tmp)
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    return tmp, config, proc, MlflowClient(tracking_uri=uri), uri


def _runs(client, role):
    exp = client.get_experiment_by_name("tiny")
    return client.search_runs([exp.experiment_id], filter_string=f"tags.`costlab.role` = '{role}'")


def test_parent_run_holds_config(tiny_run):
    _, _, proc, client, _ = tiny_run
    assert "Creating initial MLflow database tables" not in proc.stdout + proc.stderr  # a fresh store, quietly
    (parent,) = _runs(client, "parent")
    assert parent.info.status == "FINISHED"
    assert parent.data.params["search.trials"] == str(TRIALS)
    artifacts = [a.path for a in client.list_artifacts(parent.info.run_id)]
    assert "config.yaml" in artifacts
    (kept,) = client.list_artifacts(parent.info.run_id, "config-history")
    assert kept.path.startswith("config-history/config-") and kept.path.endswith(".yaml")


def test_one_child_per_model_with_params_and_curve(tiny_run):
    _, _, _, client, _ = tiny_run
    (parent,) = _runs(client, "parent")
    children = _runs(client, "child")
    assert sorted(c.data.tags["costlab.model"] for c in children) == ["random", "tvm-xgb"]
    for child in children:
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.data.params["workload"] == "gemm"
        assert child.data.params["seed"] == "0"
        assert child.data.params["trials"] == str(TRIALS)
        best = sorted(client.get_metric_history(child.info.run_id, "best_latency_us"), key=lambda m: m.step)
        assert [m.step for m in best] == list(range(1, TRIALS + 1))
        values = [m.value for m in best]
        assert all(b <= a for a, b in zip(values, values[1:])), values
        assert values[-1] > 0
        gflops = client.get_metric_history(child.info.run_id, "best_gflops")
        assert len(gflops) == TRIALS
        trial = client.get_metric_history(child.info.run_id, "trial_latency_us")
        assert min(m.value for m in trial) == pytest.approx(values[-1])


def test_child_final_metrics_are_measured_times(tiny_run):
    _, _, _, client, _ = tiny_run
    for child in _runs(client, "child"):
        m = child.data.metrics
        for key in ("wall_s", "build_s", "run_s", "cost_model_update_s", "cost_model_predict_s"):
            assert key in m, key
            assert m[key] >= 0
        assert m["build_s"] > 0 and m["run_s"] > 0
        assert m["build_s"] + m["run_s"] + m["cost_model_update_s"] + m["cost_model_predict_s"] <= m["wall_s"]
        assert m["n_trials"] == TRIALS
        # the model's time as a curve, one point per measured batch (8 trials), ending at its total
        spent = sorted(client.get_metric_history(child.info.run_id, "cost_model_s"), key=lambda p: p.step)
        assert [p.step for p in spent] == list(range(8, TRIALS + 1, 8))
        assert all(b.value >= a.value >= 0 for a, b in zip(spent, spent[1:]))
        assert spent[-1].value <= m["cost_model_update_s"] + m["cost_model_predict_s"] + 1e-9
        # the GEMM's kernel-quality check: numpy timed on the same shapes in the same run
        assert m["numpy_latency_us"] > 0
        assert m["best_vs_numpy"] == pytest.approx(m["numpy_latency_us"] / m["final_best_latency_us"])


def test_child_artifacts(tiny_run):
    _, _, _, client, _ = tiny_run
    for child in _runs(client, "child"):
        names = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"convergence.png", "database_tuning_record.json", "database_workload.json"} <= names
        local = client.download_artifacts(child.info.run_id, "database_tuning_record.json")
        with open(local) as f:
            assert len([line for line in f if line.strip()]) == TRIALS
    xgb = [c for c in _runs(client, "child") if c.data.tags["costlab.model"] == "tvm-xgb"][0]
    names = {a.path for a in client.list_artifacts(xgb.info.run_id)}
    assert "model.json" in names  # the trained XGBoost booster, as JSON


def test_compare_prints_table_and_plots(tiny_run):
    tmp, _, _, _, uri = tiny_run
    proc = run_cli("compare", "tiny", "--tracking-uri", uri, "--out", tmp / "results", cwd=tmp)
    assert "tvm-xgb" in proc.stdout and "random" in proc.stdout
    assert "T95" in proc.stdout
    assert list((tmp / "results" / "tiny").glob("*.trials.png"))
    report = (tmp / "results" / "tiny.md").read_text()
    assert report.startswith("# tiny") and "costlab compare tiny" in report
    assert "](tiny/" in report and "| gemm" in report
    from tvm.target.codegen import llvm_get_system_cpu

    assert "Tuned with target(s): `" in report and f'"mcpu": "{llvm_get_system_cpu()}"' in report


def test_compare_counts_trials_to_the_baselines_final_latency(tiny_run):
    from costlab.report.compare import compare_experiment
    from costlab.tracking import read_child_runs

    _, _, _, _, uri = tiny_run
    summaries = {s.model: s for s in compare_experiment(uri, "tiny").summaries if s.workload.startswith("gemm")}
    base, rand = summaries["tvm-xgb"], summaries["random"]
    (base_run,) = [r for r in read_child_runs(uri, "tiny") if r.model == "tvm-xgb" and r.workload.startswith("gemm")]
    # one seed: the baseline reaches its own final latency at the step that logged it first
    first = min(step for step, us in zip(base_run.curve_steps, base_run.curve_best_us) if us <= base.final_best_us[0])
    assert base.t_match == [first]
    assert 1 <= rand.t_match[0] <= TRIALS + 1
    assert rand.t_match_ratio == pytest.approx(rand.t_match[0] / first)
    assert 0 < base.auc[0] <= 1 and rand.auc_ratio == pytest.approx(rand.auc[0] / base.auc[0])
    assert base.wall_s[0] > 0 and rand.wall_ratio == pytest.approx(rand.wall_s[0] / base.wall_s[0])


def test_rerun_skips_finished_combinations(tiny_run):
    tmp, config, _, client, _ = tiny_run
    before = {c.info.run_id for c in _runs(client, "child")}
    records = sorted((tmp / "runs").rglob("database_tuning_record.json"))
    content = [p.read_text() for p in records]
    planned = " ".join(run_cli("run", config, "--dry-run", cwd=tmp).stdout.split())
    assert planned.count(f"complete ({TRIALS}/{TRIALS} trials)") == 2 and "0 trial(s) left to measure" in planned
    said = " ".join(run_cli("run", config, cwd=tmp).stdout.split())
    assert said.count(f"complete ({TRIALS} trials) and logged before: skipped") == 2
    assert f"{TRIALS}/{TRIALS} trials, best" not in said  # no progress line of the records read, only the skip
    assert "done: 2 combination(s) ok (2 complete and logged before: skipped), 0 failed." in said
    assert {c.info.run_id for c in _runs(client, "child")} == before
    assert [p.read_text() for p in records] == content
    state = json.loads((records[0].parent / "costlab_session.json").read_text())
    assert state["trials"] == TRIALS


def test_a_fresh_mlflow_store_gets_the_same_curves_and_times_from_the_work_dir(tiny_run):
    """MLflow is not the only copy: the work dir holds each trial's latency and time."""
    tmp, config, _, client, _ = tiny_run
    fresh_uri = f"sqlite:///{tmp / 'fresh-mlflow.db'}"
    run_cli("run", config, f"mlflow.tracking_uri={fresh_uri}", cwd=tmp)
    fresh = MlflowClient(tracking_uri=fresh_uri)
    exp = fresh.get_experiment_by_name("tiny")
    rebuilt = {c.data.tags["costlab.model"]: c for c in fresh.search_runs(
        [exp.experiment_id], filter_string="tags.`costlab.role` = 'child'")}
    assert sorted(rebuilt) == ["random", "tvm-xgb"]

    def history(c, run, key):
        return [(m.step, m.value) for m in sorted(c.get_metric_history(run.info.run_id, key), key=lambda m: m.step)]

    for original in _runs(client, "child"):
        again = rebuilt[original.data.tags["costlab.model"]]
        assert again.info.status == "FINISHED"
        for key in ("best_latency_us", "trial_latency_us", "elapsed_s"):
            steps, values = zip(*history(fresh, again, key))
            original_steps, original_values = zip(*history(client, original, key))
            assert steps == original_steps and values == pytest.approx(original_values), key
        assert again.data.metrics["wall_s"] == pytest.approx(original.data.metrics["wall_s"])
        times = [v for _, v in history(fresh, again, "elapsed_s")]
        assert len(times) == TRIALS and times == sorted(times) and times[0] > 0
        # stamped on the session's own clock from the run's start (they all had the logging moment):
        # the MLflow UI's relative-time axis reads the session's seconds
        stamps = sorted(fresh.get_metric_history(again.info.run_id, "elapsed_s"), key=lambda m: m.step)
        assert [(m.timestamp - again.info.start_time) / 1000 for m in stamps] == pytest.approx(times, abs=2e-3)


def test_a_changed_budget_logs_new_child_runs_cut_at_it(tiny_run):
    """MLflow's params cannot change, and compare scores a run against the budget it logged: a
    lowered budget logs the first trials only (nothing is measured or deleted), a raised one the
    whole curve, each in a new child run; the old one is kept aside as stale-child."""
    tmp, config, _, client, _ = tiny_run
    uri = f"sqlite:///{tmp / 'budgets.db'}"
    files = {p: p.read_text() for p in (tmp / "runs").rglob("*.json")}
    store = MlflowClient(tracking_uri=uri)

    def children(role="child"):
        exp = store.get_experiment_by_name("tiny")
        return {c.data.tags["costlab.model"]: c for c in store.search_runs(
            [exp.experiment_id], filter_string=f"tags.`costlab.role` = '{role}'")}

    def history(run, key):
        return sorted(store.get_metric_history(run.info.run_id, key), key=lambda m: m.step)

    run_cli("run", config, f"mlflow.tracking_uri={uri}", cwd=tmp)
    full = children()
    lowered = ("run", config, f"mlflow.tracking_uri={uri}", "search.trials=8")
    planned = " ".join(run_cli(*lowered, "--dry-run", cwd=tmp).stdout.split())
    assert planned.count("complete (holds 16 trials; the first 8, the budget, are logged)") == 2, planned
    said = " ".join(run_cli(*lowered, cwd=tmp).stdout.split())
    assert said.count("its database holds 16 trials; the first 8, the budget, are logged") == 2, said
    # the run says why its child runs are new (found by a new-user audit: only MLflow's tags said so)
    assert said.count("a new MLflow child run; the one before is tagged stale-child (logged with a budget of 16 "
                      "trials; the config now says 8)") == 2, said
    cut = children()
    for model, run in cut.items():
        old = full[model]
        assert run.info.run_id != old.info.run_id and run.info.status == "FINISHED"
        assert run.data.params["trials"] == "8" and run.data.tags["costlab.recorded_trials"] == "16"
        assert [m.step for m in history(run, "best_latency_us")] == list(range(1, 9))
        old_best = {m.step: m.value for m in history(old, "best_latency_us")}
        old_time = {m.step: m.value for m in history(old, "elapsed_s")}
        assert run.data.metrics["final_best_latency_us"] == pytest.approx(old_best[8])
        assert run.data.metrics["n_trials"] == 8 and run.data.metrics["wall_s"] == pytest.approx(old_time[8])
        assert "search_other_s" not in run.data.metrics and "build_s" not in run.data.metrics
        assert "convergence-8-trials.png" in [a.path for a in store.list_artifacts(run.info.run_id)]
    stale = store.search_runs([store.get_experiment_by_name("tiny").experiment_id],
                              filter_string="tags.`costlab.role` = 'stale-child'")
    assert sorted(r.info.run_id for r in stale) == sorted(r.info.run_id for r in full.values())
    assert {r.data.tags["costlab.stale_reason"] for r in stale} == {
        "logged with a budget of 16 trials; the config now says 8"}

    run_cli("run", config, f"mlflow.tracking_uri={uri}", cwd=tmp)  # back to 16: the whole curve again
    for model, run in children().items():
        assert run.info.run_id not in {cut[model].info.run_id, full[model].info.run_id}
        assert run.data.params["trials"] == "16" and "costlab.recorded_trials" not in run.data.tags
        assert [m.step for m in history(run, "best_latency_us")] == list(range(1, 17))
        assert run.data.metrics["final_best_latency_us"] == pytest.approx(full[model].data.metrics["final_best_latency_us"])
    assert {p: p.read_text() for p in (tmp / "runs").rglob("*.json")} == files  # nothing measured or rewritten
    # a complete, logged session skipped under another measurement setting says so (only the dry run did)
    said = " ".join(run_cli("run", config, f"mlflow.tracking_uri={uri}", "measure.number=7", cwd=tmp).stdout.split())
    assert said.count("and logged before: skipped (tuned with another setup: measure: {") == 2, said
    assert {p: p.read_text() for p in (tmp / "runs").rglob("*.json")} == files


def test_recorded_only_logs_the_complete_sessions_and_tunes_nothing(tiny_run):
    """A config whose combinations were not all tuned (another seed, a model added) can still
    fill a fresh MLflow store from its work dir: only the complete sessions are logged."""
    tmp, config, _, client, _ = tiny_run
    uri = f"sqlite:///{tmp / 'recorded-only.db'}"
    files = {p: p.read_text() for p in (tmp / "runs").rglob("*.json")}
    proc = run_cli("run", config, f"mlflow.tracking_uri={uri}", "seeds=[0, 1]", "--recorded-only", cwd=tmp)
    said = " ".join(proc.stdout.split())
    assert "--recorded-only: 2 combination(s) not complete, left untuned" in said
    assert "random: 1 never started, among workloads gemm(" in said and "tvm-xgb: 1 never started, among workloads gemm(" in said
    assert said.count("; seeds 1") == 2
    assert {p: p.read_text() for p in (tmp / "runs").rglob("*.json")} == files  # no record, no new session
    fresh = MlflowClient(tracking_uri=uri)
    children = fresh.search_runs([fresh.get_experiment_by_name("tiny").experiment_id],
                                 filter_string="tags.`costlab.role` = 'child'")
    assert sorted((c.data.tags["costlab.model"], c.data.tags["costlab.seed"]) for c in children) == [
        ("random", "0"), ("tvm-xgb", "0")]
    final = {c.data.tags["costlab.model"]: c.data.metrics["final_best_latency_us"] for c in _runs(client, "child")}
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.metrics["final_best_latency_us"] == pytest.approx(final[child.data.tags["costlab.model"]])
        assert len(fresh.get_metric_history(child.info.run_id, "best_latency_us")) == TRIALS


def test_records_of_another_machine_are_reported_as_recorded_but_never_continued(tiny_run):
    """A clone on another CPU: complete sessions are logged as measured there; more trials are refused."""
    import re
    import shutil

    tmp, config, _, client, _ = tiny_run
    moved = tmp / "other-machine"
    shutil.copytree(tmp / "runs", moved / "runs")
    for setup_file in (moved / "runs").rglob("costlab.json"):
        setup = json.loads(setup_file.read_text())
        setup["target"] = re.sub(r'"mcpu": "[^"]*"', '"mcpu": "other-cpu"', setup["target"])
        setup_file.write_text(json.dumps(setup))
    before = {p: p.read_text() for p in (moved / "runs").rglob("*.json")}
    uri = f"sqlite:///{moved / 'mlflow.db'}"
    proc = run_cli("run", config, f"mlflow.tracking_uri={uri}", f"work_dir={moved / 'runs'}", cwd=tmp)
    said = " ".join(proc.stdout.split())
    assert "complete, tuned with another setup" in said and "other-cpu" in said
    assert {p: p.read_text() for p in (moved / "runs").rglob("*.json")} == before  # nothing rewritten
    fresh = MlflowClient(tracking_uri=uri)
    children = fresh.search_runs([fresh.get_experiment_by_name("tiny").experiment_id],
                                 filter_string="tags.`costlab.role` = 'child'")
    assert len(children) == 2
    numpy_there = {c.data.tags["costlab.model"]: c.data.metrics["numpy_latency_us"] for c in _runs(client, "child")}
    for child in children:
        assert child.info.status == "FINISHED" and "other-cpu" in child.data.tags["costlab.tuned_target"]
        # numpy's time as saved beside the session, not timed again on this machine
        assert child.data.metrics["numpy_latency_us"] == numpy_there[child.data.tags["costlab.model"]]
    more_args = ("run", config, f"mlflow.tracking_uri={uri}", f"work_dir={moved / 'runs'}", f"search.trials={TRIALS + 8}")
    planned = run_cli(*more_args, "--dry-run", cwd=tmp, check=False)
    assert planned.returncode == 2
    said = " ".join(planned.stdout.split())
    assert said.count("refused: its 16 measured records were tuned with another setup") == 2 and "other-cpu" in said
    more = run_cli(*more_args, cwd=tmp, check=False)
    assert more.returncode == 2
    said = " ".join((more.stdout + more.stderr).split())  # the console wraps long lines
    assert "were tuned with another setup" in said and "other-cpu" in said and "nothing was tuned" in said
    assert {p: p.read_text() for p in (moved / "runs").rglob("*.json")} == before  # refused before any tuning


def test_reference_experiment_that_only_equals_the_best_is_named_beside_it(tiny_run):
    from costlab.report.compare import compare_experiment

    _, _, _, _, uri = tiny_run
    plain = compare_experiment(uri, "tiny")
    # the experiment as its own reference: its best run equals the reference, it does not beat it
    with_ref = compare_experiment(uri, "tiny", reference_experiment="tiny")
    assert with_ref.reference_us == plain.reference_us
    for workload, source in with_ref.reference_source.items():
        assert source.startswith(plain.reference_source[workload] + "; equalled by tiny (")


def test_failed_combinations_are_counted_failed_and_their_runs_ended(tmp_path):
    """Two failures, one run (each costlab process costs seconds):
    - every trial failed (each build is killed): it said '1 combination(s) ok' and exited 0; the run
      now names it failed with the first error, and tags its child, still logged as measured;
    - an error while logging the result (its convergence plot cannot be written) left the child
      RUNNING; now the child is FAILED."""
    from costlab.config import load_config
    from costlab.search.session import session_dir

    config = tiny_config(tmp_path, name="fails", models=({"name": "random", "label": "all-failed"},
                                                        {"name": "random", "label": "log-failed"}),
                         builder={"timeout_s": 0.01, "workers": 1}, search={"trials": 2, "trials_per_iter": 2, "population_size": 32})
    cfg = load_config(config)
    (session_dir(cfg, cfg.workloads[0], cfg.cost_models[1], 0) / "convergence.png").mkdir(parents=True)
    proc = run_cli("run", config, cwd=tmp_path, check=False, timeout=300)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, said
    assert "all-failed · seed 0: all 2 trials failed; the first error: costlab builder: timeout" in said
    assert "log-failed · seed 0: logging its result failed: IsADirectoryError" in said
    assert "0 combination(s) ok, 2 failed" in said
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("fails").experiment_id
    children = {c.data.tags["costlab.model"]: c for c in client.search_runs(
        [exp], filter_string="tags.`costlab.role` = 'child'")}
    (parent,) = client.search_runs([exp], filter_string="tags.`costlab.role` = 'parent'")
    # logged as measured, so compare still counts it as never within 5%
    all_failed = children["all-failed"]
    assert all_failed.info.status == "FINISHED" and all_failed.data.tags["costlab.all_trials_failed"] == "true"
    assert all_failed.data.metrics["n_failed_trials"] == 2
    assert (children["log-failed"].info.status, parent.info.status) == ("FAILED", "FAILED")
    again = run_cli("run", config, cwd=tmp_path, check=False, timeout=300)  # resumed: still not ok
    said = " ".join((again.stdout + again.stderr).split())
    assert again.returncode == 1 and "all 2 trials failed; the database keeps no error message" in said
    where = session_dir(cfg, cfg.workloads[0], cfg.cost_models[0], 0)
    assert f"to tune it again (and see the error), move {where} away and run again" in said


def test_trials_that_failed_in_an_ok_session_are_said(tmp_path, monkeypatch):
    """2 of a session's 8 trials timed out in their build: the run said '1 combination(s) ok, 0
    failed' and nothing else (found by a new-user audit). The real builder, failing each batch's
    third candidate, in process."""
    from typer.testing import CliRunner

    import costlab.search.timing as timing
    from costlab.cli import app
    from tests.search.test_build_failures_in_training import FailThirdBuild

    timed = timing.TimedBuilder
    monkeypatch.setattr(timing, "TimedBuilder", lambda builder, timer: FailThirdBuild(timed(builder, timer)))
    config = tiny_config(tmp_path, name="some-failed", models=("random",), trials=16,
                         search={"trials": 16, "trials_per_iter": 8, "population_size": 32})
    done = CliRunner().invoke(app, ["run", str(config)], env={"COLUMNS": "300"})
    said = " ".join(done.output.split())
    assert done.exit_code == 0, said
    assert "gemm · random · seed 0: 8/16 trials (1 failed), best" in said  # the log's line of each batch says so
    assert "gemm · random · seed 0: 16/16 trials (2 failed), best" in said
    assert ("gemm · random · seed 0: 2 of 16 trials failed (2 did not build; each is logged with trial_failed 1); "
            "the first error ends: injected build failure") in said
    assert "done: 1 combination(s) ok, 0 failed (2 trial(s) of the ok ones failed to build or run: said above)." in said


def test_an_error_outside_a_session_ends_the_running_child_too(tmp_path, monkeypatch):
    """An error between the child's creation and its session (here, sizing the workload's FLOPs)
    ended the parent only: the child stayed RUNNING for good."""
    import costlab.search.session as session
    from costlab.config import load_config
    from costlab.experiment import run_experiment

    def broken(*args, **kwargs):
        raise RuntimeError("no FLOPs today")

    monkeypatch.setattr(session, "workload_flops", broken)
    cfg = load_config(tiny_config(tmp_path, name="outside", models=("random",), trials=2))
    with pytest.raises(RuntimeError, match="no FLOPs today"):
        run_experiment(cfg)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("outside").experiment_id])
    assert sorted((r.data.tags["costlab.role"], r.info.status) for r in runs) == [("child", "KILLED"),
                                                                                 ("parent", "KILLED")]


def test_a_search_that_runs_out_of_candidates_is_complete_below_its_budget(tmp_path):
    """MetaSchedule ends a task when its search generates no unmeasured candidate (a small design
    space: RMSNorm 64×4096 did at 508 of 800 trials). The session said 'ok' and looked unfinished,
    so every rerun searched again; now it is complete at that count, in the run, the dry run, MLflow
    and a rerun that measures nothing."""
    budget = 64
    config = tiny_config(tmp_path, name="small-space", models=("random",), trials=budget,
                         workloads=[{"name": "reduce_sum", "params": {"M": 4, "N": 8}}],
                         search={"trials": budget, "trials_per_iter": 16, "population_size": 32})
    said = " ".join(run_cli("run", config, cwd=tmp_path).stdout.split())
    (records,) = (tmp_path / "runs").rglob("database_tuning_record.json")
    measured = len(records.read_text().splitlines())
    assert 0 < measured < budget
    assert f"ran out of unmeasured candidates after {measured} of {budget} trials" in said
    assert f"{measured}/{measured} best" in said and f"{measured}/{budget} best" not in said  # its bar ends full
    state = json.loads((records.parent / "costlab_session.json").read_text())
    assert state["search_exhausted_at"] == measured

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("small-space").experiment_id
    (child,) = client.search_runs([exp], filter_string="tags.`costlab.role` = 'child'")
    assert child.data.tags["costlab.search_exhausted_at"] == str(measured)
    assert child.data.metrics["n_trials"] == measured

    planned = " ".join(run_cli("run", config, "--dry-run", cwd=tmp_path).stdout.split())
    assert f"complete ({measured}/{budget} trials: MetaSchedule's search ran out" in planned
    assert "0 trial(s) left to measure" in planned
    content = records.read_text()
    run_cli("run", config, cwd=tmp_path)
    assert records.read_text() == content
    assert [c.info.run_id for c in client.search_runs([exp], filter_string="tags.`costlab.role` = 'child'")] \
        == [child.info.run_id]


def test_a_copied_work_dir_logs_its_own_model_and_no_made_up_wall_time(tiny_run, tmp_path):
    """Logged from a copy of the work dir, a session's model artifact came from the path saved at
    tuning time: the original's model (or none once the original was moved away). A session copied
    in without its state file was logged as taking a few milliseconds."""
    import shutil
    from pathlib import Path

    tmp, config, _, _, _ = tiny_run
    copy = tmp_path / "copied-runs"
    shutil.copytree(tmp / "runs", copy)
    (xgb_state,) = [p for p in copy.rglob("costlab_session.json") if "tvm-xgb" in p.parts]
    original_model = tmp / "runs" / xgb_state.parent.relative_to(copy) / "model.json"
    assert original_model.is_file()
    state = json.loads(xgb_state.read_text())
    state["model_file"] = str(original_model)  # as sessions saved it before 2026-12-07: the path at tuning time
    xgb_state.write_text(json.dumps(state))
    (xgb_state.parent / "model.json").write_text('{"the copy": true}')  # the copy's own model, told apart
    (random_state,) = [p for p in copy.rglob("costlab_session.json") if "random" in p.parts]
    random_state.unlink()

    uri = f"sqlite:///{tmp_path / 'copied.db'}"
    run_cli("run", config, f"mlflow.tracking_uri={uri}", f"work_dir={copy}", "--recorded-only", cwd=tmp_path)
    store = MlflowClient(tracking_uri=uri)
    children = {c.data.tags["costlab.model"]: c for c in store.search_runs(
        [store.get_experiment_by_name("tiny").experiment_id], filter_string="tags.`costlab.role` = 'child'")}
    logged = store.download_artifacts(children["tvm-xgb"].info.run_id, "model.json", str(tmp_path))
    assert json.loads(Path(logged).read_text()) == {"the copy": True}
    assert children["tvm-xgb"].data.metrics["wall_s"] > 1
    assert children["random"].info.status == "FINISHED"
    assert not {"wall_s", "search_other_s", "cost_model_share"} & set(children["random"].data.metrics)


def test_a_read_only_copy_of_committed_runs_is_logged_with_recorded_only(tiny_run, tmp_path):
    """A team's read-only copy of the runs: each session's plot was drawn beside its database,
    so every combination's logging failed with a PermissionError."""
    import os
    import shutil
    import stat
    import subprocess

    from tests.e2e.helpers import COSTLAB, without_write_override

    tmp, config, _, _, _ = tiny_run
    copy = tmp_path / "read-only-runs"
    shutil.copytree(tmp / "runs", copy)
    (copy / ".costlab.lock").unlink(missing_ok=True)
    sessions = [p.parent for p in copy.rglob("costlab_session.json")]
    before = {p: p.stat().st_mtime_ns for p in copy.rglob("*") if p.name != ".costlab.lock"}
    for session in sessions:
        session.chmod(stat.S_IRUSR | stat.S_IXUSR)
    uri = f"sqlite:///{tmp_path / 'logged.db'}"
    scratch = tmp_path / "scratch"  # the system's temporary folder, for this run
    scratch.mkdir()
    try:
        done = subprocess.run([*without_write_override(), *COSTLAB, "run", str(config), f"mlflow.tracking_uri={uri}",
                               f"work_dir={copy}", "--recorded-only"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "TMPDIR": str(scratch)})
    finally:
        for session in sessions:
            session.chmod(stat.S_IRWXU)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0 and "2 combination(s) ok, 0 failed" in said, said[-3000:]
    store = MlflowClient(tracking_uri=uri)
    for child in store.search_runs([store.get_experiment_by_name("tiny").experiment_id],
                                   filter_string="tags.`costlab.role` = 'child'"):
        assert child.info.status == "FINISHED"
        assert "convergence.png" in {a.path for a in store.list_artifacts(child.info.run_id)}
    after = {p: p.stat().st_mtime_ns for p in copy.rglob("*") if p.name != ".costlab.lock"}  # the run's lock
    assert after == before  # nothing written in the sessions
    assert not list(scratch.glob("costlab-plot-*"))  # the plots' temporary folders are gone
