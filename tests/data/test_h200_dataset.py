"""The committed H200 dataset: real CUDA measurements, used on a machine without a GPU.

``datasets/h200-llm-ops`` holds kernels measured on an NVIDIA H200 (sm_90); these tests
check that it is what its committed tuning databases say, and that its traces replay,
featurize and feed offline training and evaluation here, where no GPU exists.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from costlab.data.dataset import build_dataset, load_dataset, load_metadata
from costlab.data.offline import evaluate_model, train_model

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "datasets" / "h200-llm-ops"
DBS = ROOT / "experiments" / "results" / "llm-ops-cuda-h200" / "db"
GEMM = "gemm(M=4096,N=4096,K=4096,dtype=float16,out_dtype=float32)"


def _measured_dbs() -> list[Path]:
    """The committed work directories that hold records (two runs were stopped before measuring)."""
    return sorted(d for d in DBS.glob("*/*/seed0") if (d / "database_tuning_record.json").stat().st_size > 0)


def test_the_dataset_is_its_committed_databases(tmp_path):
    committed = load_dataset(DATASET)
    summary = build_dataset(_measured_dbs(), tmp_path / "rebuilt")
    rebuilt = load_dataset(tmp_path / "rebuilt")

    assert summary.n_rows == summary.n_ok == len(committed) == 96
    key = ["task_key", "trace"]
    a = committed.sort_values(key).reset_index(drop=True)
    b = rebuilt.sort_values(key).reset_index(drop=True)
    assert a["task_key"].tolist() == b["task_key"].tolist()
    assert a["trace"].tolist() == b["trace"].tolist()
    np.testing.assert_array_equal(a["latency_s"].to_numpy(), b["latency_s"].to_numpy())
    assert set(committed["target_kind"]) == {"cuda"}
    assert all('"arch":"sm_90"' in t for t in committed["target"])
    assert np.isfinite(committed["latency_s"]).all() and (committed["latency_s"] > 0).all()
    assert load_metadata(DATASET)["n_tasks"] == 3


def test_h200_records_featurize_and_train_without_a_gpu(tmp_path):
    dataset = tmp_path / "h200"  # a copy: the feature cache is written beside the dataset
    shutil.copytree(DATASET, dataset, ignore=shutil.ignore_patterns("features"))
    df = load_dataset(dataset)
    tasks = sorted(set(df["task_key"]))
    test_task = next(t for t in tasks if t.startswith(GEMM))
    train_rows = df.loc[df["task_key"] != test_task, "row"].to_numpy()
    test_rows = df.loc[df["task_key"] == test_task, "row"].to_numpy()

    trained = train_model(dataset, "lgbm", "analysis+trace", rows=train_rows, seed=0)
    result = evaluate_model(trained.model, dataset, rows=test_rows)

    # every H200 trace replays and featurizes here: no row lost on either side
    assert trained.n_rows_without_features == 0 and len(trained.rows) == 64 and trained.n_tasks == 2
    assert result.n_rows_without_features == 0 and len(result.rows) == 32
    assert np.isfinite(result.scores).all()
    m = result.metrics
    assert m.n_tasks == 1 and m.n_records == 32
    assert 0.0 < m.top_k[1] <= 1.0 and 0.0 <= m.pairwise_accuracy <= 1.0 and -1.0 <= m.kendall_tau <= 1.0
