"""Synthetic features with a known answer, dense or graph, built without TVM.

Each sample has two hidden values in [0, 1): ``speed`` (latency falls monotonically as it
grows) and ``risk`` (a sample fails when ``risk > fail_above``). Dense features carry them
in columns 0 and 1, next to noise columns. Graph features carry them as the mean over a
graph's nodes of node-feature columns 0 and 1, next to noise columns, on random graphs
(a chain plus random edges, several edge types).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costlab.features._base import Features, FeatureSchema, GraphBatch

BUILTIN_KINDS = {"per_store": "dense", "trace": "dense", "analysis": "dense", "graph": "graph", "none": "dense"}
N_FEATURES = 8
N_EDGE_TYPES = 3


def feature_kind(extractor: str) -> str:
    """"dense" or "graph" for an extractor name; combinations such as ``analysis+trace`` are dense.

    Builtin names are known without importing TVM; other names are asked from the
    extractor registry (plug-in extractors), and default to dense.
    """
    if "+" in extractor:
        return "dense"
    if extractor in BUILTIN_KINDS:
        return BUILTIN_KINDS[extractor]
    try:
        from costlab.features import get

        return get(extractor).kind
    except Exception:
        return "dense"


@dataclass
class SyntheticData:
    features: Features
    latency_s: np.ndarray
    groups: np.ndarray
    speed: np.ndarray  # the hidden value latency falls with
    risk: np.ndarray  # the hidden value that makes a sample fail


def synthetic_schema(kind: str, extractor: str = "synthetic", version: int = 1) -> FeatureSchema:
    return FeatureSchema(extractor, version, [f"f{i}" for i in range(N_FEATURES)], kind)


def make_features(speed: np.ndarray, risk: np.ndarray, schema: FeatureSchema, rng: np.random.Generator,
                  min_nodes: int = 3, max_nodes: int = 10, node_noise: float = 0.1) -> Features:
    """Features (of ``schema.kind``) carrying ``speed`` and ``risk``; the rest is noise."""
    n = speed.size
    if schema.kind == "dense":
        x = rng.random((n, N_FEATURES))
        x[:, 0], x[:, 1] = speed, risk
        return Features(schema, dense=x.astype(np.float32))
    sizes = rng.integers(min_nodes, max_nodes + 1, size=n)
    batch = np.repeat(np.arange(n), sizes)
    x = rng.random((batch.size, N_FEATURES))
    for col, value in ((0, speed), (1, risk)):  # node mean of the column == value
        noise = rng.normal(0.0, node_noise, size=batch.size)
        noise -= (np.bincount(batch, weights=noise) / sizes)[batch]
        x[:, col] = value[batch] + noise
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    edges = []
    for g in range(n):
        s, k = starts[g], sizes[g]
        chain = np.stack([np.arange(k - 1), np.arange(1, k)]) + s
        extra = rng.integers(0, k, size=(2, k)) + s
        edges.append(np.concatenate([chain, extra], axis=1))
    edge_index = np.concatenate(edges, axis=1).astype(np.int64)
    edge_type = rng.integers(0, N_EDGE_TYPES, size=edge_index.shape[1]).astype(np.int64)
    return Features(schema, graphs=GraphBatch(x.astype(np.float32), edge_index, edge_type, batch.astype(np.int64), n))


def make_problem(kind: str, n_groups: int = 4, per_group: int = 64, seed: int = 0, fail_above: float = 1.0,
                 extractor: str = "synthetic", version: int = 1, group_prefix: str = "w",
                 node_noise: float = 0.1) -> SyntheticData:
    """``n_groups`` workloads of ``per_group`` samples; latency (s) = scale * exp(-2 * speed).

    Each group has its own latency scale, so only rankings within a group carry meaning.
    Samples with ``risk > fail_above`` get ``inf`` latency.
    """
    rng = np.random.default_rng(seed)
    n = n_groups * per_group
    speed, risk = rng.random(n), rng.random(n)
    groups = np.repeat([f"{group_prefix}{g}" for g in range(n_groups)], per_group)
    scale = np.repeat(10.0 ** rng.uniform(-5, -2, size=n_groups), per_group)
    latency = scale * np.exp(-2.0 * speed)
    latency[risk > fail_above] = np.inf
    features = make_features(speed, risk, synthetic_schema(kind, extractor, version), rng, node_noise=node_noise)
    return SyntheticData(features, latency, groups, speed, risk)


def permute_nodes(graphs: GraphBatch, seed: int = 0) -> GraphBatch:
    """The same graphs with the nodes of each graph in another order (graphs stay contiguous)."""
    rng = np.random.default_rng(seed)
    order = np.argsort(graphs.batch, kind="stable")
    sizes = np.bincount(graphs.batch, minlength=graphs.num_graphs)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    new_order = np.concatenate([order[s + rng.permutation(k)] for s, k in zip(starts, sizes)])
    position = np.empty_like(new_order)
    position[new_order] = np.arange(new_order.size)  # old node id -> new row
    return GraphBatch(graphs.node_features[new_order], position[graphs.edge_index], graphs.edge_type.copy(),
                      graphs.batch[new_order], graphs.num_graphs)


def pairwise_accuracy(scores: np.ndarray, latency_s: np.ndarray, groups: np.ndarray) -> float:
    """Fraction of same-group pairs of successes with different latency ordered right."""
    right = total = 0
    for g in np.unique(groups):
        m = (groups == g) & np.isfinite(latency_s)
        s, lat = scores[m], latency_s[m]
        i, j = np.triu_indices(s.size, k=1)
        differ = lat[i] != lat[j]
        right += int(((s[i] > s[j]) == (lat[i] < lat[j]))[differ].sum())
        total += int(differ.sum())
    return right / total if total else float("nan")
