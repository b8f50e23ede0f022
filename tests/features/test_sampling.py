"""sample_candidates: deterministic, distinct, postprocessed like MetaSchedule's candidates."""

from __future__ import annotations

import pytest
import tvm_ffi

from costlab.errors import CostlabError
from costlab.features.sampling import candidates_from_traces, sample_candidates
from costlab.workloads import build_workload
from tests.features.conftest import sampled


def test_deterministic_and_distinct(target):
    context, a = sampled(target)
    _, b = sample_candidates(build_workload("gemm", {"M": 128, "N": 64, "K": 32}), target, len(a), seed=0)
    assert all(tvm_ffi.structural_equal(x.sch.mod, y.sch.mod) for x, y in zip(a, b))
    assert len({tvm_ffi.structural_hash(x.sch.mod) for x in a}) == len(a)
    _, c = sample_candidates(build_workload("gemm", {"M": 128, "N": 64, "K": 32}), target, len(a), seed=1)
    assert {tvm_ffi.structural_hash(x.sch.mod) for x in a} != {tvm_ffi.structural_hash(x.sch.mod) for x in c}


def test_postprocessed(target):
    context, candidates = sampled(target)
    for cand in candidates:
        kinds = [inst.kind.name for inst in cand.sch.trace.insts]
        assert "EnterPostproc" in kinds
        assert len(cand.args_info) == 3
        if target == "h100":  # RewriteCooperativeFetch and RewriteUnboundBlock ran
            assert "meta_schedule.cooperative_fetch" not in str(cand.sch.mod)


def test_replayed_traces_reproduce_the_candidates():
    context, candidates = sampled("h100")
    replayed = candidates_from_traces(context, [c.sch.trace for c in candidates[:3]])
    assert len(candidates) >= 3 and len(replayed) == 3
    assert all(tvm_ffi.structural_equal(x.sch.mod, y.sch.mod) for x, y in zip(candidates, replayed))


def test_too_few_raises():
    with pytest.raises(CostlabError, match=r"found only \d+ valid distinct schedules of 500 asked for in 50 attempts "
                                           r"on target llvm \(2 duplicates, 0 rejected by a postprocessor, 0 raised\)"):
        sample_candidates(build_workload("gemm", {"M": 2, "N": 2, "K": 2}), "cpu", 500, seed=0, max_attempts=50)
