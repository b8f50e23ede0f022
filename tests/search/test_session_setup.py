"""A session's records are continued only under the setup they were tuned with."""

from costlab.search.session import _setup_differences


def _setup(**changes):
    setup = {
        "workload_key": "gemm(M=64)", "seed": 0,
        "cost_model": {"name": "ensemble", "label": "warm", "params": {}, "kappa": 1.0,
                       "pretrained": "/work/main/experiments/pretrained/ens"},
        "target": '{"kind": "llvm", "mcpu": "znver3"}',
        "measure": {"number": 1, "repeat": 1, "min_repeat_ms": 0},
        "search": {"trials_per_iter": 16, "eps_greedy": 0.05, "space": "default"},
        "runner": {"kind": "local", "key": None},
    }
    for key, value in changes.items():
        section, _, name = key.partition(".")
        if name:
            setup[section][name] = value
        else:
            setup[key] = value
    return setup


def test_another_target_measurement_or_model_is_named_with_what_differs():
    saved = _setup()
    assert _setup_differences(saved, _setup()) == []
    # a moved checkout: the same pretrained model under another path still resumes
    assert _setup_differences(saved, _setup(**{"cost_model.pretrained": "/ci/clone/experiments/pretrained/ens"})) == []
    assert _setup_differences(saved, _setup(target='{"kind": "llvm", "mcpu": "skylake"}')) == [
        "target.mcpu: 'znver3' then, 'skylake' now"]
    (measure,) = _setup_differences(saved, _setup(measure={"number": 1, "repeat": 1, "min_repeat_ms": 20}))
    assert measure.startswith("measure: ") and "'min_repeat_ms': 20" in measure.split(" then, ")[1]
    assert _setup_differences(saved, _setup(**{"cost_model.kappa": 2.0})) == ["cost_model.kappa: 1.0 then, 2.0 now"]


def test_fields_an_older_setup_file_lacks_are_not_compared():
    old = _setup()
    del old["measure"]
    assert _setup_differences(old, _setup(measure={"number": 3, "repeat": 1, "min_repeat_ms": 20})) == []
    assert _setup_differences({}, _setup()) == []  # no setup file at all


def test_a_costlab_models_session_saved_before_tvm_scores_handed_its_raw_scores():
    """Sessions tuned before the field existed gave MetaSchedule raw scores (clamped at 0 there):
    continuing one with mapped scores would change the search half way."""
    old = _setup()  # no tvm_scores: written before 2026-12-02
    assert _setup_differences(old, _setup(**{"cost_model.tvm_scores": "ordered"})) == [
        "cost_model.tvm_scores: 'raw' then, 'ordered' now"]
    assert _setup_differences(old, _setup(**{"cost_model.tvm_scores": "raw"})) == []
    tvm_xgb = _setup(cost_model={"name": "tvm-xgb", "label": None, "params": {}, "kappa": 0.0})
    assert _setup_differences(tvm_xgb, _setup(cost_model={**tvm_xgb["cost_model"], "tvm_scores": "ordered"})) == []


def test_another_search_setting_or_measuring_device_is_named():
    """Records measured by another RPC device, or found by a search with other settings, must not
    be continued as if they were one run (the budget alone may change)."""
    saved = _setup()
    assert _setup_differences(saved, _setup(**{"search.eps_greedy": 0.5})) == ["search.eps_greedy: 0.05 then, 0.5 now"]
    assert _setup_differences(saved, _setup(**{"search.space": "cuda-tensorcore"})) == [
        "search.space: 'default' then, 'cuda-tensorcore' now"]
    assert _setup_differences(saved, _setup(runner={"kind": "rpc", "key": "a100"})) == [
        "runner.kind: 'local' then, 'rpc' now", "runner.key: None then, 'a100' now"]
    old = _setup()
    del old["search"], old["runner"]  # written before costlab saved them
    assert _setup_differences(old, _setup(**{"search.eps_greedy": 0.5})) == []


def test_a_target_that_differs_is_named_by_the_attributes_that_differ():
    """The H200 sessions' records, continued from a build machine with another CPU as the host: each
    refusal printed both exported targets, some 700 characters each, to tell host.mcpu and
    host.num-cores apart (a CUDA/RPC audit)."""
    from costlab.targets import make_target

    farm = str(make_target({"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 1024,
                            "max_shared_memory_per_block": 49152, "thread_warp_size": 32,
                            "host": {"kind": "llvm", "mcpu": "emeraldrapids", "num-cores": 16}}).export())
    here = str(make_target({"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 1024,
                            "max_shared_memory_per_block": 49152, "thread_warp_size": 32,
                            "host": {"kind": "llvm", "mcpu": "skylake", "num-cores": 2}}).export())
    assert _setup_differences(_setup(target=farm), _setup(target=here)) == [
        "target.host.num-cores: 16 then, 2 now", "target.host.mcpu: 'emeraldrapids' then, 'skylake' now"]
    cpu = str(make_target({"kind": "llvm", "mcpu": "skylake", "num-cores": 2}).export())
    assert _setup_differences(_setup(target=farm), _setup(target=cpu)) == ["target.kind: 'cuda' then, 'llvm' now"]
    assert _setup_differences(_setup(target="not a target"), _setup(target="another")) == [
        "target: 'not a target' then, 'another' now"]  # unreadable: the strings, as they are


def test_the_budget_and_the_tuning_cores_are_not_part_of_the_setup():
    """Both may change on resume: more trials, or more cores for the same search."""
    from costlab.config import config_from_dict
    from costlab.search.session import session_setup

    cfg = config_from_dict({"name": "t", "workloads": [{"name": "gemm", "params": {"M": 64}}],
                            "cost_models": ["random"], "search": {"trials": 8, "num_tuning_cores": 2}})
    setup = session_setup(cfg, cfg.workloads[0], cfg.cost_models[0], 0)
    assert "trials" not in setup["search"] and "num_tuning_cores" not in setup["search"]
    assert setup["search"]["space"] == "default" and setup["runner"] == {"kind": "local", "key": None}


def test_a_workload_whose_tir_changed_is_named():
    """A user's workload file edited between runs keeps the workload's name and key: its records
    must not be continued with the new kernel's."""
    assert _setup_differences(_setup(workload_hash="123"), _setup(workload_hash="456")) == [
        "workload_hash: '123' then, '456' now"]
    assert _setup_differences(_setup(), _setup(workload_hash="456")) == []  # an older setup file lacks it


def test_the_tvm_scores_a_session_was_tuned_with(tmp_path):
    """MLflow's model.tvm_scores param says what the records were tuned with, not the config's default."""
    import json

    from costlab.config import CostModelSpec
    from costlab.search.session import SETUP_FILE, tuned_tvm_scores

    lgbm, tvm_xgb = CostModelSpec(name="lgbm"), CostModelSpec(name="tvm-xgb")
    assert tuned_tvm_scores(tmp_path, lgbm) == "ordered"  # a new session: the config's
    (tmp_path / SETUP_FILE).write_text(json.dumps({"cost_model": {"name": "lgbm", "kappa": 0.0}}))
    assert tuned_tvm_scores(tmp_path, lgbm) == "raw"  # saved before the field existed
    (tmp_path / SETUP_FILE).write_text(json.dumps({"cost_model": {"name": "lgbm", "tvm_scores": "ordered"}}))
    assert tuned_tvm_scores(tmp_path, CostModelSpec(name="lgbm", tvm_scores="raw")) == "ordered"
    assert tuned_tvm_scores(tmp_path, tvm_xgb) is None


def test_a_session_saved_before_measure_reduce_recorded_the_mean():
    """Sessions tuned before ``measure.reduce`` recorded the mean of their timings: they resume
    under ``reduce: mean``, and are refused under ``reduce: min``."""
    old = _setup()  # its measure has no reduce
    assert _setup_differences(old, _setup(**{"measure.reduce": "mean"})) == []
    (measure,) = _setup_differences(old, _setup(**{"measure.reduce": "min"}))
    assert "'reduce': 'mean'" in measure.split(" then, ")[0] and "'reduce': 'min'" in measure.split(" then, ")[1]
