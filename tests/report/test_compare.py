"""Hand-checked pieces of ``costlab compare``."""

import numpy as np

from costlab.data.metrics import t95
from costlab.report.compare import dense_best_curve_us, separable


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
    assert row["final / tvm-xgb"] == "0.74"
    assert row["T95 (trials)"] == "148 (120–>200)"
    assert dict(zip(COLUMNS, rows[0]))["final / tvm-xgb"] == "-"
