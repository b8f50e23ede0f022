"""Features extracted by worker processes: the same cache as one process writes, and nothing
lost when a worker cannot do its share."""

import json
import logging
import os
import sys
import textwrap

import numpy as np
import pytest

from costlab.data.dataset import build_dataset, extract_features
from costlab.data.replay_jobs import JOBS_VARIABLE, default_jobs
from costlab.errors import CostlabError
from costlab.features import EXTRACTORS, FeatureExtractor, Features

PID_EXTRACTOR = """
import os
import time
import numpy as np
from costlab.features import FeatureExtractor, Features

class ProcessId(FeatureExtractor):
    name = "_toy_pid"
    version = 1
    kind = "dense"
    feature_names = ["pid"]
    delay_s = 0.0

    def extract(self, context, candidates):
        time.sleep(self.delay_s)
        return Features(self.schema, dense=np.full((len(candidates), 1), os.getpid(), dtype=np.float32))
"""


@pytest.fixture
def dataset(gemm_db, tmp_path):
    """12 records, the first of which no longer replays."""
    rfile = gemm_db.path / "database_tuning_record.json"
    lines = rfile.read_text().splitlines()
    lines[0] = lines[0].replace('"Split"', '"NoSuchInstruction"')
    rfile.write_text("\n".join(lines) + "\n")
    build_dataset([gemm_db.path], tmp_path / "ds", replay=False)
    return tmp_path / "ds"


@pytest.fixture
def registered():
    names = []

    def register(cls):
        EXTRACTORS.register(cls.name)(cls)
        names.append(cls.name)

    yield register
    for name in names:
        EXTRACTORS._factories.pop(name, None)


def _cache(ds, name):
    return json.loads((ds / "features" / f"{name}.json").read_text())


def _pids(features) -> set[int]:
    return set(features.dense[:, 0].astype(np.int64).tolist())


def test_workers_write_the_cache_one_process_writes(dataset, tmp_path, toy_extractors):
    import shutil

    alone = tmp_path / "alone"
    shutil.copytree(dataset, alone)
    seen = []
    pooled = extract_features(dataset, ["_toy_dense", "_toy_graph"], batch_size=2, jobs=2,
                              progress=lambda stage, done, total: seen.append((done, total)))
    single = extract_features(alone, ["_toy_dense", "_toy_graph"], batch_size=2, jobs=1)
    for name in ("_toy_dense", "_toy_graph"):
        (a, rows_a), (b, rows_b) = pooled[name], single[name]
        assert rows_a.tolist() == rows_b.tolist() and sorted(rows_a.tolist()) == list(range(1, 12))
        if a.kind == "dense":
            assert np.array_equal(a.dense, b.dense)
        else:
            for field in ("node_features", "edge_index", "edge_type", "batch"):
                assert np.array_equal(getattr(a.graphs, field), getattr(b.graphs, field))
        assert _cache(dataset, name)["dropped"] == _cache(alone, name)["dropped"]
        assert _cache(dataset, name)["dropped"][0].startswith("row 0: trace does not replay")
        assert _cache(dataset, name)["jobs"] == 2 and _cache(alone, name)["jobs"] == 1
    assert seen[-1] == (12, 12) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_the_work_is_done_in_other_processes(dataset, tmp_path, registered, monkeypatch):
    (tmp_path / "pid_module.py").write_text(textwrap.dedent(PID_EXTRACTOR))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # workers start here, so they import pid_module too
    from pid_module import ProcessId

    registered(ProcessId)
    feats, _ = extract_features(dataset, ["_toy_pid"], batch_size=2, jobs=2)["_toy_pid"]
    assert os.getpid() not in _pids(feats) and 1 <= len(_pids(feats)) <= 2


def test_an_extractor_a_worker_cannot_import_is_run_here(dataset, tmp_path, registered, monkeypatch, caplog):
    module_dir = tmp_path / "only_here"
    module_dir.mkdir()
    (module_dir / "pid_module_here.py").write_text(textwrap.dedent(PID_EXTRACTOR))
    monkeypatch.syspath_prepend(str(module_dir))  # not the workers': they cannot unpickle the class
    sys.modules.pop("pid_module_here", None)
    from pid_module_here import ProcessId

    registered(ProcessId)
    with caplog.at_level(logging.WARNING, logger="costlab.data.replay_jobs"):
        feats, rows = extract_features(dataset, ["_toy_pid"], batch_size=2, jobs=2)["_toy_pid"]
    assert _pids(feats) == {os.getpid()} and sorted(rows.tolist()) == list(range(1, 12))
    assert "could not do its batches" in caplog.text and "pid_module_here" in caplog.text


def test_the_batches_of_a_worker_that_dies_are_extracted_here(dataset, registered, caplog):
    parent = os.getpid()

    class DiesElsewhere(FeatureExtractor):  # a local class: cloudpickle sends it by value
        name = "_toy_dies"
        version = 1
        kind = "dense"
        feature_names = ["pid"]

        def extract(self, context, candidates):
            if os.getpid() != parent:
                os._exit(3)
            return Features(self.schema, dense=np.full((len(candidates), 1), os.getpid(), dtype=np.float32))

    registered(DiesElsewhere)
    with caplog.at_level(logging.WARNING, logger="costlab.data.replay_jobs"):
        feats, rows = extract_features(dataset, ["_toy_dies"], batch_size=2, jobs=2)["_toy_dies"]
    assert _pids(feats) == {parent} and sorted(rows.tolist()) == list(range(1, 12))
    assert "could not do its batches" in caplog.text


def test_the_number_of_workers_is_checked(dataset, gemm_db, tmp_path, toy_extractors, monkeypatch):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(CostlabError, match=r"jobs: .* not a number of processes"):
            extract_features(dataset, ["_toy_dense"], jobs=bad)
    with pytest.raises(CostlabError, match=r"jobs: 0 is not a number of processes"):
        build_dataset([gemm_db.path], tmp_path / "not-built", jobs=0)
    assert not (tmp_path / "not-built").exists()
    monkeypatch.setenv(JOBS_VARIABLE, "two")
    with pytest.raises(CostlabError, match=f"{JOBS_VARIABLE}='two': not a number of processes"):
        extract_features(dataset, ["_toy_dense"])
    monkeypatch.setenv(JOBS_VARIABLE, "3")
    assert default_jobs(10) == 3
    monkeypatch.delenv(JOBS_VARIABLE)
    assert default_jobs(10) == 1  # a few rows: starting a worker costs more than it saves


def _rewrite_record(db_path, index, change):
    rfile = db_path / "database_tuning_record.json"
    lines = rfile.read_text().splitlines()
    record = json.loads(lines[index])
    change(record)
    lines[index] = json.dumps(record)
    rfile.write_text("\n".join(lines) + "\n")


def test_a_build_replayed_by_workers_is_the_one_process_build(gemm_db, tmp_path, monkeypatch):
    import pandas as pd

    import costlab.data.replay_jobs as replay_jobs
    from costlab.data.database import read_database

    def unknown_instruction(record):
        record[1][0][0][0][0] = "NoSuchInstruction"

    def unknown_instruction_and_nan_timing(record):
        unknown_instruction(record)
        record[1][1] = [float("nan")]

    _rewrite_record(gemm_db.path, 0, unknown_instruction)
    _rewrite_record(gemm_db.path, 5, unknown_instruction_and_nan_timing)
    _rewrite_record(gemm_db.path, 7, lambda record: record[1].__setitem__(1, [-1.0]))  # kept, marked failed
    by_workers = []
    on_workers = replay_jobs._run_on_workers
    monkeypatch.setattr(replay_jobs, "_run_on_workers",
                        lambda *a: (by_workers.append(r.index) or r for r in on_workers(*a)))
    pooled = build_dataset([gemm_db.path], tmp_path / "pooled", jobs=2)
    assert sorted(by_workers) == [0, 1]  # one batch per workload, both done by workers
    alone = build_dataset([gemm_db.path], tmp_path / "alone", jobs=1)
    assert pd.read_parquet(tmp_path / "pooled" / "records.parquet").equals(
        pd.read_parquet(tmp_path / "alone" / "records.parquet"))
    assert pooled.sources == alone.sources and pooled.n_rows == alone.n_rows == 10
    skipped = pooled.sources[0]["skipped"]
    assert [s.split(": ")[0].rsplit(":", 1)[1] for s in skipped] == ["1", "6"]
    assert all("trace does not replay" in s for s in skipped)
    assert [s.split(": ")[0].rsplit(":", 1)[1] for s in pooled.sources[0]["invalid"]] == ["8"]
    db = read_database(gemm_db.path, jobs=2)
    assert [r.line for r in db.records] == [r.line for r in read_database(gemm_db.path, jobs=1).records]
    assert (db.summary.n_ok, db.summary.n_failed) == (alone.n_ok, alone.n_failed)


SLOW_EXTRACTION = """
import sys
from costlab.data.dataset import extract_features
from costlab.features import EXTRACTORS
from pid_module import ProcessId

class Slow(ProcessId):
    name = "_toy_slow"
    delay_s = 2.0

EXTRACTORS.register(Slow.name)(Slow)
extract_features(sys.argv[1], [Slow.name], batch_size=1, jobs=2,
                 progress=lambda stage, done, total: print(done, flush=True))
print("finished", flush=True)
"""


def test_ctrl_c_ends_the_extraction_and_its_workers(dataset, tmp_path):
    import signal
    import subprocess
    import time

    import psutil

    script = tmp_path / "slow_extraction.py"
    script.write_text(SLOW_EXTRACTION)
    (tmp_path / "pid_module.py").write_text(textwrap.dedent(PID_EXTRACTOR))
    proc = subprocess.Popen([sys.executable, str(script), str(dataset)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=tmp_path)  # the workers import pid_module too
    try:
        assert proc.stdout.readline().strip() == "1"  # the workers are extracting
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert workers
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        started = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0 and "finished" not in out and "KeyboardInterrupt" in err
    assert took < 20  # not the 11 batches' 22 s of extraction
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert "slow_extraction.py" in err  # the script's own traceback
