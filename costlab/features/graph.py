"""``graph``: the scheduled TIR as a typed graph per candidate, for GNN cost models.

Nodes (one row each; a one-hot ``type_*`` says which kind):

- ``loop``: every ``For`` — kind, extent, thread tag, unroll/pipeline annotations;
- ``block``: every ``SBlock`` except the implicit root — spatial/reduce iteration
  variables, whether it has an init statement;
- ``store``: every ``BufferStore`` — operations per execution, index arithmetic,
  dynamic executions, the bytes it writes;
- ``load``: every buffer read inside a store's value — bytes read, index stride;
- ``buffer``: every buffer (parameters and allocations) — scope, dtype, shape.

Edges (``edge_type``): 0 = nest (loop → inner loop, loop → block, block → inner
block, block → its outermost inner loops, block → its stores); 1 = read (buffer →
load, load → the store that uses it); 2 = write (store → buffer). Edges point from
outer to inner and along the data flow; a model may add the reverse direction itself
(the GNN does, with ``edge_directions="both"``).

Node features are numeric and normalized: counts, extents and bytes as
``log2(1 + x)`` (names end in ``_log2p1``), flags and one-hots as 0/1. Columns that
do not apply to a node kind are 0. ``feature_names`` lists the node-feature
columns; ``Features.graphs.batch`` maps each node to its candidate.
"""

from __future__ import annotations

import math

import numpy as np

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features, GraphBatch
from costlab.features._ffi_fast import gc_paused
from costlab.features._intervals import OpaqueTerms, stride
from costlab.features._tir_walk import OP_NAMES, THREAD_BINDING, THREAD_TAGS, main_func, walk

NODE_TYPES = ("loop", "block", "store", "load", "buffer")
EDGE_TYPES = ("nest", "read", "write")
NEST, READ, WRITE = 0, 1, 2
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")
SCOPES = ("global", "shared", "local", "other")

NODE_FEATURE_NAMES = [
    *[f"type_{t}" for t in NODE_TYPES],
    "depth_log2p1", "exec_count_log2p1",
    "loop_extent_log2p1", *[f"loop_kind_{k}" for k in LOOP_KINDS], *[f"loop_thread_{t}" for t in THREAD_TAGS],
    "loop_auto_unroll_log2p1", "loop_unroll_explicit", "loop_pipelined", "loop_same_thread_as_outer",
    "block_n_spatial_log2p1", "block_n_reduce_log2p1", "block_has_init",
    *[f"store_{op}_per_exec_log2p1" for op in OP_NAMES], "store_index_ops_per_exec_log2p1", "store_is_init",
    "access_bytes_log2p1", "access_inner_stride_elems_log2p1", "access_inner_contiguous",
    *[f"buffer_scope_{s}" for s in SCOPES], "buffer_dtype_bytes_log2p1", "buffer_numel_log2p1",
    "buffer_ndim", "buffer_is_param",
]
_COL = {n: i for i, n in enumerate(NODE_FEATURE_NAMES)}
_N_FEATURES = len(NODE_FEATURE_NAMES)
_C_TYPE = _COL["type_loop"]
_C_KIND = _COL["loop_kind_serial"]
_C_TAG = _COL[f"loop_thread_{THREAD_TAGS[0]}"]
_C_OPS = _COL[f"store_{OP_NAMES[0]}_per_exec_log2p1"]
_C_SCOPE = _COL["buffer_scope_global"]


def _lg(x) -> float:
    return math.log2(1.0 + abs(x))


_C_DEPTH = _COL["depth_log2p1"]
_C_EXEC = _COL["exec_count_log2p1"]
_C_EXTENT = _COL["loop_extent_log2p1"]
_C_UNROLL = _COL["loop_auto_unroll_log2p1"]
_C_UNROLL_EXPLICIT = _COL["loop_unroll_explicit"]
_C_PIPELINED = _COL["loop_pipelined"]
_C_ALIAS = _COL["loop_same_thread_as_outer"]
_C_SPATIAL = _COL["block_n_spatial_log2p1"]
_C_REDUCE = _COL["block_n_reduce_log2p1"]
_C_INIT_BLOCK = _COL["block_has_init"]
_C_INDEX_OPS = _COL["store_index_ops_per_exec_log2p1"]
_C_IS_INIT = _COL["store_is_init"]
_C_BYTES = _COL["access_bytes_log2p1"]
_C_STRIDE = _COL["access_inner_stride_elems_log2p1"]
_C_CONTIG = _COL["access_inner_contiguous"]
_C_DTYPE = _COL["buffer_dtype_bytes_log2p1"]
_C_NUMEL = _COL["buffer_numel_log2p1"]
_C_NDIM = _COL["buffer_ndim"]
_C_PARAM = _COL["buffer_is_param"]


def _inner_strides(prog) -> list:
    """Per store, per access: the flattened index stride (elements) along the store's innermost loop
    (an init's: the innermost it runs in, not a reduction loop)."""
    loops, stores, buffers = prog.loops, prog.stores, prog.buffers
    lo = [lp.lo for lp in loops]
    memo: dict = {}
    opaque = OpaqueTerms()
    out = []
    for st in stores:
        inner = -1
        for k in st.loops:
            lp = loops[k]
            if lp.kind != THREAD_BINDING and lp.extent > 1 and not (st.skipped_loops >> k) & 1:
                inner = k
        strides = []
        for a in st.accesses:
            total = 0
            if inner >= 0:
                shape = buffers[a.buffer].shape
                mult = 1
                for d in range(min(len(a.indices), len(shape)) - 1, -1, -1):
                    total += stride(a.indices[d], lo, inner, memo, opaque) * mult
                    mult *= shape[d]
            strides.append(total)
        out.append(strides)
    return out


def _split_off_inits(prog) -> list[bool]:
    """Per block: it is a reduction's init that DecomposeReduction moved into a block of its own
    (named ``<name>_init``, reading nothing), and a reduction block writes every buffer it stores to."""
    blocks, stores = prog.blocks, prog.stores
    reduced = {st.accesses[0].buffer for st in stores
               if st.block >= 0 and blocks[st.block].n_reduce > 0 and st.accesses}
    return [blk.decomposed_init and bool(blk.stores)
            and all(stores[s].accesses and stores[s].accesses[0].buffer in reduced for s in blk.stores)
            for blk in blocks]


def program_graph(prog):
    """``(node_features [n, d] float32, edge_index [2, e] int64, edge_type [e] int64)`` of one program."""
    loops, blocks, stores, buffers = prog.loops, prog.blocks, prog.stores, prog.buffers
    n_loads = sum(len(st.accesses) - 1 for st in stores)
    src: list[int] = []
    dst: list[int] = []
    etype: list[int] = []
    loop0 = 0
    block0 = loop0 + len(loops)
    store0 = block0 + len(blocks)
    load0 = store0 + len(stores)
    buffer0 = load0 + n_loads
    zero = [0.0] * _N_FEATURES
    loop_rows, block_rows, store_rows, load_rows, buffer_rows = [], [], [], [], []
    split_off_init = _split_off_inits(prog)

    # loops: executions of a loop's body = product of extents down to it, but for the reduction
    # loops above an init, which it does not run in (as the walker counts an init's stores)
    execs = [1] * len(loops)

    def skipped(mask: int) -> int:
        div, k = 1, 0
        while mask:
            if mask & 1 and loops[k].alias < 0:
                div *= loops[k].extent
            mask >>= 1
            k += 1
        return div

    for k, lp in enumerate(loops):
        parent_exec = execs[lp.parent] if lp.parent >= 0 else 1
        execs[k] = parent_exec * (1 if lp.alias >= 0 else lp.extent)
        row = zero[:]
        row[_C_TYPE] = 1.0
        row[_C_DEPTH] = _lg(lp.depth)
        row[_C_EXEC] = _lg(execs[k] // skipped(lp.skipped_loops))
        row[_C_EXTENT] = _lg(lp.extent)
        row[_C_KIND + lp.kind] = 1.0
        if lp.kind == THREAD_BINDING and lp.tag >= 0:
            row[_C_TAG + lp.tag] = 1.0
        row[_C_UNROLL] = _lg(lp.auto_unroll)
        row[_C_UNROLL_EXPLICIT] = 1.0 if lp.unroll_explicit else 0.0
        row[_C_PIPELINED] = float(lp.pipelined)
        row[_C_ALIAS] = 1.0 if lp.alias >= 0 else 0.0
        loop_rows.append(row)
        if lp.block >= 0 and (lp.parent < 0 or lp.parent in blocks[lp.block].loops):
            src.append(block0 + lp.block)  # nearest scope: a block (blockized, tensorized)
        elif lp.parent >= 0:
            src.append(loop0 + lp.parent)
        else:
            continue
        dst.append(loop0 + k)
        etype.append(NEST)
    for b, blk in enumerate(blocks):
        row = zero[:]
        row[_C_TYPE + 1] = 1.0
        row[_C_DEPTH] = _lg(len(blk.loops))
        row[_C_EXEC] = _lg((execs[blk.parent_loop] if blk.parent_loop >= 0 else 1) // skipped(blk.skipped_loops))
        row[_C_SPATIAL] = _lg(blk.n_spatial)
        row[_C_REDUCE] = _lg(blk.n_reduce)
        row[_C_INIT_BLOCK] = 1.0 if blk.has_init or split_off_init[b] else 0.0
        block_rows.append(row)
        inner_block_parent = blk.parent_block >= 0 and (
            blk.parent_loop < 0 or blk.parent_loop in blocks[blk.parent_block].loops)
        if inner_block_parent:
            src.append(block0 + blk.parent_block)
        elif blk.parent_loop >= 0:
            src.append(loop0 + blk.parent_loop)
        else:
            continue
        dst.append(block0 + b)
        etype.append(NEST)
    for buf in buffers:
        row = zero[:]
        row[_C_TYPE + 4] = 1.0
        row[_C_SCOPE + min(buf.scope, 3)] = 1.0
        row[_C_DTYPE] = _lg(buf.dtype_bytes)
        row[_C_NUMEL] = _lg(buf.numel)
        row[_C_NDIM] = float(len(buf.shape))
        row[_C_PARAM] = 1.0 if buf.is_param else 0.0
        buffer_rows.append(row)
    strides = _inner_strides(prog)
    load = load0
    for s, st in enumerate(stores):
        node = store0 + s
        row = zero[:]
        row[_C_TYPE + 2] = 1.0
        depth = _lg(len(st.loops))
        count = _lg(st.count)
        row[_C_DEPTH] = depth
        row[_C_EXEC] = count
        for j, v in enumerate(st.ops):
            if v:
                row[_C_OPS + j] = _lg(v)
        row[_C_INDEX_OPS] = _lg(st.int_index_ops)
        row[_C_IS_INIT] = 1.0 if st.is_init or (st.block >= 0 and split_off_init[st.block]) else 0.0
        store_rows.append(row)
        if st.block >= 0:
            src.append(block0 + st.block)
        elif st.loops:
            src.append(loop0 + st.loops[-1])
        if st.block >= 0 or st.loops:
            dst.append(node)
            etype.append(NEST)
        for a_i, a in enumerate(st.accesses):
            buf = buffers[a.buffer]
            if a_i == 0:
                arow = row
                src.append(node)
                dst.append(buffer0 + a.buffer)
                etype.append(WRITE)
            else:
                arow = zero[:]
                arow[_C_TYPE + 3] = 1.0
                arow[_C_DEPTH] = depth
                arow[_C_EXEC] = count
                load_rows.append(arow)
                src += [buffer0 + a.buffer, load]
                dst += [load, node]
                etype += [READ, READ]
                load += 1
            stride = strides[s][a_i]
            arow[_C_BYTES] = _lg(st.count * a.volume * a.share * buf.dtype_bytes)
            arow[_C_STRIDE] = _lg(stride)
            arow[_C_CONTIG] = 1.0 if abs(stride) <= 1 else 0.0
    x = np.asarray(loop_rows + block_rows + store_rows + load_rows + buffer_rows, dtype=np.float32)
    x = x.reshape(-1, _N_FEATURES)
    edge_index = np.asarray([src, dst], dtype=np.int64).reshape(2, -1)
    return x, edge_index, np.asarray(etype, dtype=np.int64)


@EXTRACTORS.register("graph")
class GraphFeatures(FeatureExtractor):
    """Scheduled TIR as a graph batch (see the module docstring)."""

    name = "graph"
    version = 1
    kind = "graph"
    cache_revision = 8  # 2026-12-06: if_then_else loads in their share; an init's stride and counts without reduction loops

    @property
    def feature_names(self) -> list[str]:
        return list(NODE_FEATURE_NAMES)

    def extract(self, context, candidates) -> Features:
        is_gpu = "gpu" in [str(k) for k in context.target.keys]
        xs, eis, ets, batch = [], [], [], []
        offset = 0
        buffers: dict = {}  # the candidates share the workload's parameter buffers
        with gc_paused():
            for i, cand in enumerate(candidates):
                x, ei, et = program_graph(walk(main_func(cand.sch.mod), is_gpu, buffers))
                xs.append(x)
                eis.append(ei + offset)
                ets.append(et)
                batch.append(np.full(x.shape[0], i, dtype=np.int64))
                offset += x.shape[0]
        if not candidates:
            graphs = GraphBatch(np.zeros((0, _N_FEATURES), np.float32), np.zeros((2, 0), np.int64),
                                np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
        else:
            graphs = GraphBatch(
                node_features=np.concatenate(xs, axis=0),
                edge_index=np.concatenate(eis, axis=1),
                edge_type=np.concatenate(ets),
                batch=np.concatenate(batch),
                num_graphs=len(candidates),
            )
        return Features(self.schema, graphs=graphs)
