"""A kernel-quality check: the same operator run by numpy (OpenBLAS matmul) on this machine.

A tuned kernel's latency means little alone; ``numpy_latency_s`` times numpy on the
same shapes and dtype, in the same process, so a report can say "the best tuned GEMM
runs at X% of OpenBLAS". Only workloads numpy computes with one BLAS call have one.
"""

from __future__ import annotations

import time

import numpy as np

from costlab.workloads._registry import workload_params

MATMUL_WORKLOADS = ("gemm", "batch_matmul")


def _matmul_inputs(params: dict) -> tuple[np.ndarray, np.ndarray]:
    """Random operands of the workload's shapes and dtype (batched when it has ``B``)."""
    rng = np.random.default_rng(0)
    dtype = np.dtype(params["dtype"])
    batch = (params["B"],) if "B" in params else ()
    a = rng.standard_normal((*batch, params["M"], params["K"])).astype(dtype)
    b = rng.standard_normal((*batch, params["K"], params["N"])).astype(dtype)
    return a, b


def has_numpy_reference(name: str, params: dict | None = None) -> bool:
    """True for workloads numpy runs as one BLAS call (fp32/fp64; numpy has no fp16 BLAS)."""
    if name not in MATMUL_WORKLOADS:
        return False
    full = workload_params(name, params)
    return full["dtype"] in ("float32", "float64") and full["out_dtype"] in (None, full["dtype"])


def numpy_latency_s(name: str, params: dict | None = None, min_total_s: float = 1.0) -> float:
    """Median seconds of ``np.matmul`` on the workload's shapes, over at least ``min_total_s``."""
    if not has_numpy_reference(name, params):
        raise ValueError(f"workload {name!r} with {params} has no numpy reference")
    a, b = _matmul_inputs(workload_params(name, params))
    out = np.matmul(a, b)  # warm-up: page faults, thread pool start
    times = []
    started = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - started < min_total_s:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
