"""numpy (OpenBLAS) as the kernel-quality reference for matmul workloads."""

import pytest

from costlab.workloads.numpy_reference import has_numpy_reference, numpy_latency_s


def test_only_single_blas_call_workloads_have_a_reference():
    assert has_numpy_reference("gemm", {"M": 64, "N": 64, "K": 64})
    assert has_numpy_reference("batch_matmul", {})
    assert not has_numpy_reference("gemm", {"dtype": "float16", "out_dtype": "float32"})
    assert not has_numpy_reference("softmax", {})


def test_latency_is_measured_and_grows_with_the_work():
    small = numpy_latency_s("gemm", {"M": 32, "N": 32, "K": 32}, min_total_s=0.05)
    large = numpy_latency_s("gemm", {"M": 256, "N": 256, "K": 256}, min_total_s=0.05)
    assert 0 < small < large  # 512x the flops


def test_no_reference_is_an_error():
    with pytest.raises(ValueError, match="softmax"):
        numpy_latency_s("softmax", {})
