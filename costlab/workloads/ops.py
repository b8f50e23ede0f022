"""The built-in workloads, each defined in TE and returned as an IRModule with ``main``.

This module holds the dense linear-algebra and plain-reduction workloads and the
helpers the others share; :mod:`costlab.workloads.conv` holds convolutions and
:mod:`costlab.workloads.nn` the normalisation, activation and attention blocks.
All of them are registered when :mod:`costlab.workloads` is imported.

Notes for writing workloads that TVM 0.27's default schedule rules can handle:

- A TE reduction must be the whole body of its ``te.compute``; scale inside the sum
  (``te.sum(x * c, axis=k)``), not after it.
- On llvm, an elementwise epilogue of a matmul/conv whose reads all follow its write
  order is fused into that producer; if it also reads another computed block,
  design-space generation fails (``ReverseComputeAt``). Reads with a constant or
  shifted index (``T[0, i]``, ``T[i, n + N]``) in such an epilogue fail as well.
  See ``swiglu`` and ``attention`` in :mod:`costlab.workloads.nn` for layouts that work.
"""

from __future__ import annotations

import tvm
from tvm import te

from costlab.workloads._registry import register_workload


def _module(tensors) -> tvm.IRModule:
    """One PrimFunc ``main`` whose arguments are ``tensors`` (inputs first, output last)."""
    return tvm.IRModule({"main": te.create_prim_func(tensors)})


def _acc_dtype(dtype: str) -> str:
    """The dtype reductions accumulate in: float32 for half-precision inputs, else ``dtype``."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


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


@register_workload("batch_matmul")
def batch_matmul(
    B: int = 4, M: int = 64, N: int = 64, K: int = 64, dtype: str = "float32", out_dtype: str | None = None
):
    """C[b, M, N] = X[b, M, K] @ Y[b, K, N] for each of ``B`` batches, accumulated in ``out_dtype``.

    Inputs X: [B, M, K], Y: [B, K, N] (both ``dtype``); output C: [B, M, N] (``out_dtype``,
    default ``dtype``).
    """
    out_dtype = out_dtype or dtype
    X = te.placeholder((B, M, K), dtype, name="X")
    Y = te.placeholder((B, K, N), dtype, name="Y")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute(
        (B, M, N),
        lambda b, i, j: te.sum(X[b, i, k].astype(out_dtype) * Y[b, k, j].astype(out_dtype), axis=k),
        name="C",
    )
    return _module([X, Y, C])


@register_workload("reduce_sum")
def reduce_sum(M: int = 256, N: int = 256, dtype: str = "float32"):
    """Y[M] = sum_j X[M, N][:, j]: a row sum over the last axis.

    Input X: [M, N]; output Y: [M], both ``dtype`` (half precision accumulates in float32).
    """
    acc = _acc_dtype(dtype)
    X = te.placeholder((M, N), dtype, name="X")
    j = te.reduce_axis((0, N), name="j")
    S = te.compute((M,), lambda i: te.sum(X[i, j].astype(acc), axis=j), name="S")
    if acc == dtype:
        return _module([X, S])
    Y = te.compute((M,), lambda i: S[i].astype(dtype), name="Y")
    return _module([X, Y])
