"""Re-time every kernel a run held as its best, so T95 stops measuring draw luck.

A tuning run records one timing per kernel and keeps the kernel with the lowest one, so
both its convergence curve and the reference it is scored against (the lowest timing of
any run) flatter kernels that drew a lucky timing; on these 2-core VMs a single timing's
noise is larger than T95's 5% window (experiments/results/noise_floor.md). This script
takes every finished (workload, model, seed) run of CONFIG (and of each ``--pool``
experiment, as ``retime_finals.py`` does), walks its first ``search.trials`` records in
measurement order, and keeps each record that lowered the run's best recorded latency:
the kernel MetaSchedule would hand back had the run stopped there. It builds all of a
workload's such kernels once and times each REPEATS more times, every kernel once per
round, in an order shuffled per round (seeded), so that slow drifts of the machine hit
every model alike; each round runs in a fresh runner worker.

Each run's re-timed curve is, per trial, the re-timed median of the kernel it held then.
It can rise: a run can swap a kernel for one that only timed faster once. The re-timed
reference of a workload is the lowest re-timed median of any kernel held by any run.
T95 (T90) is the first trial whose held kernel is within 5% (10%) of that reference,
budget + 1 if none; the AUC is the mean over trials of min(1, reference / held). The
report gives them beside the recorded T95 (the runs' own timings, against the lowest
timing of any run, as `costlab compare` and ``pooled_seeds.py`` score them), with each
model's ratio to tvm-xgb, the seeds' separability, the rank test's p and its Holm
adjustment over the model's workloads, and each model's median over the workloads.

For example (the committed reports name their full commands at the top)::

    python experiments/retime_curves.py experiments/cpu-loto-seeds.yaml --pool experiments/cpu-loto.yaml \\
        --repeats 10 --out experiments/results/cpu-loto-retimed-curves.md

``--from-json`` re-does the analysis from a previous run's timings without measuring::

    python experiments/retime_curves.py experiments/cpu-loto-seeds.yaml --pool experiments/cpu-loto.yaml \\
        --from-json experiments/results/cpu-loto-retimed-curves.json --out experiments/results/cpu-loto-retimed-curves.md
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

import numpy as np

SHUFFLE_SEED = 0
NEAR = 1.3  # kernels within 30% of the re-timed reference: where T95 is decided
RISE = 1.10  # a held kernel re-timed more than 10% slower than the one before it


def held_kernels(records, budget: int) -> list[tuple[int, object]]:
    """``(trial, record)`` of each record among the first BUDGET that lowered the best recorded
    latency so far (trials 1-based, in measurement order; failed records never do)."""
    held, best = [], math.inf
    for trial, record in enumerate(records[:budget], start=1):
        if record.ok and record.latency_s < best:
            best = record.latency_s
            held.append((trial, record))
    return held


def held_curve(trials: list[int], latencies: list[float], budget: int) -> np.ndarray:
    """Per trial 1..BUDGET, the latency of the kernel held then: LATENCIES[i] from TRIALS[i] until
    the next held kernel's trial; ``inf`` before the first."""
    curve = np.full(budget, np.inf)
    for trial, latency in zip(trials, latencies):
        curve[trial - 1:] = latency
    return curve


def trials_within(curve: np.ndarray, reference: float, fraction: float) -> int:
    """First trial (1-based) whose held kernel is within 1/FRACTION of REFERENCE; budget + 1 if none."""
    hit = np.flatnonzero(curve <= reference / fraction * (1 + 1e-12))
    return int(hit[0]) + 1 if hit.size else len(curve) + 1


def auc(curve: np.ndarray, reference: float) -> float:
    """Mean over trials of min(1, reference / held latency), 0 before the first held kernel."""
    finite = np.isfinite(curve)
    return float(np.where(finite, np.minimum(1.0, reference / np.where(finite, curve, 1.0)), 0.0).mean())


def split_half_tau(timings: list[list[float]], below_us: float) -> float:
    """Kendall's tau between the medians of the odd and of the even rounds, over the kernels whose
    median is below BELOW_US: how well the re-timing ranks them; nan with fewer than 2 rounds or kernels."""
    from scipy import stats

    near = [t for t in timings if len(t) >= 2 and np.median(t) < below_us]
    if len(near) < 2:
        return math.nan
    return float(stats.kendalltau([np.median(t[0::2]) for t in near], [np.median(t[1::2]) for t in near]).statistic)


def measure(args, cfg, pooled) -> list[dict]:
    """Re-time every held kernel of every finished run; one dict per run (see the JSON written)."""
    from retiming import finished_runs, runner_inputs, time_in_rounds

    from costlab.search.builder import PersistentBuilder
    from costlab.workloads import workload_key

    budgets = {cfg.search.trials, *(other.search.trials for other in pooled)}
    if len(budgets) > 1:
        raise SystemExit(f"error: field search.trials differs between {args.config} and the pooled configs "
                         f"({sorted(budgets)}); curves of different budgets do not pool")
    budget = cfg.search.trials
    builder = PersistentBuilder(nvcc=False)
    rng = np.random.default_rng(SHUFFLE_SEED)
    per_run = []
    try:
        for workload in cfg.workloads:
            key = workload_key(workload.name, workload.params)
            runs = [(experiment, label, seed, held_kernels(records, budget))
                    for experiment, label, seed, records in finished_runs(cfg, pooled, workload)]
            kernels = [record for *_, held in runs for _, record in held]
            if not kernels:
                print(f"{key}: no finished runs, skipped", flush=True)
                continue
            started = time.perf_counter()
            inputs = runner_inputs(cfg, kernels, builder)
            print(f"{key}: built the {len(kernels)} kernels {len(runs)} runs held in "
                  f"{time.perf_counter() - started:.0f} s; timing each {args.repeats} times", flush=True)
            timings = time_in_rounds(cfg, inputs, args.repeats, rng, key, started)
            position = 0
            for experiment, label, seed, held in runs:
                per_run.append({"experiment": experiment, "workload": key, "model": label, "seed": seed,
                                "budget": budget,
                                "held": [{"trial": trial, "recorded_us": record.latency_s * 1e6,
                                          "retimed_us": timings[position + i]}
                                         for i, (trial, record) in enumerate(held)]})
                position += len(held)
    finally:
        builder.shutdown()
    return per_run


def score(per_run: list[dict]) -> tuple[dict, dict]:
    """Per workload, the two references; per run, its recorded and re-timed T95, T90 and AUC."""
    references = {}
    for workload in dict.fromkeys(r["workload"] for r in per_run):  # in the order measured
        runs = [r for r in per_run if r["workload"] == workload]
        kernels = [(h["recorded_us"], float(np.median(h["retimed_us"])), r["model"], r["seed"], h["trial"])
                   for r in runs for h in r["held"]]
        recorded = min(kernels, key=lambda k: k[0])
        retimed = min(kernels, key=lambda k: k[1])
        references[workload] = {"recorded_us": recorded[0], "recorded_source": recorded[2:],
                                "retimed_us": retimed[1], "retimed_source": retimed[2:],
                                "kernels": len(kernels),
                                "cv": float(np.median([np.std(t) / np.mean(t) for r in runs for h in r["held"]
                                                       if (t := [us for us in h["retimed_us"] if math.isfinite(us)])])),
                                "retimed_over_recorded": float(np.median([k[1] / k[0] for k in kernels])),
                                "split_half_tau": split_half_tau([h["retimed_us"] for r in runs for h in r["held"]],
                                                                 NEAR * retimed[1])}
    scores = {}
    for r in per_run:
        ref = references[r["workload"]]
        trials = [h["trial"] for h in r["held"]]
        recorded = held_curve(trials, [h["recorded_us"] for h in r["held"]], r["budget"])
        retimed = held_curve(trials, [float(np.median(h["retimed_us"])) for h in r["held"]], r["budget"])
        scores[(r["experiment"], r["workload"], r["model"], r["seed"])] = {
            "t95_recorded": trials_within(recorded, ref["recorded_us"], 0.95),
            "t95": trials_within(retimed, ref["retimed_us"], 0.95),
            "t90": trials_within(retimed, ref["retimed_us"], 0.90),
            "auc": auc(retimed, ref["retimed_us"]),
            "rises": int(np.sum(retimed[1:] > RISE * retimed[:-1])),
        }
    return references, scores


def report(args, per_run: list[dict], names: str) -> list[str]:
    from retiming import from_json_options, report_header

    from costlab.report.compare import (BASELINE, format_median, format_p, holm_adjust, rank_test_p,
                                        trials_versus_baseline, versus_baseline)

    references, scores = score(per_run)
    budget = per_run[0]["budget"]
    repeats = next((len(h["retimed_us"]) for r in per_run for h in r["held"]), 0)
    cells = defaultdict(list)  # (workload, model) -> [score]
    for (_, workload, model, _), s in scores.items():
        cells[workload, model].append(s)
    options = "".join(f"--pool {path} " for path in args.pool) + (
        from_json_options(args.from_json) if args.from_json else f"--repeats {args.repeats}")
    lines = report_header(f"{names}: convergence re-timed", "retime_curves.py", args, options)
    lines += [f"Every kernel a finished run held as its best during its {budget} trials (each record that "
              f"lowered its best recorded latency), built again and timed {repeats} times with the experiment's "
              "measurement settings, every kernel once per round in a shuffled order. A run's re-timed curve is "
              "the re-timed median of the kernel it held at each trial; the re-timed reference is the lowest "
              "re-timed median of any held kernel. `T95 re-timed` is the first trial whose held kernel is within "
              "5% of it (budget + 1 if never); `T95 recorded` scores the runs' own timings against the lowest "
              "timing of any run, as `costlab compare` does. Ratios are medians over seeds against "
              f"{BASELINE}'s, '≤'/'≥' when only one side's median never got there (a median marked '≥': an even "
              "number of seeds, of which the upper middle run never got there), 'n.s.' when the seeds' "
              "ranges overlap; p is the rank test's two-sided p-value, Holm its adjustment over the model's "
              "workloads.", "", "## References and noise", "",
              f"`split-half τ`: Kendall's tau between the medians of the odd and of the even rounds, over the "
              f"kernels within {NEAR - 1:.0%} of the re-timed reference (1: the re-timing ranks them without doubt; "
              f"near 0: T95 there is still decided by noise). `rises`: runs whose held kernel was once swapped for "
              f"one that re-times more than {RISE - 1:.0%} slower.", "",
              "| workload | held kernels | recorded reference (µs; model, seed, trial) | re-timed reference (µs; "
              "model, seed, trial) | median CV of a kernel's timings | median re-timed / recorded | split-half τ | "
              "rises |", "|---|---|---|---|---|---|---|---|"]
    for workload, ref in references.items():
        rises = sum(1 for (_, w, _, _), s in scores.items() if w == workload and s["rises"])
        runs = sum(1 for (_, w, _, _) in scores if w == workload)
        source = "{}, seed {}, trial {}".format
        lines.append(f"| {workload} | {ref['kernels']} | {ref['recorded_us']:.1f} ({source(*ref['recorded_source'])})"
                     f" | {ref['retimed_us']:.1f} ({source(*ref['retimed_source'])}) | {ref['cv']:.3f} | "
                     f"{ref['retimed_over_recorded']:.2f} | {ref['split_half_tau']:.2f} | {rises} of {runs} |")

    def fmt(values):  # '≥198.5' where the median is only a lower bound, as costlab compare shows it
        med = format_median(values, "g", budget)
        text = lambda v: f">{budget}" if v > budget else f"{v:g}"  # noqa: E731
        return med if len(values) == 1 else f"{med} ({text(min(values))}–{text(max(values))})"

    def t95_ratio(values, base) -> tuple[float | None, str]:
        ratio, separated, censored, bound = trials_versus_baseline(values, base, budget, budget)
        if ratio is None:
            return None, "-"
        mark = {"at most": "≤ ", "at least": "≥ "}.get(bound, "")
        unknown = " (unknown: both medians are lower bounds)" if bound == "unknown" else ""
        return ratio, f"{mark}{ratio:.2f}{unknown}" + ("" if separated or censored else " n.s.")

    lines += ["", "## T95 and AUC against tvm-xgb", "",
              f"| workload | model | seeds | T95 recorded | T95 recorded / {BASELINE} | T95 re-timed | "
              f"T95 re-timed / {BASELINE} | p | p (Holm) | T90 re-timed | AUC re-timed / {BASELINE} | p (AUC) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    order = list(references)
    for (workload, model), ss in sorted(cells.items(), key=lambda item: (order.index(item[0][0]), item[0][1])):
        base = cells.get((workload, BASELINE))
        row = {"workload": workload, "model": model, "ss": ss, "p": None, "p_auc": None,
               "recorded": (None, "-"), "retimed": (None, "-"), "auc": (None, "-")}
        if base is not None and model != BASELINE:
            values = lambda name, group: [s[name] for s in group]  # noqa: E731
            row["recorded"] = t95_ratio(values("t95_recorded", ss), values("t95_recorded", base))
            row["retimed"] = t95_ratio(values("t95", ss), values("t95", base))
            auc_ratio, auc_separated = versus_baseline(values("auc", ss), values("auc", base))
            if auc_ratio is not None:
                row["auc"] = auc_ratio, f"{auc_ratio:.2f}" + ("" if auc_separated else " n.s.")
            row["p"] = rank_test_p(values("t95", ss), values("t95", base))
            row["p_auc"] = rank_test_p(values("auc", ss), values("auc", base))
        rows.append(row)
    for row, p_holm in zip(rows, holm_adjust([row["p"] for row in rows], [row["model"] for row in rows])):
        ss = row["ss"]
        lines.append(f"| {row['workload']} | {row['model']} | {len(ss)} | {fmt([s['t95_recorded'] for s in ss])} | "
                     f"{row['recorded'][1]} | {fmt([s['t95'] for s in ss])} | {row['retimed'][1]} | "
                     f"{format_p(row['p'], 3)} | {format_p(p_holm, 3)} | {fmt([s['t90'] for s in ss])} | "
                     f"{row['auc'][1]} | {format_p(row['p_auc'], 3)} |")

    lines += ["", "## Each model over the workloads", "",
              "The median over workloads of the ratios above (a '≤' or '≥' ratio counts at its value).", "",
              f"| model | workloads | median T95 recorded / {BASELINE} | median T95 re-timed / {BASELINE} | "
              f"median AUC re-timed / {BASELINE} |", "|---|---|---|---|---|"]
    for model in sorted({row["model"] for row in rows} - {BASELINE}):
        mine = [row for row in rows if row["model"] == model and row["retimed"][0] is not None]
        if mine:
            medians = [[row[name][0] for row in mine if row[name][0] is not None]
                       for name in ("recorded", "retimed", "auc")]
            lines.append(f"| {model} | {len(mine)} | "
                         + " | ".join(f"{np.median(m):.2f}" if m else "-" for m in medians) + " |")

    lines += ["", "## Each run", "",
              f"Each run's own T95 recorded, T95 and T90 re-timed (`>{budget}`: never within the budget), AUC re-timed, "
              "and how often its held kernel was swapped for one that re-times more than "
              f"{RISE - 1:.0%} slower.", "",
              "| workload | model | seed | experiment | T95 recorded | T95 re-timed | T90 re-timed | AUC re-timed | rises |",
              "|---|---|---|---|---|---|---|---|---|"]
    shown = lambda trials: f">{budget}" if trials > budget else str(trials)  # noqa: E731
    for (experiment, workload, model, seed), s in sorted(
            scores.items(), key=lambda item: (order.index(item[0][1]), item[0][2], int(item[0][3]), item[0][0])):
        lines.append(f"| {workload} | {model} | {seed} | {experiment} | {shown(s['t95_recorded'])} | {shown(s['t95'])} | "
                     f"{shown(s['t90'])} | {s['auc']:.3f} | {s['rises']} |")
    return lines


def main() -> None:
    from retiming import config_and_timings, retiming_args, write_report

    args = retiming_args(__doc__.split("\n\n")[0], "write the report as markdown here, and the timings as JSON "
                                                   "beside it")
    cfg, pooled, per_run = config_and_timings(args, measure)
    lines = report(args, per_run, " and ".join([cfg.name, *(other.name for other in pooled)]))
    write_report(lines, args.out, None if args.from_json else per_run)


if __name__ == "__main__":
    main()
