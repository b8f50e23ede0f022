"""analysis: hand-checked values on known loop nests and sampled schedules."""

from __future__ import annotations

import numpy as np
import pytest

import costlab.features as F
from costlab.features.sampling import make_candidate
from tests.features.conftest import GEMM, context_for, sampled, schedule_of

M, N, K = GEMM["M"], GEMM["N"], GEMM["K"]


def _row(context, candidates, i=0) -> dict:
    ex = F.get("analysis")
    dense = ex.extract(context, candidates).dense
    return dict(zip(ex.feature_names, dense[i].tolist()))


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_flops_are_2mnk_whatever_the_schedule(target):
    context, candidates = sampled(target)
    ex = F.get("analysis")
    dense = ex.extract(context, candidates).dense
    flops = dense[:, ex.feature_names.index("flops_total")]
    assert np.all(flops == 2 * M * N * K)
    fma = dense[:, ex.feature_names.index("flop_ffma")]
    assert np.all(fma == M * N * K)
    # and the sampled schedules really differ
    assert len({tuple(r) for r in dense.tolist()}) > 1


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_unscheduled_nest_matches_a_hand_count(target):
    # for i, j, k: C[i, j] = (init 0 when k == 0) C[i, j] + A[i, k] * B[k, j]
    row = _row(context_for(target), [make_candidate(schedule_of())])
    assert row["flops_total"] == 2 * M * N * K
    # every update loads C, A and B once: 3 * M*N*K float32
    assert row["bytes_global_loaded"] == 3 * M * N * K * 4
    # M*N*K updates + M*N init stores (the init runs once per (i, j))
    assert row["bytes_global_stored"] == (M * N * K + M * N) * 4
    assert row["bytes_shared_loaded"] == 0 and row["bytes_local_loaded"] == 0
    # unique bytes: everything at L0; one row of A, all of B, one row of C at L1 (i fixed);
    # one row of A, one column of B, one C element at L2 (i, j fixed); 3 elements at L3
    assert row["footprint_bytes_L0"] == (M * K + K * N + M * N) * 4
    assert row["footprint_bytes_L1"] == (K + K * N + N) * 4
    assert row["footprint_bytes_L2"] == (K + K + 1) * 4
    assert row["footprint_bytes_L3"] == 3 * 4
    assert row["footprint_global_bytes"] == row["footprint_bytes_L0"]
    assert row["reuse_global_loads_per_byte"] == pytest.approx(3 * M * N * K / (M * K + K * N + M * N))
    assert row["arith_intensity_flop_per_global_byte"] == pytest.approx(
        2 * M * N * K / ((3 * M * N * K + M * N * K + M * N) * 4))
    # k is innermost: A[i, k] strides by 1, B[k, j] by N, C[i, j] does not move; the init runs
    # in no reduction loop: C[i, j] strides by 1 along j (byte-weighted mean)
    assert row["innermost_stride_global_elems_mean"] == pytest.approx(
        ((N + 1) * (M * N * K * 4) + M * N * 4) / ((4 * M * N * K + M * N) * 4))
    assert row["innermost_contiguous_global_frac"] == pytest.approx(
        (3 * M * N * K + M * N) / (4 * M * N * K + M * N))
    assert row["loop_depth_max"] == 3 and row["num_loops"] == 3
    assert row["num_blocks"] == 1 and row["num_stores"] == 2
    assert row["parallel_extent"] == 0 and row["vector_lanes"] == 0 and row["grid_size"] == 0


def test_cpu_annotations_show_exact_values(cpu_hand_schedule):
    context, candidates = cpu_hand_schedule
    row = _row(context, candidates)
    cores = int(context.target.attrs["num-cores"])
    assert row["parallel_extent"] == M
    assert row["parallel_tasks_per_core"] == pytest.approx(M / cores)
    assert row["num_parallel_loops"] == 1
    assert row["vector_lanes"] == 8
    assert row["unroll_max_step"] == 16
    assert row["loop_depth_max"] == 4 and row["num_loops"] == 4
    assert row["flops_total"] == 2 * M * N * K
    assert row["num_kernels"] == 1
    # j_1 (vectorized) is innermost: A[i, k] does not move, B[k, j] and C[i, j] are contiguous
    assert row["innermost_contiguous_global_frac"] == 1.0
    assert row["vectorized_access_frac"] == 1.0  # the init store sits in j_1 too
    # the init store runs M*N times (k excluded), the update M*N*K times
    assert row["bytes_global_stored"] == (M * N * K + M * N) * 4
    assert row["grid_size"] == 0 and row["threads_per_block"] == 0


def test_cuda_thread_binding_shows_exact_values(cuda_hand_schedule):
    context, candidates = cuda_hand_schedule
    row = _row(context, candidates)
    assert row["threads_per_block"] == 32
    assert row["grid_size"] == M // 32
    assert row["threads_total"] == M
    assert row["warps_per_block"] == 1
    assert row["num_kernels"] == 1
    assert row["vthreads_per_block"] == 1
    assert row["shared_mem_bytes_per_block"] == 0
    assert row["threads_limit_frac"] == pytest.approx(32 / 1024)
    assert row["flops_total"] == 2 * M * N * K
    assert row["bytes_global_loaded"] == 3 * M * N * K * 4
    # neighbouring threads read neighbouring rows of A: stride K, not coalesced; C[i, j] likewise
    assert row["coalesced_global_frac"] < 1.0
    # H100: 2048 threads and 32 blocks per SM; 32-thread blocks -> 32 blocks -> 1024 threads
    assert row["occupancy_est"] == pytest.approx(0.5)
    assert row["parallel_extent"] == 0


def test_registers_are_capped_by_the_launch_bounds_of_a_full_block():
    """TVM emits __launch_bounds__(threads per block), so nvcc keeps a 1024-thread block's
    registers within 65536 / 1024 = 64 per thread (spilling beyond): such a kernel still runs
    one block per SM, occupancy 1024 / 2048. The uncapped 32 + 256 / 4 = 96 gave occupancy 0."""
    from tests.features.conftest import context_for, schedule_of

    from costlab.features.sampling import make_candidate

    sch = schedule_of(M=1024, N=64, K=64)
    block = sch.get_sblock("C")
    i, _, _ = sch.get_loops(block)
    sch.bind(i, "threadIdx.x")
    sch.reverse_compute_at(sch.cache_write(block, 0, "local"), i)  # a row of C per thread: 64 floats
    row = _row(context_for("h100", M=1024, N=64, K=64), [make_candidate(sch)])
    assert row["threads_per_block"] == 1024 and row["local_bytes_per_thread"] == 64 * 4
    assert row["registers_per_thread_est"] == 64
    assert row["occupancy_est"] == pytest.approx(0.5)


def test_tensor_core_fragments_are_counted_per_lane():
    """A wmma fragment is held by the 32 lanes of a warp together: per thread, a 32nd of it."""
    context, candidates = sampled("h100", n=4, M=128, N=128, K=64, dtype="float16")
    ex = F.get("analysis")
    col = dict(zip(ex.feature_names, ex.extract(context, candidates).dense.T))
    # fragments only: a 16x16 fp16 A and B and a 16x16 fp32 accumulator at least, over 32 lanes
    assert np.all(col["local_bytes_per_thread"] >= (16 * 16 * 2 * 2 + 16 * 16 * 4) / 32)
    # counted whole per thread, the largest candidate's fragments were 35840 bytes (registers 255)
    assert np.all(col["local_bytes_per_thread"] <= 35840 / 32)


def test_sampled_cuda_schedules_use_the_gpu():
    context, candidates = sampled("h100")
    ex = F.get("analysis")
    dense = ex.extract(context, candidates).dense
    col = {n: dense[:, i] for i, n in enumerate(ex.feature_names)}
    limits = context.target.attrs
    assert np.all(col["threads_per_block"] >= 1)
    assert np.all(col["threads_per_block"] <= int(limits["max_threads_per_block"]))
    assert np.all(col["grid_size"] >= 1)
    assert np.all(col["shared_mem_bytes_per_block"] > 0)  # MultiLevelTiling caches A and B in shared memory
    assert np.all(col["shared_mem_bytes_per_block"] <= int(limits["max_shared_memory_per_block"]))
    assert np.all((col["occupancy_est"] > 0) & (col["occupancy_est"] <= 1))
    # every global element is loaded at least once
    assert np.all(col["bytes_global_loaded"] >= (M * K + K * N) * 4)
    assert np.all(col["bytes_global_stored"] == M * N * 4)


def test_sampled_cpu_schedules_are_parallel():
    context, candidates = sampled("cpu")
    ex = F.get("analysis")
    dense = ex.extract(context, candidates).dense
    col = {n: dense[:, i] for i, n in enumerate(ex.feature_names)}
    trace = F.get("trace")
    n_parallel = trace.extract(context, candidates).dense[:, trace.feature_names.index("count_Parallel")]
    # a schedule whose outer tiles are all 1 has nothing to parallelize
    assert np.array_equal(col["parallel_extent"] > 0, n_parallel > 0)
    assert (n_parallel > 0).sum() >= len(candidates) // 2
    assert np.all(col["grid_size"] == 0)
    assert np.all(col["footprint_global_bytes"] >= (M * K + K * N + M * N) * 4)


def test_tensor_core_blocks_count_their_flops():
    """Tensorized (wmma) blocks have no buffer stores; their regions give bytes and FLOPs."""
    m = n = k = 64
    context, candidates = sampled("h100", n=4, M=m, N=n, K=k, dtype="float16")
    assert all("wmma.accumulator" in str(c.sch.mod) for c in candidates)
    ex = F.get("analysis")
    dense = ex.extract(context, candidates).dense
    col = {name: dense[:, i] for i, name in enumerate(ex.feature_names)}
    assert np.all(col["flops_total"] == 2 * m * n * k)
    assert np.all(col["bytes_global_stored"] == m * n * 4)  # float32 output
    assert np.all(col["bytes_global_loaded"] >= (m * k + k * n) * 2)  # float16 inputs
    assert np.all(col["shared_mem_bytes_per_block"] > 0)


def _padded_conv_row(inline_pad: bool) -> dict:
    """conv2d NCHW, N=1, C=K=2, H=W=4, 3x3, padding 1, unscheduled (its pad stage inlined or not)."""
    from tvm.s_tir.schedule import Schedule

    from costlab.features.sampling import make_context
    from costlab.workloads import build_workload

    mod = build_workload("conv2d_nchw", {"N": 1, "C": 2, "H": 4, "W": 4, "K": 2})
    sch = Schedule(mod)
    if inline_pad:
        sch.compute_inline(sch.get_sblock("pad"))
    return _row(make_context(mod, "cpu"), [make_candidate(sch)])


def test_a_padded_input_is_read_inside_its_border_only():
    """``if_then_else`` evaluates one branch: the pad stage writes 2*6*6 elements but reads X
    at its 2*4*4 inner ones only, and inlined into the convolution, X is read by the updates
    whose row p + r - 1 and column q + s - 1 fall inside it (10 of the 12 (p, r) pairs each)."""
    updates = 1 * 2 * 4 * 4 * 2 * 3 * 3
    row = _padded_conv_row(inline_pad=False)
    # X inside the border; then per update, the padded input, the weight and the running output
    assert row["bytes_global_loaded"] == (2 * 4 * 4 + 3 * updates) * 4
    assert row["bytes_global_stored"] == (2 * 6 * 6 + updates + 2 * 4 * 4) * 4
    row = _padded_conv_row(inline_pad=True)
    assert row["bytes_global_loaded"] == (updates * (10 / 12) ** 2 + 2 * updates) * 4
    assert row["flops_total"] == 2 * updates


def test_a_loop_free_block_covers_its_whole_regions():
    """An opaque block without loops (all indices constant): the footprint is its regions' size."""
    from tvm.script import tirx as T

    from costlab.features._tir_walk import walk
    from costlab.features.analysis import FEATURE_NAMES, TargetInfo, analyse
    from costlab.targets import make_target

    @T.prim_func(s_tir=True)
    def opaque(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
               C: T.Buffer((16, 16), "float32")):
        with T.sblock("mm"):
            T.reads(A[0:16, 0:16], B[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(T.call_extern("int32", "gemm16", 0))

    row = dict(zip(FEATURE_NAMES, analyse(walk(opaque, False), TargetInfo(make_target("cpu"))).tolist()))
    assert row["footprint_bytes_L0"] == row["footprint_global_bytes"] == 3 * 16 * 16 * 4


def _gemm_row(sch, target: str) -> dict:
    from costlab.features._tir_walk import main_func, walk
    from costlab.features.analysis import FEATURE_NAMES, TargetInfo, analyse
    from costlab.targets import make_target

    info = TargetInfo(make_target(target))
    return dict(zip(FEATURE_NAMES, analyse(walk(main_func(sch.mod), info.is_gpu), info).tolist()))


def test_nested_vthread_loops_are_threads_of_their_own():
    """vthread.x inside vthread.y: TVM keeps both (no unification), so both extents count."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    m, n, k = 128, 64, 32
    sch = Schedule(build_workload("gemm", {"M": m, "N": n, "K": k}))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, i1, j1)
    for loop, tag in ((i0, "blockIdx.x"), (j0, "threadIdx.x"), (i1, "vthread.x"), (j1, "vthread.y")):
        sch.bind(loop, tag)
    row = _gemm_row(sch, "h100")
    assert row["flops_total"] == 2 * m * n * k
    assert row["vthreads_per_block"] == 16
    assert row["bytes_global_stored"] == (m * n * k + m * n) * 4  # the update per k, and the init


def test_an_init_with_loops_skips_the_reduction_loops():
    """blockize leaves the init with its own loop; its stores run once per output, not per k."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    m, n, k = 128, 64, 32
    sch = Schedule(build_workload("gemm", {"M": m, "N": n, "K": k}))
    i, j, kk = sch.get_loops(sch.get_sblock("C"))
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i, j0, kk, j1)
    sch.blockize(j1)
    row = _gemm_row(sch, "cpu")
    assert row["flops_total"] == 2 * m * n * k
    assert row["bytes_global_stored"] == (m * n * k + m * n) * 4


def test_a_cross_thread_reduction_writes_each_output_once():
    """A reduction loop bound to threadIdx.x is lowered to a register accumulator, an all-reduce
    and one store per output (LowerCrossThreadReduction): the walk counted a load and a store of
    the output per reduction iteration, 257x the real stores of this reduce_sum."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    m, n = 8, 256
    sch = Schedule(build_workload("reduce_sum", {"M": m, "N": n}))
    i, j = sch.get_loops(sch.get_sblock("S"))
    j0, j1 = sch.split(j, [64, None])  # 64 threads, each summing 4 values first
    sch.bind(i, "blockIdx.x")
    sch.bind(j0, "threadIdx.x")
    row = _gemm_row(sch, "h100")
    assert row["flops_total"] == m * n
    assert row["bytes_global_loaded"] == m * n * 4  # the input once; the output is never read back
    assert row["bytes_global_stored"] == m * 4  # one store per output, no init store
    # the same loops without a thread on the reduction: a serial reduction, counted as before
    sch = Schedule(build_workload("reduce_sum", {"M": m, "N": n}))
    i, j = sch.get_loops(sch.get_sblock("S"))
    i0, i1 = sch.split(i, [2, None])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    row = _gemm_row(sch, "h100")
    assert row["bytes_global_loaded"] == 2 * m * n * 4 and row["bytes_global_stored"] == (m * n + m) * 4


def test_sibling_loops_of_one_thread_tag_are_one_thread():
    """A local buffer written under one threadIdx.x loop and read under a sibling one (a
    write-back after reverse_compute_at) is one thread's: TVM unifies the two loops. It was
    sized over all 32 threads (8192 bytes where the kernel declares float C_local[64])."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    sch = Schedule(build_workload("gemm", {"M": 64, "N": 64, "K": 64}))
    block = sch.get_sblock("C")
    i, _, _ = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 32])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    write_back = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(write_back, i0)
    sch.bind(sch.get_loops(write_back)[-2], "threadIdx.x")
    row = _gemm_row(sch, "h100")
    assert row["local_bytes_per_thread"] == 64 * 4  # one row of C per thread
    assert row["registers_per_thread_est"] == 32 + 64


def _tiled_gemm_with_shared_fetches():
    """gemm 64³, 16x16 tiles over 16 blocks of 256 threads, k by 8: A and B tiles (128 floats each)
    fetched into shared memory per k step by 256 threads under T.where(fused < 128)."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    sch = Schedule(build_workload("gemm", {"M": 64, "N": 64, "K": 64}))
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i0, j0, i1, j1, k0, k1)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "threadIdx.x")
    for operand in (0, 1):
        fetch = sch.cache_read(block, operand, "shared")
        sch.compute_at(fetch, k0)
        _, threads = sch.split(sch.fuse(*sch.get_loops(fetch)[-2:]), [None, 256])
        sch.bind(threads, "threadIdx.x")
    return sch, k0


def test_a_cooperative_fetch_that_overshoots_its_tile_does_not_grow_it():
    """256 threads fetch a 128-element tile under T.where(fused < 128): the region covered 256
    elements, so shared memory read twice the kernel's (CompactBufferAllocation uses the predicate)."""
    sch, _ = _tiled_gemm_with_shared_fetches()
    row = _gemm_row(sch, "h100")
    assert row["shared_mem_bytes_per_block"] == (16 * 8 + 8 * 16) * 4  # float A_shared[128], B_shared[128]
    assert row["bytes_global_loaded"] == 16 * 8 * 1024 + 64 ** 3 * 4  # counts already took the predicate


def test_software_pipelining_keeps_a_version_per_stage_in_flight():
    """Stages [0, 0, 2] on k (the fetches at 0, the multiply-add at 2): InjectSoftwarePipeline keeps
    3 versions of each shared tile; the feature counted one."""
    sch, k0 = _tiled_gemm_with_shared_fetches()
    sch.annotate(k0, "software_pipeline_stage", [0, 0, 2])
    sch.annotate(k0, "software_pipeline_order", [0, 1, 2])
    row = _gemm_row(sch, "h100")
    assert row["shared_mem_bytes_per_block"] == 3 * (16 * 8 + 8 * 16) * 4
    assert row["pipelined_loops"] == 1


def test_sm_limits_of_an_unlisted_arch_are_the_nearest_older_ones():
    from costlab.features.analysis import SM_LIMITS, sm_limits

    assert sm_limits("sm_90a") == SM_LIMITS["sm_90"]
    assert sm_limits("sm_100") == SM_LIMITS["sm_90"]  # Blackwell: at least Hopper's limits
    assert sm_limits("sm_88") == SM_LIMITS["sm_87"]
    assert sm_limits("sm_60") == SM_LIMITS["sm_70"]  # older than the table: its oldest
    assert sm_limits("") == SM_LIMITS["sm_80"]


@pytest.mark.parametrize("max_step, copies", [(0, 1), (16, 4), (32, 32), (1024, 32)])
def test_unrolled_extent_follows_tvms_auto_unroll_rule(max_step, copies):
    """i parallel; k split 8 x 4; auto-unroll on i. k_1 (4 iterations of one store) unrolls from a
    max step of 4; k_0 only when its 8 x 4 copies fit too; j (serial, 64 x 32) never at these steps,
    and the parallel i never."""
    sch = schedule_of()
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    k0, k1 = sch.split(k, factors=[8, 4])
    sch.parallel(i)
    sch.decompose_reduction(block, k0)  # the init leaves the k loops, as MetaSchedule's postprocessor does
    if max_step:
        sch.annotate(i, "pragma_auto_unroll_max_step", max_step)
    assert _row(context_for("cpu"), [make_candidate(sch)])["unrolled_extent"] == copies


def test_unrolled_extent_counts_the_copies_tvm_makes_of_sampled_cpu_candidates():
    """TVM's own lowering, watched at its UnrollLoop pass: the store nodes after it, each counted
    with the unrolled loops left around it (an explicitly unrolled copy counts once), add up to
    the copies costlab predicts, summed over the statements."""
    import tvm
    from tvm import tirx

    from costlab.features._tir_walk import main_func, walk
    from costlab.features.analysis import unroll_factors
    from costlab.features.sampling import sample_candidates
    from costlab.search.build_funcs import build_module
    from costlab.workloads import build_workload

    def copies(mod) -> int:
        total = 0

        def visit(stmt, factor):
            nonlocal total
            if isinstance(stmt, tirx.For):
                visit(stmt.body, factor * (int(stmt.extent) if stmt.kind == tirx.ForKind.UNROLLED else 1))
            elif isinstance(stmt, tirx.BufferStore):
                total += factor
            elif isinstance(stmt, tirx.SeqStmt):
                for child in stmt.seq:
                    visit(child, factor)
            else:
                for name in ("body", "then_case", "else_case"):
                    if isinstance(child := getattr(stmt, name, None), tirx.Stmt):
                        visit(child, factor)

        visit(main_func(mod).body, 1)
        return total

    @tvm.instrument.pass_instrument
    class AfterUnroll:
        seen: list = []

        def run_after_pass(self, mod, info):
            if info.name == "tirx.UnrollLoop":
                self.seen.append(copies(mod))

    checked = 0
    for workload, params in [("gemm", GEMM), ("softmax", {"M": 128, "N": 256}), ("rmsnorm", {"M": 64, "N": 1024})]:
        context, candidates = sample_candidates(build_workload(workload, params), "cpu", 6, seed=2)
        for cand in candidates:
            watcher = AfterUnroll()
            watcher.seen = []
            with tvm.transform.PassContext(opt_level=3, instruments=[watcher]):
                build_module(cand.sch.mod, context.target)
            predicted = sum(unroll_factors(walk(main_func(cand.sch.mod), False)))
            assert watcher.seen == [predicted], cand.sch.mod.script()
            checked += 1
    assert checked == 18


@pytest.mark.parametrize("threads, shared_bytes", [
    (64, (2 + 1) * 4),  # two warps: a staging slot per warp and the result
    (16, 0),  # within a warp: shuffles only
    (48, 48 * 4),  # neither dividing a warp nor whole warps: a slot per thread
])
def test_a_cross_thread_reduction_declares_tvms_shared_scratch(threads, shared_bytes):
    """LowerThreadAllreduce's shared buffers were not counted: shared_mem_bytes_per_block was 0
    where TVM declares a staging buffer and a result."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    sch = Schedule(build_workload("reduce_sum", {"M": 8, "N": 48 * 64}))
    i, j = sch.get_loops(sch.get_sblock("S"))
    j0, _ = sch.split(j, [threads, None])
    sch.bind(i, "blockIdx.x")
    sch.bind(j0, "threadIdx.x")
    assert _gemm_row(sch, "h100")["shared_mem_bytes_per_block"] == shared_bytes
    assert _declared_shared_bytes(sch.mod, "h100") == shared_bytes  # what TVM's CUDA source declares


def _declared_shared_bytes(mod, target) -> int:
    """The largest kernel's sum of __shared__ arrays in the CUDA source TVM generates for ``mod``."""
    import re

    from costlab.search.build_funcs import build_module
    from costlab.targets import make_target

    source = "".join(m.inspect_source("cuda") for m in build_module(mod, make_target(target)).imports
                     if m.kind == "cuda")
    element_bytes = {"float": 4, "double": 8, "half": 2, "nv_bfloat16": 2, "int": 4, "short": 2, "char": 1,
                     "int64_t": 8}
    return max(sum(int(n) * element_bytes[t.split()[-1]] for t, n in re.findall(
        r"__shared__ (?:alignas\(\d+\) )?([\w ]+?) \w+\[(\d+)\]", kernel))
        for kernel in source.split('extern "C" __global__')[1:])


def test_shared_memory_per_block_equals_tvms_declared_arrays_on_sampled_reductions():
    """Sampled softmax and layernorm candidates, built for CUDA (no GPU needed): the feature is
    the largest kernel's sum of the __shared__ arrays in TVM's source (before this, 4 of 8
    softmax candidates agreed). nvcc then aligns each array to 64 bytes, which is not modelled."""
    from costlab.features.sampling import sample_candidates
    from costlab.workloads import build_workload

    checked = 0
    for workload, params in [("softmax", {"M": 256, "N": 4096}), ("layernorm", {"M": 128, "N": 1024})]:
        context, candidates = sample_candidates(build_workload(workload, params), "h100", 8, seed=0)
        ex = F.get("analysis")
        features = ex.extract(context, candidates).dense[:, ex.feature_names.index("shared_mem_bytes_per_block")]
        for cand, feature in zip(candidates, features):
            assert feature == _declared_shared_bytes(cand.sch.mod, "h100")
            checked += 1
    assert checked == 16


@pytest.mark.parametrize("reduce_threads, epilogue_threads", [(32, 128), (64, 256), (16, 48)])
def test_the_all_reduce_scratch_takes_the_threads_around_the_reduction(reduce_threads, epilogue_threads):
    """One rmsnorm kernel, threadIdx.x bound in sibling loops of different extents: TVM sizes the
    all-reduce by the loops around the reduction, not by the kernel's widest threadIdx.x."""
    from tvm.s_tir.schedule import Schedule

    from costlab.workloads import build_workload

    sch = Schedule(build_workload("rmsnorm", {"M": 128, "N": 1024}))
    i, n = sch.get_loops(sch.get_sblock("Y"))
    _, n1 = sch.split(n, [None, epilogue_threads])
    sch.bind(i, "blockIdx.x")
    sch.bind(n1, "threadIdx.x")
    sumsq = sch.get_sblock("sumsq")
    sch.set_scope(sumsq, 0, "shared")
    sch.compute_at(sumsq, i)
    j0, _ = sch.split(sch.get_loops(sumsq)[-1], [reduce_threads, None])
    sch.bind(j0, "threadIdx.x")
    assert _gemm_row(sch, "h100")["shared_mem_bytes_per_block"] == _declared_shared_bytes(sch.mod, "h100")


def _reduce_sum(dtype: str):
    from tvm import te
    from tvm.s_tir.schedule import Schedule

    x = te.placeholder((64, 1024), dtype, name="X")
    k = te.reduce_axis((0, 1024), name="k")
    sch = Schedule(te.create_prim_func([x, te.compute((64,), lambda i: te.sum(x[i, k], axis=k), name="S")]))
    return sch, sch.get_sblock("S")


def _argmax(index_dtype: str):
    from tvm import te, tirx
    from tvm.s_tir.schedule import Schedule

    def combine(a, b):
        return tirx.Select(a[1] >= b[1], a[0], b[0]), tirx.Select(a[1] >= b[1], a[1], b[1])

    argmax = te.comm_reducer(combine, lambda t0, t1: (tirx.const(-1, t0), te.min_value(t1)), name="argmax")
    x = te.placeholder((64, 1024), "float32", name="X")
    k = te.reduce_axis((0, 1024), name="k")
    index, value = te.compute((64,), lambda i: argmax((k.var.astype(index_dtype), x[i, k]), axis=k), name="am")
    sch = Schedule(te.create_prim_func([x, index, value]))
    return sch, sch.get_sblock("am")


@pytest.mark.parametrize("make, dtype, threads", [
    (_reduce_sum, "bfloat16", 64),  # TVM shuffles float16, not bfloat16: a slot per thread
    (_reduce_sum, "float16", 64),
    (_argmax, "int32", 64),  # two values, both shuffled
    (_argmax, "int16", 64),  # an int16 index: neither value is shuffled
])
def test_the_all_reduce_scratch_follows_the_value_types(make, dtype, threads):
    sch, block = make(dtype)
    i, j = sch.get_loops(block)
    j0, _ = sch.split(j, [threads, None])
    sch.bind(i, "blockIdx.x")
    sch.bind(j0, "threadIdx.x")
    assert _gemm_row(sch, "h100")["shared_mem_bytes_per_block"] == _declared_shared_bytes(sch.mod, "h100")
