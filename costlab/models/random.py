"""Random scores: the baseline every learned model must beat."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features, FeatureSchema
from costlab.models._base import MODELS, CostModel, check_schema
from costlab.models._common import check_inputs, check_is_features, read_meta, write_meta


@MODELS.register("random")
class RandomModel(CostModel):
    """Uniform scores in [0, 1) from the model's own ``np.random.default_rng(seed)``.

    ``fit`` resets the generator to ``seed``, so the same seed and the same calls give
    the same scores; it predicts before ``fit`` too. ``save`` writes one JSON file in the
    model directory: the seed, the generator state and the schema of the features seen.

    Parameters:
        seed: seeds the model's own generator; numpy's global one is never touched.
    """

    name = "random"
    default_features = "none"
    expected_failed_checks = {
        "check_ranks_separable_problem": "random scores do not learn",
        "check_failures_rank_last": "random scores do not learn",
        "check_scores_do_not_depend_on_the_batch": "each call draws new scores",
    }

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "RandomModel":
        if not check_inputs(self, features, latency_s, groups, ("dense", "graph"))[0].size:
            raise CostlabError(f"cost model {self.name!r}: fit needs at least one sample")
        self.rng_ = np.random.default_rng(self.seed)
        self.schema_ = features.schema
        return self

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "RandomModel":
        if not hasattr(self, "schema_"):
            return self.fit(features, latency_s, groups)
        check_inputs(self, features, latency_s, groups, ("dense", "graph"))
        check_schema(self.schema_, features.schema, self._where)
        return self

    def predict(self, features: Features) -> np.ndarray:
        check_is_features(self, features)
        if hasattr(self, "schema_"):
            check_schema(self.schema_, features.schema, self._where)
        if not hasattr(self, "rng_"):
            self.rng_ = np.random.default_rng(self.seed)
        return self.rng_.random(len(features)).astype(np.float64)

    def reseed(self, seed: int) -> "RandomModel":
        """Its scores are its randomness: later ones are drawn from ``seed``."""
        self.seed = int(seed)
        self.rng_ = np.random.default_rng(self.seed)
        return self

    def save(self, path: str | Path) -> None:
        if not hasattr(self, "rng_"):
            self.rng_ = np.random.default_rng(self.seed)
        Path(path).mkdir(parents=True, exist_ok=True)
        write_meta(Path(path), self, getattr(self, "schema_", None), {"bit_generator": self.rng_.bit_generator.state})

    @classmethod
    def load(cls, path: str | Path) -> "RandomModel":
        meta = read_meta(path, cls.name)
        model = cls(**meta["params"])
        model.path_ = str(path)
        model.rng_ = np.random.default_rng(model.seed)
        model.rng_.bit_generator.state = meta["state"]["bit_generator"]
        if meta["features"] is not None:
            model.schema_ = FeatureSchema.from_dict(meta["features"])
        return model

    @property
    def _where(self) -> str:
        return getattr(self, "path_", "<unsaved random model>")
