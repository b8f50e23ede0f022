"""Reading MetaSchedule JSON databases line by line, in commit order, robustly.

A MetaSchedule ``JSONDatabase`` is two files (plain or ``.gz``):

* ``database_workload.json``: one workload per line,
  ``[structural_hash, base64(8-byte length + save_json(IRModule))]``.
* ``database_tuning_record.json``: one record per line, in the order the records were
  committed, ``[workload_index, [[insts, decisions], run_secs, target_json, args_info]]``.

``JSONDatabase.get_all_tuning_records()`` returns records sorted by latency; this
module never uses it. It reads the record file itself, so ``DatabaseRecord.trial``
is the commit order (the order of measurement).

What happens to bad lines (each one is listed with ``file:line`` in
:class:`ReadSummary`):

* **skipped** (not kept): an unreadable or truncated line, a line that is not JSON or
  not a record, a workload index out of range or pointing to an unreadable workload
  line, a target that TVM rejects, and a trace that fails to replay on the workload
  (for example an unknown instruction).
* **kept but failed** (``status == "failed"``, listed in ``ReadSummary.invalid``):
  ``run_secs`` containing NaN, infinity, zero, a negative value or a non-number. A
  measurement that produced such a value cannot be trusted as fast, and keeping the
  record keeps the trial count (and convergence curves) right.

Failed records are kept: ``run_secs`` of ``None``/empty, or any value at or above
``FAILED_LATENCY_S`` (MetaSchedule stores failures as ``[1e10]``). MetaSchedule does
not store the error message in the database, so ``error`` says what is known.

A database directory may hold a ``costlab.json`` sidecar written by costlab's tuning
sessions (``{"workload_name", "workload_params", "workload_key", ...}``); it is read
into :attr:`Database.meta`.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from costlab.errors import CostlabError

FAILED_LATENCY_S = 1e9  # at or above this, a latency is MetaSchedule's failure marker (1e10)
WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
SIDECAR_FILE = "costlab.json"

Progress = Callable[[str, int, int], None]
"""A progress callback ``(stage, done, total)``; ``total`` is 0 when unknown."""


@dataclass(frozen=True)
class LineIssue:
    """One line that was skipped or marked failed, with where it is and why."""

    path: str
    line: int  # 1-based
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class ReadSummary:
    """What reading one database did: counts, and every bad line as ``file:line``."""

    workload_path: str
    record_path: str
    n_workloads: int = 0
    n_lines: int = 0  # non-blank lines of the record file
    n_ok: int = 0
    n_failed: int = 0
    skipped: list[LineIssue] = field(default_factory=list)  # lines not kept
    invalid: list[LineIssue] = field(default_factory=list)  # kept, marked failed (NaN/negative run_secs)
    bad_workloads: list[LineIssue] = field(default_factory=list)  # unreadable workload lines

    @property
    def n_kept(self) -> int:
        return self.n_ok + self.n_failed

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    def to_dict(self) -> dict:
        return {
            "workload_path": self.workload_path,
            "record_path": self.record_path,
            "n_workloads": self.n_workloads,
            "n_lines": self.n_lines,
            "n_kept": self.n_kept,
            "n_ok": self.n_ok,
            "n_failed": self.n_failed,
            "n_skipped": self.n_skipped,
            "n_invalid_run_secs": len(self.invalid),
            "skipped": [str(i) for i in self.skipped],
            "invalid": [str(i) for i in self.invalid],
            "bad_workloads": [str(i) for i in self.bad_workloads],
        }

    def __str__(self) -> str:
        text = (
            f"{self.record_path}: {self.n_lines} lines, {self.n_kept} records kept "
            f"({self.n_ok} ok, {self.n_failed} failed), {self.n_skipped} skipped"
        )
        if self.invalid:
            text += f", {len(self.invalid)} with invalid run_secs marked failed"
        return text


@dataclass
class DatabaseWorkload:
    """One workload line: its structural hash and the decoded IRModule."""

    index: int  # 0-based line index among workload lines, as records refer to it
    shash: str
    mod: Any  # tvm.IRModule
    json_line: list  # the raw line, ``[shash, base64]``, to re-create the workload elsewhere
    source: str  # "path:line"

    def ms_workload(self):
        """This workload as ``ms.database.Workload``."""
        from tvm.s_tir import meta_schedule as ms

        return ms.database.Workload.from_json(self.json_line)


@dataclass
class DatabaseRecord:
    """One measured record, in commit order.

    ``run_secs`` are the measured run times in seconds as stored (full precision);
    ``latency_s`` is their mean, or ``inf`` for a failed record.
    """

    workload: DatabaseWorkload
    trace_text: str  # the trace ``[insts, decisions]`` as compact JSON: a tenth of the memory of the parsed lists
    run_secs: list[float] | None
    target_json: dict | None
    args_info_json: list | None
    path: str
    line: int  # 1-based line of the record file
    trial: int  # 0-based commit order among this workload's record lines (skipped ones count too)
    status: str  # "ok" or "failed"
    error: str | None = None

    @property
    def workload_index(self) -> int:
        return self.workload.index

    @property
    def trace_json(self) -> list:
        """The trace, ``[insts, decisions]``, parsed (anew at each call)."""
        return json.loads(self.trace_text)

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def latency_s(self) -> float:
        return mean_latency_s(self.run_secs) if self.ok else math.inf

    def target(self):
        """The ``tvm.target.Target`` of the record (``None`` if the record has none)."""
        return None if self.target_json is None else _target_from_json(self.target_json)

    def schedule(self):
        """A fresh schedule of the workload with this record's trace replayed."""
        return replay_trace(self.workload.mod, self.trace_json)

    def measure_candidate(self):
        """``ms.MeasureCandidate`` for feature extraction (replays the trace once)."""
        return make_measure_candidate(self.workload.mod, self.trace_json, self.args_info_json)

    def tuning_record(self):
        """This record as ``ms.database.TuningRecord`` (TVM replays the trace)."""
        from tvm.s_tir import meta_schedule as ms

        rec = [self.trace_json, self.run_secs, self.target_json, self.args_info_json]
        return ms.database.TuningRecord.from_json(rec, self.workload.ms_workload())


@dataclass
class Database:
    """A database as read: workloads, records in commit order, the summary, the sidecar."""

    path: str  # the directory (or the record file when files were given)
    workloads: list[DatabaseWorkload]
    records: list[DatabaseRecord]
    summary: ReadSummary
    meta: dict | None = None  # the costlab.json sidecar, if any

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[DatabaseRecord]:
        return iter(self.records)


# ---------------------------------------------------------------------------- helpers


def mean_latency_s(run_secs: Sequence[float] | None) -> float:
    """The mean of measured run times in seconds; ``inf`` when none or any failed.

    The mean, as MetaSchedule ranks its records (``SortTuningRecordByMeanRunSecs``) and
    TenSet labels its dataset, so online and offline training see the same labels.
    """
    values = [float(v) for v in run_secs or []]  # the runner gives TVM FloatImms
    if classify_run_secs(values)[0] != "ok":
        return math.inf
    return math.fsum(values) / len(values)


def classify_run_secs(run_secs: Any) -> tuple[str, str | None, bool]:
    """``(status, error, invalid)`` of a stored ``run_secs`` value.

    ``invalid`` is True for NaN, infinite, zero, negative or non-numeric values (the record
    is then marked failed and listed in :attr:`ReadSummary.invalid`).
    """
    if run_secs is None or (isinstance(run_secs, list) and not run_secs):
        return "failed", "no run_secs stored (build or run failed; MetaSchedule keeps no message)", False
    if not isinstance(run_secs, list):
        return "failed", f"invalid run_secs {run_secs!r}: not a list", True
    for v in run_secs:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "failed", f"invalid run_secs {run_secs!r}: {v!r} is not a number", True
        if math.isnan(v) or math.isinf(v) or v <= 0:
            return "failed", f"invalid run_secs {run_secs!r}: NaN, infinite, zero or negative", True
    if any(v >= FAILED_LATENCY_S for v in run_secs):
        return "failed", "build or run failed (run_secs = 1e10 marker; MetaSchedule keeps no message)", False
    return "ok", None, False


def find_database_files(path: str | Path) -> tuple[Path, Path]:
    """The workload and record files of a database directory (plain or ``.gz``).

    Raises CostlabError naming what is missing.
    """
    path = Path(path)
    if not path.exists():
        raise CostlabError(f"database {path} does not exist")
    if not path.is_dir():
        raise CostlabError(
            f"database {path} is not a directory; give the directory holding {WORKLOAD_FILE} "
            f"and {RECORD_FILE} (or .gz), or both file paths"
        )

    def pick(name: str) -> Path | None:
        found = [candidate for candidate in (path / name, path / f"{name}.gz") if candidate.is_file()]
        if len(found) == 2:  # which one holds the records is not for costlab to guess
            raise CostlabError(f"database {path}: holds both {name} and {name}.gz; keep the one that is "
                               f"whole and move the other away")
        return found[0] if found else None

    workload = pick(WORKLOAD_FILE)
    if workload is None:
        raise CostlabError(f"database {path}: workload file {WORKLOAD_FILE} (or {WORKLOAD_FILE}.gz) is missing"
                           + _databases_below(path))
    record = pick(RECORD_FILE)
    if record is None:
        raise CostlabError(f"database {path}: record file {RECORD_FILE} (or {RECORD_FILE}.gz) is missing")
    return workload, record


def _databases_below(path: Path, max_depth: int = 4) -> str:
    """For a folder that is no database: the databases up to ``max_depth`` levels below it, in
    words (a ``costlab run`` work_dir holds one per session), or ""."""
    found = sorted({record.parent for depth in range(1, max_depth + 1)
                    for name in (WORKLOAD_FILE, f"{WORKLOAD_FILE}.gz")
                    for record in path.glob("/".join(["*"] * depth + [name]))})
    if not found:
        return ""
    return (f"; {len(found)} folder(s) below it are databases (a costlab run work_dir holds one per session: "
            f"<workload>/<model>/seed<k>), for example {found[0]}: give each of them as a database")


def read_json_object(file: Path, what: str) -> dict | None:
    """The JSON object in ``file`` (``what`` it holds, in words), or None when there is none. A file
    that is not one (a hand edit, a disk error) is a CostlabError naming it: read as empty, it would
    lose what it held, or let records of another setup mix with new ones."""
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as err:
        raise CostlabError(f"{file}: {what} is not valid JSON ({err}); fix it, or move it away "
                           "(the measured records beside it stay where they are)") from None
    if not isinstance(data, dict):
        raise CostlabError(f"{file}: {what} is not a JSON object (value: {data!r:.60}); fix it, or move it away "
                           "(the measured records beside it stay where they are)")
    return data


def read_sidecar(path: str | Path) -> dict | None:
    """The ``costlab.json`` sidecar of a database directory (the setup its records were tuned
    with), or None. Bad JSON is an error."""
    return read_json_object(Path(path) / SIDECAR_FILE, "the setup its records were tuned with")


CORRUPT_FILE = "file ends early or is corrupt"  # how a cut or corrupt record file's issue begins


def _iter_lines(path: Path) -> Iterator[tuple[int, str | None, str | None]]:
    """``(line_number, text, error)`` for each line; a truncated gzip stream ends with an error."""
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rb") as f:
            for raw in f:
                lineno += 1
                try:
                    yield lineno, raw.decode("utf-8"), None
                except UnicodeDecodeError as err:
                    yield lineno, None, f"not UTF-8 text ({err.reason} at byte {err.start})"
    except (EOFError, OSError, zlib.error) as err:
        yield lineno + 1, None, f"{CORRUPT_FILE} ({type(err).__name__}: {err}); rest of file not read"


def _count_lines(path: Path) -> int:
    n = 0
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            for _ in f:
                n += 1
    except (EOFError, OSError, zlib.error):
        pass
    return n


def decode_workload(json_line: Any):
    """The IRModule of a workload line ``[shash, base64(8-byte length + save_json(mod))]``."""
    if not (isinstance(json_line, list) and len(json_line) == 2 and all(isinstance(x, str) for x in json_line)):
        raise ValueError("expected [structural_hash, base64 string]")
    int(json_line[0])  # the hash is a decimal number
    base64.b64decode(json_line[1], validate=True)  # fail clearly on garbage before TVM sees it
    from tvm.s_tir import meta_schedule as ms

    return ms.database.Workload.from_json(json_line).mod


_TARGETS: dict[str, Any] = {}


def _target_from_json(target_json: dict):
    from tvm.target import Target

    key = json.dumps(target_json, sort_keys=True)
    if key not in _TARGETS:
        _TARGETS[key] = Target(target_json)
    return _TARGETS[key]


_INTRINSICS_LOADED = False


def _ensure_tensor_intrinsics(trace_json: Any) -> None:
    """Import TVM's tensor intrinsics, needed only to replay ``Tensorize`` (seconds at best)."""
    global _INTRINSICS_LOADED
    if _INTRINSICS_LOADED or "Tensorize" not in json.dumps(trace_json):
        return
    from costlab._tvm import import_tensor_intrinsics

    import_tensor_intrinsics()
    _INTRINSICS_LOADED = True


def replay_trace(mod, trace_json: list):
    """A traced schedule of ``mod`` with ``trace_json`` (``[insts, decisions]``) applied.

    Raises whatever TVM raises when the trace does not apply (unknown instruction,
    missing block, bad decision).
    """
    from tvm.s_tir.schedule import Schedule, Trace

    _ensure_tensor_intrinsics(trace_json)
    sch = Schedule(mod, debug_mask="none", error_render_level="none")
    Trace.apply_json_to_schedule(trace_json, sch)
    return sch


def make_measure_candidate(mod, trace_json: list, args_info_json: list | None):
    """``ms.MeasureCandidate`` of a replayed trace; arguments from ``args_info_json`` or ``mod``."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    sch = replay_trace(mod, trace_json)
    if args_info_json:
        args = [ArgInfo.from_json(a) for a in args_info_json]
    else:
        args = ArgInfo.from_prim_func(sch.mod["main"])
    return ms.MeasureCandidate(sch, args)


def make_context(mod, target, *, num_threads: int = 1):
    """An ``ms.TuneContext`` for feature extraction, without a space generator or strategy.
    ``target``: a ``tvm.target.Target``, a preset name (``"cpu"``, ``"h100"``) or a target's
    JSON as a database record holds it.

    ``ms.TuneContext(...)`` imports all of TVM's tensor intrinsics in its constructor
    (15 s on an idle 2-core machine, minutes with torch and pandas loaded; see
    :mod:`costlab._tvm`). Feature extraction does not need them, so this builds the
    same object without that import.
    """
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule import _ffi_api
    from tvm.s_tir.meta_schedule.logging import get_logger, get_logging_func
    from tvm.target import Target

    if isinstance(target, str):  # a preset name ("cpu", "h100"), as in a config, or TVM's own string
        from costlab.targets import PRESETS, make_target

        target = make_target(target) if target in PRESETS else Target(target)
    elif target is not None and not isinstance(target, Target):
        target = _target_from_json(target)
    ctx = ms.TuneContext.__new__(ms.TuneContext)
    ctx.__init_handle_by_constructor__(
        _ffi_api.TuneContext, mod, target, None, None, "main", int(num_threads), -1,
        get_logging_func(get_logger("costlab.data")),
    )
    _ffi_api.TuneContextInitialize(ctx)
    return ctx


def _parse_record_line(text: str) -> tuple[int, list, Any, Any, Any]:
    """``(workload_index, trace_json, run_secs, target_json, args_info_json)``; ValueError if malformed."""
    obj = json.loads(text)
    if not (isinstance(obj, list) and len(obj) == 2):
        raise ValueError("expected [workload_index, record]")
    index, rec = obj
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"workload index {index!r} is not an integer")
    if not (isinstance(rec, list) and 1 <= len(rec) <= 4):
        raise ValueError("expected record [trace, run_secs, target, args_info]")
    rec = rec + [None] * (4 - len(rec))
    trace, run_secs, target, args_info = rec
    if not (isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list) and isinstance(trace[1], list)):
        raise ValueError("trace is not [instructions, decisions]")
    if target is not None and not isinstance(target, dict):
        raise ValueError(f"target is not a JSON object: {target!r}")
    if args_info is not None and not isinstance(args_info, list):
        raise ValueError("args_info is not a list")
    return index, trace, run_secs, target, args_info


def _as_float_list(run_secs: Any) -> list[float] | None:
    """Stored ``run_secs`` as floats (non-numbers become NaN); None when not a list."""
    if not isinstance(run_secs, list):
        return None
    out = []
    for v in run_secs:
        try:
            out.append(float(v) if not isinstance(v, bool) else math.nan)
        except (TypeError, ValueError):
            out.append(math.nan)
    return out


def one_line(err: BaseException | str, limit: int = 200) -> str:
    """``err``'s message on one line, cut at ``limit`` characters (its type's name when empty)."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- reading


def read_database(
    path: str | Path | Sequence[str | Path],
    *,
    replay: bool = True,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> Database:
    """Read a MetaSchedule JSON database, keeping every good record in commit order.

    Args:
        path: a database directory holding ``database_workload.json`` and
            ``database_tuning_record.json`` (each plain or ``.gz``), or a pair
            ``(workload_file, record_file)``.
        replay: replay each trace on its workload and skip the records whose trace does
            not apply (about 25 ms per record of the A100 database's CUDA traces). ``False`` reads fast
            without that check, for example for convergence curves.
        progress: called as ``progress(stage, done, total)`` while reading records.
        jobs: worker processes that replay (:func:`replay_failures`).

    Returns:
        :class:`Database` with :class:`ReadSummary` listing skipped lines as ``file:line``.

    Raises:
        CostlabError: the directory, the workload file or the record file is missing.
    """
    if isinstance(path, (list, tuple)):
        if len(path) != 2:
            raise CostlabError(f"give a database directory or (workload_file, record_file), not {path!r}")
        workload_path, record_path = Path(path[0]), Path(path[1])
        for p, what in ((workload_path, "workload"), (record_path, "record")):
            if not p.is_file():
                raise CostlabError(f"database {what} file {p} is missing")
        db_path = record_path.parent
    else:
        db_path = Path(path)
        workload_path, record_path = find_database_files(db_path)
    meta = read_sidecar(db_path) if db_path.is_dir() else None

    summary = ReadSummary(workload_path=str(workload_path), record_path=str(record_path))
    workloads: list[DatabaseWorkload | None] = []
    for lineno, text, error in _iter_lines(workload_path):
        if error is None and text is not None and not text.strip():
            continue
        where = LineIssue(str(workload_path), lineno, "")
        if error is not None:
            summary.bad_workloads.append(LineIssue(where.path, lineno, error))
            workloads.append(None)
            continue
        try:
            json_line = json.loads(text)
            mod = decode_workload(json_line)
        except Exception as err:  # noqa: BLE001  (TVM raises several types)
            summary.bad_workloads.append(LineIssue(where.path, lineno, f"unreadable workload: {one_line(err)}"))
            workloads.append(None)
            continue
        workloads.append(
            DatabaseWorkload(len(workloads), str(json_line[0]), mod, json_line, f"{workload_path}:{lineno}")
        )
    summary.n_workloads = sum(w is not None for w in workloads)

    total = _count_lines(record_path) if progress else 0
    records: list[DatabaseRecord] = []
    trials: dict[int, int] = {}
    targets: dict[str, dict] = {}  # a target's sorted JSON -> the dict its records share
    stage = f"read {db_path}"  # the whole path: sessions share last names (seed0), and MLflow artifacts' too
    rpath = str(record_path)
    for lineno, text, error in _iter_lines(record_path):
        if progress and lineno % 250 == 0:
            progress(stage, lineno, total)
        if error is None and text is not None and not text.strip():
            continue
        summary.n_lines += 1
        if error is not None:
            summary.skipped.append(LineIssue(rpath, lineno, error))
            continue
        try:
            index, trace, run_secs, target, args_info = _parse_record_line(text)
        except ValueError as err:  # json.JSONDecodeError is a ValueError
            summary.skipped.append(LineIssue(rpath, lineno, f"not a record: {one_line(err)}"))
            continue
        if not 0 <= index < len(workloads):
            summary.skipped.append(
                LineIssue(rpath, lineno, f"workload index {index} out of range (0..{len(workloads) - 1})" if workloads
                          else f"workload index {index}, but the workload file holds no workload")
            )
            continue
        trial = trials.get(index, 0)  # counted before the checks below: a skipped line was measured too
        trials[index] = trial + 1
        workload = workloads[index]
        if workload is None:
            summary.skipped.append(
                LineIssue(rpath, lineno, f"workload {index} is unreadable ({workload_path}, line {index + 1})")
            )
            continue
        if target is not None:  # checked once per distinct target, and one dict held for its records
            key = json.dumps(target, sort_keys=True)
            if key not in targets:
                try:
                    _target_from_json(target)
                except Exception as err:  # noqa: BLE001
                    summary.skipped.append(LineIssue(rpath, lineno, f"invalid target: {one_line(err)}"))
                    continue
                targets[key] = target
            target = targets[key]
        status, reason, invalid = classify_run_secs(run_secs)
        if invalid:
            summary.invalid.append(LineIssue(rpath, lineno, reason or "invalid run_secs"))
        clean_secs = _as_float_list(run_secs)
        records.append(
            DatabaseRecord(
                workload=workload, trace_text=json.dumps(trace, separators=(",", ":")), run_secs=clean_secs,
                target_json=target,
                args_info_json=args_info, path=rpath, line=lineno, trial=trial, status=status, error=reason,
            )
        )
        if status == "ok":
            summary.n_ok += 1
        else:
            summary.n_failed += 1
    if progress:
        progress(stage, total, total)
    db = Database(
        path=str(db_path), workloads=[w for w in workloads if w is not None], records=records,
        summary=summary, meta=meta,
    )
    if replay:
        drop_unreplayable(db, replay_failures(db.records, jobs=jobs, progress=progress, stage=f"replay {db_path}"))
    return db


def replay_failures(
    records: Sequence[DatabaseRecord],
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    stage: str = "replay",
    batch_size: int = 256,
) -> dict[int, str]:
    """The positions in ``records`` of those whose trace does not replay on its workload, with
    why (one line). ``jobs`` worker processes replay them (:mod:`costlab.data.replay_jobs`;
    by default one per core up to 8, with at least 1,024 records each)."""
    from costlab.data.replay_jobs import Batch, BatchResult, Replay, resolve_jobs, run_batches

    workloads: dict[str, list] = {}
    positions: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        workloads.setdefault(rec.workload.source, rec.workload.json_line)
        positions.setdefault(rec.workload.source, []).append(i)
    batches = []
    for key, where in positions.items():
        for start in range(0, len(where), batch_size):
            part = where[start:start + batch_size]
            batches.append(Batch(len(batches), key, "", part, [records[i].trace_text for i in part],
                                 ["null"] * len(part)))
    done = 0

    def on_done(result: BatchResult) -> None:
        nonlocal done
        done += result.n_rows
        if progress:
            progress(stage, done, len(records))

    results = run_batches(Replay(workloads), batches, resolve_jobs(jobs, len(records)), on_done)
    return {i: why for r in results for i, why in r.unreplayable.items()}


def drop_unreplayable(db: Database, failures: dict[int, str]) -> None:
    """Move the records at positions ``failures`` (:func:`replay_failures`) of ``db`` to its
    skipped lines, as "trace does not replay: why", and out of its counts."""
    if not failures:
        return
    summary, lines = db.summary, set()
    for i, why in failures.items():
        rec = db.records[i]
        summary.skipped.append(LineIssue(rec.path, rec.line, f"trace does not replay: {one_line(why)}"))
        if rec.ok:
            summary.n_ok -= 1
        else:
            summary.n_failed -= 1
        lines.add(rec.line)
    summary.invalid = [issue for issue in summary.invalid if issue.line not in lines]
    summary.skipped.sort(key=lambda issue: issue.line)
    db.records = [r for i, r in enumerate(db.records) if i not in failures]
