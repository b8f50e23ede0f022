"""The PyCostModel adapter's own logic, with real costlab models and no tuning."""

from __future__ import annotations

import numpy as np
import pytest
from tvm.s_tir.meta_schedule.runner import RunnerResult

from costlab.errors import CostlabError
from costlab.features import Features, FeatureSchema
from costlab.models import get
from costlab.search.adapter import CostlabCostModel, latencies_s, online_pairwise_accuracy
from costlab.search.timing import PhaseTimer
from tests.bare_models import FitOnly

SCHEMA = FeatureSchema("synthetic", 1, ["x0", "x1"])
# named as a registered extractor, for a model pretrained on other features than its default
PER_STORE_SCHEMA = FeatureSchema("per_store", 1, ["x0", "x1"])


def batch(rng, n):
    x = rng.random((n, 2)).astype(np.float32)
    latency = 1e-3 * (1.0 + 4.0 * x[:, 0])  # latency grows with x0: a learnable ranking
    return Features(SCHEMA, dense=x), latency


def per_store_batch(rng, n):
    """``batch`` under a registered extractor's name, for a model the factory loads and extracts for."""
    features, latency = batch(rng, n)
    return Features(PER_STORE_SCHEMA, dense=features.dense), latency


def test_latencies_from_runner_results():
    results = [RunnerResult([1e-3, 3e-3], None), RunnerResult(None, "build failed"),
               RunnerResult([1e10], None), RunnerResult([2e-3], "timeout")]
    lat = latencies_s(results)
    assert lat[0] == pytest.approx(2e-3)
    assert np.isinf(lat[1:]).all()  # errors and MetaSchedule's 1e10 are failures


def test_online_pairwise_accuracy_hand_example():
    scores = np.array([3.0, 2.0, 1.0, 0.0])
    latency = np.array([1.0, 2.0, 4.0, 3.0])  # one of the 6 pairs is ordered wrong
    assert online_pairwise_accuracy(scores, latency) == pytest.approx(5 / 6)
    assert online_pairwise_accuracy(scores, np.array([1.0, np.inf, np.inf, np.inf])) is None
    # tied scores count one half, whatever the batch order (as the offline metric counts them)
    assert online_pairwise_accuracy(np.zeros(4), latency) == 0.5
    assert online_pairwise_accuracy(np.zeros(4), latency[::-1]) == 0.5


def test_online_accuracy_is_the_models_own_not_the_ucb_score():
    """With kappa, the search scores mean + kappa * spread; the online accuracy measures the model."""
    from costlab.search.adapter import CostlabCostModel as Adapter

    rng = np.random.default_rng(3)
    adapter = Adapter(get("ensemble")(seed=0, base="lgbm", n_members=3), None, "task", PhaseTimer(),
                      kappa=1e6, seed=0)  # a score that is all spread
    feats, lat = batch(rng, 48)
    adapter.add_samples(feats, lat)
    feats, lat = batch(rng, 48)
    mean = adapter.model.predict(feats)
    adapter.add_samples(feats, lat)
    assert adapter.online_accuracy[-1][1] == pytest.approx(online_pairwise_accuracy(mean, lat))


def test_adapter_validates_before_training_and_learns():
    rng = np.random.default_rng(0)
    adapter = CostlabCostModel(get("xgb")(seed=0), None, "task", PhaseTimer(), seed=0)
    for _ in range(4):
        feats, lat = batch(rng, 32)
        adapter.add_samples(feats, lat)
    assert adapter.fitted
    steps = [s for s, _ in adapter.online_accuracy]
    assert steps == [64, 96, 128]  # the first batch has no model to validate yet
    assert adapter.online_accuracy[-1][1] > 0.8
    feats, lat = batch(rng, 64)
    assert online_pairwise_accuracy(adapter.score(feats), lat) > 0.8


def test_failed_samples_never_rank_as_good():
    rng = np.random.default_rng(1)
    adapter = CostlabCostModel(get("lgbm")(seed=0), None, "task", PhaseTimer(), seed=0)
    feats, lat = batch(rng, 64)
    lat[feats.dense[:, 0] < 0.2] = np.inf  # the would-be fastest candidates failed
    adapter.add_samples(feats, lat)
    scores = adapter.score(feats)
    assert scores[np.isinf(lat)].max() < scores[np.isfinite(lat)].max()


def test_retrain_growth_policy_waits_for_more_data():
    rng = np.random.default_rng(2)
    adapter = CostlabCostModel(get("xgb")(seed=0), None, "task", PhaseTimer(), retrain_growth=1.0, seed=0)
    trained_at = []
    for _ in range(5):
        feats, lat = batch(rng, 16)
        adapter.add_samples(feats, lat)
        trained_at.append(adapter._trained_on)
    assert trained_at == [16, 32, 32, 64, 64]  # retrain once the data doubled


def test_frozen_pretrained_model_is_not_trained():
    rng = np.random.default_rng(3)
    model = get("xgb")(seed=0)
    feats, lat = batch(rng, 64)
    model.fit(feats, lat, np.array(["offline"] * 64))
    before = model.predict(feats)
    adapter = CostlabCostModel(model, None, "task", PhaseTimer(), frozen=True, pretrained=True)
    adapter.add_samples(*batch(rng, 32))
    assert np.array_equal(model.predict(feats), before)
    assert len(adapter.online_accuracy) == 1


def test_retraining_on_resumed_records_adds_no_online_accuracy_point():
    rng = np.random.default_rng(5)
    model = get("xgb")(seed=0)
    feats, lat = batch(rng, 64)
    model.fit(feats, lat, np.array(["offline"] * 64))
    adapter = CostlabCostModel(model, None, "task", PhaseTimer(), pretrained=True)
    adapter.online_accuracy = [(16, 0.75)]  # saved before the interruption
    adapter.record_accuracy = False
    adapter.add_samples(*batch(rng, 32))  # the old records, all at once
    adapter.record_accuracy = True
    adapter.add_samples(*batch(rng, 16))  # the first new batch
    assert [n for n, _ in adapter.online_accuracy] == [16, 48]


def test_warm_blend_spec_keeps_the_pretrained_model_and_trains_one_of_the_task(tmp_path):
    from costlab.config import CostModelSpec
    from costlab.models.warm_blend import WarmBlend
    from costlab.search.factory import make_search_cost_model

    rng = np.random.default_rng(4)
    feats, lat = per_store_batch(rng, 64)
    get("lgbm")(seed=0).fit(feats, lat, np.array(["offline"] * 64)).save(tmp_path / "pre")
    spec = CostModelSpec(name="lgbm", pretrained=str(tmp_path / "pre"), warm="blend", blend_samples=8)
    made = make_search_cost_model(spec, "task", PhaseTimer(), seed=0, num_tuning_cores=1)
    adapter = made.adapter
    assert isinstance(adapter.model, WarmBlend) and adapter.fitted
    assert adapter.extractor.name == "per_store"  # what the pretrained model was trained on, not lgbm's default
    adapter.add_samples(*per_store_batch(rng, 32))
    assert adapter.model.n_samples_ == 32 and adapter.model.online_weight == pytest.approx(0.8)


def test_a_pretrained_model_scores_the_features_it_was_trained_on_not_its_class_default(tmp_path):
    """lgbm trained offline with --features per_store, then named by ``pretrained`` without
    ``features``: the session extracts per_store features (it failed on a schema mismatch
    when it took lgbm's default, analysis+trace)."""
    from costlab.config import CostModelSpec
    from costlab.search.factory import make_search_cost_model

    feats, lat = per_store_batch(np.random.default_rng(5), 64)
    get("lgbm")(seed=0).fit(feats, lat, np.array(["offline"] * 64)).save(tmp_path / "pre")
    spec = CostModelSpec(name="lgbm", pretrained=str(tmp_path / "pre"))
    adapter = make_search_cost_model(spec, "task", PhaseTimer(), seed=0, num_tuning_cores=1).adapter
    assert adapter.extractor.name == "per_store" and get("lgbm").default_features == "analysis+trace"


def test_pretrain_on_trains_on_every_other_workload_of_the_dataset(tmp_path):
    """A leave-one-task-out warm start: the tuned workload's rows (by key or by structural hash) stay out."""
    from tvm.s_tir import meta_schedule as ms

    from costlab.config import CostModelSpec
    from costlab.data.dataset import build_dataset, load_dataset
    from costlab.search.factory import make_search_cost_model
    from costlab.workloads import build_workload, workload_key
    from tests.data.helpers import make_gemm_db

    make_gemm_db(tmp_path / "db", sizes=(32, 64), per_workload=6, failed=())  # no sidecar: keys are hashes
    build_dataset([tmp_path / "db"], tmp_path / "ds")
    df = load_dataset(tmp_path / "ds")
    spec = CostModelSpec(name="lgbm", pretrain_on=str(tmp_path / "ds"), features="analysis+trace")
    params = {"M": 32, "N": 32, "K": 32}
    shash = str(ms.database.Workload(build_workload("gemm", params)).as_json()[0])
    timer = PhaseTimer()
    made = make_search_cost_model(spec, workload_key("gemm", params), timer, seed=3, num_tuning_cores=1,
                                  workload_hash=shash)
    adapter = made.adapter
    assert adapter.fitted and adapter.model.seed == 3 and timer.seconds["pretrain_s"] > 0
    trained_on = adapter.model.data_.groups
    assert len(trained_on) == int((df["workload_hash"].astype(str) != shash).sum()) == 6
    assert set(trained_on) == set(df.loc[df["workload_hash"].astype(str) != shash, "task_key"])


def test_pretrain_tuned_trains_on_the_tuned_workloads_own_rows_too(tmp_path):
    """A transfer: the dataset's rows of the tuned workload (measured elsewhere) are kept."""
    from tvm.s_tir import meta_schedule as ms

    from costlab.config import CostModelSpec
    from costlab.data.dataset import build_dataset
    from costlab.search.factory import make_search_cost_model
    from costlab.workloads import build_workload, workload_key
    from tests.data.helpers import make_gemm_db

    make_gemm_db(tmp_path / "db", sizes=(32, 64), per_workload=6, failed=())
    build_dataset([tmp_path / "db"], tmp_path / "ds")
    params = {"M": 32, "N": 32, "K": 32}
    shash = str(ms.database.Workload(build_workload("gemm", params)).as_json()[0])
    spec = CostModelSpec(name="lgbm", pretrain_on=str(tmp_path / "ds"), pretrain_tuned=True, features="analysis+trace")
    made = make_search_cost_model(spec, workload_key("gemm", params), PhaseTimer(), seed=0, num_tuning_cores=1,
                                  workload_hash=shash)
    assert len(made.adapter.model.data_.groups) == 12 and len(set(made.adapter.model.data_.groups)) == 2
    assert made.pretraining == "12 rows of 2 workloads (every other workload, and the tuned workload's own 6 rows)"


def test_pretrain_rows_caps_the_pretraining_rows_evenly_over_the_other_workloads(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from costlab.config import CostModelSpec
    from costlab.data.dataset import build_dataset
    from costlab.search.factory import make_search_cost_model
    from costlab.workloads import build_workload, workload_key
    from tests.data.helpers import make_gemm_db

    make_gemm_db(tmp_path / "db", sizes=(32, 48, 64), per_workload=6, failed=())
    build_dataset([tmp_path / "db"], tmp_path / "ds")
    spec = CostModelSpec(name="lgbm", pretrain_on=str(tmp_path / "ds"), pretrain_rows=8, features="analysis+trace")
    params = {"M": 32, "N": 32, "K": 32}
    shash = str(ms.database.Workload(build_workload("gemm", params)).as_json()[0])
    made = make_search_cost_model(spec, workload_key("gemm", params), PhaseTimer(), seed=0, num_tuning_cores=1,
                                  workload_hash=shash)
    groups = list(made.adapter.model.data_.groups)
    assert len(groups) == 8 and len(set(groups)) == 2 and groups.count(groups[0]) == 4


def test_pretrain_family_keeps_the_tuned_workloads_family_or_else_every_other_workload(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from costlab.config import CostModelSpec
    from costlab.data.dataset import build_dataset, load_dataset
    from costlab.search.factory import make_search_cost_model
    from costlab.workloads import build_workload, workload_key

    from tests.data.helpers import make_gemm_db

    make_gemm_db(tmp_path / "db", sizes=(32, 48, 64), per_workload=6, failed=())
    build_dataset([tmp_path / "db"], tmp_path / "ds")
    shash = {n: str(ms.database.Workload(build_workload("gemm", {"M": n, "N": n, "K": n})).as_json()[0])
             for n in (32, 48, 64)}
    records = tmp_path / "ds" / "records.parquet"
    df = load_dataset(tmp_path / "ds")
    df.loc[df["workload_hash"].astype(str) == shash[64], "family"] = "softmax"  # another family for one of them
    df.to_parquet(records)
    spec = CostModelSpec(name="lgbm", pretrain_on=str(tmp_path / "ds"), pretrain_family=True, features="analysis+trace")

    def trained_on(family):
        made = make_search_cost_model(spec, workload_key("gemm", {"M": 32, "N": 32, "K": 32}), PhaseTimer(), seed=0,
                                      num_tuning_cores=1, workload_hash=shash[32], workload_family=family)
        return made.adapter.model.data_.groups

    assert len(trained_on(None)) == 6 and len(set(trained_on(None))) == 1  # gemm 48 only: the dataset's family
    df = df[df["workload_hash"].astype(str) != shash[32]]  # a dataset without the tuned workload
    df.to_parquet(records)
    assert len(trained_on("contraction")) == 6 and len(set(trained_on("contraction"))) == 1  # the family given
    assert len(trained_on("norm")) == 12 and len(set(trained_on("norm"))) == 2  # no other norm: both others


def test_an_empty_measured_batch_is_ignored(tmp_path):
    """MetaSchedule drops the candidates whose build failed and still calls update: with every
    build failed the batch is empty. A warm blend (whose online model is not fitted yet) used to
    fail there, fitting on no rows."""
    from costlab.config import CostModelSpec
    from costlab.features.sampling import make_context
    from costlab.search.factory import make_search_cost_model
    from costlab.workloads import build_workload

    rng = np.random.default_rng(6)
    feats, lat = per_store_batch(rng, 64)
    get("lgbm")(seed=0).fit(feats, lat, np.array(["offline"] * 64)).save(tmp_path / "pre")
    spec = CostModelSpec(name="lgbm", pretrained=str(tmp_path / "pre"), warm="blend", blend_samples=8)
    adapter = make_search_cost_model(spec, "task", PhaseTimer(), seed=0, num_tuning_cores=1).adapter
    before = adapter.score(feats)
    context = make_context(build_workload("gemm", {"M": 16, "N": 16, "K": 16}), "cpu")
    adapter.update(context, [], [])  # through MetaSchedule's own CostModelUpdate
    assert adapter.n_seen == 0 and adapter.model.n_samples_ == 0
    assert np.array_equal(adapter.score(feats), before)


def test_an_ensemble_without_features_takes_its_members_defaults(monkeypatch):
    """The README's ensemble example (no features:) crashed every session for a while: the class's
    default_features is a property, and a graph ensemble must get torch's one thread too."""
    import torch

    from costlab.config import CostModelSpec
    from costlab.search.factory import make_search_cost_model

    lgbm = CostModelSpec(name="ensemble", params={"base": "lgbm", "n_members": 2})
    made = make_search_cost_model(lgbm, "task", PhaseTimer(), seed=0, num_tuning_cores=1)
    assert made.adapter.extractor.name == "analysis+trace"
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    gnn = CostModelSpec(name="ensemble", params={"base": "gnn", "n_members": 2})
    made = make_search_cost_model(gnn, "task", PhaseTimer(), seed=0, num_tuning_cores=1)
    assert made.adapter.extractor.name == "graph" and threads and set(threads) == {1}




def test_a_model_predicting_the_wrong_shape_is_named_not_left_to_a_numpy_broadcast_error():
    class Column(FitOnly):  # a bare plug-in, without update(): its scores are all 0
        name = "column"

        def predict(self, features):
            return np.zeros((len(features), 1))

    feats, _ = batch(np.random.default_rng(0), 12)
    adapter = CostlabCostModel(Column(), None, "task", PhaseTimer(), pretrained=True, seed=0)
    with pytest.raises(CostlabError, match=r"cost model 'column' \(.*Column\) predicted an array of shape \(12, 1\) "
                                           r"for 12 candidates; predict must return one score per row, shape \(12,\)"):
        adapter.score(feats)


def test_a_model_without_update_says_so_by_name():
    """The default update raised a bare NotImplementedError, which TVM passed on as 'RuntimeError: '."""
    feats, lat = batch(np.random.default_rng(0), 8)
    with pytest.raises(CostlabError, match=r"cost model 'fit-only' \(tests.bare_models.FitOnly\) does not implement update\(\)"):
        FitOnly().update(feats, lat, np.array(["t"] * 8))
