"""costlab's import of TVM's tensor intrinsics: the CPU ones alone for a CPU target, the CUDA
ones added when asked for, and TVM's own import of the package a no-op afterwards.

Each case runs in a fresh interpreter: the test session has imported every intrinsic already.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import sys
from costlab._tvm import import_tensor_intrinsics
from tvm.s_tir import TensorIntrin

import_tensor_intrinsics(cuda=False)
print("x86", TensorIntrin.get("dot_16x4_vnni", allow_missing=True) is not None)
print("cuda", TensorIntrin.get("mma_ldmatrix_f16_a", allow_missing=True) is not None,
      "tvm.s_tir.tensor_intrin.cuda" in sys.modules)

from tvm.s_tir import meta_schedule as ms  # TuneContext imports the package itself: nothing more
from costlab.targets import make_target
from costlab.workloads import build_workload
ms.TuneContext(mod=build_workload("gemm", {"M": 16, "N": 16, "K": 16}), target=make_target("cpu"),
               space_generator="post-order-apply").generate_design_space()
print("after tune context", "tvm.s_tir.tensor_intrin.cuda" in sys.modules)

import_tensor_intrinsics()
print("cuda", TensorIntrin.get("mma_ldmatrix_f16_a", allow_missing=True) is not None,
      "tvm.s_tir.tensor_intrin.cuda" in sys.modules)
"""


def test_a_cpu_import_registers_the_cpu_intrinsics_and_the_cuda_ones_when_asked():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "x86 True",
        "cuda False False",
        "after tune context False",
        "cuda True True",
    ]
