"""Offline train/evaluate/cross-validate on a small dataset, with toy and real models."""

import numpy as np
import pytest

from costlab.data.dataset import build_dataset, load_dataset
from costlab.data.offline import cross_validate, evaluate_model, train_model
from costlab.data.splits import holdout_split
from costlab.errors import CostlabError


@pytest.fixture
def toy_model():
    """A registered model that scores by a fixed column, to check the plumbing exactly."""
    from costlab.models import MODELS, CostModel

    class Column(CostModel):
        name = "_toy_column"
        default_features = "_toy_dense"

        def __init__(self, column: int = 1, sign: float = -1.0, seed: int = 0):
            self.column = column
            self.sign = sign
            self.seed = seed

        def fit(self, features, latency_s, groups):
            assert len(features) == len(latency_s) == len(groups)
            self.n_fit_ = len(latency_s)
            self.saw_inf_ = bool(np.isinf(latency_s).any())
            return self

        def predict(self, features):
            return self.sign * features.dense[:, self.column].astype(np.float64)

        def save(self, path):
            raise NotImplementedError

        @classmethod
        def load(cls, path):
            raise NotImplementedError

    MODELS.register(Column.name)(Column)
    yield Column
    MODELS._factories.pop(Column.name, None)


@pytest.fixture
def dataset(gemm_db, tmp_path):
    build_dataset([gemm_db.path], tmp_path / "ds")
    return tmp_path / "ds"


def test_train_and_evaluate(dataset, toy_extractors, toy_model):
    df = load_dataset(dataset)
    split = holdout_split(df["workload_key"], test_fraction=0.5, seed=0)
    res = train_model(dataset, "_toy_column", rows=split.train, params={"column": 0})
    assert res.features == "_toy_dense" and res.n_train == 6 and res.n_tasks == 1
    assert res.params == {"column": 0, "seed": 0} and res.model.n_fit_ == 6 and res.model.saw_inf_
    assert res.train_time_s >= 0
    ev = evaluate_model(res.model, dataset, "_toy_dense", rows=split.test)
    assert len(ev.rows) == 6 and ev.scores.shape == (6,)
    d = ev.as_dict()
    assert 0 < d["top1_score"] <= 1 and d["n_tasks"] == 1
    assert set(df.loc[ev.rows, "workload_key"]) == set(split.test_groups)


def test_cross_validate_leave_one_task_out(dataset, toy_extractors, toy_model):
    cv = cross_validate(dataset, "_toy_column", split="leave-one-task-out")
    assert len(cv.folds) == 2 and sorted(cv.rows.tolist()) == list(range(12))
    assert cv.metrics.n_tasks == 2 and cv.metrics.n_records == 12
    assert all(f["n_train"] == 6 and f["n_test"] == 6 for f in cv.folds)
    d = cv.as_dict()
    assert {"top1_score", "top5_score", "pairwise_accuracy", "kendall_tau", "train_time_s"} <= set(d)


def test_cross_validate_caps_the_training_rows(dataset, toy_extractors, toy_model):
    cv = cross_validate(dataset, "_toy_column", split="leave-one-task-out", max_train_rows=4)
    assert all(f["n_train"] == 4 and f["n_test"] == 6 for f in cv.folds)
    assert cv.metrics.n_records == 12  # the test side is never capped


def test_cross_validate_with_real_random_model(dataset):
    cv = cross_validate(dataset, "random", split="kfold", k=2, seed=3)
    assert cv.features == "none" and cv.params.get("seed") == 3
    assert 0 < cv.metrics.top1 <= cv.metrics.top5 <= 1
    assert cv.metrics.failed_pick_rate[1] in (0.0, 0.5, 1.0)
    assert cv.metrics.n_tasks == 2 and len(cv.rows) == 12


def test_unknown_model_lists_valid_names(dataset):
    with pytest.raises(CostlabError, match="valid names"):
        train_model(dataset, "no-such-model", "none")


def test_bad_params_fail_before_the_dataset_is_read(tmp_path):
    nowhere = tmp_path / "no-such-dataset"  # never opened: the params are checked first
    with pytest.raises(CostlabError, match=r"lgbm: unknown objective 'lamdarank'; valid: regression"):
        train_model(nowhere, "lgbm", "analysis", params={"objective": "lamdarank"})
    with pytest.raises(CostlabError, match=r"lgbm: unknown parameter 'leaves' \(value: 8\)"):
        cross_validate(nowhere, "lgbm", "analysis", split="leave-one-task-out", params={"leaves": 8})


def test_offline_benchmark_script(dataset, capsys, tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "experiments" / "offline_benchmark.py"
    spec = importlib.util.spec_from_file_location("offline_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out_json = tmp_path / "res.json"
    rc = bench.main(["--dataset", str(dataset), "--models", "random", "--split", "kfold", "--k", "2",
                     "--json", str(out_json)])
    assert rc == 0
    table = capsys.readouterr().out
    assert "| model | features | top-1 | top-5 | pairwise | Kendall τ | fail@1 | train s | tasks |" in table
    assert "| random | none |" in table
    assert out_json.is_file()


@pytest.mark.parametrize("model_name", ["lgbm", "xgb"])
def test_cross_validate_with_real_learned_models(dataset, toy_extractors, model_name):
    from costlab import models

    # lgbm and xgb are hard dependencies: a missing registration is a failure, not a skip
    assert model_name in models.available(), (model_name, models.available(), models.MODELS.load_failures())
    cv = cross_validate(dataset, model_name, "_toy_dense", split="leave-one-task-out", seed=1)
    assert cv.scores.shape == (12,) and np.isfinite(cv.scores).all()
    assert cv.metrics.n_tasks == 2 and cv.train_time_s > 0


def test_repeated_traces_merge_into_one_row_of_their_mean_success():
    """One schedule measured three times (one failed) and one twice: a model that knows each trace's
    true latency ranks them perfectly only once the repeats are merged."""
    from costlab.data.metrics import ranking_metrics
    from costlab.data.offline import merge_repeated_traces

    inf = np.inf
    latency = np.array([1.0, 0.8, inf, 1.1, 1.3, 2.0, 2.0])
    groups = np.array(["t"] * 5 + ["u"] * 2, dtype=object)
    traces = np.array(["a", "a", "a", "b", "b", "a", "c"], dtype=object)  # "a" of task u is another row
    scores = np.array([-0.9, -0.9, -0.9, -1.2, -1.2, 5.0, 1.0])  # minus each trace's mean latency, in t
    lat, sc, grp = merge_repeated_traces(latency, scores, groups, traces)
    assert lat.tolist() == pytest.approx([0.9, 1.2, 2.0, 2.0]) and grp.tolist() == ["t", "t", "u", "u"]
    assert sc.tolist() == pytest.approx([-0.9, -1.2, 5.0, 1.0])
    per_row = ranking_metrics(latency[:5], scores[:5], groups[:5], ks=(1,))
    merged = ranking_metrics(lat[:2], sc[:2], grp[:2], ks=(1,))
    # the best row, 0.8, is a lucky timing of "a": picking "a" picks one of its rows, 0.9 on average
    assert per_row.top_k[1] == pytest.approx(0.8 / 0.9)
    assert merged.top_k[1] == 1.0 and merged.pairwise_accuracy == 1.0
    all_failed = merge_repeated_traces(np.array([inf, inf]), np.zeros(2), np.array(["t", "t"]), np.array(["a", "a"]))
    assert np.isinf(all_failed[0]).all() and len(all_failed[0]) == 1
