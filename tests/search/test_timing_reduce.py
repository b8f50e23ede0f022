"""measure.reduce: min: costlab's runner hands on each trial's fastest timing and keeps them all."""

import json

import pytest
import tvm
from tvm import te
from tvm.s_tir.meta_schedule.builder import BuilderInput
from tvm.s_tir.meta_schedule.runner import RunnerInput
from tvm.s_tir.meta_schedule.arg_info import ArgInfo

from costlab.config import MeasureSpec, RunnerSpec
from costlab.search.builder import PersistentBuilder
from costlab.search.runner import make_runner
from costlab.search.timing import PhaseTimer, TimedRunner
from costlab.targets import make_target


@pytest.fixture(scope="module")
def built_kernel():
    a = te.placeholder((4096,), "float32", name="A")
    b = te.compute((4096,), lambda i: a[i] * 2.0, name="B")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b])})
    target = make_target("cpu")
    builder = PersistentBuilder(max_workers=1, nvcc=False)
    try:
        (result,) = builder.build([BuilderInput(mod, target)])
        assert result.error_msg is None, result.error_msg
        yield RunnerInput(result.artifact_path, "cpu", ArgInfo.from_prim_func(mod["main"]))
    finally:
        builder.shutdown()  # the kernel is removed with it


@pytest.mark.parametrize("reduce", ["mean", "min"])
def test_min_records_the_fastest_of_the_repeats_and_keeps_every_timing(built_kernel, tmp_path, reduce):
    repeats_file = tmp_path / "run_secs_repeats.jsonl"
    runner = make_runner(RunnerSpec(), MeasureSpec(number=1, repeat=4, min_repeat_ms=0, reduce=reduce),
                         repeats_file=repeats_file)
    timed = TimedRunner(runner, PhaseTimer())  # as a session wraps it
    results = [f.result() for f in timed.run([built_kernel, built_kernel])]
    assert all(r.error_msg is None for r in results)
    if reduce == "mean":  # the runner's timings, as they came, and no side file
        assert [len(r.run_secs) for r in results] == [4, 4]
        assert not repeats_file.exists()
        return
    kept = [json.loads(line) for line in repeats_file.read_text().splitlines()]
    assert len(kept) == 2
    for result, line in zip(results, kept):
        assert len(line["run_secs"]) == 4 and all(v > 0 for v in line["run_secs"])
        assert [float(v) for v in result.run_secs] == [min(line["run_secs"])] == [line["min_s"]]


def test_a_failed_trial_keeps_its_error_and_no_timing(tmp_path):
    repeats_file = tmp_path / "run_secs_repeats.jsonl"
    runner = make_runner(RunnerSpec(), MeasureSpec(number=1, repeat=3, min_repeat_ms=0, reduce="min"),
                         repeats_file=repeats_file)
    broken = RunnerInput(str(tmp_path / "no-such-artifact.tar"), "cpu", [])
    (result,) = [f.result() for f in TimedRunner(runner, PhaseTimer()).run([broken])]
    assert result.error_msg and not result.run_secs
    assert not repeats_file.exists()
