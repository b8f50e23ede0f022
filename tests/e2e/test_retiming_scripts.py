"""The re-timing benchmarks under experiments/ run on a real (tiny) tuned experiment."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.helpers import run_cli, tiny_config

REPO = Path(__file__).resolve().parents[2]
TRIALS = 8


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("retime")
    config = tiny_config(tmp, trials=TRIALS)
    run_cli("run", config, cwd=tmp)
    return tmp, config


def _script(name, *args, cwd):
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / name), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def test_retime_finals_times_each_runs_best_kernel_again(tuned):
    tmp, config = tuned
    _script("retime_finals.py", config, "--repeats", 3, "--out", tmp / "retimed.md", cwd=tmp)
    per_run = json.loads((tmp / "retimed.json").read_text())
    assert sorted(r["model"] for r in per_run) == ["random", "tvm-xgb"]
    for r in per_run:
        assert len(r["retimed_us"]) == 3 and all(0 < us < 1e6 for us in r["retimed_us"])
        # the run's recorded best, read back from its database
        db = (tmp / "runs").glob(f"gemm*/{r['model']}/seed0/database_tuning_record.json")
        latencies = [statistics.median(rec[1][1]) * 1e6 for line in next(db).read_text().splitlines()
                     if (rec := json.loads(line))[1][1]]
        assert r["recorded_us"] == pytest.approx(min(latencies), rel=1e-6)
    table = (tmp / "retimed.md").read_text()
    assert "| gemm(M=32,N=32,K=32,dtype=float32) | random | 1 |" in table


@pytest.fixture(scope="module")
def more(tuned):
    """A second experiment on the same workload and MLflow store: random on another seed, and xgb."""
    tmp, _ = tuned
    config = tiny_config(tmp, name="tiny-more", models=("random", "xgb"), seeds=(1,), trials=TRIALS,
                         work_dir=str(tmp / "runs-more"))
    run_cli("run", config, cwd=tmp)
    return config


def test_retime_finals_pools_another_experiments_runs_in_the_same_rounds(tuned, more):
    tmp, config = tuned
    _script("retime_finals.py", config, "--pool", more, "--repeats", 2, "--out", tmp / "pooled.md", cwd=tmp)
    per_run = json.loads((tmp / "pooled.json").read_text())
    assert sorted((r["experiment"], r["model"], r["seed"]) for r in per_run) == [
        ("tiny", "random", 0), ("tiny", "tvm-xgb", 0), ("tiny-more", "random", 1)]
    table = (tmp / "pooled.md").read_text()
    assert "# tiny and tiny-more: final kernels re-timed" in table and f"--pool {more} --repeats 2" in table
    assert "| gemm(M=32,N=32,K=32,dtype=float32) | random | 2 |" in table

    timed_otherwise = tiny_config(tmp, name="tiny-other", trials=TRIALS, work_dir=str(tmp / "runs-more"),
                                  measure={"number": 3, "repeat": 1, "min_repeat_ms": 1})
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / "retime_finals.py"), str(config),
                           "--pool", str(timed_otherwise)], cwd=tmp, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert f"{timed_otherwise}: field measure" in proc.stderr and "do not pool" in proc.stderr


def test_noise_floor_retimes_the_fastest_records(tuned):
    tmp, config = tuned
    proc = _script("noise_floor.py", config, "--repeats", 4, "--top", 2, "--out", tmp / "noise.md", cwd=tmp)
    rows = [line for line in (tmp / "noise.md").read_text().splitlines() if line.startswith("| gemm")]
    assert len(rows) == 2 and rows[0] in proc.stdout
    recorded = [float(row.split("|")[3]) for row in rows]
    assert recorded == sorted(recorded)  # the fastest record first


def test_pooled_seeds_pools_the_models_both_ran_and_those_asked_for(tuned, more):
    tmp, _ = tuned
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    _script("pooled_seeds.py", "tiny", "tiny-more", "--tracking-uri", uri, "--out", tmp / "seeds.md",
            "--plots", tmp / "seeds", cwd=tmp)
    rows = [line.split(" | ")[1:3] for line in (tmp / "seeds.md").read_text().splitlines() if line.startswith("| gemm")]
    assert rows == [["random", "2"], ["tvm-xgb", "1"]]  # random ran in both; the baseline comes along
    assert len(list((tmp / "seeds").glob("*.png"))) == 1
    _script("pooled_seeds.py", "tiny", "tiny-more", "--tracking-uri", uri, "--also", "xgb", "--out",
            tmp / "seeds-also.md", cwd=tmp)
    text = (tmp / "seeds-also.md").read_text()
    rows = [line.split(" | ")[1:3] for line in text.splitlines() if line.startswith("| gemm")]
    assert rows == [["random", "2"], ["tvm-xgb", "1"], ["xgb", "1"]]
    assert "pooled_seeds.py tiny tiny-more --also xgb --out" in text
