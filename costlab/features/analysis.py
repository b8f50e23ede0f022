"""``analysis``: costlab's own analysis of the scheduled TIR, one vector per candidate.

The scheduled ``main`` function is walked once (see ``_tir_walk``: init blocks,
unified thread bindings and virtual threads are counted as lowering makes them).
Counts are *dynamic* — over the whole program run, all threads together — and
values are raw (no log scaling). Units are in the names or below.

Arithmetic (operations over the whole run):
    ``flop_fadd`` float add/sub; ``flop_fmul`` float multiply; ``flop_ffma`` fused
    multiply-adds (``a*b+c``; each is 2 FLOP); ``flop_fdiv`` float div/mod;
    ``flop_fspecial`` exp/log/sqrt/rsqrt/tanh/... calls; ``flop_fcmp`` float
    min/max/compare/select; ``flops_total`` FLOP = fadd + fmul + 2·ffma + fdiv +
    fspecial + fcmp (2·M·N·K for a float GEMM, whatever the schedule; an integer GEMM's
    multiply-adds are ``int_arith_ops``, and its ``flops_total`` is 0);
    ``int_arith_ops`` integer ops in computed values; ``int_index_ops`` integer ops
    in address computation (index expressions with block bindings substituted, not
    simplified); ``other_ops`` casts, other calls, boolean ops.

Memory (bytes over the whole run; scopes: global, shared, local = registers):
    ``bytes_<scope>_loaded``, ``bytes_<scope>_stored``;
    ``footprint_bytes_L<d>`` (d < 12): unique bytes touched (all buffers, bounding
    box per buffer) while the loops at depth >= d run and the loops above stay at
    their first iteration — L0 is the whole program, L<d> one iteration of the d
    outermost loops; ``footprint_<scope>_bytes``: unique bytes of each scope (=L0);
    ``reuse_global_loads_per_byte``: global bytes loaded / global footprint;
    ``arith_intensity_flop_per_global_byte``: flops_total / global bytes moved;
    ``innermost_contiguous_frac`` (0..1): share of accessed bytes whose index
    stride along the innermost non-unit, non-thread loop is 0 or 1 element, and
    ``innermost_contiguous_global_frac`` the same for global memory;
    ``innermost_stride_global_elems_mean``: that stride (elements), byte-weighted;
    ``coalesced_global_frac`` (GPU, 0..1): share of global bytes whose stride
    along threadIdx.x is at most 1 element (at most the vector lanes when the
    access is vectorized).

Parallelism:
    ``parallel_extent`` (iterations: product of parallel loops, largest over
    statements), ``parallel_tasks_per_core`` (parallel_extent / target cores; CPU),
    ``num_parallel_loops``; ``vector_lanes`` (largest vectorized extent),
    ``vectorized_access_frac`` (0..1 of accessed bytes); ``unroll_max_step``
    (pragma_auto_unroll_max_step, iterations), ``unroll_explicit`` (0/1),
    ``unrolled_extent`` (copies TVM's UnrollLoop makes of a statement, largest over
    statements; 1 when nothing is unrolled; :func:`unroll_factors`); ``loop_depth_max``,
    ``num_loops``, ``num_blocks``, ``num_stores`` (counts); ``num_kernels`` (GPU:
    kernel launches; CPU: top-level loop nests); ``pipelined_loops`` (count).

GPU resources (0 on CPU; largest over kernels):
    ``grid_size`` (thread blocks), ``threads_per_block``, ``vthreads_per_block``,
    ``warps_per_block``, ``threads_total``; ``shared_mem_bytes_per_block`` (shared
    buffers at their compacted size, as ``CompactBufferAllocation`` sizes them, times
    the versions software pipelining keeps: one more than the most stages between a
    statement that writes the buffer and one that reads it; ``software_pipeline_order``
    is not read, so an order that lets TVM keep one version where two stages apart would
    need two counts two; local buffers are multiplied alike; plus the shared scratch of
    cross-thread reductions, :func:`allreduce_shared_bytes`; a buffer's ``storage_align``
    padding (``buffer_dim_align``) is not read, and dynamic shared buffers are added up
    although TVM's MergeSharedMemoryAllocations lets one reuse another's space: on six
    sampled fp16 tensor-core GEMM 128³ candidates for sm_80 this gave 6,144-40,960 bytes
    where the built kernels launch with 5,120-27,648 (an audit, 2026-12-07); static shared
    arrays matched TVM's CUDA source exactly);
    ``local_bytes_per_thread`` (bytes of local buffers per real thread, virtual
    threads included; a wmma/mma fragment or warp-scope buffer counts a 32nd, its lanes
    holding it together); ``registers_per_thread_est`` (32 + local bytes / 4, at most
    255 and at most what ``__launch_bounds__`` leaves a block of that size, 65536 over the
    threads rounded to warps: a crude estimate); ``occupancy_est`` (0..1: resident warps per SM over the
    maximum, from threads, shared memory and registers per block against the SM
    limits of the target's ``arch``); ``shared_mem_limit_frac`` and
    ``threads_limit_frac`` (per-block use over the target's per-block limits).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features
from costlab.features._ffi_fast import gc_paused
from costlab.features._intervals import range_matrices, rows_interval
from costlab.features._tir_walk import (
    FADD, FCMP, FDIV, FFMA, FMUL, FSPECIAL, GLOBAL, INT_ARITH, LOCAL, OTHER_OP, PARALLEL, SERIAL, SHARED,
    THREAD_BINDING, THREAD_IDX_X, UNROLLED, VECTORIZED, VTHREAD, main_func, walk,
)

NUM_LEVELS = 12

# Per-SM limits by CUDA arch: (max threads, max blocks, shared memory bytes, 32-bit registers).
SM_LIMITS = {
    "sm_70": (2048, 32, 98304, 65536),
    "sm_75": (1024, 16, 65536, 65536),
    "sm_80": (2048, 32, 167936, 65536),
    "sm_86": (1536, 16, 102400, 65536),
    "sm_87": (1536, 16, 167936, 65536),
    "sm_89": (1536, 24, 102400, 65536),
    "sm_90": (2048, 32, 233472, 65536),
}


def sm_limits(arch: str) -> tuple[int, int, int, int]:
    """The per-SM limits of ``arch`` (``sm_90a`` as ``sm_90``); an arch not in the table gets the
    nearest older one's (a newer GPU keeps at least the last known generation's limits), and an
    arch that does not parse, sm_80's."""
    digits = arch.removeprefix("sm_").rstrip("abf")
    if not digits.isdigit():
        return SM_LIMITS["sm_80"]
    known = sorted(int(k.removeprefix("sm_")) for k in SM_LIMITS)
    older = [k for k in known if k <= int(digits)]
    return SM_LIMITS[f"sm_{older[-1] if older else known[0]}"]

FEATURE_NAMES = [
    "flop_fadd", "flop_fmul", "flop_ffma", "flop_fdiv", "flop_fspecial", "flop_fcmp", "flops_total",
    "int_arith_ops", "int_index_ops", "other_ops",
    "bytes_global_loaded", "bytes_global_stored", "bytes_shared_loaded", "bytes_shared_stored",
    "bytes_local_loaded", "bytes_local_stored",
    *[f"footprint_bytes_L{d}" for d in range(NUM_LEVELS)],
    "footprint_global_bytes", "footprint_shared_bytes", "footprint_local_bytes",
    "reuse_global_loads_per_byte", "arith_intensity_flop_per_global_byte",
    "innermost_contiguous_frac", "innermost_contiguous_global_frac", "innermost_stride_global_elems_mean",
    "coalesced_global_frac",
    "parallel_extent", "parallel_tasks_per_core", "num_parallel_loops",
    "vector_lanes", "vectorized_access_frac",
    "unroll_max_step", "unroll_explicit", "unrolled_extent",
    "loop_depth_max", "num_loops", "num_blocks", "num_stores", "num_kernels", "pipelined_loops",
    "grid_size", "threads_per_block", "vthreads_per_block", "warps_per_block", "threads_total",
    "shared_mem_bytes_per_block", "local_bytes_per_thread", "registers_per_thread_est",
    "occupancy_est", "shared_mem_limit_frac", "threads_limit_frac",
]
_COL = {n: i for i, n in enumerate(FEATURE_NAMES)}
_C_FP = _COL["footprint_bytes_L0"]


class TargetInfo:
    """What the analysis needs from a target: GPU or not, cores, per-block and per-SM limits."""

    def __init__(self, target):
        keys = [str(k) for k in target.keys]
        attrs = target.attrs
        self.is_gpu = "gpu" in keys
        self.num_cores = int(attrs.get("num-cores", 0) or 0) if not self.is_gpu else 0
        self.max_threads_per_block = int(attrs.get("max_threads_per_block", 0)
                                         or attrs.get("max_num_threads", 0) or 1024)
        self.max_shared_per_block = int(attrs.get("max_shared_memory_per_block", 0) or 49152)
        self.warp = int(attrs.get("thread_warp_size", 0) or 32)
        self.sm = sm_limits(str(attrs.get("arch", "") or ""))


def occupancy(threads_per_block: int, shared_bytes: float, regs_per_thread: float, info: TargetInfo) -> float:
    """Resident warps per SM over the SM's maximum (0..1), from per-block use and the SM limits."""
    if threads_per_block <= 0 or threads_per_block > info.max_threads_per_block:
        return 0.0
    max_threads, max_blocks, smem_sm, regs_sm = info.sm
    warps = math.ceil(threads_per_block / info.warp)
    threads = warps * info.warp
    blocks = min(max_blocks, max_threads // threads)
    if shared_bytes > 0:
        blocks = min(blocks, int(smem_sm // shared_bytes))
    if regs_per_thread > 0:
        blocks = min(blocks, int(regs_sm // (regs_per_thread * threads)))
    return float(min(1.0, max(0, blocks) * threads / max_threads))


def _group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start positions of the runs of equal keys in a sorted array."""
    change = np.empty(sorted_keys.shape[0], dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    return np.flatnonzero(change)


def _threads_of_every_path(paths, loops) -> set:
    """The (kernel, thread tag) bindings on every one of PATHS: loops of one tag in one kernel
    are one hardware index even as siblings (UnifyThreadBinding makes them one variable), so a
    buffer touched under two sibling threadIdx loops is still touched by one thread at a time."""
    common = None
    for p in paths:
        tags = {(loops[k].kernel, loops[k].tag) for k in p
                if loops[k].kind == THREAD_BINDING and 0 <= loops[k].tag < VTHREAD}
        common = tags if common is None else common & tags
        if not common:
            return set()
    return common or set()


def _pipeline_versions(stores) -> dict:
    """``{(buffer, loop): versions}``: the versions of a buffer that software pipelining keeps
    (InjectSoftwarePipeline) under a pipelined loop: one more than the most stages between a
    statement that writes it and one that reads it. Absent: one version."""
    written: dict = defaultdict(list)
    read: dict = defaultdict(list)
    for st in stores:
        if st.stages and st.accesses:
            for loop, stage in st.stages:
                written[st.accesses[0].buffer, loop].append(stage)
                for a in st.accesses[1:]:
                    read[a.buffer, loop].append(stage)
    return {key: max(read[key]) - min(stages) + 1 for key, stages in written.items()
            if key in read and max(read[key]) > min(stages)}


def _common_prefix(paths) -> tuple:
    it = iter(paths)
    prefix = next(it)
    for p in it:
        n = 0
        for a, b in zip(prefix, p):
            if a != b:
                break
            n += 1
        prefix = prefix[:n]
        if not prefix:
            break
    return prefix


def analyse(prog, info: TargetInfo) -> np.ndarray:
    """The feature vector (FEATURE_NAMES order, float64) of one walked program."""
    row = np.zeros(len(FEATURE_NAMES), dtype=np.float64)
    loops, buffers, stores = prog.loops, prog.buffers, prog.stores

    # --- arithmetic and bytes moved -----------------------------------------------------
    ops = [0.0] * 8
    int_index = 0
    moved = np.zeros((3, 2), dtype=np.float64)  # scope x (loaded, stored)
    moved_l = [0.0] * 6
    for st in stores:
        c = st.count
        for j, v in enumerate(st.ops):
            if v:
                ops[j] += v * c
        int_index += st.int_index_ops * c
        for a in st.accesses:
            b = buffers[a.buffer]
            s = b.scope if b.scope <= LOCAL else GLOBAL
            moved_l[2 * s + (1 if a.is_write else 0)] += c * a.volume * a.share * b.dtype_bytes
    moved[:] = np.asarray(moved_l).reshape(3, 2)
    row[_COL["flop_fadd"]] = ops[FADD]
    row[_COL["flop_fmul"]] = ops[FMUL]
    row[_COL["flop_ffma"]] = ops[FFMA]
    row[_COL["flop_fdiv"]] = ops[FDIV]
    row[_COL["flop_fspecial"]] = ops[FSPECIAL]
    row[_COL["flop_fcmp"]] = ops[FCMP]
    flops = ops[FADD] + ops[FMUL] + 2 * ops[FFMA] + ops[FDIV] + ops[FSPECIAL] + ops[FCMP]
    row[_COL["flops_total"]] = flops
    row[_COL["int_arith_ops"]] = ops[INT_ARITH]
    row[_COL["int_index_ops"]] = int_index
    row[_COL["other_ops"]] = ops[OTHER_OP]
    row[_COL["bytes_global_loaded"]:_COL["bytes_local_stored"] + 1] = moved.reshape(-1)

    # --- per statement: loop kinds, the innermost loop and threadIdx.x -------------------------
    par_max = 1
    any_par = False
    store_inner, store_tx, store_vec = [], [], []
    for st in stores:
        inner = tx = -1
        par = vec_lanes = 1
        vectorized = False
        for k in st.loops:
            lp = loops[k]
            kind = lp.kind
            if kind == PARALLEL:
                par *= lp.extent
                any_par = True
            elif kind == VECTORIZED:
                vectorized = True
                vec_lanes = max(vec_lanes, lp.extent)
            if kind == THREAD_BINDING:
                if lp.tag == 3:
                    tx = lp.alias if lp.alias >= 0 else k
            elif lp.extent > 1 and not (st.skipped_loops >> k) & 1:  # an init runs in no reduction loop
                inner = k
        par_max = max(par_max, par)
        store_inner.append(inner)
        store_tx.append(tx)
        store_vec.append(vec_lanes if vectorized else 0)

    # --- footprints and strides: one interval pass over all columns ------------------------
    allocations = []
    if any(st.accesses for st in stores):
        allocations = _footprints_and_strides(row, prog, moved, flops, store_inner, store_tx, store_vec)
    _loop_and_gpu_features(row, prog, info, par_max if any_par else 0, allocations)
    return row


def _footprints_and_strides(row, prog, moved, flops, store_inner, store_tx, store_vec) -> list:
    """Footprint levels, per-scope footprints, reuse, intensity and contiguity columns of ``row``.

    Returns the allocations as ``(kernel, scope, bytes, per_warp)``: each allocated buffer at
    its compacted size (local buffers once per virtual thread; ``per_warp``: a fragment that
    the warp's lanes hold together).
    """
    loops, buffers, stores = prog.loops, prog.buffers, prog.stores
    n_loops = len(loops)
    # Region columns: NUM_LEVELS loop levels, then one per allocated buffer (its compacted
    # allocation); then a base column and one column per loop whose stride is needed.
    paths_of: dict[int, list] = {}
    for st in stores:
        for a in st.accesses:
            paths_of.setdefault(a.buffer, []).append(st.loops)
    alloc = [b for b in paths_of if not buffers[b].is_param]
    n_region = NUM_LEVELS + len(alloc)
    depth = np.fromiter((lp.depth for lp in loops), dtype=np.int64, count=n_loops)
    relax = np.zeros((n_loops, n_region), dtype=np.int64)
    relax[:, :NUM_LEVELS] = depth[:, None] >= np.arange(NUM_LEVELS)[None, :]
    alloc_prefix = {}
    for j, b in enumerate(alloc):
        prefix = _common_prefix(paths_of[b])
        alloc_prefix[b] = prefix
        col = relax[:, NUM_LEVELS + j]
        col[:] = 1
        shared = buffers[b].scope == SHARED
        for k in prefix:
            if not (shared and loops[k].tag >= 3):  # the threads of a block share it
                col[k] = 0
        if threads := _threads_of_every_path(paths_of[b], loops):
            for path in paths_of[b]:
                for k in path:
                    lp = loops[k]
                    if (lp.kind == THREAD_BINDING and (lp.kernel, lp.tag) in threads
                            and not (shared and lp.tag >= 3)):
                        col[k] = 0
    shifted = sorted({k for k in store_inner + store_tx if k >= 0})
    shift_col = {k: n_region + 1 + j for j, k in enumerate(shifted)}
    low, high = range_matrices(loops, relax, shifted)
    base_col = n_region

    # one row per (access, dimension)
    exprs, row_key, row_mult, row_shape, row_span = [], [], [], [], []
    acc_rows, acc_w, acc_inner, acc_tx, acc_vec, acc_global = [], [], [], [], [], []
    for s_i, st in enumerate(stores):
        for a in st.accesses:
            buf = buffers[a.buffer]
            shape = buf.shape
            ndim = min(len(shape), len(a.indices))
            acc_rows.append(len(exprs))
            acc_w.append(st.count * a.volume * a.share * buf.dtype_bytes)
            acc_inner.append(shift_col.get(store_inner[s_i], -1))
            acc_tx.append(shift_col.get(store_tx[s_i], -1))
            acc_vec.append(store_vec[s_i])
            acc_global.append(buf.scope == GLOBAL)
            mult = 1
            extents = a.extents
            for d in range(ndim - 1, -1, -1):
                exprs.append(a.indices[d])
                row_key.append(a.buffer * 64 + d)
                row_mult.append(mult)
                row_shape.append(shape[d])
                row_span.append(extents[d] - 1 if extents is not None else 0)
                mult *= shape[d]
            if ndim == 0:  # a scalar buffer: one row that never moves
                exprs.append(0)
                row_key.append(a.buffer * 64)
                row_mult.append(1)
                row_shape.append(1)
                row_span.append(0)
    lo_m, hi_m, known = rows_interval(exprs, low, high)
    if any(row_span):  # region accesses (opaque blocks) cover [start, start + extent - 1]
        hi_m += np.asarray(row_span, dtype=np.float64)[:, None]
    shape_r = np.asarray(row_shape, dtype=np.float64)
    if not known.all():  # unknown index: the whole dimension
        lo_m[~known] = 0
        hi_m[~known] = (shape_r[~known] - 1)[:, None]
    key = np.asarray(row_key, dtype=np.int64)

    # footprints: union box per (buffer, dim), clipped to the buffer, product over dims
    order = np.argsort(key, kind="stable")
    keys_sorted = key[order]
    starts = _group_starts(keys_sorted)
    g_lo = np.minimum.reduceat(lo_m[order, :n_region], starts, axis=0)
    g_hi = np.maximum.reduceat(hi_m[order, :n_region], starts, axis=0)
    g_shape = shape_r[order][starts][:, None]
    extent = np.maximum(np.minimum(g_hi, g_shape - 1) - np.maximum(g_lo, 0) + 1, 1)
    g_buffer = keys_sorted[starts] // 64
    b_starts = _group_starts(g_buffer)
    b_ids = g_buffer[b_starts]
    b_bytes = np.asarray([buffers[b].dtype_bytes for b in b_ids], dtype=np.float64)
    sizes = np.multiply.reduceat(extent, b_starts, axis=0) * b_bytes[:, None]
    fp = {int(b): sizes[i] for i, b in enumerate(b_ids)}
    b_scope = np.asarray([min(buffers[b].scope, LOCAL) if buffers[b].scope <= LOCAL else GLOBAL for b in b_ids])
    row[_C_FP:_C_FP + NUM_LEVELS] = sizes[:, :NUM_LEVELS].sum(axis=0)
    scope_fp = np.asarray([sizes[b_scope == s_, 0].sum() for s_ in (GLOBAL, SHARED, LOCAL)])
    row[_COL["footprint_global_bytes"]:_COL["footprint_local_bytes"] + 1] = scope_fp
    if scope_fp[GLOBAL] > 0:
        row[_COL["reuse_global_loads_per_byte"]] = moved[GLOBAL, 0] / scope_fp[GLOBAL]
    global_moved = moved[GLOBAL].sum()
    if global_moved > 0:
        row[_COL["arith_intensity_flop_per_global_byte"]] = flops / global_moved

    # strides: flattened index of each access, base column vs. the shifted columns
    mult_r = np.asarray(row_mult, dtype=np.float64)
    flat = np.add.reduceat(lo_m[:, base_col:] * (mult_r * known)[:, None], acc_rows, axis=0)
    flat = (flat - flat[:, :1]).tolist()
    w_all = w_contig = w_vec = w_glob = w_glob_contig = w_glob_stride = w_coal = w_coal_ok = 0.0
    for a_i, w in enumerate(acc_w):
        f = flat[a_i]
        inner = acc_inner[a_i]
        stride = abs(f[inner - base_col]) if inner >= 0 else 0.0
        contig = stride <= 1
        w_all += w
        if contig:
            w_contig += w
        vec = acc_vec[a_i]
        if vec:
            w_vec += w
        if acc_global[a_i]:
            w_glob += w
            if contig:
                w_glob_contig += w
            w_glob_stride += w * stride
            tx = acc_tx[a_i]
            if tx >= 0:
                w_coal += w
                if abs(f[tx - base_col]) <= max(vec, 1):
                    w_coal_ok += w
    if w_all > 0:
        row[_COL["innermost_contiguous_frac"]] = w_contig / w_all
        row[_COL["vectorized_access_frac"]] = w_vec / w_all
    if w_glob > 0:
        row[_COL["innermost_contiguous_global_frac"]] = w_glob_contig / w_glob
        row[_COL["innermost_stride_global_elems_mean"]] = w_glob_stride / w_glob
    if w_coal > 0:
        row[_COL["coalesced_global_frac"]] = w_coal_ok / w_coal

    allocations = []
    versions = _pipeline_versions(stores) if any(st.stages for st in stores) else {}
    for j, b in enumerate(alloc):
        prefix = alloc_prefix[b]
        first = prefix[0] if prefix else next((p[0] for p in paths_of[b] if p), -1)
        size = float(fp[b][NUM_LEVELS + j])
        scope = buffers[b].scope
        if scope == LOCAL:  # one copy per virtual thread, in one real thread
            for k in prefix:
                if loops[k].tag == VTHREAD and loops[k].alias < 0:
                    size *= loops[k].extent
        size *= max((versions.get((b, k), 1) for k in prefix), default=1)
        allocations.append((loops[first].kernel if first >= 0 else -1, scope, size, buffers[b].per_warp))
    return allocations


def allreduce_shared_bytes(threads: tuple, reduce_tags: tuple, values: list, info: TargetInfo) -> int:
    """Shared memory TVM's LowerThreadAllreduce declares for one reduction across threads
    (``threads``: the extents of the threadIdx.x, y, z loops around it; ``reduce_tags``: the
    threadIdx tags reduced over; ``values``: the BufferInfo of each value it reduces, two for an
    argmax). With warp shuffles (every value a 4- or 8-byte scalar or a float16, the reduced
    threads the lowest dimensions and dividing a warp, or whole warps in a block of at most
    warp² threads, or at most a warp with nothing else in the block): nothing within a warp,
    else a staging slot per warp and a result per group, for each value. Otherwise a slot per
    thread for each value. StorageRewrite's reuse of these buffers between reductions is not
    modelled, nor nvcc's alignment of each shared array to 64 bytes (ptxas reports up to 63
    bytes more per array)."""
    reduced = math.prod(threads[t - THREAD_IDX_X] for t in reduce_tags)
    group = math.prod(threads) // max(reduced, 1)
    if reduced <= 1:
        return 0
    lowest = tuple(range(THREAD_IDX_X, THREAD_IDX_X + len(reduce_tags)))
    contiguous = reduce_tags == lowest or all(
        threads[t - THREAD_IDX_X] == 1 for t in range(THREAD_IDX_X, max(reduce_tags)) if t not in reduce_tags)
    warp = info.warp
    value_bytes = sum(v.dtype_bytes for v in values)
    if all(_shuffled(v) for v in values) and contiguous and (
            warp % reduced == 0 or (info.max_threads_per_block <= warp * warp and reduced % warp == 0)
            or (group == 1 and reduced <= warp)):
        return 0 if reduced <= warp else (reduced // warp + 1) * group * value_bytes
    return reduced * group * value_bytes


def _shuffled(value) -> bool:
    """Whether TVM reduces a value of this type with warp shuffles: float16 (up to 2 lanes) and
    scalars of 4 or 8 bytes; not bfloat16, 1- or 2-byte integers, or other vectors."""
    if value.dtype.startswith("float16"):
        return value.dtype_bytes <= 4
    if "x" in value.dtype:  # a vector type, "int32x4"
        return False
    return 4 <= value.dtype_bytes <= 8


AUTO_UNROLL_MAX_DEPTH = 8  # TVM's UnrollLoop default: at most 8 nested loops unrolled


def unroll_factors(prog) -> list[int]:
    """Per store, how many copies of it TVM's UnrollLoop makes: the product of the extents of
    the loops it unrolls around the store (explicitly, or as loops marked unrolled).

    MetaSchedule unrolls by a loop's ``pragma_auto_unroll_max_step`` only. Following TVM's rule,
    bottom up: a serial loop is unrolled when every loop inside it is, at most 8 are, and its
    extent times the statements inside (unrolled ones counted as their copies) is at most the
    max step of the nearest pragma around it; a loop marked unrolled always is. Loops gone by
    then are transparent: thread-bound (kernel launch dimensions), vectorized (ramps) and
    extent-1 loops; a parallel loop is never unrolled. Calls (syncs, intrinsics) are not
    counted as statements, and LoopPartition is not modelled. On sampled CPU candidates this
    matches TVM's lowering (tests/features/test_analysis.py); on GPU ones it is a rough guide:
    the lowering adds statements first (virtual threads, cross-thread reductions, copies)."""
    loops, stores = prog.loops, prog.stores
    n = len(loops)
    steps, normal_depth, unroll_depth = [0] * n, [0] * n, [0] * n
    for st in stores:
        if st.loops:
            steps[st.loops[-1]] += 1
    max_step = [0] * n
    for k, lp in enumerate(loops):  # a parent comes before its loops
        inherited = max_step[lp.parent] if lp.parent >= 0 else 0
        max_step[k] = lp.auto_unroll if lp.auto_unroll > 0 else inherited
    unrolled = [False] * n
    for k in sorted(range(n), key=lambda k: -loops[k].depth):  # children first
        lp = loops[k]
        transparent = lp.kind in (THREAD_BINDING, VECTORIZED) or lp.extent == 1
        if lp.kind == UNROLLED:
            unrolled[k] = True
        elif lp.kind == SERIAL and not transparent:
            unrolled[k] = (normal_depth[k] == 0 and unroll_depth[k] <= AUTO_UNROLL_MAX_DEPTH
                           and lp.extent * steps[k] <= max_step[k])
        if lp.parent < 0:
            continue
        up = lp.parent
        if transparent:
            steps[up] += steps[k]
            normal_depth[up] = max(normal_depth[up], normal_depth[k])
            unroll_depth[up] = max(unroll_depth[up], unroll_depth[k])
        elif unrolled[k]:
            steps[up] += lp.extent * steps[k]
            normal_depth[up] = max(normal_depth[up], normal_depth[k])
            unroll_depth[up] = max(unroll_depth[up], unroll_depth[k] + 1)
        else:
            steps[up] += steps[k]
            normal_depth[up] = max(normal_depth[up], normal_depth[k] + 1)
            unroll_depth[up] = max(unroll_depth[up], unroll_depth[k])
    return [math.prod(loops[k].extent for k in st.loops if unrolled[k]) for st in stores]


def _loop_and_gpu_features(row, prog, info: TargetInfo, par_extent: int,
                           allocations: list) -> None:
    """Loop statistics and (on GPU) the per-kernel launch and resource columns of ``row``."""
    loops, stores = prog.loops, prog.stores
    n_loops = len(loops)

    # --- loop statistics -------------------------------------------------------------------
    row[_COL["parallel_extent"]] = par_extent
    if info.num_cores > 0:
        row[_COL["parallel_tasks_per_core"]] = par_extent / info.num_cores
    row[_COL["num_parallel_loops"]] = sum(1 for lp in loops if lp.kind == PARALLEL)
    row[_COL["vector_lanes"]] = max((lp.extent for lp in loops if lp.kind == VECTORIZED), default=0)
    row[_COL["unroll_max_step"]] = max((lp.auto_unroll for lp in loops), default=0)
    row[_COL["unroll_explicit"]] = max((lp.unroll_explicit for lp in loops), default=0)
    row[_COL["unrolled_extent"]] = max(unroll_factors(prog), default=1) if prog.stores else 0
    row[_COL["loop_depth_max"]] = max((len(st.loops) for st in stores), default=0)
    row[_COL["num_loops"]] = n_loops
    row[_COL["num_blocks"]] = len(prog.blocks)
    row[_COL["num_stores"]] = len(stores)
    row[_COL["pipelined_loops"]] = sum(lp.pipelined for lp in loops)

    # --- GPU kernels -------------------------------------------------------------------------
    if info.is_gpu:
        kernels: dict[int, list] = {}
        for lp in loops:
            if lp.kernel >= 0 and lp.tag >= 0 and lp.alias < 0:
                tags = kernels.setdefault(lp.kernel, [1] * 7)
                extent = lp.extent
                if lp.tag == VTHREAD:  # nested vthread loops multiply
                    up = lp.parent
                    while up >= 0:
                        extent *= loops[up].extent if loops[up].tag == VTHREAD else 1
                        up = loops[up].parent
                tags[lp.tag] = max(tags[lp.tag], extent)
        shared_of: dict[int, float] = {}
        local_of: dict[int, float] = {}
        for kernel, scope, size, per_warp in allocations:
            if scope == SHARED:
                shared_of[kernel] = shared_of.get(kernel, 0.0) + size
            elif scope == LOCAL:  # a warp-level fragment is spread over the warp's lanes
                local_of[kernel] = local_of.get(kernel, 0.0) + (size / info.warp if per_warp else size)
        reductions: dict[int, list] = {}  # block -> its values reduced across threads (an argmax has two)
        for st in stores:
            if st.allreduce_tags:
                reductions.setdefault(st.block, []).append(st)
        for values in reductions.values():
            first = values[0]
            kernel = next((loops[k].kernel for k in first.loops if loops[k].kernel >= 0), -1)
            if kernel in kernels:
                shared_of[kernel] = shared_of.get(kernel, 0.0) + allreduce_shared_bytes(
                    first.allreduce_threads, first.allreduce_tags,
                    [prog.buffers[st.accesses[0].buffer] for st in values], info)
        row[_COL["num_kernels"]] = len(kernels)
        best = np.zeros(11)
        for kid, tags in kernels.items():
            grid = tags[0] * tags[1] * tags[2]
            tpb = tags[3] * tags[4] * tags[5]
            vth = tags[6]
            smem = shared_of.get(kid, 0.0)
            local = local_of.get(kid, 0.0)
            # TVM emits __launch_bounds__(threads per block): nvcc then keeps a thread's registers
            # within what one block of that size may hold on an SM (it spills beyond)
            rounded = math.ceil(tpb / info.warp) * info.warp
            regs = min(255.0, 32.0 + local / 4.0, info.sm[3] // rounded if rounded else 255.0)
            vals = [grid, tpb, vth, math.ceil(tpb / info.warp), grid * tpb, smem, local, regs,
                    occupancy(tpb, smem, regs, info), smem / info.max_shared_per_block,
                    tpb / info.max_threads_per_block]
            best = np.maximum(best, vals)
        row[_COL["grid_size"]:_COL["threads_limit_frac"] + 1] = best
    else:
        row[_COL["num_kernels"]] = sum(1 for lp in loops if lp.depth == 0)


@EXTRACTORS.register("analysis")
class AnalysisFeatures(FeatureExtractor):
    """costlab's static analysis of the scheduled TIR (see the module docstring for units)."""

    name = "analysis"
    version = 1
    cache_revision = 9  # 2026-12-06: if_then_else branch loads in their share; an init's stride along its own loops
    kind = "dense"

    @property
    def feature_names(self) -> list[str]:
        return list(FEATURE_NAMES)

    def extract(self, context, candidates) -> Features:
        info = TargetInfo(context.target)
        out = np.zeros((len(candidates), len(FEATURE_NAMES)), dtype=np.float32)
        buffers: dict = {}  # the candidates share the workload's parameter buffers
        with gc_paused():
            for i, cand in enumerate(candidates):
                out[i] = analyse(walk(main_func(cand.sch.mod), info.is_gpu, buffers), info)
        return Features(self.schema, dense=out)
