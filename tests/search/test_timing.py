"""PhaseTimer: seconds per tuning phase, each counted once."""

import threading
import time

from costlab.search import timing
from costlab.search.timing import PhaseTimer


class SteppedClock:
    """``perf_counter`` that moves only when the test says: times are exact, not measured."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def test_a_nested_phase_is_counted_once_in_the_outer_one(monkeypatch):
    clock = SteppedClock()
    monkeypatch.setattr(timing, "time", clock)
    timer = PhaseTimer()
    with timer.phase("resume_warm_start_s"):
        clock.now += 1.0
        with timer.phase("cost_model_update_s"):
            clock.now += 3.0
        clock.now += 0.5
    assert dict(timer.seconds) == {"resume_warm_start_s": 4.5}
    with timer.phase("cost_model_update_s"):  # on its own again afterwards
        clock.now += 2.0
    assert dict(timer.seconds) == {"resume_warm_start_s": 4.5, "cost_model_update_s": 2.0}
    assert timer.calls["cost_model_update_s"] == 1


def test_phases_in_other_threads_are_not_nested():
    timer = PhaseTimer()

    def build():
        with timer.phase("build_s"):
            time.sleep(0.02)

    with timer.phase("cost_model_predict_s"):
        worker = threading.Thread(target=build)
        worker.start()
        worker.join()
    assert timer.calls["build_s"] == 1 and timer.seconds["build_s"] >= 0.02
