"""The feature-extractor contract and its registry.

An extractor turns a batch of MetaSchedule candidates (schedules of one workload on
one target) into :class:`Features`. The same call serves the online search (the
candidates of the evolutionary search) and offline datasets (database records
turned into candidates with ``record.as_measure_candidate()``)::

    context = costlab.data.make_context(workload_mod, "cpu")  # ms.TuneContext(...) works, slowly
    features = costlab.features.get("analysis").extract(context, candidates)

Extraction is deterministic: the same candidates give identical features.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
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

    def __post_init__(self) -> None:
        """Refuse features that do not match their schema (a model would fail deep inside its
        library, or learn from misnamed columns); a dense matrix becomes float32."""
        where = f"Features of extractor {self.schema.extractor!r}"
        if (self.dense is None) == (self.graphs is None):
            raise ValueError(f"{where}: give a dense matrix or a graph batch, exactly one of them")
        if (self.dense is None) != (self.schema.kind == "graph"):
            given = "a dense matrix" if self.dense is not None else "a graph batch"
            raise ValueError(f"{where}: the schema's kind is {self.schema.kind!r}, but {given} was given")
        if self.dense is not None:
            self.dense = np.asarray(self.dense, dtype=np.float32)
        what, matrix = (("dense matrix", self.dense) if self.dense is not None
                        else ("graphs' node features", self.graphs.node_features))
        shape, n = np.shape(matrix), len(self.schema.names)
        if len(shape) != 2 or shape[1] != n:
            raise ValueError(f"{where}: the {what} has shape {shape}, but the schema names {n} feature(s): "
                             f"expected (candidates or nodes, {n})")

    def __len__(self) -> int:
        if self.dense is not None:
            return int(self.dense.shape[0])
        return self.graphs.num_graphs

    @property
    def kind(self) -> str:
        return self.schema.kind


class FeatureExtractor(ABC):
    """Turns candidates into features. Subclasses set ``name``, ``version``, ``kind``."""

    name: str = ""
    version: int = 1
    kind: str = "dense"
    # Bumped when some values change but the schema, and so the models saved on it, stay valid
    # (a fix for one target's kernels, say): it renews cached dataset features only.
    cache_revision: int = 0

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
    """The candidates ``index`` (an int array, repeats allowed) of a batch, in that order.

    To select from the same graph batch many times, build :func:`taker` once instead.
    """
    return taker(features)(index)


class GraphIndex:
    """Fast selection of graphs from a GraphBatch: nodes and edges are sorted by graph once.

    ``select(idx)`` costs O(selected nodes + edges) after one sort of the batch; an index
    may repeat (bootstrap samples).
    """

    def __init__(self, graphs: GraphBatch):
        order = np.argsort(graphs.batch, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        batch = graphs.batch[order]
        edge_index = position[graphs.edge_index]
        edge_graph = batch[edge_index[0]] if edge_index.size else np.zeros(0, dtype=np.int64)
        edge_order = np.argsort(edge_graph, kind="stable")
        self.node_features = np.ascontiguousarray(graphs.node_features[order], dtype=np.float32)
        self.edge_index = edge_index[:, edge_order].astype(np.int64)
        self.edge_type = graphs.edge_type[edge_order].astype(np.int64)
        self.node_ptr = np.concatenate([[0], np.cumsum(np.bincount(batch, minlength=graphs.num_graphs))])
        self.edge_ptr = np.concatenate(
            [[0], np.cumsum(np.bincount(edge_graph[edge_order], minlength=graphs.num_graphs))])

    @staticmethod
    def _ranges(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        counts = ptr[idx + 1] - ptr[idx]
        starts = np.repeat(ptr[idx], counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return starts + offsets, counts

    def select(self, idx: np.ndarray) -> GraphBatch:
        """Graphs ``idx`` (an int array), in that order, renumbered ``0 .. len(idx) - 1``."""
        idx = np.asarray(idx, dtype=np.int64)
        nodes, n_counts = self._ranges(self.node_ptr, idx)
        edges, e_counts = self._ranges(self.edge_ptr, idx)
        new_start = np.cumsum(n_counts) - n_counts  # where each selected graph's nodes begin
        shift = np.repeat(new_start - self.node_ptr[idx], e_counts)
        return GraphBatch(self.node_features[nodes], self.edge_index[:, edges] + shift, self.edge_type[edges],
                          np.repeat(np.arange(idx.size, dtype=np.int64), n_counts), int(idx.size))


def taker(features: Features):
    """A function ``take(idx)``: the candidates ``idx`` of ``features``, in that order (fast for graphs)."""
    if features.kind == "dense":
        return lambda idx: Features(features.schema, dense=features.dense[np.asarray(idx, dtype=np.int64)])
    index = GraphIndex(features.graphs)
    return lambda idx: Features(features.schema, graphs=index.select(idx))
