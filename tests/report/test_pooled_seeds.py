"""experiments/pooled_seeds.py on hand-logged runs: what it refuses to pool."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.report.test_compare import _log_child

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "pooled_seeds.py"


def _pooled_seeds():
    spec = importlib.util.spec_from_file_location("pooled_seeds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _experiment(uri: str, name: str, runs: list) -> None:
    from costlab.tracking import ExperimentTracker

    tracker = ExperimentTracker(uri, name)
    tracker.start_parent(name, {}, f"name: {name}\n")
    for model, seed, latencies, budget in runs:
        _log_child(tracker, model, seed, latencies, budget)


def test_pooling_refuses_a_seed_in_both_experiments_and_two_budgets(tmp_path, capsys):
    main = _pooled_seeds().main
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _experiment(uri, "a", [("tvm-xgb", 0, [50, 40], 2), ("lgbm", 0, [30, 25], 2)])
    _experiment(uri, "b", [("tvm-xgb", 1, [55, 45], 2), ("lgbm", 1, [35, 25], 2)])
    out = tmp_path / "pooled.md"
    assert main(["a", "b", "--tracking-uri", uri, "--out", str(out)]) == 0
    assert "| gemm(M=8) | lgbm | 2 | 0: 2, 1: 2 |" in out.read_text()  # seeds 0 and 1 pooled

    _experiment(uri, "c", [("tvm-xgb", 0, [50, 40], 2), ("lgbm", 0, [30, 25], 2)])  # seed 0 again
    assert main(["a", "c", "--tracking-uri", uri]) == 2
    assert "seed 0 of lgbm on gemm(M=8) is in both experiments" in capsys.readouterr().err

    _experiment(uri, "d", [("tvm-xgb", 5, [50, 40, 30], 3), ("lgbm", 5, [30, 25, 25], 3)])
    assert main(["a", "d", "--tracking-uri", uri]) == 2
    assert "gemm(M=8) was tuned with budgets of 2 and 3 trials" in capsys.readouterr().err
