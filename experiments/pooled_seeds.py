"""Pool the seeds of two experiments that ran the same models on the same workloads.

`experiments/cpu-loto-seeds.yaml` re-runs some of `experiments/cpu-loto.yaml`'s models on
fresh seeds. This script scores every run of both against one reference per workload (the
best latency of either experiment, as `costlab compare --reference-experiment` does), then
reports, per workload and model found in both (and `tvm-xgb` on those workloads, even if
only one experiment ran it; with ``--also MODEL``, that model too where only one ran it),
T95 per seed and the median over all seeds, and the ratio to `tvm-xgb`'s pooled median, with
the same separability rule as `costlab compare` (the two models' ranges over seeds do not
overlap), and the two-sided p-value of a rank test (a permutation test of the Mann–Whitney
U over every split of the seeds, :func:`costlab.report.compare.rank_test_p`),
which one contrary seed does not defeat, with the same p-values adjusted by Holm–Bonferroni
over each model's workloads; the same for the AUC (no threshold, so it ranks runs that never
reach T95). Last, each model's median T95 and AUC ratios over the workloads, and what the T95
median can be when runs that never reached T95 are read as censored. The two experiments
must share their budget per workload and have no seed of a model in common. With
``--plots``, one figure per workload of the pooled runs: the median over seeds of the
fraction of the reference's speed reached by each measured trial, with the seeds' min–max
band::

    python experiments/pooled_seeds.py cpu-loto cpu-loto-seeds \\
        --out experiments/results/cpu-loto-pooled-seeds.md --plots experiments/results/cpu-loto-pooled-seeds
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("first", help="an MLflow experiment")
    parser.add_argument("second", help="another one, with the same models on (some of) the same workloads")
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--out", help="write the markdown table here too")
    parser.add_argument("--plots", help="write one convergence figure per workload to this directory")
    parser.add_argument("--also", action="append", default=[], metavar="MODEL",
                        help="also report this model (label) where only one of the experiments ran it (repeatable)")
    args = parser.parse_args(argv)

    from costlab.report.compare import (BASELINE, bounded_median, bounds_phrase, compare_experiment,
                                        format_median, format_p, holm_adjust, rank_test_p, trials_versus_baseline, versus_baseline)

    first = compare_experiment(args.tracking_uri, args.first, reference_experiment=args.second)
    second = compare_experiment(args.tracking_uri, args.second, reference_experiment=args.first)
    for w, ref in first.reference_us.items():
        if w in second.reference_us and not np.isclose(ref, second.reference_us[w]):
            print(f"error: the two references for {w} differ ({ref} and {second.reference_us[w]} µs)", file=sys.stderr)
            return 2
    runs = {}  # (workload, model) -> [(experiment, seed, T95, AUC)]
    budget = {}
    for result in (first, second):
        for s in result.summaries:
            if budget.setdefault(s.workload, s.budget) != s.budget:
                print(f"error: {s.workload} was tuned with budgets of {budget[s.workload]} and {s.budget} trials; "
                      "T95s censored at different budgets do not pool", file=sys.stderr)
                return 2
            runs.setdefault((s.workload, s.model), []).extend(
                (result.experiment, seed, t, a) for seed, t, a in zip(s.seeds, s.t95, s.auc))
    for (w, m), rs in runs.items():
        seen = [r[1] for r in rs]
        if twice := sorted({seed for seed in seen if seen.count(seed) > 1}):
            print(f"error: seed {twice[0]} of {m} on {w} is in both experiments (or twice in one); pooled, one "
                  "seed's run would count twice", file=sys.stderr)
            return 2
    pooled = {k for k, v in runs.items() if len({r[0] for r in v}) == 2 or k[1] in args.also}
    both = sorted(pooled | {(w, BASELINE) for w, _ in pooled if (w, BASELINE) in runs})  # the baseline even if in one

    figures = plot_pooled_curves(args, both, first.reference_us, first.runs + second.runs) if args.plots else {}
    ratios = {}  # model -> [(workload, pooled T95 ratio, pooled AUC ratio)]

    def shown(t, b):
        return f">{b}" if t > b else str(int(t))


    def short(workload):  # gemm(M=...) -> gemm
        return workload.split("(")[0]

    lines = [
        f"# Seeds pooled: {args.first} and {args.second}", "",
        f"Produced by `python experiments/pooled_seeds.py {args.first} {args.second}"
        f"{''.join(' --also ' + m for m in args.also)}"
        f"{' --out ' + args.out if args.out else ''}{' --plots ' + args.plots if args.plots else ''}` on "
        f"{datetime.date.today().isoformat()}. "
        "One reference per workload, the best latency of either experiment; T95 in measured trials "
        "(`>B`: never within the budget B, counted as B+1); the ratio compares pooled medians with "
        f"`{BASELINE}`'s, 'not separable' when the two ranges over seeds overlap; p: the two-sided "
        "p-value of a permutation test of the Mann–Whitney U on the two models' T95s (ties, such as "
        "two runs that never got there, count half). AUC: the area under the normalized convergence curve "
        f"(1 is best; no threshold, so it ranks runs that never reach T95), its pooled median over `{BASELINE}`'s "
        "(above 1: nearer the reference sooner) and the same test's p on the AUCs. p (Holm): the same p-values "
        "adjusted by Holm–Bonferroni over the model's workloads in this table (one family per model and "
        "metric), so that 'p < 0.05' there holds for the family, not for one workload picked afterwards.", "",
    ]
    lines += [f"- reference for `{w}`: {first.reference_us[w]:.2f} µs ({first.reference_source.get(w, '')})"
              for w in sorted({w for w, _ in both})]
    if figures:
        lines += ["", "Convergence, seeds pooled (median and min–max over seeds of reference / best latency): " +
                  ", ".join(f"[{short(w)}]({relative_to_out(path, args.out)})" for w, path in sorted(figures.items()))]
    lines += ["", f"| workload | model | seeds | T95 per seed | median T95 | T95 / {BASELINE} | p | p (Holm) | "
              f"median AUC | AUC / {BASELINE} | p (AUC) | p (AUC, Holm) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for w, m in both:
        b = budget[w]
        values = sorted(runs[(w, m)], key=lambda r: r[1])
        t95, auc = [r[2] for r in values], [r[3] for r in values]
        row = {"workload": w, "model": m, "b": b, "values": values, "t95": t95, "auc": auc, "ratio": "",
               "auc_ratio": "", "p": None, "auc_p": None}
        base = runs.get((w, BASELINE), [])
        base_t95, base_auc = [r[2] for r in base], [r[3] for r in base]
        if m != BASELINE and base:
            value, separated, censored, bound = trials_versus_baseline(t95, base_t95, b, b)
            note = (" (both >B: unknown)" if censored else " (unknown: both medians are lower bounds)"
                    if bound == "unknown" else f" ({bound})" if bound else "")
            row["ratio"] = f"{value:.2f}{note}{'' if separated else ', not separable'}"
            row["p"], row["auc_p"] = rank_test_p(t95, base_t95), rank_test_p(auc, base_auc)
            auc_value, _ = versus_baseline(auc, base_auc)
            row["auc_ratio"] = "-" if auc_value is None else f"{auc_value:.2f}"
            ratios.setdefault(m, []).append((w, value, auc_value, "unknown" if censored else bound))
        rows.append(row)
    for key in ("p", "auc_p"):  # a model's tests over its workloads are one family
        for row, adjusted in zip(rows, holm_adjust([row[key] for row in rows], [row["model"] for row in rows])):
            row[key + "_holm"] = adjusted
    for row in rows:
        b, values, t95 = row["b"], row["values"], row["t95"]
        per_seed = ", ".join(f"{r[1]}: {shown(r[2], b)}" for r in values)
        tested = row["model"] != BASELINE and row["ratio"]
        ps = [format_p(row[key], 3) if tested else "" for key in ("p", "p_holm", "auc_p", "auc_p_holm")]
        lines.append(f"| {row['workload']} | {row['model']} | {len(t95)} | {per_seed} | "
                     f"{format_median(t95, '.0f', b)} | {row['ratio']} | {ps[0]} | {ps[1]} | "
                     f"{np.median(row['auc']):.3f} | {row['auc_ratio']} | {ps[2]} | {ps[3]} |")
    lines.append("")
    for m, rs in sorted(ratios.items()):
        aucs = [(w, a) for w, _, a, _ in rs if a is not None]
        bounds = bounds_phrase(*bounded_median([r for _, r, _, _ in rs], [bd for *_, bd in rs]))
        sign = {"at most": "≤", "at least": "≥", "unknown": "?"}
        cells = ", ".join(f"{short(w)} {sign.get(bd, '')}{r:.2f}" for w, r, _, bd in rs)
        lines.append(f"- `{m}` over {len(rs)} workload(s): median T95 / `{BASELINE}` {np.median([r for _, r, _, _ in rs]):.2f} "
                     f"({cells}"
                     + (f"; with runs that never reached T95 read as censored, not as B+1, the median is {bounds}"
                        if bounds else "") + f"), median AUC / `{BASELINE}` "
                     f"{np.median([a for _, a in aucs]):.2f} ({', '.join(f'{short(w)} {a:.2f}' for w, a in aucs)})")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def plot_pooled_curves(args, both, reference_us: dict, runs: list) -> dict:
    """Workload -> the figure of the pooled ``runs`` (both experiments' finished child runs, as
    compare read them) of the models in ``both``."""
    from costlab.filenames import safe_file_name
    from costlab.report.compare import drawn_curve
    from costlab.report.plots import plot_band_curves

    wanted = set(both)
    curves = {}  # workload -> model -> [(steps, best_us)]
    for r in runs:
        if (r.workload, r.model) in wanted:
            curves.setdefault(r.workload, {}).setdefault(r.model, []).append(drawn_curve(r.curve_steps, r.curve_best_us))
    figures = {}
    for workload, per_model in curves.items():
        figures[workload] = plot_band_curves(
            per_model, f"{args.first} + {args.second}, seeds pooled: {workload}", "measured trials",
            Path(args.plots) / f"{safe_file_name(workload)}.trials.png", reference_us[workload], speed_fraction=True)
    return figures


def relative_to_out(path: Path, out: str | None) -> str:
    """``path`` as a link from the report at ``out`` (as given when there is no report)."""
    if not out:
        return str(path)
    return Path(os.path.relpath(Path(path).resolve(), Path(out).resolve().parent)).as_posix()


if __name__ == "__main__":
    sys.exit(main())
