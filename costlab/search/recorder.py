"""The convergence recorder: a measure callback that sees every measured batch in order.

``JSONDatabase.get_all_tuning_records()`` returns records sorted by latency, so the
convergence curve (best latency after each trial) is recorded here, as the
measurements arrive, after MetaSchedule's ``AddToDatabase`` has committed them.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from dataclasses import dataclass
from typing import Callable

from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
from tvm.ir.utils import derived_object

from costlab.search.adapter import latencies_s


@dataclass
class Trial:
    """One measured candidate. Latencies in seconds; ``inf`` means the trial failed."""

    index: int  # 1-based count of trials measured in this session, resumed ones included
    latency_s: float
    best_latency_s: float
    elapsed_s: float  # session wall time when it was recorded, resumed time included; nan: unknown
    error: str | None = None
    build_failed: bool = False  # the candidate did not build (MetaSchedule never trains its model on it)

    @property
    def failed(self) -> bool:
        return not math.isfinite(self.latency_s)


class Curve:
    """The trials of a session, in measurement order."""

    def __init__(self, previous_latency_s: list[float] = (), previous_elapsed_s: float = 0.0,
                 previous_trial_elapsed_s: list[float | None] | None = None, previous_build_failed=()):
        """Continue a session: its recorded latencies, its wall time so far, and when each trial came.

        ``previous_trial_elapsed_s`` is the saved time of each earlier trial, ``None`` where it
        is unknown (``nan`` here, and not logged). Trials past its end (measured after the
        last save, at most one batch), or all of them when it is not given, get
        ``previous_elapsed_s``. ``previous_build_failed``: the (1-based) trials that did not
        build, as saved (the database records them as any failure).
        """
        build_failed = set(previous_build_failed)
        self.trials: list[Trial] = []
        self.start = time.perf_counter() - previous_elapsed_s
        saved = previous_trial_elapsed_s or []
        best = math.inf
        for i, lat in enumerate(previous_latency_s, start=1):
            best = min(best, lat)
            if i > len(saved):
                at = previous_elapsed_s
            else:
                at = math.nan if saved[i - 1] is None else float(saved[i - 1])
            self.trials.append(Trial(i, lat, best, at, build_failed=i in build_failed))

    def build_failed_trials(self) -> list[int]:
        """The trials that did not build (1-based), JSON-ready."""
        return [t.index for t in self.trials if t.build_failed]

    def trial_elapsed_s(self) -> list[float | None]:
        """Each trial's time, JSON-ready (``None`` where unknown)."""
        return [t.elapsed_s if math.isfinite(t.elapsed_s) else None for t in self.trials]

    @property
    def best_latency_s(self) -> float:
        return self.trials[-1].best_latency_s if self.trials else math.inf

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.start

    @contextlib.contextmanager
    def untimed(self):
        """Leave what runs inside out of the session's time: logging to MLflow, whose server may
        stall for a minute, is not the search's."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.start += time.perf_counter() - started

    def add(self, latency_s: list[float], errors: list[str | None], build_failed: list[bool] | None = None) -> list[Trial]:
        added = []
        now = self.elapsed_s()
        for k, (lat, err) in enumerate(zip(latency_s, errors)):
            best = min(self.best_latency_s, lat)
            trial = Trial(len(self.trials) + 1, float(lat), best, now, err, bool(build_failed and build_failed[k]))
            self.trials.append(trial)
            added.append(trial)
        return added


def _batch(builder_results, runner_results) -> tuple[list[float], list[str | None], list[bool]]:
    """A measured batch's latencies, errors and which candidates did not build."""
    errors = [b.error_msg or r.error_msg for b, r in zip(builder_results, runner_results)]
    return list(latencies_s(runner_results)), errors, [b.error_msg is not None for b in builder_results]


@derived_object
class SaveBeforeTraining(PyMeasureCallback):
    """Placed right after MetaSchedule's ``AddToDatabase``: calls ``save(curve)`` with the
    session's trials and this batch's, stamped now, before the cost model trains on them. An
    interruption during the training (seconds for the GNN or an ensemble) then leaves the
    batch's times saved; :class:`ConvergenceRecorder` saves them again, stamped after it."""

    def __init__(self, curve: Curve, save: Callable[[Curve], None]):
        super().__init__()
        self.curve = curve
        self.save = save

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
        ahead = copy.copy(self.curve)
        ahead.trials = list(self.curve.trials)
        ahead.add(*_batch(builder_results, runner_results))
        self.save(ahead)


@derived_object
class ConvergenceRecorder(PyMeasureCallback):
    """Appends each measured batch to a :class:`Curve` and calls ``on_batch(new_trials)``."""

    def __init__(self, curve: Curve, on_batch: Callable[[list[Trial]], None] | None = None):
        super().__init__()
        self.curve = curve
        self.on_batch = on_batch

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
        new = self.curve.add(*_batch(builder_results, runner_results))
        if self.on_batch is not None:
            with self.curve.untimed():
                self.on_batch(new)
