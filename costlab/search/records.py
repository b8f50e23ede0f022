"""The tuning record file of a session, read in commit order, and repaired after a crash.

MetaSchedule's ``JSONDatabase`` appends one JSON line per measured candidate. A
``kill -9`` while a line is written leaves a truncated last line, which TVM refuses
to load. :func:`repair_record_file` moves any unreadable line to a side file
(nothing is deleted) so the database loads again.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from costlab.models import FAILED_LATENCY_S

RECORD_FILE = "database_tuning_record.json"
WORKLOAD_FILE = "database_workload.json"
REJECTED_SUFFIX = ".rejected-lines"


def _valid_record(line: str) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(row, list) and len(row) == 2 and isinstance(row[1], list) and len(row[1]) >= 2


def _sorted_lines(path: Path) -> tuple[str, list[str], list[str]]:
    """The record file's text, and its non-blank lines split into readable and unreadable."""
    text = path.read_text()
    good, bad = [], []
    for line in text.split("\n"):
        if line.strip():
            (good if _valid_record(line) else bad).append(line)
    return text, good, bad


def count_records(db_dir: Path) -> int:
    """How many readable records the session's record file holds (0 when there is none)."""
    path = Path(db_dir) / RECORD_FILE
    return len(_sorted_lines(path)[1]) if path.exists() else 0


def repair_record_file(db_dir: Path) -> int:
    """Move unreadable lines of the record file to ``*.rejected-lines``; return how many."""
    path = Path(db_dir) / RECORD_FILE
    if not path.exists():
        return 0
    text, good, bad = _sorted_lines(path)
    if not bad and (text == "" or text.endswith("\n")):
        return 0
    with open(str(path) + REJECTED_SUFFIX, "a") as side:
        for line in bad:
            side.write(line + "\n")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text("".join(line + "\n" for line in good))
    tmp.replace(path)
    return len(bad)


def latencies_in_commit_order(db_dir: Path) -> list[float]:
    """Mean measured seconds of each record, in the order measured; ``inf`` if failed."""
    path = Path(db_dir) / RECORD_FILE
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        run_secs = json.loads(line)[1][1]
        secs = [float(s) for s in run_secs or []]
        mean = sum(secs) / len(secs) if secs else math.inf
        out.append(mean if 0 < mean < FAILED_LATENCY_S and math.isfinite(mean) else math.inf)
    return out
