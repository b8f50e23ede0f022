"""Built-in 2-D convolution workloads (NCHW/OIHW and NHWC/HWIO), defined in TE."""

from __future__ import annotations

from tvm import te

from costlab.workloads._registry import register_workload
from costlab.workloads.ops import _module


def _out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


@register_workload("conv2d_nchw")
def conv2d_nchw(
    N: int = 1,
    C: int = 32,
    H: int = 28,
    W: int = 28,
    K: int = 32,
    R: int = 3,
    S: int = 3,
    stride: int = 1,
    padding: int = 1,
    dtype: str = "float32",
    out_dtype: str | None = None,
):
    """Y[n, k, p, q] = sum_{c, r, s} Xpad[n, c, p*stride + r, q*stride + s] * Wt[k, c, r, s].

    Input X: [N, C, H, W] (NCHW); weight Wt: [K, C, R, S] (OIHW); output Y: [N, K, P, Q]
    with P = (H + 2*padding - R) // stride + 1 and Q likewise from W and S. ``padding`` is
    symmetric zero padding (a separate ``pad`` stage); accumulation is in ``out_dtype``
    (default ``dtype``).
    """
    out_dtype = out_dtype or dtype
    P, Q = _out_size(H, R, stride, padding), _out_size(W, S, stride, padding)
    X = te.placeholder((N, C, H, W), dtype, name="X")
    Wt = te.placeholder((K, C, R, S), dtype, name="Wt")
    Xp = te.compute(
        (N, C, H + 2 * padding, W + 2 * padding),
        lambda n, c, h, w: te.if_then_else(
            te.all(h >= padding, h < H + padding, w >= padding, w < W + padding),
            X[n, c, h - padding, w - padding],
            te.const(0, dtype),
        ),
        name="pad",
    )
    c = te.reduce_axis((0, C), name="c")
    r = te.reduce_axis((0, R), name="r")
    s = te.reduce_axis((0, S), name="s")
    Y = te.compute(
        (N, K, P, Q),
        lambda n, k, p, q: te.sum(
            Xp[n, c, p * stride + r, q * stride + s].astype(out_dtype) * Wt[k, c, r, s].astype(out_dtype),
            axis=[c, r, s],
        ),
        name="conv",
    )
    return _module([X, Wt, Y])


@register_workload("conv2d_nhwc")
def conv2d_nhwc(
    N: int = 1,
    C: int = 32,
    H: int = 28,
    W: int = 28,
    K: int = 32,
    R: int = 3,
    S: int = 3,
    stride: int = 1,
    padding: int = 1,
    dtype: str = "float32",
    out_dtype: str | None = None,
):
    """Y[n, p, q, k] = sum_{r, s, c} Xpad[n, p*stride + r, q*stride + s, c] * Wt[r, s, c, k].

    Input X: [N, H, W, C] (NHWC); weight Wt: [R, S, C, K] (**HWIO**, TVM's NHWC
    convention); output Y: [N, P, Q, K] with P = (H + 2*padding - R) // stride + 1 and Q
    likewise. ``padding`` is symmetric zero padding (a separate ``pad`` stage);
    accumulation is in ``out_dtype`` (default ``dtype``).
    """
    out_dtype = out_dtype or dtype
    P, Q = _out_size(H, R, stride, padding), _out_size(W, S, stride, padding)
    X = te.placeholder((N, H, W, C), dtype, name="X")
    Wt = te.placeholder((R, S, C, K), dtype, name="Wt")
    Xp = te.compute(
        (N, H + 2 * padding, W + 2 * padding, C),
        lambda n, h, w, c: te.if_then_else(
            te.all(h >= padding, h < H + padding, w >= padding, w < W + padding),
            X[n, h - padding, w - padding, c],
            te.const(0, dtype),
        ),
        name="pad",
    )
    r = te.reduce_axis((0, R), name="r")
    s = te.reduce_axis((0, S), name="s")
    c = te.reduce_axis((0, C), name="c")
    Y = te.compute(
        (N, P, Q, K),
        lambda n, p, q, k: te.sum(
            Xp[n, p * stride + r, q * stride + s, c].astype(out_dtype) * Wt[r, s, c, k].astype(out_dtype),
            axis=[r, s, c],
        ),
        name="conv",
    )
    return _module([X, Wt, Y])
