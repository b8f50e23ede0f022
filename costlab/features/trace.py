"""``trace``: features of the schedule trace itself (TLP-like), without looking at the TIR.

The trace is the program of schedule primitives that MetaSchedule ran, with its
random decisions; postprocessing instructions (after ``EnterPostproc``) count too.
All values are raw numbers in the unit named below (no log scaling):

- ``n_insts``, ``n_insts_postproc``, ``n_decisions``: instructions (count).
- ``count_<Kind>``: instructions of each primitive kind (count); ``count_other``
  for kinds not in :data:`INSTRUCTION_KINDS`.
- ``tile<i>_factor<j>``: the factors (iterations) sampled by the i-th
  ``SamplePerfectTile``/``SamplePartitionedTile`` in trace order, outermost first,
  padded with 1 so that they always multiply to the loop's extent;
  ``tile<i>_levels`` (count; 0 = no such instruction).
- ``cat<i>_value``: the value chosen by the i-th ``SampleCategorical`` (e.g. an
  unroll step in iterations or a fetch vector length in elements), and
  ``cat<i>_choice_frac``: the chosen index / (number of choices - 1).
- ``compute_loc<i>``: the loop index chosen by the i-th ``SampleComputeLocation``
  (-1 = root, -2 = inline; 0 when absent).
- ``cache_read_<scope>``, ``cache_write_<scope>``: cache stages (count) per storage
  scope (global, shared, local = registers incl. warp/wmma, other).
- ``ann_parallel_max_extent`` (iterations), ``ann_vectorize_max_lanes`` (lanes),
  ``ann_unroll_max_step`` (iterations; from ``meta_schedule.unroll_*`` or
  ``pragma_auto_unroll_max_step``), ``ann_unroll_explicit`` (0/1),
  ``ann_cooperative_fetch_lanes_max`` (elements), ``ann_software_pipeline`` (0/1).
  These are the values of the annotations the trace holds. On CPU, MetaSchedule's
  ``meta_schedule.parallel`` and ``meta_schedule.vectorize`` annotations are the limits
  its postprocessing works within (jobs per core times cores, the widest vector allowed),
  not the extents it chose, and ``unroll_explicit`` is set whatever step was sampled:
  the chosen parallel extent and vector width are in the ``analysis`` extractor's
  ``parallel_extent`` and ``vector_lanes``, the sampled unroll step in ``cat<i>_value``.
- ``bind_<tag>_count`` (loops bound to that thread tag) and ``bind_<tag>_extent``
  (threads; the largest extent of a bound loop, tracked through Split/Fuse and the
  tile decisions; 0 when the trace alone does not tell).

With ``sequence_length > 0`` (constructor argument; registered as ``trace_seq``
with 64 steps), a padded per-step sequence follows the summary, flattened step by
step: ``step<t>_is_<Kind>`` (one-hot over :data:`INSTRUCTION_KINDS` + other) and
``step<t>_arg<k>`` (k < 6), the step's numeric arguments:

- SamplePerfectTile/SamplePartitionedTile: the factors (iterations)
- SampleCategorical: value, chosen index, number of choices
- SampleComputeLocation: chosen loop index
- Split: number of parts, then the factors known from the trace (0 = unknown)
- Fuse: number of loops fused, extent (iterations, 0 = unknown)
- Bind: thread-tag code (1-based position in :data:`THREAD_TAGS`), extent
- CacheRead/CacheWrite: buffer index, scope code (1 global, 2 shared, 3 local, 4 other)
- Annotate/Unannotate: annotation-key code (1-based in :data:`ANNOTATION_KEYS`, 0 other), value
- ComputeAt/ReverseComputeAt: preserve_unit_loops, index
- Parallel/Vectorize/Unroll: extent (iterations, 0 = unknown)

Steps beyond the trace are all zeros; longer traces are truncated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tvm.s_tir.schedule._ffi_api import TraceGetDecision as _get_decision

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features
from costlab.features._ffi_fast import at, gc_paused, items

INSTRUCTION_KINDS = (
    "AddUnitLoop", "Annotate", "AnnotateBufferAccess", "Bind", "Blockize", "CacheIndex",
    "CacheInplace", "CacheRead", "CacheWrite", "ComputeAt", "ComputeInline",
    "DecomposePadding", "DecomposeReduction", "EnterPostproc", "Fuse", "FuseReductionEpilogue",
    "GetChildBlocks", "GetConsumers", "GetLoops", "GetOutputBlocks", "GetProducers", "GetSBlock",
    "LoopPartition", "Merge", "PadEinsum", "Parallel", "RFactor", "ReIndex", "ReadAt",
    "ReindexCacheRead", "ReindexCacheWrite", "Reorder", "ReorderBlockIterVar", "ReverseComputeAt",
    "ReverseComputeInline", "RollingBuffer", "SampleCategorical", "SampleComputeLocation",
    "SamplePartitionedTile", "SamplePerfectTile", "SetScope", "Split", "StorageAlign", "Tensorize",
    "TransformBlockLayout", "TransformLayout", "Unannotate", "Unroll", "UnsafeHideBufferAccess",
    "UnsafeSetDType", "Vectorize", "WriteAt",
)
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread")
ANNOTATION_KEYS = (
    "meta_schedule.parallel", "meta_schedule.vectorize", "meta_schedule.unroll_explicit",
    "meta_schedule.unroll_implicit", "pragma_auto_unroll_max_step", "pragma_unroll_explicit",
    "meta_schedule.cooperative_fetch", "software_pipeline_stage", "software_pipeline_order",
    "software_pipeline_async_stages", "meta_schedule.tiling_structure",
    "meta_schedule.thread_extent_low_inclusive", "meta_schedule.thread_extent_high_inclusive",
    "meta_schedule.auto_tensorize", "meta_schedule.layout_rewrite_preproc",
)
SCOPES = ("global", "shared", "local", "other")
MAX_TILES = 10
MAX_TILE_LEVELS = 5
MAX_CATEGORICAL = 6
MAX_COMPUTE_LOC = 4
N_STEP_ARGS = 6

_KIND_INDEX = {k: i for i, k in enumerate(INSTRUCTION_KINDS)}
_N_KINDS = len(INSTRUCTION_KINDS) + 1  # + other
_TAG_INDEX = {t: i for i, t in enumerate(THREAD_TAGS)}
_ANN_INDEX = {k: i for i, k in enumerate(ANNOTATION_KEYS)}
_KIND_INDEX_BY_HANDLE: dict[int, int] = {}


def scope_code(scope: str) -> int:
    """0 global, 1 shared, 2 local (registers, warp, wmma fragments), 3 other."""
    if scope == "global" or scope.startswith("global."):
        return 0
    if scope.startswith("shared"):
        return 1
    if scope.startswith("local") or scope.startswith("warp") or scope.startswith("wmma") or scope.startswith("m16n8k8"):
        return 2
    return 3


def _tag_index(tag: str) -> int:
    return 6 if tag.startswith("vthread") else _TAG_INDEX.get(tag, -1)


def _summary_names() -> list[str]:
    names = ["n_insts", "n_insts_postproc", "n_decisions"]
    names += [f"count_{k}" for k in INSTRUCTION_KINDS] + ["count_other"]
    for i in range(MAX_TILES):
        names += [f"tile{i}_factor{j}" for j in range(MAX_TILE_LEVELS)] + [f"tile{i}_levels"]
    for i in range(MAX_CATEGORICAL):
        names += [f"cat{i}_value", f"cat{i}_choice_frac"]
    names += [f"compute_loc{i}" for i in range(MAX_COMPUTE_LOC)]
    names += [f"cache_read_{s}" for s in SCOPES] + [f"cache_write_{s}" for s in SCOPES]
    names += ["ann_parallel_max_extent", "ann_vectorize_max_lanes", "ann_unroll_max_step",
              "ann_unroll_explicit", "ann_cooperative_fetch_lanes_max", "ann_software_pipeline"]
    for t in THREAD_TAGS:
        names += [f"bind_{t}_count", f"bind_{t}_extent"]
    return names


SUMMARY_NAMES = _summary_names()
_COL = {n: i for i, n in enumerate(SUMMARY_NAMES)}
_C_COUNT = _COL["count_AddUnitLoop"]
_C_TILE = _COL["tile0_factor0"]
_C_CAT = _COL["cat0_value"]
_C_CLOC = _COL["compute_loc0"]
_C_CREAD = _COL["cache_read_global"]
_C_CWRITE = _COL["cache_write_global"]
_C_BIND = _COL[f"bind_{THREAD_TAGS[0]}_count"]
_TILE_STRIDE = MAX_TILE_LEVELS + 1


def _int(x) -> int:
    try:
        return int(x)
    except (TypeError, ValueError):
        return int(x.value)


def _kind_index(inst) -> int:
    kind = inst.kind
    key = hash(kind)
    k = _KIND_INDEX_BY_HANDLE.get(key)
    if k is None:
        k = _KIND_INDEX_BY_HANDLE[key] = _KIND_INDEX.get(str(kind.name), _N_KINDS - 1)
    return k


@dataclass
class _Steps:
    kinds: list = field(default_factory=list)  # kind index per step
    args: list = field(default_factory=list)  # list of up to N_STEP_ARGS floats per step


# Kind indices that need more than a count.
_K = {name: _KIND_INDEX[name] for name in (
    "SamplePerfectTile", "SamplePartitionedTile", "SampleCategorical", "SampleComputeLocation", "Split",
    "Fuse", "Bind", "CacheRead", "CacheWrite", "ReindexCacheRead", "ReindexCacheWrite", "Annotate",
    "Unannotate", "ComputeAt", "ReverseComputeAt", "Parallel", "Vectorize", "Unroll", "EnterPostproc")}
_K_TILE = {_K["SamplePerfectTile"], _K["SamplePartitionedTile"]}
_K_CACHE = {_K["CacheRead"]: True, _K["ReindexCacheRead"]: True, _K["CacheWrite"]: False,
            _K["ReindexCacheWrite"]: False}
_K_AT = {_K["ComputeAt"], _K["ReverseComputeAt"]}
_K_LOOPKIND = {_K["Parallel"], _K["Vectorize"], _K["Unroll"]}
_INTERESTING = set(_K.values())


def _rv_int(x, rv_value: dict) -> int:
    """The value of a split factor / annotation value: int, IntImm or a sampled ExprRV (0 = unknown)."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    v = rv_value.get(hash(x))
    if v is not None:
        return v
    try:
        return int(x.value)
    except (AttributeError, TypeError, ValueError):
        return 0


def _parse(trace, steps: _Steps | None) -> list:
    """The summary vector of one trace (a list in SUMMARY_NAMES order); fills ``steps`` when given.

    Only sampling instructions carry decisions, so they are looked up per instruction.
    """
    row = [0.0] * len(SUMMARY_NAMES)
    rv_value: dict[int, int] = {}  # ExprRV handle -> sampled value
    loop_extent: dict[int, int] = {}  # LoopRV handle -> extent, where the trace tells it
    n_tiles = n_cat = n_cloc = 0
    n_post = -1
    insts = items(trace.insts)
    kinds = [_kind_index(inst) for inst in insts]
    for k in kinds:
        row[_C_COUNT + k] += 1
    n_decisions = 0
    for inst, k in zip(insts, kinds):
        if n_post >= 0:
            n_post += 1
        if k not in _INTERESTING:
            if steps is not None:
                steps.kinds.append(k)
                steps.args.append(())
            continue
        args: list = []
        if k in _K_TILE:
            dec = _get_decision(trace, inst)
            factors = [] if dec is None else [_int(x) for x in items(dec)]
            n_decisions += dec is not None
            for var, f in zip(items(inst.outputs), factors):
                rv_value[hash(var)] = f
            if factors:
                extent = 1
                for f in factors:
                    extent *= f
                loop_extent[hash(at(inst.inputs, 0))] = extent
            if n_tiles < MAX_TILES:
                base = _C_TILE + n_tiles * _TILE_STRIDE
                fs = factors[:MAX_TILE_LEVELS]
                if len(factors) > MAX_TILE_LEVELS:  # fold the inner surplus into the last slot
                    fs[-1] = int(np.prod(factors[MAX_TILE_LEVELS - 1:]))
                fs = fs + [1] * (MAX_TILE_LEVELS - len(fs))
                row[base:base + MAX_TILE_LEVELS] = fs
                row[base + MAX_TILE_LEVELS] = len(factors)
            n_tiles += 1
            args = factors
        elif k == _K["Split"]:
            ins = items(inst.inputs)
            parent = loop_extent.get(hash(ins[0]), 0)
            factors = [_rv_int(x, rv_value) for x in ins[1:]]
            if 0 in factors and parent and factors.count(0) == 1:
                known = 1
                for f in factors:
                    known *= f or 1
                factors[factors.index(0)] = -(-parent // known)
            for out, f in zip(items(inst.outputs), factors):
                if f:
                    loop_extent[hash(out)] = f
            args = [len(factors)] + factors
        elif k == _K["Fuse"]:
            ext = 1
            ins = items(inst.inputs)
            for x in ins:
                ext *= loop_extent.get(hash(x), 0)
            if ext:
                loop_extent[hash(at(inst.outputs, 0))] = ext
            args = [len(ins), ext]
        elif k == _K["Bind"]:
            t = _tag_index(str(at(inst.attrs, 0)))
            ext = loop_extent.get(hash(at(inst.inputs, 0)), 0)
            if t >= 0:
                row[_C_BIND + 2 * t] += 1
                if ext > row[_C_BIND + 2 * t + 1]:
                    row[_C_BIND + 2 * t + 1] = ext
            args = [t + 1, ext]
        elif k == _K["Annotate"] or k == _K["Unannotate"]:
            key = str(at(inst.attrs, 0))
            value = 0
            if k == _K["Annotate"]:
                raw = at(inst.inputs, 1)
                if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                    value = raw
                elif isinstance(raw, str):
                    value = 0
                elif key.startswith("software_pipeline"):
                    value = len(raw)
                else:
                    value = _rv_int(raw, rv_value)
                _annotation(row, key, value)
            args = [_ANN_INDEX.get(key, -1) + 1, value]
        elif k == _K["SampleCategorical"]:
            dec = _get_decision(trace, inst)
            n_decisions += dec is not None
            choices = at(inst.attrs, 0)
            n_choices = len(choices)
            if dec is not None:
                d = _int(dec)
                value = _int(at(choices, d))
                rv_value[hash(at(inst.outputs, 0))] = value
                if n_cat < MAX_CATEGORICAL:
                    row[_C_CAT + 2 * n_cat] = value
                    row[_C_CAT + 2 * n_cat + 1] = d / (n_choices - 1) if n_choices > 1 else 0.0
                args = [value, d, n_choices]
            n_cat += 1
        elif k in _K_CACHE:
            attrs = items(inst.attrs)
            sc = scope_code(str(attrs[1]))
            row[(_C_CREAD if _K_CACHE[k] else _C_CWRITE) + sc] += 1
            args = [_int(attrs[0]), sc + 1]
        elif k == _K["SampleComputeLocation"]:
            dec = _get_decision(trace, inst)
            n_decisions += dec is not None
            d = _int(dec) if dec is not None else 0
            if n_cloc < MAX_COMPUTE_LOC:
                row[_C_CLOC + n_cloc] = d
            n_cloc += 1
            args = [d]
        elif k in _K_AT:
            attrs = items(inst.attrs)
            args = [_int(attrs[0]), _int(attrs[1])]
        elif k in _K_LOOPKIND:
            args = [loop_extent.get(hash(at(inst.inputs, 0)), 0)]
        elif k == _K["EnterPostproc"]:
            n_post = 0
        if steps is not None:
            steps.kinds.append(k)
            steps.args.append(args[:N_STEP_ARGS])
    row[_COL["n_insts"]] = len(insts)
    row[_COL["n_insts_postproc"]] = max(n_post, 0)
    row[_COL["n_decisions"]] = n_decisions
    return row


_C_PAR = _COL["ann_parallel_max_extent"]
_C_VEC = _COL["ann_vectorize_max_lanes"]
_C_UNROLL = _COL["ann_unroll_max_step"]
_C_UNROLL_EXPLICIT = _COL["ann_unroll_explicit"]
_C_FETCH = _COL["ann_cooperative_fetch_lanes_max"]
_C_PIPE = _COL["ann_software_pipeline"]
_MAX_KEYS = {"meta_schedule.parallel": _C_PAR, "meta_schedule.vectorize": _C_VEC,
             "meta_schedule.unroll_explicit": _C_UNROLL, "meta_schedule.unroll_implicit": _C_UNROLL,
             "pragma_auto_unroll_max_step": _C_UNROLL, "meta_schedule.cooperative_fetch": _C_FETCH}


def _annotation(row: list, key: str, value) -> None:
    col = _MAX_KEYS.get(key)
    if col is not None:
        if value > row[col]:
            row[col] = value
        if key == "meta_schedule.unroll_explicit":
            row[_C_UNROLL_EXPLICIT] = 1
    elif key == "pragma_unroll_explicit":
        if value:
            row[_C_UNROLL_EXPLICIT] = 1
    elif key.startswith("software_pipeline"):
        row[_C_PIPE] = 1


@EXTRACTORS.register("trace")
class TraceFeatures(FeatureExtractor):
    """Summary of the schedule trace; optionally a padded per-step sequence (see module doc)."""

    name = "trace"
    version = 1
    kind = "dense"

    def __init__(self, sequence_length: int = 0):
        self.sequence_length = sequence_length

    @property
    def feature_names(self) -> list[str]:
        names = list(SUMMARY_NAMES)
        kinds = list(INSTRUCTION_KINDS) + ["other"]
        for t in range(self.sequence_length):
            names += [f"step{t}_is_{k}" for k in kinds] + [f"step{t}_arg{j}" for j in range(N_STEP_ARGS)]
        return names

    def extract(self, context, candidates) -> Features:
        n = len(candidates)
        length = self.sequence_length
        step_width = _N_KINDS + N_STEP_ARGS
        out = np.zeros((n, len(SUMMARY_NAMES) + length * step_width), dtype=np.float32)
        with gc_paused():
            for i, cand in enumerate(candidates):
                steps = _Steps() if length else None
                out[i, :len(SUMMARY_NAMES)] = _parse(cand.sch.trace, steps)
                if steps is not None:
                    seq = out[i, len(SUMMARY_NAMES):].reshape(length, step_width)
                    for t, (k, args) in enumerate(zip(steps.kinds[:length], steps.args[:length])):
                        seq[t, k] = 1.0
                        seq[t, _N_KINDS:_N_KINDS + len(args)] = args
        return Features(self.schema, dense=out)


@EXTRACTORS.register("trace_seq")
class TraceSequenceFeatures(TraceFeatures):
    """``trace`` with a 64-step per-instruction sequence appended."""

    name = "trace_seq"

    def __init__(self, sequence_length: int = 64):
        super().__init__(sequence_length=sequence_length)
