"""Databases to a parquet dataset, and a per-extractor feature cache beside it.

A dataset is a directory::

    records.parquet      one row per kept database record (columns: COLUMNS below)
    workloads.json       the workload lines of every database, by structural hash, so the
                         dataset replays traces without the original databases
    dataset.json         build metadata: counts, sources, skipped lines as file:line
    README.md            the same, for people
    features/<name>.npz  cached features of extractor <name>, with <name>.json (schema)

Columns of ``records.parquet``:

=================  ==========================================================================
row                int, 0..n-1; feature caches refer to rows by this number
workload_key       readable workload key (sidecar key, or ``name[shapes]#hash``)
task_key           ``workload_key @ target`` (``cuda sm_80``, ``llvm znver4 2 cores``, with ``mattr`` when set); metrics and
                   models group by it
workload_hash      the database's structural hash of the workload (string)
workload_name      sidecar ``workload_name``, or the anchor block's name
family             operator family (see :mod:`costlab.data.workload_info`)
workload_params    JSON: sidecar ``workload_params``, or the PrimFunc's shapes/dtypes/blocks
target             JSON of the record's target ("" when the record has none)
target_kind        ``cuda``, ``llvm``, ... ("" when none)
trace              JSON ``[instructions, decisions]`` as stored
args_info          JSON of the argument info ("null" when none)
run_secs           list of measured run times, seconds (empty when none)
latency_s          mean of run_secs, seconds (as MetaSchedule and TenSet); ``inf`` when failed
status             ``ok`` or ``failed``
error              why it failed, when known (else null)
trial              0-based commit order of the record among its workload's records in its database
db                 the database path
line               1-based line in the record file
source             ``record_file:line``
=================  ==========================================================================

A ``costlab.json`` sidecar in a database directory names its workload (``workload_name``,
``workload_params``, ``workload_key``); it applies when the database holds one workload,
or to the workload whose hash is the sidecar's ``workload_hash``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from costlab.data.database import CORRUPT_FILE, Progress, drop_unreplayable, read_database, replay_failures
from costlab.data.replay_jobs import Batch, BatchResult, Replay, resolve_jobs, run_batches
from costlab.data.workload_info import canonical_json, describe_workload, target_summary
from costlab.errors import CostlabError

RECORDS_FILE = "records.parquet"
META_FILE = "dataset.json"
WORKLOADS_FILE = "workloads.json"
FEATURES_DIR = "features"
FORMAT_VERSION = 1
COLUMNS = [
    "row", "workload_key", "task_key", "workload_hash", "workload_name", "family", "workload_params",
    "target", "target_kind", "trace", "args_info", "run_secs", "latency_s", "status", "error",
    "trial", "db", "line", "source",
]


@dataclass
class DatasetSummary:
    """What :func:`build_dataset` wrote."""

    path: str
    n_rows: int
    n_ok: int
    n_failed: int
    n_skipped: int
    n_invalid_run_secs: int
    n_workloads: int
    n_tasks: int
    families: dict[str, int]
    sources: list[dict] = field(default_factory=list)  # one ReadSummary.to_dict() per database
    dataset_id: str = ""
    notes: list[str] = field(default_factory=list)  # databases given that hold nothing new, said at build

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def __str__(self) -> str:
        said = (f"{self.path}: {self.n_rows} records ({self.n_ok} ok, {self.n_failed} failed) over "
                f"{self.n_tasks} tasks; {self.n_skipped} lines skipped")
        if self.n_invalid_run_secs:
            said += (f"; {self.n_invalid_run_secs} records with invalid run_secs (not a positive finite "
                     f"number) marked failed")
        for s in self.sources:  # where, so a skipped line is seen without opening dataset.json
            if s["n_skipped"]:
                said += f"\n  {s['db']}: {s['n_skipped']} of {s['n_lines']} lines skipped; first: {s['skipped'][0]}"
        for note in self.notes:
            said += f"\n  warning: {note}"
        return said


def _resolve(path: str | Path) -> Path:
    """The dataset directory of ``path`` (the directory or its records.parquet)."""
    path = Path(path)
    if path.is_file() and path.name == RECORDS_FILE:
        path = path.parent
    if not (path / RECORDS_FILE).is_file():
        what = (f"no {RECORDS_FILE} in it (not a costlab dataset)" if path.is_dir()
                else "not a directory" if path.exists() else "no such directory")
        raise CostlabError(f"dataset {path}: {what}; `costlab dataset build --db DB --out {path}` builds one")
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _refuse_unreadable(db) -> None:
    """A database whose file is cut or corrupt, or whose record lines yield no record, stops the
    build before anything is written: building without it would lose its records without a word."""
    corrupt = [issue for issue in db.summary.skipped if issue.reason.startswith(CORRUPT_FILE)]
    if corrupt:
        raise CostlabError(f"database {db.path}: {corrupt[0]}; nothing was written (repair that file, "
                           f"or leave the database out)")
    if db.summary.n_lines and not db.summary.n_kept:  # an empty one (a session killed before its first trial) adds nothing
        first = f" (first: {db.summary.skipped[0]})" if db.summary.skipped else ""
        raise CostlabError(f"database {db.path}: no record could be read from its {db.summary.n_lines} record "
                           f"line(s){first}; nothing was written")


def _nothing_new_note(db, contents: dict[str, str], timed: dict[tuple, str]) -> str | None:
    """What to say about a database that adds no record, or the same records as one read before
    (``contents``: a digest of a database's records -> the first database holding them, updated),
    or some of them (``timed``: a measured record, as its workload, trace and timings -> the first
    database holding it, updated: several records timed alike to the microsecond are a copy, a
    snapshot of a session given beside the session, say)."""
    if not db.records:
        return f"database {db.path} holds no record (a session stopped before its first measured trial?)"
    shash_of = {w.index: w.shash for w in db.workloads}
    signatures = [(shash_of[r.workload_index], _digest(r.trace_text),
                   tuple(r.run_secs or ())) for r in db.records]  # a trace's digest: ``timed`` spans the build
    digest = hashlib.sha256("\n".join(sorted(f"{h} {t} {list(secs)}" for h, t, secs in signatures)).encode()).hexdigest()
    first = contents.setdefault(digest, db.path)
    measured = [sig for sig, r in zip(signatures, db.records) if r.status == "ok"]
    copied = [timed[sig] for sig in measured if timed.get(sig, db.path) != db.path]
    for sig in measured:
        timed.setdefault(sig, db.path)
    if first != db.path:
        return (f"database {db.path} holds the same records as {first} (a copy?): each of its {len(db.records)} "
                f"records is in the dataset twice, and weighs twice in training and in the metrics")
    by_source = Counter(copied)
    if by_source and max(by_source.values()) >= MIN_COPIED_RECORDS:
        sources = ", ".join(sorted(by_source))
        return (f"database {db.path}: {len(copied)} of its {len(db.records)} records are also in {sources}, with "
                f"the same trace and the same timings to the last digit (copied from it?): each is in the dataset "
                f"twice, and weighs twice in training and in the metrics")
    return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# TVM's runner keeps microseconds: one record timed alike in two sessions can be chance (1 pair of
# cpu-v2's 8,351 rows of repeated traces is), several from one database are a copy
MIN_COPIED_RECORDS = 3


def _renamed_workload_note(db_path: str, w, first_module: dict[str, tuple]) -> str | None:
    """A workload whose structural hash was read before from another database, with other names
    in it (blocks, buffers: the hash ignores names): the dataset keeps the first one's module, and
    the traces of this one that name its own blocks do not replay there (``first_module``: hash ->
    (script, database), updated)."""
    script = w.mod.script()
    first, where = first_module.setdefault(w.shash, (script, db_path))
    if first == script:
        return None
    return (f"database {db_path}: its workload {w.shash} is the one of {where} with other names in it (blocks or "
            f"buffers; the structural hash ignores names): the dataset keeps {where}'s, and the traces of "
            f"{db_path} that name its own blocks will not replay on it (left out of the features, with a warning)")


def _one_key_several_programs_notes(df, named: np.ndarray) -> list[str]:
    """A sidecar's workload key given to programs with other structural hashes (a workload file
    edited between runs): their rows become one workload and one ranking task."""
    notes = []
    keyed = df[named]
    for key, group in keyed.groupby("workload_key", sort=True):
        hashes = group.drop_duplicates("workload_hash")
        if len(hashes) > 1:
            found = ", ".join(f"{h} (in {db})" for h, db in zip(hashes["workload_hash"], hashes["db"]))
            notes.append(f"workload {key} names {len(hashes)} different programs (structural hashes {found}; its "
                         f"definition changed between runs?): their records are one workload and one task here")
    return notes


def build_dataset(
    db_dirs: Sequence[str | Path] | str | Path,
    out_dir: str | Path,
    *,
    replay: bool = True,
    progress: Progress | None = None,
    jobs: int | None = None,
    features: Sequence[str] = (),
) -> DatasetSummary:
    """Read databases and write a dataset directory (see the module docstring).

    Args:
        db_dirs: database directories (or ``(workload_file, record_file)`` pairs).
        out_dir: the dataset directory; created, and its files replaced.
        replay: replay every trace and skip those that do not apply (slow but safe: the
            15,676 CUDA records of an A100 database took 389 s in one process, 168 s with two
            workers).
        progress: ``progress(stage, done, total)``, called while reading.
        jobs: worker processes that replay (by default one per core up to 8, with at least
            1,024 records each: :mod:`costlab.data.replay_jobs`).
        features: extractors whose feature caches are filled too. Their extraction replays
            every trace, so with ``replay`` it is also the check: the records are written
            unchecked, then extracted, and only when a trace did not replay is the dataset
            built again with the check (and extracted again), so that the result is the
            same as a checked build's followed by :func:`extract_features`. ``dataset.json``'s
            ``traces_checked`` says whether the check was made (false while the extraction
            runs, so also after an interrupted one: build again).

    Returns:
        :class:`DatasetSummary`, also written to ``dataset.json``.
    """
    import costlab.features as cf

    names = list(dict.fromkeys(features))
    replaying = [n for n in names if _replays(cf.get(n))]  # an unknown name fails here, before any work
    resolve_jobs(jobs, 0)
    if not (replay and replaying):
        summary = _write_dataset(db_dirs, out_dir, replay=replay, progress=progress, jobs=jobs)
        if names:
            extract_features(out_dir, names, progress=progress, jobs=jobs)
        return summary
    summary = _write_dataset(db_dirs, out_dir, replay=False, progress=progress, jobs=jobs)  # "traces_checked": false
    try:
        extract_features(out_dir, names, progress=progress, jobs=jobs)
        every_trace_replayed = _unreplayable_rows(out_dir, replaying[0]) == []
    except CostlabError:  # no features at all, say: the checked build below says why, or the extraction again
        every_trace_replayed = False
    if every_trace_replayed:  # the checked build's dataset
        meta_file = _resolve(out_dir) / META_FILE
        meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "traces_checked": True}, indent=1))
        return summary
    try:
        summary = _write_dataset(db_dirs, out_dir, replay=True, progress=progress, jobs=jobs)
    except CostlabError as err:  # no trace replayed, say: the unchecked dataset must not stay as a dataset
        out = _resolve(out_dir)
        for path in (*(out / f for f in (RECORDS_FILE, WORKLOADS_FILE, META_FILE, "README.md")),
                     *(path for n in names for path in _cache_paths(out / FEATURES_DIR, n))):
            path.unlink(missing_ok=True)
        raise CostlabError(f"{err} (the dataset written unchecked for the extraction was removed)") from None
    extract_features(out_dir, names, progress=progress, jobs=jobs)
    return summary


def _replays(extractor) -> bool:
    """Whether extracting ``extractor``'s features replays the traces (``none`` does not)."""
    return not (extractor.schema.kind == "dense" and not extractor.schema.names)


def _unreplayable_rows(dataset_path: str | Path, extractor_name: str) -> list[int] | None:
    """The rows whose trace did not replay when the feature cache of ``extractor_name`` was
    made (None: a cache from before costlab recorded them, or none)."""
    directory = _resolve(dataset_path)
    dataset_id = _sha256(directory / RECORDS_FILE)
    for cache_dir in feature_cache_dirs(directory, dataset_id):
        meta_file = _cache_paths(cache_dir, extractor_name)[1]
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        if meta.get("dataset_id") == dataset_id and meta.get("unreplayable") is not None:
            return [int(r) for r in meta["unreplayable"]]
    return None


def _write_dataset(db_dirs, out_dir, *, replay: bool, progress: Progress | None, jobs: int | None) -> DatasetSummary:
    """:func:`build_dataset` without its features."""
    import pandas as pd

    if isinstance(db_dirs, (str, Path)):
        db_dirs = [db_dirs]
    if not db_dirs:
        raise CostlabError("build_dataset needs at least one database")
    seen = [str(Path(d).resolve()) if isinstance(d, (str, Path)) else repr(d) for d in db_dirs]
    twice = sorted({str(d) for d, key in zip(db_dirs, seen) if seen.count(key) > 1})
    if twice:
        raise CostlabError(f"database {', '.join(twice)}: given more than once (each database is read once)")
    out = Path(out_dir)
    rows: list[dict] = []
    named: list[bool] = []  # the row's workload is named by a costlab.json sidecar
    targets: list[str] = []  # the row's target, summarized, for its task key
    workload_lines: dict[str, list] = {}
    sources, notes = [], []
    contents: dict[str, str] = {}  # a digest of a database's records -> the first database holding them
    timed: dict[tuple, str] = {}  # a measured record (workload, trace, timings) -> the first database holding it
    first_module: dict[str, tuple] = {}  # structural hash -> (its TVMScript, the database it was first read from)
    dbs = []
    for db_dir in db_dirs:
        dbs.append(read_database(db_dir, replay=False, progress=progress))
        _refuse_unreadable(dbs[-1])
    if replay:  # every database's traces at once: many small databases still share the workers
        owner = [(d, i) for d, db in enumerate(dbs) for i in range(len(db.records))]
        failures = replay_failures([dbs[d].records[i] for d, i in owner], jobs=jobs, progress=progress,
                                   stage="replay traces")
        per_db: list[dict[int, str]] = [{} for _ in dbs]
        for k, why in failures.items():
            d, i = owner[k]
            per_db[d][i] = why
        for db, dropped in zip(dbs, per_db):
            drop_unreplayable(db, dropped)
    for db in dbs:
        _refuse_unreadable(db)  # again: every record of it may have failed to replay
        sources.append({"db": db.path, **db.summary.to_dict(), "meta": db.meta})
        if note := _nothing_new_note(db, contents, timed):
            notes.append(note)
        infos, infos_named = {}, {}
        for w in db.workloads:
            meta = db.meta if db.meta and (str(db.meta["workload_hash"]) == w.shash if db.meta.get("workload_hash")
                                           else len(db.workloads) == 1) else None
            infos[w.index] = describe_workload(w.shash, w.mod, meta)
            infos_named[w.index] = bool(meta and meta.get("workload_key"))
            workload_lines.setdefault(w.shash, w.json_line)
            if note := _renamed_workload_note(db.path, w, first_module):
                notes.append(note)
        for rec in db.records:
            info = infos[rec.workload_index]
            target = canonical_json(rec.target_json) if rec.target_json is not None else ""
            named.append(infos_named[rec.workload_index])
            targets.append(target_summary(rec.target_json))
            rows.append({
                "workload_key": info.key,
                "task_key": "",  # below, once every row of the workload has one key
                "workload_hash": info.shash,
                "workload_name": info.name,
                "family": info.family,
                "workload_params": canonical_json(info.params),
                "target": target,
                "target_kind": str(rec.target_json.get("kind", "")) if rec.target_json else "",
                "trace": rec.trace_text,
                "args_info": json.dumps(rec.args_info_json, separators=(",", ":")),
                "run_secs": [float(v) for v in (rec.run_secs or [])],
                "latency_s": rec.latency_s,
                "status": rec.status,
                "error": rec.error,
                "trial": rec.trial,
                "db": db.path,
                "line": rec.line,
                "source": rec.source,
            })
    if not rows:
        raise CostlabError(f"no records in {'the database' if len(sources) == 1 else 'any of the databases'} "
                           f"{', '.join(s['db'] for s in sources)} (a session stopped before its first measured "
                           f"trial leaves an empty database_tuning_record.json); nothing was written")
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "row"])
    df.insert(0, "row", np.arange(len(df), dtype=np.int64))
    df = df.astype({"trial": "int64", "line": "int64", "latency_s": "float64"})
    notes += _one_key_several_programs_notes(df, np.asarray(named, dtype=bool))
    _name_each_workload_once(df, np.asarray(named, dtype=bool))
    df["task_key"] = df["workload_key"] + " @ " + pd.Series(targets, index=df.index, dtype=object)

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (RECORDS_FILE + ".tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, out / RECORDS_FILE)
    (out / WORKLOADS_FILE).write_text(json.dumps(workload_lines))

    summary = DatasetSummary(
        path=str(out),
        n_rows=len(df),
        n_ok=int((df["status"] == "ok").sum()),
        n_failed=int((df["status"] == "failed").sum()),
        n_skipped=sum(s["n_skipped"] for s in sources),
        n_invalid_run_secs=sum(s["n_invalid_run_secs"] for s in sources),
        n_workloads=int(df["workload_key"].nunique()),
        n_tasks=int(df["task_key"].nunique()),
        families={k: int(v) for k, v in df["family"].value_counts().sort_index().items()},
        sources=sources,
        dataset_id=_sha256(out / RECORDS_FILE),
        notes=notes,
    )
    meta = {"format_version": FORMAT_VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "columns": COLUMNS, "traces_checked": replay, **summary.to_dict()}
    (out / META_FILE).write_text(json.dumps(meta, indent=1))
    _write_readme(out, summary, df)
    return summary


def _write_readme(out: Path, summary: DatasetSummary, df) -> None:
    lines = [
        "# costlab dataset", "",
        f"{summary.n_rows} records ({summary.n_ok} ok, {summary.n_failed} failed), "
        f"{summary.n_tasks} tasks, {summary.n_skipped} database lines skipped, "
        f"{summary.n_invalid_run_secs} records with invalid run_secs marked failed.", "",
        "Files: records.parquet (one row per record), workloads.json, dataset.json (this summary "
        "as JSON), features/ (feature caches, made by the first extraction or --features). Latencies are "
        "in seconds; a failed record has latency_s = inf."
        + (" PROVENANCE.md (kept when the dataset is built again) says how it was made."
           if (out / "PROVENANCE.md").is_file() else ""), "", "## Tasks", "",
        "| task | family | records | ok |", "|---|---|---|---|",
    ]
    for task, group in df.groupby("task_key", sort=True):
        lines.append(f"| {task} | {group['family'].iloc[0]} | {len(group)} | {int((group['status'] == 'ok').sum())} |")
    lines += ["", "## Sources", ""]
    for s in summary.sources:
        lines.append(f"- {s['db']}: {s['n_lines']} lines, {s['n_kept']} kept, {s['n_skipped']} skipped")
        for issue in (s["skipped"] + s["invalid"] + s["bad_workloads"])[:50]:
            lines.append(f"  - {issue}")
    (out / "README.md").write_text("\n".join(lines) + "\n")


def _name_each_workload_once(df, named: np.ndarray) -> None:
    """One key, name, family and params per workload, in place. A workload read from a database
    with costlab's sidecar is keyed by name (``gemm(M=...)``), from one without it by shapes and
    hash, and can be given another family: its rows would be two tasks, each ranked against its
    own best. Every row of a workload (rows linked by key or structural hash,
    :func:`~costlab.data.splits.same_workload`) takes those of its sidecar-named rows (the
    smallest such key), else those of its smallest key."""
    import pandas as pd

    from costlab.data.splits import same_workload

    if df.empty:
        return
    workload = same_workload(df["workload_key"], df["workload_hash"])
    ranked = pd.DataFrame({"workload": workload, "unnamed": ~named, "key": df["workload_key"].to_numpy()})
    first = ranked.sort_values(["workload", "unnamed", "key"], kind="stable").drop_duplicates("workload")
    source = pd.Series(first.index.to_numpy(), index=first["workload"].to_numpy())[workload].to_numpy()
    for column in ("workload_key", "workload_name", "family", "workload_params"):
        df[column] = df[column].to_numpy()[source]


def load_dataset(path: str | Path, columns: Sequence[str] | None = None):
    """The records of a dataset as a pandas DataFrame (columns: :data:`COLUMNS`, or only
    ``columns``: the traces are most of a dataset's memory, 0.3 GB of the A100 one's)."""
    import pandas as pd
    import pyarrow.parquet as pq

    directory = _resolve(path)
    file, wanted = directory / RECORDS_FILE, list(COLUMNS if columns is None else columns)
    try:
        df = pd.read_parquet(file, columns=None if columns is None else
                             [c for c in wanted if c in pq.read_schema(file).names])  # a missing one is named below
    except Exception as err:  # noqa: BLE001  (pyarrow raises several types)
        raise CostlabError(f"dataset {directory}: cannot read {RECORDS_FILE}: {err}") from err
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise CostlabError(f"dataset {directory}: {RECORDS_FILE} lacks column(s) {', '.join(missing)}")
    return df


def load_metadata(path: str | Path) -> dict:
    """The build metadata (``dataset.json``) of a dataset."""
    directory = _resolve(path)
    file = directory / META_FILE
    if not file.is_file():
        raise CostlabError(f"dataset {directory}: {META_FILE} is missing")
    try:
        meta = json.loads(file.read_text())
    except json.JSONDecodeError as err:
        raise CostlabError(f"{file}: not valid JSON: {err}") from None
    if not isinstance(meta, dict):
        raise CostlabError(f"{file}: not what costlab dataset build writes (a JSON object of fields; "
                           f"value: {type(meta).__name__})")
    return meta


def _decoded_workload(directory: Path, known: dict, shash: str, n_records: int):
    """Workload ``shash`` of ``workloads.json`` decoded; refused, naming it and the file, when
    the file lacks it or it does not decode."""
    from costlab.data.database import decode_workload

    if shash not in known:
        raise CostlabError(f"dataset {directory}: {WORKLOADS_FILE} has no workload {shash}, "
                           f"which {n_records} records name")
    try:
        return decode_workload(known[shash])
    except Exception as err:  # noqa: BLE001  (ValueError, binascii.Error, TVM's errors)
        raise CostlabError(f"{directory / WORKLOADS_FILE}: workload {shash}: {type(err).__name__}: {err}") from None


def _read_workloads_file(file: Path) -> dict:
    if not file.is_file():
        raise CostlabError(f"dataset {file.parent}: {WORKLOADS_FILE} is missing")
    try:
        return json.loads(file.read_text())
    except json.JSONDecodeError as err:
        raise CostlabError(f"{file}: not valid JSON: {err}") from None


# ----------------------------------------------------------------------- feature cache


def _cache_paths(features_dir: Path, extractor_name: str) -> tuple[Path, Path]:
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", extractor_name)
    base = features_dir / safe
    return base.with_suffix(".npz"), base.with_suffix(".json")


def feature_cache_dirs(directory: Path, dataset_id: str) -> list[Path]:
    """Where a dataset's feature caches are looked for, the first also where they are written
    (and locked): the dataset's own ``features/``, or, when this process cannot write there (a
    team's read-only copy), ``costlab/features/<dataset_id>`` in the user's cache
    (``$XDG_CACHE_HOME``, else ``~/.cache``), then the caches the dataset ships."""
    from costlab.filenames import check_output_dir

    own = directory / FEATURES_DIR
    try:
        check_output_dir(own, "features")
    except CostlabError:
        user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return [user_cache / "costlab" / "features" / dataset_id, own]
    return [own]


def _cache_key(dataset_id: str, extractor) -> dict:
    """What a cache must match to be reused: the dataset file, the extractor's schema and its
    ``cache_revision`` (recorded only when not 0, so older caches of the others stay valid)."""
    key = {"dataset_id": dataset_id, "schema": extractor.schema.to_dict()}
    if extractor.cache_revision:
        key["cache_revision"] = extractor.cache_revision
    return key


def _load_cache(npz: Path, meta_file: Path, expected: dict):
    from costlab.features import Features, FeatureSchema, GraphBatch

    if not (npz.is_file() and meta_file.is_file()):
        return None
    try:
        meta = json.loads(meta_file.read_text())
    except ValueError:
        return None
    if any(meta.get(k) != v for k, v in expected.items()):
        return None
    import zipfile

    schema = FeatureSchema.from_dict(meta["schema"])
    try:
        with np.load(npz) as data:
            row_index = data["row_index"].astype(np.int64)
            if schema.kind == "dense":
                features = Features(schema, dense=data["dense"].astype(np.float32))
            else:
                features = Features(schema, graphs=GraphBatch(
                    node_features=data["node_features"].astype(np.float32),
                    edge_index=data["edge_index"].astype(np.int64),
                    edge_type=data["edge_type"].astype(np.int64),
                    batch=data["batch"].astype(np.int64),
                    num_graphs=int(data["num_graphs"]),
                ))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # damaged (a cut copy): extracted again
        return None
    return features, row_index


def _save_cache(npz: Path, meta_file: Path, meta: dict, features, row_index: np.ndarray) -> None:
    npz.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"row_index": row_index.astype(np.int64)}
    if features.kind == "dense":
        arrays["dense"] = features.dense.astype(np.float32)
    else:
        g = features.graphs
        arrays.update(node_features=g.node_features, edge_index=g.edge_index, edge_type=g.edge_type,
                      batch=g.batch, num_graphs=np.int64(g.num_graphs))
    tmp = npz.with_name(npz.stem + ".tmp.npz")
    # graphs are mostly small integers (edge lists, batch vector): compressed they take ~10x less space
    (np.savez_compressed if features.kind == "graph" else np.savez)(tmp, **arrays)
    os.replace(tmp, npz)
    meta_file.write_text(json.dumps(meta, indent=1))


def dataset_features(
    dataset_path: str | Path,
    extractor_name: str,
    *,
    progress: Progress | None = None,
    batch_size: int = 256,
    refresh: bool = False,
    jobs: int | None = None,
):
    """Features of every row of a dataset, extracted once and cached beside it (in the user's
    cache when its folder is read-only: :func:`feature_cache_dirs`).

    Rows are grouped by workload and target: one ``TuneContext`` per group; each
    record's trace is replayed into a ``MeasureCandidate`` and the extractor called in
    batches of ``batch_size``. The cache (``features/<name>.npz`` and ``.json``) is
    reused while the dataset file and the extractor's schema (name, version, feature
    names, kind) are unchanged, and rebuilt otherwise (or when ``refresh``).
    Use :func:`extract_features` to fill several caches with one replay of the traces.

    ``jobs`` worker processes replay and extract (:mod:`costlab.data.replay_jobs`); by
    default one per core, up to 8, with at least 1,024 rows each (1: this process only).
    The cache is the same whatever ``jobs`` is.

    Returns:
        ``(features, row_index)``: ``features[i]`` belongs to dataset row
        ``row_index[i]`` (the ``row`` column). Rows whose trace no longer replays, or
        that the extractor rejects, are left out and listed in the cache's JSON.
    """
    return extract_features(dataset_path, [extractor_name], progress=progress, batch_size=batch_size,
                            refresh=refresh, jobs=jobs)[extractor_name]


def extract_features(
    dataset_path: str | Path,
    extractor_names: Sequence[str],
    *,
    progress: Progress | None = None,
    batch_size: int = 256,
    refresh: bool = False,
    jobs: int | None = None,
) -> dict[str, tuple]:
    """:func:`dataset_features` of several extractors, replaying each trace only once.

    Replaying is most of the cost (about 25 ms per CUDA record of the A100 database on one core), so
    filling all caches in one pass roughly divides the time by the number of extractors.
    Returns ``{name: (features, row_index)}``.
    """
    from filelock import FileLock

    import costlab.features as cf
    from costlab.features import Features

    resolve_jobs(jobs, 0)  # a bad value is refused before anything is read
    directory = _resolve(dataset_path)
    names = list(dict.fromkeys(extractor_names))
    extractors = {name: cf.get(name) for name in names}
    dataset_id = _sha256(directory / RECORDS_FILE)
    cache_dirs = feature_cache_dirs(directory, dataset_id)
    written = cache_dirs[0]
    written.mkdir(parents=True, exist_ok=True)
    results: dict[str, tuple] = {}
    with FileLock(str(written / ".lock")):
        todo = []
        for name, extractor in extractors.items():
            expected = _cache_key(dataset_id, extractor)
            cached = None
            for cache_dir in ([] if refresh else cache_dirs):
                cached = _load_cache(*_cache_paths(cache_dir, name), expected)
                if cached is not None:
                    break
            if cached is not None:
                results[name] = cached
            else:
                todo.append(name)
        if not todo:
            return results
        df = load_dataset(directory)
        for name in list(todo):
            if not _replays(extractors[name]):  # no columns (``none``)
                features = Features(extractors[name].schema, dense=np.zeros((len(df), 0), dtype=np.float32))
                row_index = df["row"].to_numpy(dtype=np.int64)
                meta = {**_cache_key(dataset_id, extractors[name]), "extractor": name,
                        "n_rows": len(df), "dropped": [], "seconds": 0.0}
                _save_cache(*_cache_paths(written, name), meta, features, row_index)
                results[name] = (features, row_index)
                todo.remove(name)
        if not todo:
            return results
        known = _read_workloads_file(directory / WORKLOADS_FILE)
        mods, batches = {}, []
        for (shash, target), group in df.groupby(["workload_hash", "target"], sort=False):
            if shash not in mods:
                mods[shash] = _decoded_workload(directory, known, shash, len(group))
            batches += group_batches(len(batches), shash, target, group, batch_size)
        total, done = len(df), 0
        stage = f"features {'+'.join(todo) if len(todo) < 4 else f'{len(todo)} extractors'}"

        def on_done(result: BatchResult) -> None:
            nonlocal done
            done += result.n_rows
            if progress:
                progress(stage, done, total)

        jobs = resolve_jobs(jobs, total)
        started = time.perf_counter()
        replay = Replay(known, {n: extractors[n] for n in todo}, mods=mods)
        batch_results = run_batches(replay, batches, jobs, on_done)
        wall_s = time.perf_counter() - started
        for n in todo:
            parts = [r.features[n] for r in batch_results if r.features[n] is not None]
            dropped = [d for r in batch_results for d in r.dropped[n]]
            if not parts:
                raise CostlabError(
                    f"dataset {directory}: extractor {n!r} produced no features"
                    + (f" (first problem: {dropped[0]})" if dropped else "")
                )
            features = cf.concat_features(parts)
            row_index = np.asarray([row for r in batch_results for row in r.rows[n]], dtype=np.int64)
            meta = {**_cache_key(dataset_id, extractors[n]), "extractor": n,
                    "n_rows": int(len(row_index)), "dropped": dropped,
                    "seconds": round(sum(r.seconds.get(n, 0.0) for r in batch_results), 2),
                    "replay_seconds": round(sum(r.replay_seconds for r in batch_results), 2),
                    "jobs": jobs, "wall_seconds": round(wall_s, 2),
                    "unreplayable": sorted(row for r in batch_results for row in r.unreplayable)}
            _save_cache(*_cache_paths(written, n), meta, features, row_index)
            results[n] = (features, row_index)
    return results


def group_batches(first_index: int, shash: str, target: str, group, batch_size: int) -> list[Batch]:
    """The rows of one workload and target of a dataset (``group``, a DataFrame) as the
    :class:`Batch` es :func:`extract_features` replays, ``batch_size`` rows at most each, numbered
    from ``first_index``."""
    rows, traces, args = (group[c].tolist() for c in ("row", "trace", "args_info"))
    return [Batch(first_index + i, shash, target, rows[start:start + batch_size], traces[start:start + batch_size],
                  args[start:start + batch_size]) for i, start in enumerate(range(0, len(rows), batch_size))]


def positions_of(row_index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in a feature batch (``row_index`` from :func:`dataset_features`) of ``rows``.

    Rows without features are dropped; the result keeps the order of ``rows``.
    """
    lookup = {int(r): i for i, r in enumerate(row_index)}
    return np.asarray([lookup[int(r)] for r in rows if int(r) in lookup], dtype=np.int64)


def finite_or_inf(values) -> np.ndarray:
    """Latencies as float64 with anything non-finite or at the failure marker set to ``inf``."""
    arr = np.asarray(values, dtype=np.float64)
    arr = np.where(np.isfinite(arr) & (arr < 1e9) & (arr >= 0), arr, math.inf)
    return arr
