"""What the re-timing benchmarks share: build recorded kernels once, time them again, head a report.

Used by ``noise_floor.py`` and ``retime_finals.py`` (run as scripts from this folder).
"""

from __future__ import annotations

import datetime
import shlex
import math


def runner_inputs(cfg, records, builder) -> list:
    """One ``RunnerInput`` per database record, each kernel built once for the experiment's target."""
    from tvm.s_tir.meta_schedule.builder import BuilderInput
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    from costlab.targets import device_type, make_target

    target = make_target(cfg.target)
    built = builder.build([BuilderInput(r.schedule().mod, target) for r in records])
    inputs = []
    for record, result in zip(records, built):
        if result.error_msg:
            raise RuntimeError(f"{record.source}: the record no longer builds: {result.error_msg[:300]}")
        inputs.append(RunnerInput(result.artifact_path, device_type(target), record.measure_candidate().args_info))
    return inputs


def time_each(runner, inputs) -> list[float]:
    """One timing (seconds; ``inf`` when it failed) per input, one runner call each, in order."""
    from costlab.data.database import mean_latency_s

    results = [future.result() for future in runner.run(inputs)]
    return [math.inf if res.error_msg else mean_latency_s(res.run_secs) for res in results]


def report_header(title: str, script: str, args, options: str) -> list[str]:
    """The title, the command that produced the report (with its config overrides), and the machine."""
    from costlab.report.compare import machine_description

    return [f"# {title}", "",
            f"Produced by `python experiments/{script} {args.config} "
            + "".join(f"{shlex.quote(o)} " for o in args.overrides)
            + f"{options}` on {datetime.date.today().isoformat()}.", "",
            f"Machine: {machine_description()}.", ""]
