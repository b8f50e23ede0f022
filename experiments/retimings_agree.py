"""Do two re-timings of the same held kernels agree? Compare two ``retime_curves.py`` JSONs.

``retime_curves.py`` re-times every kernel a run held; run twice (another session, another VM
of the same kind), it times the same kernels again. This pairs the kernels both JSONs hold (by
workload, experiment, model, seed and trial) and prints, per workload, Kendall's tau between
the two re-timings' medians over all those kernels and over the near-best ones (within 30% of
the first re-timing's best: where T95 is decided), and the median ratio second / first; then, per
workload and model, each run's best held kernel over each re-timing's reference (whether the
models' order holds where the 5% line moves)::

    python experiments/retimings_agree.py experiments/results/cpu-loto-retimed-curves.json \\
        experiments/results/cpu-loto-retimed-curves-2.json --out experiments/results/cpu-loto-retimings-agree.md
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np

NEAR = 1.3  # as retime_curves.py: kernels within 30% of the best


def kernel_medians(runs: list[dict]) -> dict[tuple, float]:
    """(workload, experiment, model, seed, trial) -> median re-timed µs of the kernel held there."""
    if not isinstance(runs, list):
        raise TypeError(f"a list of runs expected, got {type(runs).__name__}")
    return {(run["workload"], run["experiment"], run["model"], run["seed"], held["trial"]):
            float(np.median(held["retimed_us"])) for run in runs for held in run["held"]}


def agreement(first: dict[tuple, float], second: dict[tuple, float]) -> list[dict]:
    """One row per workload over the kernels both hold: counts, the two taus and the median ratio."""
    from scipy import stats

    rows = []
    for workload in sorted({key[0] for key in first.keys() & second.keys()}):
        keys = sorted(key for key in first.keys() & second.keys() if key[0] == workload)
        x = np.array([first[k] for k in keys])
        y = np.array([second[k] for k in keys])
        near = x <= NEAR * x.min()
        tau_near = float(stats.kendalltau(x[near], y[near]).statistic) if near.sum() >= 2 else math.nan
        rows.append({"workload": workload, "kernels": len(keys), "near": int(near.sum()),
                     "tau_all": float(stats.kendalltau(x, y).statistic) if len(keys) >= 2 else math.nan,
                     "tau_near": tau_near, "median_ratio": float(np.median(y / x))})
    return rows


def best_to_reference(medians: dict[tuple, float]) -> dict[tuple[str, str], list[float]]:
    """(workload, model) -> per run, its best held kernel's re-timed median (from ``kernel_medians``)
    over the workload's re-timed reference, the lowest of any held kernel as in retime_curves.py:
    1/0.95 = 1.053 is T95's line."""
    fastest: dict[tuple, float] = {}  # per run: (workload, experiment, model, seed)
    for (*run, _trial), us in medians.items():
        fastest[tuple(run)] = min(fastest.get(tuple(run), math.inf), us)
    reference: dict[str, float] = {}
    for (workload, *_), us in fastest.items():
        reference[workload] = min(reference.get(workload, math.inf), us)
    best: dict[tuple[str, str], list[float]] = {}
    for (workload, _, model, _), us in fastest.items():
        best.setdefault((workload, model), []).append(us / reference[workload])
    return best


def _spread(values: list[float] | None) -> str:
    if not values:
        return "-"
    return f"{np.median(values):.3f} ({min(values):.3f}–{max(values):.3f}; {len(values)} runs)"


def report(first_path: Path, second_path: Path, rows: list[dict], n_first: int, n_second: int,
           best: tuple[dict, dict]) -> list[str]:
    command = shlex.join(["python", "experiments/retimings_agree.py", *sys.argv[1:]])
    lines = [f"# Two re-timings of the same held kernels: {first_path.name} and {second_path.name}", "",
             f"Produced by `{command}`.", "",
             f"Kernels: {n_first} in the first, {n_second} in the second, {sum(r['kernels'] for r in rows)} in both. "
             f"τ: Kendall's tau between the two re-timings' medians; near-best: within {NEAR - 1:.0%} of the first "
             "re-timing's best kernel of the workload.", "",
             "| workload | kernels in both | near-best | τ, all | τ, near-best | median second / first |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['kernels']} | {r['near']} | {r['tau_all']:.2f} | {r['tau_near']:.2f} | "
              f"{r['median_ratio']:.3f} |" for r in rows]
    lines += ["", "Each run's best held kernel over its re-timing's reference (the lowest re-timed median of any "
              "held kernel of the workload): median (min–max) over seeds. T95 is reached below 1/0.95 = 1.053.",
              "", "| workload | model | first re-timing | second re-timing |", "|---|---|---|---|"]
    lines += [f"| {workload} | {model} | {_spread(best[0].get((workload, model)))} | "
              f"{_spread(best[1].get((workload, model)))} |" for workload, model in sorted(best[0].keys() | best[1].keys())]
    return lines


def main() -> None:
    from retiming import write_report

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--out", type=Path, help="write the report as markdown here")
    args = ap.parse_args()
    loaded, best = [], []
    for path in (args.first, args.second):
        try:
            medians = kernel_medians(json.loads(path.read_text()))
            loaded.append(medians)
            best.append(best_to_reference(medians))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise SystemExit(f"{path}: not a retime_curves.py JSON ({type(err).__name__}: {err})") from None
    rows = agreement(*loaded)
    if not rows:
        raise SystemExit(f"{args.first} and {args.second} hold no kernel in common")
    write_report(report(args.first, args.second, rows, len(loaded[0]), len(loaded[1]), tuple(best)), args.out)


if __name__ == "__main__":
    main()
