"""The tuning record file of a session, read in commit order, and repaired after a crash.

MetaSchedule's ``JSONDatabase`` appends one JSON line per measured candidate. A
``kill -9`` while a line is written leaves a truncated last line, which TVM refuses
to load. :func:`repair_record_file` moves any unreadable line to a side file
(nothing is deleted) so the database loads again. :func:`repair_workload_file` does the
same for the workload file, written once when a session starts.
"""

from __future__ import annotations

import json
from pathlib import Path

from costlab.data.database import mean_latency_s

RECORD_FILE = "database_tuning_record.json"
WORKLOAD_FILE = "database_workload.json"
REJECTED_SUFFIX = ".rejected-lines"


def _valid_record(line: str) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(row, list) and len(row) == 2 and isinstance(row[1], list) and len(row[1]) >= 2


def _valid_workload(line: str) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row)


def _sorted_lines(path: Path, valid=_valid_record) -> tuple[str, list[str], list[str]]:
    """A database file's text, and its non-blank lines split into readable and unreadable."""
    text = path.read_text()
    good, bad = [], []
    for line in text.split("\n"):
        if line.strip():
            (good if valid(line) else bad).append(line)
    return text, good, bad


def count_records(db_dir: Path) -> int:
    """How many readable records the session's record file holds (0 when there is none)."""
    path = Path(db_dir) / RECORD_FILE
    return len(_sorted_lines(path)[1]) if path.exists() else 0


def _set_aside_unreadable(path: Path, valid, extra: list[str] = ()) -> int:
    """Move unreadable lines of ``path`` to ``*.rejected-lines`` (appending ``extra``); return how many."""
    if not path.exists():
        return 0
    text, good, bad = _sorted_lines(path, valid)
    added = [line for line in extra if line not in good]
    if not bad and not added and (text == "" or text.endswith("\n")):
        return 0
    good += added
    if bad:
        with open(str(path) + REJECTED_SUFFIX, "a") as side:
            for line in bad:
                side.write(line + "\n")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text("".join(line + "\n" for line in good))
    tmp.replace(path)
    return len(bad)


def repair_record_file(db_dir: Path) -> int:
    """Move unreadable lines of the record file to ``*.rejected-lines``; return how many."""
    return _set_aside_unreadable(Path(db_dir) / RECORD_FILE, _valid_record)


def repair_workload_file(db_dir: Path, mod) -> int:
    """Move unreadable lines of the workload file aside; return how many.

    When records remain but no readable workload does (the one line a session writes
    was cut), that line is written again from ``mod``: MetaSchedule's own serialization
    of the tuned module, byte for byte what it wrote, so the records still refer to it.
    """
    path = Path(db_dir) / WORKLOAD_FILE
    extra = []
    if path.exists() and count_records(db_dir) and not _sorted_lines(path, _valid_workload)[1]:
        from tvm.s_tir import meta_schedule as ms

        extra = [json.dumps(ms.database.Workload(mod).as_json(), separators=(",", ":"))]
    return _set_aside_unreadable(path, _valid_workload, extra)


def records_in_commit_order(db_dir: Path) -> list:
    """Each record line of the database (``[workload index, record JSON]``), in the order measured."""
    path = Path(db_dir) / RECORD_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latencies_in_commit_order(db_dir: Path) -> list[float]:
    """Mean measured seconds of each record, in the order measured; ``inf`` if failed."""
    return [mean_latency_s(record[1][1]) for record in records_in_commit_order(db_dir)]
