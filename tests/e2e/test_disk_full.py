"""A run whose work_dir fills up, on a real full filesystem (a small tmpfs).

MetaSchedule's JSON database ignores a failed write: on a full disk it returned for each record
and wrote none, so a batch could be lost without a word. The run now checks each batch reached
the disk, stops with one message, and the same command resumes once there is space.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow

FREE_KB = 52  # room for the session's first files and a few records, not for its first batch


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs holding a filler file that leaves ``FREE_KB`` free; the filler's path."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root with CAP_SYS_ADMIN needed): {mounted.stderr.strip()}")
    filler = mount_point / "filler"
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1K", f"count={3072 - FREE_KB}"],
                       check=True, capture_output=True)
        yield mount_point, filler
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _records(work_dir: Path, seed: int) -> list[str]:
    files = list(work_dir.rglob(f"seed{seed}/database_tuning_record.json"))
    return files[0].read_text().splitlines() if files else []


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


def test_a_full_work_dir_stops_the_run_keeps_the_records_and_the_same_command_resumes(tmp_path, small_disk):
    from mlflow.tracking import MlflowClient

    mount_point, filler = small_disk
    trials = 32
    config = tiny_config(tmp_path, name="full", models=("random",), trials=trials, seeds=(0, 1),
                         work_dir=str(mount_point / "runs"))
    proc = run_cli("run", config, cwd=tmp_path, check=False)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, said[-3000:]
    assert "The run stopped there" in said and "run the same command to resume" in said, said[-3000:]
    assert "Traceback" not in said and "Logging error" not in said, said[-3000:]
    kept = _records(mount_point / "runs", 0)
    assert len(kept) < trials
    assert not _records(mount_point / "runs", 1)  # the next combination was not tried on the full disk
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("full").experiment_id])
    assert {r.info.status for r in runs} == {"KILLED"}  # resumable, not a failed combination

    filler.unlink()
    run_cli("run", config, cwd=tmp_path)
    for seed in (0, 1):
        lines = _records(mount_point / "runs", seed)
        assert len(lines) == trials
        assert all(json.loads(line) for line in lines)
    # the complete lines kept on the full disk are the resumed session's first (a cut one is set aside)
    whole = [line for line in kept if _parses(line)]
    assert _records(mount_point / "runs", 0)[:len(whole)] == whole
