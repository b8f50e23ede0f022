"""The convergence curve of a resumed session: latencies from the database, times from the session state."""

import math

from costlab.search.recorder import Curve


def test_resumed_trials_keep_their_saved_times_and_unknown_ones_stay_unknown():
    latencies = [3.0, 2.0, 4.0, 1.0]
    curve = Curve(latencies, previous_elapsed_s=9.0, previous_trial_elapsed_s=[1.5, None, 4.0])
    assert [t.best_latency_s for t in curve.trials] == [3.0, 2.0, 2.0, 1.0]
    times = [t.elapsed_s for t in curve.trials]
    assert times[0] == 1.5 and math.isnan(times[1]) and times[2] == 4.0
    assert times[3] == 9.0  # measured after the last save: the session's saved wall time
    assert curve.trial_elapsed_s() == [1.5, None, 4.0, 9.0]  # JSON-ready: no NaN


def test_new_trials_are_timed_after_the_resumed_ones():
    curve = Curve([2.0], previous_elapsed_s=5.0, previous_trial_elapsed_s=[5.0])
    (new,) = curve.add([1.0], [None])
    assert new.index == 2 and new.best_latency_s == 1.0 and new.elapsed_s >= 5.0
    assert curve.trial_elapsed_s()[0] == 5.0 and curve.trial_elapsed_s()[1] >= 5.0


def test_without_saved_times_every_resumed_trial_gets_the_saved_wall_time():
    curve = Curve([2.0, 1.0], previous_elapsed_s=7.0)
    assert [t.elapsed_s for t in curve.trials] == [7.0, 7.0]


def test_the_time_spent_logging_a_batch_is_not_the_sessions(monkeypatch):
    """A tracking server that stalled for a minute while a batch was logged added that minute to
    every later trial's time and to the session's wall time."""
    from tvm.s_tir.meta_schedule.builder import BuilderResult
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from costlab.search import recorder as recorder_module
    from costlab.search.recorder import ConvergenceRecorder

    class SteppedClock:  # moves only when the test says, so the times are exact
        now = 1000.0

        def perf_counter(self):
            return self.now

    clock = SteppedClock()
    monkeypatch.setattr(recorder_module, "time", clock)

    def stalled_logging(new):
        clock.now += 60.0

    curve = Curve()
    recorder = ConvergenceRecorder(curve, on_batch=stalled_logging)
    built, ran = BuilderResult(artifact_path="kernel.so", error_msg=None), RunnerResult(run_secs=[1e-3], error_msg=None)
    clock.now += 2.0  # the first batch's search, build and run
    recorder._inst.apply(None, 0, [], [built], [ran])  # the Python side, as TVM calls it
    clock.now += 3.0  # the second batch's
    recorder._inst.apply(None, 0, [], [built], [ran])
    first, second = curve.trials
    assert (first.elapsed_s, second.elapsed_s, curve.elapsed_s()) == (2.0, 5.0, 5.0)
