"""Checks every extractor must pass, on sampled CPU and CUDA candidates of a small GEMM."""

from __future__ import annotations

import numpy as np
import pytest

import costlab.features as F
from tests.features.conftest import sampled

BUILTIN = ["per_store", "trace", "trace_seq", "analysis", "graph"]


def test_available_lists_the_builtins_with_names():
    names = F.available()
    for name in BUILTIN:
        assert name in names
        ex = F.get(name)
        assert ex.name == name
        assert ex.kind in ("dense", "graph")
        feature_names = ex.feature_names
        assert feature_names and len(set(feature_names)) == len(feature_names), name
        assert ex.schema.names == feature_names


def test_dimensions_are_stable():
    assert len(F.get("per_store").feature_names) == 3 * 164 + 1
    assert len(F.get("trace_seq").feature_names) > len(F.get("trace").feature_names)
    assert F.get("graph").kind == "graph"


@pytest.mark.parametrize("name", BUILTIN)
def test_shapes_and_types(name, target):
    context, candidates = sampled(target)
    ex = F.get(name)
    features = ex.extract(context, candidates)
    assert len(features) == len(candidates)
    assert features.schema.to_dict() == ex.schema.to_dict()
    if ex.kind == "dense":
        assert features.dense.dtype == np.float32
        assert features.dense.shape == (len(candidates), len(ex.feature_names))
        assert np.isfinite(features.dense).all()
    else:
        g = features.graphs
        assert g.num_graphs == len(candidates)
        assert g.node_features.dtype == np.float32
        assert g.node_features.shape[1] == len(ex.feature_names)
        assert np.isfinite(g.node_features).all()
        assert g.edge_index.dtype == np.int64 and g.edge_index.shape[0] == 2
        assert g.edge_index.shape[1] == g.edge_type.shape[0]
        assert g.edge_index.min() >= 0 and g.edge_index.max() < g.node_features.shape[0]
        assert np.all(np.diff(g.batch) >= 0) and set(np.unique(g.batch)) == set(range(len(candidates)))
        # edges stay inside one candidate's graph
        assert np.array_equal(g.batch[g.edge_index[0]], g.batch[g.edge_index[1]])


@pytest.mark.parametrize("name", BUILTIN)
def test_deterministic(name, target):
    context, candidates = sampled(target)
    ex = F.get(name)
    a = ex.extract(context, candidates)
    b = F.get(name).extract(context, list(reversed(candidates)))
    if ex.kind == "dense":
        assert np.array_equal(a.dense, b.dense[::-1])
        again = ex.extract(context, candidates)
        assert np.array_equal(a.dense, again.dense)
    else:
        again = ex.extract(context, candidates)
        for field in ("node_features", "edge_index", "edge_type", "batch"):
            assert np.array_equal(getattr(a.graphs, field), getattr(again.graphs, field))


def test_empty_batch(target):
    context, _ = sampled(target)
    for name in BUILTIN:
        assert len(F.get(name).extract(context, [])) == 0


def test_combination_concatenates_columns(target):
    context, candidates = sampled(target)
    combined = F.get("analysis+trace")
    dense = combined.extract(context, candidates).dense
    a = F.get("analysis").extract(context, candidates).dense
    t = F.get("trace").extract(context, candidates).dense
    assert np.array_equal(dense, np.concatenate([a, t], axis=1))
    assert combined.feature_names[0] == "analysis.flop_fadd"


def test_offline_records_give_the_online_features(target, tmp_path):
    """Database records turned back into candidates (no measuring) give the same features."""
    from tvm.s_tir import meta_schedule as ms

    context, candidates = sampled(target, n=6)
    db = ms.database.JSONDatabase(path_workload=str(tmp_path / "w.json"), path_tuning_record=str(tmp_path / "r.json"))
    workload = db.commit_workload(context.mod)
    for i, cand in enumerate(candidates):
        db.commit_tuning_record(ms.database.TuningRecord(
            cand.sch.trace, workload, run_secs=[1e-3 * (i + 1)], target=context.target, args_info=cand.args_info))
    reloaded = ms.database.JSONDatabase(path_workload=str(tmp_path / "w.json"),
                                        path_tuning_record=str(tmp_path / "r.json"))
    records = reloaded.get_all_tuning_records()  # best first = commit order here
    offline_context = ms.TuneContext(mod=records[0].workload.mod, target=records[0].target, num_threads=1)
    offline = [r.as_measure_candidate() for r in records]
    for name in ("trace", "analysis", "per_store"):
        online = F.get(name).extract(context, candidates).dense
        assert np.array_equal(F.get(name).extract(offline_context, offline).dense, online), name
    g_on = F.get("graph").extract(context, candidates).graphs
    g_off = F.get("graph").extract(offline_context, offline).graphs
    assert np.array_equal(g_on.node_features, g_off.node_features)
    assert np.array_equal(g_on.edge_index, g_off.edge_index)


def test_programs_without_loops_or_stores():
    """The analysis and graph code paths accept degenerate programs."""
    from costlab.features._tir_walk import Program
    from costlab.features.analysis import FEATURE_NAMES, TargetInfo, analyse
    from costlab.features.graph import NODE_FEATURE_NAMES, program_graph

    context, _ = sampled("h100")
    row = analyse(Program([], [], [], []), TargetInfo(context.target))
    assert row.shape == (len(FEATURE_NAMES),) and not row.any()
    x, edge_index, edge_type = program_graph(Program([], [], [], []))
    assert x.shape == (0, len(NODE_FEATURE_NAMES)) and edge_index.shape == (2, 0) and edge_type.shape == (0,)
