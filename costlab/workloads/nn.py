"""Built-in neural-network blocks: normalisations, softmax, SwiGLU and attention, in TE.

Reductions and the arithmetic around them run in float32 when ``dtype`` is half
precision (see :func:`costlab.workloads.ops._acc_dtype`); outputs are ``dtype``.
"""

from __future__ import annotations

import math

from tvm import te

from costlab.errors import CostlabError
from costlab.workloads._registry import register_workload
from costlab.workloads.ops import _acc_dtype, _module


def _float_acc(name: str, dtype: str) -> str:
    """The accumulation dtype of a block whose maths (sqrt, exp, sigmoid, division) needs a
    floating-point ``dtype``: an integer one built, and then every trial failed to compile."""
    if not dtype.startswith(("float", "bfloat")):
        raise CostlabError(f"workload {name!r}: parameter 'dtype' must be a floating-point type such as float32, "
                           f"float16 or bfloat16 (value {dtype!r}): its maths (sqrt, exp, division) has no integer form")
    return _acc_dtype(dtype)


@register_workload("rmsnorm")
def rmsnorm(M: int = 128, N: int = 256, eps: float = 1e-5, dtype: str = "float32"):
    """Y[i, j] = X[i, j] / sqrt(mean_j(X[i, :]^2) + eps) * weight[j].

    Inputs X: [M, N], weight: [N]; output Y: [M, N]; normalised over the last axis.
    """
    acc = _float_acc("rmsnorm", dtype)
    X = te.placeholder((M, N), dtype, name="X")
    Wt = te.placeholder((N,), dtype, name="weight")
    j = te.reduce_axis((0, N), name="j")
    sq = te.compute((M,), lambda i: te.sum(X[i, j].astype(acc) * X[i, j].astype(acc), axis=j), name="sumsq")
    Y = te.compute(
        (M, N),
        lambda i, n: (
            X[i, n].astype(acc) * te.rsqrt(sq[i] / te.const(N, acc) + te.const(eps, acc)) * Wt[n].astype(acc)
        ).astype(dtype),
        name="Y",
    )
    return _module([X, Wt, Y])


@register_workload("layernorm")
def layernorm(M: int = 128, N: int = 256, eps: float = 1e-5, dtype: str = "float32"):
    """Y[i, j] = (X[i, j] - mean_i) / sqrt(var_i + eps) * gamma[j] + beta[j].

    mean_i and the biased variance var_i are over the last axis (two passes). Inputs
    X: [M, N], gamma: [N], beta: [N]; output Y: [M, N].
    """
    acc = _float_acc("layernorm", dtype)
    X = te.placeholder((M, N), dtype, name="X")
    gamma = te.placeholder((N,), dtype, name="gamma")
    beta = te.placeholder((N,), dtype, name="beta")
    j1 = te.reduce_axis((0, N), name="j1")
    j2 = te.reduce_axis((0, N), name="j2")
    n_inv = te.const(1.0 / N, acc)
    mean = te.compute((M,), lambda i: te.sum(X[i, j1].astype(acc) * n_inv, axis=j1), name="mean")
    var = te.compute(
        (M,),
        lambda i: te.sum((X[i, j2].astype(acc) - mean[i]) * (X[i, j2].astype(acc) - mean[i]) * n_inv, axis=j2),
        name="var",
    )
    Y = te.compute(
        (M, N),
        lambda i, n: (
            (X[i, n].astype(acc) - mean[i]) * te.rsqrt(var[i] + te.const(eps, acc)) * gamma[n].astype(acc)
            + beta[n].astype(acc)
        ).astype(dtype),
        name="Y",
    )
    return _module([X, gamma, beta, Y])


@register_workload("softmax")
def softmax(M: int = 128, N: int = 256, dtype: str = "float32"):
    """Y[i, j] = exp(X[i, j] - max_i) / sum_k exp(X[i, k] - max_i), over the last axis.

    Numerically stable (row maximum subtracted). Input X: [M, N]; output Y: [M, N].
    """
    acc = _float_acc("softmax", dtype)
    X = te.placeholder((M, N), dtype, name="X")
    j1 = te.reduce_axis((0, N), name="j1")
    j2 = te.reduce_axis((0, N), name="j2")
    mx = te.compute((M,), lambda i: te.max(X[i, j1].astype(acc), axis=j1), name="row_max")
    ex = te.compute((M, N), lambda i, n: te.exp(X[i, n].astype(acc) - mx[i]), name="exp")
    sm = te.compute((M,), lambda i: te.sum(ex[i, j2], axis=j2), name="row_sum")
    Y = te.compute((M, N), lambda i, n: (ex[i, n] / sm[i]).astype(dtype), name="Y")
    return _module([X, Y])


@register_workload("swiglu")
def swiglu(M: int = 64, N: int = 128, K: int = 128, dtype: str = "float32"):
    """Y = silu(X @ Wg) * (X @ Wu), with silu(g) = g * sigmoid(g).

    Inputs X: [M, K], Wg: [K, N], Wu: [K, N]; output Y: [M, N]. The two matmuls and
    the epilogue are stages of one PrimFunc: ``gate_t`` [N, M] = (X @ Wg)ᵀ, ``up``
    [M, N] = X @ Wu, then Y[i, n] = silu(gate_t[n, i]) * up[i, n].

    The gate product is kept transposed on purpose: in TVM 0.27 the llvm
    MultiLevelTiling rule fuses an epilogue whose reads all follow its write order
    into the producing matmul (``ReverseComputeAt``), which fails when the epilogue
    also reads a second computed block. The transposed read keeps the epilogue a
    separate block, so design-space generation works on llvm and CUDA.
    """
    acc = _float_acc("swiglu", dtype)
    X = te.placeholder((M, K), dtype, name="X")
    Wg = te.placeholder((K, N), dtype, name="Wg")
    Wu = te.placeholder((K, N), dtype, name="Wu")
    k1 = te.reduce_axis((0, K), name="k1")
    k2 = te.reduce_axis((0, K), name="k2")
    gate_t = te.compute(
        (N, M), lambda n, i: te.sum(X[i, k1].astype(acc) * Wg[k1, n].astype(acc), axis=k1), name="gate_t"
    )
    up = te.compute((M, N), lambda i, n: te.sum(X[i, k2].astype(acc) * Wu[k2, n].astype(acc), axis=k2), name="up")
    Y = te.compute(
        (M, N), lambda i, n: (gate_t[n, i] * te.sigmoid(gate_t[n, i]) * up[i, n]).astype(dtype), name="Y"
    )
    return _module([X, Wg, Wu, Y])


@register_workload("swiglu_merged")
def swiglu_merged(M: int = 64, N: int = 128, K: int = 128, dtype: str = "float32"):
    """SwiGLU with the gate and up projections in one weight, as LLM runtimes store them.

    Inputs X: [M, K], W: [K, 2N] (columns ``[0, N)`` the gate's, ``[N, 2N)`` the up
    projection's); output Y: [M, N]. One matmul ``gate_up_t`` [2N, M] = (X @ W)ᵀ, then
    Y[i, n] = silu(gate_up_t[n, i]) * gate_up_t[N + n, i]; equal to :func:`swiglu` with
    W = [Wg | Wu].

    This is the form to tune on CUDA with fp16: in TVM 0.27 the two matmuls of
    :func:`swiglu` both read X, and tensorizing both names two blocks
    ``X_reindex_shared.dyn_wmma.matrix_a_o``, so no schedule of its design space passes
    the postprocessors and the search finds no candidate. This one's single matmul takes
    tensor cores as a GEMM does. The product is kept transposed for the reason
    :func:`swiglu` gives: with ``gate_up[i, n]`` the llvm rules fuse the epilogue into
    the matmul and design-space generation fails.
    """
    acc = _float_acc("swiglu_merged", dtype)
    X = te.placeholder((M, K), dtype, name="X")
    W = te.placeholder((K, 2 * N), dtype, name="W")
    k = te.reduce_axis((0, K), name="k")
    gate_up_t = te.compute(
        (2 * N, M), lambda n, i: te.sum(X[i, k].astype(acc) * W[k, n].astype(acc), axis=k), name="gate_up_t"
    )
    Y = te.compute(
        (M, N),
        lambda i, n: (gate_up_t[n, i] * te.sigmoid(gate_up_t[n, i]) * gate_up_t[N + n, i]).astype(dtype),
        name="Y",
    )
    return _module([X, W, Y])


@register_workload("attention")
def attention(B: int = 1, H: int = 4, S: int = 64, D: int = 64, dtype: str = "float32"):
    """O = softmax(Q Kᵀ / sqrt(D)) V per batch and head, softmax over the keys.

    Inputs Q, K, V: [B, H, S, D]; output O: [B, H, S, D]. No masking. Stages:
    ``scores`` [B, H, S, S] = Q Kᵀ / sqrt(D); ``row_max`` [B, H, S]; ``exp`` =
    exp(scores - row_max); ``row_sum_t`` [S, B, H] = sum_j exp; ``pv`` [B, H, S, D] =
    exp · V; O[b, h, i, d] = pv[b, h, i, d] / row_sum_t[i, b, h].

    The layout of the row sums and the late normalisation are chosen for TVM 0.27's
    default schedule rules: normalising before ·V (a ``prob`` stage inlined into the
    ·V matmul) crashes CUDA design-space generation (CrossThreadReduction), and an
    epilogue whose reads all follow its write order is fused into ``pv`` on llvm,
    where ``ReverseComputeAt`` then fails on the second producer.
    """
    acc = _float_acc("attention", dtype)
    Q = te.placeholder((B, H, S, D), dtype, name="Q")
    Kt = te.placeholder((B, H, S, D), dtype, name="K")
    V = te.placeholder((B, H, S, D), dtype, name="V")
    scale = te.const(1.0 / math.sqrt(D), acc)
    d = te.reduce_axis((0, D), name="d")
    scores = te.compute(
        (B, H, S, S),
        lambda b, h, i, j: te.sum(Q[b, h, i, d].astype(acc) * Kt[b, h, j, d].astype(acc) * scale, axis=d),
        name="scores",
    )
    j1 = te.reduce_axis((0, S), name="j1")
    j2 = te.reduce_axis((0, S), name="j2")
    j3 = te.reduce_axis((0, S), name="j3")
    mx = te.compute((B, H, S), lambda b, h, i: te.max(scores[b, h, i, j1], axis=j1), name="row_max")
    ex = te.compute((B, H, S, S), lambda b, h, i, j: te.exp(scores[b, h, i, j] - mx[b, h, i]), name="exp")
    sm_t = te.compute((S, B, H), lambda i, b, h: te.sum(ex[b, h, i, j2], axis=j2), name="row_sum_t")
    pv = te.compute(
        (B, H, S, D), lambda b, h, i, e: te.sum(ex[b, h, i, j3] * V[b, h, j3, e].astype(acc), axis=j3), name="pv"
    )
    O = te.compute((B, H, S, D), lambda b, h, i, e: (pv[b, h, i, e] / sm_t[i, b, h]).astype(dtype), name="O")
    return _module([Q, Kt, V, O])
