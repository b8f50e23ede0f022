"""Splits keep every workload on one side."""

import numpy as np
import pandas as pd
import pytest

from costlab.data.splits import (
    balanced_subsample,
    holdout_split,
    kfold_by_workload,
    leave_one_family_out,
    leave_one_task_out,
    make_splits,
    same_workload,
)
from costlab.errors import CostlabError

WORKLOADS = np.array(["w%d" % (i % 10) for i in range(100)])  # 10 workloads, 10 records each
FAMILIES = np.array(["conv" if int(w[1:]) < 4 else "matmul" if int(w[1:]) < 8 else "pool" for w in WORKLOADS])


def _sides(split):
    return set(WORKLOADS[split.train]), set(WORKLOADS[split.test])


def test_holdout_keeps_workloads_whole():
    split = holdout_split(WORKLOADS, test_fraction=0.3, seed=1)
    train, test = _sides(split)
    assert len(test) == 3 and not train & test and len(train | test) == 10
    assert len(split.train) + len(split.test) == 100
    assert split.test_groups == tuple(sorted(test))
    again = holdout_split(WORKLOADS, test_fraction=0.3, seed=1)
    np.testing.assert_array_equal(split.test, again.test)
    others = {tuple(holdout_split(WORKLOADS, 0.3, seed=s).test_groups) for s in range(5)}
    assert len(others) > 1
    train_mask, test_mask = split.masks(100)
    assert (train_mask ^ test_mask).all()


def test_holdout_limits():
    assert len(holdout_split(["a", "a", "b"], test_fraction=0.01).test_groups) == 1
    assert len(holdout_split(["a", "b"], test_fraction=0.99).test_groups) == 1
    with pytest.raises(CostlabError, match="at least 2 workloads"):
        holdout_split(["a", "a"])
    with pytest.raises(CostlabError, match="test_fraction"):
        holdout_split(WORKLOADS, test_fraction=1.5)


def test_kfold_tests_each_workload_once():
    folds = kfold_by_workload(WORKLOADS, k=3, seed=0)
    tested = [w for f in folds for w in f.test_groups]
    assert sorted(tested) == sorted(set(WORKLOADS))
    for f in folds:
        train, test = _sides(f)
        assert not train & test
    with pytest.raises(CostlabError, match="k-fold"):
        kfold_by_workload(WORKLOADS, k=11)


def test_leave_one_family_out():
    splits = leave_one_family_out(WORKLOADS, FAMILIES)
    assert [s.test_groups for s in splits] == [("conv",), ("matmul",), ("pool",)]
    for s in splits:
        assert set(FAMILIES[s.test]) == set(s.test_groups)
        assert s.test_groups[0] not in set(FAMILIES[s.train])
    bad = FAMILIES.copy()
    bad[0] = "pool"  # w0 now has two families
    with pytest.raises(CostlabError, match="two families"):
        leave_one_family_out(WORKLOADS, bad)


def test_leave_one_task_out():
    splits = leave_one_task_out(WORKLOADS)
    assert len(splits) == 10
    for s in splits:
        assert set(WORKLOADS[s.test]) == set(s.test_groups) and len(s.test) == 10
        assert len(s.train) == 90


def test_leave_one_task_out_keeps_the_workload_on_other_targets_out_of_training():
    tasks = ["gemm @ sm_80", "gemm @ sm_90", "conv @ sm_80", "conv @ sm_80"]
    workloads = ["gemm", "gemm", "conv", "conv"]
    gemm80, gemm90, conv80 = (dict((s.name, s) for s in leave_one_task_out(tasks, workloads))[f"task {t}"]
                              for t in ("gemm @ sm_80", "gemm @ sm_90", "conv @ sm_80"))
    assert (gemm80.test.tolist(), gemm80.train.tolist()) == ([0], [2, 3])  # not record 1, gemm on sm_90
    assert (gemm90.test.tolist(), gemm90.train.tolist()) == ([1], [2, 3])
    assert (conv80.test.tolist(), conv80.train.tolist()) == ([2, 3], [0, 1])


def test_make_splits_on_dataframe():
    df = pd.DataFrame({"workload_key": WORKLOADS, "workload_hash": WORKLOADS, "task_key": [w + " @ llvm" for w in WORKLOADS],
                       "family": FAMILIES})
    assert len(make_splits(df, "leave-one-task-out")) == 10
    assert len(make_splits(df, "kfold", k=2)) == 2
    assert len(make_splits(df, "holdout")) == 1
    assert len(make_splits(df, "leave-one-family-out")) == 3
    with pytest.raises(CostlabError, match="valid splits: holdout"):
        make_splits(df, "random")


def test_balanced_subsample_spreads_over_groups_and_gives_small_groups_whole():
    labels = ["a"] * 50 + ["b"] * 30 + ["c"] * 4
    picked = balanced_subsample(labels, 40, seed=1)
    counts = {g: sum(labels[i] == g for i in picked) for g in "abc"}
    assert counts == {"a": 18, "b": 18, "c": 4}  # c gives its 4; a and b share the other 36
    assert np.all(np.diff(picked) > 0)
    assert np.array_equal(picked, balanced_subsample(labels, 40, seed=1))
    assert not np.array_equal(picked, balanced_subsample(labels, 40, seed=2))
    assert np.array_equal(balanced_subsample(labels, 1000), np.arange(len(labels)))  # more than there are: all


def test_balanced_subsample_rejects_no_rows():
    with pytest.raises(CostlabError, match="subsample to 0"):
        balanced_subsample(["a", "b"], 0)


def test_a_workload_under_two_keys_is_one_workload():
    """Read from a database with costlab's sidecar (keyed by name) and from one without (by shapes
    and hash), one workload has two keys and one hash: it must land on one side of every split."""
    keys = ["gemm(M=256)", "C[256x256]#h1", "gemm(M=256)", "softmax(M=8)", "S[8]#h2", "relu(N=4)", "add(N=2)"]
    hashes = ["h1", "h1", "h1", "h2", "h2", "h3", "h4"]
    assert same_workload(keys, hashes).tolist() == [
        "C[256x256]#h1", "C[256x256]#h1", "C[256x256]#h1", "S[8]#h2", "S[8]#h2", "relu(N=4)", "add(N=2)"]
    df = pd.DataFrame({"workload_key": keys, "workload_hash": hashes, "task_key": [f"{k} @ cpu" for k in keys],
                       "family": ["matmul", "matmul", "matmul", "norm", "norm", "elementwise", "elementwise"]})
    groups = same_workload(keys, hashes)
    for kind in ("holdout", "kfold", "leave-one-task-out"):
        for split in make_splits(df, kind, k=2):
            assert not set(groups[split.train]) & set(groups[split.test]), (kind, split.name)
    # a missing hash joins nothing
    assert same_workload(["a", "b", "c"], [None, None, "x"]).tolist() == ["a", "b", "c"]
    assert same_workload(["a", "b"], ["", ""]).tolist() == ["a", "b"]
    with pytest.raises(CostlabError, match="has records of two families"):  # the labels disagree too
        make_splits(df.assign(family=["matmul", "contraction", "matmul", "norm", "norm", "e", "e"]),
                    "leave-one-family-out")


def test_balanced_subsample_with_fewer_records_than_groups_draws_the_groups_by_seed():
    """It took one record from each of the largest groups (then the alphabetically last),
    whatever the seed."""
    labels = np.repeat([f"w{g}" for g in range(10)], [5 + g for g in range(10)])
    chosen = set()
    for seed in range(8):
        picked = balanced_subsample(labels, 3, seed=seed)
        groups = labels[picked]
        assert len(picked) == 3 and len(set(groups)) == 3  # one record from each of three groups
        assert np.array_equal(picked, balanced_subsample(labels, 3, seed=seed))
        chosen |= set(groups)
    assert len(chosen) > 3
