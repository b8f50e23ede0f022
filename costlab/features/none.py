"""``none``: zero feature columns, for models that do not read features (``random``).

It costs nothing, so a random-search baseline pays no feature extraction in tuning.
"""

from __future__ import annotations

import numpy as np

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features


@EXTRACTORS.register("none")
class NoFeatures(FeatureExtractor):
    name = "none"
    version = 1
    kind = "dense"

    @property
    def feature_names(self) -> list[str]:
        return []

    def extract(self, context, candidates) -> Features:
        return Features(self.schema, dense=np.zeros((len(candidates), 0), dtype=np.float32))
