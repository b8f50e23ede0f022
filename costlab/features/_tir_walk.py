"""One pass over a scheduled PrimFunc into a compact :class:`Program` (shared by ``analysis`` and ``graph``).

The walk reads each statement once, in Python, and keeps only what the extractors
need: the loop tree, the blocks, every buffer store with its loads, and the
buffers. Index expressions are *compiled* into small Python tuples over loop
indices (block iteration variables are replaced by their bindings), so that
footprints and strides are computed without further calls into TVM.

What "partly lowered" means here, for counts of dynamic executions:

- a block's ``init`` statement runs once per value of the loops that do not feed a
  reduction iteration variable (as ``LowerInitBlock`` makes it);
- loops bound to a thread tag that an enclosing loop already binds are the same
  hardware index (as ``UnifyThreadBinding`` makes them): counted once, and their
  variable is the enclosing loop's;
- a ``vthread`` loop multiplies only the statements that use its variable (as
  ``InjectVirtualThread`` does);
- a block predicate ``e < c`` (also ``<=``, ``>``, ``>=`` and their ``and``) scales
  the counts by the share of iterations where it holds, assuming ``e`` runs densely
  over its range (as fused-and-split loops do); other predicates are ignored;
- ``if_then_else(c, a, b)`` makes the loads of ``a`` in the share of iterations where
  ``c`` holds (reckoned as block predicates are, with the constant on either side) and
  those of ``b`` in the rest (a padded input is read inside its border only);
- a reduction with a loop bound to ``threadIdx`` feeding it accumulates in registers
  and all-reduces across the threads (as ``LowerCrossThreadReduction`` makes it): its
  output is written once per output element, not read back, and its init is a
  register (the accesses' ``share`` of the store's executions).

A symbolic loop extent or buffer dimension counts as 1: costlab's workloads are static.

Regions (footprints, allocation sizes) are bounding boxes from interval arithmetic
over the loop ranges (``_intervals.rows_interval``). They ignore predicates, except on
GPU for buffers the function allocates (as ``CompactBufferAllocation`` sizes them): a
block predicate ``e < c`` (``<=``, ``>``, ``>=``) clamps ``e`` where an index holds it,
so a cooperative fetch whose threads overshoot its tile does not grow the tile.

Compiled expressions: an ``int``; ``("v", k, None, 0, 1 << k)`` for loop ``k``;
``(op, a, b, n_ops, loop_mask)`` with op one of ``+ - * / % min max`` (``/`` and
``%`` are floor division and modulo), the number of operations in the tree and a
bit mask of the loops it uses; and :data:`UNKNOWN` for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tvm import tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.s_tir.stmt import SBlockRealize
from tvm_ffi._ffi_api import MapForwardIterFunctor as _MapIter
from tvm_ffi._ffi_api import MapSize as _map_size

from costlab.features._ffi_fast import items
from costlab.features._intervals import OpaqueTerms, _fold, _linear, interval

UNKNOWN = ("?", None, None, 0, 0)
_EXACT_SHARE_MAX_VALUES = 1 << 16  # condition_fraction counts an affine expression's values up to this range
_FLIPPED = {tirx.LT: tirx.GT, tirx.LE: tirx.GE, tirx.GT: tirx.LT, tirx.GE: tirx.LE}  # c < x is x > c

# Loop kinds (tirx.ForKind values).
SERIAL, PARALLEL, VECTORIZED, UNROLLED, THREAD_BINDING = 0, 1, 2, 3, 4

# Storage scopes.
GLOBAL, SHARED, LOCAL, OTHER_SCOPE = 0, 1, 2, 3
SCOPE_NAMES = ("global", "shared", "local")

# Thread tags, in the order used by the features.
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread")
VTHREAD = THREAD_TAGS.index("vthread")  # every vthread* tag
THREAD_IDX_X, THREAD_IDX_Z = THREAD_TAGS.index("threadIdx.x"), THREAD_TAGS.index("threadIdx.z")

# Per-execution operation counters of a store's value expression.
OP_NAMES = ("fadd", "fmul", "ffma", "fdiv", "fspecial", "fcmp", "int_arith", "other")
FADD, FMUL, FFMA, FDIV, FSPECIAL, FCMP, INT_ARITH, OTHER_OP = range(len(OP_NAMES))

SPECIAL_FUNCS = frozenset({
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid",
    "erf", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh",
    "atanh", "fabs", "floor", "ceil", "round", "trunc", "nearbyint", "fmod", "hypot", "copysign", "ldexp",
})


WARP_SCOPES = ("warp", "wmma", "m16n8k8", "metal.simdgroup")  # held by a warp's lanes together


def scope_code(scope: str) -> int:
    """0 global, 1 shared (incl. ``shared.dyn``), 2 local (registers, warp, wmma fragments), 3 other."""
    if scope == "global" or scope == "" or scope.startswith("global."):
        return GLOBAL
    if scope.startswith("shared"):
        return SHARED
    if scope.startswith(("local", *WARP_SCOPES)):
        return LOCAL
    return OTHER_SCOPE


def tag_index(tag: str) -> int:
    """Position of a thread tag in :data:`THREAD_TAGS` (all ``vthread*`` are one), -1 if unknown."""
    if tag.startswith("vthread"):
        return 6
    try:
        return THREAD_TAGS.index(tag)
    except ValueError:
        return -1


@dataclass(slots=True)
class LoopInfo:
    parent: int  # enclosing loop, -1 at the top
    depth: int  # number of enclosing loops
    extent: int  # iterations
    lo: int  # the loop's min
    kind: int  # SERIAL ... THREAD_BINDING
    tag: int  # index in THREAD_TAGS, -1 when not thread-bound
    auto_unroll: int  # pragma_auto_unroll_max_step (iterations), 0 when absent
    unroll_explicit: int  # pragma_unroll_explicit
    pipelined: int  # 1 if software-pipeline annotations are present
    alias: int  # the enclosing loop of the same thread tag (same hardware index), else -1
    kernel: int  # the outermost thread-bound loop above (GPU kernel), -1 if none
    n_annotations: int
    block: int = -1  # the enclosing block (not the implicit root), -1 if none
    skipped_loops: int = 0  # inside a block's init: bit mask of the reduction loops above that it does not run in


@dataclass(slots=True)
class BufferInfo:
    name: str
    scope: int  # GLOBAL, SHARED, LOCAL, OTHER_SCOPE
    dtype_bytes: int
    is_float: bool
    shape: tuple
    is_param: bool
    numel: int
    per_warp: bool = False  # a warp-level buffer (wmma / mma fragments, warp scope): spread over its lanes
    dtype: str = ""  # TVM's name of the element type ("float16", "int32x4")


@dataclass(slots=True)
class AccessInfo:
    buffer: int
    is_write: bool
    indices: list  # compiled index expressions, one per dimension (the region's start)
    extents: tuple | None = None  # region extent per dimension; None for one element
    volume: int = 1  # elements per execution
    share: float = 1.0  # the share of the store's executions that make this access (a cross-thread reduction's output)


@dataclass(slots=True)
class StoreInfo:
    block: int  # enclosing block, -1 if none
    loops: tuple  # enclosing loops, outermost first
    count: int  # dynamic executions
    is_init: bool
    ops: list  # per-execution counts, OP_NAMES order
    int_index_ops: int  # integer ops in the (substituted) index expressions, per execution
    accesses: list  # AccessInfo: the write first, then the loads
    stages: tuple = ()  # (loop, stage) for each software-pipelined loop above: the stage of its statement
    allreduce_tags: tuple = ()  # a cross-thread reduction's update: the threadIdx tags its threads reduce over
    allreduce_threads: tuple = ()  # ... and the extents of the threadIdx.x, y, z loops around it
    skipped_loops: int = 0  # bit mask: loops of ``loops`` an init does not run in (those feeding the reduction)


@dataclass(slots=True)
class BlockInfo:
    parent_loop: int
    parent_block: int
    loops: tuple
    n_spatial: int
    n_reduce: int
    has_init: bool
    stores: list = field(default_factory=list)
    reduce_mask: int = 0  # bit mask of the loops that feed its reduction iteration variables
    decomposed_init: bool = False  # named "<name>_init", reading nothing: perhaps an init split off (DecomposeReduction)
    skipped_loops: int = 0  # inside a block's init: bit mask of the reduction loops above that it does not run in


@dataclass
class Program:
    loops: list
    blocks: list
    buffers: list
    stores: list


_BINARY = {
    tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "/", tirx.FloorMod: "%",
    tirx.Div: "/", tirx.Mod: "%", tirx.Min: "min", tirx.Max: "max",
}
_CMP = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)
_BOOL = (tirx.And, tirx.Or, tirx.Not)
_IntImm = tirx.IntImm
_FloatImm = tirx.FloatImm
_Var = tirx.Var
_Cast = tirx.Cast
_For = tirx.For
_SeqStmt = tirx.SeqStmt
_BufferStore = tirx.BufferStore
_Select = tirx.Select


def loop_var(k: int) -> tuple:
    """The compiled expression of loop ``k``'s variable."""
    return ("v", k, None, 0, 1 << k)


def _combine(op: str, a, b):
    ta = type(a) is int
    tb = type(b) is int
    if ta and tb:
        return _fold(op, a, b)
    if op == "+":
        if ta and a == 0:
            return b
        if tb and b == 0:
            return a
    elif op == "*":
        if ta and a == 1:
            return b
        if tb and b == 1:
            return a
    return (op, a, b, (0 if ta else a[3]) + (0 if tb else b[3]) + 1, (0 if ta else a[4]) | (0 if tb else b[4]))


def loop_mask(c) -> int:
    """Bit mask of the loops a compiled expression uses."""
    return 0 if type(c) is int else c[4]


def _dtype_info(dtype) -> tuple[int, bool]:
    """``(bytes per element incl. vector lanes, is floating point)`` of a ``tvm_ffi.dtype``."""
    try:
        bits, lanes = int(dtype.bits), int(dtype.lanes)
    except (AttributeError, TypeError, ValueError):
        import tvm_ffi

        parsed = tvm_ffi.dtype(str(dtype))
        bits, lanes = int(parsed.bits), int(parsed.lanes)
    name = str(dtype)
    is_float = name.startswith(("float", "bfloat")) or "float" in name
    return max(1, (bits * max(lanes, 1) + 7) // 8), is_float


def _map_items(m) -> list:
    n = _map_size(m)
    if not n:
        return []
    functor = _MapIter(m)
    out = []
    for _ in range(n):
        out.append((functor(0), functor(1)))
        if not functor(2):
            break
    return out


def _int_value(x, default: int = 0) -> int:
    if type(x) is _IntImm:
        return x.value
    if isinstance(x, int):
        return int(x)
    return default


class _Walker:
    def __init__(self, is_gpu: bool, buffer_cache: dict | None = None):
        self.is_gpu = is_gpu
        self.buffer_cache = {} if buffer_cache is None else buffer_cache
        self.memo: dict[int, object] = {}  # expression handle -> compiled (IR objects are shared)
        self.loops: list[LoopInfo] = []
        self.blocks: list[BlockInfo] = []
        self.buffers: list[BufferInfo] = []
        self.stores: list[StoreInfo] = []
        self.buffer_index: dict[int, int] = {}
        self.env: dict[int, object] = {}
        self.tag_stack: dict[int, int] = {}  # thread tag -> loop index binding it on the current path
        self.init_mask: int | None = None  # inside a block's init: the block's reduction loops
        self.fraction = 1.0  # share of iterations that pass the enclosing block predicates
        self.bounds: list = []  # GPU: (affine form of e, "min"/"max", bound) of the enclosing block predicates

    def compile(self, e):
        """An index expression as a compiled tuple (see the module docstring).

        Memoized on the expression object: schedules share subexpressions. A variable
        is the loop (or the block binding) it stands for, as the walk has set it.
        """
        key = hash(e)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        t = type(e)
        if t is _IntImm:
            res = e.value
        elif t is _Var:
            res = self.env.get(key, UNKNOWN)
            return res  # a variable's meaning is set by the walk; never memoize it
        else:
            op = _BINARY.get(t)
            if op is not None:
                a = self.compile(e.a)
                b = self.compile(e.b)
                res = _combine(op, a, b)
            elif t is _Cast:
                res = self.compile(e.value)
            else:
                res = UNKNOWN
        self.memo[key] = res
        return res

    # -- buffers ------------------------------------------------------------------
    def buffer(self, var, is_param: bool = False) -> int:
        key = hash(var)
        idx = self.buffer_index.get(key)
        if idx is not None:
            return idx
        info = self.buffer_cache.get(key)
        if info is not None:
            idx = self.buffer_index[key] = len(self.buffers)
            self.buffers.append(info)
            return idx
        try:
            shape = tuple(_int_value(s, 1) for s in items(var.shape))
            scope_name = str(var.scope())
            scope = scope_code(scope_name)
            nbytes, is_float = _dtype_info(var.dtype)
            name, dtype = str(var.name), str(var.dtype)
        except (AttributeError, TypeError):
            shape, scope_name, scope, nbytes, is_float, name, dtype = (), "", OTHER_SCOPE, 4, True, "?", ""
        numel = 1
        for s in shape:
            numel *= s
        idx = self.buffer_index[key] = len(self.buffers)
        info = self.buffer_cache[key] = BufferInfo(name, scope, nbytes, is_float, shape, is_param, numel,
                                                   scope_name.startswith(WARP_SCOPES), dtype)
        self.buffers.append(info)
        return idx

    # -- statements ---------------------------------------------------------------
    def stmt(self, s, path: tuple, block: int, kernel: int) -> None:
        t = type(s)
        if t is _For:
            self.loop(s, path, block, kernel)
        elif t is _SeqStmt:
            for child in items(s.seq):
                self.stmt(child, path, block, kernel)
        elif t is SBlockRealize:
            self.realize(s, path, block, kernel)
        elif t is _BufferStore:
            self.store(s, path, block, self.init_mask is not None, self.init_mask or 0)
        elif t is tirx.IfThenElse:
            self.stmt(s.then_case, path, block, kernel)
            else_case = s.else_case
            if else_case is not None:
                self.stmt(else_case, path, block, kernel)
        elif t is tirx.Bind:
            self.env[hash(s.var)] = self.compile(s.value)
        else:
            body = getattr(s, "body", None)
            if body is not None:
                self.stmt(body, path, block, kernel)

    def loop(self, s, path: tuple, block: int, kernel: int) -> None:
        idx = len(self.loops)
        kind = s.kind
        extent = _int_value(s.extent, 1)
        lo = _int_value(s.min, 0)
        tag = -1
        alias = -1
        if kind == THREAD_BINDING:
            binding = s.thread_binding
            if binding is not None:
                tag = tag_index(str(binding.thread_tag))
            if tag >= 0 and tag != VTHREAD:  # each vthread loop is a thread of its own (no unification)
                alias = self.tag_stack.get(tag, -1)
            if kernel < 0:
                kernel = idx
        auto_unroll = unroll_explicit = pipelined = 0
        stages = None
        annotations = s.annotations
        n_ann = _map_size(annotations)
        if n_ann:
            for key, value in _map_items(annotations):
                key = str(key)
                if key == "pragma_auto_unroll_max_step":
                    auto_unroll = _int_value(value)
                elif key == "pragma_unroll_explicit":
                    unroll_explicit = _int_value(value)
                elif key.startswith("software_pipeline"):
                    pipelined = 1
                    if key == "software_pipeline_stage":
                        stages = [_int_value(v) for v in items(value)]
        self.loops.append(LoopInfo(path[-1] if path else -1, len(path), extent, lo, kind, tag, auto_unroll,
                                   unroll_explicit, pipelined, alias, kernel, n_ann, block, self.init_mask or 0))
        self.env[hash(s.loop_var)] = loop_var(alias if alias >= 0 else idx)
        pushed = tag >= 0 and tag != VTHREAD and alias < 0
        if pushed:
            self.tag_stack[tag] = idx
        body = s.body
        if stages and type(body) is _SeqStmt and len(stages) == len(body.seq):
            # software pipelining: each statement of the body runs at its stage (InjectSoftwarePipeline)
            for child, stage in zip(items(body.seq), stages):
                first = len(self.stores)
                self.stmt(child, path + (idx,), block, kernel)
                for st in self.stores[first:]:
                    st.stages += ((idx, stage),)
        else:
            self.stmt(body, path + (idx,), block, kernel)
        if pushed:
            del self.tag_stack[tag]

    def realize(self, s, path: tuple, parent_block: int, kernel: int) -> None:
        block = s.block
        env = self.env
        reduce_mask = 0
        n_spatial = n_reduce = 0
        for iv, value in zip(items(block.iter_vars), items(s.iter_values)):
            c = self.compile(value)
            env[hash(iv.var)] = c
            if iv.iter_type == 2:  # CommReduce
                n_reduce += 1
                reduce_mask |= loop_mask(c)
            else:
                n_spatial += 1
        # Allocated buffers are registered when first accessed (an unused one is no node).
        if not path and parent_block < 0 and n_spatial + n_reduce == 0 and str(block.name_hint) == "root":
            self.stmt(block.body, path, parent_block, kernel)  # the implicit root block is no block
            return
        saved_fraction, saved_bounds = self.fraction, self.bounds
        predicate = s.predicate
        if type(predicate) is not _IntImm:
            self.fraction = saved_fraction * self.predicate_fraction(predicate)
            if self.is_gpu:
                self.bounds = saved_bounds + self.predicate_bounds(predicate)
        init = block.init
        idx = len(self.blocks)
        # MetaSchedule's DecomposeReduction moves a reduction's init into a block "<name>_init"
        # that reads nothing; only the graph tells it apart (the analysis counts its stores as it finds them)
        decomposed_init = (init is None and n_reduce == 0 and str(block.name_hint).endswith("_init")
                           and len(block.reads) == 0)
        self.blocks.append(BlockInfo(path[-1] if path else -1, parent_block, path, n_spatial, n_reduce,
                                     init is not None, reduce_mask=reduce_mask, decomposed_init=decomposed_init,
                                     skipped_loops=self.init_mask or 0))
        if init is not None:
            if type(init) is _BufferStore:
                self.store(init, path, idx, True, reduce_mask)
            else:  # an init with loops: its stores are init stores, outside the reduction loops
                saved_mask, self.init_mask = self.init_mask, reduce_mask
                self.stmt(init, path, idx, kernel)
                self.init_mask = saved_mask
        n_stores, n_blocks = len(self.stores), len(self.blocks)
        self.stmt(block.body, path, idx, kernel)
        if len(self.stores) == n_stores and len(self.blocks) == n_blocks:
            self.opaque_block(block, path, idx, n_reduce)
        self.fraction, self.bounds = saved_fraction, saved_bounds

    def regions(self, regions, is_write: bool) -> list:
        out = []
        for region in items(regions):
            ranges = items(region.region)
            starts = [self.compile(r.min) for r in ranges]
            extents = tuple(_int_value(r.extent, 1) for r in ranges)
            volume = 1
            for e in extents:
                volume *= e
            out.append(AccessInfo(self.buffer(region.source), is_write, starts, extents, volume))
        return out

    def opaque_block(self, block, path: tuple, idx: int, n_reduce: int) -> None:
        """A leaf block without buffer stores (a tensor intrinsic, a cross-thread reduction):
        its accesses are its read/write regions, and its FLOPs an estimate from their sizes:
        ``2·sqrt(|A|·|B|·|C|)`` for a reduction over two inputs (a matrix multiply-accumulate
        ``C += A·B``), one add per input element for a reduction over one input, else none."""
        writes = self.regions(block.writes, True)
        if not writes:
            return
        reads = self.regions(block.reads, False)
        ops = [0] * len(OP_NAMES)
        written = {a.buffer for a in writes}
        inputs = [a for a in reads if a.buffer not in written]
        if n_reduce and self.buffers[writes[0].buffer].is_float:
            if len(inputs) >= 2:
                out = writes[0].volume
                k = (inputs[0].volume * inputs[1].volume / max(out, 1)) ** 0.5
                ops[FFMA] = int(round(out * k))
            elif len(inputs) == 1:
                ops[FADD] = inputs[0].volume
        self.add_store(path, idx, False, 0, ops, writes[:1] + reads + writes[1:])

    def predicate_bounds(self, e) -> list:
        """``[(affine form of x, "min", c - 1)]`` (``"max", c + 1`` for ``>``) for the ``x < c``-form
        terms of a predicate whose ``x`` is affine in the loops (:func:`_affine`)."""
        t = type(e)
        if t is tirx.And:
            return self.predicate_bounds(e.a) + self.predicate_bounds(e.b)
        if t not in (tirx.LT, tirx.LE, tirx.GT, tirx.GE):
            return []
        x, c = self.compile(e.a), self.compile(e.b)
        form = _affine(x) if type(c) is int and type(x) is not int else None
        if form is None:
            return []
        op, bound = {tirx.LT: ("min", c - 1), tirx.LE: ("min", c), tirx.GT: ("max", c + 1),
                     tirx.GE: ("max", c)}[t]
        return [(form, op, bound)]

    def predicate_fraction(self, e) -> float:
        """Share of iterations where a block predicate holds (``x < c`` forms, ``and`` of them; else 1)."""
        t = type(e)
        if t is tirx.And:
            return self.predicate_fraction(e.a) * self.predicate_fraction(e.b)
        if t not in _FLIPPED:
            return 1.0
        a, b = self.compile(e.a), self.compile(e.b)
        share = self.range_share(a, [(t, b)]) if type(b) is int else None
        return 1.0 if share is None else share

    def condition_fraction(self, e) -> float | None:
        """Share of iterations where a condition holds: an ``and`` of comparisons of expressions
        in the loops with constants (on either side); the bounds on one expression are
        intersected, different expressions taken as independent. None for any other condition."""
        bounds: dict = {}  # compiled expression -> [(comparison, constant)]
        pending = [e]
        while pending:
            c = pending.pop()
            t = type(c)
            if t is tirx.And:
                pending += [c.a, c.b]
                continue
            if t not in _FLIPPED:
                return None
            a, b = self.compile(c.a), self.compile(c.b)
            if type(a) is int and type(b) is not int:  # c < x is x > c
                a, b, t = b, a, _FLIPPED[t]
            if type(b) is not int or type(a) is int:
                return None
            bounds.setdefault(a, []).append((t, b))
        share = 1.0
        for a, comparisons in bounds.items():
            part = self.affine_share(a, comparisons)
            if part is None:
                part = self.range_share(a, comparisons)
            if part is None:
                return None
            share *= part
        return share

    def affine_share(self, a, comparisons: list) -> float | None:
        """The exact share of the loops' iterations where compiled ``a``, affine in the loops,
        satisfies every ``(LT/LE/GT/GE, constant)`` in ``comparisons``: its values counted by
        convolving each loop's (``p + r``, a padded convolution's row, is not uniform over its
        range). None when ``a`` is not affine or spans more than ``_EXACT_SHARE_MAX_VALUES``."""
        form = _affine(a)
        if form is None:
            return None
        low, terms = form
        counts = np.ones(1)
        for k, coef in sorted(terms):
            lp = self.loops[k]
            low += coef * (lp.lo if coef > 0 else lp.lo + lp.extent - 1)
            step = abs(coef)
            if len(counts) + step * (lp.extent - 1) > _EXACT_SHARE_MAX_VALUES:
                return None
            one_loop = np.zeros(step * (lp.extent - 1) + 1)
            one_loop[::step] = 1.0
            counts = np.convolve(counts, one_loop)
        values = low + np.arange(len(counts))
        least, most = _allowed_values(comparisons)
        return float(counts[(values >= least) & (values <= most)].sum() / counts.sum())

    def range_share(self, a, comparisons: list) -> float | None:
        """Share of the values of compiled ``a`` over the loops' ranges that satisfy every
        ``(LT/LE/GT/GE, constant)`` in ``comparisons``, assuming ``a`` runs densely over its
        range (as fused-and-split loops do); None where its range is unknown."""
        ranges = {k: (lp.lo, lp.lo + lp.extent - 1) for k, lp in enumerate(self.loops)}
        iv = interval(a, ranges, {})
        if iv is None:
            return None
        lo, hi = int(iv[0]), int(iv[1])
        if hi < lo:
            return None
        least, most = _allowed_values(comparisons)
        return max(0, min(hi, most) - max(lo, least) + 1) / (hi - lo + 1)

    # -- stores and expressions ---------------------------------------------------------
    def store(self, s, path: tuple, block: int, is_init: bool, reduce_mask: int) -> None:
        ops = [0] * len(OP_NAMES)
        loads: list = []
        self.value(s.value, ops, loads)
        compile_ = self.compile
        accesses = [AccessInfo(self.buffer(s.buffer), True, [compile_(i) for i in items(s.indices)])]
        for source, indices, share in loads:
            accesses.append(AccessInfo(self.buffer(source), False, [compile_(i) for i in items(indices)],
                                       share=share))
        self.add_store(path, block, is_init, reduce_mask, ops, accesses)

    def add_store(self, path: tuple, block: int, is_init: bool, reduce_mask: int, ops: list,
                  accesses: list) -> None:
        int_index_ops = 0
        refs = 0
        for a in accesses:
            for c in a.indices:
                if type(c) is not int:
                    int_index_ops += c[3]
                    refs |= c[4]
        count = outputs = 1
        loops = self.loops
        block_reduce = self.blocks[block].reduce_mask if block >= 0 else 0
        for k in path:
            lp = loops[k]
            if lp.alias >= 0:
                continue
            if lp.tag == VTHREAD and not (refs >> k) & 1:  # vthread not used by this statement
                continue
            if is_init and (reduce_mask >> k) & 1:
                continue
            count *= lp.extent
            if not (block_reduce >> k) & 1:
                outputs *= lp.extent
        if self.fraction < 1.0:
            count = max(1, round(count * self.fraction))
        allreduce_tags = allreduce_threads = ()
        if block_reduce:
            reduced, threads = self.thread_reduction(path, block_reduce)
            if reduced:
                self.reduce_across_threads(is_init, min(outputs, count) / max(count, 1), accesses)
                if not is_init:
                    allreduce_tags, allreduce_threads = reduced, threads
        if self.bounds:
            buffers = self.buffers
            for a in accesses:
                if not buffers[a.buffer].is_param:
                    a.indices = [_clamped(c, self.bounds) for c in a.indices]
        self.stores.append(StoreInfo(block, path, count, is_init, ops, int_index_ops, accesses,
                                     allreduce_tags=allreduce_tags, allreduce_threads=allreduce_threads,
                                     skipped_loops=reduce_mask if is_init else 0))
        if block >= 0:
            self.blocks[block].stores.append(len(self.stores) - 1)

    def thread_reduction(self, path: tuple, reduce_mask: int) -> tuple[tuple, tuple]:
        """``(reduced tags, (x, y, z) extents)`` of the threadIdx loops on PATH: the tags whose
        loops feed the reduction (REDUCE_MASK), none for a reduction within each thread, and
        the extents LowerThreadAllreduce reads around it."""
        loops = self.loops
        threads = [1, 1, 1]
        reduced = set()
        for k in path:
            lp = loops[k]
            if lp.kind == THREAD_BINDING and THREAD_IDX_X <= lp.tag <= THREAD_IDX_Z:
                threads[lp.tag - THREAD_IDX_X] = max(threads[lp.tag - THREAD_IDX_X], lp.extent)
                if (reduce_mask >> (lp.alias if lp.alias >= 0 else k)) & 1:
                    reduced.add(lp.tag)
        return tuple(sorted(reduced)), tuple(threads)

    @staticmethod
    def reduce_across_threads(is_init: bool, output_share: float, accesses: list) -> None:
        """A cross-thread reduction as ``LowerCrossThreadReduction`` lowers it: the init and the
        running value live in registers, and the output is written once per output element
        (OUTPUT_SHARE of the store's executions: those over the loops that do not feed the
        reduction)."""
        if is_init:
            for a in accesses:
                a.share = 0.0
            return
        out = accesses[0].buffer
        accesses[0].share = output_share
        for a in accesses[1:]:
            if a.buffer == out:  # the running value, read back: a register
                a.share = 0.0

    def value(self, e, ops: list, loads: list) -> bool:
        """Count operations of a value expression; returns whether it is floating point."""
        t = type(e)
        if t is TensorLoad:
            source = e.source
            loads.append((source, e.indices, 1.0))
            return self.buffers[self.buffer(source)].is_float
        if t is _FloatImm:
            return True
        if t is _IntImm or t is _Var:
            return t is _Var and str(e.ty).startswith(("float", "bfloat"))
        op = _BINARY.get(t)
        if op is not None:
            a, b = e.a, e.b
            if op == "+" or op == "-":
                ta, tb = type(a), type(b)
                fa = self.value(a, ops, loads)
                fb = self.value(b, ops, loads)
                is_float = fa or fb
                if is_float and (ta is tirx.Mul or (tb is tirx.Mul and op == "+")) and ops[FMUL] > 0:
                    ops[FMUL] -= 1  # a*b + c is one fused multiply-add
                    ops[FFMA] += 1
                else:
                    ops[FADD if is_float else INT_ARITH] += 1
                return is_float
            is_float = self.value(a, ops, loads) | self.value(b, ops, loads)
            if op == "*":
                ops[FMUL if is_float else INT_ARITH] += 1
            elif op == "/" or op == "%":
                ops[FDIV if is_float else INT_ARITH] += 1
            else:
                ops[FCMP if is_float else INT_ARITH] += 1
            return is_float
        if t in _CMP:
            is_float = self.value(e.a, ops, loads) | self.value(e.b, ops, loads)
            ops[FCMP if is_float else INT_ARITH] += 1
            return False
        if t is _Cast:
            self.value(e.value, ops, loads)
            ops[OTHER_OP] += 1
            return str(e.ty).startswith(("float", "bfloat"))
        if t is _Select:
            self.value(e.condition, ops, loads)
            is_float = self.value(e.true_value, ops, loads) | self.value(e.false_value, ops, loads)
            ops[FCMP if is_float else OTHER_OP] += 1
            return is_float
        if t is Call:
            is_float = str(e.ty).startswith(("float", "bfloat"))
            name = str(e.op.name) if hasattr(e.op, "name") else ""
            short = name.rsplit(".", 1)[-1]
            if short == "if_then_else":
                self.if_then_else(e, ops, loads)
                ops[OTHER_OP] += 1
                return is_float
            for arg in items(e.args):
                self.value(arg, ops, loads)
            if is_float and short in SPECIAL_FUNCS:
                ops[FSPECIAL] += 1
            else:
                ops[OTHER_OP] += 1
            return is_float
        if t in _BOOL:
            for name in ("a", "b"):
                sub = getattr(e, name, None)
                if sub is not None:
                    self.value(sub, ops, loads)
            ops[OTHER_OP] += 1
            return False
        return False

    def if_then_else(self, e, ops: list, loads: list) -> None:
        """Count the operations and loads of ``if_then_else(c, a, b)``, which evaluates one branch
        (``Select`` evaluates both): the loads of ``a`` are made in the share of iterations where
        ``c`` holds (a padded input is read inside its border only), those of ``b`` in the rest;
        both in full where that share is unknown (:meth:`condition_fraction`)."""
        condition, then_value, else_value = items(e.args)
        self.value(condition, ops, loads)
        fraction = self.condition_fraction(condition)
        for branch, share in ((then_value, fraction), (else_value, None if fraction is None else 1.0 - fraction)):
            first = len(loads)
            self.value(branch, ops, loads)
            if share is not None:
                loads[first:] = [(source, indices, old * share) for source, indices, old in loads[first:]]


def _allowed_values(comparisons: list) -> tuple[float, float]:
    """The integers ``x`` with ``x < c`` (LT; LE, GT, GE alike) for every ``(comparison, c)``
    of ``comparisons``, as an inclusive ``(least, most)``, unbounded sides infinite."""
    least, most = -np.inf, np.inf
    for t, c in comparisons:
        if t is tirx.LT:
            most = min(most, c - 1)
        elif t is tirx.LE:
            most = min(most, c)
        elif t is tirx.GT:
            least = max(least, c + 1)
        else:
            least = max(least, c)
    return least, most


def _affine(c):
    """``(const, frozenset((loop, coef)))`` when compiled C is affine in the loops, else None:
    one form for ``(f0 * 64 + tx) * 2 + f2`` and ``f0 * 128 + tx * 2 + f2``."""
    lin = _linear(c, {}, OpaqueTerms())
    if lin is None or any(k < 0 for k in lin[1]):
        return None
    return lin[0], frozenset((k, v) for k, v in lin[1].items() if v)


def _clamped(c, bounds: list):
    """C with each subexpression whose affine form a predicate bounds clamped to the bound:
    ``min(x, c - 1)`` for ``x < c``."""
    if type(c) is int or c[0] == "?":
        return c
    form = _affine(c)
    if form is not None:
        for bounded, op, bound in bounds:
            if form == bounded:
                return (op, c, bound, c[3] + 1, c[4])
    if c[0] == "v":
        return c
    a, b = _clamped(c[1], bounds), _clamped(c[2], bounds)
    return c if a is c[1] and b is c[2] else (c[0], a, b, c[3], c[4])


def walk(func, is_gpu: bool, buffer_cache: dict | None = None) -> Program:
    """The :class:`Program` of a scheduled ``PrimFunc``.

    ``buffer_cache`` (handle -> BufferInfo) may be shared by the walks of one batch, whose
    candidates share the workload's parameter buffers; keep it no longer than the
    candidates are alive (handles are addresses).
    """
    w = _Walker(is_gpu, buffer_cache)
    for p in items(func.params):
        if hasattr(p, "shape"):
            w.buffer(p, is_param=True)
    w.stmt(func.body, (), -1, -1)
    return Program(w.loops, w.blocks, w.buffers, w.stores)


def main_func(mod):
    """The PrimFunc to analyse: ``main``, else the module's first function."""
    try:
        return mod["main"]
    except Exception:  # noqa: BLE001  (no function named main)
        return list(mod.functions.values())[0]


# -- interval arithmetic over columns (footprints) -------------------------------------------
