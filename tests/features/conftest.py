"""Fixtures of tests/features: sampled and hand-built candidates of small GEMMs (CPU and CUDA).

Sampling is cached per (workload, target, n, seed) for the whole session: the
candidates are postprocessed exactly like MetaSchedule's (VerifyGPUCode on CUDA),
and CUDA needs no GPU for this.
"""

from __future__ import annotations

import functools

import pytest

from costlab.features.sampling import make_candidate, make_context, sample_candidates
from costlab.workloads import build_workload

TARGETS = ["cpu", "h100"]
GEMM = {"M": 128, "N": 64, "K": 32}  # distinct extents, so tile factors tell which loop they split


@functools.lru_cache(maxsize=None)
def sampled(target: str, n: int = 12, seed: int = 0, M: int = GEMM["M"], N: int = GEMM["N"], K: int = GEMM["K"],
            dtype: str = "float32"):
    """``(context, candidates)`` of gemm(M, N, K) on ``target``, sampled like the evolutionary search.

    ``dtype="float16"`` accumulates in float32 (tensor-core schedules on CUDA).
    """
    params = {"M": M, "N": N, "K": K, "dtype": dtype, "out_dtype": "float32"}
    return sample_candidates(build_workload("gemm", params), target, n, seed=seed)


@functools.lru_cache(maxsize=None)
def context_for(target: str, M: int = GEMM["M"], N: int = GEMM["N"], K: int = GEMM["K"]):
    return make_context(build_workload("gemm", {"M": M, "N": N, "K": K}), target)


def schedule_of(M: int = GEMM["M"], N: int = GEMM["N"], K: int = GEMM["K"]):
    """A fresh, unscheduled ``Schedule`` of gemm(M, N, K)."""
    from tvm.s_tir.schedule import Schedule

    return Schedule(build_workload("gemm", {"M": M, "N": N, "K": K}), debug_mask="all")


@pytest.fixture(params=TARGETS)
def target(request) -> str:
    return request.param


@pytest.fixture
def candidates(target):
    return sampled(target)


@pytest.fixture
def cpu_hand_schedule():
    """gemm: i parallel, j split by 8 with the inner part vectorized, auto-unroll 16 on i.

    Loops: i (parallel, M), j_0 (N / 8), k (K), j_1 (vectorized, 8).
    """
    sch = schedule_of()
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.parallel(i)
    sch.vectorize(j1)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    return context_for("cpu"), [make_candidate(sch)]


@pytest.fixture
def cuda_hand_schedule():
    """gemm: i split by 32 into blockIdx.x (M / 32) and threadIdx.x (32); j, k serial."""
    sch = schedule_of()
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, 32])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return context_for("h100"), [make_candidate(sch)]
