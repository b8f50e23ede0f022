"""Do two machines rank the same kernels alike? Time another machine's measured kernels here.

costlab's CPU datasets were measured on one VM (``datasets/cpu-v2``: a Zen 3 CPU, LLVM
target ``znver3``) and later tuning ran on another (Zen 4, ``znver4``, which has
AVX-512), where pretraining on the tuned workload's own Zen 3 rows made the warm start
worse. This script measures how far the other machine's ranking carries over. Per
workload of CONFIG, it reads every measured record of the OTHER experiments' runs (tuned
on the other machine, their databases committed), keeps the TOP fastest by recorded
latency and SAMPLE more spread evenly over the ranks of the rest, builds each for every
``--target`` (default: this machine's, ``cpu``; a YAML dict names another, for example
the other machine's ``{kind: llvm, mcpu: znver3, num-cores: 2}``), and times each REPEATS
times here, every kernel of a workload once per round in a shuffled (seeded) order, a
fresh runner worker per round.

Per workload and target it reports Kendall's tau between the recorded and the re-timed
medians, over all the kernels and over the TOP; the same tau between the two halves of
this machine's own timings (how far noise alone lowers it); how many of the recorded
top 10 are among the re-timed top 10; and what the recorded best costs here, its re-timed
median over the lowest re-timed median. With two targets, also tau between them and the
ratio of their best re-timed medians::

    python experiments/cross_machine.py experiments/cpu-loto.yaml --other experiments/cpu-suite.yaml \\
        --other experiments/cpu-suite-reference.yaml --target cpu \\
        --target '{kind: llvm, mcpu: znver3, num-cores: 2}' --out experiments/results/cross-machine.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import time
from pathlib import Path

import numpy as np
import yaml

SHUFFLE_SEED = 0
TOP_K = 10


def sample_records(records, top: int, sample: int) -> list:
    """The TOP fastest ok records by recorded latency, then SAMPLE more at evenly spaced ranks of the rest."""
    ranked = sorted((r for r in records if r.ok), key=lambda r: r.latency_s)
    rest = ranked[top:]
    picks = np.unique(np.linspace(0, len(rest) - 1, num=min(sample, len(rest))).round().astype(int)) if rest else []
    return ranked[:top] + [rest[i] for i in picks]


def kendall_tau(a, b) -> float:
    from scipy import stats

    return float(stats.kendalltau(a, b).statistic)


def target_label(spec) -> str:
    """The target's CPU (``znver4``), or its kind when it names none."""
    from costlab.targets import target_dict

    target = target_dict(spec)
    return str(target.get("mcpu", target["kind"]))


def measure(args, cfg, others, targets) -> list[dict]:
    from retiming import finished_runs, runner_inputs, time_in_rounds

    from costlab.search.builder import PersistentBuilder
    from costlab.workloads import workload_key

    builder = PersistentBuilder(nvcc=False)
    rng = np.random.default_rng(SHUFFLE_SEED)
    per_workload = []
    try:
        for workload in cfg.workloads:
            key = workload_key(workload.name, workload.params)
            records = [record for other in others for *_, run in finished_runs(other, [], workload) for record in run]
            kernels = sample_records(records, args.top, args.sample)
            if not kernels:
                print(f"{key}: no records of the other machine, skipped", flush=True)
                continue
            started = time.perf_counter()
            inputs = [runner_inputs(cfg, kernels, builder, target) for target in targets]
            print(f"{key}: built {len(kernels)} of {len(records)} records for {len(targets)} target(s) in "
                  f"{time.perf_counter() - started:.0f} s; timing each {args.repeats} times", flush=True)
            # every target's kernels in one list, target after target, so each round mixes them all
            timings = time_in_rounds(cfg, [inp for per_target in inputs for inp in per_target], args.repeats, rng,
                                     key, started)
            per_workload.append({"workload": key, "records": len(records), "top": args.top,
                                 "targets": [target_label(t) for t in targets],
                                 "kernels": [{"recorded_us": k.latency_s * 1e6,
                                              "retimed_us": [timings[t * len(kernels) + i]
                                                             for t in range(len(targets))]}
                                             for i, k in enumerate(kernels)]})
    finally:
        builder.shutdown()
    return per_workload


def report(args, per_workload: list[dict], names: str) -> list[str]:
    from retiming import from_json_options, report_header

    repeats = len(per_workload[0]["kernels"][0]["retimed_us"][0])
    options = "".join(f"--other {path} " for path in args.other) + "".join(
        f"--target {shlex.quote(t if isinstance(t, str) else json.dumps(t))} " for t in args.target) + (
        from_json_options(args.from_json) if args.from_json else
        f"--top {args.top} --sample {args.sample} --repeats {args.repeats}")
    lines = report_header(f"{names}: the other machine's kernels timed here", "cross_machine.py", args, options)
    lines += [f"Per workload, the {per_workload[0]['top']} fastest records of the other machine's runs and more at "
              f"evenly spaced ranks of the rest, built for each target and timed {repeats} times here (every kernel "
              "once per round, shuffled). τ: Kendall's tau between the recorded and the re-timed medians; `τ, top`: "
              "the same over the fastest records only; `τ, noise`: between the medians of the odd and the even "
              f"rounds here, the most τ can be with this machine's noise; `top {TOP_K} kept`: how many of the "
              f"recorded top {TOP_K} are in the re-timed top {TOP_K}; `recorded best here`: the recorded best's "
              "re-timed median over the lowest re-timed median (what trusting the other machine's choice costs).",
              "", "| workload | target | kernels (of records) | τ | τ, top | τ, noise | τ, noise, top | "
              f"top {TOP_K} kept | recorded best here | best re-timed (µs) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    pairs = []
    for entry in per_workload:
        kernels, top = entry["kernels"], entry["top"]
        recorded = np.array([k["recorded_us"] for k in kernels])
        medians = []
        for t, label in enumerate(entry["targets"]):
            timings = np.array([k["retimed_us"][t] for k in kernels])
            med = np.median(timings, axis=1)
            medians.append(med)
            odd, even = np.median(timings[:, 0::2], axis=1), np.median(timings[:, 1::2], axis=1)
            kept = len(set(np.argsort(recorded)[:TOP_K]) & set(np.argsort(med)[:TOP_K]))
            lines.append(f"| {entry['workload']} | {label} | {len(kernels)} ({entry['records']}) | "
                         f"{kendall_tau(recorded, med):.2f} | {kendall_tau(recorded[:top], med[:top]):.2f} | "
                         f"{kendall_tau(odd, even):.2f} | {kendall_tau(odd[:top], even[:top]):.2f} | "
                         f"{kept} of {min(TOP_K, len(kernels))} | {med[np.argmin(recorded)] / med.min():.2f} | "
                         f"{med.min():.1f} |")
        if len(medians) == 2:
            pairs.append(f"| {entry['workload']} | {kendall_tau(*medians):.2f} | "
                         f"{kendall_tau(medians[0][:top], medians[1][:top]):.2f} | "
                         f"{medians[0].min() / medians[1].min():.2f} |")
    if pairs:
        first, second = per_workload[0]["targets"]
        lines += ["", f"The two targets against each other: τ between their re-timed medians, and {first}'s best "
                  f"re-timed median over {second}'s.", "",
                  f"| workload | τ | τ, top | best {first} / best {second} |", "|---|---|---|---|", *pairs]
    return lines


def main() -> None:
    from retiming import read_timings, write_report

    from costlab.config import load_config
    from costlab.errors import CostlabError
    from costlab.targets import make_target

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path, help="this machine's experiment: its workloads, measurement and runner")
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, as for costlab run")
    ap.add_argument("--other", type=Path, action="append", required=True, metavar="OTHER_CONFIG",
                    help="an experiment tuned on the other machine, its databases present (repeatable)")
    ap.add_argument("--target", action="append", type=yaml.safe_load, metavar="TARGET",
                    help="a preset name or a YAML target dict to build for (repeatable; default: cpu)")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--from-json", type=Path, action="append", metavar="JSON",
                    help="analyse the timings of a previous run's JSON instead of measuring; given more than once, "
                         "each kernel's timings from all of them, pooled (re-timings of the same kernels)")
    ap.add_argument("--out", type=Path, help="write the report as markdown here, and the timings as JSON beside it")
    args = ap.parse_args()
    args.target = args.target or ["cpu"]
    if len(args.target) > 2:
        raise SystemExit("error: --target: at most two targets")
    for target in args.target:  # before any build, not when the first workload is measured
        try:
            make_target(target)
        except CostlabError as err:
            raise SystemExit(f"error: --target: {err}") from None
    cfg = load_config(args.config, args.overrides)
    others = [load_config(path) for path in args.other]
    if args.repeats < 2:
        raise SystemExit(f"error: --repeats {args.repeats}: at least 2, to split the rounds in halves")
    per_workload = read_timings(args.from_json) if args.from_json else measure(
        args, cfg, others, args.target)
    if not per_workload:
        raise SystemExit(f"error: {', '.join(map(str, args.other))}: no finished runs of {args.config}'s workloads")
    lines = report(args, per_workload, f"{' and '.join(o.name for o in others)} on {cfg.name}'s machine")
    write_report(lines, args.out, None if args.from_json else per_workload)


if __name__ == "__main__":
    main()
