"""Config validation: every bad input ends with exit status 2 and one clear message."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from costlab.config import apply_overrides, config_from_dict, load_config
from costlab.errors import CostlabError

GOOD = {
    "name": "t",
    "workloads": [{"name": "gemm", "params": {"M": 64}}],
    "cost_models": ["tvm-xgb", "random"],
    "seeds": [0, 1],
}


def write(tmp_path, data, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_good_config_defaults(tmp_path):
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.target == "cpu"
    assert [m.name for m in cfg.cost_models] == ["tvm-xgb", "random"]
    assert cfg.search.trials == 32
    assert cfg.experiment_name == "t"


def test_overrides_are_parsed_as_yaml(tmp_path):
    cfg = load_config(write(tmp_path, GOOD), ["search.trials=64", "cost_models=[random]", "seeds=[3]"])
    assert cfg.search.trials == 64
    assert [m.name for m in cfg.cost_models] == ["random"]
    assert cfg.seeds == [3]


def test_search_threads_default_to_one_and_all_means_every_usable_core(tmp_path):
    import os

    assert load_config(write(tmp_path, GOOD)).search.tuning_cores == 1
    cfg = load_config(write(tmp_path, GOOD), ["search.num_tuning_cores=all"])
    assert cfg.search.num_tuning_cores == "all" and cfg.search.tuning_cores == len(os.sched_getaffinity(0))
    assert load_config(write(tmp_path, GOOD), ["search.num_tuning_cores=3"]).search.tuning_cores == 3
    with pytest.raises(CostlabError, match=r"field search\.num_tuning_cores: .*at least 1, or all \(value: 0\)"):
        load_config(write(tmp_path, GOOD), ["search.num_tuning_cores=0"])


@pytest.mark.parametrize("override, field", [
    ("search.trials=true", "search.trials"), ("seeds=[true, false]", "seeds"),
    ("search.eps_greedy=false", "search.eps_greedy"), ("runner.workers=true", "runner.workers"),
])
def test_true_or_false_is_not_taken_for_a_number(tmp_path, override, field):
    """pydantic reads YAML's true as 1 (and false as 0) in a number field: trials: true would tune one trial."""
    with pytest.raises(CostlabError, match=rf"field {re.escape(field)}: .*must be a number, not true or false"):
        load_config(write(tmp_path, GOOD), [override])
    assert load_config(write(tmp_path, GOOD), ["cost_models=[{name: lgbm, frozen: false}]"]).cost_models[0].frozen is False


def test_an_error_in_an_overridden_field_names_the_override_not_only_the_file(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(CostlabError) as bad_value:
        load_config(path, ["seeds=[0]", "search.trials=abc"])
    assert str(bad_value.value).startswith(f"{path}, override 'search.trials=abc': field search.trials: ")
    with pytest.raises(CostlabError) as bad_name:  # a check after the schema's (names, params)
        load_config(path, ["cost_models=[nope]"])
    assert str(bad_name.value).startswith(f"{path}, override 'cost_models=[nope]': field cost_models.0.name: "
                                          "unknown cost model (value: 'nope')")
    with pytest.raises(CostlabError) as in_file:  # the file's own mistake is still the file's
        load_config(write(tmp_path, {**GOOD, "seeds": [-1]}), ["search.trials=4"])
    assert str(in_file.value).startswith(f"{path}: field seeds.0: ")


def test_nested_override_creates_mappings():
    assert apply_overrides({}, ["a.b.c=1"]) == {"a": {"b": {"c": 1}}}


@pytest.mark.parametrize(
    "change, field, value",
    [
        ({"search": {"trials": "many"}}, "search.trials", "'many'"),
        ({"search": {"trials": -3}}, "search.trials", "-3"),
        ({"workloads": [{"name": "gemmm"}]}, "workloads.0.name", "'gemmm'"),
        ({"workloads": [{"name": "gemm", "params": {"Q": 3}}]}, "workloads.0.params", "'Q'"),
        ({"cost_models": ["xgboost-please"]}, "cost_models.0.name", "'xgboost-please'"),
        ({"target": "tpu"}, "target", "'tpu'"),
        ({"seeds": "zero"}, "seeds", "'zero'"),
        ({"seeds": [0, -1]}, "seeds.1", "-1"),  # numpy and TVM take 0..2**32-1
        ({"target": {"kind": "nonsense"}}, "target", "'nonsense'"),  # TVM's own check, at load
        # a label names MLflow runs (in filter strings) and the session's directory
        ({"cost_models": [{"name": "random", "label": "rand'om"}]}, "cost_models.0.label", "\"rand'om\""),
        ({"cost_models": [{"name": "random", "label": "../up"}]}, "cost_models.0.label", "'../up'"),
        ({"cost_models": [{"name": "random", "label": ".."}]}, "cost_models.0.label", "'..'"),
        ({"name": ".."}, "name", "'..'"),  # the default work_dir, runs/<name>
        # settings that fail every combination at run time: refused at load
        ({"target": {"kind": "llvm", "mcpu": "x86-64"}}, "target", "lacks (value: {'kind': 'llvm', 'mcpu': 'x86-64'})"),
        ({"target": {"kind": "llvm", "mcpu": "znver33", "num-cores": 2}}, "target", "LLVM knows no CPU 'znver33'"),
        ({"target": {"kind": "llvm", "num-cores": 0}}, "target", "num-cores must be a whole number of cores, 1 or "
                                                                  "more (value: 0)"),  # TVM took it without a word
        ({"search": {"space": "cuda-tensorcore"}}, "search.space", "'cuda-tensorcore' is a CUDA design space, and "
                                                                   "the target is 'llvm'"),
        ({"workloads": [{"name": "gemm", "params": {"M": 64}, "space": "cuda-tensorcore"}]}, "workloads.0.space",
         "'cuda-tensorcore'"),
        ({"cost_models": [{"name": "lgbm", "pretrained": "README.md"}]}, "cost_models.0.pretrained",
         "not a saved costlab model directory (no costlab-model.json in it)"),
        ({"cost_models": [{"name": "lgbm", "pretrained": "experiments/pretrained/lgbm-cpu-v1", "features": "trace"}]},
         "cost_models.0.pretrained", "trained on 'analysis+trace' features, and features is 'trace'"),
        ({"runner": {"kind": "rpc"}}, "runner", "None"),
        ({"searh": {"trials": 3}}, "searh", "{'trials': 3}"),
        ({"cost_models": [{"name": "lgbm", "pretrained": "no/such/model"}]}, "cost_models.0.pretrained",
         "'no/such/model'"),
        ({"cost_models": [{"name": "lgbm", "warm": "blend"}]}, "cost_models.0.warm", "'blend'"),
        ({"cost_models": [{"name": "lgbm", "warm": "distill"}]}, "cost_models.0.warm", "'distill'"),
        ({"cost_models": [{"name": "lgbm", "frozen": True}]}, "cost_models.0.frozen", "true"),
        ({"cost_models": [{"name": "lgbm", "kappa": 1.5}]}, "cost_models.0.kappa", "1.5"),
        ({"cost_models": [{"name": "lgbm", "pretrain_on": "no/such/dataset"}]}, "cost_models.0.pretrain_on",
         "'no/such/dataset'"),
        ({"cost_models": [{"name": "tvm-xgb", "frozen": True}]}, "cost_models.0.name", "'tvm-xgb'"),
        ({"cost_models": [{"name": "tvm-xgb", "tvm_scores": "raw"}]}, "cost_models.0.tvm_scores", "'raw'"),
        ({"cost_models": [{"name": "lgbm", "tvm_scores": "clamp"}]}, "cost_models.0.tvm_scores", "'clamp'"),
        ({"cost_models": [{"name": "lgbm", "pretrain_rows": 2000}]}, "cost_models.0.pretrain_rows", "2000"),
        ({"cost_models": [{"name": "lgbm", "pretrain_rows": 1}]}, "cost_models.0.pretrain_rows", "1"),
        ({"cost_models": [{"name": "lgbm", "pretrain_family": True}]}, "cost_models.0.pretrain_family", "true"),
        ({"cost_models": [{"name": "lgbm", "pretrain_family": "related"}]}, "cost_models.0.pretrain_family",
         "'related'"),
        ({"cost_models": [{"name": "lgbm", "pretrain_family": "nearest"}]}, "cost_models.0.pretrain_family",
         "'nearest'"),
        ({"cost_models": [{"name": "lgbm", "pretrain_family": "group"}]}, "cost_models.0.pretrain_family",
         "'group'"),
        # a model's params: checked at load, not after the first measured batch
        ({"cost_models": [{"name": "lgbm", "params": {"objective": "lamdarank"}}]}, "cost_models.0.params",
         "'lamdarank'"),
        ({"cost_models": [{"name": "lgbm", "params": {"num_leaf": 8}}]}, "cost_models.0.params", "'num_leaf'"),
        ({"cost_models": [{"name": "xgb", "params": {"subsample": 1.5}}]}, "cost_models.0.params", "1.5"),
        ({"cost_models": [{"name": "gnn", "params": {"loss": "hinge"}}]}, "cost_models.0.params", "'hinge'"),
        ({"cost_models": [{"name": "xgb", "params": {"extra_params": {"max_dpeth": 3}}}]}, "cost_models.0.params",
         "max_dpeth"),
        ({"cost_models": [{"name": "ensemble", "params": {"n_member": 4}}]}, "cost_models.0.params", "'n_member'"),
        ({"cost_models": [{"name": "ensemble", "params": {"base": "lgbn"}}]}, "cost_models.0.params", "'lgbn'"),
        ({"cost_models": [{"name": "ensemble", "params": {"base": "lgbm", "base_params": {"group_weight": "even"}}}]},
         "cost_models.0.params", "'even'"),
        ({"cost_models": [{"name": "tvm-xgb", "params": {"max_depth": 3}}]}, "cost_models.0.params",
         "{'max_depth': 3}"),
        ({"cost_models": [{"name": "lgbm", "pretrained": "no/such/model", "params": {"num_leaves": 8}}]},
         "cost_models.0.params", "{'num_leaves': 8}"),
        # features of a kind the model does not take: at load, not at the first fit
        ({"cost_models": [{"name": "xgb", "features": "graph"}]}, "cost_models.0.features", "'graph' are graph"),
        ({"cost_models": [{"name": "gnn", "features": "per_store"}]}, "cost_models.0.features",
         "'per_store' are dense"),
        ({"cost_models": [{"name": "lgbm", "features": "per_stor"}]}, "cost_models.0.features", "'per_stor'"),
        # found by a bad-input audit: each passed the load, then failed at run time or changed nothing
        ({"search": {"trials": 10**20}}, "search.trials", "less than or equal to 2147483647"),  # TVM's int32
        ({"search": {"population_size": 10**10}}, "search.population_size", "10000000000"),
        ({"builder": {"timeout_s": float("inf")}}, "builder.timeout_s", "finite number (value: inf)"),
        ({"builder": {"timeout_s": 1e10}}, "builder.timeout_s", "less than or equal to 1000000 (value: 10000000000.0)"),  # threading's timers overflow
        ({"runner": {"timeout_s": float("nan")}}, "runner.timeout_s", "finite number"),
        ({"cost_models": [{"name": "ensemble", "kappa": float("inf")}]}, "cost_models.0.kappa", "finite number"),
        ({"cost_models": [{"name": "lgbm", "retrain_growth": float("inf")}]}, "cost_models.0.retrain_growth",
         "finite number"),
        ({"cost_models": [{"name": "lgbm", "pretrain_on": ""}]}, "cost_models.0.pretrain_on", "at least 1 character"),
        ({"cost_models": [{"name": "lgbm", "pretrained": ""}]}, "cost_models.0.pretrained", "at least 1 character"),
        ({"cost_models": [{"name": "lgbm", "features": ""}]}, "cost_models.0.features", "at least 1 character"),
        ({"work_dir": ""}, "work_dir", "at least 1 character (value: '')"),
        ({"mlflow": {"experiment": ""}}, "mlflow.experiment", "at least 1 character (value: '')"),
        ({"cost_models": [{"name": "tvm-xgb", "features": "trace"}]}, "cost_models.0.features",
         "reads TVM's per-store features and retrains every batch; features applies to costlab models "
         "(value: 'trace')"),
        ({"cost_models": [{"name": "tvm-xgb", "retrain_growth": 2}]}, "cost_models.0.retrain_growth", "(value: 2.0)"),
        ({"cost_models": [{"name": "lgbm", "blend_samples": 5}]}, "cost_models.0.blend_samples",
         "applies to warm: blend only (value: 5)"),
        # a union's members are one line of the field, not fields of their own (target.str, target.dict[str,any])
        ({"target": 3}, "target", "Input should be a valid string; or a valid dictionary (value: 3)"),
        ({"cost_models": [{"name": "lgbm", "pretrain_family": "relatd"}]}, "cost_models.0.pretrain_family",
         "valid boolean, unable to interpret input; or 'related', 'group' or 'measured' (value: 'relatd')"),
    ],
)
def test_bad_field_names_file_field_and_value(tmp_path, change, field, value):
    path = write(tmp_path, {**GOOD, **change})
    with pytest.raises(CostlabError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert f"field {field}" in message
    assert value in message


def test_an_override_the_shell_split_at_a_space_says_so(tmp_path):
    with pytest.raises(CostlabError, match=r"override 'seeds=\[0,': value '\[0,' is not valid YAML \(the shell "
                                           r"split it at a space: quote the whole override\): "):
        load_config(write(tmp_path, GOOD), ["seeds=[0,", "1]"])


def test_a_directory_given_as_a_workload_file_is_called_a_directory(tmp_path):
    with pytest.raises(CostlabError, match=f"field workload_files.0: workload file {tmp_path} is a directory, "
                                           "not a Python file"):
        load_config(write(tmp_path, {**GOOD, "workload_files": [str(tmp_path)]}))


@pytest.mark.parametrize("yaml_text, overrides", [
    ("search:\n  ? [a, b]\n  : 1\n", []),
    ("", ["search={[a]: 1}"]),
    ("", ["search={{x: 1}: 2}"]),
])
def test_a_list_or_mapping_as_a_key_is_broken_yaml_not_a_traceback(tmp_path, yaml_text, overrides):
    """PyYAML raised TypeError (unhashable type: 'list') from costlab's loader: a traceback."""
    path = write(tmp_path, GOOD)
    path.write_text(path.read_text() + yaml_text)
    with pytest.raises(CostlabError) as info:
        load_config(path, overrides)
    assert "a key must be a name or a number, not a " in str(info.value), str(info.value)


def test_pretrained_must_hold_the_configured_model(tmp_path):
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "costlab-model.json").write_text('{"format": "costlab-model", "format_version": 1, "model": "xgb"}')
    path = write(tmp_path, {**GOOD, "cost_models": [{"name": "lgbm", "pretrained": str(saved)}]})
    with pytest.raises(CostlabError,
                       match=rf"field cost_models.0.pretrained: {re.escape(str(saved))}: holds a 'xgb' model, not 'lgbm'"):
        load_config(path)
    (saved / "costlab-model.json").unlink()
    (saved / "warm_blend.json").write_text("{}")
    with pytest.raises(CostlabError, match=r"field cost_models.0.pretrained: a blended session model .*'pretrained' or 'online'"):
        load_config(path)


def test_a_pretrained_model_with_a_damaged_file_is_refused_at_load(tmp_path):
    """Its booster removed, the model passed the load and the dry run, then every combination failed
    with LightGBM's error, not naming the field (found by a bad-input audit)."""
    model = tmp_path / "m"
    shutil.copytree(Path(__file__).resolve().parents[1] / "experiments" / "pretrained" / "lgbm-cpu-v1", model)
    load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "lgbm", "pretrained": str(model)}]}))
    booster = next(p for p in model.iterdir() if p.suffix == ".txt")
    booster.unlink()
    with pytest.raises(CostlabError, match=r"field cost_models.0.pretrained: .*cannot be loaded, a file of it is "
                                           r"missing or damaged: .*" + booster.name):
        load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "lgbm", "pretrained": str(model)}]}))


def test_pretrain_on_takes_a_dataset_and_excludes_pretrained(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset.json").write_text("{}")
    cfg = load_config(write(tmp_path, {**GOOD, "cost_models": [
        {"name": "lgbm", "pretrain_on": str(tmp_path / "ds"), "warm": "blend"}]}))
    assert cfg.cost_models[0].warm_started and cfg.cost_models[0].pretrain_on == str(tmp_path / "ds")
    saved = tmp_path / "saved"
    shutil.copytree(Path(__file__).resolve().parents[1] / "experiments" / "pretrained" / "lgbm-cpu-v1", saved)
    with pytest.raises(CostlabError, match=r"field cost_models.0.pretrain_on: give pretrained or pretrain_on, not both"):
        load_config(write(tmp_path, {**GOOD, "cost_models": [
            {"name": "lgbm", "pretrain_on": str(tmp_path / "ds"), "pretrained": str(saved)}]}))
    for where, said in ((tmp_path / "gone", "no such directory"),
                        (saved, "not a costlab dataset \\(no dataset.json in it\\)")):  # a model directory
        with pytest.raises(CostlabError, match=rf"field cost_models.0.pretrain_on: {said}; `costlab dataset build "):
            load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "lgbm", "pretrain_on": str(where)}]}))


def test_pretrain_tuned_needs_a_dataset_holding_every_workload(tmp_path):
    import pandas as pd

    from costlab.workloads import workload_key

    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "dataset.json").write_text("{}")
    pd.DataFrame({"workload_key": [workload_key("gemm", {"M": 64})] * 2,
                  "workload_hash": ["1", "2"]}).to_parquet(ds / "records.parquet")
    transfer = {"name": "lgbm", "pretrain_on": str(ds), "pretrain_tuned": True}
    assert load_config(write(tmp_path, {**GOOD, "cost_models": [transfer]})).cost_models[0].pretrain_tuned
    two = {**GOOD, "workloads": [*GOOD["workloads"], {"name": "softmax", "params": {"M": 8, "N": 16}}],
           "cost_models": [transfer]}
    path = write(tmp_path, two)
    with pytest.raises(CostlabError, match=rf"{re.escape(str(path))}: field cost_models.0.pretrain_tuned: the dataset "
                                           rf"{re.escape(str(ds))} holds no rows of softmax\(M=8,N=16"):
        load_config(path)
    for spec in ({"name": "lgbm", "pretrain_tuned": True}, {**transfer, "pretrain_family": "measured"}):
        with pytest.raises(CostlabError, match=r"field cost_models.0.pretrain_tuned: needs pretrain_on"):
            load_config(write(tmp_path, {**GOOD, "cost_models": [spec]}))
    (ds / "records.parquet").unlink()
    with pytest.raises(CostlabError, match=r"pretrain_tuned: cannot read the dataset's workloads from .*records.parquet"):
        load_config(write(tmp_path, {**GOOD, "cost_models": [transfer]}))


@pytest.mark.parametrize("extra", [{"frozen": True}, {"warm": "blend"}, {"pretrain_rows": 500}])
def test_a_measured_warm_start_excludes_what_would_keep_it_from_choosing(tmp_path, extra):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset.json").write_text("{}")
    measured = {"name": "lgbm", "pretrain_on": str(tmp_path / "ds"), "pretrain_family": "measured"}
    assert load_config(write(tmp_path, {**GOOD, "cost_models": [measured]})).cost_models[0].pretrain_family == "measured"
    path = write(tmp_path, {**GOOD, "cost_models": [{**measured, **extra}]})
    with pytest.raises(CostlabError, match=rf"{re.escape(str(path))}: field cost_models.0.pretrain_family: "
                                           r"'measured' .* \(value: 'measured'\)"):
        load_config(path)


def test_missing_required_field(tmp_path):
    data = dict(GOOD)
    del data["workloads"]
    with pytest.raises(CostlabError, match=r"field workloads: Field required"):
        load_config(write(tmp_path, data))


def test_not_a_mapping():
    with pytest.raises(CostlabError, match="must be a YAML mapping"):
        config_from_dict([1, 2], "x.yaml")


def test_bad_override_syntax(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(CostlabError, match=r"not of the form KEY=VALUE \(KEY dotted, e.g. search.trials=64\)"):
        load_config(path, ["search.trials"])
    with pytest.raises(CostlabError, match=rf"^{path}: override 'workloads.0.params.M=16': workloads is not a mapping; "
                                           r"it is a list: give it whole, e.g. workloads=\[...\]$"):
        load_config(path, ["workloads.0.params.M=16"])
    with pytest.raises(CostlabError, match=r"override 'search=\{trials: 4, trials: 8\}': value .* is not valid YAML: "
                                           r".*key 'trials' is given twice"):
        load_config(path, ["search={trials: 4, trials: 8}"])


@pytest.mark.parametrize("overrides", [["search.trials=32", "search.trials=64"],
                                       ["search.trials=32", "search.trials=32"],
                                       ["search.trials=32", "search={trials: 64}"],
                                       ["search={trials: 32}", "search.trials=64"],
                                       ["search.trials=32", "search=null"]])
def test_a_key_given_twice_in_overrides_is_an_error(overrides):
    """As in a file: the last one won without a word."""
    key = "search" if overrides[1] == "search=null" else "search.trials"
    with pytest.raises(CostlabError, match=rf"override {re.escape(repr(overrides[1]))}: {key} is given twice "
                                           rf"\(also {re.escape(repr(overrides[0]))}\); give each key once"):
        apply_overrides({}, overrides)
    # keys side by side in one block are not the same key
    assert apply_overrides({}, ["search={trials: 32}", "search.population_size=64"]) == {
        "search": {"trials": 32, "population_size": 64}}


def test_a_mapping_override_merges_into_the_block_it_sets(tmp_path):
    """``search={trials: 64}`` replaced the whole search block: its other keys went back to defaults."""
    path = write(tmp_path, {**GOOD, "search": {"trials": 8, "population_size": 64},
                            "measure": {"number": 2, "repeat": 1}})
    cfg = load_config(path, ["search={trials: 64}", "measure={number: 4}"])
    assert (cfg.search.trials, cfg.search.population_size) == (64, 64)
    assert (cfg.measure.number, cfg.measure.repeat) == (4, 1)
    assert apply_overrides({"a": {"b": {"c": 1, "d": 2}}}, ["a={b: {c: 3}}"]) == {"a": {"b": {"c": 3, "d": 2}}}
    assert apply_overrides({"a": {"b": 1}}, ["a=[1]"]) == {"a": [1]}  # not a mapping: replaced


def test_a_yaml_merge_key_is_not_taken_for_a_key_given_twice(tmp_path):
    path = write(tmp_path, "name: t\nbase: &base {trials: 8, population_size: 64}\nsearch:\n  <<: *base\n"
                           "  trials: 4\nworkloads: [{name: gemm}]\ncost_models: [random]\n")
    with pytest.raises(CostlabError, match="field base: Extra inputs"):  # the anchor's holder is not a field
        load_config(path)
    path = write(tmp_path, "name: t\nsearch: &base {trials: 8, population_size: 64}\ncost_models:\n"
                           "  - {<<: {name: lgbm, label: a}, label: b}\nworkloads: [{name: gemm}]\n")
    cfg = load_config(path)
    assert (cfg.cost_models[0].name, cfg.cost_models[0].label, cfg.search.population_size) == ("lgbm", "b", 64)


def test_an_error_under_an_overridden_key_names_the_override(tmp_path):
    """``runner.kind=rpc`` is checked with the runner block as a whole (field runner)."""
    path = write(tmp_path, GOOD)
    with pytest.raises(CostlabError) as err:
        load_config(path, ["runner.kind=rpc", "runner.key=k"])
    assert str(err.value).startswith(f"{path}, override 'runner.kind=rpc': field runner: ")


@pytest.mark.parametrize("runner, message", [
    ({"kind": "rpc", "tracker": "127.0.0.1:70000", "key": "k"}, "the tracker's port must be 1..65535"),
    ({"kind": "rpc", "tracker": "127.0.0.1:0", "key": "k"}, "the tracker's port must be 1..65535"),
    ({"kind": "rpc", "tracker": "127.0.0.1:9190", "key": "k", "timeout_s": 10}, "timeout_s limits the local runner"),
    ({"session_timeout_s": 10}, "session_timeout_s limits an rpc runner's sessions"),
    ({"queue_timeout_s": 10}, "queue_timeout_s limits an rpc runner's sessions"),
    ({"workers": 2}, "the local runner measures one at a time"),
])
def test_a_runner_setting_the_runner_would_not_use_is_refused(tmp_path, runner, message):
    with pytest.raises(CostlabError, match=rf"field runner: .*{re.escape(message)}"):
        load_config(write(tmp_path, {**GOOD, "runner": runner}))
    assert load_config(write(tmp_path, {**GOOD, "runner": {"kind": "rpc", "tracker": "h:9190", "key": "k",
                                                           "session_timeout_s": 5, "workers": 2}})).runner.workers == 2


def test_a_label_that_is_another_models_name_is_refused(tmp_path):
    """compare takes runs by label: a random model labelled tvm-xgb would be taken for the baseline."""
    with pytest.raises(CostlabError, match=r"field cost_models.0.label: 'tvm-xgb' is another registered model's name"):
        load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "random", "label": "tvm-xgb"}]}))
    assert load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "random", "label": "random"}]}))


def test_a_key_given_twice_in_a_config_is_refused_not_silently_the_last(tmp_path):
    path = write(tmp_path, "name: t\nsearch: {trials: 8}\nworkloads: [{name: gemm}]\ncost_models: [random]\n"
                           "search: {seed_offset: 1}\n")
    with pytest.raises(CostlabError, match=rf"^{path}: broken YAML at line 5, column 1: key 'search' is given twice "
                                           rf"in one mapping$"):
        load_config(path)


def test_duplicate_model_labels(tmp_path):
    with pytest.raises(CostlabError, match="duplicate model 'random'"):
        load_config(write(tmp_path, {**GOOD, "cost_models": ["random", "random"]}))
    # each label names a session folder: Rnd and rnd are one on macOS and Windows
    with pytest.raises(CostlabError, match=r"duplicate model 'Rnd' \(labels are compared ignoring case"):
        load_config(write(tmp_path, {**GOOD, "cost_models": [{"name": "random", "label": "Rnd"},
                                                             {"name": "random", "label": "rnd"}]}))


def test_a_seed_given_twice_is_refused(tmp_path):
    with pytest.raises(CostlabError, match=r"field seeds: .*seed 1 is given twice"):
        load_config(write(tmp_path, {**GOOD, "seeds": [1, 0, 1]}))


def test_a_workload_given_twice_is_refused_whatever_the_spelling(tmp_path):
    # the same key: params in another order, and the default dtype spelled out
    twice = [{"name": "gemm", "params": {"M": 64, "N": 32}},
             {"name": "gemm", "params": {"N": 32, "dtype": "float32", "M": 64}}]
    with pytest.raises(CostlabError, match=r"field workloads.1: the same workload as workloads.0 "
                                           r"\(value: 'gemm\(M=64,N=32,"):
        load_config(write(tmp_path, {**GOOD, "workloads": twice}))


def test_workloads_that_would_share_a_session_directory_are_refused(tmp_path):
    (tmp_path / "tagged.py").write_text(
        "import tvm\nfrom tvm import te\nfrom costlab.workloads import register_workload\n"
        "@register_workload('tagged_copy')\n"
        "def tagged_copy(n: int = 16, tag: str = 'a'):\n"
        "    A = te.placeholder((n,), 'float32', name='A')\n"
        "    B = te.compute((n,), lambda i: A[i], name='B')\n"
        "    return tvm.IRModule({'main': te.create_prim_func([A, B])})\n"
    )
    cfg = {**GOOD, "workload_files": [str(tmp_path / "tagged.py")],
           "workloads": [{"name": "tagged_copy", "params": {"tag": "x y"}},
                         {"name": "tagged_copy", "params": {"tag": "x:y"}}]}
    with pytest.raises(CostlabError, match=r"field workloads.1: its session directory, 'tagged_copy_n=16,tag=x_y_', "
                                           r"would be workloads.0's"):
        load_config(write(tmp_path, cfg))
    cfg["workloads"][1]["params"]["tag"] = "X y"  # one folder where case is not told apart
    with pytest.raises(CostlabError, match=r"field workloads.1: its session directory, 'tagged_copy_n=16,tag=X_y_', "
                                           r"would be workloads.0's"):
        load_config(write(tmp_path, cfg))
    cfg["workloads"][1]["params"]["tag"] = "x-y"
    assert len(load_config(write(tmp_path, cfg)).workloads) == 2


def test_user_workload_file(tmp_path):
    (tmp_path / "ops.py").write_text(
        "import tvm\nfrom tvm import te\nfrom costlab.workloads import register_workload\n"
        "@register_workload('double_it')\n"
        "def double_it(n: int = 16):\n"
        "    A = te.placeholder((n,), 'float32', name='A')\n"
        "    B = te.compute((n,), lambda i: A[i] * 2.0, name='B')\n"
        "    return tvm.IRModule({'main': te.create_prim_func([A, B])})\n"
    )
    cfg = load_config(write(tmp_path, {**GOOD, "workload_files": [str(tmp_path / "ops.py")],
                                       "workloads": [{"name": "double_it", "params": {"n": 8}}]}))
    assert cfg.workloads[0].name == "double_it"


def test_user_workload_file_that_raises(tmp_path):
    (tmp_path / "bad.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(CostlabError, match=r"workload_files.0: workload file .*bad.py raised RuntimeError: boom"):
        load_config(write(tmp_path, {**GOOD, "workload_files": [str(tmp_path / "bad.py")]}))


def _cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "costlab", "run", *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "content, expected",
    [
        ("name: t\nworkloads: [\n", "broken YAML"),
        (yaml.safe_dump({**GOOD, "search": {"trials": "x"}}), "field search.trials"),
        (yaml.safe_dump({**GOOD, "cost_models": ["nope"]}), "unknown cost model (value: 'nope')"),
    ],
)
def test_cli_bad_config_exits_2_without_traceback(tmp_path, content, expected):
    path = write(tmp_path, content)
    proc = _cli(tmp_path, path)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr
    assert str(path) in proc.stderr.replace("\n", "")
    assert "Traceback" not in proc.stderr + proc.stdout


def test_cli_missing_config_file(tmp_path):
    proc = _cli(tmp_path, tmp_path / "absent.yaml")
    assert proc.returncode == 2
    assert "absent.yaml does not exist" in proc.stderr.replace("\n", "")
    assert "Traceback" not in proc.stderr


def test_a_directory_given_as_the_config_is_called_a_directory(tmp_path):
    with pytest.raises(CostlabError, match=f"^config file {tmp_path} is a directory, not a YAML file$"):
        load_config(tmp_path)


def test_work_dir_that_is_a_file_or_under_one_is_refused_at_load(tmp_path):
    (tmp_path / "afile").write_text("")
    path = write(tmp_path, {**GOOD, "work_dir": str(tmp_path / "afile")})
    with pytest.raises(CostlabError, match=rf"^{path}: field work_dir {tmp_path}/afile: is not a directory$"):
        load_config(path)
    path = write(tmp_path, {**GOOD, "work_dir": str(tmp_path / "afile" / "sub")})
    with pytest.raises(CostlabError, match=rf"^{path}: field work_dir {tmp_path}/afile/sub: cannot be created: "
                                           rf"{tmp_path}/afile is not a directory$"):
        load_config(path)


@pytest.mark.parametrize("target, runner, timed", [
    ("cpu", {}, True),
    ("cpu", {"kind": "rpc", "tracker": "127.0.0.1:9190", "key": "farm"}, False),  # an RPC server's CPU
    ("h100", {}, False),  # a GPU kernel
])
def test_numpy_is_a_reference_only_for_kernels_measured_on_this_cpu(target, runner, timed):
    """numpy is timed in the costlab process: beside an RPC server's or a GPU's kernel it was
    logged as best_vs_numpy all the same."""
    from costlab.experiment import numpy_times_the_same_machine
    from costlab.targets import make_target

    cfg = config_from_dict({**GOOD, "target": target, "runner": runner})
    assert numpy_times_the_same_machine(cfg, make_target(cfg.target)) is timed


@pytest.fixture
def broken_plugins():
    """Three plug-in models as a third party might write them, registered for one test."""
    from costlab.models import MODELS, CostModel
    from tests.bare_models import FitOnly

    class Complete(FitOnly):
        def __init__(self, x: int = 1):
            self.x = x

        def update(self, features, latency_s, groups):
            return self

    class NoPredict(FitOnly):  # abstract: it cannot be built at all
        name = "_no-predict"
        predict = CostModel.predict

    class NoUpdate(Complete):
        name = "_no-update"
        update = CostModel.update

    class ValueErrorCheck(Complete):
        name = "_value-error-check"

        def check_params(self):
            if self.x < 0:
                raise ValueError("x must not be negative")

    added = [NoPredict, NoUpdate, ValueErrorCheck]
    for model in added:
        MODELS.register(model.name)(model)
    yield
    for model in added:
        MODELS._factories.pop(model.name, None)


@pytest.mark.parametrize("model, said", [
    ("_no-predict", "field cost_models.0.params: _no-predict: building it with params {} raised TypeError: Can't "
                    "instantiate abstract class NoPredict"),
    ("_no-update", "field cost_models.0: cost model '_no-update' (tests.test_config.broken_plugins.<locals>.NoUpdate) "
                   "does not implement update(), which a tuning session calls after each measured batch"),
    ({"name": "_value-error-check", "params": {"x": -1}}, "field cost_models.0.params: _value-error-check: params "
                                                          "{'x': -1} refused by its check_params: ValueError: x must "
                                                          "not be negative"),
])
def test_a_plugin_that_cannot_tune_is_refused_at_load(broken_plugins, model, said):
    """Each passed the config and --dry-run: the first failed when its session started, the second
    after its first measured batch, the third with a traceback."""
    with pytest.raises(CostlabError) as refused:
        config_from_dict({**GOOD, "cost_models": [model]}, source="cfg.yaml")
    assert str(refused.value).startswith(f"cfg.yaml: {said}"), str(refused.value)


@pytest.mark.parametrize("field, value, said", [
    ("name", "n" * 201, "field name: String should have at most 200 characters"),
    ("mlflow", {"experiment": "e" * 257}, "field mlflow.experiment: String should have at most 256 characters"),
    ("work_dir", "w" * 300, "field work_dir " + "w" * 300 + ": File name too long"),
])
def test_a_name_too_long_for_a_folder_or_mlflow_is_refused_at_load(tmp_path, field, value, said):
    """A 300-character name (the default work_dir's folder) failed with an OSError traceback, and
    an experiment name over MLflow's 500 characters with MLflow's, once the run had started (its SQL
    stores' column holds 256)."""
    data = {"name": "ok", "workloads": [{"name": "gemm"}], "cost_models": ["random"], field: value}
    with pytest.raises(CostlabError, match=re.escape(said)):
        config_from_dict(data, base_dir=tmp_path)
