"""The runner factory: local or through a TVM RPC tracker, from the config."""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from pathlib import Path

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.runner import (EvaluatorConfig, LocalRunner, PyRunner, PyRunnerFuture, RPCConfig,
                                             RPCRunner, RunnerResult)

from costlab.config import MeasureSpec, RunnerSpec
from costlab.errors import CostlabError
from costlab.search.farm import free_servers, probe_server, registered_servers, server_addresses, tracker_summary
from costlab.targets import base_arch, sm_arch, this_cpu

FARM_CHECK_EVERY_S = 10.0  # while a measurement is awaited, the tracker is asked this often


def evaluator_config(measure: MeasureSpec) -> EvaluatorConfig:
    return EvaluatorConfig(
        number=measure.number,
        repeat=measure.repeat,
        min_repeat_ms=measure.min_repeat_ms,
        enable_cpu_cache_flush=False,
    )


@derived_object
class FastestOfRepeats(PyRunner):
    """``measure.reduce: min``: each trial's ``repeat`` timings reach the caller (MetaSchedule's
    database, TVM's XGBModel, costlab's models and curves, the re-timing scripts) as one timing,
    the fastest. With ``repeats_file``, the timings themselves are appended there (JSON lines
    ``{"min_s": ..., "run_secs": [...]}``, one per successful trial, in the order the results
    are read), so none is lost."""

    def __init__(self, inner, repeats_file: Path | None = None):
        super().__init__()
        self.inner = inner
        self.repeats_file = repeats_file

    def run(self, runner_inputs):
        return [FastestOfRepeatsFuture(future, self.repeats_file) for future in self.inner.run(runner_inputs)]

    @property
    def pool(self):
        """The wrapped runner's worker pool, for a caller that shuts it down (as of TVM's runners)."""
        return self.inner.pool


@derived_object
class FastestOfRepeatsFuture(PyRunnerFuture):
    """A runner future whose result keeps only the fastest of its timings (a failed one as it is)."""

    def __init__(self, inner, repeats_file: Path | None):
        super().__init__()
        self.inner = inner
        self.repeats_file = repeats_file

    def done(self) -> bool:
        return self.inner.done()

    def result(self) -> RunnerResult:
        result = self.inner.result()
        if result.error_msg is not None or not result.run_secs:
            return result
        values = [float(v) for v in result.run_secs]
        fastest = min(values)
        if self.repeats_file is not None:
            with open(self.repeats_file, "a") as f:
                f.write(json.dumps({"min_s": fastest, "run_secs": values}) + "\n")
        return RunnerResult([fastest], None)


class FarmDown(CostlabError):
    """The RPC farm stopped measuring: the tracker does not answer, no server is registered
    under the key any more, or a measurement got no result within the runner's limits."""


@derived_object
class WatchedRPCRunner(PyRunner):
    """TVM's RPCRunner waits without end for a result: a request waits in the tracker's queue
    when every server under the key is gone, and a session waits on a frozen server. A failed
    tracker is recorded as failed kernels. This runner asks the tracker every
    ``FARM_CHECK_EVERY_S`` while a result is awaited, and after each failed result, and stops
    the run (:class:`FarmDown`) when the tracker does not answer, no server is registered under
    the key, or a result took longer than ``session_timeout_s + queue_timeout_s``. The batch in
    flight is not recorded, so a rerun measures it. A server that leaves the tracker while a
    trial fails is named in a warning: TVM 0.27's ``rpc_server`` stops taking work, still
    running, when a kernel crashes its session, so a farm would shrink without a word; so is one
    gone at a batch's start since the last (its serving process killed while the session it had
    forked finished the trial)."""

    def __init__(self, inner, spec: RunnerSpec):
        super().__init__()
        self.inner = inner
        self.spec = spec
        self.stopped: str | None = None  # why the farm was given up, once it was
        self.servers_at_batch: set[tuple[str, int]] = set()  # (host, port) registered under the key

    def run(self, runner_inputs):
        previous, now = self.servers_at_batch, self._servers_now()
        if now is not None and (left := previous - now):  # asked again 2 s later: one may be between sessions
            time.sleep(2.0)
            left -= self._servers_now() or set()
            now |= previous - left
        if now is not None and left:
            where = ", ".join(f"{host}:{port}" for host, port in sorted(left))
            warnings.warn(f"RPC server {where} under key {self.spec.key!r} left the tracker since the last batch, "
                          f"whose trials were all measured: it died or stopped taking work (restart it). The run "
                          f"goes on with the servers left")
        self.servers_at_batch = now if now is not None else previous
        return [WatchedRPCFuture(future, self) for future in self.inner.run(runner_inputs)]

    def _servers_now(self) -> set[tuple[str, int]] | None:
        """The servers registered under the key now; None when the tracker does not answer."""
        try:
            return server_addresses(tracker_summary(self.spec.tracker), self.spec.key)
        except CostlabError:
            return None

    def servers_gone(self) -> set[tuple[str, int]]:
        """The servers of the batch's start no longer registered, still gone when asked again 2 s
        later (a server may be between sessions); empty when the tracker does not answer."""
        gone = self.servers_at_batch
        for wait_s in (0.0, 2.0):
            time.sleep(wait_s)
            if (now := self._servers_now()) is None:
                return set()
            gone = gone - now
            if not gone:
                break
        return gone

    @property
    def pool(self):
        """The wrapped runner's worker pool, for a caller that shuts it down (as of TVM's runners)."""
        return self.inner.pool

    def check_farm(self, waited_s: float) -> None:
        """Raise :class:`FarmDown` when the farm cannot give a result any more (a tracker that
        does not answer, or no server under the key, is asked once more 2 s later first)."""
        spec = self.spec
        if (problem := self._tracker_problem()) is not None:
            time.sleep(2.0)
            if (problem := self._tracker_problem()) is not None:
                self._stop(problem)
        limit_s = spec.session_timeout_s + spec.queue_timeout_s
        if waited_s > limit_s:
            self._stop(f"a measurement got no result in {waited_s:.0f} s, over its limit of {limit_s:g} s "
                       f"(runner.session_timeout_s {spec.session_timeout_s:g} + runner.queue_timeout_s "
                       f"{spec.queue_timeout_s:g}; the farm is checked every {FARM_CHECK_EVERY_S:g} s): a server "
                       f"under key {spec.key!r} does not answer, or other work holds them all (then raise "
                       f"queue_timeout_s)")

    def _tracker_problem(self) -> str | None:
        """What the check before the first trial would now refuse: a tracker that does not
        answer, or no server under the key; None when the farm still stands."""
        try:
            servers_under_key(self.spec)
        except CostlabError as err:
            return str(err)
        return None

    def _stop(self, why: str) -> None:
        self.stopped = (f"the RPC farm stopped measuring: {why}. The run stopped there: every measured record is "
                        f"safe, and the batch in flight was not recorded. Once the farm measures again, run the same "
                        f"command to resume")
        _kill_pool_workers(self.inner.pool)
        raise FarmDown(self.stopped)


def _kill_pool_workers(pool) -> None:
    """Cancel the queued measurements of a TVM ``PopenPoolExecutor`` and kill its worker
    processes (each waits on the farm), so that the threads reading them end and the process can
    exit. Not ``pool.shutdown()``: it closes each worker's pipe, which waits for the thread blocked
    reading it (TVM 0.27 keeps the threads in ``_threadpool``, the workers in ``_worker_map``)."""
    import psutil

    threads = getattr(pool, "_threadpool", None)
    if threads is not None:  # a queued measurement would start a new worker, which would wait too
        threads.shutdown(wait=False, cancel_futures=True)
    for worker in list(getattr(pool, "_worker_map", {}).values()):
        proc = getattr(worker, "_proc", None)
        if proc is None:
            continue
        try:
            for process in [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]:
                process.kill()
        except psutil.NoSuchProcess:
            pass


@derived_object
class WatchedRPCFuture(PyRunnerFuture):
    """An RPC runner future whose result is awaited while the farm is watched."""

    def __init__(self, inner, runner: WatchedRPCRunner):
        super().__init__()
        self.inner = inner
        self.runner = runner

    def done(self) -> bool:
        return self.inner.done()

    def result(self) -> RunnerResult:
        if self.runner.stopped is not None:  # given up on an earlier result of the batch
            raise FarmDown(self.runner.stopped)
        result = self._await()
        if result.error_msg is not None and (gone := self.runner.servers_gone()):
            self.runner.servers_at_batch -= gone  # named once
            where = ", ".join(f"{host}:{port}" for host, port in sorted(gone))
            warnings.warn(f"RPC server {where} under key {self.runner.spec.key!r} left the tracker as a trial "
                          f"failed, which is recorded as failed: the server died, or the kernel crashed its session, "
                          f"after which TVM's rpc_server keeps running but takes no more work (restart it). The run "
                          f"goes on with the servers left")
        return result

    def _await(self) -> RunnerResult:
        started = checked = time.monotonic()
        while not self.inner.done():  # the future TVM's runner gave: its result() would wait without end
            time.sleep(0.05)
            if (now := time.monotonic()) - checked >= FARM_CHECK_EVERY_S:
                checked = now
                self.runner.check_farm(now - started)
        result = self.inner.result()
        if result.error_msg is not None:  # a failure during an outage is the farm's, not the kernel's
            self.runner.check_farm(0.0)
        return result


def farm_stopped(runner) -> str | None:
    """Why ``runner`` (a runner of :func:`make_runner`) gave its RPC farm up; None if it did not."""
    while runner is not None:
        if isinstance(runner, WatchedRPCRunner):
            return runner.stopped
        runner = getattr(runner, "inner", None)
    return None


def make_runner(spec: RunnerSpec, measure: MeasureSpec, cuda: bool = False, repeats_file: Path | None = None):
    """A MetaSchedule runner for ``spec`` (``kind: local`` or ``kind: rpc``), which with
    ``measure.reduce: min`` hands on each trial's fastest timing only (:class:`FastestOfRepeats`;
    ``repeats_file``: where the timings themselves go).

    For CUDA, TVM 0.27 compiles the packaged CUDA source when the runner loads the
    module: with NVRTC by default (which needs ``cuda-bindings``), or with nvcc when
    ``TVM_CUDA_COMPILE_MODE=nvcc``. costlab sets nvcc for its local runner workers;
    RPC servers need the variable in their own environment (see the README).
    """
    if cuda:
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    runner = _runner(spec, measure)
    return FastestOfRepeats(runner, repeats_file) if measure.reduce == "min" else runner


def _runner(spec: RunnerSpec, measure: MeasureSpec):
    if spec.kind == "local":
        return LocalRunner(timeout_sec=spec.timeout_s, evaluator_config=evaluator_config(measure))
    host, port = spec.tracker_host_port
    rpc_config = RPCConfig(
        tracker_host=host,
        tracker_port=port,
        tracker_key=spec.key,
        session_timeout_sec=math.ceil(spec.session_timeout_s),  # TVM reads 0 as no limit
    )
    # TVM's RPCRunner measures one candidate at a time unless told how many at once
    return WatchedRPCRunner(RPCRunner(rpc_config=rpc_config, evaluator_config=evaluator_config(measure),
                                      max_workers=spec.workers or servers_under_key(spec)), spec)


def check_measurable(spec: RunnerSpec, target) -> int:
    """Refuse, before a trial is spent, a setup whose measurements would fail, or measure code
    built for another machine, and be recorded as results: an RPC tracker that does not answer
    or has no server under the key, a CUDA target with no GPU where it is measured, or a target
    built for this machine's CPU (``target: cpu``, a CUDA target's default host) measured on RPC
    servers of another CPU (an idle server is asked; another ``mcpu`` named on purpose only
    warns). Returns how many measurements can run at once (the servers under the key; 1 locally)."""
    cuda = target.kind.name == "cuda"
    if spec.kind == "local":
        if cuda:
            import tvm

            if not (tvm.runtime.enabled("cuda") and tvm.cuda(0).exist):
                raise CostlabError("target is CUDA but this machine has no GPU for the local runner: measure on a "
                                   "GPU machine, or through an RPC farm (runner: {kind: rpc, tracker: HOST:PORT, "
                                   "key: KEY}); every trial would be recorded as a failed kernel")
            warn_if_another_gpu(target, sm_arch(tvm.cuda(0).compute_version), "this machine's GPU")
        return 1
    summary = tracker_summary(spec.tracker)
    servers = servers_under_key(spec, summary)
    if not free_servers(summary, spec.key):  # every server is busy; asking one would wait in the tracker's queue
        warnings.warn(f"every RPC server under key {spec.key!r} is busy; the servers' CPU and GPU were not checked "
                      "against the target", stacklevel=2)
        return servers
    server = probe_server(spec.tracker, spec.key)
    if server is None:  # every server turned busy since the summary, or one is frozen: nothing to check against
        warnings.warn(f"no RPC server under key {spec.key!r} answered within 10 s (all turned busy, or one "
                      "does not answer); the servers' CPU and GPU were not checked, and a measurement that gets "
                      "no result stops the run after runner.session_timeout_s + runner.queue_timeout_s",
                      stacklevel=2)
        return servers
    cpu_target = target.host if cuda else target  # a CUDA kernel's launch code runs on the server's CPU
    mcpu = str(cpu_target.attrs.get("mcpu") or "") if cpu_target is not None else ""
    if mcpu and server.cpu and mcpu != server.cpu:
        what = (f"target {'host ' if cuda else ''}mcpu {mcpu!r} is not the CPU of the RPC servers under key "
                f"{spec.key!r} ({server.cpu!r})")
        if mcpu != this_cpu():  # named on purpose (a portable baseline such as x86-64-v3, say)
            warnings.warn(f"{what}; measuring as the config says", stacklevel=2)
        else:  # this machine's CPU, as target: cpu and a CUDA target without a host name it
            example = (f"{{kind: cuda, arch: ..., host: {{kind: llvm, mcpu: {server.cpu}}}}} (a CUDA target "
                       f"without a host gets this machine's CPU)" if cuda else
                       f"{{kind: llvm, mcpu: {server.cpu}, num-cores: CORES}} (target: cpu names this machine's CPU)")
            raise CostlabError(f"{what}: code would be built for this machine's CPU and run on another. Name the "
                               f"servers' CPU in the config's target, for example target: {example}")
    if cuda and not server.has_gpu:
        raise CostlabError(f"target is CUDA but the RPC servers under key {spec.key!r} have no GPU (one of them "
                           f"answered); every trial would be recorded as a failed kernel")
    if cuda:
        warn_if_another_gpu(target, server.gpu_arch, f"the GPU of the RPC servers under key {spec.key!r}")
    return servers


def warn_if_another_gpu(target, gpu_arch: str | None, where: str) -> None:
    """Warn when a CUDA target names another arch than the GPU that measures it: its kernels are
    tuned to the named GPU's limits and timed on another, which the records would not say."""
    arch = str(target.attrs.get("arch", ""))
    if gpu_arch and base_arch(arch) != gpu_arch:
        warnings.warn(f"target arch {arch!r} is not the arch of {where} ({gpu_arch!r}); measuring as the config "
                      f"says (a preset names its GPU: h100/h200 sm_90, a100 sm_80, rtx4090 sm_89)", stacklevel=3)


def servers_under_key(spec: RunnerSpec, summary: dict | None = None) -> int:
    """The servers registered under the RPC key, idle or busy; none is an error. ``summary``:
    the tracker's, when the caller has it already."""
    summary = summary if summary is not None else tracker_summary(spec.tracker)
    servers = registered_servers(summary, spec.key)
    if not servers:
        # the keys servers registered (the queue also names keys that only have waiting requests)
        keys = ", ".join(sorted({server["key"].removeprefix("server:") for server in summary.get("server_info", [])
                                 if str(server.get("key", "")).startswith("server:")})) or "none"
        raise CostlabError(f"RPC tracker {spec.tracker} has no server under key {spec.key!r} (keys there: {keys}); "
                           f"start one with python -m tvm.exec.rpc_server --tracker {spec.tracker} --key {spec.key}")
    return servers
