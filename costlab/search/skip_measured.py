"""A resumed session's search, kept from measuring again what its database holds.

MetaSchedule's evolutionary search remembers the schedules it handed out in this process
only: resumed, it starts from an empty memory (TVM leaves a TODO there). The best records it
draws from the database for its first population, and the random stream of a seed that
replays the first iteration, then come back as "new" candidates and are measured again,
each a trial of the budget that measures nothing new. :class:`SkipMeasured` wraps the
search and drops a candidate whose trace is one of the database's records, asking the
search again when it dropped a whole batch.
"""

from __future__ import annotations

import json

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.search_strategy import PySearchStrategy

# batches in a row that may be wholly dropped before the search counts as exhausted; each
# drops up to a batch of the database's records, which the search then never picks again
MAX_DROPPED_BATCHES = 64


def trace_key(trace) -> str:
    """A schedule's identity: its trace with every decision, as the database saves it (a
    sampled decision is a TVM integer in a fresh trace and a plain number in a loaded one)."""
    return json.dumps(trace.as_json(), default=_plain)


def _plain(value):
    number = getattr(value, "value", None)
    return number if isinstance(number, (int, float)) else str(value)


def measured_trace_keys(database) -> set[str]:
    """The trace keys of every record of ``database``."""
    return {trace_key(record.trace) for record in database.get_all_tuning_records()}


@derived_object
class SkipMeasured(PySearchStrategy):
    """``inner`` (a search strategy) without the candidates whose trace key is in ``measured``."""

    def __init__(self, inner, measured: set[str]):
        self.inner = inner
        self.measured = set(measured)

    def _initialize_with_tune_context(self, context) -> None:
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self):
        for _ in range(MAX_DROPPED_BATCHES):
            candidates = self.inner.generate_measure_candidates()
            if not candidates:  # None: the budget is spent; empty: the search found nothing unmeasured
                return candidates
            new = [c for c in candidates if trace_key(c.sch.trace) not in self.measured]
            if new:
                return new
        return None

    def notify_runner_results(self, measure_candidates, results) -> None:
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self):
        return SkipMeasured(self.inner.clone(), self.measured)
