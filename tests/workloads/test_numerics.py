"""Each built-in workload, compiled unscheduled for the CPU, matches a numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import Target

from costlab.workloads import WORKLOADS, build_workload


def _builtin_names() -> list[str]:
    return [n for n in WORKLOADS.names() if WORKLOADS.factory(n).__module__.startswith("costlab.workloads.")]


BUILTINS = _builtin_names()


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d_nchw_ref(x, w, stride, padding):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    p, q = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    y = np.zeros((n, k, p, q), dtype=np.float64)
    for ri in range(r):
        for si in range(s):
            patch = xp[:, :, ri : ri + stride * p : stride, si : si + stride * q : stride]  # n c p q
            y += np.einsum("ncpq,kc->nkpq", patch, w[:, :, ri, si])
    return y


# name -> (small params, reference(inputs, params) -> output)
CASES = {
    "gemm": (dict(M=16, N=24, K=8), lambda a, p: a[0] @ a[1]),
    "batch_matmul": (dict(B=2, M=8, N=12, K=6), lambda a, p: a[0] @ a[1]),
    "conv2d_nchw": (
        dict(N=1, C=3, H=9, W=7, K=4, R=3, S=3, stride=2, padding=1),
        lambda a, p: _conv2d_nchw_ref(a[0], a[1], p["stride"], p["padding"]),
    ),
    "conv2d_nhwc": (
        dict(N=2, C=3, H=7, W=8, K=5, R=3, S=2, stride=1, padding=1),
        # NHWC input, HWIO weight: go through the NCHW/OIHW reference.
        lambda a, p: _conv2d_nchw_ref(a[0].transpose(0, 3, 1, 2), a[1].transpose(3, 2, 0, 1), p["stride"], p["padding"])
        .transpose(0, 2, 3, 1),
    ),
    "rmsnorm": (
        dict(M=4, N=32, eps=1e-5),
        lambda a, p: a[0] / np.sqrt((a[0] ** 2).mean(-1, keepdims=True) + p["eps"]) * a[1],
    ),
    "layernorm": (
        dict(M=4, N=32, eps=1e-5),
        lambda a, p: (a[0] - a[0].mean(-1, keepdims=True)) / np.sqrt(a[0].var(-1, keepdims=True) + p["eps"]) * a[1]
        + a[2],
    ),
    "softmax": (dict(M=4, N=33), lambda a, p: _softmax(a[0])),
    "swiglu": (dict(M=8, N=16, K=12), lambda a, p: _silu(a[0] @ a[1]) * (a[0] @ a[2])),
    "swiglu_merged": (
        dict(M=8, N=16, K=12),
        lambda a, p: _silu(a[0] @ a[1][:, : p["N"]]) * (a[0] @ a[1][:, p["N"] :]),
    ),
    "attention": (
        dict(B=1, H=2, S=8, D=4),
        lambda a, p: _softmax(a[0] @ a[1].swapaxes(-1, -2) / np.sqrt(p["D"])) @ a[2],
    ),
    "reduce_sum": (dict(M=5, N=37), lambda a, p: a[0].sum(-1)),
}


def _run_cpu(mod: tvm.IRModule, inputs: list[np.ndarray]) -> np.ndarray:
    """Compile ``mod`` unscheduled for generic llvm, run ``main`` on ``inputs``, return the output."""
    lib = tvm.compile(mod, target=Target({"kind": "llvm"}))
    dev = tvm.cpu()
    out_buf = mod["main"].params[-1]
    out = tvm.runtime.tensor(np.zeros([int(d) for d in out_buf.shape], dtype=str(out_buf.dtype)), dev)
    lib["main"](*[tvm.runtime.tensor(x, dev) for x in inputs], out)
    return out.numpy()


def _random_inputs(mod: tvm.IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal([int(d) for d in p.shape]).astype(str(p.dtype)) for p in mod["main"].params[:-1]
    ]


def test_every_builtin_has_a_reference():
    assert sorted(CASES) == sorted(BUILTINS)


@pytest.mark.parametrize("name", BUILTINS)
def test_matches_numpy(name):
    params, ref = CASES[name]
    mod = build_workload(name, params)
    inputs = _random_inputs(mod)
    got = _run_cpu(mod, inputs)
    want = ref([x.astype(np.float64) for x in inputs], params)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gemm_fp16_in_fp32_out():
    mod = build_workload("gemm", dict(M=16, N=32, K=64, dtype="float16", out_dtype="float32"))
    assert str(mod["main"].params[-1].dtype) == "float32"
    inputs = _random_inputs(mod, seed=1)
    assert inputs[0].dtype == np.float16
    got = _run_cpu(mod, inputs)
    # The fp16 inputs are exact in fp64, and accumulation is in fp32.
    want = inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
