"""PhaseTimer: seconds per tuning phase, each counted once."""

import threading
import time

from costlab.search.timing import PhaseTimer


def test_a_nested_phase_is_counted_once_in_the_outer_one():
    timer = PhaseTimer()
    with timer.phase("resume_warm_start_s"):
        with timer.phase("cost_model_update_s"):
            time.sleep(0.05)
    assert set(timer.seconds) == {"resume_warm_start_s"}
    assert 0.05 <= timer.seconds["resume_warm_start_s"] < 0.5
    with timer.phase("cost_model_update_s"):  # on its own again afterwards
        pass
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
