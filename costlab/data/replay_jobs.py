"""Replaying traces, to check them or to extract their features, in batches, on several cores.

Replaying a trace (and extracting its features) runs on one core: replaying alone took about
3 ms a CPU record (``cpu-v1``) and 25 ms a CUDA record (the A100 database) here. :func:`run_batches` hands the batches
to worker processes, each with its own TVM, and returns their results in the order of the
batches, so what is written from them is what a single process writes.

A worker is a fresh process (TVM's ``PopenPoolExecutor``, as the builder's): it imports
TVM (seconds) and decodes the workloads once. The extractors travel to it with
cloudpickle (a notebook's class too). A batch a worker cannot do (its extractors do not
unpickle there, or it was killed) is done in this process afterwards, so nothing is lost.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import cloudpickle

from costlab.data.database import one_line
from costlab.errors import CostlabError

log = logging.getLogger(__name__)

MIN_ROWS_PER_WORKER = 1024
"""Below this many rows a worker each, starting workers (a TVM import each) costs more than it saves."""
JOBS_VARIABLE = "COSTLAB_REPLAY_JOBS"
"""Environment variable: how many worker processes replay traces (1: none, this process)."""
MAX_DEFAULT_JOBS = 8
"""Workers by default at most: each holds its own TVM (about 0.6 GB)."""
MESSAGE_LIMIT = 300
"""Characters of an error kept in a feature cache's ``dropped`` lines and in warnings."""


@dataclass
class Batch:
    """Records of one workload and target, replayed (and extracted) together."""

    index: int
    workload: str  # a key of the workloads the :class:`Replay` was given
    target: str  # the target's JSON ("" when none); the extractors' context
    rows: list[int]  # what the caller numbers the records by
    traces: list[str]  # JSON ``[insts, decisions]``
    args_info: list[str]  # JSON of the argument info ("null" when none)


@dataclass
class BatchResult:
    """One batch's outcome: the rows whose trace does not replay, and the features of the
    others, per extractor name."""

    index: int
    n_rows: int
    unreplayable: dict[int, str] = field(default_factory=dict)  # row -> why, one line
    features: dict[str, object] = field(default_factory=dict)  # name -> Features, or None when none extracted
    rows: dict[str, list[int]] = field(default_factory=dict)  # name -> the rows the features are of
    dropped: dict[str, list[str]] = field(default_factory=dict)  # name -> "row N: why"
    seconds: dict[str, float] = field(default_factory=dict)  # name -> extraction seconds
    replay_seconds: float = 0.0


class Replay:
    """What a process needs to do batches: the workloads (``{key: workload JSON line}``,
    decoded on first use), and the extractors, if any. Without extractors a batch only
    replays its traces (a database's check); with them a trace must also give a
    ``MeasureCandidate`` (its argument info read), whose features are extracted.
    ``mods``: workloads this process decoded already, by key (workers decode their own)."""

    def __init__(self, workloads: dict[str, list], extractors: dict | None = None, mods: dict | None = None):
        self.workloads = workloads
        self.extractors = extractors or {}
        self._mods: dict[str, object] = dict(mods or {})
        self._contexts: dict[tuple[str, str], object] = {}

    def mod(self, key: str):
        if key not in self._mods:
            from costlab.data.database import decode_workload

            self._mods[key] = decode_workload(self.workloads[key])
        return self._mods[key]

    def context(self, key: str, target: str):
        from costlab.data.database import make_context

        if (key, target) not in self._contexts:
            self._contexts[key, target] = make_context(self.mod(key), json.loads(target) if target else None)
        return self._contexts[key, target]

    def run(self, batch: Batch) -> BatchResult:
        from costlab.data import database

        names = list(self.extractors)
        result = BatchResult(batch.index, len(batch.rows))
        mod = self.mod(batch.workload)
        t0 = time.perf_counter()
        cands, kept = [], []
        for row, trace, arg in zip(batch.rows, batch.traces, batch.args_info):
            try:
                if names:
                    cands.append(database.make_measure_candidate(mod, json.loads(trace), json.loads(arg)))
                else:
                    database.replay_trace(mod, json.loads(trace))
                kept.append(int(row))
            except Exception as err:  # noqa: BLE001
                result.unreplayable[int(row)] = one_line(err, MESSAGE_LIMIT)
        result.replay_seconds = time.perf_counter() - t0
        for n in names:
            result.dropped[n] = [f"row {r}: trace does not replay: {why}" for r, why in result.unreplayable.items()]
            result.features[n], result.rows[n] = None, []
            if cands:
                t0 = time.perf_counter()
                result.features[n], result.rows[n] = _extract_batch(
                    self.extractors[n], self.context(batch.workload, batch.target), cands, kept, result.dropped[n])
                result.seconds[n] = time.perf_counter() - t0
        return result


def _extract_batch(extractor, context, cands, kept, dropped):
    """Extract a batch; if the batch fails, extract one by one and drop the failing ones."""
    try:
        return extractor.extract(context, cands), kept
    except Exception:  # noqa: BLE001
        pass
    import costlab.features as cf

    parts, ok_rows = [], []
    for cand, row in zip(cands, kept):
        try:
            parts.append(extractor.extract(context, [cand]))
            ok_rows.append(row)
        except Exception as err:  # noqa: BLE001
            dropped.append(f"row {row}: extractor {extractor.name!r} failed: {one_line(err, MESSAGE_LIMIT)}")
    return (cf.concat_features(parts) if parts else None), ok_rows


def resolve_jobs(jobs: int | None, n_rows: int) -> int:
    """``jobs`` checked, or :func:`default_jobs` of ``n_rows`` when None."""
    if jobs is None:
        return default_jobs(n_rows)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CostlabError(f"jobs: {jobs!r} is not a number of processes (a whole number, at least 1)")
    return jobs


def default_jobs(n_rows: int) -> int:
    """Workers for ``n_rows`` rows: ``$COSTLAB_REPLAY_JOBS`` when set, else one per usable
    core, at most :data:`MAX_DEFAULT_JOBS` and with at least :data:`MIN_ROWS_PER_WORKER`
    rows each (1: none, this process does the batches)."""
    from costlab.targets import usable_cores

    said = os.environ.get(JOBS_VARIABLE, "").strip()
    if said:
        if not said.isdigit() or int(said) < 1:
            raise CostlabError(f"{JOBS_VARIABLE}={said!r}: not a number of processes (a whole number, at least 1)")
        return int(said)
    return max(1, min(usable_cores(), MAX_DEFAULT_JOBS, n_rows // MIN_ROWS_PER_WORKER))


# ----------------------------------------------------------------------- workers

_WORKER: Replay | None = None
_WORKER_PROBLEM: str | None = None


class WorkerUnusable(RuntimeError):
    """A worker process cannot do batches (its extractors did not unpickle there)."""


def _start_worker(workloads: dict[str, list], pickled_extractors: bytes) -> None:
    global _WORKER, _WORKER_PROBLEM
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers
    try:
        _WORKER = Replay(workloads, cloudpickle.loads(pickled_extractors))
    except Exception as err:  # noqa: BLE001
        _WORKER_PROBLEM = f"its extractors did not unpickle: {one_line(err, MESSAGE_LIMIT)}"


def _run_in_worker(batch: Batch) -> BatchResult:
    if _WORKER is None:
        raise WorkerUnusable(_WORKER_PROBLEM or "not started")
    return _WORKER.run(batch)


def run_batches(
    replay: Replay,
    batches: list[Batch],
    jobs: int,
    on_done: Callable[[BatchResult], None] | None = None,
) -> list[BatchResult]:
    """Every batch's result, in the order of ``batches``; on ``jobs`` worker processes when
    ``jobs > 1``. ``on_done(result)`` is called as each batch finishes (in any order)."""
    results: dict[int, BatchResult] = {}
    if jobs > 1 and len(batches) > 1:
        for result in _run_on_workers(replay, batches, jobs):
            results[result.index] = result
            if on_done:
                on_done(result)
    for batch in batches:  # all of them with jobs=1; those no worker could do otherwise
        if batch.index not in results:
            results[batch.index] = result = replay.run(batch)
            if on_done:
                on_done(result)
    return [results[b.index] for b in batches]


def _run_on_workers(replay: Replay, batches: list[Batch], jobs: int) -> Iterator[BatchResult]:
    """Results of the batches workers did, as they finish. TVM's ``PopenPoolExecutor`` starts
    each worker as ``python -m tvm.exec.popen_worker``, so the caller's script is not run
    again there (as ``multiprocessing``'s spawn does, which deadlocks an unguarded script)."""
    from concurrent.futures import as_completed

    from tvm.support.popen_pool import PopenPoolExecutor

    try:
        pickled = cloudpickle.dumps(replay.extractors)
    except Exception as err:  # noqa: BLE001
        log.warning("replay: working in this process only (the extractors cannot be sent to a "
                    "worker process: %s)", one_line(err, MESSAGE_LIMIT))
        return
    pool = PopenPoolExecutor(max_workers=min(jobs, len(batches)), initializer=_start_worker,
                             initargs=(replay.workloads, pickled))
    said = False
    try:
        futures = [pool.submit(_run_in_worker, b) for b in batches]
        for future in as_completed(futures):
            try:
                yield future.result()
            except (WorkerUnusable, ChildProcessError) as err:  # done in this process afterwards
                if not said:
                    lines = str(err).strip().splitlines()  # TVM's worker puts its traceback first
                    log.warning("replay: a worker process could not do its batches (%s); they are done in "
                                "this process", one_line(lines[-1], MESSAGE_LIMIT) if lines else type(err).__name__)
                    said = True
    finally:
        pool.shutdown(wait=True)
