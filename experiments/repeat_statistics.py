"""How steady is a trial's latency, read from R repeats as the first, the mean, the median or the fastest?

For every workload of CONFIG, take the TOP fastest records over its models and seeds (as
noise_floor.py does), build each once, and time it CALLS times, one runner call each as in
tuning, every call with number=1, repeat=R, min_repeat_ms=0. Each statistic of a call's R
timings is one "trial latency"; its coefficient of variation over the calls says how far one
trial's reading of the same kernel moves. `first` is what a trial measured with repeat 1
records; `min` is what `measure: {repeat: R, reduce: min}` records.

    python experiments/repeat_statistics.py experiments/cpu-scores.yaml --repeat 5 --calls 15 --top 2 \
        --out experiments/results/repeat_statistics.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

STATISTICS = {"first": lambda t: t[:, 0], "mean": lambda t: t.mean(axis=1),
              "median": lambda t: np.median(t, axis=1), "min": lambda t: t.min(axis=1)}


def main() -> None:
    from noise_floor import fastest_kernels
    from retiming import report_header, write_report

    from costlab.config import MeasureSpec, load_config
    from costlab.search.builder import PersistentBuilder
    from costlab.search.runner import make_runner

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, as for costlab run")
    ap.add_argument("--repeat", type=int, default=5, help="timings per runner call")
    ap.add_argument("--calls", type=int, default=15, help="runner calls per kernel")
    ap.add_argument("--top", type=int, default=2, help="fastest records timed per workload")
    ap.add_argument("--out", type=Path, help="write the table as markdown here too")
    args = ap.parse_args()
    if args.repeat < 1 or args.calls < 2 or args.top < 1:
        ap.error("--repeat must be at least 1, --calls at least 2, --top at least 1")
    cfg = load_config(args.config, args.overrides)
    builder = PersistentBuilder(nvcc=False)
    runner = make_runner(cfg.runner, MeasureSpec(number=1, repeat=args.repeat, min_repeat_ms=0))
    lines = report_header(f"One trial's latency read from {args.repeat} repeats: {cfg.name}'s near-best kernels",
                          "repeat_statistics.py", args,
                          f"--repeat {args.repeat} --calls {args.calls} --top {args.top}")
    lines += [f"Each kernel is one of the {args.top} fastest records of its workload over the experiment's models and "
              f"seeds, built for this machine once and timed in {args.calls} runner calls of number=1, "
              f"repeat={args.repeat}, min_repeat_ms=0. Per statistic of a call's {args.repeat} timings: the median "
              "over calls (µs) and the coefficient of variation over calls (CV). `first` is what one timing per trial "
              "records, `min` what `measure.reduce: min` records.", "",
              "| workload | record (model, seed) | recorded (µs) | "
              + " | ".join(f"{name} median (µs) | {name} CV" for name in STATISTICS) + " |",
              "|---|---|---|" + "---|---|" * len(STATISTICS)]
    cvs = {name: [] for name in STATISTICS}
    try:
        for key, records, inputs in fastest_kernels(cfg, builder, args.top):
            for (recorded_s, label, seed, _), inp in zip(records, inputs):
                calls = [runner.run([inp])[0].result() for _ in range(args.calls)]
                failed = [c.error_msg for c in calls if c.error_msg]
                if failed:
                    raise RuntimeError(f"{key} ({label}, seed {seed}): a timing failed: {failed[0][:300]}")
                timings = np.array([[float(v) for v in c.run_secs] for c in calls]) * 1e6
                cells = []
                for name, statistic in STATISTICS.items():
                    values = statistic(timings)
                    cv = float(values.std() / values.mean())
                    cvs[name].append(cv)
                    cells.append(f"{np.median(values):.1f} | {cv:.3f}")
                row = f"| {key} | {label}, seed {seed} | {recorded_s * 1e6:.1f} | " + " | ".join(cells) + " |"
                print(row, flush=True)
                lines.append(row)
    finally:
        builder.shutdown()
    lines += ["", "CV over the kernels, min–max (median): "
              + "; ".join(f"{name} {min(v):.3f}–{max(v):.3f} ({np.median(v):.3f})" for name, v in cvs.items() if v)
              + "."]
    write_report(lines, args.out)


if __name__ == "__main__":
    main()
