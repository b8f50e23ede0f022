"""One tuning session: one workload, one cost model, one seed, resumable.

The MetaSchedule JSON database in the session directory is the record of truth.
A session that finds records there continues: it counts them against the budget,
continues the convergence curve, and trains the cost model on them before the
search starts again. Nothing measured is ever lost.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from costlab.config import CostModelSpec, ExperimentConfig, WorkloadSpec
from costlab.data.database import SIDECAR_FILE, read_json_object, read_sidecar
from costlab.errors import CostlabError
from costlab.filenames import safe_file_name
from costlab.search import records
from costlab.search.adapter import CountTrials
from costlab.search.recorder import ConvergenceRecorder, Curve, SaveBeforeTraining, Trial
from costlab.search.skip_measured import SkipMeasured, measured_trace_keys
from costlab.search.timing import PhaseTimer

STATE_FILE = "costlab_session.json"
SETUP_FILE = SIDECAR_FILE  # "costlab.json": what the records were tuned with: workload, cost model, seed, target, measurement
REPEATS_FILE = "run_secs_repeats.jsonl"  # measure.reduce: min: every timing of each trial, its fastest recorded
# in the session state: the trials measured when MetaSchedule's search ended with no unmeasured candidate left
EXHAUSTED_KEY = "search_exhausted_at"


class RecordsNotSaved(CostlabError):
    """A measured batch did not reach the session's files: MetaSchedule's JSON database ignores
    a failed write (a full disk: it returned for each of 16 records and wrote none), and the
    session's own state file could not be written. The run stops; the same command resumes."""


class NoCandidateError(RuntimeError):
    """MetaSchedule's search found no schedule of the workload that its postprocessors accept.

    A failure of one combination (the others go on), not of the config: the same workload
    can work on another target or in another form.
    """


@dataclass
class SessionResult:
    """What a session measured. Latencies in seconds, times in wall seconds."""

    trials: list[Trial]
    seconds: dict[str, float]  # build_s, run_s, cost_model_update_s, cost_model_predict_s, resume_warm_start_s,
    #                            pretrain_s (pretrain_on only), wall_s
    flops: float
    model_file: Path | None = None
    online_accuracy: list[tuple[int, float]] = field(default_factory=list)
    resumed_from: int = 0
    tuned_target: str = ""  # the exact target its records were measured with (from its setup file)
    setup_differences: list[str] = field(default_factory=list)  # a complete session tuned with another setup
    numpy_latency_s: float | None = None  # numpy's time for the workload, saved when the session was tuned
    pretraining: str = ""  # pretrain_on: the rows the warm start was trained on, in words
    recorded_trials: int = 0  # the records its database holds: more than ``trials`` when the budget was lowered
    exhausted_at: int | None = None  # the search ran out of unmeasured candidates after this many trials

    @property
    def best_latency_s(self) -> float:
        return self.trials[-1].best_latency_s if self.trials else math.inf

    @property
    def n_failed(self) -> int:
        return sum(t.failed for t in self.trials)


def session_dir(cfg: ExperimentConfig, workload: WorkloadSpec, model: CostModelSpec, seed: int) -> Path:
    from costlab.workloads import workload_key

    key = workload_key(workload.name, workload.params)
    return cfg.work_path / safe_file_name(key) / model.display_name / f"seed{seed}"


def _write_json_atomically(path: Path, value: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, default=str))
    os.replace(tmp, path)


def _load_state(path: Path) -> dict:
    state = read_json_object(path / STATE_FILE, "the session's state (times, pretraining, where its search ran out)") or {}
    _check_state(path / STATE_FILE, state)
    return state


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# what each field of the state file holds, as costlab writes it: (check, what it must be)
_STATE_FIELDS = {
    "seconds": (lambda v: isinstance(v, dict) and all(_is_number(x) and x >= 0 for x in v.values()),
                "a mapping of phase names to seconds"),
    "trials": (_is_count, "a number of trials"),
    "rejected_lines": (_is_count, "a number of lines"),
    "online_accuracy": (lambda v: isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and _is_count(p[0]) and _is_number(p[1]) for p in v),
        "a list of [trials, accuracy] pairs"),
    "trial_elapsed_s": (lambda v: isinstance(v, list) and all(x is None or _is_number(x) for x in v),
                        "a list of seconds (null: unknown)"),
    "build_failed_trials": (lambda v: isinstance(v, list) and all(_is_count(x) for x in v), "a list of trials"),
    "pretraining": (lambda v: isinstance(v, str), "a text"),
    "model_file": (lambda v: v is None or isinstance(v, str), "a path or null"),
    "numpy_latency_s": (lambda v: _is_number(v) and v > 0, "a positive number of seconds"),
}


def _check_state(file: Path, state: dict) -> None:
    """A field of the session's state file that is not what costlab writes (edited by hand, or
    damaged) stops the session naming the file, the field and the value, not a TypeError later."""
    for name, (valid, what) in _STATE_FIELDS.items():
        if name in state and not valid(state[name]):
            shown = repr(state[name])
            raise CostlabError(f"{file}: field {name}: not {what} (value: {shown[:80]}"
                               f"{'...' if len(shown) > 80 else ''}); fix or remove the field")


def _save_state(path: Path, state: dict) -> None:
    _write_json_atomically(path / STATE_FILE, state)


def _saved_setup(out: Path) -> dict:
    return read_sidecar(out) or {}


def _setup_differences(saved: dict, setup: dict) -> list[str]:
    """What differs between the setup a session's records were tuned with and this one.

    Fields the saved setup lacks (written by an older costlab) are not compared, but for
    ``cost_model.tvm_scores``: a costlab model's session saved before that field existed
    handed MetaSchedule its raw scores, and ``measure.reduce``: one saved before it recorded
    the mean of its timings. A pretrained model is compared by its directory name, so a
    moved checkout still resumes.
    """
    saved, setup = ({**side, "measure": {"reduce": "mean", **side["measure"]}} if "measure" in side else side
                    for side in (saved, setup))
    pairs = [(key, saved[key], setup[key]) for key in ("workload_hash", "measure") if key in saved and key in setup]
    if "target" in saved and "target" in setup:
        pairs += _target_differences(saved["target"], setup["target"])
    for section in ("cost_model", "search", "runner"):
        saved_section = saved.get(section) or {}
        if section == "cost_model" and saved_section:
            if saved_section.get("name") == "tvm-xgb":  # TVM's own model: its scores are never mapped
                saved_section = {k: v for k, v in saved_section.items() if k != "tvm_scores"}
            else:
                saved_section = {"tvm_scores": "raw", **saved_section}
        for name, value in (setup.get(section) or {}).items():
            if name in saved_section and name != "label":
                old = saved_section[name]
                if name in ("pretrained", "pretrain_on"):
                    old, value = old and Path(old).name, value and Path(value).name
                pairs.append((f"{section}.{name}", old, value))
    kinds = [_target_kind(side["target"]) if "target" in side else None for side in (saved, setup)]
    if None not in kinds:  # CPU records are no result of a CUDA config, nor the reverse
        pairs.insert(0, ("target.kind", *kinds))
    return [f"{name}: {old!r} then, {new!r} now" for name, old, new in pairs if old != new]


def _target_differences(old: str, new: str) -> list[tuple[str, object, object]]:
    """The attributes two exported targets differ in (``target.host.mcpu``, say), the kind left to
    ``target.kind``; the whole strings where one cannot be read (each is some 700 characters)."""
    import ast

    try:
        before, after = ast.literal_eval(old), ast.literal_eval(new)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        before = after = None
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [("target", old, new)]

    def flat(target: dict, prefix: str = "target.") -> dict:
        out = {}
        for key, value in target.items():
            out.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
        return out

    before, after = flat(before), flat(after)
    if before.get("target.kind") != after.get("target.kind"):
        return []  # another kind of target: target.kind says all there is to say
    differ = [(name, before.get(name, "(none)"), after.get(name, "(none)")) for name in dict.fromkeys([*before, *after])
              if name != "target.kind" and before.get(name, "(none)") != after.get(name, "(none)")]
    return differ if differ or old == new else [("target", old, new)]


def _target_kind(exported: str) -> str | None:
    """The kind ("llvm", "cuda", ...) of a target as a setup file keeps it (``str(target.export())``,
    whose first key is the kind)."""
    match = re.match(r'\{"kind": "([^"]+)"', exported)
    return match.group(1) if match else None


def session_setup(cfg: ExperimentConfig, workload: WorkloadSpec, model: CostModelSpec, seed: int,
                  target=None, mod=None) -> dict:
    """What a session's records are tuned with (its ``costlab.json``): workload (with its TIR's
    structural hash), cost model, seed, the exact target, the measurement, the search's
    settings (all but the budget, with the design space the workload gets) and the runner
    (local, or the RPC device key)."""
    from costlab.targets import make_target
    from costlab.workloads import build_workload, structural_hash, workload_key, workload_params

    target = target if target is not None else make_target(cfg.target)
    mod = mod if mod is not None else build_workload(workload.name, workload.params)
    return {
        "workload_name": workload.name,
        "workload_params": workload_params(workload.name, workload.params),
        "workload_key": workload_key(workload.name, workload.params),
        # the TIR itself: a user's workload file whose code changed keeps its name and key
        "workload_hash": structural_hash(mod),
        "cost_model": model.model_dump(mode="json"),
        "seed": seed,
        "target": str(target.export()),
        "measure": cfg.measure.model_dump(mode="json"),
        # the budget may grow, and num_tuning_cores may change between resumes: it changes how fast the
        # search runs and, above 1, which candidates it draws, but any of them continues the records
        "search": {**cfg.search.model_dump(mode="json", exclude={"trials", "num_tuning_cores"}),
                   "space": workload.space or cfg.search.space},
        "runner": {"kind": cfg.runner.kind, "key": cfg.runner.key},
    }


def tuned_tvm_scores(out: Path, model: CostModelSpec) -> str | None:
    """How the session's costlab model handed MetaSchedule its scores (``tvm_scores``): as its
    saved setup says; "raw" when that setup predates the field; the config's for a new session.
    None for ``tvm-xgb``, TVM's own model, whose scores are never mapped."""
    if model.name == "tvm-xgb":
        return None
    saved = _saved_setup(out).get("cost_model")
    return saved.get("tvm_scores", "raw") if saved else model.tvm_scores


@dataclass
class SessionPlan:
    """What ``costlab run`` will do with one session, read from its directory without writing."""

    directory: Path
    n_recorded: int  # readable measured records there
    trials: int  # the config's budget
    differences: list[str]  # how the setup they were tuned with differs from this one
    exhausted_at: int | None = None  # its search ran out of unmeasured candidates here (:func:`_exhausted_at`)

    @property
    def exhausted(self) -> bool:
        """The search ended below the budget with nothing new to measure: tuning it again finds nothing."""
        return self.exhausted_at is not None

    @property
    def trials_left(self) -> int:
        return 0 if self.action in ("refused", "complete") else max(0, self.trials - self.n_recorded)

    @property
    def action(self) -> str:
        """"new", "resume", "complete", or "refused": records of another setup cannot be continued,
        and records of another workload (TIR), cost model or kind of target (CPU records under a
        CUDA config) are not this combination's results even when complete (another machine's
        complete records of the same kind are: the target is logged with them)."""
        if self.n_recorded == 0:
            return "new"
        if self.n_recorded >= self.trials or self.exhausted:
            return "refused" if self.other_combination else "complete"
        return "refused" if self.differences else "resume"

    @property
    def other_combination(self) -> bool:
        """The records were tuned for another workload's TIR, with another cost model, or for
        another kind of target."""
        return any(d.startswith(("workload_hash:", "cost_model.", "target.kind:")) for d in self.differences)

    def describe(self) -> str:
        complete = (f"complete ({self.n_recorded}/{self.trials} trials: MetaSchedule's search ran out of "
                    "unmeasured candidates)" if self.exhausted
                    else f"complete ({self.n_recorded}/{self.trials} trials)" if self.n_recorded <= self.trials
                    else f"complete (holds {self.n_recorded} trials; the first {self.trials}, the budget, are logged)")
        said = {"new": f"new: {self.trials} trials to measure",
                "resume": f"resumes at {self.n_recorded}/{self.trials} trials",
                "complete": complete,
                "refused": f"refused: its {self.n_recorded} measured records were tuned with another setup"}[self.action]
        if self.differences:
            said += f" ({'; '.join(self.differences)})"
        return said


def recorded_seconds_per_trial(directories) -> float | None:
    """Wall seconds per measured trial over the given session directories, from the wall time
    each saved beside its records (None when none saved any)."""
    seconds = trials = 0.0
    for directory in directories:
        wall_s = _load_state(directory).get("seconds", {}).get("wall_s")
        n = records.count_records(directory) if wall_s else 0
        if n:
            seconds, trials = seconds + wall_s, trials + n
    return seconds / trials if trials else None


def plan_session(cfg: ExperimentConfig, workload: WorkloadSpec, model: CostModelSpec, seed: int,
                 target=None) -> SessionPlan:
    """The session's :class:`SessionPlan`; reads its records and setup file, changes nothing."""
    out = session_dir(cfg, workload, model, seed)
    n = records.count_records(out)
    differences = _setup_differences(_saved_setup(out), session_setup(cfg, workload, model, seed, target)) if n else []
    exhausted_at = _exhausted_at(out, _load_state(out), n, cfg.search.trials)
    return SessionPlan(out, n, cfg.search.trials, differences, exhausted_at)


def _exhausted_at(out: Path, state: dict, n_recorded: int, budget: int) -> int | None:
    """Where the session's search ran out of unmeasured candidates, if its state (read from
    ``out``) says so at the records it holds and below the budget (a budget lowered to or under
    it makes it plainly complete)."""
    at = state.get(EXHAUSTED_KEY)
    if at is not None and (isinstance(at, bool) or not isinstance(at, int)):
        raise CostlabError(f"{out / STATE_FILE}: field {EXHAUSTED_KEY}: not a number of trials (value: {at!r}); "
                           "fix or remove the field")
    return at if at is not None and 0 < at == n_recorded < budget else None


def save_numpy_latency(out: Path, seconds: float) -> None:
    """Keep numpy's time for the workload, timed on the tuning machine, with the session."""
    state = _load_state(out)
    state["numpy_latency_s"] = seconds
    _save_state(out, state)


def _quiet_tvm_console() -> None:
    """MetaSchedule logs every iteration to stdout; costlab shows its own progress.

    TVM derives its console handler's level from the ``tvm.s_tir.meta_schedule``
    logger's level at each ``tune_tir`` call and then sets that logger to DEBUG, so
    the level is reset before every session. The full log stays in ``logs/``.
    """
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)


def workload_flops(mod) -> float:
    from tvm.s_tir.analysis import estimate_tir_flops

    return float(estimate_tir_flops(mod))


def space_generator(space: str):
    """MetaSchedule's space generator for a config's ``search.space`` (or a workload's ``space``)."""
    from tvm.s_tir import meta_schedule as ms

    if space == "cuda-tensorcore":  # MultiLevelTilingTensorCore and its postprocs
        return ms.space_generator.PostOrderApply(
            sch_rules="cuda-tensorcore", postprocs="cuda-tensorcore", mutator_probs="cuda-tensorcore")
    return ms.space_generator.PostOrderApply()


def _warm_start_from_database(database, out: Path, mod, target, cost_model, build_failed=()) -> None:
    """Train the cost model on the records of an interrupted session before resuming, in the
    order measured, as the uninterrupted session trained on them: without the ``build_failed``
    trials (1-based), which MetaSchedule never hands to the cost model (the database records
    them as any failure)."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    skip = set(build_failed)
    workload = database.commit_workload(mod)
    recs = [ms.database.TuningRecord.from_json(record[1], workload)
            for i, record in enumerate(records.records_in_commit_order(out), start=1) if i not in skip]
    if not recs:
        return
    context = ms.TuneContext(mod=mod, target=target, num_threads=1)
    candidates = [r.as_measure_candidate() for r in recs]
    results = [RunnerResult(r.run_secs, None) for r in recs]
    cost_model.update(context, candidates, results)


def _saved_model_file(out: Path, state: dict) -> Path | None:
    """The trained model a complete session saved, in its own directory: ``out`` may have been
    moved or copied since (sessions saved before 2026-12-07 stored the path they had then)."""
    saved = state.get("model_file")
    if not saved:
        return None
    path = out / Path(saved).name
    return path if path.exists() else None


def run_session(cfg: ExperimentConfig, workload: WorkloadSpec, model: CostModelSpec, seed: int,
                on_batch: Callable[[list[Trial], float], None] | None = None,
                on_resume: Callable[[list[Trial]], None] | None = None,
                builder=None, target=None) -> SessionResult:
    """Tune ``workload`` with ``model`` and ``seed`` up to ``cfg.search.trials`` measured trials.

    ``builder``: a :class:`PersistentBuilder` shared by the sessions of an experiment, so
    its worker processes start once; by default the session starts (and ends) its own.
    ``target``: ``cfg.target`` as a ``tvm.target.Target``, if the caller already built it.
    """
    from tvm.s_tir import meta_schedule as ms

    from costlab._tvm import import_tensor_intrinsics, unnamed_log_handlers_detached
    from costlab.data.workload_info import describe_workload
    from costlab.search.builder import PersistentBuilder
    from costlab.search.factory import make_search_cost_model
    from costlab.search.runner import FarmDown, farm_stopped, make_runner
    from costlab.search.timing import TimedBuilder, TimedRunner
    from costlab.targets import make_target
    from costlab.workloads import build_workload, workload_key

    out = session_dir(cfg, workload, model, seed)
    out.mkdir(parents=True, exist_ok=True)
    rejected = records.repair_record_file(out)
    mod = build_workload(workload.name, workload.params)
    rejected += records.repair_workload_file(out, mod)
    target = target if target is not None else make_target(cfg.target)
    key = workload_key(workload.name, workload.params)
    setup = session_setup(cfg, workload, model, seed, target, mod)
    previous = records.latencies_in_commit_order(out)
    state = _load_state(out)
    exhausted_at = _exhausted_at(out, state, len(previous), cfg.search.trials)
    remaining = 0 if exhausted_at else cfg.search.trials - len(previous)  # ran out: nothing new to measure
    saved_setup = _saved_setup(out) if previous else {}
    differ = _setup_differences(saved_setup, setup)
    if differ and remaining > 0:  # new measurements must not mix with records of another setup
        raise CostlabError(
            f"{out}: its {len(previous)} measured records were tuned with another setup "
            f"({'; '.join(differ)}); use another name or work_dir, or move that directory away to start over")
    if not saved_setup or remaining > 0:  # a complete session keeps the setup it was tuned with
        _write_json_atomically(out / SETUP_FILE, setup)
        saved_setup = setup

    timer = PhaseTimer()
    timer.seconds.update(state.get("seconds", {}))
    # sessions saved before costlab kept each trial's time: those times are unknown
    trial_elapsed_s = state.get("trial_elapsed_s", [None] * len(previous))
    curve = Curve(previous, previous_elapsed_s=state.get("seconds", {}).get("wall_s", 0.0),
                  previous_trial_elapsed_s=trial_elapsed_s, previous_build_failed=state.get("build_failed_trials", []))
    if on_resume is not None:
        with curve.untimed():
            on_resume(curve.trials[:cfg.search.trials])
    flops = workload_flops(mod)

    def result(model_file=None, online=(), pretraining=state.get("pretraining", "")) -> SessionResult:
        """The session up to its budget: a database that holds more (tuned with a larger budget) is
        cut there, its wall time the time of the budget's last trial (when saved), and its phase
        times (totals over every trial) left out."""
        seconds = dict(timer.seconds)  # wall_s: as saved last (none saved: unknown), so MLflow and the state agree
        trials = curve.trials[:cfg.search.trials]
        if len(curve.trials) > len(trials):
            at = trials[-1].elapsed_s if trials else math.nan
            seconds = {"wall_s": at} if math.isfinite(at) else {}
            online = [(n, acc) for n, acc in online if n <= cfg.search.trials]
        return SessionResult(trials, seconds, flops, model_file, list(online), len(previous),
                             str(saved_setup.get("target", setup["target"])), differ,
                             state.get("numpy_latency_s"), pretraining, len(curve.trials), exhausted_at)

    saved_accuracy = [tuple(point) for point in state.get("online_accuracy", [])]
    if remaining <= 0:
        return result(_saved_model_file(out, state), saved_accuracy)

    # before TuneContext imports them slowly; only tuning needs them (a complete session returned above)
    import_tensor_intrinsics(cuda=target.kind.name == "cuda")
    np.random.seed(seed)  # TVM's XGBModel and its search draw from numpy's global RNG
    shash = setup["workload_hash"]
    family = describe_workload(shash, mod, {"workload_name": workload.name}).family if model.pretrain_family else None
    search_model = make_search_cost_model(model, key, timer, seed, cfg.search.tuning_cores,
                                          workload_hash=shash, workload_family=family)
    database = ms.database.JSONDatabase(work_dir=str(out), module_equality="structural")
    adapter = search_model.adapter
    if adapter is not None:  # the online accuracy measured before an interruption, continued
        adapter.online_accuracy = list(saved_accuracy)
    if previous:  # retraining on what an interrupted session measured: a cost of the interruption,
        with timer.phase("resume_warm_start_s"):  # kept apart from the search's own model time
            if adapter is not None:
                adapter.record_accuracy = False  # those points were measured (and saved) as they came
            _warm_start_from_database(database, out, mod, target, search_model.ms_model, curve.build_failed_trials())
            if adapter is not None:
                adapter.record_accuracy = True

    def save_state(at: Curve = curve, **extra) -> None:
        timer.seconds["wall_s"] = at.elapsed_s()
        kept = {k: v for k, v in state.items() if k == "numpy_latency_s"}  # timed when it was complete
        _save_state(out, {**kept, "seconds": dict(timer.seconds), "trials": len(at.trials),
                          "rejected_lines": rejected,
                          "online_accuracy": adapter.online_accuracy if adapter is not None else [],
                          "trial_elapsed_s": at.trial_elapsed_s(), "build_failed_trials": at.build_failed_trials(),
                          "pretraining": search_model.pretraining,
                          **extra})

    not_saved: list[RecordsNotSaved] = []  # raised in TVM's loop, an error comes back as TVM's

    def save_batch(at: Curve) -> None:
        """After MetaSchedule's AddToDatabase, before the model trains: the batch is on disk."""
        try:
            held = records.count_records(out)
            if held >= len(at.trials):
                save_state(at)
                return
            why = (f"{out / records.RECORD_FILE} holds {held} records after a batch that brought the session to "
                   f"{len(at.trials)} trials: MetaSchedule's database did not write them (it ignores a failed "
                   f"write: a full disk?)")
        except OSError as err:
            why = f"writing {out}: {err}"
        not_saved.append(RecordsNotSaved(
            f"{why}. The run stopped there: the records on disk are kept (a cut line is set aside when the "
            f"session resumes, which starts from them). Free space (or fix the directory) and run the same "
            f"command to resume"))
        raise not_saved[-1]

    def batch_done(new: list[Trial]) -> None:
        save_state()
        if on_batch is not None:  # with the model's seconds so far: its time per batch, as a curve
            on_batch(new, timer.seconds.get("cost_model_update_s", 0.0) + timer.seconds.get("cost_model_predict_s", 0.0))

    own_builder = builder is None
    if own_builder:
        builder = PersistentBuilder(max_workers=cfg.builder.workers, timeout_s=cfg.builder.timeout_s)
    runner = make_runner(cfg.runner, cfg.measure, cuda=target.kind.name == "cuda", repeats_file=out / REPEATS_FILE)
    strategy = ms.search_strategy.EvolutionarySearch(
        population_size=cfg.search.population_size,
        init_measured_ratio=cfg.search.init_measured_ratio,
        genetic_num_iters=cfg.search.genetic_num_iters,
        genetic_mutate_prob=cfg.search.genetic_mutate_prob,
        eps_greedy=cfg.search.eps_greedy,
    )
    if previous:  # its search remembers nothing of the records: without this it measures some again
        strategy = SkipMeasured(strategy, measured_trace_keys(database))
    space = space_generator(workload.space or cfg.search.space)
    callbacks = list(ms.measure_callback.MeasureCallback.create("default"))
    if adapter is not None:  # before MetaSchedule's UpdateCostModel, which hands on the built candidates only
        adapter.trials_measured = len(curve.trials)
        callbacks.insert(0, CountTrials(adapter))
    callbacks.insert(callbacks.index(next(c for c in callbacks if type(c).__name__ == "AddToDatabase")) + 1,
                     SaveBeforeTraining(curve, save_batch))  # before UpdateCostModel trains
    callbacks.append(ConvergenceRecorder(curve, batch_done))
    _quiet_tvm_console()
    try:
        with unnamed_log_handlers_detached():  # TVM 0.27's logger set-up fails on them
            ms.tune_tir(
                mod,
                target,
                work_dir=str(out),
                max_trials_global=remaining,
                num_trials_per_iter=cfg.search.trials_per_iter,
                builder=TimedBuilder(builder, timer),
                runner=TimedRunner(runner, timer),
                database=database,
                cost_model=search_model.ms_model,
                measure_callbacks=callbacks,
                task_scheduler="round-robin",
                strategy=strategy,
                space=space,
                num_tuning_cores=cfg.search.tuning_cores,
                seed=seed,
            )
    except Exception:
        if (why := farm_stopped(runner)) is not None:  # raised in TVM's loop, it comes back as TVM's error
            raise FarmDown(why) from None
        if not_saved:
            raise not_saved[0] from None
        raise
    finally:
        if own_builder:
            builder.shutdown()
    if not curve.trials and not previous:  # not a small space: nothing in it passed the postprocessors
        save_state()
        raise NoCandidateError(
            f"MetaSchedule's search found no valid schedule of {key} for target {target.kind.name}: every "
            "schedule it sampled failed a postprocessor (on CUDA most often VerifyGPUCode; TVM's log in "
            f"{out / 'logs'} counts the failures), so nothing was measured. Tune another form of the "
            "workload or another design space (search.space)")
    model_file = search_model.save(out / "model")
    # tune_tir returns before the budget only when the search generated no unmeasured candidate
    # (a small design space): kept, so that a rerun reports it complete instead of searching again
    if len(curve.trials) < cfg.search.trials:
        exhausted_at = len(curve.trials)
    save_state(model_file=Path(model_file).name if model_file else None,  # in out: a moved work_dir keeps it
               **({EXHAUSTED_KEY: exhausted_at} if exhausted_at is not None else {}))
    return result(model_file, adapter.online_accuracy if adapter is not None else [], search_model.pretraining)
