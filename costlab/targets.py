"""Named target presets. ``cpu`` names the host CPU; CUDA presets name the GPU arch.

Targets are dicts in TVM 0.27 (CLI strings are rejected). A dict given by the user
is passed through unchanged.
"""

from __future__ import annotations

import os
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


def this_cpu() -> str:
    """This machine's CPU, as LLVM names it (what ``target: cpu`` builds for)."""
    from tvm.target.codegen import llvm_get_system_cpu

    return str(llvm_get_system_cpu())


def host_cpu_target(num_cores: int | None = None) -> dict[str, Any]:
    """The LLVM target for this machine's CPU, with all its cores by default."""
    cores = num_cores or len(os.sched_getaffinity(0))
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
    try:
        if d.get("kind") == "cuda" and "host" not in d:
            return Target(d, host=host_cpu_target())
        return Target(d)
    except Exception as err:
        raise CostlabError(f"invalid target {spec!r}: {err}") from err


def device_type(target) -> str:
    """The runner's device type (``cpu`` or ``cuda``) for a target."""
    return "cuda" if target.kind.name == "cuda" else "cpu"
