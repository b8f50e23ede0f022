"""Fixtures of tests/data: small gemm databases (see helpers.py) and toy extractors."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.data.helpers import MadeDb, make_gemm_db


@pytest.fixture(scope="session")
def gemm_db_template(tmp_path_factory) -> MadeDb:
    """One database for the whole session; copy it before changing it."""
    return make_gemm_db(tmp_path_factory.mktemp("gemm_db") / "db")


@pytest.fixture
def gemm_db(gemm_db_template, tmp_path) -> MadeDb:
    """A private copy of the session's database."""
    dst = tmp_path / "db"
    shutil.copytree(gemm_db_template.path, dst)
    return MadeDb(dst, gemm_db_template.n_records, gemm_db_template.latencies, gemm_db_template.workload_of)


@pytest.fixture
def toy_extractors():
    """Register two tiny extractors (dense and graph) for the feature-cache tests."""
    from costlab.features import EXTRACTORS, FeatureExtractor, Features, GraphBatch

    class LoopCount(FeatureExtractor):
        name = "_toy_dense"
        version = 1
        kind = "dense"
        calls = 0

        @property
        def feature_names(self):
            return ["n_insts", "n_decisions", "target_cores"]

        def extract(self, context, candidates):
            type(self).calls += 1
            rows = [[len(c.sch.trace.insts), len(c.sch.trace.decisions), int(context.target.attrs["num-cores"])]
                    for c in candidates]
            return Features(self.schema, dense=np.asarray(rows, dtype=np.float32).reshape(-1, 3))

    class Chain(FeatureExtractor):
        name = "_toy_graph"
        version = 1
        kind = "graph"

        @property
        def feature_names(self):
            return ["position"]

        def extract(self, context, candidates):
            nodes, edges, batch = [], [], []
            offset = 0
            for g, c in enumerate(candidates):
                n = 2 + len(c.sch.trace.decisions) % 3
                nodes += [[float(i)] for i in range(n)]
                edges += [[offset + i, offset + i + 1] for i in range(n - 1)]
                batch += [g] * n
                offset += n
            edge_index = np.asarray(edges, dtype=np.int64).T.reshape(2, -1)
            return Features(self.schema, graphs=GraphBatch(
                node_features=np.asarray(nodes, dtype=np.float32), edge_index=edge_index,
                edge_type=np.zeros(edge_index.shape[1], dtype=np.int64), batch=np.asarray(batch, dtype=np.int64),
                num_graphs=len(candidates)))

    EXTRACTORS.register(LoopCount.name)(LoopCount)
    EXTRACTORS.register(Chain.name)(Chain)
    yield LoopCount, Chain
    EXTRACTORS._factories.pop(LoopCount.name, None)
    EXTRACTORS._factories.pop(Chain.name, None)
