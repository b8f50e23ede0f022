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
