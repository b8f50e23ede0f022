"""The committed Intel VM datasets: ``cpu-intel-v2`` is ``cpu-intel-v1`` plus other shapes of each family.

``datasets/cpu-intel-v2`` exists so that a held-out warm start (``pretrain_family: related``) finds
other shapes of the tuned workload's own operator family measured on the tuning machine's VM type;
these tests check that it holds exactly that, and that the rows the warm start chooses are them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from costlab.data.dataset import build_dataset, load_dataset
from costlab.data.pretraining_set import select_pretraining_rows

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "datasets" / "cpu-intel-v1"
V2 = ROOT / "datasets" / "cpu-intel-v2"
SHAPES_DB = ROOT / "experiments" / "results" / "cpu-intel-shapes" / "db"
CPU_MIN5 = ("gemm(M=1024,N=1024,K=1024,dtype=float32)", "rmsnorm(M=64,N=4096,eps=1e-05,dtype=float32)",
            "batch_matmul(B=12,M=256,N=256,K=64,dtype=float32)", "swiglu(M=64,N=1024,K=1024,dtype=float32)",
            "conv2d_nchw(N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,padding=1,dtype=float32)",
            "softmax(M=256,N=4096,dtype=float32)")
KEY = ["task_key", "trace", "db", "line"]


def _sorted(df):
    return df.sort_values(KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def v1():
    return load_dataset(V1)


@pytest.fixture(scope="module")
def v2():
    return load_dataset(V2)


def test_v2_is_v1_plus_the_shapes_databases(v1, v2, tmp_path):
    from_shapes = v2["db"].str.startswith("experiments/results/cpu-intel-shapes/")
    old, new = _sorted(v2.loc[~from_shapes]), _sorted(v1)
    assert old[KEY].equals(new[KEY])
    np.testing.assert_array_equal(old["latency_s"].to_numpy(), new["latency_s"].to_numpy())

    dbs = sorted(d.parent for d in SHAPES_DB.glob("*/tvm-xgb/seed0/database_tuning_record.json"))
    assert len(dbs) == 12
    build_dataset(dbs, tmp_path / "shapes")
    rebuilt, committed = _sorted(load_dataset(tmp_path / "shapes")), _sorted(v2.loc[from_shapes])
    assert rebuilt["trace"].tolist() == committed["trace"].tolist()
    np.testing.assert_array_equal(rebuilt["latency_s"].to_numpy(), committed["latency_s"].to_numpy())
    assert set(committed["target"].map(lambda t: '"mcpu":"rocketlake"' in t.replace(" ", ""))) == {True}


def test_each_cpu_min5_workload_finds_two_other_shapes_of_its_family(v1, v2):
    for key in CPU_MIN5:
        family = v2.loc[v2["workload_key"] == key, "family"].iloc[0]
        chosen = select_pretraining_rows(v2, key, family="related")
        others = set(v2.loc[(v2["family"] == family) & (v2["workload_key"] != key), "workload_key"])
        assert set(chosen.workloads) == others and len(others) == 2, key
        assert key not in chosen.workloads and chosen.chosen_by == f"family {family}"
        # in cpu-intel-v1 the same choice had to fall back to other families
        assert select_pretraining_rows(v1, key, family="related").chosen_by != f"family {family}"
