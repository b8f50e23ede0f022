"""Reading MetaSchedule JSON databases: good records kept, bad lines counted with file:line."""

import gzip
import json
import math
import shutil

import pytest

from costlab.data.database import mean_latency_s, read_database
from costlab.errors import CostlabError

from tests.data.helpers import A100_DIR, make_gemm_db


def _lines(path):
    return (path / "database_tuning_record.json").read_text().splitlines()


def _write(path, lines, trailing_newline=True):
    (path / "database_tuning_record.json").write_text("\n".join(lines) + ("\n" if trailing_newline else ""))


def test_reads_every_record_in_commit_order(gemm_db):
    db = read_database(gemm_db.path)
    assert len(db) == gemm_db.n_records == 12
    assert db.summary.n_skipped == 0 and not db.summary.invalid
    assert [r.line for r in db] == list(range(1, 13))
    assert [r.workload_index for r in db] == gemm_db.workload_of
    for rec, lat in zip(db, gemm_db.latencies):
        if lat is None:
            assert rec.status == "failed" and math.isinf(rec.latency_s) and "1e10" in rec.error
        else:
            assert rec.status == "ok" and rec.latency_s == pytest.approx(lat * (0.99 + 1 + 1.02) / 3)  # mean of 3
            assert rec.run_secs[1] == lat  # full float64 precision, not TVM's float32
    # trial = commit order within the workload
    assert [r.trial for r in db if r.workload_index == 1] == list(range(6))
    assert db.summary.n_ok == 10 and db.summary.n_failed == 2
    assert db.workloads[0].mod["main"] is not None and db.workloads[0].shash.isdigit()
    assert db.records[0].target_json["kind"] == "llvm"
    assert db.meta is None


def test_record_gives_candidate_and_tuning_record(gemm_db):
    db = read_database(gemm_db.path)
    rec = db.records[3]
    cand = rec.measure_candidate()
    assert len(cand.args_info) == 3
    assert str(cand.sch.trace.as_json()[0]) == str(rec.schedule().trace.as_json()[0])
    tr = rec.tuning_record()
    assert len(tr.run_secs) == 3
    assert rec.target().kind.name == "llvm"



def test_records_hold_their_trace_as_text_and_share_one_target(gemm_db):
    """A parsed trace is many small Python lists (the A100 database: 1.4 GB for 116 MB of
    JSON), so a record keeps the trace's compact text, and its records one target dict."""
    db = read_database(gemm_db.path, replay=False)
    for rec, line in zip(db, _lines(gemm_db.path)):
        trace = json.loads(line)[1][0]
        assert isinstance(rec.trace_text, str)
        assert rec.trace_text == json.dumps(trace, separators=(",", ":"))
        assert rec.trace_json == trace
    assert len({id(rec.target_json) for rec in db}) == 1
    assert db.records[0].target_json == json.loads(_lines(gemm_db.path)[0])[1][2]

def test_corrupt_lines_are_skipped_and_counted(gemm_db):
    lines = _lines(gemm_db.path)
    good = json.loads(lines[0])
    bad = list(lines)
    bad[1] = lines[1][: len(lines[1]) // 2]  # truncated line
    bad[2] = "{not json"
    rec = json.loads(lines[3]); rec[0] = 99; bad[3] = json.dumps(rec)  # workload index out of range
    rec = json.loads(lines[4]); rec[1][1] = [float("nan"), 1e-4]; bad[4] = json.dumps(rec)  # NaN -> failed
    rec = json.loads(lines[5]); rec[1][1] = [-1e-4]; bad[5] = json.dumps(rec)  # negative -> failed
    bad[6] = lines[6].replace('"Split"', '"NoSuchInstruction"')  # unknown instruction
    bad[7] = lines[7].replace('["C","main"]', '["nope","main"]')  # block that does not exist
    bad[8] = json.dumps([0, "not a record"])
    bad.append(json.dumps(good)[:-7])  # a last line cut off without newline
    _write(gemm_db.path, bad, trailing_newline=False)

    db = read_database(gemm_db.path)
    s = db.summary
    rfile = str(gemm_db.path / "database_tuning_record.json")
    skipped = {i.line: i.reason for i in s.skipped}
    assert sorted(skipped) == [2, 3, 4, 7, 8, 9, 13]
    assert all(i.path == rfile for i in s.skipped)
    assert "out of range" in skipped[4]
    assert "does not replay" in skipped[7] and "does not replay" in skipped[8]
    assert "not a record" in skipped[2] and "not a record" in skipped[3]
    assert str(s.skipped[0]).startswith(f"{rfile}:2: ")
    # NaN and negative run_secs: kept, marked failed, listed
    assert [i.line for i in s.invalid] == [5, 6]
    kept = {r.line: r for r in db}
    assert sorted(kept) == [1, 5, 6, 10, 11, 12]
    assert kept[5].status == "failed" and "NaN" in kept[5].error and math.isinf(kept[5].latency_s)
    assert kept[6].status == "failed"
    assert s.n_lines == 13 and s.n_kept == 6 and s.n_skipped == 7
    # trial stays the order of measurement: lines 7 and 8 were measured (they only fail to
    # replay now) and count; lines 2, 3, 9 and 13 name no workload, line 4 a wrong one
    counted = [1, 5, 6, 7, 8, 10, 11, 12]
    wl = gemm_db.workload_of
    for line, rec in kept.items():
        assert rec.trial == sum(1 for j in counted if j < line and wl[j - 1] == wl[line - 1])
    d = s.to_dict()
    assert d["n_skipped"] == 7 and d["skipped"][0].startswith(rfile + ":2:")
    assert "skipped" in str(s)


def test_unreadable_workload_line_skips_its_records(gemm_db):
    wfile = gemm_db.path / "database_workload.json"
    wl = wfile.read_text().splitlines()
    wl[1] = json.dumps([wl[1].split('"')[1], "AAAAbroken"])
    wfile.write_text("\n".join(wl) + "\n")
    db = read_database(gemm_db.path)
    assert len(db) == 6 and all(r.workload_index == 0 for r in db)
    assert [str(i).split(": ")[0] for i in db.summary.bad_workloads] == [f"{wfile}:2"]
    assert db.summary.n_skipped == 6 and "unreadable" in db.summary.skipped[0].reason


def test_no_replay_keeps_bad_trace(gemm_db):
    lines = _lines(gemm_db.path)
    lines[0] = lines[0].replace('"Split"', '"NoSuchInstruction"')
    _write(gemm_db.path, lines)
    assert len(read_database(gemm_db.path)) == 11
    assert len(read_database(gemm_db.path, replay=False)) == 12


def test_gzip_database_and_truncated_stream(tmp_path):
    made = make_gemm_db(tmp_path / "gz", sizes=(32,), per_workload=4, failed=(), gz=True,
                        sidecar={"workload_name": "gemm", "workload_params": {"M": 32}, "workload_key": "gemm(M=32)"})
    assert not (made.path / "database_tuning_record.json").exists()
    seen = []
    db = read_database(made.path, progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert len(db) == 4 and db.summary.record_path.endswith(".gz")
    assert db.meta["workload_key"] == "gemm(M=32)"
    assert seen and seen[-1][1] == seen[-1][2] == 4
    # cut the gzip stream in the middle of its data
    gz = made.path / "database_tuning_record.json.gz"
    data = gzip.compress(gzip.decompress(gz.read_bytes()))
    gz.write_bytes(data[: len(data) * 2 // 3])
    db = read_database(made.path)
    assert len(db) < 4
    assert db.summary.skipped and "ends early" in db.summary.skipped[-1].reason


def test_explicit_file_pair(gemm_db):
    db = read_database((gemm_db.path / "database_workload.json", gemm_db.path / "database_tuning_record.json"))
    assert len(db) == 12
    with pytest.raises(CostlabError, match="missing"):
        read_database((gemm_db.path / "nope.json", gemm_db.path / "database_tuning_record.json"))


def test_missing_files_are_clear_errors(gemm_db, tmp_path):
    with pytest.raises(CostlabError, match="does not exist"):
        read_database(tmp_path / "absent")
    (gemm_db.path / "database_workload.json").unlink()
    with pytest.raises(CostlabError, match="workload file database_workload.json"):
        read_database(gemm_db.path)
    other = tmp_path / "only_workloads"
    shutil.copytree(gemm_db.path, other)
    (other / "database_workload.json").write_text("")
    (other / "database_tuning_record.json").unlink()
    with pytest.raises(CostlabError, match="record file"):
        read_database(other)


def test_a_work_dir_given_as_a_database_names_the_databases_below_it(gemm_db, tmp_path):
    """`dataset build --db runs/quickstart` (the work_dir, not a session) said only that the
    workload file was missing (found by a new-user audit)."""
    work_dir = tmp_path / "runs"
    for model in ("random", "tvm-xgb"):
        shutil.copytree(gemm_db.path, work_dir / "gemm_M128" / model / "seed0")
    with pytest.raises(CostlabError) as err:
        read_database(work_dir)
    assert str(err.value).endswith(
        "is missing; 2 folder(s) below it are databases (a costlab run work_dir holds one per session: "
        f"<workload>/<model>/seed<k>), for example {work_dir / 'gemm_M128' / 'random' / 'seed0'}: give each of "
        "them as a database")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CostlabError) as err:  # a folder with none below it: the plain message
        read_database(tmp_path / "empty")
    assert str(err.value).endswith("(or database_workload.json.gz) is missing")
    assert len(read_database(work_dir / "gemm_M128" / "random" / "seed0")) == 12


def test_bad_sidecar_is_an_error(gemm_db):
    (gemm_db.path / "costlab.json").write_text("{oops")
    with pytest.raises(CostlabError, match="costlab.json"):
        read_database(gemm_db.path)


def test_mean_latency():
    assert mean_latency_s([3.0, 1.0, 5.0]) == 3.0
    assert mean_latency_s([1.0, 2.0]) == 1.5
    assert math.isinf(mean_latency_s(None)) and math.isinf(mean_latency_s([1e10]))
    assert math.isinf(mean_latency_s([1.0, 0.0])) and math.isinf(mean_latency_s([1.0, float("nan")]))


def _a100_head(tmp_path, n):
    """A database of the real A100 workloads and the first ``n`` records (outside the repo)."""
    db_dir = tmp_path / "a100"
    db_dir.mkdir()
    shutil.copy(A100_DIR / "database_workload.json.gz", db_dir)
    with gzip.open(A100_DIR / "database_tuning_record.json.gz", "rt") as f:
        head = [next(f) for _ in range(n)]
    (db_dir / "database_tuning_record.json").write_text("".join(head))
    return db_dir


needs_a100 = pytest.mark.skipif(not (A100_DIR / "database_workload.json.gz").is_file(),
                                reason="A100 dataset not present (../shared/datasets/a100-resnet34 or COSTLAB_A100_DB)")


@needs_a100
def test_a100_first_records_parse(tmp_path):
    """The real A100 database (first 200 records) parses; failures are kept."""
    db = read_database(_a100_head(tmp_path, 200), replay=False)
    assert db.summary.n_workloads == 16
    assert len(db) == 200 and db.summary.n_skipped == 0
    assert db.records[0].target_json["arch"] == "sm_80"
    assert db.summary.n_ok + db.summary.n_failed == 200
    assert 0 < db.records[0].latency_s < 1e-3
    assert all(len(r.run_secs) == 3 for r in db if r.ok)


@needs_a100
@pytest.mark.slow
def test_a100_first_records_replay(tmp_path):
    """Every one of the first 200 A100 traces replays (3 s idle, a minute under load)."""
    db = read_database(_a100_head(tmp_path, 200))
    assert len(db) == 200 and db.summary.n_skipped == 0
    cand = db.records[0].measure_candidate()
    assert len(cand.args_info) == 4


def test_stored_run_secs_are_classified_with_the_reason():
    from costlab.data.database import classify_run_secs

    assert classify_run_secs([1e-3, 2e-3]) == ("ok", None, False)
    assert classify_run_secs([1e10])[0::2] == ("failed", False)  # MetaSchedule's failure marker
    for bad in ([0.0], [-1e-4], [float("nan")], ["1e-3"], 1e-3):
        status, error, invalid = classify_run_secs(bad)
        assert (status, invalid) == ("failed", True) and repr(bad) in error


@pytest.mark.parametrize("target, kind", [("cpu", "llvm"), ("llvm", "llvm"), ("h100", "cuda")])
def test_make_context_takes_a_preset_name_and_tvms_own_string(target, kind):
    """A preset such as 'cpu' was given to TVM's Target, which refused it with its traceback."""
    from costlab.data import make_context
    from costlab.workloads import build_workload

    assert make_context(build_workload("gemm", {"M": 16, "N": 16, "K": 16}), target).target.kind.name == kind
