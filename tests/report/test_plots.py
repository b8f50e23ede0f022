import numpy as np
import pytest

from costlab.report.plots import band_over_seeds


def test_band_median_never_rises_when_a_slower_seed_starts_late():
    # Seeds 0 and 1 find 10 and 12 µs early; seed 2's first point comes last and is slow.
    seeds = [([1.0, 5.0], [20.0, 10.0]), ([2.0, 6.0], [30.0, 12.0]), ([8.0], [50.0])]
    grid, med, lo, hi, n_seeds = band_over_seeds(seeds)
    assert n_seeds == 3
    assert list(grid) == [1.0, 2.0, 5.0, 6.0, 8.0]
    # Before 2 of the 3 seeds have a point the median is unknown (not drawn).
    assert np.isnan(med[0])
    drawn = med[~np.isnan(med)]
    assert list(drawn) == [30.0, 30.0, 12.0, 12.0]  # the slow seed, arriving at x=8, does not raise it
    assert np.all(np.diff(drawn) <= 0)
    assert list(lo) == [20.0, 20.0, 10.0, 10.0, 10.0]
    # The band's top exists once every seed has a point.
    assert np.isnan(hi[:4]).all() and hi[4] == 50.0


def test_band_leaves_out_points_with_unknown_x_and_seeds_without_points():
    seeds = [([np.nan, np.nan], [5.0, 4.0]), ([1.0, np.nan, 3.0], [np.inf, 7.0, 6.0])]
    grid, med, lo, hi, n_seeds = band_over_seeds(seeds)
    assert n_seeds == 1
    assert list(grid) == [1.0, 3.0]
    assert np.isnan(med[0]) and med[1] == 6.0  # a failed first trial is no kernel yet
    assert band_over_seeds([([np.nan], [1.0])]) is None


def test_speed_fraction_plot_needs_a_reference_and_writes_a_png(tmp_path):
    import pytest

    from costlab.report.plots import plot_band_curves

    curves = {"a": [([1.0, 2.0], [20.0, 10.0]), ([1.0, 3.0], [30.0, 11.0])], "b": [([1.0], [12.0])]}
    out = plot_band_curves(curves, "t", "measured trials", tmp_path / "f.png", reference_us=10.0, speed_fraction=True)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="needs reference_us"):
        plot_band_curves(curves, "t", "measured trials", tmp_path / "g.png", speed_fraction=True)


def test_a_session_plot_shows_every_trial_and_its_failures():
    """With the only success at trial 8 of 8, the x axis ran from 7.6 to 8.4 and the 7 failures
    were nowhere; with every trial failed, the plot was an empty axis around 0."""
    import math

    from costlab.report.plots import _pyplot, draw_session_curve
    from costlab.search.recorder import Trial

    plt = _pyplot()
    late = [Trial(i, math.inf, math.inf, float(i)) for i in range(1, 8)] + [Trial(8, 5e-6, 5e-6, 8.0)]
    none = [Trial(i, math.inf, math.inf, float(i)) for i in range(1, 9)]
    for trials, successes in ((late, 1), (none, 0)):
        fig, ax = plt.subplots()
        draw_session_curve(ax, trials)
        assert ax.get_xlim() == (0.5, 8.5)
        labels = ax.get_legend_handles_labels()[1]
        assert "failed (%d)" % (8 - successes) in labels
        assert ("no successful trial" in [t.get_text() for t in ax.texts]) == (successes == 0)
        plt.close(fig)


def test_the_speed_band_is_the_median_of_the_seeds_speed_fractions():
    """It was the reference over the median latency: with 4 seeds at 100, 200, 100 and 400 µs
    (reference 100) that is 0.667, not the median speed 0.75; and a middle seed without a kernel
    yet made the median latency infinite, so nothing was drawn where the median speed is 0.5."""
    band = band_over_seeds([([1.0], [100.0]), ([1.0], [200.0]), ([1.0], [100.0]), ([1.0], [400.0])],
                           speed_of_reference=100.0)
    assert band[1][0] == pytest.approx(0.75) and band[2][0] == pytest.approx(0.25) and band[3][0] == 1.0
    grid, median, low, high, _ = band_over_seeds([([1.0, 3.0], [100.0, 100.0]), ([3.0], [100.0])],
                                                 speed_of_reference=100.0)
    assert list(grid) == [1.0, 3.0] and list(median) == [0.5, 1.0] and list(low) == [0.0, 1.0]
