"""Measured time per tuning phase, in seconds, and wrappers that measure it."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from contextlib import contextmanager

from tvm.s_tir.meta_schedule.builder import BuilderInput, BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import PyRunner, PyRunnerFuture, RunnerInput, RunnerResult
from tvm.ir.utils import derived_object

from costlab.search.runner import farm_stopped


class PhaseTimer:
    """Accumulates wall seconds per phase (``build_s``, ``run_s``, ``cost_model_update_s``...).

    A phase entered inside another one, in the same thread, is not counted again: its time
    belongs to the outer phase (``resume_warm_start_s`` holds the model update it makes).
    """

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._open = threading.local()

    @contextmanager
    def phase(self, name: str):
        if getattr(self._open, "name", None) is not None:
            yield
            return
        self._open.name = name
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.calls[name] += 1
            self._open.name = None


@derived_object
class DoneRunnerFuture(PyRunnerFuture):
    """A runner future whose result is already known."""

    def __init__(self, run_secs, error_msg):
        super().__init__()
        self.run_secs = run_secs
        self.error_msg = error_msg

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return RunnerResult(self.run_secs, self.error_msg)


@derived_object
class TimedBuilder(PyBuilder):
    """Delegates to a builder and adds its wall time to ``build_s``."""

    def __init__(self, inner, timer: PhaseTimer):
        super().__init__()
        self.inner = inner
        self.timer = timer

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        with self.timer.phase("build_s"):
            return self.inner.build(build_inputs)


@derived_object
class TimedRunner(PyRunner):
    """Delegates to a runner, waits for every result, and adds the wall time to ``run_s``.

    A runner exception (for example an RPC server that died) becomes a failed
    result for the trials of that batch, so they are recorded, not lost.
    """

    def __init__(self, inner, timer: PhaseTimer):
        super().__init__()
        self.inner = inner
        self.timer = timer

    def run(self, runner_inputs: list[RunnerInput]):
        with self.timer.phase("run_s"):
            try:
                futures = self.inner.run(runner_inputs)
            except Exception as err:  # the whole batch failed to start
                return [DoneRunnerFuture(None, f"costlab runner: {err}") for _ in runner_inputs]
            done = []
            for future in futures:
                try:
                    result = future.result()
                    done.append(DoneRunnerFuture(result.run_secs, result.error_msg))
                except Exception as err:
                    if farm_stopped(self.inner) is not None:  # not the kernels': the run stops, recording none
                        raise
                    done.append(DoneRunnerFuture(None, f"costlab runner: {err}"))
            return done
