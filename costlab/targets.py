"""Named target presets. ``cpu`` names the host CPU; CUDA presets name the GPU arch.

Targets are dicts in TVM 0.27 (CLI strings are rejected). A dict given by the user
is passed through unchanged.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

from costlab.errors import CostlabError

# From TVM's tags (nvidia/nvidia-h100, nvidia/nvidia-a100, nvidia/geforce-rtx-4090).
# TVM has no H200 tag; an H200 is an sm_90 H100-class part, so it gets the H100 limits.
_CUDA_LIMITS = {"max_shared_memory_per_block": 49152, "max_threads_per_block": 1024,
                "max_num_threads": 1024, "thread_warp_size": 32, "registers_per_block": 65536}
_CUDA_PRESETS: dict[str, dict[str, Any]] = {
    "h100": {"kind": "cuda", "arch": "sm_90", **_CUDA_LIMITS, "l2_cache_size_bytes": 52428800},
    "h200": {"kind": "cuda", "arch": "sm_90", **_CUDA_LIMITS, "l2_cache_size_bytes": 52428800},
    "a100": {"kind": "cuda", "arch": "sm_80", **_CUDA_LIMITS, "l2_cache_size_bytes": 41943040},
    "rtx4090": {"kind": "cuda", "arch": "sm_89", **_CUDA_LIMITS, "l2_cache_size_bytes": 75497472},
}
PRESETS = ["cpu", *_CUDA_PRESETS]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's total)."""
    return len(os.sched_getaffinity(0))


def this_cpu() -> str:
    """This machine's CPU, as LLVM names it (what ``target: cpu`` builds for)."""
    from tvm.target.codegen import llvm_get_system_cpu

    return str(llvm_get_system_cpu())


def host_cpu_target(num_cores: int | None = None) -> dict[str, Any]:
    """The LLVM target for this machine's CPU, with all its cores by default."""
    cores = num_cores or usable_cores()
    return {"kind": "llvm", "mcpu": this_cpu(), "num-cores": int(cores)}


def target_dict(spec: str | dict) -> dict[str, Any]:
    """The target dict for a preset name or a user dict (passed through)."""
    if isinstance(spec, dict):
        return dict(spec)
    if spec == "cpu":
        return host_cpu_target()
    if spec in _CUDA_PRESETS:
        return dict(_CUDA_PRESETS[spec])
    raise CostlabError(f"unknown target {spec!r}; presets: {', '.join(PRESETS)}, or a target dict")


def make_target(spec: str | dict):
    """A ``tvm.target.Target``; a CUDA target without a ``host`` gets this machine's CPU as its host."""
    from tvm.target import Target

    d = target_dict(spec)
    cores = d.get("num-cores")
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise CostlabError(f"invalid target {spec!r}: num-cores must be a whole number of cores, 1 or more "
                           f"(value: {cores!r}); TVM takes 0 or less without a word")
    try:
        if d.get("kind") == "cuda" and "host" not in d:
            return Target(d, host=host_cpu_target())
        return Target(d)
    except Exception as err:
        raise CostlabError(f"invalid target {spec!r}: {err}") from err


def device_type(target) -> str:
    """The runner's device type (``cpu`` or ``cuda``) for a target."""
    return "cuda" if target.kind.name == "cuda" else "cpu"


def nvcc_gpu_codes() -> list[str] | None:
    """The GPU archs (``sm_XX``) that the nvcc on PATH compiles for; None when there is no nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    listed = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    return sorted(set(re.findall(r"\bsm_\d+", listed.stdout)), key=lambda code: int(code[3:]))


def base_arch(arch: str) -> str:
    """A CUDA arch without its feature suffix: ``sm_90a`` and ``sm_100f`` are ``sm_90`` and ``sm_100`` parts."""
    return re.sub(r"[a-z]$", "", arch)


def sm_arch(compute_version: str) -> str:
    """A GPU's compute capability as CUDA names its arch: ``"9.0"`` is ``sm_90``."""
    major, _, minor = compute_version.partition(".")
    return f"sm_{major}{minor}"


def check_cuda_buildable(spec: str | dict) -> None:
    """Refuse, before a CUDA target's trials are tuned, one whose kernels this machine's nvcc cannot
    compile: costlab's builder compiles every CUDA kernel with nvcc, so each trial would be a recorded
    build failure. A target dict without ``arch`` gets TVM's guess: the local GPU's, or ``sm_50``
    without one. (Not at config load: logging recorded sessions, or re-scoring them, needs no nvcc.)"""
    target = make_target(spec)
    if target.kind.name != "cuda":
        return
    arch = str(target.attrs.get("arch", ""))
    guessed = "" if "arch" in target_dict(spec) else " (TVM's guess: the target names no arch)"
    codes = nvcc_gpu_codes()
    if codes is None:
        raise CostlabError("target is CUDA but there is no nvcc on PATH: costlab compiles each CUDA kernel with "
                           "nvcc on the build machine (install the CUDA toolkit, or put its bin/ on PATH)")
    if base_arch(arch) not in codes:
        raise CostlabError(f"target: CUDA arch {arch!r} is not one this machine's nvcc compiles for "
                           f"({', '.join(codes)}){guessed}; name the GPU's arch in the target, for example arch: sm_90")
    _check_nvcc_compiles(target, arch)


PROBE_KERNEL = 'extern "C" __global__ void costlab_probe(float* x) { x[threadIdx.x] += 1.0f; }\n'


def _check_nvcc_compiles(target, arch: str) -> None:
    """Compile one small kernel for ``arch`` as the builder compiles each candidate: an nvcc that
    lists the arch may still compile nothing (no host compiler on PATH, one it does not support,
    a broken ptxas), and every trial would then be a recorded build failure."""
    from tvm.support import nvcc

    try:
        with target:  # as the builder's workers compile
            nvcc.compile_cuda(PROBE_KERNEL, target_format="cubin", arch=arch, compiler="nvcc")
    except Exception as err:  # noqa: BLE001  (TVM raises RuntimeError with nvcc's output)
        said = [line.strip() for line in str(err).splitlines() if line.strip()]
        raise CostlabError(f"target is CUDA, but this machine's nvcc cannot compile a kernel for {arch}: "
                           f"{' / '.join(said[-3:])[:500].rstrip('.')}; every trial would be a recorded build failure "
                           "(nvcc needs a host compiler it supports, gcc or clang, on PATH)") from None
