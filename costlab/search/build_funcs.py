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
    return tvm_build(mod, target=target)


def compile_cuda_kernels(rt_mod, arch: str) -> None:
    """Compile the CUDA source of ``rt_mod`` with nvcc to a cubin for ``arch``.

    TVM 0.27 only packages CUDA source and compiles it when the GPU machine loads
    the module; compiling here turns a kernel that does not compile into a recorded
    build failure instead of a runner crash.
    """
    from tvm.support import nvcc

    for sub in rt_mod.imports:
        if sub.kind == "cuda":
            source = sub.inspect_source("cu")
            nvcc.compile_cuda(source, target_format="cubin", arch=arch, compiler="nvcc")


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
