"""The runner factory: local or through a TVM RPC tracker, from the config."""

from __future__ import annotations

import os

from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, LocalRunner, RPCConfig, RPCRunner

from costlab.config import MeasureSpec, RunnerSpec


def evaluator_config(measure: MeasureSpec) -> EvaluatorConfig:
    return EvaluatorConfig(
        number=measure.number,
        repeat=measure.repeat,
        min_repeat_ms=measure.min_repeat_ms,
        enable_cpu_cache_flush=False,
    )


def make_runner(spec: RunnerSpec, measure: MeasureSpec, cuda: bool = False):
    """A MetaSchedule runner for ``spec`` (``kind: local`` or ``kind: rpc``).

    For CUDA, TVM 0.27 compiles the packaged CUDA source when the runner loads the
    module: with NVRTC by default (which needs ``cuda-bindings``), or with nvcc when
    ``TVM_CUDA_COMPILE_MODE=nvcc``. costlab sets nvcc for its local runner workers;
    RPC servers need the variable in their own environment (see the README).
    """
    if cuda:
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    if spec.kind == "local":
        return LocalRunner(timeout_sec=spec.timeout_s, evaluator_config=evaluator_config(measure))
    host, port = spec.tracker_host_port
    rpc_config = RPCConfig(
        tracker_host=host,
        tracker_port=port,
        tracker_key=spec.key,
        session_timeout_sec=int(spec.session_timeout_s),
    )
    return RPCRunner(rpc_config=rpc_config, evaluator_config=evaluator_config(measure),
                     max_workers=None)
