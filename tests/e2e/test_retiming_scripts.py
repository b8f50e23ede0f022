"""The re-timing benchmarks under experiments/ run on a real (tiny) tuned experiment."""

import importlib.util
import json
import math
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


@pytest.mark.slow
def test_retime_finals_times_each_runs_best_kernel_again(tuned):
    tmp, config = tuned
    _script("retime_finals.py", config, "--repeats", 2, "--out", tmp / "retimed.md", cwd=tmp)
    per_run = json.loads((tmp / "retimed.json").read_text())
    assert sorted(r["model"] for r in per_run) == ["random", "tvm-xgb"]
    for r in per_run:
        assert len(r["retimed_us"]) == 2 and all(0 < us < 1e6 for us in r["retimed_us"])
        # the run's recorded best, read back from its database
        db = (tmp / "runs").glob(f"gemm*/{r['model']}/seed0/database_tuning_record.json")
        latencies = [statistics.median(rec[1][1]) * 1e6 for line in next(db).read_text().splitlines()
                     if (rec := json.loads(line))[1][1]]
        assert r["recorded_us"] == pytest.approx(min(latencies), rel=1e-6)
    table = (tmp / "retimed.md").read_text()
    assert "| gemm(M=32,N=32,K=32,dtype=float32) | random | 1 |" in table


def test_retime_finals_reports_from_a_previous_runs_json_without_measuring(tmp_path):
    config = tiny_config(tmp_path)  # its work_dir holds no runs: measuring would find nothing to re-time
    gemm = "gemm(M=32,N=32,K=32,dtype=float32)"
    medians = {"tvm-xgb": [100.0, 110.0, 120.0], "random": [200.0, 210.0, 220.0]}  # each run's re-timed median
    (tmp_path / "timed.json").write_text(json.dumps([
        {"experiment": "tiny", "workload": gemm, "model": model, "seed": seed, "recorded_us": us * 0.8,
         "retimed_us": [us * 0.9, us, us * 1.3]}
        for model, runs in medians.items() for seed, us in enumerate(runs)]))
    proc = _script("retime_finals.py", config, "--from-json", "timed.json", "--out", "again.md", cwd=tmp_path)
    assert "best kernels" not in proc.stdout  # nothing measured (no run to measure under work_dir either)
    assert not (tmp_path / "again.json").exists()  # nor the timings written again
    report = (tmp_path / "again.md").read_text()
    assert f"retime_finals.py {config} --from-json timed.json`" in report and "timed 3 times" in report
    # random's median over seeds of the re-timed medians, its seeds' range, over its recorded finals' median
    # (168), over tvm-xgb's (110); the rank test's p with all three seeds apart: 2 of the 20 splits
    assert f"| {gemm} | random | 3 | 168.0 (160.0–176.0) | 210.0 (200.0–220.0) | 1.25 | 1.91 | 0.100 | 0.100 |" in report


def test_retime_finals_keeps_a_pooled_long_run_apart_from_the_baselines_seeds(tmp_path):
    """cpu-min5-reference's 800-trial tvm-xgb run was pooled as a fourth seed of the 200-trial
    tvm-xgb runs: it moved their median, ratios and p-values."""
    config = tiny_config(tmp_path)
    long = tiny_config(tmp_path, name="tiny-long", models=("tvm-xgb",), trials=32, seeds=(3,))
    gemm = "gemm(M=32,N=32,K=32,dtype=float32)"
    runs = [("tiny", "tvm-xgb", 0, 100.0), ("tiny", "tvm-xgb", 1, 110.0), ("tiny", "tvm-xgb", 2, 120.0),
            ("tiny", "random", 0, 200.0), ("tiny", "random", 1, 210.0), ("tiny", "random", 2, 220.0),
            ("tiny-long", "tvm-xgb", 3, 50.0)]
    (tmp_path / "timed.json").write_text(json.dumps([
        {"experiment": e, "workload": gemm, "model": m, "seed": seed, "recorded_us": us, "retimed_us": [us] * 3}
        for e, m, seed, us in runs]))
    _script("retime_finals.py", config, "--pool", long, "--from-json", "timed.json", "--out", "again.md",
            cwd=tmp_path)
    report = (tmp_path / "again.md").read_text()
    assert f"| {gemm} | tvm-xgb | 3 | 110.0 (100.0–120.0) | 110.0 (100.0–120.0) | 1.00 | - |" in report
    assert f"| {gemm} | random | 3 | 210.0 (200.0–220.0) | 210.0 (200.0–220.0) | 1.00 | 1.91 | 0.100 |" in report
    assert f"| {gemm} | tvm-xgb (tiny-long, 32 trials) | 1 | 50.0 | 50.0 | 1.00 | 0.45 (not separable) |" in report


@pytest.fixture(scope="module")
def more(tuned):
    """A second experiment on the same workload and MLflow store: random on another seed, and xgb."""
    tmp, _ = tuned
    config = tiny_config(tmp, name="tiny-more", models=("random", "xgb"), seeds=(1,), trials=TRIALS,
                         work_dir=str(tmp / "runs-more"))
    run_cli("run", config, cwd=tmp)
    return config


@pytest.mark.slow
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


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_held_curve_scores_the_kernel_held_at_each_trial():
    curves = _load_script("retime_curves")
    curve = curves.held_curve([2, 4, 5], [30.0, 12.0, 20.0], budget=6)  # the third kernel re-timed slower
    assert curve.tolist() == [math.inf, 30.0, 30.0, 12.0, 20.0, 20.0]
    assert curves.trials_within(curve, 11.5, 0.95) == 4  # 12 <= 11.5 / 0.95
    assert curves.trials_within(curve, 10.0, 0.95) == 7  # never: budget + 1
    assert curves.auc(curve, 10.0) == pytest.approx((0 + 1 / 3 + 1 / 3 + 10 / 12 + 0.5 + 0.5) / 6)


def _retimed_runs(medians_us: dict[int, float]) -> list[dict]:
    """One GEMM run of a retime_curves.py JSON whose kernel held at trial T timed MEDIANS_US[T] (3 timings)."""
    return [{"experiment": "e", "workload": "gemm", "model": "m", "seed": 0, "budget": 10,
             "held": [{"trial": t, "recorded_us": us, "retimed_us": [us * 0.9, us, us * 1.2]}
                      for t, us in medians_us.items()]}]


def test_retimings_agree_pairs_the_kernels_both_retimings_hold(tmp_path):
    agree = _load_script("retimings_agree")
    first = {1: 100.0, 2: 20.0, 3: 12.0, 4: 11.0, 5: 10.0}
    second = {1: 110.0, 2: 22.0, 3: 11.0, 4: 13.2, 5: 10.5, 6: 9.0}  # 3 and 4 swap; trial 6 only here
    (row,) = agree.agreement(agree.kernel_medians(_retimed_runs(first)), agree.kernel_medians(_retimed_runs(second)))
    assert (row["kernels"], row["near"]) == (5, 3)  # 12, 11 and 10 are within 30% of 10
    assert row["tau_all"] == pytest.approx(0.8)  # one discordant pair of 10
    assert row["tau_near"] == pytest.approx(1 / 3)  # of the near-best's 3 pairs, 2 agree and 1 swaps
    assert row["median_ratio"] == pytest.approx(1.1)
    other = {**_retimed_runs({1: 12.5, 2: 11.0})[0], "model": "n"}  # its best, 11, is 1.1x m's 10
    best = agree.best_to_reference(agree.kernel_medians(_retimed_runs(first) + [other]))
    assert best == {("gemm", "m"): [pytest.approx(1.0)], ("gemm", "n"): [pytest.approx(1.1)]}
    for name, runs in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps(_retimed_runs(runs)))
    _script("retimings_agree.py", "a.json", "b.json", "--out", "agree.md", cwd=tmp_path)
    said = (tmp_path / "agree.md").read_text()
    assert "| gemm | 5 | 3 | 0.80 |" in said and "| gemm | m | 1.000 (1.000–1.000; 1 runs) |" in said
    (tmp_path / "bad.json").write_text("{}")
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / "retimings_agree.py"), "a.json", "bad.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and "bad.json: not a retime_curves.py JSON" in proc.stderr


def _recorded_latencies_us(runs, model):
    """Each record's latency (µs, inf when it failed) of MODEL's one run under RUNS, in commit order."""
    db = next(runs.glob(f"gemm*/{model}/seed*/database_tuning_record.json"))
    return [statistics.median(rec[1][1]) * 1e6 if (rec := json.loads(line))[1][1] else math.inf
            for line in db.read_text().splitlines()]


@pytest.mark.slow
def test_retime_curves_retimes_every_kernel_a_run_held(tuned):
    tmp, config = tuned
    proc = _script("retime_curves.py", config, "--repeats", 2, "--out", tmp / "curves.md", cwd=tmp)
    per_run = json.loads((tmp / "curves.json").read_text())
    assert sorted(r["model"] for r in per_run) == ["random", "tvm-xgb"]
    for r in per_run:
        recorded = _recorded_latencies_us(tmp / "runs", r["model"])[:TRIALS]
        lowered = [trial for trial in range(1, TRIALS + 1)
                   if recorded[trial - 1] < min(recorded[:trial - 1], default=math.inf)]
        assert [h["trial"] for h in r["held"]] == lowered
        for h in r["held"]:
            assert h["recorded_us"] == pytest.approx(recorded[h["trial"] - 1], rel=1e-6)
            assert len(h["retimed_us"]) == 2 and all(0 < us < 1e6 for us in h["retimed_us"])
    report = (tmp / "curves.md").read_text()
    assert report in proc.stdout
    medians = [statistics.median(h["retimed_us"]) for r in per_run for h in r["held"]]
    assert f"| {min(medians):.1f} (" in report  # the re-timed reference: the lowest re-timed median
    # each run's re-timed T95, recomputed from the timings written beside the report
    for r in per_run:
        curve = [math.inf] * TRIALS
        for h in r["held"]:
            curve[h["trial"] - 1:] = [statistics.median(h["retimed_us"])] * (TRIALS - h["trial"] + 1)
        t95 = next((i + 1 for i, us in enumerate(curve) if us <= min(medians) / 0.95 * (1 + 1e-12)), TRIALS + 1)
        row = next(line for line in report.splitlines()
                   if line.startswith(f"| gemm(M=32,N=32,K=32,dtype=float32) | {r['model']} | 1 |"))
        shown = row.split(" | ")[5]
        assert shown == (f">{TRIALS}" if t95 > TRIALS else str(t95))
        own = next(line for line in report[report.index("## Each run"):].splitlines()
                   if line.startswith(f"| gemm(M=32,N=32,K=32,dtype=float32) | {r['model']} | {r['seed']} | "
                                      f"{r['experiment']} |"))
        assert own.split(" | ")[5] == shown  # each run's own T95, in the per-run table

    # the analysis again from the JSON, without measuring: the same tables
    again = _script("retime_curves.py", config, "--from-json", tmp / "curves.json", "--out", tmp / "again.md",
                    cwd=tmp)
    assert "round 1/" not in again.stdout  # nothing measured
    body = lambda text: text[text.index("## References"):]  # noqa: E731
    assert body((tmp / "again.md").read_text()) == body(report)

    # two re-timings pooled: each kernel's timings from both (here the same JSON twice, so the
    # same medians, and the same T95s, from twice the timings)
    _script("retime_curves.py", config, "--from-json", tmp / "curves.json", "--from-json", tmp / "curves.json",
            "--out", tmp / "pooled.md", cwd=tmp)
    pooled = (tmp / "pooled.md").read_text()
    assert "timed 4 times" in pooled and f"--from-json {tmp / 'curves.json'} --from-json" in pooled
    t95 = lambda text: text[text.index("## T95"):]  # noqa: E731
    assert t95(pooled) == t95(report)


@pytest.mark.slow
def test_retime_curves_times_with_the_fastest_of_repeats(tuned):
    """``measure.reduce: min`` wraps TVM's runner; each round's fresh worker is still shut down."""
    tmp, config = tuned
    _script("retime_curves.py", config, "measure.repeat=2", "measure.reduce=min", "--repeats", 2,
            "--out", tmp / "curves-min.md", cwd=tmp)
    per_run = json.loads((tmp / "curves-min.json").read_text())
    assert sorted(r["model"] for r in per_run) == ["random", "tvm-xgb"]
    assert all(len(h["retimed_us"]) == 2 for r in per_run for h in r["held"])


@pytest.mark.slow
def test_noise_floor_retimes_the_fastest_records(tuned):
    tmp, config = tuned
    proc = _script("noise_floor.py", config, "--repeats", 4, "--top", 2, "--out", tmp / "noise.md", cwd=tmp)
    rows = [line for line in (tmp / "noise.md").read_text().splitlines() if line.startswith("| gemm")]
    assert len(rows) == 2 and rows[0] in proc.stdout
    recorded = [float(row.split("|")[3]) for row in rows]
    assert recorded == sorted(recorded)  # the fastest record first


@pytest.mark.slow
def test_repeat_statistics_reads_each_calls_repeats_four_ways(tuned):
    tmp, config = tuned
    proc = _script("repeat_statistics.py", config, "--repeat", 3, "--calls", 3, "--top", 1, "--out",
                   tmp / "repeats.md", cwd=tmp)
    (row,) = [line for line in (tmp / "repeats.md").read_text().splitlines() if line.startswith("| gemm")]
    assert row in proc.stdout
    cells = [float(c) for c in row.strip("|").split("|")[2:]]  # recorded, then median and CV per statistic
    first, mean, median, fastest = cells[1], cells[3], cells[5], cells[7]
    assert all(v > 0 for v in cells[1::2]) and all(0 <= cv < 10 for cv in cells[2::2])
    assert fastest <= min(first, mean, median)  # the median over calls of each call's fastest timing


@pytest.mark.slow
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


@pytest.mark.slow
def test_cross_machine_times_the_other_experiments_kernels_for_each_target(tuned, more):
    tmp, config = tuned
    generic = '{"kind": "llvm", "num-cores": 1}'
    proc = _script("cross_machine.py", config, "--other", more, "--target", "cpu", "--target", generic,
                   "--top", 3, "--sample", 4, "--repeats", 2, "--out", tmp / "cross.md", cwd=tmp)
    (entry,) = json.loads((tmp / "cross.json").read_text())
    recorded = sorted(us for model in ("random", "xgb")
                      for us in _recorded_latencies_us(tmp / "runs-more", model) if us < math.inf)
    assert entry["records"] == 2 * TRIALS
    kernels = [k["recorded_us"] for k in entry["kernels"]]
    assert len(kernels) == 3 + 4
    assert kernels[:3] == pytest.approx(recorded[:3], rel=1e-6)  # the fastest first, then a spread of the rest
    assert min(kernels[3:]) >= max(kernels[:3]) and max(kernels[3:]) == pytest.approx(recorded[-1], rel=1e-6)
    for k in entry["kernels"]:
        assert [len(timings) for timings in k["retimed_us"]] == [2, 2]
        assert all(0 < us < 1e6 for timings in k["retimed_us"] for us in timings)
    report = (tmp / "cross.md").read_text()
    assert report in proc.stdout
    rows = [line.split(" | ")[1] for line in report.splitlines() if line.startswith("| gemm")]
    from tvm.target.codegen import llvm_get_system_cpu
    assert rows[:2] == [llvm_get_system_cpu(), "llvm"] and len(rows) == 3  # one row per target, then the pair

    again = _script("cross_machine.py", config, "--other", more, "--from-json", tmp / "cross.json",
                    "--out", tmp / "cross-again.md", cwd=tmp)
    assert "round 1/" not in again.stdout  # nothing measured
    body = lambda text: text[text.index("| workload"):]  # noqa: E731
    assert body((tmp / "cross-again.md").read_text()) == body(report)



@pytest.mark.parametrize("script", ["retime_finals.py", "retime_curves.py", "cross_machine.py"])
def test_from_json_names_the_file_it_cannot_read(tmp_path, script):
    tmp, config = tmp_path, tiny_config(tmp_path)  # nothing tuned: the JSON is read before any run is looked for
    extra = ["--other", str(config)] if script == "cross_machine.py" else []
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / script), str(config), *extra,
                           "--from-json", str(tmp / "missing.json")], cwd=tmp, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert f"error: --from-json {tmp / 'missing.json'}" in proc.stderr and "Traceback" not in proc.stderr


def test_from_json_pools_only_retimings_of_the_same_kernels(tmp_path):
    tmp, config = tmp_path, tiny_config(tmp_path)
    run = {"experiment": "e", "workload": "w", "model": "m", "seed": 0, "budget": 8,
           "held": [{"trial": 1, "recorded_us": 10.0, "retimed_us": [11.0, 12.0]}]}
    (tmp / "a.json").write_text(json.dumps([run]))
    run["held"][0]["trial"] = 2
    (tmp / "b.json").write_text(json.dumps([run]))
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / "retime_curves.py"), str(config),
                           "--from-json", str(tmp / "a.json"), "--from-json", str(tmp / "b.json")],
                          cwd=tmp, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"error: --from-json {tmp / 'b.json'}: field $[0].held[0].trial is 2, not 1" in proc.stderr


@pytest.mark.parametrize("target", ['{"kind": "nosuchkind"}', "nosuchpreset"])
def test_cross_machine_refuses_an_invalid_target_before_building(tmp_path, target):
    tmp, config = tmp_path, tiny_config(tmp_path)  # nothing tuned: the target is checked before any run is read
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / "cross_machine.py"), str(config),
                           "--other", str(config), "--target", target], cwd=tmp, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "error: --target:" in proc.stderr and "nosuch" in proc.stderr and "Traceback" not in proc.stderr
    assert "built" not in proc.stdout  # refused before the first workload's kernels were built


@pytest.mark.slow
def test_clamped_batches_reads_a_real_sessions_metaschedule_log(tuned):
    tmp, _ = tuned
    proc = _script("clamped_batches.py", tmp / "runs", cwd=tmp)
    # tvm-xgb (TVM's own model) scores above 0; random is a costlab model handing ordered scores: not read
    assert "| tvm-xgb | gemm | 1 (0) | 0 of 1 | 0 of 1 | 0 of 1 |" in proc.stdout
    assert "| random |" not in proc.stdout
