"""experiments/clamped_batches.py counts the batches MetaSchedule chose with every score at 0."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The format TVM 0.27's evolutionary search logs (from a real session's logs/, trimmed to 4 per line)
TIED = """2026-12-02 12:30:56 [INFO] [evolutionary_search.cc:673] Scores of the best 4 candidates:
[1 : 4]:\t0.0000  0.0000  0.0000  0.0000
2026-12-02 12:30:56 [INFO] [evolutionary_search.cc:752] Got 4 candidate(s) with evolutionary search
"""
PARTLY = """2026-12-02 12:31:24 [INFO] [evolutionary_search.cc:673] Scores of the best 4 candidates:
[1 : 4]:\t3.2189  3.1756  0.0000  0.0000
"""
CLEAR = """2026-12-02 12:31:44 [INFO] [evolutionary_search.cc:673] Scores of the best 4 candidates:
[1 : 4]:\t4.6345  4.6147  4.6026  4.4766
"""


def _session(root: Path, label: str, seed: int, log: str, **cost_model):
    out = root / "gemm" / label / f"seed{seed}"
    (out / "logs").mkdir(parents=True)
    setup = {"workload_name": "gemm", "seed": seed, "cost_model": {"name": "ensemble", "label": label, **cost_model}}
    (out / "costlab.json").write_text(json.dumps(setup))
    (out / "logs" / "tvm.s_tir.meta_schedule.logging.task_0_main.log").write_text(log)


def _run(*args, cwd):
    return subprocess.run([sys.executable, str(REPO / "experiments" / "clamped_batches.py"), *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_tied_and_partly_tied_batches_of_raw_score_sessions(tmp_path):
    root = tmp_path / "db"
    _session(root, "warm", 0, TIED + PARTLY + CLEAR)  # saved before tvm_scores: raw
    _session(root, "warm", 1, CLEAR + TIED, tvm_scores="raw")
    _session(root, "warm-ordered", 0, TIED, tvm_scores="ordered")  # 0.0000 is a tiny score there: not read
    done = _run(root, "--out", tmp_path / "out.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "out.md").read_text()
    assert "| warm | gemm | 2 (0, 1) | 1 of 2 | 2 of 5 | 1 of 5 |" in table
    assert "warm-ordered" not in table


def test_no_raw_session_with_a_log_is_an_error_naming_the_folder(tmp_path):
    _session(tmp_path / "db", "warm", 0, TIED, tvm_scores="ordered")
    done = _run(tmp_path / "db", cwd=tmp_path)
    assert done.returncode != 0 and "no session with a MetaSchedule log and raw scores" in done.stderr
    assert str(tmp_path / "db") in done.stderr
