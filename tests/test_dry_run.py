"""``costlab run --dry-run`` and the plan behind it: what each session would do, read without writing.

The sessions' states come from real records: a record file written the way MetaSchedule's
JSON database writes one line per measured candidate is all the plan reads (the end-to-end
tests check the plan of a real run, killed and resumed, and of another machine's records).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from costlab.config import config_from_dict
from costlab.errors import CostlabError
from costlab.experiment import _untuned_lines, estimate_seconds_left, plan_experiment, refuse_conflicts
from costlab.search.session import SessionPlan, session_dir, session_setup
from costlab.workloads import workload_key

CONFIG = {
    "name": "plan",
    "workloads": [{"name": "gemm", "params": {"M": 32, "N": 32, "K": 32}}],
    "cost_models": ["tvm-xgb", "random"],
    "seeds": [0, 1],
    "search": {"trials": 8},
}


def test_action_and_words_per_state(tmp_path):
    def plan(n, differences=()):
        return SessionPlan(tmp_path, n, 8, list(differences))

    assert plan(0).action == "new" and plan(0).describe() == "new: 8 trials to measure"
    assert plan(3).action == "resume" and plan(3).describe() == "resumes at 3/8 trials"
    assert plan(8).action == "complete" and plan(8, ["target: 'a' then, 'b' now"]).action == "complete"
    refused = plan(3, ["target: 'a' then, 'b' now"])
    assert refused.action == "refused" and "tuned with another setup (target: 'a' then, 'b' now)" in refused.describe()
    # complete records of another workload's TIR or another model are not this combination's results
    assert plan(8, ["workload_hash: '1' then, '2' now"]).action == "refused"
    assert plan(8, ["cost_model.name: 'random' then, 'xgb' now"]).action == "refused"


def test_a_complete_session_of_another_workload_or_model_is_refused_not_logged_as_this_one(tmp_path):
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, rnd) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8, setup={**session_setup(cfg, workload, xgb, 0), "workload_hash": "0"})
    _fake_session(cfg, workload, rnd, 0, 8, setup={**session_setup(cfg, workload, rnd, 0),
                                                   "cost_model": {**rnd.model_dump(mode="json"), "name": "xgb"}})
    actions = [(m.display_name, s, plan.action) for _, m, s, plan in plan_experiment(cfg)]
    assert actions == [("tvm-xgb", 0, "refused"), ("tvm-xgb", 1, "new"), ("random", 0, "refused"), ("random", 1, "new")]
    with pytest.raises(CostlabError) as refused:
        refuse_conflicts(plan_experiment(cfg))
    said = str(refused.value)
    assert said.startswith("2 session(s) hold measured records that were tuned with another setup, and they are "
                           "not this config's workload, cost model or kind of target, or the budget asks for more; "
                           "nothing was tuned")
    assert "workload_hash: '0' then," in said and "cost_model.name: 'xgb' then, 'random' now" in said


def test_complete_cpu_records_are_refused_under_a_cuda_config_but_another_cpu_s_are_logged(tmp_path):
    """Run with target=h100 in a work_dir of CPU sessions, the dry run called them complete and
    the run logged CPU latencies as the h100 config's results; another CPU's records (the same
    kind) stay logged as recorded there."""
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, rnd) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8)
    other_cpu = session_setup(cfg, workload, rnd, 0)
    other_cpu["target"] = re.sub(r'"mcpu": "[^"]*"', '"mcpu": "other-cpu"', other_cpu["target"])
    _fake_session(cfg, workload, rnd, 0, 8, setup=other_cpu)
    cuda = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs"), "target": "h100"})
    plans = {(m.display_name, s): plan for _, m, s, plan in plan_experiment(cuda)}
    assert plans["tvm-xgb", 0].action == plans["random", 0].action == "refused"
    assert "target.kind: 'llvm' then, 'cuda' now" in plans["tvm-xgb", 0].describe()
    with pytest.raises(CostlabError, match="not this config's workload, cost model or kind of target"):
        refuse_conflicts(plan_experiment(cuda))
    plans = {(m.display_name, s): plan for _, m, s, plan in plan_experiment(cfg)}
    assert plans["random", 0].action == "complete" and "target.kind" not in plans["random", 0].describe()
    assert "other-cpu" in plans["random", 0].describe()


def _fake_session(cfg, workload, model, seed, n_records, setup=None, wall_s=None):
    """A session directory holding ``n_records`` record lines, the setup they were tuned with
    and, if given, the wall seconds they took."""
    out = session_dir(cfg, workload, model, seed)
    out.mkdir(parents=True)
    trace = [[["GetSBlock", [], [], []]], []]
    lines = [json.dumps([0, [trace, [1e-3 * (i + 1)], {"kind": "llvm"}, []]]) for i in range(n_records)]
    (out / "database_tuning_record.json").write_text("".join(line + "\n" for line in lines))
    (out / "costlab.json").write_text(json.dumps(setup or session_setup(cfg, workload, model, seed)))
    if wall_s is not None:
        (out / "costlab_session.json").write_text(json.dumps({"seconds": {"wall_s": wall_s}}))


def test_plan_reads_each_session_and_refuses_records_of_another_setup(tmp_path):
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, rnd) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8, wall_s=16.0)  # 2 s per trial
    _fake_session(cfg, workload, xgb, 1, 3)
    other = {**session_setup(cfg, workload, rnd, 0), "measure": {"number": 99}}
    _fake_session(cfg, workload, rnd, 0, 3, setup=other)
    before = sorted(p.read_text() for p in (tmp_path / "runs").rglob("*.json"))

    actions = [(m.display_name, s, plan.action) for _, m, s, plan in plan_experiment(cfg)]
    assert actions == [("tvm-xgb", 0, "complete"), ("tvm-xgb", 1, "resume"),
                       ("random", 0, "refused"), ("random", 1, "new")]
    assert sorted(p.read_text() for p in (tmp_path / "runs").rglob("*.json")) == before  # nothing written
    # left: tvm-xgb seed 1's 5 trials at tvm-xgb's 2 s, random seed 1's 8 at the workload's 2 s (none of
    # random's own sessions saved a time); the refused session measures nothing
    assert estimate_seconds_left(plan_experiment(cfg)) == (pytest.approx(5 * 2.0 + 8 * 2.0), 0)
    with pytest.raises(CostlabError) as refused:
        refuse_conflicts(plan_experiment(cfg))
    said = str(refused.value)
    assert "1 session(s) hold measured records that were tuned with another setup" in said
    assert "nothing was tuned" in said and "measure:" in said and "random/seed0" in said


def test_recorded_only_names_each_partial_session_and_counts_the_never_started_per_model(tmp_path):
    cfg = config_from_dict({**CONFIG, "seeds": [0, 1, 2], "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8)
    _fake_session(cfg, workload, xgb, 1, 3)
    untouched = [entry for entry in plan_experiment(cfg) if entry[3].action != "complete"]
    key = workload_key(workload.name, workload.params)
    assert _untuned_lines(untouched) == [
        f"{key} · tvm-xgb · seed 1: resumes at 3/8 trials",  # it holds records: on its own line
        f"tvm-xgb: 1 never started, among workloads {key}; seeds 2",
        f"random: 3 never started, among workloads {key}; seeds 0, 1, 2",
    ]


def _run_cli(tmp_path, config, *flags, env=None):
    """``costlab run`` of CONFIG, written to TMP_PATH/plan.yaml with its work_dir and MLflow store beside
    it; its exit code and what it said, spaces collapsed."""
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "work_dir": str(tmp_path / "runs"),
                                    "mlflow": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"}, **config}))
    done = subprocess.run([sys.executable, "-m", "costlab", "run", str(path), *flags], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_cli_dry_run_tunes_nothing_and_writes_nothing(tmp_path):
    code, said = _run_cli(tmp_path, {}, "--dry-run")
    assert code == 0, said
    assert said.count("new: 8 trials to measure") == 4
    assert "4 combination(s): 4 new, 0 to resume, 0 complete, 0 refused; 32 trial(s) left to measure" in said
    assert "no recorded session of these workloads to estimate the time by" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]  # no MLflow store, no work_dir


def test_the_dry_run_says_it_did_not_ask_the_rpc_farm(tmp_path):
    """It passed configs whose farm `costlab run` refused seconds later, without a word (a CUDA/RPC audit)."""
    code, said = _run_cli(tmp_path, {"runner": {"kind": "rpc", "tracker": "127.0.0.1:1", "key": "k"}}, "--dry-run")
    assert code == 0, said
    assert ("The RPC farm was not asked (tracker 127.0.0.1:1, key 'k'): `costlab farm status --tracker 127.0.0.1:1` "
            "lists its servers, and the run checks them before its first trial") in said


def test_the_dry_run_says_when_a_run_is_working_in_the_work_dir_now(tmp_path):
    """While a run held the lock, the dry run planned 'new' without a word of it (found by a new-user
    audit); it reads the lock, and writes nothing."""
    from filelock import FileLock

    from costlab.experiment import LOCK_FILE

    (tmp_path / "runs").mkdir()
    lock = FileLock(str(tmp_path / "runs" / LOCK_FILE))
    with lock:
        code, said = _run_cli(tmp_path, {}, "--dry-run")
    assert code == 0, said
    assert f"note: another costlab run is working in work_dir {tmp_path / 'runs'} now (its lock is held)" in said
    code, said = _run_cli(tmp_path, {}, "--dry-run")  # its lock file is left behind, free
    assert code == 0 and "another costlab run" not in said, said


def test_cli_dry_run_with_recorded_only_shows_what_that_run_would_log_and_leave(tmp_path):
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8)
    _fake_session(cfg, workload, xgb, 1, 3)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, said = _run_cli(tmp_path, {}, "--dry-run", "--recorded-only")
    assert code == 0, said
    assert "logged: complete (8/8 trials)" in said
    assert "left untuned (--recorded-only): resumes at 3/8 trials" in said
    assert said.count("left untuned (--recorded-only): new: 8 trials to measure") == 2
    assert "4 combination(s): 1 complete, to be logged to MLflow sqlite:///" in said and "; 3 left untuned." in said
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == sorted([*before, Path("plan.yaml")])


def test_cli_dry_run_estimates_seconds_under_a_minute_and_checks_the_tracking_server(tmp_path):
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 8, wall_s=8.0)  # 1 s a trial; 24 trials left
    code, said = _run_cli(tmp_path, {}, "--dry-run")
    assert code == 0, said
    assert "24 trial(s) left to measure, about 24 s at the seconds per trial" in said
    code, said = _run_cli(tmp_path, {}, "--dry-run", "mlflow.tracking_uri=http://127.0.0.1:9")
    assert code == 2 and "error: MLflow tracking server http://127.0.0.1:9 is unreachable" in said, said


def test_plan_reads_a_search_that_ran_out_and_names_a_hand_edited_count(tmp_path):
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 5)
    state_file = session_dir(cfg, workload, xgb, 0) / "costlab_session.json"
    state_file.write_text(json.dumps({"search_exhausted_at": 5}))
    plans = {(m.display_name, s): plan for _, m, s, plan in plan_experiment(cfg)}
    assert plans[("tvm-xgb", 0)].action == "complete" and plans[("tvm-xgb", 0)].exhausted_at == 5

    state_file.write_text(json.dumps({"search_exhausted_at": "5"}))
    with pytest.raises(CostlabError) as bad:
        plan_experiment(cfg)
    said = str(bad.value)
    assert str(state_file) in said and "search_exhausted_at" in said and "'5'" in said


@pytest.mark.parametrize("file_name, text", [("costlab_session.json", '{"seconds": {"wall_s": 1'),
                                             ("costlab.json", "[1, 2]")])
def test_a_broken_state_or_setup_file_is_named_not_read_as_empty(tmp_path, file_name, text):
    # read as empty, a broken state file would lose the session's times, and a broken setup
    # file would let records of another setup mix with new ones
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 3, wall_s=6.0)
    broken = session_dir(cfg, workload, xgb, 0) / file_name
    broken.write_text(text)
    with pytest.raises(CostlabError) as bad:
        plan_experiment(cfg)
    said = str(bad.value)
    assert str(broken) in said and "move it away" in said
    assert broken.read_text() == text  # left as it was


@pytest.mark.parametrize("field, value, what", [
    ("trial_elapsed_s", "oops", "a list of seconds (null: unknown)"), ("seconds", [1, 2], "a mapping of phase names to seconds"),
    ("seconds", {"wall_s": "abc"}, "a mapping of phase names to seconds"), ("build_failed_trials", 5, "a list of trials"),
    ("model_file", 5, "a path or null"), ("online_accuracy", [[8]], "a list of [trials, accuracy] pairs"),
])
def test_a_state_field_edited_wrong_is_named_with_its_value(tmp_path, field, value, what):
    """Each failed later without the file or field: a TypeError in the middle of the session,
    or (online_accuracy) only when logging its result, after tuning went ahead."""
    cfg = config_from_dict({**CONFIG, "work_dir": str(tmp_path / "runs")})
    (workload,), (xgb, _) = cfg.workloads, cfg.cost_models
    _fake_session(cfg, workload, xgb, 0, 3, wall_s=6.0)
    state_file = session_dir(cfg, workload, xgb, 0) / "costlab_session.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), field: value}))
    with pytest.raises(CostlabError) as bad:
        plan_experiment(cfg)
    assert str(bad.value) == (f"{state_file}: field {field}: not {what} (value: {value!r}); fix or remove the field")


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@needs_nvcc
@pytest.mark.parametrize("target, named", [
    ({"kind": "cuda", "arch": "sm_99"}, "target: CUDA arch 'sm_99' is not one this machine's nvcc compiles for"),
    # without an arch and without a GPU, TVM guesses sm_50, which CUDA 12+ no longer compiles for
    ({"kind": "cuda"}, "(TVM's guess: the target names no arch)"),
])
@pytest.mark.parametrize("flags", [("--dry-run",), ()])
def test_a_cuda_arch_nvcc_cannot_compile_for_is_refused_before_a_trial(tmp_path, target, named, flags):
    """Every kernel would otherwise be a recorded build failure, found after the first batch.
    The dry run says so too; a run stops before its MLflow store or work_dir is made."""
    code, said = _run_cli(tmp_path, {"target": target}, *flags)
    assert code == 2 and named in said and "sm_90" in said and "Traceback" not in said  # the archs it compiles for
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]


def test_a_cuda_target_without_nvcc_is_refused_before_a_trial_and_not_to_log_records(tmp_path):
    no_nvcc = {**os.environ, "PATH": str(tmp_path)}  # a PATH with no nvcc on it
    code, said = _run_cli(tmp_path, {"target": "h200"}, "--dry-run", env=no_nvcc)
    assert code == 2 and "target is CUDA but there is no nvcc on PATH" in said
    # logging recorded sessions builds nothing: no nvcc needed (and with none recorded, that is the error)
    code, said = _run_cli(tmp_path, {"target": "h200"}, "--recorded-only", env=no_nvcc)
    assert code == 2 and "nvcc" not in said and "--recorded-only: no complete session to log under work_dir " in said
    code, said = _run_cli(tmp_path, {"target": "h200"}, "--recorded-only", "--dry-run", env=no_nvcc)
    assert code == 2 and "nvcc" not in said and "--recorded-only: no complete session to log under work_dir " in said


@needs_nvcc
@pytest.mark.parametrize("flags", [("--dry-run",), ()])
def test_an_nvcc_that_cannot_compile_is_refused_before_a_trial(tmp_path, flags):
    """nvcc lists its archs without a host compiler, but compiles nothing: the check passed and
    every trial became a recorded build failure (found by a farm audit). A small kernel is
    compiled first now."""
    bare = tmp_path / "bin"  # nvcc and what it runs, but no gcc
    bare.mkdir()
    for tool in ("nvcc", "sh", "tar"):
        (bare / tool).symlink_to(shutil.which(tool))
    code, said = _run_cli(tmp_path, {"target": "h100"}, *flags, env={**os.environ, "PATH": str(bare)})
    assert code == 2 and "target is CUDA, but this machine's nvcc cannot compile a kernel for sm_90: " in said, said
    assert "gcc" in said and "Traceback" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "plan.yaml"]  # no store, no work_dir


@needs_nvcc
def test_the_dry_run_refuses_a_cuda_target_the_local_runner_cannot_measure(tmp_path):
    """The run refuses a CUDA target with the local runner on a machine without a GPU; the dry
    run said nothing of it."""
    import tvm

    if tvm.runtime.enabled("cuda") and tvm.cuda(0).exist:
        pytest.skip("this machine has a GPU: the local runner measures CUDA here")
    code, said = _run_cli(tmp_path, {"target": "h100"}, "--dry-run")
    assert code == 2 and "target is CUDA but this machine has no GPU for the local runner" in said, said
    assert "0 refused" not in said, said  # the counts, which said none refused, came before the refusal


def test_the_dry_run_refuses_the_tracking_uris_the_run_would_refuse_without_creating_a_store(tmp_path):
    from costlab.tracking import check_reachable

    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database")
    for uri, said in [("foo://bar", "MLflow takes no 'foo' URI; it takes sqlite, http, "),
                      (str(tmp_path / "fs"), "MLflow's file store is in maintenance mode and refuses it"),
                      (f"sqlite:///{not_a_db}", f"{not_a_db} is a file, not a SQLite database")]:
        code, out = _run_cli(tmp_path, {"mlflow": {"tracking_uri": uri}}, "--dry-run")
        assert code == 2 and f"mlflow.tracking_uri {uri}: {said}" in out, out
        with pytest.raises(CostlabError, match=re.escape(uri)):  # the run's own check refuses each too
            check_reachable(uri)
    code, out = _run_cli(tmp_path, {"mlflow": {"tracking_uri": f"sqlite:///{tmp_path / 'new.db'}"}}, "--dry-run")
    assert code == 0, out  # a store to be created: fine, and not created by the dry run
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "fs").exists() and not (tmp_path / "runs").exists()
