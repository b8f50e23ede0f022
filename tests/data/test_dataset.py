"""Databases to a parquet dataset, and the per-extractor feature cache."""

import json
import math

import numpy as np
import pytest

from costlab.data.dataset import (
    COLUMNS,
    build_dataset,
    dataset_features,
    extract_features,
    load_dataset,
    load_metadata,
    positions_of,
)
from costlab.errors import CostlabError
from costlab.features import select_features

from tests.data.helpers import make_gemm_db
from tests.e2e.helpers import without_write_override


@pytest.fixture
def two_dbs(gemm_db, tmp_path):
    """The shared gemm database (two workloads, with a corrupt line) and one with a sidecar."""
    rfile = gemm_db.path / "database_tuning_record.json"
    lines = rfile.read_text().splitlines()
    lines[3] = "garbage"
    rfile.write_text("\n".join(lines) + "\n")
    side = make_gemm_db(tmp_path / "side", sizes=(48,), per_workload=3, failed=(),
                        sidecar={"workload_name": "gemm", "workload_params": {"M": 48, "N": 48, "K": 48},
                                 "workload_key": "gemm(M=48,N=48,K=48,dtype=float32)"})
    return gemm_db, side


def test_build_dataset_rows_and_metadata(two_dbs, tmp_path):
    db, side = two_dbs
    calls = []
    summary = build_dataset([db.path, side.path], tmp_path / "ds",
                            progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert calls
    assert summary.n_rows == 11 + 3 and summary.n_skipped == 1
    assert summary.n_failed == 2 and summary.n_ok == 12
    assert summary.n_tasks == 3 and summary.n_workloads == 3

    df = load_dataset(tmp_path / "ds")
    assert list(df.columns) == COLUMNS
    assert list(df["row"]) == list(range(14))
    assert set(df["status"]) == {"ok", "failed"}
    failed = df[df["status"] == "failed"]
    assert failed["latency_s"].map(math.isinf).all() and failed["error"].notna().all()
    ok = df[df["status"] == "ok"]
    assert np.allclose(ok["latency_s"], ok["run_secs"].map(lambda v: float(np.mean(v))), rtol=1e-12, atol=0)
    assert ok["run_secs"].map(len).eq(3).all()

    # readable keys: sidecar key for the costlab db, name[shapes]#hash otherwise
    keys = sorted(set(df["workload_key"]))
    assert "gemm(M=48,N=48,K=48,dtype=float32)" in keys
    assert any(k.startswith("C[32x32,32x32,32x32]#") for k in keys)
    side_rows = df[df["workload_key"].str.startswith("gemm(")]
    assert set(side_rows["family"]) == {"matmul"}  # from the sidecar's name
    assert json.loads(side_rows["workload_params"].iloc[0]) == {"M": 48, "N": 48, "K": 48}
    assert set(df.loc[~df.index.isin(side_rows.index), "family"]) == {"contraction"}  # block "C"
    assert df["task_key"].str.endswith("@ llvm 1 core").all()  # TVM gives an llvm target num-cores 1
    assert df["target_kind"].eq("llvm").all()
    assert json.loads(df["target"].iloc[0])["kind"] == "llvm"
    assert json.loads(df["trace"].iloc[0])[0][0][0] == "GetSBlock"
    # source: file:line in commit order; trial counts per workload
    first = df[df["db"] == str(db.path)]
    assert first["line"].tolist() == [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12]
    assert first["source"].iloc[0] == f"{db.path}/database_tuning_record.json:1"
    assert sorted(first.groupby("workload_key")["trial"].max().tolist()) == [4, 5]

    meta = load_metadata(tmp_path / "ds")
    assert meta["n_rows"] == 14 and meta["n_skipped"] == 1
    assert meta["sources"][0]["skipped"][0].startswith(f"{db.path}/database_tuning_record.json:4: ")
    assert meta["dataset_id"]
    readme = (tmp_path / "ds" / "README.md").read_text()
    assert "database_tuning_record.json:4" in readme


def test_load_dataset_errors(tmp_path):
    with pytest.raises(CostlabError, match="records.parquet"):
        load_dataset(tmp_path)


def test_load_dataset_reads_only_the_columns_asked_for(gemm_db, tmp_path):
    build_dataset([gemm_db.path], tmp_path / "ds")
    df = load_dataset(tmp_path / "ds", columns=["row", "latency_s", "task_key"])
    assert list(df.columns) == ["row", "latency_s", "task_key"] and len(df) == 12
    assert list(load_dataset(tmp_path / "ds").columns) == COLUMNS
    with pytest.raises(CostlabError, match=r"records.parquet lacks column\(s\) nope"):
        load_dataset(tmp_path / "ds", columns=["row", "nope"])


def test_feature_cache_dense(gemm_db, tmp_path, toy_extractors):
    dense_cls, _ = toy_extractors
    build_dataset([gemm_db.path], tmp_path / "ds")
    seen = []
    feats, rows = dataset_features(tmp_path / "ds", "_toy_dense", batch_size=4,
                                   progress=lambda s, d, t: seen.append((d, t)))
    assert feats.dense.shape == (12, 3) and feats.dense.dtype == np.float32
    assert sorted(rows.tolist()) == list(range(12))
    assert seen[-1] == (12, 12)
    assert (feats.dense[:, 2] == 1).all()  # the context carries the record's target
    calls = dense_cls.calls
    again, rows2 = dataset_features(tmp_path / "ds", "_toy_dense")
    assert dense_cls.calls == calls  # from the cache
    np.testing.assert_array_equal(again.dense, feats.dense)
    np.testing.assert_array_equal(rows2, rows)
    meta = json.loads((tmp_path / "ds" / "features" / "_toy_dense.json").read_text())
    assert meta["schema"]["names"] == ["n_insts", "n_decisions", "target_cores"] and meta["dropped"] == []

    dense_cls.version = 2  # a schema change invalidates the cache
    try:
        dataset_features(tmp_path / "ds", "_toy_dense")
        assert dense_cls.calls > calls
    finally:
        dense_cls.version = 1
    calls = dense_cls.calls
    dataset_features(tmp_path / "ds", "_toy_dense", refresh=True)
    assert dense_cls.calls > calls

    calls = dense_cls.calls
    dense_cls.cache_revision = 1  # values changed, the schema (and saved models) not: only the cache renews
    try:
        dataset_features(tmp_path / "ds", "_toy_dense")
        assert dense_cls.calls > calls
        assert json.loads((tmp_path / "ds" / "features" / "_toy_dense.json").read_text())["cache_revision"] == 1
        calls = dense_cls.calls
        dataset_features(tmp_path / "ds", "_toy_dense")
        assert dense_cls.calls == calls  # the renewed cache is reused
    finally:
        dense_cls.cache_revision = 0


def test_feature_cache_graph_and_take(gemm_db, tmp_path, toy_extractors):
    build_dataset([gemm_db.path], tmp_path / "ds")
    feats, rows = dataset_features(tmp_path / "ds", "_toy_graph", batch_size=5)
    assert feats.kind == "graph" and feats.graphs.num_graphs == 12
    cached, rows2 = dataset_features(tmp_path / "ds", "_toy_graph")
    np.testing.assert_array_equal(rows, rows2)
    for name in ("node_features", "edge_index", "edge_type", "batch"):
        np.testing.assert_array_equal(getattr(cached.graphs, name), getattr(feats.graphs, name))

    pos = np.array([7, 2, 11, 0])
    picked = select_features(feats, pos)
    assert picked.graphs.num_graphs == 4
    for i, p in enumerate(pos):
        np.testing.assert_array_equal(picked.graphs.node_features[picked.graphs.batch == i],
                                      feats.graphs.node_features[feats.graphs.batch == p])
    np.testing.assert_array_equal(positions_of(rows, rows[pos]), pos)


def test_feature_rows_without_replay_are_dropped(gemm_db, tmp_path, toy_extractors):
    rfile = gemm_db.path / "database_tuning_record.json"
    lines = rfile.read_text().splitlines()
    lines[0] = lines[0].replace('"Split"', '"NoSuchInstruction"')
    rfile.write_text("\n".join(lines) + "\n")
    build_dataset([gemm_db.path], tmp_path / "ds", replay=False)  # keeps the bad line
    feats, rows = dataset_features(tmp_path / "ds", "_toy_dense")
    assert len(feats) == 11 and 0 not in rows.tolist()
    meta = json.loads((tmp_path / "ds" / "features" / "_toy_dense.json").read_text())
    assert meta["dropped"][0].startswith("row 0:")


def test_several_extractors_replay_once(gemm_db, tmp_path, toy_extractors, monkeypatch):
    import costlab.data.database as db_mod

    build_dataset([gemm_db.path], tmp_path / "ds")
    replays = []
    original = db_mod.make_measure_candidate
    monkeypatch.setattr(db_mod, "make_measure_candidate", lambda *a: replays.append(1) or original(*a))
    out = extract_features(tmp_path / "ds", ["_toy_dense", "_toy_graph", "none"])
    assert len(replays) == 12
    assert len(out["_toy_dense"][0]) == len(out["_toy_graph"][0]) == len(out["none"][0]) == 12
    assert out["none"][0].dense.shape == (12, 0)
    extract_features(tmp_path / "ds", ["_toy_dense", "_toy_graph"])  # all cached now
    assert len(replays) == 12


def _counting_replays(monkeypatch) -> list:
    import costlab.data.database as db_mod

    replays, original = [], db_mod.replay_trace
    monkeypatch.setattr(db_mod, "replay_trace", lambda *a: replays.append(1) or original(*a))
    return replays


def _same_dataset_and_caches(ds, ref, names) -> None:
    assert (ds / "records.parquet").read_bytes() == (ref / "records.parquet").read_bytes()
    assert load_metadata(ds)["sources"] == load_metadata(ref)["sources"]
    assert load_metadata(ds)["traces_checked"] is load_metadata(ref)["traces_checked"] is True
    for name in names:
        (feats, rows), (ref_feats, ref_rows) = dataset_features(ds, name), dataset_features(ref, name)
        np.testing.assert_array_equal(rows, ref_rows)
        for array in (("dense",) if feats.kind == "dense" else ("node_features", "edge_index", "batch")):
            np.testing.assert_array_equal(getattr(feats.graphs if feats.kind == "graph" else feats, array),
                                          getattr(ref_feats.graphs if feats.kind == "graph" else ref_feats, array))
        meta, ref_meta = (json.loads((d / "features" / f"{name}.json").read_text()) for d in (ds, ref))
        assert meta["dropped"] == ref_meta["dropped"]
        assert meta.get("unreplayable") == ([] if name != "none" else None)  # ``none`` replays nothing


@pytest.mark.parametrize("bad_trace", [False, True])
def test_a_build_with_features_replays_each_trace_once_and_gives_the_checked_builds_dataset(
        gemm_db, tmp_path, toy_extractors, monkeypatch, bad_trace):
    """The build's replay check and the first extraction each replayed every trace (the A100
    database: 168 s, then 249 s for per_store, on two workers). With features, the extraction is
    the check; a trace that does not replay makes the build check and extract again."""
    names = ["_toy_dense", "_toy_graph", "none"]
    if bad_trace:
        rfile = gemm_db.path / "database_tuning_record.json"
        lines = rfile.read_text().splitlines()
        lines[0] = lines[0].replace('"Split"', '"NoSuchInstruction"')
        rfile.write_text("\n".join(lines) + "\n")
    build_dataset([gemm_db.path], tmp_path / "ref")
    extract_features(tmp_path / "ref", names)
    replays = _counting_replays(monkeypatch)
    summary = build_dataset([gemm_db.path], tmp_path / "ds", features=names)
    assert summary.n_rows == (11 if bad_trace else 12)
    assert len(replays) == (12 + 12 + 11 if bad_trace else 12)  # unchecked extraction; check; extraction
    _same_dataset_and_caches(tmp_path / "ds", tmp_path / "ref", names)
    assert len(replays) == (35 if bad_trace else 12)  # the caches are read, nothing replayed


def test_dataset_build_with_features_says_what_it_cached(gemm_db, tmp_path):
    from typer.testing import CliRunner

    from costlab.cli import app

    done = CliRunner().invoke(app, ["dataset", "build", "--db", str(gemm_db.path), "--out", str(tmp_path / "ds"),
                                    "--features", "per_store", "--features", "trace"])
    assert done.exit_code == 0, done.output
    assert "features per_store: 12 of 12 rows, cached" in done.output
    assert "features trace: 12 of 12 rows, cached" in done.output
    for name in ("per_store", "trace"):
        assert json.loads((tmp_path / "ds" / "features" / f"{name}.json").read_text())["n_rows"] == 12


def test_a_build_whose_extraction_finds_no_trace_that_replays_is_refused_as_a_checked_one(gemm_db, tmp_path,
                                                                                           toy_extractors):
    rfile = gemm_db.path / "database_tuning_record.json"
    rfile.write_text(rfile.read_text().replace('"Split"', '"NoSuchInstruction"'))
    with pytest.raises(CostlabError) as checked:
        build_dataset([gemm_db.path], tmp_path / "ref")
    with pytest.raises(CostlabError) as with_features:
        build_dataset([gemm_db.path], tmp_path / "ds", features=["_toy_dense"])
    assert "no record could be read" in str(checked.value)
    assert str(with_features.value) == f"{checked.value} (the dataset written unchecked for the extraction was removed)"
    left = sorted(str(p.relative_to(tmp_path / "ds")) for p in (tmp_path / "ds").rglob("*"))
    assert not (tmp_path / "ref").exists() and left == ["features", "features/.lock"]  # no dataset, no cache


def test_a_build_names_an_unknown_extractor_before_any_work(gemm_db, tmp_path):
    with pytest.raises(CostlabError, match="unknown feature extractor 'nope'"):
        build_dataset([gemm_db.path], tmp_path / "ds", features=["nope"])
    assert not (tmp_path / "ds").exists()
    from typer.testing import CliRunner

    from costlab.cli import app

    done = CliRunner().invoke(app, ["dataset", "build", "--db", str(gemm_db.path), "--out", str(tmp_path / "ds"),
                                    "--features", "per_store", "--features", "nope"])
    assert str(done.exception).startswith("--features nope: unknown feature extractor 'nope'"), done.output
    assert not (tmp_path / "ds").exists()


def test_a_database_cut_short_or_without_a_readable_record_stops_the_build(gemm_db, tmp_path):
    """Building without it would lose its records without a word: nothing is written, and the
    error names the database and the line."""
    import gzip

    cut = make_gemm_db(tmp_path / "cut", sizes=(32,), per_workload=4, failed=(), gz=True)
    gz = cut.path / "database_tuning_record.json.gz"
    data = gzip.compress(gzip.decompress(gz.read_bytes()))
    gz.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(CostlabError, match=rf"database {cut.path}: {gz}:\d+: file ends early or is corrupt .*"
                                           r"nothing was written \(repair that file, or leave the database out\)"):
        build_dataset([gemm_db.path, cut.path], tmp_path / "ds")
    assert not (tmp_path / "ds").exists()

    empty = make_gemm_db(tmp_path / "empty", sizes=(32,), per_workload=2, failed=())
    (empty.path / "database_tuning_record.json").write_text("garbage\n{}\n")
    with pytest.raises(CostlabError, match=rf"database {empty.path}: no record could be read from its 2 record "
                                           rf"line\(s\) \(first: {empty.path}/database_tuning_record.json:1: .*\); "
                                           r"nothing was written"):
        build_dataset([empty.path], tmp_path / "ds")
    assert not (tmp_path / "ds").exists()

    # a session killed before its first trial leaves an empty record file: it adds nothing
    (empty.path / "database_tuning_record.json").write_text("")
    summary = build_dataset([gemm_db.path, empty.path], tmp_path / "ds")
    assert summary.n_rows == gemm_db.n_records and summary.sources[1]["n_lines"] == 0
    assert f"\n  warning: database {empty.path} holds no record" in str(summary)  # said, not silent
    # a workload file emptied: each record line names the index it could not find
    cleared = make_gemm_db(tmp_path / "cleared", sizes=(32,), per_workload=2, failed=())
    (cleared.path / "database_workload.json").write_text("")
    with pytest.raises(CostlabError, match=r"workload index 0, but the workload file holds no workload\); "):
        build_dataset([cleared.path], tmp_path / "ds2")

    # ... but a dataset of no records at all is not built
    with pytest.raises(CostlabError, match=f"^no records in the database {empty.path} \\(a session stopped before "
                                           f"its first measured trial .*\\); nothing was written$"):
        build_dataset([empty.path], tmp_path / "none")
    assert not (tmp_path / "none").exists()
    with pytest.raises(CostlabError, match=f"^database {gemm_db.path}: given more than once"):
        build_dataset([gemm_db.path, empty.path, gemm_db.path], tmp_path / "none")


def test_the_build_summary_says_where_lines_were_skipped(two_dbs, tmp_path):
    db, side = two_dbs
    said = str(build_dataset([db.path, side.path], tmp_path / "ds"))
    assert f"\n  {db.path}: 1 of 12 lines skipped; first: {db.path}/database_tuning_record.json:4: " in said
    assert str(side.path) + ":" not in said  # nothing skipped there


def test_one_workload_read_with_and_without_its_sidecar_is_one_task(tmp_path):
    """A database costlab wrote (its costlab.json names the workload) and a copy of it without the
    sidecar: the rows were keyed 'gemm(...)' and 'C[...]#hash', families matmul and contraction,
    two tasks whose metrics each ranked against their own best. One workload, one task now."""
    import shutil

    side = make_gemm_db(tmp_path / "side", sizes=(48,), per_workload=3, failed=(),
                        sidecar={"workload_name": "gemm", "workload_params": {"M": 48, "N": 48, "K": 48},
                                 "workload_key": "gemm(M=48,N=48,K=48,dtype=float32)"})
    shutil.copytree(side.path, tmp_path / "bare")
    (tmp_path / "bare" / "costlab.json").unlink()
    summary = build_dataset([tmp_path / "bare", side.path], tmp_path / "ds")
    df = load_dataset(tmp_path / "ds")
    assert len(df) == 6 and df["workload_hash"].nunique() == 1
    assert set(df["workload_key"]) == {"gemm(M=48,N=48,K=48,dtype=float32)"}
    assert set(df["task_key"]) == {"gemm(M=48,N=48,K=48,dtype=float32) @ llvm 1 core"}
    assert set(df["family"]) == {"matmul"} and set(df["workload_name"]) == {"gemm"}
    assert {json.loads(p)["M"] for p in df["workload_params"]} == {48}
    assert summary.n_workloads == 1 and summary.n_tasks == 1


def test_a_copy_of_a_database_is_said_and_invalid_timings_are_counted_in_the_summary(tmp_path):
    """Two copies of one session (another work_dir, a backup) put every record in twice, and the
    summary said nothing of records whose run_secs were invalid (marked failed)."""
    import shutil

    db = make_gemm_db(tmp_path / "db", sizes=(32,), per_workload=4, failed=())
    shutil.copytree(db.path, tmp_path / "copy")
    rfile = tmp_path / "copy" / "database_tuning_record.json"
    summary = build_dataset([db.path, tmp_path / "copy"], tmp_path / "ds")
    assert summary.n_rows == 8 and summary.notes == [
        f"database {tmp_path / 'copy'} holds the same records as {db.path} (a copy?): each of its 4 records is in "
        f"the dataset twice, and weighs twice in training and in the metrics"]
    assert load_metadata(tmp_path / "ds")["notes"] == summary.notes
    lines = [json.loads(line) for line in rfile.read_text().splitlines()]
    lines[0][1][1] = [-1.0]  # a timing no kernel takes
    rfile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = build_dataset([db.path, tmp_path / "copy"], tmp_path / "ds2")
    assert "; 1 records with invalid run_secs (not a positive finite number) marked failed" in str(summary)
    # a copy of part of it (a snapshot given beside the session): said too, it was not
    assert summary.notes == [
        f"database {tmp_path / 'copy'}: 3 of its 4 records are also in {db.path}, with the same trace and the same "
        f"timings to the last digit (copied from it?): each is in the dataset twice, and weighs twice in training "
        f"and in the metrics"]
    lines[1][1][1] = [1.0]  # 2 left alike: as two sessions can time a kernel alike to the microsecond, by chance
    rfile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert build_dataset([db.path, tmp_path / "copy"], tmp_path / "ds3").notes == []


def test_a_workload_key_of_two_programs_and_a_hash_of_two_namings_are_said(tmp_path):
    """A sidecar key given to another program (a workload file edited between runs) merged the two
    into one task without a word; so did a module whose blocks have other names (the structural
    hash ignores names), whose traces then did not replay."""
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from costlab.workloads import build_workload

    first = make_gemm_db(tmp_path / "a", sizes=(32,), per_workload=2, failed=(),
                         sidecar={"workload_key": "gemm(M=32,N=32,K=32,dtype=float32)", "workload_name": "gemm",
                                  "workload_params": {"M": 32, "N": 32, "K": 32}})
    other = make_gemm_db(tmp_path / "b", sizes=(64,), per_workload=2, failed=(),
                         sidecar={"workload_key": "gemm(M=32,N=32,K=32,dtype=float32)", "workload_name": "gemm",
                                  "workload_params": {"M": 32, "N": 32, "K": 32}})
    summary = build_dataset([first.path, other.path], tmp_path / "ds")
    (note,) = summary.notes
    assert note.startswith("workload gemm(M=32,N=32,K=32,dtype=float32) names 2 different programs (structural hashes ")
    assert str(first.path) in note and str(other.path) in note

    A = te.placeholder((32, 32), "float32", name="A")
    B = te.placeholder((32, 32), "float32", name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")  # costlab's is "C"
    renamed = tvm.IRModule({"main": te.create_prim_func([A, B, C])})
    assert ms.database.Workload(renamed).as_json()[0] == ms.database.Workload(
        build_workload("gemm", {"M": 32, "N": 32, "K": 32})).as_json()[0]
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    from tests.data.helpers import sample_gemm_schedule

    (tmp_path / "renamed").mkdir()
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "renamed"))
    db.commit_tuning_record(ms.database.TuningRecord(
        sample_gemm_schedule(renamed, seed=0, block_name="matmul").trace, db.commit_workload(renamed),
        run_secs=[1e-4], target=tvm.target.Target({"kind": "llvm", "num-cores": 1}),
        args_info=ArgInfo.from_prim_func(renamed["main"])))
    summary = build_dataset([first.path, tmp_path / "renamed"], tmp_path / "ds2")
    (note,) = summary.notes
    assert note.startswith(f"database {tmp_path / 'renamed'}: its workload ") and "with other names in it" in note


def test_a_read_only_dataset_keeps_its_new_caches_in_the_users_cache(gemm_db, tmp_path):
    """A team's read-only copy of a dataset: the caches it ships are read, the others are written
    to the user's cache, and nothing in the dataset's folder changes (it was a PermissionError)."""
    import os
    import stat
    import subprocess
    import sys

    ds, user_cache = tmp_path / "ds", tmp_path / "cache"
    build_dataset([gemm_db.path], ds)
    dataset_features(ds, "trace")  # shipped with the dataset
    before = sorted(str(p.relative_to(ds)) for p in ds.rglob("*"))
    for path in [ds, *ds.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    code = ("import sys; from costlab.data.dataset import dataset_features\n"
            "for name in ('trace', 'per_store', 'per_store'):\n"
            "    feats, rows = dataset_features(sys.argv[1], name); print(name, len(rows))\n")
    try:
        done = subprocess.run([*without_write_override(), sys.executable, "-c", code, str(ds)],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "XDG_CACHE_HOME": str(user_cache)})
    finally:
        for path in [ds, *ds.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["trace", "12", "per_store", "12", "per_store", "12"]
    assert sorted(str(p.relative_to(ds)) for p in ds.rglob("*")) == before
    written = user_cache / "costlab" / "features"
    assert sorted(p.name for p in written.glob("*/*.npz")) == ["per_store.npz"]
    feats, rows = dataset_features(ds, "per_store")  # the same features, extracted in the dataset's folder
    cached = np.load(next(written.glob("*/per_store.npz")))
    np.testing.assert_array_equal(cached["dense"], feats.dense)
    np.testing.assert_array_equal(cached["row_index"], rows)
