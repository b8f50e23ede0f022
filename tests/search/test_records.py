"""After a crash, a session's database files are repaired so TVM loads them again; nothing is deleted."""

import pytest

from costlab.search import records
from tests.data.helpers import make_gemm_db

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _load(path):
    from tvm.s_tir import meta_schedule as ms

    return ms.database.JSONDatabase(work_dir=str(path), module_equality="structural")


def test_a_cut_workload_line_is_set_aside_and_written_again_from_the_module(tmp_path):
    from costlab.workloads import build_workload

    made = make_gemm_db(tmp_path / "db", sizes=(32,), per_workload=4, failed=())
    workload_file = made.path / records.WORKLOAD_FILE
    intact = workload_file.read_text()
    workload_file.write_text(intact[: len(intact) // 2])  # killed while the session's one workload was written
    with pytest.raises(RuntimeError, match="Unexpected end of string"):  # what TVM says of the cut line
        _load(made.path)

    mod = build_workload("gemm", {"M": 32, "N": 32, "K": 32})
    assert records.repair_workload_file(made.path, mod) == 1
    assert workload_file.read_text() == intact  # MetaSchedule's own line, byte for byte
    side = (made.path / (records.WORKLOAD_FILE + records.REJECTED_SUFFIX)).read_text()
    assert side == intact[: len(intact) // 2] + "\n"  # the cut line is kept aside
    assert len(_load(made.path).get_all_tuning_records()) == 4
    assert records.repair_workload_file(made.path, mod) == 0  # nothing more to do
    assert workload_file.read_text() == intact


def test_a_cut_last_record_is_set_aside_and_the_rest_kept_in_order(tmp_path):
    made = make_gemm_db(tmp_path / "db", sizes=(32,), per_workload=4, failed=())
    record_file = made.path / records.RECORD_FILE
    lines = record_file.read_text().splitlines()
    measured = records.latencies_in_commit_order(made.path)
    record_file.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # killed while the 4th was written
    assert records.count_records(made.path) == 3
    assert records.repair_record_file(made.path) == 1
    assert record_file.read_text().splitlines() == lines[:3]
    assert (made.path / (records.RECORD_FILE + records.REJECTED_SUFFIX)).read_text() == lines[3][:40] + "\n"
    assert len(_load(made.path).get_all_tuning_records()) == 3
    assert records.latencies_in_commit_order(made.path) == measured[:3]
