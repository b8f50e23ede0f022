"""Every costlab model, and a third-party plug-in, tunes by name in a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow
TRIALS = 12


def test_costlab_models_and_plugin_in_tuning(tmp_path, example_plugin):
    models = ["xgb", "lgbm", "gnn", "example-linear"]
    config = tiny_config(tmp_path, name="models", models=models, trials=TRIALS,
                         search={"trials": TRIALS, "trials_per_iter": 6, "population_size": 32})
    run_cli("run", config, cwd=tmp_path, timeout=1200)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("models")
    children = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'child'")
    assert sorted(c.data.tags["costlab.model"] for c in children) == sorted(models)
    for child in children:
        name = child.data.tags["costlab.model"]
        assert child.info.status == "FINISHED", name
        assert child.data.metrics["n_trials"] == TRIALS, name
        assert child.data.metrics["cost_model_update_s"] > 0, name
        # the model was validated on the second batch before training on it
        acc = client.get_metric_history(child.info.run_id, "online_pairwise_acc")
        assert [m.step for m in acc] == [TRIALS], name
        assert 0.0 <= acc[0].value <= 1.0
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert "model" in artifacts, name  # the trained model directory


def tune_from_a_gemm_dataset(tmp_path, name: str, model: dict):
    """Tune the tiny GEMM with ``model`` pretrained on a dataset of it and another GEMM (8 records
    each); ``(client, child run, the dataset's family of both GEMMs)``, the run checked finished."""
    from costlab.data.dataset import build_dataset, load_dataset
    from tests.data.helpers import make_gemm_db

    make_gemm_db(tmp_path / "db", sizes=(32, 48), per_workload=8, failed=())
    build_dataset([tmp_path / "db"], tmp_path / "ds")
    config = tiny_config(tmp_path, name=name, trials=TRIALS, models=[{**model, "pretrain_on": str(tmp_path / "ds")}],
                         search={"trials": TRIALS, "trials_per_iter": 6, "population_size": 32})
    run_cli("run", config, cwd=tmp_path, timeout=600)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    (child,) = client.search_runs([client.get_experiment_by_name(name).experiment_id],
                                  filter_string="tags.`costlab.role` = 'child'")
    assert child.info.status == "FINISHED" and child.data.metrics["n_trials"] == TRIALS
    assert child.data.metrics["pretrain_s"] > 0
    return client, child, load_dataset(tmp_path / "ds")["family"].iloc[0]


def test_a_leave_one_task_out_warm_start_tunes_from_a_dataset(tmp_path):
    """pretrain_on: trained at session start on the dataset's other workloads, then fine-tuned online."""
    client, child, family = tune_from_a_gemm_dataset(tmp_path, "loto", {
        "name": "lgbm", "label": "lgbm-loto", "features": "analysis+trace", "pretrain_family": "related"})
    assert child.data.tags["costlab.pretraining"] == f"8 rows of 1 workload (family {family})"  # the other GEMM's
    # pretrained: scored before the first batch was measured, so both batches have an accuracy
    acc = client.get_metric_history(child.info.run_id, "online_pairwise_acc")
    assert [m.step for m in sorted(acc, key=lambda m: m.step)] == [6, 12]


def test_a_transfer_tunes_from_a_dataset_holding_the_tuned_workload(tmp_path):
    """pretrain_tuned: the dataset's rows of the tuned workload itself are trained on too (here
    found by structural hash: the dataset's database has no costlab sidecar)."""
    client, child, family = tune_from_a_gemm_dataset(tmp_path, "transfer", {
        "name": "lgbm", "label": "lgbm-transfer", "features": "analysis+trace", "pretrain_family": "related",
        "pretrain_tuned": True})
    assert child.data.tags["costlab.pretraining"] == (
        f"16 rows of 2 workloads (family {family}, and the tuned workload's own 8 rows)")


def test_a_measured_warm_start_decides_on_its_family_after_the_first_batch_in_tuning(tmp_path):
    """pretrain_family: measured: source models per family, scored on the first measured batch;
    the family is chosen, or none, as its recorded accuracy says (the accuracy depends on this
    machine's timings, so either outcome is the rule applied; the rule's own cases are unit tests)."""
    client, child, family = tune_from_a_gemm_dataset(tmp_path, "measured", {
        "name": "ensemble", "label": "measured", "params": {"base": "lgbm", "n_members": 2}, "kappa": 1.0,
        "features": "analysis+trace", "pretrain_family": "measured"})  # family: the one of the other GEMM
    choice = json.loads(Path(client.download_artifacts(child.info.run_id, "model/measured_choice.json",
                                                       str(tmp_path))).read_text())
    assert choice["probe_samples"] == 6 and choice["family_rows"] == {family: 8}
    accuracy = choice["pairwise_accuracy"][family]
    tag = child.data.tags["costlab.pretraining"]
    if accuracy > 0.5:  # what the session chose, as the tag says it
        assert choice["chosen_family"] == family
        assert tag == (f"8 rows of 1 workload (family {family}, the best pairwise accuracy on the first 6 "
                       f"measured: {family} {accuracy:.3f})")
    else:
        assert choice["chosen_family"] is None and tag.startswith("no family ranked the first 6 measured")
    acc = client.get_metric_history(child.info.run_id, "online_pairwise_acc")
    assert [m.step for m in sorted(acc, key=lambda m: m.step)] == [6, 12]  # the source models scored batch 1
