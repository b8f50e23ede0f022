"""The built-in workloads, each defined in TE and returned as an IRModule with ``main``."""

from __future__ import annotations

import tvm
from tvm import te

from costlab.workloads._registry import register_workload


def _module(tensors) -> tvm.IRModule:
    return tvm.IRModule({"main": te.create_prim_func(tensors)})


@register_workload("gemm")
def gemm(M: int = 128, N: int = 128, K: int = 128, dtype: str = "float32", out_dtype: str | None = None):
    """C[M, N] = A[M, K] @ B[K, N], accumulated in ``out_dtype`` (default: ``dtype``)."""
    out_dtype = out_dtype or dtype
    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute(
        (M, N), lambda i, j: te.sum(A[i, k].astype(out_dtype) * B[k, j].astype(out_dtype), axis=k), name="C"
    )
    return _module([A, B, C])
