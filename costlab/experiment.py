"""``costlab run``: every (workload × cost model × seed) of a config, logged to MLflow.

Guarantees:
- the MLflow tracking URI is checked before any tuning starts;
- one process at a time per experiment directory (a lock file), with a clear message;
- finished combinations are skipped, unfinished ones continue (see ``search.session``);
- a failing combination is recorded as a failed child run, and the others go on.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import math
import os
import shutil
import signal
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from costlab.config import ExperimentConfig, config_to_yaml, flatten, loggable_config
from costlab.errors import CostlabError
from costlab.tracking import URL_PRINTING, redact_text, redact_uri

LOCK_FILE = ".costlab.lock"


@dataclass
class CombinationOutcome:
    workload: str
    model: str
    seed: int
    best_latency_us: float
    trials: int
    wall_s: float
    status: str  # finished, skipped or failed
    failed_trials: int = 0  # of a session tuned in this run: trials that did not build or run


def lock_is_held(work_path: Path) -> bool:
    """Whether a ``costlab run`` holds the work directory's lock now; reads only (for the dry run)."""
    import fcntl

    try:
        fd = os.open(work_path / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file: no run ever held it here
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused while a run holds it (filelock's exclusive flock)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def combinations(cfg: ExperimentConfig):
    return list(itertools.product(cfg.workloads, cfg.cost_models, cfg.seeds))


def plan_experiment(cfg: ExperimentConfig, target=None) -> list:
    """``(workload, model, seed, SessionPlan)`` per combination, in run order: what ``costlab run``
    will do with each, read from the work directory without writing anything. ``target``:
    ``cfg.target`` as a ``tvm.target.Target``, if the caller already built it."""
    from costlab.search.session import plan_session
    from costlab.targets import make_target

    target = target if target is not None else make_target(cfg.target)
    return [(w, m, s, plan_session(cfg, w, m, s, target)) for w, m, s in combinations(cfg)]


def estimate_seconds_left(plans: list) -> tuple[float, int]:
    """``(seconds, n_unknown)``: the wall time the trials left will take, at the seconds per
    trial that the recorded sessions of the same workload and model took in this work directory
    (any seed; else those of the same workload, any model), and how many combinations with
    trials left had neither to go by."""
    from costlab.search.session import recorded_seconds_per_trial

    rates: dict = {}  # a directory -> seconds per trial of the sessions under it, read once

    def rate_under(directory: Path, pattern: str) -> float | None:
        if directory not in rates:
            rates[directory] = recorded_seconds_per_trial(directory.glob(pattern))
        return rates[directory]

    seconds, unknown = 0.0, 0
    for *_, plan in plans:
        if plan.trials_left:
            model_dir = plan.directory.parent  # <work_dir>/<workload>/<model>/seed<k>
            rate = rate_under(model_dir, "seed*") or rate_under(model_dir.parent, "*/seed*")
            if rate is None:
                unknown += 1
            else:
                seconds += plan.trials_left * rate
    return seconds, unknown


def check_some_session_complete(cfg: ExperimentConfig, plans: list) -> None:
    """``--recorded-only`` logs the complete sessions: with none, a work_dir mistyped or relative
    to another directory would look like success."""
    if not any(plan.action == "complete" for *_, plan in plans):
        raise CostlabError(f"--recorded-only: no complete session to log under work_dir {cfg.work_path} (of "
                           f"{len(plans)} combination(s)); nothing was logged. work_dir is relative to where "
                           f"costlab runs")


def refuse_conflicts(plans: list) -> None:
    """Stop before anything is tuned when a session's records were tuned with another setup
    and the budget asks for more of them (they must not mix), or were tuned for another
    workload, cost model or kind of target (they are not this combination's results)."""
    refused = [plan for *_, plan in plans if plan.action == "refused"]
    if refused:
        why = ("the budget asks for more" if not any(plan.other_combination for plan in refused) else
               "they are not this config's workload, cost model or kind of target, or the budget asks for more")
        raise CostlabError(
            f"{len(refused)} session(s) hold measured records that were tuned with another setup, and "
            f"{why}; nothing was tuned. Use another name or work_dir, or move those directories "
            f"away to start over:\n" + "\n".join(f"  {plan.directory}: {'; '.join(plan.differences)}"
                                                for plan in refused))


def _child_params(cfg: ExperimentConfig, workload, model, seed) -> dict[str, str]:
    from costlab.search.session import session_dir, tuned_tvm_scores
    from costlab.workloads import workload_key, workload_params

    params = {
        "workload": workload.name,
        "workload_key": workload_key(workload.name, workload.params),
        "model": model.name,
        "model_label": model.display_name,
        "seed": str(seed),
        "trials": str(cfg.search.trials),
        "trials_per_iter": str(cfg.search.trials_per_iter),
        "target": str(cfg.target),
        "runner": cfg.runner.kind,
    }
    params.update({f"workload.{k}": str(v) for k, v in workload_params(workload.name, workload.params).items()})
    params.update(flatten(model.model_dump(exclude={"name", "label", "tvm_scores"}), "model."))
    tvm_scores = tuned_tvm_scores(session_dir(cfg, workload, model, seed), model)
    if tvm_scores:  # a session tuned before the field existed handed MetaSchedule raw scores
        params["model.tvm_scores"] = tvm_scores
    params.update(flatten(cfg.search.model_dump(), "search."))
    return params


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C; `timeout`, a batch scheduler; a closed terminal


def _exit_on_interrupt(end_runs: Callable[[], None], spare: set[int]):
    """A handler of :data:`STOP_SIGNALS`: Ctrl-C (or a SIGTERM, a SIGHUP) ends ``costlab run``
    at once, with status 128 + the signal's number, and the worker processes the run started
    (not the processes in ``spare``: a notebook's or script's own, started before it).

    TVM's tuning loop catches a KeyboardInterrupt raised inside its Python callbacks and
    carries on, so the default handler would not stop a run. Exiting is safe: every
    measured record is already in the database (the kill -9 tests show it), the lock is
    released with the process, and the same command resumes. ``end_runs`` marks the MLflow
    runs KILLED first, given at most 5 s (a tracking server that hangs must not hold Ctrl-C).
    """
    once = threading.Lock()  # the waiting thread and the main thread's handler may both see one signal

    def handler(signum, frame) -> None:
        if not once.acquire(blocking=False):
            return  # the other is ending the run
        what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        sys.stderr.write(f"\n{what}: every measured record is in the tuning databases; "
                         "run the same command again to resume\n")
        sys.stderr.flush()
        ending = threading.Thread(target=end_runs, daemon=True)
        ending.start()
        ending.join(5.0)
        _kill_workers_and_exit(128 + signum, spare)

    return handler


def _wait_for_interrupt_in_a_thread(on_interrupt: Callable) -> Callable[[], None]:
    """Block :data:`STOP_SIGNALS` in this thread, and so in the threads and worker processes
    started after it (they inherit the mask), and let one thread wait for them and call
    ``on_interrupt``.

    Ctrl-C in a terminal signals the whole process group: a builder or runner worker that
    took it would print a KeyboardInterrupt traceback (in the middle of an import, say)
    before ``on_interrupt`` kills it. A thread started earlier (MLflow's telemetry, say) still
    takes the signals, and Python runs their handler only in the main thread, which may be
    blocked in TVM for as long as a measurement hangs: so the waiting thread also reads the
    signal numbers that Python's C handler writes to its wakeup file, whichever thread took
    the signal. ``on_interrupt`` also stays the handler. Returns the function that undoes this."""
    import select

    stop = threading.Event()
    mask_before = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    wakeup_before = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)

    def wait() -> None:
        while not stop.is_set():
            if select.select([read_fd], [], [], 0.2)[0]:  # taken by a thread that does not block them
                for signum in os.read(read_fd, 64):
                    if signum in STOP_SIGNALS:
                        on_interrupt(signum, None)
            if (got := signal.sigtimedwait(set(STOP_SIGNALS), 0)) is not None:  # blocked in every thread
                on_interrupt(got.si_signo, None)

    waiter = threading.Thread(target=wait, name="costlab-ctrl-c", daemon=True)
    waiter.start()

    def undo() -> None:
        stop.set()
        waiter.join()
        signal.set_wakeup_fd(wakeup_before)
        os.close(read_fd)
        os.close(write_fd)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask_before)

    return undo


def _import_model_libraries(cfg: ExperimentConfig) -> None:
    """Import the learning libraries the config's models train with, once, before the first
    session: imported inside its first model update, they were its cost-model time alone."""
    import importlib

    if any(m.name != "random" for m in cfg.cost_models):
        for library in ("xgboost", "lightgbm", "torch"):
            try:
                importlib.import_module(library)
            except ImportError:  # a plug-in's model needs none of them
                pass


def _child_pids() -> set[int]:
    import psutil

    return {child.pid for child in psutil.Process().children(recursive=True)}


def _kill_workers_and_exit(status: int, spare: set[int]) -> None:
    import psutil

    for child in psutil.Process().children(recursive=True):  # builder and runner workers
        if child.pid in spare:
            continue
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    os._exit(status)


def _untuned_lines(untouched) -> list[str]:
    """What ``--recorded-only`` leaves: each session that holds measured records on a line of its
    own; those never started, one line per model (a union config can leave dozens)."""
    from costlab.workloads import workload_key

    lines, never_started = [], defaultdict(list)
    for workload, model, seed, plan in untouched:
        key = workload_key(workload.name, workload.params)
        if plan.action == "new":
            never_started[model.display_name].append((key, seed))
        else:
            lines.append(f"{key} · {model.display_name} · seed {seed}: {plan.describe()}")
    for label, combos in never_started.items():
        workloads = ", ".join(dict.fromkeys(key for key, _ in combos))
        seeds = ", ".join(str(seed) for seed in sorted({seed for _, seed in combos}))
        lines.append(f"{label}: {len(combos)} never started, among workloads {workloads}; seeds {seeds}")
    return lines


class TrackingServerDown(CostlabError):
    """The MLflow tracking server stopped answering during a run."""


def _stop_if_server_down(cfg: ExperimentConfig, what: str, err: BaseException) -> None:
    """Raise :class:`TrackingServerDown` when ``err`` says the tracking server stopped answering
    while ``what`` was logged."""
    from costlab.tracking import server_stopped_answering

    if not server_stopped_answering(err, cfg.mlflow.tracking_uri):
        return
    lines = [line.strip() for line in str(err).splitlines() if "API request to " in line] or [str(err).strip()]
    raise TrackingServerDown(
        f"MLflow tracking server {redact_uri(cfg.mlflow.tracking_uri)} stopped answering while {what} was logged "
        f"({redact_text(lines[0], cfg.mlflow.tracking_uri)[:300]}); the run stopped there, and every measured "
        f"record is safe in {cfg.work_path}. "
        f"Once the server answers, run the same `costlab run` again: complete sessions are logged without "
        f"tuning them again, an unfinished one resumes, and its runs left RUNNING are ended or continued") from None


def _plot_dir(session: Path) -> Path:
    """Where a session's plot is drawn before it is logged: beside its database, or, where that
    folder takes no writes (a team's read-only copy of committed runs, logged with
    ``--recorded-only``), a new temporary folder."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=session):
            return session
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        return Path(tempfile.mkdtemp(prefix="costlab-plot-"))


class OutOfSpace(CostlabError):
    """A disk filled (or a quota was reached) during a run."""


OUT_OF_SPACE = ("No space left on device", "Disk quota exceeded", "database or disk is full")


def _out_of_space(err: BaseException) -> bool:
    """``err`` says a disk is full (TVM and MLflow pass an OSError on as their own error)."""
    return isinstance(err, OutOfSpace) or (isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)) \
        or any(text in str(err) for text in OUT_OF_SPACE)


def _stop_if_out_of_space(cfg: ExperimentConfig, what: str, err: BaseException) -> None:
    """Raise :class:`OutOfSpace` when ``err`` says a disk is full: every later combination would
    fail the same way (it went on to the next one, and the next)."""
    if isinstance(err, OutOfSpace) or not _out_of_space(err):
        return
    said = str(err)
    line = next((line.strip() for line in said.splitlines() if any(t in line for t in OUT_OF_SPACE)), said.strip())
    raise OutOfSpace(
        f"{what}: out of disk space ({line[:300]}). The run stopped there: every record on disk is kept in "
        f"{cfg.work_path}. Free space there and for the MLflow store ({redact_uri(cfg.mlflow.tracking_uri)}, artifacts under "
        f"mlruns/ beside a SQLite store by default), then run the same `costlab run` again to resume") from None


def check_can_measure(cfg: ExperimentConfig, target, ask_farm: bool = True) -> None:
    """Refuse, before a trial is spent, a setup whose trials would all be recorded as failed
    kernels: a CUDA target this machine's nvcc cannot build, or one where the trials are measured
    without a GPU (the local runner here; an RPC farm's servers only with ``ask_farm``: the dry
    run asks no server)."""
    from costlab.search.runner import check_measurable
    from costlab.targets import check_cuda_buildable

    check_cuda_buildable(cfg.target)
    if ask_farm or cfg.runner.kind == "local":
        check_measurable(cfg.runner, target)


def numpy_times_the_same_machine(cfg: ExperimentConfig, target) -> bool:
    """numpy runs in this process: its time is a reference for kernels measured here, on this
    CPU (a local runner and an LLVM target), not for an RPC server's or a GPU's."""
    return cfg.runner.kind == "local" and target.kind.name == "llvm"


QUIETED_LOGGERS = ("tvm.s_tir.meta_schedule", "mlflow.store.db.utils")  # the levels a run sets


@contextlib.contextmanager
def _callers_state_kept():
    """Process-wide state a run changes, put back when it returns (costlab called from a script
    or notebook): numpy's global RNG (seeded per session: TVM's XGBModel and search draw from
    it), the levels of :data:`QUIETED_LOGGERS`, :data:`URL_PRINTING`, and torch's thread count
    (one for graph models) where torch was imported before the run."""
    import logging

    import numpy as np

    rng = np.random.get_state()
    levels = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    torch_threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
    url_printing = os.environ.get(URL_PRINTING)
    try:
        yield
    finally:
        if url_printing is None:
            os.environ.pop(URL_PRINTING, None)
        else:
            os.environ[URL_PRINTING] = url_printing
        np.random.set_state(rng)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if torch_threads is not None:
            sys.modules["torch"].set_num_threads(torch_threads)


def run_experiment(cfg: ExperimentConfig, console: Console | None = None,
                   recorded_only: bool = False) -> list[CombinationOutcome]:
    """Tune and log every combination of ``cfg``; with ``recorded_only``, log the complete
    sessions found in its work directory (into a fresh MLflow store, say) and tune nothing:
    the other combinations are named and left as they are.

    From Python, as from ``costlab run``: Ctrl-C ends the process (TVM's search carries on
    through a KeyboardInterrupt), after the run's MLflow runs are marked KILLED and its worker
    processes ended; every measured record is kept, and the same call resumes. The state the
    run changes (numpy's global RNG, some loggers' levels, torch's threads) is put back."""
    with _callers_state_kept():
        return _run_experiment(cfg, console, recorded_only)


def _run_experiment(cfg: ExperimentConfig, console: Console | None, recorded_only: bool) -> list[CombinationOutcome]:
    from costlab.search.records import count_records
    from costlab.search.runner import FarmDown
    from costlab.search.session import RecordsNotSaved, run_session, save_numpy_latency, session_dir, workload_flops
    from costlab.workloads.numpy_reference import has_numpy_reference, numpy_latency_s
    from costlab.tracking import (ALL_TRIALS_FAILED_TAG, PRETRAINING_TAG, RECORDED_TRIALS_TAG, SEARCH_EXHAUSTED_TAG,
                                  TUNED_TARGET_TAG, ExperimentTracker, check_store_writable)
    from costlab.report.plots import plot_session_curve
    from costlab.targets import make_target
    from costlab.workloads import build_workload, workload_key

    console = console or Console()
    target = make_target(cfg.target)
    plans = plan_experiment(cfg, target)
    if recorded_only:
        check_some_session_complete(cfg, plans)
        untouched = [(w, m, s, plan) for w, m, s, plan in plans if plan.action != "complete"]
        plans = [entry for entry in plans if entry[3].action == "complete"]
        if untouched:
            console.print(f"--recorded-only: {len(untouched)} combination(s) not complete, left untuned:")
            for line in _untuned_lines(untouched):
                console.print(f"  {line}")
    refuse_conflicts(plans)
    from costlab.filenames import check_output_dir

    check_output_dir(cfg.work_path, "field work_dir")
    if any(plan.trials_left for *_, plan in plans):
        check_can_measure(cfg, target)
    check_store_writable(cfg.mlflow.tracking_uri, cfg.experiment_name)
    cfg.work_path.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(cfg.work_path / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise CostlabError(
            f"another costlab run is working in work_dir {cfg.work_path} (its lock {cfg.work_path / LOCK_FILE} is "
            f"held; it may be another config's); wait for it or use another work_dir"
        ) from None
    try:
        tracker = ExperimentTracker(cfg.mlflow.tracking_uri, cfg.experiment_name)
        tracker.start_parent(cfg.name, flatten(loggable_config(cfg)), config_to_yaml(cfg))
    except Exception as err:
        lock.release()
        _stop_if_out_of_space(cfg, "starting the MLflow runs", err)
        raise
    combos = [(w, m, s) for w, m, s, _ in plans]
    outcomes: list[CombinationOutcome] = []
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), console=console,
        transient=False,
    )
    from costlab.search.builder import PersistentBuilder

    builder = PersistentBuilder(max_workers=cfg.builder.workers, timeout_s=cfg.builder.timeout_s)
    in_main_thread = threading.current_thread() is threading.main_thread()

    def end_runs_killed() -> None:
        # (the kernels of the batch in flight stay in /tmp: removed here, while the main thread's
        # runner may still load them, they left the child run FAILED instead of KILLED in a CI run)
        try:
            tracker.end_running("KILLED")
        except Exception:  # noqa: BLE001  (best effort: the records are safe either way)
            pass

    on_interrupt = _exit_on_interrupt(end_runs_killed, spare=_child_pids())
    previous_handlers = {sig: signal.signal(sig, on_interrupt) for sig in STOP_SIGNALS} if in_main_thread else {}
    stop_waiting = _wait_for_interrupt_in_a_thread(on_interrupt) if in_main_thread else None
    numpy_s: dict[str, float] = {}  # the numpy (OpenBLAS) reference latency per workload key
    try:
        if any(plan.trials_left for *_, plan in plans):  # once per run, outside every session's times
            builder.start()
            _import_model_libraries(cfg)
        with progress:
            for n, (workload, model, seed) in enumerate(combos, start=1):
                key = workload_key(workload.name, workload.params)
                desc = f"[{n}/{len(combos)}] {workload.name} · {model.display_name} · seed {seed}"
                task = progress.add_task(desc, total=cfg.search.trials, best="-")
                n_recorded = count_records(session_dir(cfg, workload, model, seed))
                child = tracker.child(key, model.display_name, seed, _child_params(cfg, workload, model, seed),
                                      n_recorded=n_recorded, work_dir=str(cfg.work_path))
                if child.replaced:
                    console.print(f"{desc}: a new MLflow child run; the one before is tagged stale-child "
                                  f"({child.replaced})", highlight=False)
                flops = workload_flops(build_workload(workload.name, workload.params))

                failed_so_far = [0]  # the session's failed trials, resumed ones included

                def on_trials(trials, cost_model_s=None, task=task, child=child, flops=flops, desc=desc, say=True,
                              failed_so_far=failed_so_far):
                    """Progress and MLflow step metrics for newly measured (or resumed) trials;
                    ``cost_model_s``: the model's seconds so far, after a measured batch."""
                    if not trials:
                        return
                    failed_so_far[0] += sum(t.failed for t in trials)
                    best = trials[-1].best_latency_s
                    progress.update(task, completed=trials[-1].index,
                                    best=f"{best * 1e6:.1f} µs" if math.isfinite(best) else "-")
                    tracker.log_trials(child, trials, flops, cost_model_s)
                    if say and not console.is_terminal:  # a log file gets one line per batch
                        best_text = f"{best * 1e6:.1f} µs" if math.isfinite(best) else "-"
                        at = trials[-1].elapsed_s  # nan: a resumed trial whose time was not saved
                        failed = f" ({failed_so_far[0]} failed)" if failed_so_far[0] else ""
                        console.print(f"{desc}: {trials[-1].index}/{cfg.search.trials} trials{failed}, "
                                      f"best {best_text}" + (f", {at:.0f} s" if math.isfinite(at) else ""))

                if child.finished and n_recorded >= cfg.search.trials:  # to be skipped: said once, after it
                    on_resume = functools.partial(on_trials, say=False)
                else:
                    on_resume = on_trials
                try:
                    result = run_session(cfg, workload, model, seed, on_batch=on_trials, on_resume=on_resume,
                                         builder=builder, target=target)
                except KeyboardInterrupt:
                    tracker.fail_child(child)
                    raise
                except (FarmDown, RecordsNotSaved):  # not this combination's failure, and no other's would
                    raise  # do better: the run stops, its runs end KILLED (as after Ctrl-C), the same command resumes
                except CostlabError:
                    tracker.fail_child(child)
                    raise
                except Exception as err:  # one broken combination must not stop the others
                    _stop_if_server_down(cfg, desc, err)
                    _stop_if_out_of_space(cfg, desc, err)
                    console.print(f"[red]{desc} failed: {type(err).__name__}: "
                                  f"{redact_text(str(err), cfg.mlflow.tracking_uri)}")
                    tracker.fail_child(child)
                    outcomes.append(CombinationOutcome(workload.name, model.display_name, seed,
                                                       math.inf, 0, 0.0, "failed"))
                    continue
                try:  # logging the result: a failure here must not leave the child RUNNING
                    tracker.log_trials(child, result.trials, result.flops)
                    tuned_before = (result.resumed_from >= cfg.search.trials
                                    or result.resumed_from == result.exhausted_at)  # nothing measured now
                    status = "skipped" if tuned_before and child.finished else "finished"
                    if status == "skipped":
                        console.print(f"{desc}: complete ({len(result.trials)} trials) and logged before: skipped"
                                      + (f" (tuned with another setup: {'; '.join(result.setup_differences)})"
                                         if result.setup_differences else ""), highlight=False)
                    all_failed = bool(result.trials) and all(t.failed for t in result.trials)
                    if status == "finished":
                        out_dir = session_dir(cfg, workload, model, seed)
                        cut = result.recorded_trials > len(result.trials)  # at a lowered budget
                        plot_name = f"convergence-{len(result.trials)}-trials.png" if cut else "convergence.png"
                        plot = plot_session_curve(result.trials, f"{key} · {model.display_name} · seed {seed}",
                                                  _plot_dir(out_dir) / plot_name)
                        tracker.log_online_accuracy(child, result.online_accuracy)
                        final = _final_metrics(result, cut)
                        numpy_here = result.numpy_latency_s  # timed in the run that tuned this session
                        if result.setup_differences:
                            console.print(f"{desc}: complete, tuned with another setup "
                                          f"({'; '.join(result.setup_differences)}); logged as recorded"
                                          + ("" if numpy_here else ", without a numpy reference (none was saved)"))
                        elif (numpy_here is None and numpy_times_the_same_machine(cfg, target)
                              and has_numpy_reference(workload.name, workload.params)
                              and math.isfinite(result.best_latency_s)):
                            if key not in numpy_s:  # once per workload and process, right after tuning it
                                numpy_s[key] = numpy_latency_s(workload.name, workload.params)
                            numpy_here = numpy_s[key]
                            save_numpy_latency(out_dir, numpy_here)
                        if numpy_here and math.isfinite(result.best_latency_s):
                            final["numpy_latency_us"] = numpy_here * 1e6
                            final["numpy_gflops"] = result.flops / numpy_here / 1e9
                            final["best_vs_numpy"] = numpy_here / result.best_latency_s  # >1: faster than numpy
                        artifacts = [plot, out_dir / "database_workload.json",
                                     out_dir / "database_tuning_record.json", out_dir / "costlab.json",
                                     result.model_file]
                        tags = {TUNED_TARGET_TAG: result.tuned_target}
                        if cut:
                            tags[RECORDED_TRIALS_TAG] = str(result.recorded_trials)
                            console.print(f"{desc}: its database holds {result.recorded_trials} trials; the first "
                                          f"{len(result.trials)}, the budget, are logged (the artifacts hold them all)"
                                          + ("" if "wall_s" in result.seconds else "; its trials' times were not "
                                             "saved, so no wall time is logged"))
                        if result.exhausted_at is not None:  # complete below the budget
                            tags[SEARCH_EXHAUSTED_TAG] = str(result.exhausted_at)
                            console.print(f"{desc}: MetaSchedule's search ran out of unmeasured candidates after "
                                          f"{result.exhausted_at} of {cfg.search.trials} trials (its design space "
                                          "is that small); the session is complete, and compare holds its best "
                                          "latency to the budget")
                        if result.pretraining:
                            tags[PRETRAINING_TAG] = result.pretraining
                        if all_failed:  # logged as measured (compare counts it as never within 5%)
                            tags[ALL_TRIALS_FAILED_TAG] = "true"
                        tracker.finish_child(child, final, artifacts, tags=tags)
                        if plot.parent != out_dir:  # drawn in a temporary folder, now logged
                            shutil.rmtree(plot.parent, ignore_errors=True)
                    failed_trials = sum(t.failed for t in result.trials) if status == "finished" else 0
                    if all_failed:  # not an ok combination, now or when resumed
                        status = "failed"
                        console.print(f"[red]{desc}: all {len(result.trials)} trials failed; "
                                      f"{_first_error(result.trials, session_dir(cfg, workload, model, seed))}")
                    elif failed_trials:
                        console.print(f"[yellow]{desc}: {_failed_trials_said(result.trials)}", highlight=False)
                except Exception as err:  # noqa: BLE001  (one broken combination must not stop the others)
                    _stop_if_server_down(cfg, desc, err)
                    _stop_if_out_of_space(cfg, f"{desc}: logging its result", err)
                    console.print(f"[red]{desc}: logging its result failed: {type(err).__name__}: "
                                  f"{redact_text(str(err), cfg.mlflow.tracking_uri)}")
                    if not child.finished:
                        tracker.fail_child(child)
                    outcomes.append(CombinationOutcome(workload.name, model.display_name, seed,
                                                       math.inf, len(result.trials), 0.0, "failed"))
                    continue
                done = len(result.trials)  # a search that ran out is complete there: its bar ends full
                progress.update(task, completed=done, total=done if result.exhausted_at is not None else None)
                outcomes.append(CombinationOutcome(workload.name, model.display_name, seed,
                                                   result.best_latency_s * 1e6, len(result.trials),
                                                   result.seconds.get("wall_s", 0.0), status, failed_trials))
    except TrackingServerDown:  # nothing to end there: each call would wait through MLflow's retries again
        raise
    except BaseException as err:  # the parent and this process's running child (an error outside a session, say)
        _stop_if_server_down(cfg, "the experiment", err)
        try:
            tracker.end_running("KILLED")
        except Exception:  # a full disk may refuse that too: the error that stopped the run is the one to say
            if not _out_of_space(err):
                raise
        _stop_if_out_of_space(cfg, "the run", err)
        raise
    finally:
        builder.shutdown()
        lock.release()
        if in_main_thread:
            stop_waiting()
            for sig, previous in previous_handlers.items():
                signal.signal(sig, previous)
    tracker.finish_parent("FAILED" if any(o.status == "failed" for o in outcomes) else "FINISHED")
    return outcomes


def _final_metrics(result, cut: bool) -> dict:
    """A session's final MLflow metrics: its best kernel, trial counts and phase seconds. A session
    cut at a lowered budget has phase times that span every trial it holds: they are left out."""
    final = {
        "final_best_latency_us": result.best_latency_s * 1e6,
        "final_best_gflops": result.flops / result.best_latency_s / 1e9 if math.isfinite(result.best_latency_s) else None,
        "n_trials": len(result.trials),
        "n_failed_trials": result.n_failed,
        **result.seconds,
    }
    if not cut and "wall_s" in result.seconds:  # none saved (a database copied in without its state): unknown
        seconds = result.seconds
        wall = seconds["wall_s"]
        final["search_other_s"] = wall - sum(seconds.get(k, 0.0) for k in (
            "build_s", "run_s", "cost_model_update_s", "cost_model_predict_s", "resume_warm_start_s", "pretrain_s"))
        final["cost_model_share"] = (seconds.get("cost_model_update_s", 0.0)
                                     + seconds.get("cost_model_predict_s", 0.0)) / wall if wall else None
    return final


def _failed_trials_said(trials) -> str:
    """Some of a session's trials failed, in one line: how many, how, and the first error's last line."""
    failed = [t for t in trials if t.failed]
    not_built = sum(t.build_failed for t in failed)
    how = ", ".join(part for part in (f"{not_built} did not build" if not_built else "",
                                      f"{len(failed) - not_built} did not run" if len(failed) > not_built else "")
                    if part)
    said = f"{len(failed)} of {len(trials)} trials failed ({how}; each is logged with trial_failed 1)"
    error = next((t.error for t in failed if t.error), None)  # None: resumed trials (no message kept)
    if error and error.strip():
        said += f"; the first error ends: {error.strip().splitlines()[-1][:300]}"
    return said


def _first_error(trials, directory: Path, max_lines: int = 12) -> str:
    """The first failed trial's error, its last lines (TVM's tracebacks are long)."""
    error = next((t.error for t in trials if t.error), None)
    if error is None:  # resumed trials: the database keeps no error message
        return (f"the database keeps no error message. The session is complete as recorded: to tune it again "
                f"(and see the error), move {directory} away and run again")
    lines = error.strip().splitlines()
    return "the first error:\n" + "\n".join(lines[-max_lines:])
