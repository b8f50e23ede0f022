"""``costlab compare``: the convergence comparison of an experiment, from MLflow.

The reference latency of a workload is the best latency known: from any run of the
experiment, or of a reference experiment (``--reference-experiment``, for example a
long ``random`` + ``tvm-xgb`` run), whichever is better; its source is reported.
T95 (T90) is the number of measured trials a run needed to reach 95% (90%) of the
reference throughput (:func:`costlab.data.metrics.t95`); a run that never got there
counts as its budget + 1 (shown as ``>B``); a median that counts such a run is a bound
(``>B``, or ``≥`` with an even number of seeds), and so is a ratio of it. All the runs of a
workload are scored at one budget, the smallest they logged. AUC is the area under the normalized
convergence curve (1.0: at the reference from the first trial). Each figure is the
median over seeds with the min–max range. The T95 ratio and the final-latency ratio
compare a model's median to the baseline's (``tvm-xgb``, or any model of the experiment
given by ``--baseline``, for example the control of a lever); when the seeds' min–max
ranges of the two overlap, the difference is flagged as not separable by these seeds.
The T95 ratio also gives the p-value of a rank test on the two models' T95s
(:func:`rank_test_p`), which one contrary seed does not defeat; it needs more seeds
than 3 each to go below 0.1. Holm's adjustment of those p-values over a model's
workloads (:func:`holm_adjust`) keeps 'p < 0.05' true for the whole suite.
"Trials to the baseline's final" counts the measured trials until a run's best latency
is at or below the baseline's median final latency: how soon a model finds kernels as
fast as the baseline's whole budget did.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from costlab.errors import CostlabError
from costlab.filenames import safe_file_name
from costlab.tracking import redact_uri


BASELINE = "tvm-xgb"


def dense_best_curve_us(steps, best_us, budget: int) -> np.ndarray:
    """Best latency (µs) after each trial 1..budget from logged (step, value) pairs.

    Steps before the first success were not logged (their best is infinite).
    """
    curve = np.full(max(budget, max(steps, default=0)), np.inf)
    for step, value in zip(steps, best_us):
        curve[int(step) - 1] = value
    return np.minimum.accumulate(curve)


def _known(values) -> list[float]:
    """The values that were measured: not None, not NaN (inf stays: a run without any successful trial)."""
    return [v for v in values if v is not None and not math.isnan(v)]


def versus_baseline(values, base_values) -> tuple[float | None, bool | None]:
    """(median of VALUES / median of BASE_VALUES, whether the seeds separate them);
    (None, None) when either side has no value, or either median is not a positive finite number."""
    vals, base_vals = _known(values), _known(base_values)
    if not vals or not base_vals:
        return None, None
    med, base_med = float(np.median(vals)), float(np.median(base_vals))
    if not (math.isfinite(med) and math.isfinite(base_med)) or base_med <= 0:
        return None, None
    return med / base_med, separable(vals, base_vals)


def censored_median(trials, budget: int) -> tuple[float, str]:
    """The median of TRIALS (per seed; budget + 1 for a run that never got there) and what it
    is: "" a measured median; "over" past the budget (its middle run never got there);
    "at least" a lower bound (an even number of seeds, and only the upper of the two middle
    runs never got there: the true median lies between their mean and infinity)."""
    vals = sorted(_known(trials))
    if not vals:
        return math.nan, ""
    lower, upper = vals[(len(vals) - 1) // 2], vals[len(vals) // 2]
    kind = "over" if lower > budget else "at least" if upper > budget else ""
    return float(np.median(vals)), kind


def trials_versus_baseline(trials, base_trials, budget: int, base_budget: int
                           ) -> tuple[float | None, bool | None, bool, str]:
    """Trials per seed (T95, or trials to a latency; budget + 1 for never) against the
    baseline's: ``(ratio of medians, whether the seeds separate them, censored, bound)``.
    ``censored``: both medians are past their budgets (the ratio is unknown; with one budget it
    is 1). ``bound``: "at least" / "at most" when only this model's / only the baseline's
    median is a lower bound (:func:`censored_median`), so the ratio bounds the true one from
    one side; "unknown" when both are and they are not both past the budget."""
    ratio, separated = versus_baseline(trials, base_trials)
    kind, base_kind = censored_median(trials, budget)[1], censored_median(base_trials, base_budget)[1]
    censored = kind == base_kind == "over"
    bound = ("" if censored else "unknown" if kind and base_kind else "at least" if kind
             else "at most" if base_kind else "")
    return ratio, separated, censored, bound


def separable(a: list[float], b: list[float]) -> bool:
    """True when both models have at least 2 seeds and their min–max ranges do not overlap."""
    return bool(len(a) >= 2 and len(b) >= 2 and (max(a) < min(b) or max(b) < min(a)))


def rank_test_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided p-value of a permutation test of the Mann–Whitney U statistic over all splits
    of the pooled seeds into two groups of A's and B's sizes: twice the smaller of the shares
    of splits whose U is at most A's and at least A's, at most 1 (scipy's convention).

    Less strict than :func:`separable`, which one seed that ran the other way defeats. Ties
    (runs censored at the same budget + 1) count half, so censored T95s need no special
    case. Exact for any number of seeds: U is A's sum of mid-ranks less a constant, and the
    number of splits giving each sum is counted, not drawn (a table of about len(A) x N² / 2
    numbers for N seeds in all: 200 seeds a side take 20 s). None with fewer than 2 values on
    a side. With 3 seeds each, the smallest possible p is 0.1.
    """
    from scipy.stats import rankdata

    a, b = np.asarray(_known(a), float), np.asarray(_known(b), float)
    if len(a) < 2 or len(b) < 2:
        return None
    twice_ranks = np.rint(2 * rankdata(np.concatenate([a, b]))).astype(int)  # mid-ranks, doubled: integers
    k, top = len(a), int(twice_ranks.sum())
    # ways[j, s]: the subsets of j of the seeds seen so far whose doubled ranks sum to s
    ways = np.zeros((k + 1, top + 1))
    ways[0, 0] = 1.0
    for r in twice_ranks:
        ways[1:, r:] += ways[:-1, :top + 1 - r].copy()
    counts = ways[k]
    observed = int(twice_ranks[:k].sum())
    lower, upper = counts[:observed + 1].sum(), counts[observed:].sum()
    return float(min(1.0, 2 * min(lower, upper) / counts.sum()))


def holm_adjust(p_values: list[float | None], families: list | None = None) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values, in the order given (None stays None): within each
    family (the same label in ``families``; one family when it is None), the smallest of m
    p-values times m, the next times m - 1, ..., each at least the one before, at most 1. A
    family of tests (one model on several workloads) then keeps a chance of at most 5% of
    any false 'p < 0.05'."""
    families = families if families is not None else [None] * len(p_values)
    adjusted: list[float | None] = [None] * len(p_values)
    for family in set(families):
        known = sorted((p, i) for i, (p, f) in enumerate(zip(p_values, families)) if p is not None and f == family)
        running = 0.0
        for rank, (p, i) in enumerate(known):
            running = max(running, min(1.0, (len(known) - rank) * p))
            adjusted[i] = running
    return adjusted


def format_p(p: float | None, digits: int = 2) -> str:
    """A p-value with ``digits`` decimals, ``<0.01`` (``<0.001``, ...) when it would round to 0,
    or ``-`` when there is none (fewer than 2 seeds on a side)."""
    if p is None:
        return "-"
    floor = 10.0 ** -digits
    return f"<{floor:.{digits}f}" if p < floor / 2 else f"{p:.{digits}f}"


@dataclass
class ModelSummary:
    workload: str
    model: str
    seeds: list[int]
    final_best_us: list[float]
    t95: list[int]
    t90: list[int]
    auc: list[float]
    wall_s: list[float]
    budget: int
    t95_ratio: float | None = None  # median T95 / the baseline's median T95
    separable_from_baseline: bool | None = None
    final_ratio: float | None = None  # median final best latency / the baseline's (below 1: faster kernels)
    final_separable: bool | None = None
    t95_censored: bool = False  # both medians are past the budget: the T95 ratio is unknown, shown as 1
    # "at least" / "at most": only this model's / only the baseline's median is a lower bound (runs that never
    # reached T95); "unknown": both are, and not both past the budget
    t95_bound: str = ""
    t95_p: float | None = None  # two-sided rank-test p-value of this model's T95s against the baseline's
    t95_p_holm: float | None = None  # t95_p adjusted by Holm–Bonferroni over this model's workloads
    # Trials to reach the baseline's median final latency (budget + 1 if never), per seed,
    # and the median of those over the baseline's own median: below 1, fewer trials for as fast a kernel.
    t_match: list[int] = field(default_factory=list)
    t_match_ratio: float | None = None
    t_match_separable: bool | None = None
    t_match_bound: str = ""  # as t95_bound (trials_versus_baseline)
    # Median AUC over the baseline's (above 1: closer to the reference sooner). AUC has no threshold,
    # so unlike T95 it still ranks runs that never get within 5% of a lucky reference timing.
    auc_ratio: float | None = None
    auc_separable: bool | None = None
    # Median wall time over the baseline's (below 1: the same trial budget in less time, cost model
    # and the measured kernels' own run time included).
    wall_ratio: float | None = None
    wall_separable: bool | None = None

    @staticmethod
    def _fmt(values, fmt: str, budget: int | None = None) -> str:
        """'median (min–max)' (:func:`format_median`)."""
        vals = _known(values)
        if not vals:
            return "-"
        shown = format_median(vals, fmt, budget)
        if len(vals) == 1 or min(vals) == max(vals):
            return shown
        return f"{shown} ({_format_one(min(vals), fmt, budget)}–{_format_one(max(vals), fmt, budget)})"


def _format_one(v: float, fmt: str, budget: int | None) -> str:
    if math.isinf(v):
        return "none"  # a run without any successful trial
    if budget is not None and v > budget:
        return f">{budget}"
    return _format_trials(v, fmt, budget)


def _format_trials(v: float, fmt: str, budget: int | None) -> str:
    """V in FMT; trials (a budget given) that are a median of two show their half: 198.5."""
    return format(v, ".1f" if budget is not None and fmt == ".0f" and v != int(v) else fmt)


def format_median(values, fmt: str, budget: int | None = None) -> str:
    """The median of VALUES. With a budget, values are trials (budget + 1: never): a median past
    the budget is '>B', and one that is only a lower bound '≥…' (:func:`censored_median`)."""
    vals = _known(values)
    if not vals:
        return "-"
    med = float(np.median(vals))
    if budget is not None and censored_median(vals, budget)[1] == "at least":
        return f"≥{_format_trials(med, fmt, budget)}"  # may pass the budget: 200 and never give ≥200.5
    return _format_one(med, fmt, budget)


@dataclass
class Comparison:
    experiment: str
    reference_us: dict[str, float]
    reference_source: dict[str, str]
    summaries: list[ModelSummary]
    numpy_us: dict[str, float] = field(default_factory=dict)  # numpy (OpenBLAS) latency, where measured
    unfinished: list[str] = field(default_factory=list)  # what was left out and why, one line each
    untimed: list[str] = field(default_factory=list)  # runs without per-trial times: off the wall-clock plots
    tuned_targets: list[str] = field(default_factory=list)  # the exact targets the runs were measured with
    plots: list[Path] = field(default_factory=list)
    runs: list = field(default_factory=list)  # the experiment's finished child runs (tracking.RunRecord), as scored
    budget_notes: list[str] = field(default_factory=list)  # workloads whose runs logged different budgets
    speed_notes: list[str] = field(default_factory=list)  # workloads whose models' runs timed numpy apart
    repeat_notes: list[str] = field(default_factory=list)  # a seed counted more than once (separate sessions)
    baseline: str = BASELINE  # the model every ratio is taken against (a label)
    parent_ids: list[str] = field(default_factory=list)  # the parent runs of the runs compared: the plots go there


def drawn_curve(x, best_us):
    """A run's curve as the plots take it. A run without a successful trial logged no curve;
    it is drawn as never finding a kernel (its seed counts in the median, as in the table),
    not left out."""
    return (x, best_us) if len(best_us) else ([0.0], [math.inf])


def compare_experiment(tracking_uri: str, experiment: str, out_dir: Path | None = None,
                       reference_experiment: str | None = None, baseline: str | None = None) -> Comparison:
    """Score every finished run of EXPERIMENT against one reference per workload, and each model
    against BASELINE (a model label; default ``tvm-xgb``, MetaSchedule's own model, and no ratios
    where it did not run). A BASELINE given that no run of the experiment has is an error."""
    from costlab.data.metrics import convergence_auc, t90, t95, trials_to_reach
    from costlab.report.plots import model_colors, plot_band_curves
    from costlab.tracking import read_child_runs

    # A run that has not ended normally (interrupted, failed, or still running) is left out: it
    # would count as "never within 5%" for trials it has not measured yet. A finished run is kept
    # even when the search ended before its budget (no new candidates: its best stays), and so is
    # one without any successful trial (no curve: never within 5%, final latency inf).
    runs, unfinished = [], []
    for r in read_child_runs(tracking_uri, experiment):
        (runs if r.status == "FINISHED" else unfinished).append(r)
    finished_models = {r.model for r in runs}
    if baseline is not None and baseline not in finished_models:
        have = f"they have: {', '.join(sorted(finished_models))}" if runs else "it has no finished run"
        raise CostlabError(f"compare {experiment}: --baseline {baseline!r} is not a model of its finished runs "
                           f"({have})")
    if not runs:
        why = (f"its {len(unfinished)} tuning run(s) are unfinished (interrupted, failed or still running): "
               f"`costlab run CONFIG` resumes them" if unfinished else "it has no tuning run")
        raise CostlabError(f"compare {experiment}: nothing to compare at {redact_uri(tracking_uri)}: {why}")
    baseline = BASELINE if baseline is None else baseline
    runs, duplicates = _one_run_per_session(runs)
    repeat_notes = _repeated_seed_notes(runs)
    by_workload: dict[str, list] = defaultdict(list)
    for r in runs:
        by_workload[r.workload].append(r)
    no_success = sorted(w for w, rs in by_workload.items() if not any(r.curve_best_us for r in rs))
    for w in no_success:  # nothing measured to compare against
        del by_workload[w]
    # the best latency known: from any run, all its trials (before cutting the runs to one budget)
    reference = {w: min(min(r.curve_best_us) for r in rs if r.curve_best_us) for w, rs in by_workload.items()}
    budget_notes = []
    for w, rs in by_workload.items():
        by_workload[w], note = _at_one_budget(w, rs)
        budget_notes += [note] if note else []
    scored = [r for rs in by_workload.values() for r in rs]  # as scored: at one budget per workload
    source = {w: f"best of {len(rs)} run(s) of {experiment}" for w, rs in by_workload.items()}
    reference_targets = set()
    if reference_experiment:
        try:
            reference_runs = read_child_runs(tracking_uri, reference_experiment)
        except CostlabError as err:
            raise CostlabError(f"--reference-experiment {reference_experiment}: {err}") from None
        # as in the experiment itself: an unfinished run's timings are not a result
        reference_runs = [r for r in reference_runs if r.status == "FINISHED" and r.curve_best_us]
        if not any(r.workload in reference for r in reference_runs):
            theirs = sorted({r.workload for r in reference_runs})
            raise CostlabError(f"--reference-experiment {reference_experiment}: none of its finished runs measured "
                               f"a workload of {experiment} ("
                               + (f"it tuned {', '.join(theirs)}" if theirs else "it has no finished tuning run")
                               + f"; {experiment} tuned {', '.join(sorted(reference))})")
        for r in reference_runs:
            if r.workload not in reference:
                continue
            reference_targets |= {r.tuned_target} if r.tuned_target else set()
            best_us = min(r.curve_best_us)
            run_name = f"{reference_experiment} ({r.model}, seed {r.seed}, {r.curve_steps[-1]} trials)"
            if best_us < reference[r.workload]:
                reference[r.workload] = best_us
                source[r.workload] = run_name
            elif best_us == reference[r.workload]:
                source[r.workload] += f"; equalled by {run_name}"
    numpy_us = {w: float(np.median(v)) for w, rs in by_workload.items()
                if (v := [r.metrics["numpy_latency_us"] for r in rs if "numpy_latency_us" in r.metrics])}
    speed_notes = [note for w, rs in sorted(by_workload.items()) if (note := numpy_speed_note(w, rs))]
    summaries = []
    plots = []
    colors = model_colors(r.model for r in scored)  # a model's colour, the same in every workload's figure
    for workload, rs in sorted(by_workload.items()):
        per_model: dict[str, list] = defaultdict(list)
        for r in rs:
            per_model[r.model].append(r)
        ref_s = reference[workload] * 1e-6
        rows, curves = {}, {}
        for model, mrs in sorted(per_model.items()):
            mrs.sort(key=lambda r: r.seed)
            budget = max(_run_budget(r) for r in mrs)  # one for the workload's runs (_at_one_budget)
            curves_s = [dense_best_curve_us(r.curve_steps, r.curve_best_us, budget) * 1e-6 for r in mrs]
            curves[model] = curves_s
            rows[model] = ModelSummary(
                workload=workload,
                model=model,
                seeds=[r.seed for r in mrs],
                final_best_us=[r.curve_best_us[-1] if r.curve_best_us else math.inf for r in mrs],
                t95=[t95(c, ref_s, budget) for c in curves_s],
                t90=[t90(c, ref_s, budget) for c in curves_s],
                auc=[convergence_auc(c, ref_s, budget) for c in curves_s],
                wall_s=[r.metrics.get("wall_s", math.nan) for r in mrs],
                budget=budget,
            )
        base = rows.get(baseline)
        match_s = float(np.median(base.final_best_us)) * 1e-6 if base is not None else math.inf
        if math.isfinite(match_s):  # the baseline's median run found no kernel: nothing to reach
            for model, summary in rows.items():
                summary.t_match = [trials_to_reach(c, match_s, 1.0, summary.budget) for c in curves[model]]
        for model, summary in rows.items():
            if base is not None and model != baseline:
                (summary.t95_ratio, summary.separable_from_baseline, summary.t95_censored,
                 summary.t95_bound) = trials_versus_baseline(summary.t95, base.t95, summary.budget, base.budget)
                summary.t95_p = rank_test_p(summary.t95, base.t95)
                summary.final_ratio, summary.final_separable = versus_baseline(summary.final_best_us,
                                                                                base.final_best_us)
                (summary.t_match_ratio, summary.t_match_separable, _,
                 summary.t_match_bound) = trials_versus_baseline(summary.t_match, base.t_match, summary.budget,
                                                                 base.budget)
                summary.auc_ratio, summary.auc_separable = versus_baseline(summary.auc, base.auc)
                summary.wall_ratio, summary.wall_separable = versus_baseline(summary.wall_s, base.wall_s)
            summaries.append(summary)
        if out_dir is not None:
            safe = safe_file_name(workload)
            plots.append(plot_band_curves(
                {m: [drawn_curve(r.curve_steps, r.curve_best_us) for r in mrs] for m, mrs in per_model.items()},
                f"{experiment}: {workload}", "measured trials",
                Path(out_dir) / safe_file_name(experiment) / f"{safe}.trials.png", reference[workload],
                colors=colors))
            if any(r.curve_best_us and np.isfinite(np.asarray(r.curve_elapsed_s, float)).any()
                   for mrs in per_model.values() for r in mrs):  # all untimed (tuned before costlab saved trial times): no empty plot
                plots.append(plot_band_curves(
                    {m: [drawn_curve(r.curve_elapsed_s, r.curve_best_us) for r in mrs] for m, mrs in per_model.items()},
                    f"{experiment}: {workload}", "wall-clock seconds",
                    Path(out_dir) / safe_file_name(experiment) / f"{safe}.seconds.png", reference[workload],
                    colors=colors))
    # one model's tests over the workloads are one family
    for summary, adjusted in zip(summaries, holm_adjust([s.t95_p for s in summaries], [s.model for s in summaries])):
        summary.t95_p_holm = adjusted
    left_out = [f"{r.workload} · {r.model} · seed {r.seed}: unfinished ("
                + ("RUNNING in MLflow: still tuning, or its process stopped without ending it; `costlab run "
                   "CONFIG` again ends or resumes it" if r.status == "RUNNING" else r.status.lower())
                + f"), {r.curve_steps[-1] if r.curve_steps else 0}/{r.budget} trials" for r in unfinished]
    left_out += [f"{w}: no run has a successful trial" for w in no_success]
    left_out += [f"{old.workload} · {old.model} · seed {old.seed}: run {old.run_id} (parent {old.parent_id}), the "
                 + (f"same session (curve and target) as the newer run {new.run_id} (parent {new.parent_id})"
                    if len(old.curve_steps) == len(new.curve_steps) else
                    f"same session (target, and its {len(old.curve_steps)} logged trials start the other's "
                    f"{len(new.curve_steps)}) as run {new.run_id} (parent {new.parent_id})")
                 for old, new in duplicates]
    untimed = [f"{r.workload} · {r.model} · seed {r.seed}" for r in runs
               if r.curve_elapsed_s and not any(math.isfinite(e) for e in r.curve_elapsed_s)]
    targets = {r.tuned_target for r in runs if r.tuned_target} | reference_targets
    return Comparison(experiment, reference, source, summaries, numpy_us=numpy_us, plots=plots, unfinished=left_out,
                      untimed=untimed, tuned_targets=sorted(targets), runs=scored, budget_notes=budget_notes,
                      speed_notes=speed_notes, repeat_notes=repeat_notes, baseline=baseline,
                      parent_ids=sorted({r.parent_id for r in runs if r.parent_id}))


def log_comparison_plots(result: Comparison, tracking_uri: str) -> str | None:
    """Attach the plots to the parent runs of the runs compared; ``None``, or why they could not
    be (a store brought from another machine names an artifact location that is not here). Called
    after the report is written, so that a store whose artifacts cannot be written still compares."""
    from costlab.tracking import log_figures

    if not result.plots:
        return None
    try:
        log_figures(tracking_uri, result.parent_ids, result.plots)
    except Exception as err:  # MLflow's artifact repositories raise anything from OSError to HTTP errors
        return f"{type(err).__name__}: {err}"
    return None


def _run_budget(r) -> int:
    """The budget a run logged (its last logged trial for a run that logged none)."""
    return r.budget or (r.curve_steps[-1] if r.curve_steps else 0)


def _one_run_per_session(runs) -> tuple[list, list]:
    """``(kept, [(left out, kept instead)])``: one run per tuning session. Two configs logging to
    one experiment from one work_dir log the same session twice (once under each parent), the
    second perhaps at a larger budget: counted twice, it would look like two seeds, the shorter
    censored at its own budget. The same session is the same workload, model, seed and target
    with a curve that starts the other's; the longest (then newest) run of it is kept."""
    def starts(short, long) -> bool:
        n = len(short.curve_steps)
        if n == 0:  # no success: the same session only as another run without one
            return not long.curve_steps
        return (short.curve_steps == long.curve_steps[:n] and short.curve_best_us == long.curve_best_us[:n])

    kept, duplicates = [], []
    for r in sorted(runs, key=lambda r: (len(r.curve_steps), r.start_time_ms), reverse=True):
        same = next((k for k in kept if (k.workload, k.model, k.seed, k.tuned_target)
                     == (r.workload, r.model, r.seed, r.tuned_target) and starts(r, k)), None)
        if same is None:
            kept.append(r)
        else:
            duplicates.append((r, same))
    kept.sort(key=lambda r: r.start_time_ms)
    return kept, duplicates


def _repeated_seed_notes(runs) -> list[str]:
    """A line for each (workload, model, seed) that separate sessions logged (another machine's,
    another work_dir's, or another config's with the same label): each counts as a seed."""
    by_combination = defaultdict(list)
    for r in runs:
        by_combination[(r.workload, r.model, r.seed)].append(r)
    return [f"{w} · {m} · seed {s}: {len(rs)} separate sessions each count as a seed (runs "
            + ", ".join(f"{r.run_id} (parent {r.parent_id})" for r in rs)
            + "); compare runs of one config, or give the others another label or experiment"
            for (w, m, s), rs in sorted(by_combination.items(), key=lambda kv: kv[0]) if len(rs) > 1]


def _at_one_budget(workload: str, runs) -> tuple[list, str | None]:
    """The runs of a workload scored at one budget, the smallest any of them logged: ``(runs,
    a line saying so, or None when they share one)``. A run past it keeps its first trials
    only, and its wall time becomes the session time of its trial at that budget (its whole
    wall time if its search ended before it; unknown if the trial's time was not logged):
    T95s censored at different budgets, and AUCs over different spans, do not compare."""
    from dataclasses import replace

    budgets = {_run_budget(r) for r in runs} - {0}  # 0: a run that logged neither a budget nor a success
    if len(budgets) <= 1:
        return runs, None
    budget = min(budgets)
    cut = []
    for r in runs:
        if _run_budget(r) <= budget:
            cut.append(r)
            continue
        n = sum(step <= budget for step in r.curve_steps)
        # the time of its trial BUDGET; a search that ended before it took its whole wall time;
        # a run that logged no trial times (tuned before costlab saved them): unknown
        if not r.trial_elapsed_s:
            wall = math.nan
        elif max(r.trial_elapsed_s) >= budget:
            wall = r.trial_elapsed_s.get(budget, math.nan)
        else:
            wall = r.metrics.get("wall_s", math.nan)
        cut.append(replace(r, curve_steps=r.curve_steps[:n], curve_best_us=r.curve_best_us[:n], budget=budget,
                           metrics={**r.metrics, "wall_s": wall}))
    by_budget = defaultdict(set)
    for r in runs:
        by_budget[_run_budget(r)].add(r.model)
    logged = "; ".join(f"{b}: {', '.join(sorted(ms))}" for b, ms in sorted(by_budget.items()))
    return cut, (f"{workload}: its runs logged different budgets ({logged}); all are scored on their first "
                 f"{budget} trials (the wall time of a longer run: the time of its trial {budget})")


def untimed_line(result: Comparison) -> str | None:
    """Why some runs are missing from the wall-clock plots (their trials' times are unknown)."""
    if not result.untimed:
        return None
    n_runs = sum(len(s.seeds) for s in result.summaries)
    which = f"all {n_runs} runs are" if len(result.untimed) == n_runs else (
        f"{len(result.untimed)} run(s) are ({'; '.join(result.untimed)})")
    return (f"{which} not on the wall-clock plots: their trials' times are unknown (tuned before costlab "
            "saved each trial's time, then logged to this MLflow store from their databases); their wall "
            "time column is known")


def missing_baseline_line(result: Comparison) -> str | None:
    """Why a workload's ratio columns are empty: its finished runs include none of the baseline."""
    missing = sorted({s.workload for s in result.summaries}
                     - {s.workload for s in result.summaries if s.model == result.baseline})
    if not missing:
        return None
    where = ("in this experiment: the ratio columns are empty" if len(missing) == len({s.workload for s in result.summaries})
             else f"for {', '.join(missing)}: their ratio columns are empty")
    return f"no finished {result.baseline} run {where} (--baseline MODEL takes them against another model)"


def columns(baseline: str = BASELINE) -> tuple[str, ...]:
    """The table's column names, with the ratios taken against BASELINE."""
    return ("workload", "model", "seeds", "final best latency (µs)", "T95 (trials)", "T90 (trials)",
            "AUC", f"T95 / {baseline}", f"final / {baseline}", f"trials to {baseline}'s final", "wall time (s)")


COLUMNS = columns()


BOUND_SIGN = {"at least": "≥", "at most": "≤"}
BOUND_LEGEND = ("a T95 ratio marked ≥ or ≤ is a bound: one of the two medians (≥: this model's, ≤: the baseline's) "
                "counts runs that never reached T95; 'unknown': both do")


def _ratio_suffix(ratio: float | None, separated: bool | None, bound: str = "") -> str:
    """' (0.73x)' after a value, or ' (0.73x, not separable)'; nothing without a ratio. A ratio
    of trials that is a bound (trials_versus_baseline) reads '≤0.73x' / '≥0.73x', or
    '0.73x, unknown'."""
    if ratio is None:
        return ""
    sign = BOUND_SIGN.get(bound, "")
    return f" ({sign}{ratio:.2f}x{', unknown' if bound == 'unknown' else ''}{'' if separated else ', not separable'})"


def comparison_rows(result: Comparison) -> list[list[str]]:
    fmt = ModelSummary._fmt
    rows = []

    def ratio(value, separated, censored_at: int | None = None, bound: str = "", p: float | None = None,
              p_holm: float | None = None):
        if value is None:
            return "-"
        notes = [f"both >{censored_at}: unknown"] if censored_at else []
        notes += ["unknown"] if bound == "unknown" else []  # BOUND_LEGEND says what the marks mean
        notes += [] if separated else ["not separable"]
        notes += [f"p {format_p(p)}"] if p is not None else []
        notes += [f"Holm {format_p(p_holm)}"] if p_holm is not None and p_holm != p else []
        return f"{BOUND_SIGN.get(bound, '')}{value:.2f}" + (f" ({'; '.join(notes)})" if notes else "")

    for s in result.summaries:
        rows.append([s.workload, s.model, str(len(s.seeds)), fmt(s.final_best_us, ".1f"),
                     fmt(s.t95, ".0f", s.budget), fmt(s.t90, ".0f", s.budget),
                     fmt(s.auc, ".3f") + _ratio_suffix(s.auc_ratio, s.auc_separable),
                     ratio(s.t95_ratio, s.separable_from_baseline, s.budget if s.t95_censored else None,
                           s.t95_bound, s.t95_p, s.t95_p_holm),
                     ratio(s.final_ratio, s.final_separable),
                     fmt(s.t_match, ".0f", s.budget) + _ratio_suffix(s.t_match_ratio, s.t_match_separable,
                                                                      s.t_match_bound),
                     fmt(s.wall_s, ".0f") + _ratio_suffix(s.wall_ratio, s.wall_separable)])
    return rows


def _suite_clause(ss: list[ModelSummary], metric: str, label: str, better: str, worse: str,
                  better_is_below: bool = True) -> str:
    """'median LABEL R (separably BETTER on n, WORSE on m)' over the workloads that have METRIC's
    ratio; for a ratio of trials whose cells are bounds, also what that median can be."""
    have = [s for s in ss if getattr(s, f"{metric}_ratio") is not None]
    if not have:
        return ""
    ratios = [getattr(s, f"{metric}_ratio") for s in have]
    separated = [bool(getattr(s, f"{metric}_separable")) for s in have]
    n_below = sum(sep and r < 1 for r, sep in zip(ratios, separated))
    n_above = sum(sep and r > 1 for r, sep in zip(ratios, separated))
    n_better, n_worse = (n_below, n_above) if better_is_below else (n_above, n_below)
    bounds = [getattr(s, f"{metric}_bound", "") for s in have]
    can_be = bounds_phrase(*bounded_median(ratios, bounds)) if any(bounds) else ""
    return (f"median {label} {np.median(ratios):.2f} (separably {better} on {n_better}, {worse} on {n_worse}"
            + (f"; its cells are bounds, so the median is {can_be}" if can_be else "") + ")")


def bounded_median(ratios: list[float], bounds: list[str]) -> tuple[float, float]:
    """The least and the most the median of RATIOS can be when each is only known as its bound
    says ("": exact; "at most" / "at least": one side; "unknown": anything): the median of the
    lower ends and the median of the upper ends (the median never falls as a value rises)."""
    lo = [0.0 if b in ("at most", "unknown") else r for r, b in zip(ratios, bounds)]
    hi = [math.inf if b in ("at least", "unknown") else r for r, b in zip(ratios, bounds)]
    return float(np.median(lo)), float(np.median(hi))


def bounds_phrase(lo: float, hi: float) -> str:
    """'at most 0.73', 'at least 1.04', 'between 0.45 and 0.96', 'not bounded', or '' when lo == hi."""
    if lo == hi:
        return ""
    if lo == 0 and math.isinf(hi):
        return "not bounded"
    if lo == 0:
        return f"at most {hi:.2f}"
    return f"at least {lo:.2f}" if math.isinf(hi) else f"between {lo:.2f} and {hi:.2f}"


def suite_lines(result: Comparison) -> list[str]:
    """Each model's ratios to the baseline, median over the workloads where both ran.

    A workload where neither model's median run reached T95 counts as a T95 ratio of 1
    (the budget bounds both), and the line says on how many workloads that happened. Where
    ratios are bounds, the line also says what the median can be (:func:`bounded_median`).
    """
    by_model: dict[str, list[ModelSummary]] = defaultdict(list)
    for s in result.summaries:
        if s.t95_ratio is not None:
            by_model[s.model].append(s)
    lines, baseline = [], result.baseline
    for model, ss in sorted(by_model.items()):
        censored = sum(s.t95_censored for s in ss)
        unknown = sum(s.t95_bound == "unknown" and not s.t95_censored for s in ss)
        ratios = [s.t95_ratio for s in ss]
        bounds = bounds_phrase(*bounded_median(ratios, ["unknown" if s.t95_censored else s.t95_bound for s in ss]))
        notes = [f"on {censored} of them neither median run reached T95 within the budget"]
        if unknown:
            notes.append(f"on {unknown} the ratio is unknown: both medians count runs that never reached T95")
        if bounds:
            notes.append(f"with runs that never reached T95 read as censored, not as budget + 1, the median is {bounds}")
        clauses = [
            f"median T95 / {baseline} {np.median(ratios):.2f} ({'; '.join(notes)})",
            _suite_clause(ss, "final", f"final / {baseline}", "faster", "slower"),
            _suite_clause(ss, "t_match", f"trials to {baseline}'s final latency / {baseline}'s own", "fewer", "more"),
            _suite_clause(ss, "auc", f"AUC / {baseline}", "higher", "lower", better_is_below=False),
            _suite_clause(ss, "wall", f"wall time / {baseline}", "shorter", "longer"),
        ]
        lines.append(f"{model} over {len(ss)} workload(s): " + ", ".join(c for c in clauses if c))
    return lines


NUMPY_SPEED_RATIO = 1.15  # models' median numpy times this far apart: the machine's speed changed between runs


def numpy_speed_note(workload: str, runs) -> str | None:
    """A warning when one workload's models timed numpy's kernel apart in their runs.

    numpy's time is taken on the tuning machine beside each session, so models tuned in one
    process share it; a model whose runs timed it ``NUMPY_SPEED_RATIO`` times slower or faster
    than another's was tuned while the machine (a VM on another host, say) ran at another
    speed, and its latencies, T95 and AUC do not compare with the other's."""
    per_model: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        if "numpy_latency_us" in r.metrics:
            per_model[r.model].append(r.metrics["numpy_latency_us"])
    medians = {m: float(np.median(v)) for m, v in sorted(per_model.items())}
    if len(medians) < 2 or max(medians.values()) <= NUMPY_SPEED_RATIO * min(medians.values()):
        return None
    spread = max(medians.values()) / min(medians.values())
    return (f"numpy's time for {workload} differs between the models' runs "
            f"({', '.join(f'{m} {us:.0f} µs' for m, us in medians.items())}; {spread:.2f}x): the machine ran at "
            "another speed for some of them, so their latencies do not compare; re-time their kernels side by side")


def numpy_lines(result: Comparison) -> list[str]:
    """The kernel-quality check: the best tuned latency against numpy's on the same machine."""
    return [f"numpy (OpenBLAS) for {w}: {us:.2f} µs; best tuned {result.reference_us[w]:.2f} µs "
            f"= {us / result.reference_us[w]:.2f}x numpy's speed (median numpy time over runs)"
            for w, us in sorted(result.numpy_us.items())]


def print_comparison(result: Comparison, console: Console) -> None:
    table = Table(title=f"costlab compare {result.experiment} (median (min–max) over seeds)")
    for col in columns(result.baseline):
        table.add_column(col)
    for row in comparison_rows(result):
        table.add_row(*row)
    console.print(table)
    if any(s.t95_bound for s in result.summaries if s.t95_ratio is not None):  # a ratio marked ≥, ≤ or unknown
        console.print(BOUND_LEGEND[0].upper() + BOUND_LEGEND[1:])
    for workload, ref in result.reference_us.items():
        console.print(f"reference for {workload}: {ref:.2f} µs ({result.reference_source[workload]})")
    for line in suite_lines(result):
        console.print(line)
    if missing := missing_baseline_line(result):
        console.print(missing)
    for line in numpy_lines(result):
        console.print(line)
    for line in result.unfinished:
        console.print(f"left out: {line}")
    for line in result.budget_notes + result.repeat_notes:
        console.print(f"[bold]{line}")
    if untimed := untimed_line(result):
        console.print(untimed)
    for line in result.speed_notes:
        console.print(f"[bold red]{line}")
    if len(result.tuned_targets) > 1:
        console.print(f"[bold red]runs measured with {len(result.tuned_targets)} different targets "
                      f"(machines); their latencies do not compare: {'; '.join(result.tuned_targets)}")
    for p in result.plots:
        console.print(f"plot: {p}")


def machine_description() -> str:
    """The CPU model, cores and memory of this machine, and its load when the report was written."""
    import os
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        memory = f", {psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:
        memory = ""
    return (f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}; "
            f"load average {os.getloadavg()[0]:.1f} when this report was written")


def comparison_report(result: Comparison, command: str, out_dir: Path) -> str:
    """A self-contained markdown report: the command, the machine, the table and the plots."""
    import datetime

    baseline = result.baseline
    lines = [f"# {result.experiment}: search efficiency", "",
             f"Produced by `{command}` on {datetime.date.today().isoformat()}.", "",
             f"Report written on: {machine_description()}.", "",
             *([f"Tuned with target(s): {'; '.join(f'`{t}`' for t in result.tuned_targets)}."
                + (" **These runs were measured with different targets (machines): their latencies do not "
                   "compare.**" if len(result.tuned_targets) > 1 else ""), ""]
               if result.tuned_targets else []),
             "Medians over seeds with (min–max). T95/T90: measured trials until the best latency is within "
             "5%/10% of the reference, as speed: at most reference/0.95 (/0.90); `>B` means never within "
             "the budget B (counted as B+1); `none`: no successful trial. AUC: area under "
             "the reference/best-latency curve, normalized by the budget (1 is best; it needs no threshold, "
             f"so it still ranks runs that never reach T95), and in brackets its median over {baseline}'s "
             "(above 1: nearer the reference sooner). "
             f"`T95 / {baseline}` and `final / {baseline}` (final best latency; below 1 is faster) compare "
             "medians; '(not separable)' means the two models' ranges over seeds overlap, "
             "or a model has fewer than 2 seeds; 'p': the two-sided p-value of a rank test (permutation "
             "test of the Mann–Whitney U over every split of the seeds) on the two models' T95s, where runs that never reached T95 tie, "
             "and 'Holm' the same p adjusted by Holm–Bonferroni over the model's workloads (shown where it differs); with "
             "3 seeds each it cannot go below 0.1; a median of trials marked `≥` is a lower bound (an even "
             "number of seeds, of which the upper middle run never got there); 'both >B: unknown': neither "
             "median run reached T95, so the ratio is bounded by the budget and shown as 1; "
             f"{BOUND_LEGEND}. "
             f"`trials to {baseline}'s final`: measured "
             f"trials until the best latency is at or below {baseline}'s median final latency (`>B`: never), "
             f"and in brackets that median over {baseline}'s own (below 1: as fast a kernel in fewer trials; "
             "`≤`/`≥`: a bound, as for T95). "
             f"`wall time`: the run's seconds for its whole budget, and in brackets its median over {baseline}'s "
             "(below 1: less time, measured kernels' run time and the cost model's included).", "",
             comparison_markdown(result)]
    for plot in result.plots:
        lines.append(f"![{plot.stem}]({Path(plot).resolve().relative_to(Path(out_dir).resolve())})")
    return "\n".join(lines) + "\n"


def comparison_markdown(result: Comparison) -> str:
    names = columns(result.baseline)
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(row) + " |" for row in comparison_rows(result)]
    lines.append("")
    for workload, ref in result.reference_us.items():
        lines.append(f"- reference for `{workload}`: {ref:.2f} µs ({result.reference_source[workload]})")
    lines += [f"- {line}" for line in suite_lines(result)]
    lines += [f"- {missing}"] if (missing := missing_baseline_line(result)) else []
    lines += [f"- {line}" for line in numpy_lines(result)]
    lines += [f"- left out: {line}" for line in result.unfinished]
    lines += [f"- **{line}**" for line in result.budget_notes + result.repeat_notes]
    lines += [f"- **{line}**" for line in result.speed_notes]
    if untimed := untimed_line(result):
        lines.append(f"- {untimed}")
    return "\n".join(lines) + "\n"
