"""A MetaSchedule builder with persistent worker processes.

TVM's ``LocalBuilder`` starts new worker processes for every batch, and each one
pays TVM's import again (and, with the default build function, the tensor
intrinsics import): on 2 cores most of the build time went there, and builds timed
out. ``PersistentBuilder`` keeps its workers between batches and uses
:mod:`costlab.search.build_funcs`. A failed or timed-out build is a recorded
``BuilderResult`` error, never an exception.

Each built kernel is a tar file in a directory of its own under the temporary folder.
MetaSchedule's ``RemoveBuildArtifact`` callback removes a measured one; ``shutdown``
removes those still there (a script's kernels), so that thousands of re-timed kernels do
not pile up in ``/tmp``. A run stopped by a signal leaves its batch in flight there.
"""

from __future__ import annotations

import os
import shutil

from tvm.s_tir.meta_schedule.builder import BuilderInput, BuilderResult, PyBuilder
from tvm.ir.utils import derived_object
from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

from costlab.search.build_funcs import build_and_export, warm_up_worker
from costlab.targets import usable_cores


def _cuda_arch(target) -> str | None:
    """The arch nvcc compiles a CUDA target's kernels for; None for other targets.

    TVM fills ``arch`` for every cuda target (its guess, sm_50, on a machine without a GPU;
    ``targets.check_cuda_buildable`` refuses a guess nvcc cannot compile before the first build)."""
    if target.kind.name != "cuda":
        return None
    return str(target.attrs["arch"])


@derived_object
class PersistentBuilder(PyBuilder):
    """Builds candidates in a pool of long-lived worker processes.

    Parameters
    ----------
    max_workers: number of worker processes (default: all cores).
    timeout_s: seconds one build may take before its worker is killed.
    nvcc: compile CUDA kernels with nvcc on this machine (a failure is a build error).

    A built kernel's ``artifact_path`` stays valid until :meth:`shutdown`, which removes it.
    """

    def __init__(self, max_workers: int | None = None, timeout_s: float = 60.0, nvcc: bool = True):
        super().__init__()
        self.max_workers = max_workers or usable_cores()
        self.timeout_s = timeout_s
        self.nvcc = nvcc
        self._pool: PopenPoolExecutor | None = None
        self._artifact_dirs: set[str] = set()  # built here, perhaps removed since

    def _get_pool(self) -> PopenPoolExecutor:
        if self._pool is None:
            self._pool = PopenPoolExecutor(max_workers=self.max_workers, timeout=self.timeout_s)
        return self._pool

    def start(self) -> None:
        """Start every worker and have it import what a build needs, before any session's
        clock runs: the first session of a run paid it alone (about 4 s of a 32³ GEMM's
        10 s), so its wall and build times compared badly with the sessions after it."""
        list(self._get_pool().map_with_error_catching(warm_up_worker, [0.2] * self.max_workers))

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        pool = self._get_pool()
        jobs = [
            (inp.mod, inp.target, _cuda_arch(inp.target) if self.nvcc else None)
            for inp in build_inputs
        ]
        results: list[BuilderResult] = []
        for res in pool.map_with_error_catching(lambda job: build_and_export(*job), jobs):
            if res.status == StatusKind.COMPLETE:
                results.append(BuilderResult(res.value, None))
                self._artifact_dirs.add(os.path.dirname(res.value))
            elif res.status == StatusKind.TIMEOUT:
                results.append(BuilderResult(None, f"costlab builder: timeout, killed after {self.timeout_s} s"))
            else:
                results.append(BuilderResult(None, f"costlab builder: build failed\n{res.value}"))
        return results

    def shutdown(self) -> None:
        """Stop the workers and remove the kernels built that are still on disk."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for artifact_dir in self._artifact_dirs:  # those the callback removed are gone already
            shutil.rmtree(artifact_dir, ignore_errors=True)
        self._artifact_dirs.clear()
