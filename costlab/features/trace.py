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

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features

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
_KIND_NAME_BY_HANDLE: dict[int, str] = {}


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


def _kind_name(inst) -> str:
    kind = inst.kind
    key = hash(kind)
    name = _KIND_NAME_BY_HANDLE.get(key)
    if name is None:
        name = _KIND_NAME_BY_HANDLE[key] = str(kind.name)
    return name


@dataclass
class _Steps:
    kinds: list = field(default_factory=list)  # kind index per step
    args: list = field(default_factory=list)  # list of up to N_STEP_ARGS floats per step


def _parse(trace, steps: _Steps | None) -> np.ndarray:
    """The summary vector of one trace; fills ``steps`` when given."""
    row = np.zeros(len(SUMMARY_NAMES), dtype=np.float64)
    decisions = {hash(inst): dec for inst, dec in trace.decisions.items()}
    rv_value: dict[int, int] = {}  # ExprRV handle -> sampled value
    loop_extent: dict[int, int] = {}  # LoopRV handle -> extent, where the trace tells it
    n_tiles = n_cat = n_cloc = 0
    postproc = False
    n_post = 0
    insts = trace.insts
    for inst in insts:
        name = _kind_name(inst)
        k = _KIND_INDEX.get(name, _N_KINDS - 1)
        row[_C_COUNT + k] += 1
        if postproc:
            n_post += 1
        args: list[float] = []
        if name == "GetSBlock" or name == "GetLoops" or name == "GetChildBlocks" or name == "GetConsumers" \
                or name == "GetProducers" or name == "Reorder":
            pass
        elif name == "SamplePerfectTile" or name == "SamplePartitionedTile":
            factors = [_int(x) for x in decisions.get(hash(inst), ())]
            for var, f in zip(inst.outputs, factors):
                rv_value[hash(var)] = f
            if factors:
                extent = 1
                for f in factors:
                    extent *= f
                loop_extent[hash(inst.inputs[0])] = extent
            if n_tiles < MAX_TILES:
                base = _C_TILE + n_tiles * _TILE_STRIDE
                row[base:base + MAX_TILE_LEVELS] = 1.0
                fs = factors[:MAX_TILE_LEVELS]
                if len(factors) > MAX_TILE_LEVELS:  # fold the inner surplus into the last slot
                    fs[-1] = int(np.prod(factors[MAX_TILE_LEVELS - 1:]))
                row[base:base + len(fs)] = fs
                row[base + MAX_TILE_LEVELS] = len(factors)
            n_tiles += 1
            args = factors
        elif name == "SampleCategorical":
            dec = decisions.get(hash(inst))
            choices = inst.attrs[0]
            n_choices = len(choices)
            value = 0
            if dec is not None:
                d = _int(dec)
                value = _int(choices[d])
                rv_value[hash(inst.outputs[0])] = value
                if n_cat < MAX_CATEGORICAL:
                    row[_C_CAT + 2 * n_cat] = value
                    row[_C_CAT + 2 * n_cat + 1] = d / (n_choices - 1) if n_choices > 1 else 0.0
                args = [value, d, n_choices]
            n_cat += 1
        elif name == "SampleComputeLocation":
            dec = decisions.get(hash(inst))
            d = _int(dec) if dec is not None else 0
            if n_cloc < MAX_COMPUTE_LOC:
                row[_C_CLOC + n_cloc] = d
            n_cloc += 1
            args = [d]
        elif name == "Split":
            ins = inst.inputs
            parent = loop_extent.get(hash(ins[0]), 0)
            factors = []
            for x in list(ins)[1:]:
                if x is None:
                    factors.append(0)
                elif isinstance(x, int):
                    factors.append(x)
                else:
                    v = rv_value.get(hash(x))
                    if v is None:
                        try:
                            v = int(x.value)
                        except AttributeError:
                            v = 0
                    factors.append(v)
            unknown = [i for i, f in enumerate(factors) if f == 0]
            if len(unknown) == 1 and parent:
                known = 1
                for f in factors:
                    known *= f or 1
                factors[unknown[0]] = -(-parent // known)
            for out, f in zip(inst.outputs, factors):
                if f:
                    loop_extent[hash(out)] = f
            args = [len(factors)] + factors
        elif name == "Fuse":
            ext = 1
            ins = inst.inputs
            for x in ins:
                e = loop_extent.get(hash(x), 0)
                ext = ext * e if e and ext else 0
            if ext:
                loop_extent[hash(inst.outputs[0])] = ext
            args = [len(ins), ext]
        elif name == "Bind":
            tag = str(inst.attrs[0])
            t = _tag_index(tag)
            ext = loop_extent.get(hash(inst.inputs[0]), 0)
            if t >= 0:
                row[_C_BIND + 2 * t] += 1
                row[_C_BIND + 2 * t + 1] = max(row[_C_BIND + 2 * t + 1], ext)
            args = [t + 1, ext]
        elif name == "CacheRead" or name == "CacheWrite" or name == "ReindexCacheRead" or name == "ReindexCacheWrite":
            attrs = inst.attrs
            s = scope_code(str(attrs[1]))
            row[(_C_CREAD if "Read" in name else _C_CWRITE) + s] += 1
            args = [_int(attrs[0]), s + 1]
        elif name == "Annotate" or name == "Unannotate":
            key = str(inst.attrs[0])
            value = 0
            if name == "Annotate":
                raw = inst.inputs[1]
                if isinstance(raw, (int, float)):
                    value = raw
                elif hasattr(raw, "value") and not isinstance(raw, str):
                    value = rv_value.get(hash(raw), None)
                    if value is None:
                        try:
                            value = raw.value
                        except AttributeError:
                            value = 0
                elif hasattr(raw, "__len__") and not isinstance(raw, str):
                    value = len(raw)
                else:
                    value = rv_value.get(hash(raw), 0)
                if not isinstance(value, (int, float)):
                    value = 0
                _annotation(row, key, value)
            args = [_ANN_INDEX.get(key, -1) + 1, value]
        elif name == "ComputeAt" or name == "ReverseComputeAt":
            attrs = inst.attrs
            args = [_int(attrs[0]), _int(attrs[1])]
        elif name == "Parallel" or name == "Vectorize" or name == "Unroll":
            args = [loop_extent.get(hash(inst.inputs[0]), 0)]
        elif name == "EnterPostproc":
            postproc = True
        if steps is not None:
            steps.kinds.append(k)
            steps.args.append(args[:N_STEP_ARGS])
    row[_COL["n_insts"]] = len(insts)
    row[_COL["n_insts_postproc"]] = n_post
    row[_COL["n_decisions"]] = len(decisions)
    return row


def _annotation(row: np.ndarray, key: str, value) -> None:
    if key == "meta_schedule.parallel":
        row[_COL["ann_parallel_max_extent"]] = max(row[_COL["ann_parallel_max_extent"]], value)
    elif key == "meta_schedule.vectorize":
        row[_COL["ann_vectorize_max_lanes"]] = max(row[_COL["ann_vectorize_max_lanes"]], value)
    elif key in ("meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit", "pragma_auto_unroll_max_step"):
        row[_COL["ann_unroll_max_step"]] = max(row[_COL["ann_unroll_max_step"]], value)
        if key == "meta_schedule.unroll_explicit":
            row[_COL["ann_unroll_explicit"]] = 1
    elif key == "pragma_unroll_explicit":
        row[_COL["ann_unroll_explicit"]] = max(row[_COL["ann_unroll_explicit"]], 1 if value else 0)
    elif key == "meta_schedule.cooperative_fetch":
        row[_COL["ann_cooperative_fetch_lanes_max"]] = max(row[_COL["ann_cooperative_fetch_lanes_max"]], value)
    elif key.startswith("software_pipeline"):
        row[_COL["ann_software_pipeline"]] = 1


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
