"""trace: decisions round-trip, primitive counts and annotations of known schedules."""

from __future__ import annotations

import numpy as np
import pytest

import costlab.features as F
from costlab.features.trace import INSTRUCTION_KINDS, MAX_TILE_LEVELS, N_STEP_ARGS
from tests.features.conftest import GEMM, sampled


def _rows(context, candidates, name="trace"):
    ex = F.get(name)
    dense = ex.extract(context, candidates).dense
    return [dict(zip(ex.feature_names, r)) for r in dense.tolist()]


def _tile_decisions(trace) -> list[list[int]]:
    out = []
    for inst in trace.insts:
        if inst.kind.name == "SamplePerfectTile":
            out.append([int(x) for x in trace.decisions[inst]])
    return out


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_tile_factors_multiply_to_the_loop_extent(target):
    context, candidates = sampled(target)
    extents = [GEMM["M"], GEMM["N"], GEMM["K"]]  # MultiLevelTiling tiles i, j, then k
    for row, cand in zip(_rows(context, candidates), candidates):
        decisions = _tile_decisions(cand.sch.trace)
        assert len(decisions) == 3
        for t, (extent, decision) in enumerate(zip(extents, decisions)):
            levels = int(row[f"tile{t}_levels"])
            factors = [row[f"tile{t}_factor{j}"] for j in range(MAX_TILE_LEVELS)]
            assert levels == len(decision)
            assert factors[:levels] == decision  # the sampled decision, in order
            assert np.prod(factors) == extent
        assert row["tile3_levels"] == 0


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_counts_and_categoricals_match_the_trace(target):
    context, candidates = sampled(target)
    for row, cand in zip(_rows(context, candidates), candidates):
        trace = cand.sch.trace
        kinds = [inst.kind.name for inst in trace.insts]
        assert row["n_insts"] == len(kinds)
        assert row["n_decisions"] == len(trace.decisions)
        for kind in set(kinds):
            assert row[f"count_{kind}" if kind in INSTRUCTION_KINDS else "count_other"] == kinds.count(kind)
        assert row["n_insts_postproc"] == len(kinds) - 1 - kinds.index("EnterPostproc")
        cats = [inst for inst in trace.insts if inst.kind.name == "SampleCategorical"]
        for i, inst in enumerate(cats[:6]):
            choices = [int(c) for c in inst.attrs[0]]
            assert row[f"cat{i}_value"] == choices[int(trace.decisions[inst])]


def test_cpu_annotations(cpu_hand_schedule):
    context, candidates = cpu_hand_schedule
    row = _rows(context, candidates)[0]
    assert row["count_Parallel"] == 1 and row["count_Vectorize"] == 1
    assert row["count_Split"] == 1 and row["count_Reorder"] == 1
    assert row["ann_unroll_max_step"] == 16
    assert row["n_decisions"] == 0 and row["tile0_levels"] == 0


def test_cuda_thread_binding(cuda_hand_schedule):
    context, candidates = cuda_hand_schedule
    row = _rows(context, candidates)[0]
    assert row["bind_threadIdx.x_count"] == 1 and row["bind_threadIdx.x_extent"] == 32
    assert row["bind_blockIdx.x_count"] == 1  # its extent (None factor of an unknown loop) is unknown
    assert row["count_Bind"] == 2


def test_sampled_cuda_binds_known_extents():
    context, candidates = sampled("h100")
    for row, cand in zip(_rows(context, candidates), candidates):
        t0, t1 = (np.asarray([row[f"tile{t}_factor{j}"] for j in range(MAX_TILE_LEVELS)]) for t in (0, 1))
        # SSSRRSRS: blockIdx.x = fused first spatial tiles, vthread the second, threadIdx.x the third
        assert row["bind_blockIdx.x_extent"] == t0[0] * t1[0]
        assert row["bind_vthread_extent"] == t0[1] * t1[1]
        assert row["bind_threadIdx.x_extent"] >= t0[2] * t1[2]
        assert row["cache_read_shared"] == 2 and row["cache_write_local"] == 1


def test_sequence_option():
    context, candidates = sampled("h100")
    seq = F.get("trace_seq")
    dense = seq.extract(context, candidates).dense
    n_summary = len(F.get("trace").feature_names)
    width = len(INSTRUCTION_KINDS) + 1 + N_STEP_ARGS
    assert dense.shape[1] == n_summary + 64 * width
    assert np.array_equal(dense[:, :n_summary], F.get("trace").extract(context, candidates).dense)
    steps = dense[0, n_summary:].reshape(64, width)
    trace = candidates[0].sch.trace
    kinds = [inst.kind.name for inst in trace.insts]
    for t, kind in enumerate(kinds[:64]):
        assert steps[t, INSTRUCTION_KINDS.index(kind)] == 1
        assert steps[t, :len(INSTRUCTION_KINDS) + 1].sum() == 1
        if kind == "SamplePerfectTile":
            inst = list(trace.insts)[t]
            decision = [int(x) for x in trace.decisions[inst]]
            assert steps[t, len(INSTRUCTION_KINDS) + 1:][:len(decision)].tolist() == decision
    assert not steps[len(kinds):].any()
    # a shorter sequence truncates
    from costlab.features.trace import TraceFeatures

    short = TraceFeatures(sequence_length=4)
    assert short.extract(context, candidates).dense.shape[1] == n_summary + 4 * width
