import pandas as pd
import pytest

from costlab.data.pretraining_set import rows_by_family, select_pretraining_rows
from costlab.data.workload_info import FAMILIES, RELATED_FAMILIES
from costlab.errors import CostlabError

# workload key -> (family, records)
WORKLOADS = {"gemm-a": ("matmul", 4), "gemm-b": ("matmul", 3), "bmm": ("batch_matmul", 5),
             "swiglu": ("contraction", 2), "rmsnorm": ("norm", 6), "softmax": ("softmax", 4),
             "conv": ("conv2d", 3)}


def dataset(without=()):
    rows = [(key, family) for key, (family, n) in WORKLOADS.items() if key not in without for _ in range(n)]
    df = pd.DataFrame(rows, columns=["workload_key", "family"])
    df["workload_hash"] = df["workload_key"].map(lambda k: f"hash-{k}")
    df["row"] = range(100, 100 + len(df))  # row ids are not positions
    return df


def workloads_of(chosen, df):
    return sorted(set(df.loc[df["row"].isin(chosen.rows), "workload_key"]))


def test_every_other_workload_by_default_and_never_the_tuned_one():
    df = dataset()
    chosen = select_pretraining_rows(df, "gemm-a")
    assert len(chosen.rows) == len(df) - 4 and "gemm-a" not in chosen.workloads
    assert chosen.describe() == f"{len(df) - 4} rows of 6 workloads (every other workload)"
    by_hash = select_pretraining_rows(df, "not-its-key", workload_hash="hash-gemm-a")
    assert list(by_hash.rows) == list(chosen.rows)


def test_family_keeps_the_tuned_workloads_family_and_falls_back_to_every_other():
    df = dataset()
    assert workloads_of(select_pretraining_rows(df, "gemm-a", family=True), df) == ["gemm-b"]
    swiglu = select_pretraining_rows(df, "swiglu", family=True)  # no other contraction
    assert len(swiglu.workloads) == 6 and swiglu.chosen_by == "every other workload; none of family contraction"


def test_related_reaches_for_the_related_families_only_when_the_family_has_no_other():
    df = dataset()
    assert workloads_of(select_pretraining_rows(df, "gemm-a", family="related"), df) == ["gemm-b"]
    swiglu = select_pretraining_rows(df, "swiglu", family="related")
    assert workloads_of(swiglu, df) == ["bmm", "gemm-a", "gemm-b"]
    assert swiglu.chosen_by == "no other contraction; related families matmul, batch_matmul"
    assert workloads_of(select_pretraining_rows(df, "rmsnorm", family="related"), df) == ["softmax"]
    lone = dataset(without=("gemm-a", "gemm-b", "bmm", "swiglu"))
    conv = select_pretraining_rows(lone, "conv", family="related")  # no other conv of any kind
    assert workloads_of(conv, lone) == ["rmsnorm", "softmax"]
    assert conv.chosen_by == "every other workload; none of family conv2d or related"


def test_group_takes_the_family_and_the_related_families_together():
    df = dataset()
    gemm = select_pretraining_rows(df, "gemm-a", family="group")
    assert workloads_of(gemm, df) == ["bmm", "gemm-b", "swiglu"]
    assert gemm.chosen_by == "family matmul and related families batch_matmul, contraction"
    assert workloads_of(select_pretraining_rows(df, "softmax", family="group"), df) == ["rmsnorm"]
    lone = dataset(without=("gemm-a", "gemm-b", "bmm", "swiglu"))
    conv = select_pretraining_rows(lone, "conv", family="group")
    assert workloads_of(conv, lone) == ["rmsnorm", "softmax"]
    assert conv.chosen_by == "every other workload; none of family conv2d or related"
    pools = pd.DataFrame({"workload_key": ["maxpool", "avgpool", "gemm"], "family": ["pool", "pool", "matmul"],
                          "workload_hash": ["1", "2", "3"], "row": [0, 1, 2]})
    pool = select_pretraining_rows(pools, "maxpool", family="group")  # a family without related ones
    assert workloads_of(pool, pools) == ["avgpool"] and pool.chosen_by == "family pool"


def test_the_datasets_family_wins_and_the_given_one_serves_a_workload_it_lacks():
    df = dataset()
    rmsnorm = select_pretraining_rows(df, "rmsnorm", family=True, workload_family="matmul")  # the dataset says norm
    assert len(rmsnorm.workloads) == 6 and rmsnorm.chosen_by == "every other workload; none of family norm"
    absent = select_pretraining_rows(df, "layernorm", family="related", workload_family="norm")
    assert workloads_of(absent, df) == ["rmsnorm"]


def test_max_rows_caps_evenly_and_says_so():
    df = dataset()
    chosen = select_pretraining_rows(df, "swiglu", family="related", max_rows=6, seed=3)
    counts = df.loc[df["row"].isin(chosen.rows), "workload_key"].value_counts()
    assert len(chosen.rows) == 6 and set(counts) == {2}
    assert chosen.describe().endswith("; capped at 6)")
    assert list(select_pretraining_rows(df, "swiglu", family="related", max_rows=6, seed=3).rows) == list(chosen.rows)


def test_a_dataset_of_the_tuned_workload_alone_is_refused():
    with pytest.raises(CostlabError, match="no rows of another workload than gemm-a"):
        select_pretraining_rows(dataset(without=tuple(k for k in WORKLOADS if k != "gemm-a")), "gemm-a")


def test_keep_tuned_adds_the_tuned_workloads_own_rows_and_says_so():
    df = dataset()
    gemm = select_pretraining_rows(df, "gemm-a", family="related", keep_tuned=True)
    assert workloads_of(gemm, df) == ["gemm-a", "gemm-b"] and len(gemm.rows) == 4 + 3
    assert gemm.chosen_by == "family matmul, and the tuned workload's own 4 rows"
    everything = select_pretraining_rows(df, "not-its-key", workload_hash="hash-bmm", keep_tuned=True)
    assert len(everything.rows) == len(df) and "bmm" in everything.workloads
    alone = select_pretraining_rows(dataset(without=tuple(k for k in WORKLOADS if k != "gemm-a")), "gemm-a",
                                    family=True, keep_tuned=True)  # nothing else: its own rows only
    assert alone.describe() == "4 rows of 1 workload (the tuned workload's own rows)"
    capped = select_pretraining_rows(df, "rmsnorm", family="related", keep_tuned=True, max_rows=4, seed=1)
    counts = df.loc[df["row"].isin(capped.rows), "workload_key"].value_counts()
    assert dict(counts) == {"rmsnorm": 2, "softmax": 2}
    with pytest.raises(CostlabError, match=r"no rows of layernorm itself to keep \(pretrain_tuned\)"):
        select_pretraining_rows(df, "layernorm", keep_tuned=True)


def test_related_families_are_known_families_and_symmetric():
    for family, related in RELATED_FAMILIES.items():
        assert family in FAMILIES and family not in related
        for other in related:
            assert other in FAMILIES and family in RELATED_FAMILIES[other]


def test_rows_by_family_holds_every_other_workload_by_family_for_a_measured_choice():
    df = dataset()
    by_family = rows_by_family(df, "gemm-a")
    assert sorted(by_family) == ["batch_matmul", "contraction", "conv2d", "matmul", "norm", "softmax"]
    assert sorted(df.loc[df["row"].isin(by_family["matmul"]), "workload_key"].unique()) == ["gemm-b"]
    assert sum(len(rows) for rows in by_family.values()) == len(df) - 4
    assert "norm" not in rows_by_family(df, "not-its-key", workload_hash="hash-rmsnorm")  # the only norm
    with pytest.raises(CostlabError, match="no rows of another workload"):
        rows_by_family(dataset(without=[k for k in WORKLOADS if k != "bmm"]), "bmm")
    with pytest.raises(CostlabError, match="chooses its rows in the session"):
        select_pretraining_rows(df, "gemm-a", family="measured")


def test_max_rows_gives_a_workload_stored_under_two_keys_one_share():
    """The same workload read with and without costlab's sidecar has two keys and one hash;
    it got two shares of the cap."""
    df = dataset()
    df.loc[df["workload_key"] == "gemm-b", "workload_hash"] = "hash-gemm-a"  # gemm-b is gemm-a, keyed apart
    chosen = select_pretraining_rows(df, "softmax", max_rows=10, seed=0)
    picked = df.loc[df["row"].isin(chosen.rows)]
    per_hash = picked["workload_hash"].value_counts()
    assert len(chosen.rows) == 10 and per_hash["hash-gemm-a"] == 2 and set(per_hash) == {2}
