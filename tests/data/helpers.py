"""Small MetaSchedule databases built with TVM itself (nothing is tuned or measured).

``make_gemm_db(directory, ...)`` writes a real ``JSONDatabase`` holding sampled
schedules of small gemms with made-up latencies, and returns a description of what it
wrote, so tests can corrupt copies of it.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

A100_DIR = Path(os.environ.get("COSTLAB_A100_DB", Path(__file__).resolve().parents[2] / "../shared/datasets/a100-resnet34"))


@dataclass
class MadeDb:
    path: Path
    n_records: int
    latencies: list  # per record in commit order; None for failures
    workload_of: list  # per record: workload index


def sample_gemm_schedule(mod, seed: int, block_name: str = "C"):
    """A traced schedule of the gemm block ``C`` with random tiles (no TuneContext needed)."""
    from tvm.s_tir.schedule import Schedule

    sch = Schedule(mod, seed=seed + 1)
    block = sch.get_sblock(block_name)
    i, j, k = sch.get_loops(block)
    fi = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
    fj = sch.sample_perfect_tile(j, n=2, max_innermost_factor=16)
    fk = sch.sample_perfect_tile(k, n=2, max_innermost_factor=16)
    i0, i1 = sch.split(i, fi)
    j0, j1 = sch.split(j, fj)
    k0, k1 = sch.split(k, fk)
    sch.reorder(i0, j0, k0, i1, k1, j1)
    sch.parallel(i0)
    sch.vectorize(j1)
    unroll = sch.sample_categorical([0, 16, 64], [1 / 3, 1 / 3, 1 / 3])
    sch.annotate(i0, "pragma_auto_unroll_max_step", unroll)
    return sch


def make_gemm_db(directory, sizes=(32, 64), per_workload=6, failed=(2,), gz=False, sidecar=None) -> MadeDb:
    """A JSONDatabase with one gemm workload per size and ``per_workload`` records each.

    Records are committed interleaved by workload. Record ``r`` of a workload has latency
    ``(r + 1) * 1e-4 * size / 32`` seconds, except the indices in ``failed`` (stored as
    ``[1e10]``, MetaSchedule's failure marker).
    """
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    from costlab.workloads import build_workload

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    wfile, rfile = directory / "database_workload.json", directory / "database_tuning_record.json"
    db = ms.database.JSONDatabase(path_workload=str(wfile), path_tuning_record=str(rfile))
    target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
    mods = [build_workload("gemm", {"M": s, "N": s, "K": s}) for s in sizes]
    workloads = [db.commit_workload(mod) for mod in mods]
    latencies, workload_of = [], []
    for r in range(per_workload):
        for w, (mod, size) in enumerate(zip(mods, sizes)):
            sch = sample_gemm_schedule(mod, seed=100 * w + r)
            lat = None if r in failed else (r + 1) * 1e-4 * size / 32
            run_secs = [1e10] if lat is None else [lat * 0.99, lat, lat * 1.02]
            db.commit_tuning_record(ms.database.TuningRecord(
                sch.trace, workloads[w], run_secs=run_secs, target=target,
                args_info=ArgInfo.from_prim_func(mod["main"]),
            ))
            latencies.append(lat)
            workload_of.append(w)
    del db
    if sidecar is not None:
        (directory / "costlab.json").write_text(json.dumps(sidecar))
    if gz:
        for f in (wfile, rfile):
            with open(f, "rb") as src, gzip.open(str(f) + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            f.unlink()
    return MadeDb(directory, len(latencies), latencies, workload_of)
