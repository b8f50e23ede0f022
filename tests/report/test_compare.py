"""Hand-checked pieces of ``costlab compare``."""

from pathlib import Path

import numpy as np
import pytest

from costlab.data.metrics import t95
from costlab.report.compare import dense_best_curve_us, format_p, holm_adjust, rank_test_p, separable


def test_dense_curve_fills_unlogged_failed_steps():
    # trials 1-2 failed (not logged), trial 3 found 50 µs, trial 5 found 40 µs
    curve = dense_best_curve_us([3, 4, 5], [50.0, 50.0, 40.0], budget=6)
    assert np.isinf(curve[:2]).all()
    assert curve[2:].tolist() == [50.0, 50.0, 40.0, 40.0]
    assert t95(curve * 1e-6, 40e-6, 6) == 5
    assert t95(curve * 1e-6, 30e-6, 6) == 7  # never within 5%: budget + 1


def test_separable_needs_disjoint_ranges():
    assert separable([10, 12, 14], [20, 25, 30])
    assert not separable([10, 22, 14], [20, 25, 30])
    assert not separable([], [1])
    assert not separable([10], [200])  # one seed each: nothing can be told apart


def test_rank_test_counts_every_split_of_the_seeds():
    # 3 against 3, fully apart: 2 of the C(6, 3) = 20 splits are as extreme (one each way)
    assert rank_test_p([10, 12, 14], [20, 25, 30]) == pytest.approx(2 / 20)
    assert rank_test_p([20, 25, 30], [10, 12, 14]) == pytest.approx(2 / 20)  # two-sided
    assert rank_test_p([5, 5, 5], [5, 5, 5]) == pytest.approx(1.0)
    assert rank_test_p([10], [20, 30]) is None  # one seed: no test
    assert rank_test_p([10, float("nan")], [20, 30]) is None  # an unknown value is not a seed


def test_rank_test_matches_scipys_exact_mann_whitney_without_ties():
    from scipy import stats

    rng = np.random.default_rng(3)
    for shift in (0.5, 5.5, 10.5, 20.5, 40.5):  # a half: b never equals a value of a
        values = rng.permutation(40)  # distinct: no ties
        a, b = values[:7] + 0.0, values[7:14] + shift
        exact = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
        assert rank_test_p(a, b) == pytest.approx(exact)


def test_rank_test_separates_what_one_contrary_seed_keeps_the_range_rule_from():
    # T95 over 7 seeds each, budget 200 (never within 5%: 201); one run each way spoils the ranges
    warm = [20, 31, 45, 60, 70, 94, 201]
    cold = [24, 150, 201, 201, 201, 201, 201]
    assert not separable(warm, cold)
    assert rank_test_p(warm, cold) < 0.05


def test_holm_adjusts_a_family_of_p_values_by_hand():
    # sorted 0.01, 0.02, 0.04 of m = 3: 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.04) = 0.04; in the order given
    adjusted = holm_adjust([0.04, 0.01, None, 0.02])
    assert adjusted[2] is None
    assert [adjusted[0], adjusted[1], adjusted[3]] == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjust([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm_adjust([0.001]) == pytest.approx([0.001])  # one test: unchanged
    assert holm_adjust([]) == []
    # two families adjust apart: "a" holds 0.01 and 0.03 (0.01 * 2, then 0.03 * 1), "b" holds 0.02 alone
    by_family = holm_adjust([0.01, 0.02, 0.03], ["a", "b", "a"])
    assert by_family == pytest.approx([0.02, 0.02, 0.03])


def test_rows_give_both_ratios_to_the_baseline_and_flag_overlapping_seeds():
    from costlab.report.compare import COLUMNS, Comparison, ModelSummary, comparison_rows

    def summary(model, final, t95, **ratios):
        return ModelSummary("gemm", model, [0, 1, 2], final, t95, t95, [0.5] * 3, [10.0] * 3, 200, **ratios)

    base = summary("tvm-xgb", [40.0, 43.0, 50.0], [201, 201, 201])
    fast = summary("lgbm", [31.0, 32.0, 34.0], [120, 148, 201], t95_ratio=148 / 201, separable_from_baseline=False,
                   final_ratio=32.0 / 43.0, final_separable=True)
    rows = comparison_rows(Comparison("e", {"gemm": 31.0}, {"gemm": "best"}, [base, fast]))
    row = dict(zip(COLUMNS, rows[1]))
    assert row["T95 / tvm-xgb"] == "0.74 (not separable)"
    fast.t95_p = 0.4
    assert dict(zip(COLUMNS, comparison_rows(Comparison("e", {"gemm": 31.0}, {"gemm": "best"}, [base, fast]))[1]))[
        "T95 / tvm-xgb"] == "0.74 (not separable; p 0.40)"
    fast.t95_p_holm = 0.8  # adjusted over the model's workloads: shown where it differs
    assert dict(zip(COLUMNS, comparison_rows(Comparison("e", {"gemm": 31.0}, {"gemm": "best"}, [base, fast]))[1]))[
        "T95 / tvm-xgb"] == "0.74 (not separable; p 0.40; Holm 0.80)"
    assert row["final / tvm-xgb"] == "0.74"
    assert row["T95 (trials)"] == "148 (120–>200)"
    assert dict(zip(COLUMNS, rows[0]))["final / tvm-xgb"] == "-"


def test_censored_t95_ratio_is_flagged_and_the_suite_line_counts_it():
    from costlab.report.compare import COLUMNS, Comparison, ModelSummary, comparison_rows, suite_lines

    def summary(workload, model, final, t95, **ratios):
        return ModelSummary(workload, model, [0, 1, 2], final, t95, t95, [0.5] * 3, [10.0] * 3, 200, **ratios)

    summaries = [
        summary("gemm", "tvm-xgb", [40.0, 43.0, 50.0], [201, 201, 201]),
        summary("gemm", "lgbm", [31.0, 32.0, 34.0], [201, 201, 150], t95_ratio=1.0, separable_from_baseline=False,
                t95_censored=True, final_ratio=32.0 / 43.0, final_separable=True),
        summary("conv", "tvm-xgb", [10.0, 11.0, 12.0], [100, 120, 140]),
        summary("conv", "lgbm", [10.5, 11.0, 13.0], [40, 60, 80], t95_ratio=0.5, separable_from_baseline=True,
                final_ratio=1.0, final_separable=False),
    ]
    result = Comparison("e", {"gemm": 31.0, "conv": 10.0}, {"gemm": "best", "conv": "best"}, summaries)
    rows = comparison_rows(result)
    assert dict(zip(COLUMNS, rows[1]))["T95 / tvm-xgb"] == "1.00 (both >200: unknown; not separable)"
    assert dict(zip(COLUMNS, rows[3]))["T95 / tvm-xgb"] == "0.50"
    summaries[1].t_match_ratio, summaries[3].t_match_ratio = 0.5, 1.5
    (line,) = suite_lines(result)
    assert line.startswith("lgbm over 2 workload(s): median T95 / tvm-xgb 0.75 (on 1 of them neither median run "
                           "reached T95 within the budget; with runs")
    # a ratio whose two medians (of an even number of seeds) count runs that never got there is
    # unknown too, and said so: the line read 'on 0 of them neither reached T95' beside such rows
    summaries[3].t95_bound = "unknown"
    (unknown_line,) = suite_lines(result)
    assert "(on 1 of them neither median run reached T95 within the budget; on 1 the ratio is unknown: both " \
           "medians count runs that never reached T95; with runs that never reached T95 read as censored, not as " \
           "budget + 1, the median is not bounded)" in unknown_line
    summaries[3].t95_bound = ""
    assert "median final / tvm-xgb 0.87 (separably faster on 1, slower on 0)" in line
    assert line.endswith("median trials to tvm-xgb's final latency / tvm-xgb's own 1.00 (separably fewer on 0, more on 0)")

    # AUC ratios, where set, join the line: one separably higher, one overlapping
    summaries[1].auc_ratio, summaries[1].auc_separable = 1.4, True
    summaries[3].auc_ratio, summaries[3].auc_separable = 0.9, False
    (line,) = suite_lines(result)
    assert line.endswith("median AUC / tvm-xgb 1.15 (separably higher on 1, lower on 0)")
    assert dict(zip(COLUMNS, comparison_rows(result)[1]))["AUC"] == "0.500 (1.40x)"
    assert dict(zip(COLUMNS, comparison_rows(result)[3]))["AUC"] == "0.500 (0.90x, not separable)"

    # wall-time ratios, where set, come last: one separably shorter, one separably longer
    summaries[1].wall_ratio, summaries[1].wall_separable = 0.5, True
    summaries[3].wall_ratio, summaries[3].wall_separable = 1.2, True
    (line,) = suite_lines(result)
    assert line.endswith("median AUC / tvm-xgb 1.15 (separably higher on 1, lower on 0), "
                         "median wall time / tvm-xgb 0.85 (separably shorter on 1, longer on 1)")
    assert dict(zip(COLUMNS, comparison_rows(result)[1]))["wall time (s)"] == "10 (0.50x)"


def _log_child(tracker, model, seed, latencies_us, budget, finish=True, timed=True, target="", numpy_us=None,
               workload="gemm(M=8)"):
    """One child run as `costlab run` logs it, from per-trial latencies (inf: a failed trial).

    ``timed=False``: logged from a session saved before costlab kept each trial's time.
    ``numpy_us``: numpy's time for the workload, as timed beside the session."""
    from costlab.search.recorder import Curve

    child = tracker.child(workload, model, seed, {"trials": str(budget)})
    latencies_s = [lat * 1e-6 for lat in latencies_us]
    trials = Curve(latencies_s, 1.0, [0.1 * i for i in range(1, len(latencies_s) + 1)] if timed
                   else [None] * len(latencies_s)).trials
    tracker.log_trials(child, trials, flops=1e6)
    if finish:
        tracker.finish_child(child, {"wall_s": 10.0 * len(trials),
                                     **({"numpy_latency_us": numpy_us} if numpy_us else {})}, [],
                             tags={"costlab.tuned_target": target} if target else None)


def test_compare_keeps_failed_and_early_ended_runs_and_leaves_out_unfinished_ones(tmp_path):
    """A real local MLflow store: a finished run without a success counts as never within 5%,
    a run whose search ended early keeps its best, an interrupted one is left out and named."""
    import math

    from costlab.report.compare import COLUMNS, comparison_rows, compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    inf = math.inf
    _log_child(tracker, "tvm-xgb", 0, [50, 40, 40, 40], 4)
    _log_child(tracker, "tvm-xgb", 1, [60, 45, 45, 38], 4)
    _log_child(tracker, "tvm-xgb", 2, [55, 55, 42, 42], 4)
    _log_child(tracker, "lgbm", 0, [inf, inf, inf, inf], 4)  # every trial failed
    _log_child(tracker, "lgbm", 1, [39, 20, 20], 4)  # the search ran out of candidates at 3
    _log_child(tracker, "lgbm", 2, [30, 30, 25, 25], 4)
    _log_child(tracker, "lgbm", 3, [10, 10], 4, finish=False)  # interrupted: left out
    tracker.finish_parent()

    result = compare_experiment(uri, "e")
    assert result.reference_us == {"gemm(M=8)": 20.0}  # not the interrupted run's 10 µs
    (lgbm, base) = result.summaries
    assert (lgbm.model, lgbm.seeds, base.seeds) == ("lgbm", [0, 1, 2], [0, 1, 2])
    assert lgbm.final_best_us == pytest.approx([inf, 20.0, 25.0])
    assert lgbm.t95 == [5, 2, 5]  # never / trial 2 / never (25 > 20 / 0.95)
    assert base.t95 == [5, 5, 5]
    assert lgbm.auc[0] == 0.0
    row = dict(zip(COLUMNS, comparison_rows(result)[0]))
    assert row["final best latency (µs)"] == "25.0 (20.0–none)"
    # rank test: of the C(6, 3) = 20 splits of the pooled T95s, the 10 with the 2 on lgbm's side
    # give a U as large as lgbm's, so the one-sided p is 1/2 and the two-sided one 1
    assert lgbm.t95_p == pytest.approx(1.0) and lgbm.t95_p_holm == pytest.approx(1.0)  # one workload: unchanged
    assert row["T95 / tvm-xgb"] == "1.00 (both >4: unknown; not separable; p 1.00)"
    assert result.unfinished == ["gemm(M=8) · lgbm · seed 3: unfinished (RUNNING in MLflow: still tuning, or its "
                                 "process stopped without ending it; `costlab run CONFIG` again ends or resumes it), "
                                 "2/4 trials"]
    assert result.untimed == []


def test_workloads_without_a_baseline_run_are_named_instead_of_empty_ratios_left_unexplained(tmp_path):
    from costlab.report.compare import compare_experiment, comparison_markdown, missing_baseline_line
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "lgbm", 0, [30, 30, 25, 25], 4)
    _log_child(tracker, "random", 0, [50, 40, 40, 40], 4)
    tracker.finish_parent()
    result = compare_experiment(uri, "e")
    said = ("no finished tvm-xgb run in this experiment: the ratio columns are empty (--baseline MODEL takes "
            "them against another model)")
    assert missing_baseline_line(result) == said
    assert f"- {said}" in comparison_markdown(result)
    assert missing_baseline_line(compare_experiment(uri, "e", baseline="random")) is None


def test_runs_without_trial_times_are_named_and_kept_off_the_wall_clock_plot(tmp_path):
    from costlab.report.compare import compare_experiment, comparison_markdown
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "tvm-xgb", 0, [50, 40, 40, 40], 4)
    _log_child(tracker, "lgbm", 0, [30, 30, 25, 25], 4, timed=False)
    tracker.finish_parent()

    result = compare_experiment(uri, "e", out_dir=tmp_path / "out")
    assert result.untimed == ["gemm(M=8) · lgbm · seed 0"]
    assert "1 run(s) are (gemm(M=8) · lgbm · seed 0) not on the wall-clock plots" in comparison_markdown(result)
    (lgbm, _) = result.summaries
    assert lgbm.final_best_us == pytest.approx([25.0]) and lgbm.wall_s == [40.0]  # the rest of its row is known
    assert all(p.is_file() for p in result.plots)


def test_t95_ratio_is_a_bound_when_only_one_median_run_reaches_t95():
    from costlab.report.compare import COLUMNS, Comparison, ModelSummary, comparison_rows

    def summary(model, t95, **kw):
        return ModelSummary("gemm", model, [0, 1, 2], [1.0] * 3, t95, t95, [0.5] * 3, [10.0] * 3, 200, **kw)

    rows = comparison_rows(Comparison("e", {"gemm": 1.0}, {"gemm": "best"}, [
        summary("tvm-xgb", [60, 61, 62]),
        summary("lgbm", [201, 201, 50], t95_ratio=201 / 61, separable_from_baseline=False, t95_bound="at least"),
        summary("xgb", [30, 201, 201], t95_ratio=201 / 61, t95_bound="at least"),
    ]))
    assert dict(zip(COLUMNS, rows[1]))["T95 / tvm-xgb"] == "≥3.30 (not separable)"  # BOUND_LEGEND says why


def test_runs_measured_on_different_machines_are_flagged(tmp_path):
    from costlab.report.compare import compare_experiment, comparison_report
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "tvm-xgb", 0, [50, 40], 2, target='{"kind": "llvm", "mcpu": "znver3"}')
    _log_child(tracker, "lgbm", 0, [30, 25], 2, target='{"kind": "llvm", "mcpu": "znver4"}')
    tracker.finish_parent()
    result = compare_experiment(uri, "e")
    assert result.tuned_targets == ['{"kind": "llvm", "mcpu": "znver3"}', '{"kind": "llvm", "mcpu": "znver4"}']
    report = comparison_report(result, "costlab compare e", tmp_path)
    assert "measured with different targets (machines): their latencies do not compare" in report


def test_models_whose_runs_timed_numpy_apart_are_flagged(tmp_path):
    """Same target, but one model's runs were tuned while the machine ran slower: numpy's time,
    taken beside each session, tells."""
    from costlab.report.compare import compare_experiment, comparison_report
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    for seed, numpy_us in enumerate([100.0, 90.0, 110.0]):  # seeds in separate processes: their own spread
        _log_child(tracker, "tvm-xgb", seed, [50, 40], 2, numpy_us=numpy_us)
        _log_child(tracker, "lgbm", seed, [45, 41], 2, numpy_us=numpy_us)
    tracker.finish_parent()
    assert compare_experiment(uri, "e").speed_notes == []  # tuned side by side

    tracker.start_parent("e", {}, "name: e\n")
    for seed in range(3):
        _log_child(tracker, "xgb", seed, [60, 55], 2, numpy_us=130.0 + seed)
    tracker.finish_parent()
    result = compare_experiment(uri, "e")
    assert result.speed_notes == [
        "numpy's time for gemm(M=8) differs between the models' runs (lgbm 100 µs, tvm-xgb 100 µs, xgb 131 µs; "
        "1.31x): the machine ran at another speed for some of them, so their latencies do not compare; re-time "
        "their kernels side by side"]
    assert f"**{result.speed_notes[0]}**" in comparison_report(result, "costlab compare e", tmp_path)


def test_a_p_value_too_small_to_print_says_so_instead_of_zero():
    assert format_p(0.04) == "0.04" and format_p(0.0467, 3) == "0.047"
    assert format_p(1e-5) == "<0.01" and format_p(1e-5, 3) == "<0.001"
    assert format_p(0.004) == "<0.01" and format_p(0.006) == "0.01"
    assert format_p(None) == "-"


def test_one_session_logged_under_two_parents_counts_once(tmp_path):
    """Two configs logging to one experiment from one work_dir log the same session twice: it
    must not count as two seeds. The newest run is kept and the other named."""
    import time

    from costlab.report.compare import compare_experiment, comparison_markdown
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = ExperimentTracker(uri, "shared")
    first.start_parent("config-a", {}, "name: config-a\n")
    _log_child(first, "tvm-xgb", 0, [50, 40], 2)
    _log_child(first, "lgbm", 0, [30, 25], 2)
    time.sleep(0.01)  # MLflow's start times are in milliseconds
    second = ExperimentTracker(uri, "shared")
    second.start_parent("config-b", {}, "name: config-b\n")
    _log_child(second, "lgbm", 0, [30, 25], 2)

    third = ExperimentTracker(uri, "shared")  # another machine's session of the same combination
    third.start_parent("config-c", {}, "name: config-c\n")
    _log_child(third, "lgbm", 0, [35, 28], 2)

    result = compare_experiment(uri, "shared")
    lgbm = next(s for s in result.summaries if s.model == "lgbm")
    assert lgbm.seeds == [0, 0]  # the other session counts; the repeat of config-a's does not
    (line,) = result.unfinished
    assert line.startswith("gemm(M=8) · lgbm · seed 0: run ") and f"(parent {first.parent_id}), the same " \
        f"session (curve and target) as the newer run" in line and line.endswith(f"(parent {second.parent_id})")
    (note,) = result.repeat_notes  # counted as two seeds, but said in bold where the table is
    assert note.startswith("gemm(M=8) · lgbm · seed 0: 2 separate sessions each count as a seed (runs ")
    assert f"(parent {third.parent_id})" in note and f"(parent {second.parent_id})" in note
    assert f"- **{note}**" in comparison_markdown(result)


def test_a_run_without_a_success_counts_in_the_plotted_median(tmp_path, monkeypatch):
    """It logged no best_latency_us, so the plots left its seed out: lgbm's median curve ended
    at 22.5 µs over 2 seeds while the table's median final latency over 3 is 25."""
    import math

    import costlab.report.plots as plots
    from costlab.report.compare import compare_experiment
    from costlab.report.plots import band_over_seeds
    from costlab.tracking import ExperimentTracker

    drawn, draw = {}, plots.plot_band_curves

    def capture(curves, title, xlabel, out, *args, **kwargs):  # what was drawn, then drawn as always
        drawn[xlabel] = curves
        return draw(curves, title, xlabel, out, *args, **kwargs)

    monkeypatch.setattr(plots, "plot_band_curves", capture)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "lgbm", 0, [math.inf] * 4, 4)
    _log_child(tracker, "lgbm", 1, [39, 20, 20, 20], 4)
    _log_child(tracker, "lgbm", 2, [30, 30, 25, 25], 4)
    tracker.finish_parent()
    (lgbm,) = compare_experiment(uri, "e", out_dir=tmp_path / "out").summaries
    assert sorted(lgbm.final_best_us) == pytest.approx([20.0, 25.0, math.inf])
    for xlabel in ("measured trials", "wall-clock seconds"):
        grid, median, _, _, n_seeds = band_over_seeds(drawn[xlabel]["lgbm"])
        assert n_seeds == 3 and median[-1] == pytest.approx(25.0), xlabel
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.png")) == ["gemm_M=8_.seconds.png", "gemm_M=8_.trials.png"]


def _one_finished_run(uri, experiment, parent, workload="gemm(M=8)", model="tvm-xgb", latencies_us=(50, 40, 40, 40)):
    """One parent run of ``experiment`` in store ``uri`` holding one finished child run; its tracker."""
    from costlab.tracking import ExperimentTracker

    tracker = ExperimentTracker(uri, experiment)
    tracker.start_parent(parent, {}, f"name: {parent}\n")
    _log_child(tracker, model, 0, list(latencies_us), len(latencies_us), workload=workload)
    tracker.finish_parent()
    return tracker


def test_plots_go_to_the_parent_runs_of_the_runs_compared(tmp_path):
    """They went to the experiment's newest parent run, which may be another config's."""
    from costlab.report.compare import compare_experiment, log_comparison_plots
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = _one_finished_run(uri, "shared", "cfg")
    other = ExperimentTracker(uri, "shared")
    other.start_parent("other-cfg", {}, "name: other-cfg\n")  # newer, and without children
    other.finish_parent()
    result = compare_experiment(uri, "shared", out_dir=tmp_path / "out")
    assert result.plots and log_comparison_plots(result, uri) is None
    listed = {pid: {a.path for a in tracker.client.list_artifacts(pid, "compare")}
              for pid in (tracker.parent_id, other.parent_id)}
    assert listed[other.parent_id] == set()
    assert listed[tracker.parent_id] == {f"compare/{p.name}" for p in result.plots}


def test_a_store_whose_artifact_location_is_not_here_still_compares(tmp_path):
    """A SQLite store brought from another machine names that machine's artifact folder: compare
    failed with a traceback there, before printing its table or writing its report."""
    from typer.testing import CliRunner

    from costlab.cli import app

    import shutil

    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    artifacts = tmp_path / "elsewhere"
    mlflow.MlflowClient(uri).create_experiment("e", artifact_location=str(artifacts))
    _one_finished_run(uri, "e", "cfg")
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.write_text("")  # a file where the store's artifact folder was: no folder can be made there
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", uri, "--out", str(out)])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert "gemm(M=8)" in said and (out / "e.md").is_file() and list((out / "e").glob("*.png"))
    assert f"the plots are in {out / 'e'} but were not attached to the MLflow parent run(s)" in said, said


def test_an_experiment_name_with_a_slash_stays_inside_out(tmp_path):
    """'team/suite' wrote its report one folder down, with broken image links; an absolute name
    ('/Users/me/suite', as Databricks names them) wrote its plots outside --out."""
    import re

    from typer.testing import CliRunner

    from costlab.cli import app
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for name in ("team/suite", "/Users/me/suite"):
        tracker = ExperimentTracker(uri, name)
        tracker.start_parent("cfg", {}, "name: cfg\n")
        _log_child(tracker, "tvm-xgb", 0, [50, 40, 40, 40], 4)
        tracker.finish_parent()
        out = tmp_path / "out"
        done = CliRunner().invoke(app, ["compare", name, "--tracking-uri", uri, "--out", str(out)])
        assert done.exit_code == 0, done.output
        report = out / ("team_suite.md" if name == "team/suite" else "_Users_me_suite.md")
        links = re.findall(r"\]\(([^)]+\.png)\)", report.read_text())
        assert links and all((out / link).is_file() for link in links), links
    assert not Path("/Users/me/suite").exists()


def test_no_wall_clock_plot_when_no_run_has_trial_times(tmp_path):
    """An empty figure (the reference line only) was written, logged and linked."""
    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "tvm-xgb", 0, [50, 40, 40, 40], 4, timed=False)
    tracker.finish_parent()
    result = compare_experiment(uri, "e", out_dir=tmp_path / "out")
    assert [p.name for p in result.plots] == ["gemm_M=8_.trials.png"]


def test_a_session_continued_at_a_larger_budget_counts_once_and_budgets_are_one(tmp_path):
    """Config B (budget 4) continues config A's sessions (budget 2) in one experiment and work_dir:
    A's runs are the starts of B's, so they are left out, not counted as more seeds censored at 2.
    A model run only at budget 2 makes every run of the workload scored on its first 2 trials."""
    import math
    import time

    from costlab.report.compare import compare_experiment, comparison_markdown
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    a = ExperimentTracker(uri, "shared")
    a.start_parent("config-a", {}, "name: config-a\n")
    _log_child(a, "tvm-xgb", 0, [50, 40], 2)
    time.sleep(0.01)
    b = ExperimentTracker(uri, "shared")
    b.start_parent("config-b", {}, "name: config-b\n")
    _log_child(b, "tvm-xgb", 0, [50, 40, 30, 20], 4)
    _log_child(b, "tvm-xgb", 1, [60, 45, 21, 21], 4)
    result = compare_experiment(uri, "shared")
    (xgb,) = result.summaries
    assert xgb.seeds == [0, 1] and xgb.budget == 4 and xgb.t95 == [4, 3]  # reference 20 µs
    assert "its 2 logged trials start the other's 4" in result.unfinished[0]
    assert not result.budget_notes
    # a run without a success is the same session only as another run without one
    for config, latencies in (("config-e", [50, 40]), ("config-f", [math.inf, math.inf])):
        e = ExperimentTracker(uri, "apart")
        e.start_parent(config, {}, f"name: {config}\n")
        _log_child(e, "tvm-xgb", 1, latencies, 2)
    apart = compare_experiment(uri, "apart")
    assert apart.summaries[0].seeds == [1, 1] and len(apart.repeat_notes) == 1

    c = ExperimentTracker(uri, "shared")
    c.start_parent("config-c", {}, "name: config-c\n")
    _log_child(c, "lgbm", 0, [30, 20], 2)
    _log_child(c, "tvm-xgb", 2, [55], 4)  # its search ended after one trial
    result = compare_experiment(uri, "shared")
    lgbm, xgb = result.summaries
    assert lgbm.budget == xgb.budget == 2
    assert result.reference_us["gemm(M=8)"] == 20.0  # the best known, trials past the budget included
    assert xgb.final_best_us == pytest.approx([40.0, 45.0, 55.0])
    assert xgb.wall_s == pytest.approx([0.2, 0.2, 10.0])  # the time of trial 2; the whole run that ended early
    assert xgb.t95 == [3, 3, 3] and lgbm.t95 == [2]  # within 5% of 20 µs in the first 2 trials: only lgbm
    assert all(len(r.curve_steps) <= 2 for r in result.runs)  # the runs as scored (the pooled plots draw them)
    (note,) = result.budget_notes
    assert note == ("gemm(M=8): its runs logged different budgets (2: lgbm; 4: tvm-xgb); all are scored on their "
                    "first 2 trials (the wall time of a longer run: the time of its trial 2)")
    assert f"- **{note}**" in comparison_markdown(result)


def test_an_even_number_of_seeds_with_one_middle_run_censored_gives_a_bound():
    from costlab.report.compare import (ModelSummary, bounded_median, bounds_phrase, censored_median,
                                        trials_versus_baseline)

    assert censored_median([5, 6, 11, 11], 10) == (8.5, "at least")  # between 8.5 and infinity
    assert censored_median([5, 11, 11, 11], 10) == (11.0, "over")
    assert censored_median([5, 6, 7, 11], 10) == (6.5, "")
    assert ModelSummary._fmt([5, 6, 11, 11], ".0f", 10) == "≥8.5 (5–>10)"
    assert ModelSummary._fmt([43, 65, 70, 196, 201, 201, 201, 201], ".0f", 200) == "≥198.5 (43–>200)"
    assert ModelSummary._fmt([150, 200, 201, 201], ".0f", 200) == "≥200.5 (150–>200)"
    assert ModelSummary._fmt([69.7, 70.1], ".0f") == "70 (70–70)"  # seconds, not trials: whole numbers
    # against a measured baseline median, the ratio is a lower bound; against a bound, unknown
    assert trials_versus_baseline([5, 6, 11, 11], [4, 5, 6, 7], 10, 10)[2:] == (False, "at least")
    assert trials_versus_baseline([4, 5, 6, 7], [5, 6, 11, 11], 10, 10)[2:] == (False, "at most")
    assert trials_versus_baseline([5, 6, 11, 11], [5, 11, 11, 11], 10, 10)[2:] == (False, "unknown")
    assert trials_versus_baseline([11, 11, 11], [5, 11, 11], 10, 10)[2:] == (True, "")  # both >B
    # the median over workloads of ≤0.33, ≤0.57, 0.88, ≥1.04 and two unknowns is not bounded
    ratios, bounds = [0.33, 0.57, 0.88, 1.04, 1.0, 1.0], ["at most", "at most", "", "at least", "unknown", "unknown"]
    assert bounds_phrase(*bounded_median(ratios, bounds)) == "not bounded"
    assert bounds_phrase(*bounded_median([0.33, 0.57, 0.88], ["at most", "at most", ""])) == "at most 0.57"
    assert bounds_phrase(*bounded_median([0.5, 0.9, 1.2], ["", "at least", ""])) == "between 0.90 and 1.20"
    assert bounds_phrase(*bounded_median([0.5, 0.9], ["", ""])) == ""


def test_trials_to_the_baselines_final_are_bounds_too_and_need_a_baseline_kernel(tmp_path):
    """With 4 baseline seeds, two never reach their median final latency: that median is a lower
    bound, so a model's ratio to it is at most what it shows. A baseline whose median run found
    no kernel gives nothing to reach (every run 'reached' an infinite latency at trial 1)."""
    import math

    from costlab.report.compare import COLUMNS, compare_experiment, comparison_rows, suite_lines
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    t = ExperimentTracker(uri, "e")
    t.start_parent("e", {}, "name: e\n")
    for seed, curve in enumerate([[50, 40, 40], [60, 45, 45], [30, 30, 30], [35, 35, 35]]):
        _log_child(t, "tvm-xgb", seed, curve, 3)  # finals 40, 45, 30, 35: median 37.5, reached by 2 of 4
    for seed in range(2):
        _log_child(t, "lgbm", seed, [36, 20, 20], 3)
    lgbm, xgb = (dict(zip(COLUMNS, row)) for row in comparison_rows(compare_experiment(uri, "e")))
    assert xgb["trials to tvm-xgb's final"] == "≥2.5 (1–>3)"  # 1, 1, >3, >3
    assert lgbm["trials to tvm-xgb's final"] == "1 (≤0.40x, not separable)"  # 1 and 1 against 1, 1, >3, >3
    (line,) = suite_lines(compare_experiment(uri, "e"))
    assert ("median trials to tvm-xgb's final latency / tvm-xgb's own 0.40 (separably fewer on 0, more on 0; "
            "its cells are bounds, so the median is at most 0.40)") in line

    inf = math.inf
    t = ExperimentTracker(uri, "f")
    t.start_parent("f", {}, "name: f\n")
    for seed in range(3):
        _log_child(t, "tvm-xgb", seed, [inf, inf] if seed else [50, 50], 2)
    _log_child(t, "lgbm", 0, [inf, inf], 2)
    result = compare_experiment(uri, "f")
    assert all(s.t_match == [] and s.t_match_ratio is None for s in result.summaries)


def test_the_rank_test_counts_every_split_exactly_with_ties():
    import itertools

    def brute(a, b):  # every split of the pooled seeds, by hand
        pooled, k = np.array(a + b, float), len(a)

        def u(x, y):
            d = np.subtract.outer(x, y)
            return (d < 0).sum() + 0.5 * (d == 0).sum()

        obs, low, high, n = u(pooled[:k], pooled[k:]), 0, 0, 0
        for idx in itertools.combinations(range(len(pooled)), k):
            mask = np.zeros(len(pooled), bool)
            mask[list(idx)] = True
            value = u(pooled[mask], pooled[~mask])
            n, low, high = n + 1, low + (value <= obs), high + (value >= obs)
        return min(1.0, 2 * min(low, high) / n)

    cases = [([20, 31, 45, 201, 201], [24, 150, 201, 201, 201, 201]), ([5, 5, 7], [5, 9, 9, 9]),
             ([1, 2, 3, 4, 5, 6, 7], [8, 8, 8, 8, 8, 8])]
    for a, b in cases:
        assert rank_test_p(a, b) == pytest.approx(brute(a, b), abs=1e-12)
    # and as scipy's exhaustive permutation test of U (12,870 splits), ties included
    from scipy import stats

    a, b = np.array([10, 20, 30, 40, 201, 201, 201, 201.0]), np.array([100, 150, 150] + [201.0] * 5)

    def u(x, y, axis=-1):
        d = np.moveaxis(x, axis, -1)[..., :, None] - np.moveaxis(y, axis, -1)[..., None, :]
        return (d < 0).sum(axis=(-2, -1)) + 0.5 * (d == 0).sum(axis=(-2, -1)) - 32

    # above 100,000 splits (the old code drew a sample there): 11 against 11, fully apart
    assert rank_test_p(list(range(11)), list(range(100, 111))) == pytest.approx(2 / 705_432, rel=1e-9)
    scipy_p = stats.permutation_test((a, b), u, permutation_type="independent", vectorized=True,
                                     alternative="two-sided", n_resamples=np.inf).pvalue
    assert rank_test_p(a, b) == pytest.approx(scipy_p, abs=1e-12)


def test_baseline_option_takes_every_ratio_against_the_named_model(tmp_path):
    """`costlab compare --baseline LABEL`: a lever against its control, in an experiment without
    tvm-xgb (whose ratios were all '-'), in the table, the suite line and the report; a label
    that no finished run has is refused by name."""
    from typer.testing import CliRunner

    from costlab.cli import app
    from costlab.errors import CostlabError
    from costlab.report.compare import columns, compare_experiment, comparison_rows, suite_lines
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    for seed, curve in enumerate([[50, 40, 40, 40], [60, 45, 45, 38], [55, 55, 42, 42]]):
        _log_child(tracker, "lgbm-raw", seed, curve, 4)
    for seed, curve in enumerate([[39, 20, 20, 20], [30, 21, 21, 21], [45, 20, 20, 20]]):
        _log_child(tracker, "lgbm-ordered", seed, curve, 4)
    tracker.finish_parent()

    default = compare_experiment(uri, "e")
    assert all(s.t95_ratio is None for s in default.summaries) and suite_lines(default) == []

    result = compare_experiment(uri, "e", baseline="lgbm-raw")
    ordered, raw = result.summaries
    assert (ordered.model, ordered.t95, raw.t95) == ("lgbm-ordered", [2, 2, 2], [5, 5, 5])
    assert ordered.t95_ratio == pytest.approx(2 / 5) and ordered.separable_from_baseline
    assert raw.t95_ratio is None  # the baseline against itself: no ratio
    row = dict(zip(columns("lgbm-raw"), comparison_rows(result)[0]))
    assert row["T95 / lgbm-raw"].startswith("≤0.40")
    (line,) = suite_lines(result)
    assert line.startswith("lgbm-ordered over 1 workload(s): median T95 / lgbm-raw 0.40")

    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", uri, "--out", str(out), "--baseline", "lgbm-raw"],
                              env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    report = (out / "e.md").read_text()
    assert "| T95 / lgbm-raw |" in report and "tvm-xgb" not in report

    refused = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", uri, "--out", str(out), "--baseline", "lgbm"],
                                 env={"COLUMNS": "300"})
    assert isinstance(refused.exception, CostlabError)  # the console entry point prints it and exits with 2
    assert "--baseline 'lgbm' is not a model of its finished runs (they have: lgbm-ordered, lgbm-raw)" in str(
        refused.exception)

    unfinished = ExperimentTracker(uri, "only-running")  # its one run never finished: nothing to take ratios against
    unfinished.start_parent("only-running", {}, "name: only-running\n")
    _log_child(unfinished, "lgbm-raw", 0, [50, 40], 4, finish=False)
    with pytest.raises(CostlabError, match="'lgbm-raw' is not a model of its finished runs \\(it has no finished run\\)"):
        compare_experiment(uri, "only-running", baseline="lgbm-raw")
    with pytest.raises(CostlabError, match="compare only-running: nothing to compare at .*: its 1 tuning run\\(s\\) "
                                           "are unfinished .*`costlab run CONFIG` resumes them"):
        compare_experiment(uri, "only-running")  # not an empty table and exit status 0


def test_an_experiment_missing_from_the_store_is_named_with_the_experiments_found_and_how_to_log_it(tmp_path):
    """A store without the experiment (a fresh machine's, say): the error names the experiment, the
    store, what it holds, and `--recorded-only`, which logs committed tuning databases into it."""
    from costlab.errors import CostlabError
    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "other")
    tracker.start_parent("other", {}, "name: other\n")
    tracker.finish_parent()
    with pytest.raises(CostlabError) as refused:
        compare_experiment(uri, "cpu-min5")
    said = str(refused.value)
    assert f"no MLflow experiment 'cpu-min5' at {uri}; found: " in said and "other" in said
    assert "costlab run CONFIG --recorded-only" in said


def test_a_reference_experiment_that_adds_nothing_or_is_not_there_is_named_as_the_option(tmp_path):
    from costlab.errors import CostlabError
    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _one_finished_run(uri, "e", "e")
    _one_finished_run(uri, "other", "other", workload="gemm(M=16)", model="lgbm", latencies_us=(20, 10))
    empty = ExperimentTracker(uri, "empty")
    empty.start_parent("empty", {}, "name: empty\n")
    empty.finish_parent()

    with pytest.raises(CostlabError, match="^--reference-experiment other: none of its finished runs measured a "
                                           r"workload of e \(it tuned gemm\(M=16\); e tuned gemm\(M=8\)\)$"):
        compare_experiment(uri, "e", reference_experiment="other")
    with pytest.raises(CostlabError, match=r"^--reference-experiment empty: .*\(it has no finished tuning run; "):
        compare_experiment(uri, "e", reference_experiment="empty")
    with pytest.raises(CostlabError, match="^--reference-experiment gone: no MLflow experiment 'gone' at "):
        compare_experiment(uri, "e", reference_experiment="gone")


def test_compare_keeps_the_report_it_replaces_and_says_where(tmp_path):
    from typer.testing import CliRunner

    from costlab.cli import app

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _one_finished_run(uri, "e", "e")
    out = tmp_path / "results"
    out.mkdir()
    (out / "e.md").write_text("# e: the committed report\n")
    done = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", uri, "--out", str(out)])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert f"the report that was at {out / 'e.md'} is kept as {out / 'e.previous.md'}" in said
    assert (out / "e.previous.md").read_text() == "# e: the committed report\n"
    assert (out / "e.md").read_text().startswith("# e: search efficiency")
    again = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", uri, "--out", str(out)])
    assert again.exit_code == 0 and "is kept as" not in again.output, again.output  # the same findings: no copy
    assert (out / "e.previous.md").read_text() == "# e: the committed report\n"


def test_a_run_cut_to_a_shorter_budget_without_trial_times_has_no_wall_time(tmp_path):
    """Logged from a database saved before costlab kept each trial's time, a budget-4 run cut to
    2 trials took its whole (4-trial) wall time as the time of trial 2."""
    import math

    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "tvm-xgb", 0, [50, 40, 30, 20], 4, timed=False)
    _log_child(tracker, "lgbm", 0, [30, 20], 2, timed=False)
    tracker.finish_parent()
    lgbm, xgb = compare_experiment(uri, "e").summaries
    assert xgb.budget == 2 and math.isnan(xgb.wall_s[0])
    assert lgbm.wall_s == [20.0]  # not cut: its own wall time


def test_a_model_keeps_its_colour_in_every_workloads_figure(tmp_path, monkeypatch):
    """Colours went by place among each figure's models: a model missing from one workload
    shifted every later model's colour there."""
    from costlab.report import plots
    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    drawn, draw = {}, plots.plot_band_curves

    def capture(curves, title, xlabel, out, *args, colors=None, **kwargs):  # the colours, then drawn as always
        drawn[(title, xlabel)] = {model: colors[model] for model in curves}
        return draw(curves, title, xlabel, out, *args, colors=colors, **kwargs)

    monkeypatch.setattr(plots, "plot_band_curves", capture)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    for model in ("lgbm", "random", "tvm-xgb"):
        _log_child(tracker, model, 0, [40, 30, 30, 30], 4, workload="gemm(M=8)")
    for model in ("random", "tvm-xgb"):  # lgbm did not run on softmax
        _log_child(tracker, model, 0, [40, 30, 30, 30], 4, workload="softmax(M=8)")
    tracker.finish_parent()
    compare_experiment(uri, "e", out_dir=tmp_path / "out")
    by_model = {}
    for colours in drawn.values():
        for model, colour in colours.items():
            by_model.setdefault(model, set()).add(colour)
    assert by_model == {"lgbm": {"C0"}, "random": {"C1"}, "tvm-xgb": {"C2"}}


def test_a_deleted_experiment_is_called_deleted_not_empty(tmp_path):
    """compare said 'it has no tuning run' of an experiment deleted in MLflow (found by a bad-input audit)."""
    from mlflow.tracking import MlflowClient

    from costlab.errors import CostlabError
    from costlab.report.compare import compare_experiment
    from costlab.tracking import ExperimentTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker(uri, "e")
    tracker.start_parent("e", {}, "name: e\n")
    _log_child(tracker, "tvm-xgb", 0, [50, 40], 2)
    tracker.finish_parent()
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.get_experiment_by_name("e").experiment_id
    client.delete_experiment(exp_id)
    with pytest.raises(CostlabError, match=f"MLflow experiment 'e' at {uri} is deleted; `mlflow experiments restore "
                                           f"--experiment-id {exp_id}`"):
        compare_experiment(uri, "e")
