"""Selecting candidates from a feature batch, against a slow, obviously correct reference."""

import numpy as np
import pytest

from costlab.features import Features, GraphBatch, concat_features, select_features
from costlab.features._base import taker
from costlab.testing.synthetic import make_problem


def one_graph(g: GraphBatch, i: int) -> GraphBatch:
    """Graph ``i`` alone, by masks over the whole batch (nodes and edges in batch order)."""
    nodes = np.flatnonzero(g.batch == i)
    remap = -np.ones(g.node_features.shape[0], dtype=np.int64)
    remap[nodes] = np.arange(nodes.size)
    keep = np.isin(g.edge_index[0], nodes)
    return GraphBatch(g.node_features[nodes], remap[g.edge_index[:, keep]], g.edge_type[keep],
                      np.zeros(nodes.size, dtype=np.int64), 1)


def interleave(g: GraphBatch, seed: int) -> GraphBatch:
    """The same graphs with all nodes shuffled across the batch (graphs not contiguous)."""
    perm = np.random.default_rng(seed).permutation(g.node_features.shape[0])
    new_position = np.empty_like(perm)
    new_position[perm] = np.arange(perm.size)
    return GraphBatch(g.node_features[perm], new_position[g.edge_index], g.edge_type, g.batch[perm], g.num_graphs)


@pytest.mark.parametrize("idx", [[7, 0, 23, 3, 3], [5], [], [1, 1, 1], list(range(24))[::-1]])
def test_graph_selection_matches_the_reference(idx):
    data = make_problem("graph", n_groups=2, per_group=12, seed=3)
    g = interleave(data.features.graphs, seed=1)
    feats = Features(data.features.schema, graphs=g)
    got = select_features(feats, np.array(idx, dtype=np.int64)).graphs
    assert got.num_graphs == len(idx)
    if not idx:
        assert got.node_features.shape[0] == 0 and got.edge_index.shape[1] == 0
        return
    want = concat_features([Features(feats.schema, graphs=one_graph(g, i)) for i in idx]).graphs
    for field in ("node_features", "edge_index", "edge_type", "batch"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


def test_dense_selection_keeps_order_and_repeats():
    data = make_problem("dense", n_groups=2, per_group=6, seed=0)
    take = taker(data.features)
    got = take(np.array([4, 4, 0]))
    np.testing.assert_array_equal(got.dense, data.features.dense[[4, 4, 0]])
    assert got.schema is data.features.schema
