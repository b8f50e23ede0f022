"""graph: node and edge counts of known loop nests; indices in range."""

from __future__ import annotations

import numpy as np
import pytest

import costlab.features as F
from costlab.features.graph import EDGE_TYPES, NODE_FEATURE_NAMES, NODE_TYPES
from costlab.features.sampling import make_candidate
from tests.features.conftest import GEMM, context_for, sampled, schedule_of

NEST, READ, WRITE = (EDGE_TYPES.index(t) for t in ("nest", "read", "write"))


def _graph(context, candidates):
    return F.get("graph").extract(context, candidates).graphs


def _types(g):
    cols = [NODE_FEATURE_NAMES.index(f"type_{t}") for t in NODE_TYPES]
    onehot = g.node_features[:, cols]
    assert np.all(onehot.sum(axis=1) == 1)
    return {t: int(onehot[:, i].sum()) for i, t in enumerate(NODE_TYPES)}


def test_unscheduled_gemm():
    g = _graph(context_for("cpu"), [make_candidate(schedule_of())])
    # loops i, j, k; block C; stores: init and update; loads C, A, B; buffers A, B, C
    assert _types(g) == {"loop": 3, "block": 1, "store": 2, "load": 3, "buffer": 3}
    # nest: i->j, j->k, k->C, C->init, C->update; read: 3 buffer->load + 3 load->update; write: 2
    assert np.bincount(g.edge_type, minlength=3).tolist() == [5, 6, 2]
    assert g.node_features.shape[0] == 12 and g.edge_index.shape[1] == 13
    extent = g.node_features[:3, NODE_FEATURE_NAMES.index("loop_extent_log2p1")]
    assert np.allclose(extent, np.log2(1 + np.array([GEMM["M"], GEMM["N"], GEMM["K"]])))


def test_cpu_hand_schedule(cpu_hand_schedule):
    g = _graph(*cpu_hand_schedule)
    assert _types(g) == {"loop": 4, "block": 1, "store": 2, "load": 3, "buffer": 3}
    assert np.bincount(g.edge_type, minlength=3).tolist() == [6, 6, 2]
    x = g.node_features
    col = NODE_FEATURE_NAMES.index
    loops = x[x[:, col("type_loop")] == 1]
    assert loops[:, col("loop_kind_parallel")].tolist() == [1, 0, 0, 0]
    assert loops[:, col("loop_kind_vectorized")].tolist() == [0, 0, 0, 1]
    assert loops[0, col("loop_auto_unroll_log2p1")] == np.float32(np.log2(17))
    assert loops[3, col("loop_extent_log2p1")] == np.float32(np.log2(9))


def test_cuda_hand_schedule(cuda_hand_schedule):
    g = _graph(*cuda_hand_schedule)
    assert _types(g)["loop"] == 4
    x = g.node_features
    col = NODE_FEATURE_NAMES.index
    loops = x[x[:, col("type_loop")] == 1]
    assert loops[:, col("loop_thread_blockIdx.x")].tolist() == [1, 0, 0, 0]
    assert loops[:, col("loop_thread_threadIdx.x")].tolist() == [0, 1, 0, 0]
    assert loops[1, col("loop_extent_log2p1")] == np.float32(np.log2(33))


def test_sampled_graphs_are_well_formed(target):
    context, candidates = sampled(target)
    g = _graph(context, candidates)
    n = g.node_features.shape[0]
    assert g.edge_index.min() >= 0 and g.edge_index.max() < n
    assert set(np.unique(g.edge_type)) == {NEST, READ, WRITE}
    for i in range(len(candidates)):
        nodes = np.flatnonzero(g.batch == i)
        sub = g.node_features[nodes]
        types = {t: int(sub[:, NODE_FEATURE_NAMES.index(f"type_{t}")].sum()) for t in NODE_TYPES}
        # every store writes exactly one buffer, every load feeds exactly one store
        edges = np.isin(g.edge_index[0], nodes)
        assert (g.edge_type[edges] == WRITE).sum() == types["store"]
        assert (g.edge_type[edges] == READ).sum() == 2 * types["load"]
        assert types["buffer"] >= 3
    assert np.all(g.node_features >= 0) and np.all(g.node_features <= 64)


def test_select_and_concat_round_trip():
    context, candidates = sampled("h100")
    g = F.get("graph").extract(context, candidates)
    picked = F.select_features(g, np.array([2, 0]))
    assert picked.graphs.num_graphs == 2
    first = F.get("graph").extract(context, [candidates[2]]).graphs
    assert np.array_equal(picked.graphs.node_features[picked.graphs.batch == 0], first.node_features)


def test_a_blockized_blocks_inner_loops_hang_from_the_block():
    """Loops inside a block (blockize, tensorize) took their parent from the loop path, so the
    block had no edge to them and the outer loop seemed to hold them directly."""
    sch = schedule_of()
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, 16])
    sch.reorder(i0, j, i1, k)
    outer = sch.blockize(i1)
    g = _graph(context_for("cpu"), [make_candidate(sch)])
    col = NODE_FEATURE_NAMES.index
    is_loop = g.node_features[:, col("type_loop")] == 1
    is_block = g.node_features[:, col("type_block")] == 1
    nest = g.edge_index[:, g.edge_type == NEST]
    loop_ids, block_ids = np.flatnonzero(is_loop), np.flatnonzero(is_block)
    # loops i_0, j, the init's i_1, i_1, k; blocks C_o, C_init, C (numbered as the walk meets them)
    assert len(loop_ids) == 5 and len(block_ids) == 3 and sch.get(outer).name_hint == "C_o"
    from_outer_block = set(nest[1, nest[0] == block_ids[0]].tolist())
    assert from_outer_block == {int(loop_ids[2]), int(loop_ids[3])}  # the init's loop and the update's
    # every loop but the outermost has exactly one nest parent
    parent_counts = np.bincount(nest[1], minlength=g.node_features.shape[0])[loop_ids]
    assert sorted(parent_counts.tolist()) == [0] + [1] * (len(loop_ids) - 1)


def test_a_reduction_init_is_marked_whether_or_not_it_was_decomposed():
    """MetaSchedule's DecomposeReduction moves the init into a block of its own, as in every
    postprocessed candidate: the init flags must survive it."""
    init_block, init_store = (NODE_FEATURE_NAMES.index(n) for n in ("block_has_init", "store_is_init"))

    def flags(sch):
        g = _graph(context_for("cpu"), [make_candidate(sch)])
        return g.node_features[:, init_block].sum(), g.node_features[:, init_store].sum()

    whole = schedule_of()
    decomposed = schedule_of()
    block = decomposed.get_sblock("C")
    decomposed.decompose_reduction(block, decomposed.get_loops(block)[2])
    assert flags(whole) == flags(decomposed) == (1.0, 1.0)
    context, candidates = sampled("cpu", n=4)
    node_features = _graph(context, candidates).node_features
    assert node_features[:, init_block].sum() == node_features[:, init_store].sum() == 4  # one per candidate


def test_a_zero_fill_named_like_an_init_is_no_init_without_a_reduction():
    from tvm import te, tirx
    from tvm.s_tir.schedule import Schedule

    out = te.compute((16,), lambda i: tirx.const(0.0, "float32"), name="acc_init")
    sch = Schedule(te.create_prim_func([out]))
    g = _graph(context_for("cpu"), [make_candidate(sch)])
    init_block, init_store = (NODE_FEATURE_NAMES.index(n) for n in ("block_has_init", "store_is_init"))
    assert g.node_features[:, init_block].sum() == g.node_features[:, init_store].sum() == 0


def test_an_inits_stride_is_along_the_loops_it_runs_in():
    """A fused init runs in no reduction loop: with the loops j, i, k, C[i, j]'s init strides by
    N along i (not 0 along k), as the same init decomposed into a block of its own does."""
    col = NODE_FEATURE_NAMES.index

    def init_stride(sch):
        x = _graph(context_for("cpu"), [make_candidate(sch)]).node_features
        (row,) = x[(x[:, col("type_store")] == 1) & (x[:, col("store_is_init")] == 1)]
        return 2 ** row[col("access_inner_stride_elems_log2p1")] - 1, row[col("access_inner_contiguous")]

    sch = schedule_of()
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    sch.reorder(j, i, k)
    fused = init_stride(sch)
    sch.decompose_reduction(sch.get_sblock("C"), k)
    assert fused == init_stride(sch)
    assert fused[0] == pytest.approx(GEMM["N"], rel=1e-5) and fused[1] == 0.0


def test_the_loops_and_block_inside_an_init_run_as_often_as_its_store():
    """An init with loops of its own (k outside a blockized i1, j1) runs in no reduction loop:
    its loops and block count M*N executions, as its store does, not K times more."""
    sch = schedule_of()
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, k, i1, j1)
    sch.blockize(i1)
    x = _graph(context_for("cpu"), [make_candidate(sch)]).node_features
    col = NODE_FEATURE_NAMES.index
    execs = np.round(2 ** x[:, col("exec_count_log2p1")] - 1).astype(int)
    loop_ids = np.flatnonzero(x[:, col("type_loop")] == 1)
    block_ids = np.flatnonzero(x[:, col("type_block")] == 1)
    (init_store,) = np.flatnonzero((x[:, col("type_store")] == 1) & (x[:, col("store_is_init")] == 1))
    M, N, K = GEMM["M"], GEMM["N"], GEMM["K"]
    assert execs[init_store] == M * N
    # loops i_0, j_0, k, the init's i_1, j_1, then the update's; blocks C_o, C_init, C
    assert execs[loop_ids].tolist() == [M // 4, M * N // 16, M * N * K // 16, M * N // 4, M * N,
                                         M * N * K // 4, M * N * K]
    assert execs[block_ids[1]] == M * N
