"""``costlab train --hold-out CONFIG``: pretraining for an experiment leaves its workloads out."""

from pathlib import Path

import yaml

from costlab.cli import _drop_workloads, _held_out_workloads
from costlab.data.dataset import load_dataset

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "datasets" / "cpu-v1"
SUITE = REPO / "experiments" / "cpu-suite.yaml"


def test_hold_out_drops_exactly_the_suites_workloads():
    keys = set(_held_out_workloads([SUITE]))
    assert "gemm(M=1024,N=1024,K=1024,dtype=float32)" in keys
    df = load_dataset(DATASET)
    kept, dropped = _drop_workloads(df, df["row"].to_numpy(), keys)
    kept_keys = set(df.set_index("row").loc[kept, "workload_key"])
    assert dropped > 0 and kept_keys and not kept_keys & keys
    assert len(kept) + dropped == len(df)
    assert len(kept) == int((~df["workload_key"].isin(keys)).sum())


def test_committed_warm_start_model_never_saw_the_suites_workloads():
    # lgbm-warm of the suite is pretrained on cpu-v1 with the suite's workloads held out
    info = yaml.safe_load((REPO / "experiments/pretrained/lgbm-cpu-v1/costlab-train.json").read_text())
    df = load_dataset(DATASET)
    kept, _ = _drop_workloads(df, df["row"].to_numpy(), set(_held_out_workloads([SUITE])))
    assert info["split"] == "none" and info["n_train"] == len(kept)


def test_hold_out_finds_a_workload_keyed_by_shapes_and_hash_too():
    """A database without costlab's sidecar keys a workload by its shapes and hash: --hold-out
    matches it by the structural hash of the config's workload."""
    df = load_dataset(DATASET)
    held = _held_out_workloads([SUITE])
    gemm = "gemm(M=1024,N=1024,K=1024,dtype=float32)"
    rekeyed = df.assign(workload_key=df["workload_key"].replace(gemm, "C[1024x1024,1024x1024]#h"))
    kept, dropped = _drop_workloads(rekeyed, rekeyed["row"].to_numpy(), set(held), held.values())
    assert dropped == len(df) - len(_drop_workloads(df, df["row"].to_numpy(), set(held))[0])
    assert not set(rekeyed.set_index("row").loc[kept, "workload_hash"].astype(str)) & set(held.values())
