"""Operator families of the registry's workloads, as a dataset built from costlab's databases names them."""

import pytest

from costlab.data.workload_info import describe_workload, guess_family
from costlab.workloads import build_workload


@pytest.mark.parametrize(("name", "family"), [
    ("gemm", "matmul"), ("batch_matmul", "batch_matmul"), ("conv2d_nchw", "conv2d"), ("conv2d_nhwc", "conv2d"),
    ("softmax", "softmax"), ("rmsnorm", "norm"), ("layernorm", "norm"), ("swiglu", "contraction"),
    ("reduce_sum", "reduction"),
])
def test_registry_workloads_get_their_family_from_the_sidecar_name(name, family):
    assert describe_workload("0", build_workload(name, {}), {"workload_name": name}).family == family


@pytest.mark.parametrize("name", ["rms_norm", "RMSNorm", "layer_norm", "LayerNorm", "group_norm", "batchnorm"])
def test_norm_names_with_or_without_the_underscore(name):
    assert guess_family([name]) == ("norm", name)


def test_target_summary_tells_core_counts_and_archs_apart():
    from costlab.data.workload_info import target_summary

    two = {"kind": "llvm", "mcpu": "znver4", "num-cores": 2}
    assert target_summary(two) == "llvm znver4 2 cores"
    assert target_summary({**two, "num-cores": 16}) != target_summary(two)  # two tasks, not one
    without_avx512 = {**two, "mattr": ["-avx512f", "+fma"]}
    assert target_summary(without_avx512) == "llvm znver4 -avx512f,+fma 2 cores"  # two tasks, not one
    # LLVM applies them in order, with the features each implies: these two differ
    assert target_summary({**two, "mattr": ["+avx512f", "-avx2"]}) != target_summary({**two, "mattr": ["-avx2", "+avx512f"]})
    assert target_summary({**two, "mattr": []}) == target_summary(two)
    assert target_summary({"kind": "cuda", "arch": "sm_80"}) == "cuda sm_80"
    assert target_summary({"kind": "llvm", "num-cores": 1}) == "llvm 1 core"
    assert target_summary({"kind": "llvm"}) == "llvm"
    assert target_summary(None) == "none"


@pytest.mark.parametrize(("name", "family"), [
    ("rmsnorm", "norm"), ("layernorm", "norm"), ("gemm", "contraction"), ("batch_matmul", "contraction"),
    ("swiglu", "contraction"), ("softmax", "reduction"), ("reduce_sum", "reduction"), ("conv2d_nchw", "conv2d"),
])
def test_a_database_without_a_sidecar_gets_the_family_from_the_structure(name, family):
    """Read from a database without costlab's sidecar, RMSNorm (blocks 'sumsq' and 'Y') was a
    contraction, grouped with the matmuls for a warm start: a sum of squares now makes a norm."""
    assert describe_workload("0", build_workload(name, {}), None).family == family
