"""Build functions that run inside builder worker processes.

Kept free of heavy imports (no mlflow, torch or pandas): a worker imports only TVM
and this module. TVM's default build imports ``tvm.s_tir.tensor_intrin`` on every
call, which costs about 15 s per fresh worker; it is only needed when a schedule
uses tensor intrinsics, which on our targets means CUDA tensor cores.
"""

from __future__ import annotations

import os
import tempfile


def build_module(mod, target):
    """Lower and compile ``mod`` for ``target``; returns a runtime Module."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if target.kind.name == "cuda":
        from costlab._tvm import import_tensor_intrinsics

        import_tensor_intrinsics()  # tensor-core intrinsics
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    try:
        return tvm_build(mod, target=target)
    except Exception as err:
        if target.kind.name != "cuda" or "tvm_access_ptr element type must match" not in str(err):
            raise
        first_error = err
    # TVM 0.27's StorageRewrite lets a tensor-core schedule's fp32 accumulator tile reuse the
    # shared memory of an fp16 operand tile, and LowerIntrin then rejects the wmma store's
    # pointer type: 7 of 8 sampled fp16 GEMM candidates failed so. Without the rewrite they build.
    import tvm

    ctx = tvm.transform.PassContext.current()
    with tvm.transform.PassContext(opt_level=ctx.opt_level, required_pass=ctx.required_pass,
                                   disabled_pass=ctx.disabled_pass, instruments=ctx.instruments,
                                   config={**dict(ctx.config), "tirx.disable_storage_rewrite": True}):
        try:
            return tvm_build(mod, target=target)
        except Exception as err:
            raise err from first_error  # both messages reach the builder's record


def compile_cuda_kernels(rt_mod, arch: str) -> list[bytes]:
    """Compile the CUDA source of ``rt_mod`` with nvcc to a cubin for ``arch``; the cubins.

    TVM 0.27 only packages CUDA source and compiles it when the GPU machine loads
    the module; compiling here turns a kernel that does not compile into a recorded
    build failure instead of a runner crash. The CUDA module gives its source under
    the format name "cuda" ("cu" gives an empty string, which nvcc compiles happily).
    """
    from tvm.support import nvcc

    cubins = []
    for sub in rt_mod.imports:
        if sub.kind == "cuda":
            source = sub.inspect_source("cuda")
            if not source.strip():
                raise RuntimeError("the CUDA module gave no source to compile with nvcc")
            cubins.append(bytes(nvcc.compile_cuda(source, target_format="cubin", arch=arch, compiler="nvcc")))
    return cubins


def warm_up_worker(pause_s: float) -> None:
    """Run in a builder worker at start: this module (and TVM's build path) is imported; the
    pause keeps one worker from taking every warm-up job while another has not started."""
    import time

    from tvm.driver import build  # noqa: F401  (what the first build would import)
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock  # noqa: F401

    time.sleep(pause_s)


def build_and_export(mod, target, nvcc_arch: str | None) -> str:
    """The worker's job: build, optionally check CUDA with nvcc, export to a tar file."""
    from tvm.support.tar import tar

    rt_mod = build_module(mod, target)
    if nvcc_arch:
        with target:
            compile_cuda_kernels(rt_mod, nvcc_arch)
    artifact_dir = tempfile.mkdtemp(prefix="costlab-build-")
    artifact_path = os.path.join(artifact_dir, "tvm_tmp_mod." + tar.output_format)
    rt_mod.export_library(artifact_path, fcompile=tar)
    return artifact_path
