"""``costlab compare``: the convergence comparison of an experiment, from MLflow.

The reference latency of a workload is the best latency any run of the experiment
found. T95 is the number of measured trials a run needed to get within 5% of that
reference; a run that never got there counts as its budget + 1 (shown as ``>B``).
Each figure is the median over seeds with the min–max range.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table


def trials_to_reach(steps, best_us, target_us: float, budget: int) -> int:
    """First step whose best latency is <= ``target_us``; ``budget + 1`` if never."""
    for step, value in zip(steps, best_us):
        if value <= target_us:
            return int(step)
    return int(budget) + 1


@dataclass
class ModelSummary:
    workload: str
    model: str
    seeds: list[int]
    final_best_us: list[float]
    t95: list[int]
    wall_s: list[float]
    budget: int

    @staticmethod
    def _fmt(values, fmt: str, budget: int | None = None) -> str:
        vals = [v for v in values if v is not None and math.isfinite(v)]
        if not vals:
            return "-"

        def one(v):
            return f">{budget}" if budget is not None and v > budget else format(v, fmt)

        med = float(np.median(vals))
        if len(vals) == 1 or min(vals) == max(vals):
            return one(med)
        return f"{one(med)} ({one(min(vals))}–{one(max(vals))})"


@dataclass
class Comparison:
    experiment: str
    reference_us: dict[str, float]
    summaries: list[ModelSummary]
    plots: list[Path] = field(default_factory=list)


def compare_experiment(tracking_uri: str, experiment: str, out_dir: Path | None = None) -> Comparison:
    from costlab.report.plots import plot_band_curves
    from costlab.tracking import log_figures, read_child_runs

    runs = [r for r in read_child_runs(tracking_uri, experiment) if r.curve_steps]
    by_workload: dict[str, list] = defaultdict(list)
    for r in runs:
        by_workload[r.workload].append(r)
    reference = {w: min(min(r.curve_best_us) for r in rs) for w, rs in by_workload.items()}
    summaries = []
    plots = []
    for workload, rs in sorted(by_workload.items()):
        per_model: dict[str, list] = defaultdict(list)
        for r in rs:
            per_model[r.model].append(r)
        for model, mrs in sorted(per_model.items()):
            mrs.sort(key=lambda r: r.seed)
            budget = max(r.budget or r.curve_steps[-1] for r in mrs)
            summaries.append(ModelSummary(
                workload=workload,
                model=model,
                seeds=[r.seed for r in mrs],
                final_best_us=[r.curve_best_us[-1] for r in mrs],
                t95=[trials_to_reach(r.curve_steps, r.curve_best_us, reference[workload] * 1.05, budget)
                     for r in mrs],
                wall_s=[r.metrics.get("wall_s", math.nan) for r in mrs],
                budget=budget,
            ))
        if out_dir is not None:
            safe = "".join(c if c.isalnum() or c in "-_.=," else "_" for c in workload)
            plots.append(plot_band_curves(
                {m: [(r.curve_steps, r.curve_best_us) for r in mrs] for m, mrs in per_model.items()},
                f"{experiment}: {workload}", "measured trials",
                Path(out_dir) / experiment / f"{safe}.trials.png", reference[workload]))
            plots.append(plot_band_curves(
                {m: [(r.curve_elapsed_s, r.curve_best_us) for r in mrs] for m, mrs in per_model.items()},
                f"{experiment}: {workload}", "wall-clock seconds",
                Path(out_dir) / experiment / f"{safe}.seconds.png", reference[workload]))
    if plots:
        log_figures(tracking_uri, experiment, plots)
    return Comparison(experiment, reference, summaries, plots)


def print_comparison(result: Comparison, console: Console) -> None:
    table = Table(title=f"costlab compare {result.experiment} (median (min–max) over seeds)")
    for col in ("workload", "model", "seeds", "final best latency (µs)", "T95 (trials)", "wall time (s)"):
        table.add_column(col)
    for s in result.summaries:
        table.add_row(
            s.workload, s.model, str(len(s.seeds)),
            ModelSummary._fmt(s.final_best_us, ".1f"),
            ModelSummary._fmt(s.t95, ".0f", s.budget),
            ModelSummary._fmt(s.wall_s, ".0f"),
        )
    console.print(table)
    for workload, ref in result.reference_us.items():
        console.print(f"reference for {workload}: {ref:.2f} µs (best of any run of this experiment)")
    for p in result.plots:
        console.print(f"plot: {p}")
