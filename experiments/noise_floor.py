"""The measurement noise floor of a tuning experiment: re-time its fastest kernels.

For every workload of CONFIG, take the TOP fastest records over all its models and
seeds (from the experiment's tuning databases), build each once, and time it REPEATS
more times with the experiment's own measurement settings (one runner input per
timing, as during tuning). The spread says how far apart one kernel's single
measurements fall, against T95's 5% threshold, and how much the recorded best (the
minimum of many noisy timings) flatters the kernel.

    python experiments/noise_floor.py experiments/cpu-suite.yaml --repeats 30 \
        --out experiments/results/noise_floor.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def fastest_records(cfg, workload, top: int):
    """The ``top`` fastest measured records of ``workload`` over the experiment's sessions."""
    from costlab.data.database import read_database
    from costlab.search.session import session_dir

    found = []
    for model in cfg.cost_models:
        for seed in cfg.seeds:
            path = session_dir(cfg, workload, model, seed)
            if (path / "database_tuning_record.json").exists():
                found += [(r.latency_s, model.display_name, seed, r) for r in read_database(path) if r.ok]
    found.sort(key=lambda item: item[0])
    return found[:top]


def fastest_kernels(cfg, builder, top: int):
    """For each workload of the experiment that has measured records: its key, its ``top`` fastest
    records (as :func:`fastest_records`) and a built ``RunnerInput`` for each. Workloads without
    records are named and skipped."""
    from retiming import runner_inputs

    from costlab.workloads import workload_key

    for workload in cfg.workloads:
        key = workload_key(workload.name, workload.params)
        records = fastest_records(cfg, workload, top)
        if not records:
            print(f"{key}: no measured records under {cfg.work_path}, skipped", flush=True)
            continue
        yield key, records, runner_inputs(cfg, [r for *_, r in records], builder)


def main() -> None:
    from retiming import report_header, time_each

    from costlab.config import load_config
    from costlab.search.builder import PersistentBuilder
    from costlab.search.runner import make_runner

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, as for costlab run")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--top", type=int, default=3, help="fastest records re-timed per workload")
    ap.add_argument("--out", type=Path, help="write the table as markdown here too")
    args = ap.parse_args()
    cfg = load_config(args.config, args.overrides)
    builder = PersistentBuilder(nvcc=False)
    runner = make_runner(cfg.runner, cfg.measure)
    m = cfg.measure
    lines = report_header(f"Measurement noise floor of {cfg.name}", "noise_floor.py", args,
                          f"--repeats {args.repeats} --top {args.top}")
    lines += [f"Each kernel is one of the {args.top} fastest records of its workload over all models and seeds, "
              f"built once and timed {args.repeats} times with the experiment's settings (number={m.number}, "
              f"repeat={m.repeat}, min_repeat_ms={m.min_repeat_ms}), each timing a separate runner call as in "
              "tuning. `spread` is (max - min) / median of the re-timings; `within 5%`: the share of re-timings "
              "within 5% of their median; `recorded / median`: the tuning's timing over the re-timed median "
              "(below 1: the recorded best was a lucky draw).", "",
              "| workload | record (model, seed) | recorded (µs) | re-timed median (µs) | min–max (µs) | "
              "CV | spread | within 5% | recorded / median |",
              "|---|---|---|---|---|---|---|---|---|"]
    try:
        for key, records, inputs in fastest_kernels(cfg, builder, args.top):
            timings = [time_each(runner, [inp] * args.repeats) for inp in inputs]  # each kernel's timings in a row
            for (recorded_s, label, seed, _), secs in zip(records, timings):
                us = np.array(secs) * 1e6
                med = float(np.median(us))
                row = (f"| {key} | {label}, seed {seed} | {recorded_s * 1e6:.1f} | {med:.1f} | "
                       f"{us.min():.1f}–{us.max():.1f} | {us.std() / us.mean():.3f} | "
                       f"{(us.max() - us.min()) / med:.3f} | {np.mean(np.abs(us - med) <= 0.05 * med):.0%} | "
                       f"{recorded_s * 1e6 / med:.3f} |")
                print(row, flush=True)
                lines.append(row)
    finally:
        builder.shutdown()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
