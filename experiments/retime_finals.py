"""Re-time every run's final best kernel, so final latencies compare without draw luck.

A tuning run records one timing per kernel, and its final best latency is the minimum
over all of them, so it flatters the kernel (experiments/results/noise_floor.md). This
script takes the best record of each finished (workload, model, seed) run of CONFIG,
builds it, and times it REPEATS more times with the experiment's own measurement
settings, interleaving the runs' kernels so that slow drifts of the machine hit every
model alike. It reports, per workload and model, the median over seeds of each run's
re-timed median, its ratio to tvm-xgb's, and the two-sided p-value of a rank test of the
two models' re-timed medians (:func:`costlab.report.compare.rank_test_p`), also adjusted by
Holm–Bonferroni over each model's workloads.

``--pool OTHER_CONFIG`` adds another experiment's finished runs of the same workloads and
models (the first config's, after its overrides; model by label) to the same rounds, so
that the seeds of both are re-timed side by side and pooled. The experiments must share
the target and the measurement settings::

    python experiments/retime_finals.py experiments/cpu-suite.yaml --repeats 10 \
        --out experiments/results/cpu-suite-retimed.md

A pooled experiment with another budget (a long reference run) keeps its runs apart: they are
labelled ``MODEL (EXPERIMENT, N trials)`` and compared with the baseline like another model,
never counted as more seeds of the baseline. Each run's best kernel is its best within its
own budget.

``--from-json`` re-does the analysis from a previous run's timings without measuring (give
the same config, overrides and ``--pool`` as that run: the report takes the experiments'
names and measurement settings from them).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def _budgets(cfg, pooled) -> dict[str, int]:
    """Each experiment's budget (measured trials per run), by name."""
    return {c.name: c.search.trials for c in [cfg, *pooled]}


def measure(args, cfg, pooled) -> list[dict]:
    """Re-time every finished run's best kernel; one dict per run: experiment, workload, model,
    seed, recorded_us, retimed_us (a list)."""
    from retiming import finished_runs, runner_inputs, time_each

    from costlab.search.builder import PersistentBuilder
    from costlab.search.runner import make_runner
    from costlab.workloads import workload_key

    builder = PersistentBuilder(nvcc=False)
    runner = make_runner(cfg.runner, cfg.measure)
    budgets = _budgets(cfg, pooled)
    per_run = []
    try:
        for workload in cfg.workloads:
            key = workload_key(workload.name, workload.params)
            runs = []
            for experiment, label, seed, records in finished_runs(cfg, pooled, workload):
                ok = [r for r in records[:budgets[experiment]] if r.ok]  # a database may hold more
                if ok:
                    runs.append((experiment, label, seed, min(ok, key=lambda r: r.latency_s)))
            if not runs:
                print(f"{key}: no finished runs, skipped", flush=True)
                continue
            inputs = runner_inputs(cfg, [r for *_, r in runs], builder)
            rounds = [time_each(runner, inputs) for _ in range(args.repeats)]  # every run's kernel once a round
            timings = [list(secs) for secs in zip(*rounds)]
            for (experiment, label, seed, record), secs in zip(runs, timings):
                per_run.append({"experiment": experiment, "workload": key, "model": label, "seed": seed,
                                "recorded_us": record.latency_s * 1e6, "retimed_us": [s * 1e6 for s in secs]})
            print(f"{key}: re-timed {len(runs)} runs' best kernels {args.repeats} times", flush=True)
    finally:
        builder.shutdown()
    return per_run


def report(args, cfg, pooled, per_run: list[dict]) -> list[str]:
    from retiming import from_json_options, report_header

    from costlab.report.compare import BASELINE, format_p, holm_adjust, rank_test_p, separable

    table = defaultdict(dict)  # workload -> model -> (recorded finals, re-timed medians)
    budgets = _budgets(cfg, pooled)
    for r in per_run:
        model = r["model"]
        experiment = r.get("experiment", cfg.name)  # JSON written before pooling named none: the config's runs
        if budgets.get(experiment, cfg.search.trials) != cfg.search.trials:  # not more seeds of the same
            model = f"{model} ({experiment}, {budgets[experiment]} trials)"
        rec, ret = table[r["workload"]].setdefault(model, ([], []))
        rec.append(r["recorded_us"])
        ret.append(float(np.median(r["retimed_us"])))

    def fmt(values):
        med = float(np.median(values))
        return f"{med:.1f}" if len(values) == 1 else f"{med:.1f} ({min(values):.1f}–{max(values):.1f})"

    m = cfg.measure
    repeats = len(per_run[0]["retimed_us"])
    names = " and ".join([cfg.name, *(other.name for other in pooled)])
    options = "".join(f"--pool {path} " for path in args.pool) + (
        from_json_options(args.from_json) if args.from_json else f"--repeats {args.repeats}")
    lines = report_header(f"{names}: final kernels re-timed", "retime_finals.py", args, options)
    lines += [f"Each finished run's fastest recorded kernel{' (the experiments pooled)' if pooled else ''}, built "
              f"again and timed {repeats} times "
              f"(number={m.number}, repeat={m.repeat}, min_repeat_ms={m.min_repeat_ms}; every run's kernel once per "
              "round). `re-timed final` is the median over seeds of each run's re-timed median, with the seeds' "
              f"min–max; `re-timed / {BASELINE}` compares those medians, '(not separable)' when the seeds' ranges "
              f"overlap; p is the rank test's two-sided p-value on the same per-run medians, and p (Holm) the "
              "same adjusted by Holm–Bonferroni over the model's workloads. `recorded final` is the run's own best "
              "single timing, as in the suite's report.", "",
              f"| workload | model | seeds | recorded final (µs) | re-timed final (µs) | re-timed / recorded | "
              f"re-timed / {BASELINE} | p | p (Holm) |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []  # (workload, model, recorded, re-timed, ratio, p)
    for workload, models in table.items():
        base = models.get(BASELINE)
        for model, (rec, ret) in sorted(models.items()):
            ratio, p = "-", None
            if base is not None and model != BASELINE:
                ratio = f"{np.median(ret) / np.median(base[1]):.2f}" + ("" if separable(ret, base[1]) else " (not separable)")
                p = rank_test_p(ret, base[1])
            rows.append((workload, model, rec, ret, ratio, p))
    adjusted = holm_adjust([row[5] for row in rows], [row[1] for row in rows])  # one family per model
    for (workload, model, rec, ret, ratio, p), p_holm in zip(rows, adjusted):
        lines.append(f"| {workload} | {model} | {len(ret)} | {fmt(rec)} | {fmt(ret)} | "
                     f"{np.median(ret) / np.median(rec):.2f} | {ratio} | {format_p(p, 3)} | {format_p(p_holm, 3)} |")
    return lines


def main() -> None:
    from retiming import config_and_timings, retiming_args, write_report

    args = retiming_args(__doc__.split("\n\n")[0], "write the table as markdown here, and the per-run timings as "
                                                   "JSON beside it")
    cfg, pooled, per_run = config_and_timings(args, measure)
    write_report(report(args, cfg, pooled, per_run), args.out, None if args.from_json else per_run, indent=1)


if __name__ == "__main__":
    main()
