"""MetaSchedule design-space generation works for every built-in workload.

Creating the first ``TuneContext`` imports ``tvm.s_tir.tensor_intrin`` (about 15 s on
an idle 2-core machine, minutes under load); everything after that is fast.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import Target

from costlab.targets import make_target
from costlab.workloads import WORKLOADS, build_workload

BUILTINS = [n for n in WORKLOADS.names() if WORKLOADS.factory(n).__module__.startswith("costlab.workloads.")]

# Small shapes, several not divisible by common tile sizes.
SMALL = {
    "gemm": dict(M=24, N=20, K=12),
    "batch_matmul": dict(B=2, M=12, N=10, K=6),
    "conv2d_nchw": dict(N=1, C=4, H=9, W=7, K=6, R=3, S=3, stride=2, padding=1),
    "conv2d_nhwc": dict(N=1, C=4, H=8, W=7, K=6, R=3, S=3, stride=1, padding=1),
    "rmsnorm": dict(M=6, N=40),
    "layernorm": dict(M=6, N=40),
    "softmax": dict(M=6, N=33),
    "swiglu": dict(M=8, N=24, K=16),
    "swiglu_merged": dict(M=8, N=12, K=16),
    "attention": dict(B=1, H=2, S=12, D=8),
    "reduce_sum": dict(M=5, N=37),
}

LLVM = {"kind": "llvm", "num-cores": 2}


def _design_space(mod, target):
    from tvm.s_tir import meta_schedule as ms

    ctx = ms.TuneContext(
        mod=mod, target=target, space_generator="post-order-apply", search_strategy="evolutionary",
        num_threads=1, rand_state=0,
    )
    return ctx.generate_design_space()


def _run(mod, inputs):
    lib = tvm.compile(mod, target=Target({"kind": "llvm"}))
    out_buf = mod["main"].params[-1]
    out = tvm.runtime.tensor(np.zeros([int(d) for d in out_buf.shape], dtype=str(out_buf.dtype)))
    lib["main"](*[tvm.runtime.tensor(x) for x in inputs], out)
    return out.numpy()


def test_small_shapes_cover_builtins():
    assert sorted(SMALL) == sorted(BUILTINS)


@pytest.mark.parametrize("name", BUILTINS)
def test_llvm_design_space_compiles_and_matches(name):
    mod = build_workload(name, SMALL[name])
    spaces = _design_space(mod, Target(LLVM))
    assert spaces, f"{name}: empty design space"
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([int(d) for d in p.shape]).astype(str(p.dtype)) for p in mod["main"].params[:-1]]
    # Every sketch is a valid schedule: compile the first and last and compare to the plain function.
    want = _run(mod, inputs)
    for sch in (spaces[0], spaces[-1]):
        np.testing.assert_allclose(_run(sch.mod, inputs), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cuda_design_space(name, dtype):
    """Sketch generation needs no GPU; H100-class limits come from the ``h100`` preset.

    Every sketch is a GPU schedule: its trace binds loops to blockIdx and threadIdx, and every block
    of its function runs under a blockIdx loop and a threadIdx loop (a shared-memory copy marked
    ``meta_schedule.cooperative_fetch`` gets its threads from the RewriteCooperativeFetch postprocessor).
    """
    spaces = _design_space(build_workload(name, {"dtype": dtype}), make_target("h100"))
    assert spaces, f"{name}: empty design space"
    for i, sch in enumerate(spaces):
        axes = {str(inst.attrs[0]).split(".")[0] for inst in sch.trace.insts if inst.kind.name == "Bind"}
        assert {"blockIdx", "threadIdx"} <= axes, f"{name} sketch {i}: its trace binds only {sorted(axes)}"
        blocks = list(_blocks_under(sch, sch.get_sblock("root")))
        assert blocks, f"{name} sketch {i}: no blocks"
        for block in blocks:
            stmt = sch.get(block)
            bound = _thread_axes_above(sch, block)
            assert "blockIdx" in bound, f"{name} sketch {i}: block {stmt.name_hint} is under no blockIdx loop"
            if "meta_schedule.cooperative_fetch" not in stmt.annotations:
                assert "threadIdx" in bound, f"{name} sketch {i}: block {stmt.name_hint} is under no threadIdx loop"


def _blocks_under(sch, parent):
    """Every block nested (at any depth) in ``parent``."""
    for block in sch.get_child_blocks(parent):
        yield block
        yield from _blocks_under(sch, block)


def _thread_axes_above(sch, block) -> set[str]:
    """The thread axes ("blockIdx", "threadIdx", "vthread") of the loops enclosing ``block``,
    through any enclosing blocks (a tensorized block's outer block)."""
    axes, sref = set(), sch.get_sref(block).parent
    while sref is not None:
        binding = getattr(sref.stmt, "thread_binding", None)
        if binding is not None:
            axes.add(str(binding.thread_tag).split(".")[0])
        sref = sref.parent
    return axes
