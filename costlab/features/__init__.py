"""Feature extractors, selectable by name: ``costlab.features.get("analysis+trace")``."""

from costlab.features._base import (
    EXTRACTORS,
    FeatureExtractor,
    Features,
    FeatureSchema,
    GraphBatch,
    concat_features,
    select_features,
)
from costlab.features._combine import available, get

__all__ = [
    "EXTRACTORS",
    "FeatureExtractor",
    "Features",
    "FeatureSchema",
    "GraphBatch",
    "available",
    "concat_features",
    "get",
    "select_features",
]
