"""experiments/gpu/slim_tree.sh keeps the measured data out of the device calls and puts it back."""

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "gpu" / "slim_tree.sh"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def sent_files(repo: Path) -> set[str]:
    """What the device tool sends: tracked files and untracked files git does not ignore."""
    listed = git(repo, "ls-files") + git(repo, "ls-files", "--others", "--exclude-standard")
    return set(listed.split())


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "experiments" / "gpu").mkdir(parents=True)
    for script in ("slim_tree.sh", "sent_bytes.sh"):
        shutil.copy(SCRIPT.with_name(script), tmp_path / "experiments" / "gpu" / script)
    for rel in ("experiments/results/suite/db/gemm/database_tuning_record.json",
                "datasets/cpu-v1/records.parquet", "costlab/__init__.py", "experiments/llm.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return tmp_path


def slim(repo: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "experiments/gpu/slim_tree.sh", mode], cwd=repo, capture_output=True, text=True)


def test_on_leaves_data_out_and_off_restores_head(repo):
    before = sent_files(repo)
    on = slim(repo, "on")
    assert on.returncode == 0, on.stderr
    during = sent_files(repo)
    assert "costlab/__init__.py" in during and "experiments/llm.yaml" in during
    assert not any(f.startswith(("experiments/results/", "datasets/")) for f in during), during
    assert (repo / "datasets/cpu-v1/records.parquet").read_text() == "datasets/cpu-v1/records.parquet"

    off = slim(repo, "off")
    assert off.returncode == 0, off.stderr
    assert git(repo, "status", "--porcelain") == ""
    assert sent_files(repo) == before


def test_on_refuses_staged_changes(repo):
    (repo / "costlab" / "__init__.py").write_text("changed")
    git(repo, "add", "costlab/__init__.py")
    on = slim(repo, "on")
    assert on.returncode == 1
    assert "staged changes" in on.stderr
    assert "experiments/results/suite/db/gemm/database_tuning_record.json" in sent_files(repo)
