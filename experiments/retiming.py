"""What the re-timing benchmarks share: find the runs, build recorded kernels once, time them again,
head a report.

Used by ``noise_floor.py``, ``retime_finals.py``, ``retime_curves.py`` and ``cross_machine.py`` (run as
scripts from this folder).
"""

from __future__ import annotations

import datetime
import shlex
import math


def load_pooled(cfg, config_path, pool_paths) -> list:
    """The configs to pool with CFG (read from CONFIG_PATH), each checked to share its target and
    measurement; SystemExit naming the file and field when one does not."""
    from costlab.config import load_config

    pooled = [load_config(path) for path in pool_paths]
    for path, other in zip(pool_paths, pooled):
        for field in ("target", "measure", "runner"):
            if getattr(other, field) != getattr(cfg, field):
                raise SystemExit(f"error: {path}: field {field}: {getattr(other, field)!r} is not {config_path}'s "
                                 f"{getattr(cfg, field)!r}; runs measured differently do not pool")
    return pooled


def finished_runs(cfg, pooled, workload) -> list[tuple]:
    """``(experiment name, model label, seed, records in commit order)`` of every finished run of
    WORKLOAD: CFG's models and seeds, then each pooled experiment's runs of the same workload and
    models (by label) on its own seeds. A run is finished when its database holds its budget."""
    from costlab.data.database import read_database
    from costlab.search.session import session_dir
    from costlab.workloads import workload_key

    key = workload_key(workload.name, workload.params)
    runs = []
    for experiment in [cfg, *pooled]:
        models = {m.display_name: m for m in experiment.cost_models}
        if experiment is not cfg and not any(workload_key(w.name, w.params) == key for w in experiment.workloads):
            continue
        for label in [m.display_name for m in cfg.cost_models if m.display_name in models]:
            for seed in experiment.seeds:
                path = session_dir(experiment, workload, models[label], seed)
                if not (path / "database_tuning_record.json").exists():
                    continue
                records = list(read_database(path))
                if len(records) >= experiment.search.trials:
                    runs.append((experiment.name, label, seed, records))
    return runs


def runner_inputs(cfg, records, builder, target=None) -> list:
    """One ``RunnerInput`` per database record, each kernel built once for TARGET (a preset name or
    a target dict; the experiment's target by default)."""
    from tvm.s_tir.meta_schedule.builder import BuilderInput
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    from costlab.targets import device_type, make_target

    target = make_target(cfg.target if target is None else target)
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


def read_timings(paths) -> list:
    """The timings previous runs of a re-timing script wrote (their JSONs), pooled when there are
    several (:func:`pool_timings`); SystemExit naming the file when one cannot be read."""
    import json

    runs = []
    for path in paths:
        try:
            runs.append(json.loads(path.read_text()))
        except (OSError, ValueError) as err:
            raise SystemExit(f"error: --from-json {path}: {err}") from None
    pooled = runs[0]
    for path, other in zip(paths[1:], runs[1:]):
        pooled = pool_timings(pooled, other, f"--from-json {path}")
    return pooled


def pool_timings(first, second, where: str, at: str = "$"):
    """Two re-timings of the same kernels as one: every ``retimed_us`` holds the timings of both
    (a list of lists, list by list); everything else must be equal, or SystemExit names WHERE and
    the first field AT which they differ (then they did not re-time the same kernels)."""
    if isinstance(first, dict) and isinstance(second, dict) and first.keys() == second.keys():
        return {key: (pool_retimed(first[key], second[key], where, f"{at}.{key}") if key == "retimed_us"
                      else pool_timings(first[key], second[key], where, f"{at}.{key}")) for key in first}
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [pool_timings(a, b, where, f"{at}[{i}]") for i, (a, b) in enumerate(zip(first, second))]
    if first != second:
        raise SystemExit(f"error: {where}: field {at} is {second!r:.120}, not {first!r:.120} as in the first JSON; "
                         "only re-timings of the same kernels (the same command's output) pool")
    return first


def pool_retimed(first: list, second: list, where: str, at: str) -> list:
    if first and isinstance(first[0], list):
        if len(first) != len(second):
            raise SystemExit(f"error: {where}: field {at} holds {len(second)} lists of timings, not {len(first)}")
        return [a + b for a, b in zip(first, second)]
    return first + second


def from_json_options(paths) -> str:
    """How the report's command line names the JSONs it read."""
    return " ".join(f"--from-json {path}" for path in paths)


def retiming_args(description: str, out_help: str):
    """The command line ``retime_finals.py`` and ``retime_curves.py`` share: CONFIG and its
    overrides, ``--repeats``, ``--pool``, ``--from-json`` and ``--out`` (OUT_HELP)."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("config", type=Path)
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, as for costlab run")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--pool", type=Path, action="append", default=[], metavar="OTHER_CONFIG",
                    help="also re-time this experiment's finished runs of the same workloads and models (repeatable)")
    ap.add_argument("--from-json", type=Path, action="append", metavar="JSON",
                    help="analyse the timings of a previous run's JSON instead of measuring; given more than once, "
                         "each kernel's timings from all of them, pooled (re-timings of the same kernels)")
    ap.add_argument("--out", type=Path, help=out_help)
    return ap.parse_args()


def config_and_timings(args, measure) -> tuple:
    """``(cfg, pooled configs, per-run timings)``: read from ``--from-json``, else from
    ``measure(args, cfg, pooled)``; SystemExit when there are none."""
    from costlab.config import load_config

    cfg = load_config(args.config, args.overrides)
    pooled = load_pooled(cfg, args.config, args.pool)
    per_run = read_timings(args.from_json) if args.from_json else measure(args, cfg, pooled)
    if not per_run:
        raise SystemExit(f"error: {from_json_options(args.from_json)}: no runs in it" if args.from_json
                         else f"error: {args.config}: no finished runs to re-time under {cfg.work_path}")
    return cfg, pooled, per_run


def time_each_in_fresh_worker(cfg, inputs) -> list[float]:
    """:func:`time_each` with a runner made for this call and shut down after it. TVM's runner
    worker keeps memory of every kernel it ran (3–5 MB per 1024³ GEMM kernel here), so
    thousands of timings in one worker run out of memory."""
    from costlab.search.runner import make_runner

    runner = make_runner(cfg.runner, cfg.measure)
    try:
        return time_each(runner, inputs)
    finally:
        runner.pool.shutdown()


def time_in_rounds(cfg, inputs, repeats: int, rng, key: str, started: float) -> list[list[float]]:
    """Each input's REPEATS timings (µs): every input once per round, in an order RNG shuffles
    anew each round, each round in a fresh runner worker; a progress line per round, timed from
    STARTED (``time.perf_counter()``)."""
    import time

    timings = [[] for _ in inputs]
    for round_index in range(repeats):
        order = rng.permutation(len(inputs))
        for i, secs in zip(order, time_each_in_fresh_worker(cfg, [inputs[i] for i in order])):
            timings[i].append(secs * 1e6)
        print(f"{key}: round {round_index + 1}/{repeats} done ({time.perf_counter() - started:.0f} s)", flush=True)
    return timings


def write_report(lines: list[str], out, timings=None, indent: int | None = None) -> None:
    """Print the report; with OUT, write it there as markdown and TIMINGS (unless None) as JSON beside it."""
    import json

    print("\n".join(lines))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        if timings is not None:
            out.with_suffix(".json").write_text(json.dumps(timings, indent=indent))
        print(f"wrote {out}" + ("" if timings is None else f" and {out.with_suffix('.json')}"))


def report_header(title: str, script: str, args, options: str) -> list[str]:
    """The title, the command that produced the report (with its config overrides), and the machine."""
    from costlab.report.compare import machine_description

    return [f"# {title}", "",
            f"Produced by `python experiments/{script} {args.config} "
            + "".join(f"{shlex.quote(o)} " for o in args.overrides)
            + f"{options}` on {datetime.date.today().isoformat()}.", "",
            (f"Machine: the timings are those earlier runs wrote to {', '.join(map(str, args.from_json))} (`git log "
             f"--follow` on each names that run and its machine); this report was written on {machine_description()}."
             if getattr(args, "from_json", None) else f"Machine: {machine_description()}."), ""]
