"""Look-up by name, and combinations such as ``analysis+trace`` (dense columns side by side)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import EXTRACTORS, FeatureExtractor, Features


_BUILTIN_MODULES = {"none": "none", "per_store": "per_store", "trace": "trace", "analysis": "analysis",
                    "graph": "graph", "trace_seq": "trace"}


def _load_builtins(names=None) -> None:
    """Import the modules that register the built-in extractors (only those named)."""
    import importlib

    for name, module in _BUILTIN_MODULES.items():
        if names is None or name in names:
            importlib.import_module(f"costlab.features.{module}")


EXTRACTORS.load_builtins = _load_builtins  # a script's extractor may not take a built-in's name


class CombinedExtractor(FeatureExtractor):
    """Dense extractors side by side; column names are prefixed with their extractor."""

    kind = "dense"

    def __init__(self, parts: Sequence[FeatureExtractor]):
        self.parts = list(parts)
        self.name = "+".join(p.name for p in self.parts)
        self.version = sum(p.version for p in self.parts)
        self.cache_revision = sum(p.cache_revision for p in self.parts)

    @property
    def feature_names(self) -> list[str]:
        return [f"{p.name}.{n}" for p in self.parts for n in p.feature_names]

    def extract(self, context, candidates) -> Features:
        blocks = [p.extract(context, candidates).dense for p in self.parts]
        return Features(self.schema, dense=np.concatenate(blocks, axis=1).astype(np.float32))


def available() -> list[str]:
    _load_builtins()
    return EXTRACTORS.names()


def get(name: str) -> FeatureExtractor:
    """An extractor by name; ``a+b`` combines dense extractors."""
    names = [n.strip() for n in name.split("+")]
    _load_builtins(names if all(n in _BUILTIN_MODULES for n in names) else None)
    parts = [EXTRACTORS.factory(n)() for n in names]
    if len(parts) == 1:
        return parts[0]
    graph_parts = [p.name for p in parts if p.kind != "dense"]
    if graph_parts:
        raise CostlabError(f"feature combination {name!r}: {graph_parts[0]!r} is a graph extractor and cannot be combined")
    return CombinedExtractor(parts)
