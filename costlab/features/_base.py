"""The feature-extractor contract and its registry.

An extractor turns a batch of MetaSchedule candidates (schedules of one workload on
one target) into :class:`Features`. The same call serves the online search (the
candidates of the evolutionary search) and offline datasets (database records
turned into candidates with ``record.as_measure_candidate()``)::

    context = ms.TuneContext(mod=workload_mod, target=target, num_threads=1)
    features = costlab.features.get("analysis").extract(context, candidates)

Extraction is deterministic: the same candidates give identical features.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from costlab.registry import Registry


@dataclass
class GraphBatch:
    """Many graphs as one big graph, as in PyG.

    Shapes:
        node_features: [n_nodes, n_node_features] float32, normalized
        edge_index: [2, n_edges] int64 (source row, target row), indices into nodes
        edge_type: [n_edges] int64
        batch: [n_nodes] int64, the candidate each node belongs to
        num_graphs: the number of candidates
    """

    node_features: np.ndarray
    edge_index: np.ndarray
    edge_type: np.ndarray
    batch: np.ndarray
    num_graphs: int

    def __len__(self) -> int:
        return self.num_graphs


@dataclass
class FeatureSchema:
    """What a model must be fed: the extractor name, its version and feature names."""

    extractor: str
    version: int
    names: list[str]
    kind: str = "dense"  # "dense" or "graph"

    def to_dict(self) -> dict:
        return {"extractor": self.extractor, "version": self.version, "names": list(self.names), "kind": self.kind}

    @classmethod
    def from_dict(cls, data: dict) -> "FeatureSchema":
        return cls(data["extractor"], int(data["version"]), list(data["names"]), data.get("kind", "dense"))


@dataclass
class Features:
    """Features of n candidates: a dense matrix or a graph batch, never both.

    ``dense``: [n_candidates, n_features] float32, columns named by ``schema.names``.
    ``graphs``: a :class:`GraphBatch`; ``schema.names`` names the node-feature columns.
    """

    schema: FeatureSchema
    dense: np.ndarray | None = None
    graphs: GraphBatch | None = None

    def __len__(self) -> int:
        if self.dense is not None:
            return int(self.dense.shape[0])
        assert self.graphs is not None
        return self.graphs.num_graphs

    @property
    def kind(self) -> str:
        return self.schema.kind


class FeatureExtractor(ABC):
    """Turns candidates into features. Subclasses set ``name``, ``version``, ``kind``."""

    name: str = ""
    version: int = 1
    kind: str = "dense"

    @property
    @abstractmethod
    def feature_names(self) -> list[str]:
        """Stable names of the columns (dense) or node features (graph), with units."""

    @property
    def schema(self) -> FeatureSchema:
        return FeatureSchema(self.name, self.version, list(self.feature_names), self.kind)

    @abstractmethod
    def extract(self, context, candidates: Sequence) -> Features:
        """Features of ``candidates`` (``ms.MeasureCandidate``) tuned in ``context`` (``ms.TuneContext``)."""


EXTRACTORS: Registry[FeatureExtractor] = Registry("feature extractor")


def concat_features(parts: Sequence[Features]) -> Features:
    """Stack feature batches of one schema (dense rows, or graphs with re-indexed nodes)."""
    if not parts:
        raise ValueError("concat_features needs at least one batch")
    schema = parts[0].schema
    for p in parts[1:]:
        if p.schema.to_dict() != schema.to_dict():
            raise ValueError(f"cannot concatenate features of {p.schema.extractor!r} and {schema.extractor!r}")
    if schema.kind == "dense":
        return Features(schema, dense=np.concatenate([p.dense for p in parts], axis=0).astype(np.float32))
    node_features, edge_index, edge_type, batch = [], [], [], []
    node_offset = graph_offset = 0
    for p in parts:
        g = p.graphs
        node_features.append(g.node_features)
        edge_index.append(g.edge_index + node_offset)
        edge_type.append(g.edge_type)
        batch.append(g.batch + graph_offset)
        node_offset += g.node_features.shape[0]
        graph_offset += g.num_graphs
    return Features(
        schema,
        graphs=GraphBatch(
            node_features=np.concatenate(node_features, axis=0).astype(np.float32),
            edge_index=np.concatenate(edge_index, axis=1).astype(np.int64),
            edge_type=np.concatenate(edge_type).astype(np.int64),
            batch=np.concatenate(batch).astype(np.int64),
            num_graphs=graph_offset,
        ),
    )


def select_features(features: Features, index: np.ndarray) -> Features:
    """The candidates ``index`` (an int array) of a batch, in that order."""
    index = np.asarray(index, dtype=np.int64)
    if features.kind == "dense":
        return Features(features.schema, dense=features.dense[index])
    g = features.graphs
    parts = []
    for i in index:
        nodes = np.flatnonzero(g.batch == i)
        remap = -np.ones(g.node_features.shape[0], dtype=np.int64)
        remap[nodes] = np.arange(nodes.size)
        keep = np.isin(g.edge_index[0], nodes)
        parts.append(Features(features.schema, graphs=GraphBatch(
            node_features=g.node_features[nodes],
            edge_index=remap[g.edge_index[:, keep]],
            edge_type=g.edge_type[keep],
            batch=np.zeros(nodes.size, dtype=np.int64),
            num_graphs=1,
        )))
    return concat_features(parts)
