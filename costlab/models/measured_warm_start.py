"""Warm start from the operator family that ranks the task's first measured batch best.

Config: ``{name: ensemble, ..., pretrain_on: DATASET, pretrain_family: measured}``.

``pretrain_family: true``, ``related`` and ``group`` (:mod:`costlab.data.pretraining_set`)
choose a warm start's rows from operator names, by a hand-written table. This one measures
the choice on the task itself:

1. At session start, one model per operator family of the dataset (the tuned workload's
   own rows left out) is trained on that family's rows: a *source model*.
2. Until the first measured batch, the search scores by the mean of the source models'
   standardized scores (each model's score minus its mean over its own training rows, over
   their standard deviation: the same map in every ``predict`` call, as MetaSchedule's one
   heap per search iteration needs); their standard deviation is the spread a UCB score
   adds, so candidates the sources disagree on count as uncertain.
3. On the first batch (MetaSchedule's first ``trials_per_iter`` measurements), each source
   model's pairwise ranking accuracy is measured. The model is then trained on the rows of
   the most accurate family together with the batch, and fine-tuned from then on as any
   pretrained model. When no family ranks the batch better than chance (accuracy at most
   0.5), it trains on the task's measurements alone. A batch that cannot be ranked at all
   (fewer than two successes with different latencies: every build failed, say) decides
   nothing: it is kept, and the choice waits for the batches after it.

The saved model is the trained one (loadable with :func:`costlab.models.load_model`),
with ``measured_choice.json`` beside it: every family's accuracy and the one chosen.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import numpy as np

from costlab.data.metrics import pairwise_accuracy
from costlab.data.pretraining_set import SourceRows
from costlab.errors import CostlabError
from costlab.features._base import Features, concat_features
from costlab.models._base import CostModel
from costlab.models.warm_blend import score_scale, standardized

CHOICE_FILE = "measured_choice.json"
CHANCE_ACCURACY = 0.5


def most_accurate(accuracy: dict[str, float]) -> str | None:
    """The family with the highest accuracy above chance (ties: the first by name); None if none."""
    usable = {f: a for f, a in sorted(accuracy.items()) if not math.isnan(a) and a > CHANCE_ACCURACY}
    return max(usable, key=usable.get) if usable else None


class MeasuredWarmStart(CostModel):
    """Source models per family until the first batch, then the chosen family's model.

    Parameters
    ----------
    sources: each family's training rows (:func:`costlab.data.pretraining_set.load_family_sources`).
    make_model: builds an unfitted model (the config's name and params, the session's seed);
        used for the source models and for the chosen one.
    """

    name = "measured-warm-start"

    def __init__(self, sources: dict[str, SourceRows], make_model: Callable[[], CostModel]):
        if not sources:
            raise CostlabError("measured warm start: the dataset holds no other workload to train on")
        self.sources = sources
        self.make_model = make_model

    @property
    def default_features(self) -> str:
        return self.make_model().default_features

    def fit_sources(self) -> "MeasuredWarmStart":
        """Train one source model per family (the warm start's pretraining)."""
        self.source_models_ = {f: self.make_model().fit(s.features, s.latency_s, s.groups)
                               for f, s in sorted(self.sources.items())}
        self.source_scales_ = {f: score_scale(m.predict(self.sources[f].features))
                               for f, m in self.source_models_.items()}
        self.accuracy_: dict[str, float] = {}
        self.chosen_: str | None = None
        self.model_: CostModel | None = None
        self.unranked_: list[tuple[Features, np.ndarray, np.ndarray]] = []  # batches that decided nothing
        return self

    @property
    def decided(self) -> bool:
        return getattr(self, "model_", None) is not None

    def describe(self) -> str:
        """The rows trained on, in words (for the MLflow tag ``costlab.pretraining``)."""
        sizes = ", ".join(f"{f} {len(s.latency_s)}" for f, s in sorted(self.sources.items()))
        if not self.decided:
            return f"source models of {len(self.sources)} families ({sizes} rows); none chosen yet"
        measured = ", ".join(f"{f} {a:.3f}" for f, a in sorted(self.accuracy_.items(), key=lambda fa: -fa[1]))
        if self.chosen_ is None:
            return f"no family ranked the first {self.n_probe_} measured better than chance ({measured}); task only"
        src = self.sources[self.chosen_]
        return (f"{len(src.latency_s)} rows of {src.n_workloads} workload{'s' if src.n_workloads != 1 else ''} "
                f"(family {self.chosen_}, the best pairwise accuracy on the first {self.n_probe_} measured: {measured})")

    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "MeasuredWarmStart":
        """Measure the source models on the task's first samples, choose, and train (from scratch:
        the source models are trained again if a choice was made before)."""
        if not getattr(self, "source_models_", None):
            self.fit_sources()
        latency_s = np.asarray(latency_s, dtype=np.float64)
        return self._choose(features, latency_s, groups, self._source_accuracy(features, latency_s, groups))

    def _choose(self, features: Features, latency_s: np.ndarray, groups: np.ndarray,
                accuracy: dict[str, float]) -> "MeasuredWarmStart":
        """Choose by the source models' ``accuracy`` on the samples, and train on them."""
        self.n_probe_ = len(latency_s)
        self.accuracy_ = accuracy
        self.chosen_ = most_accurate(self.accuracy_)
        model = self.make_model()
        if self.chosen_ is None:
            model.fit(features, latency_s, groups)
        else:
            src = self.sources[self.chosen_]
            model.fit(concat_features([src.features, features]), np.concatenate([src.latency_s, latency_s]),
                      np.concatenate([np.asarray(src.groups, dtype=object), np.asarray(groups, dtype=object)]))
        self.model_ = model
        self.source_models_ = {}  # no longer needed
        return self

    def _source_accuracy(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> dict[str, float]:
        return {f: pairwise_accuracy(latency_s, m.predict(features), groups) for f, m in self.source_models_.items()}

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "MeasuredWarmStart":
        """Before the choice, batches are pooled until the pool can be ranked (see the module's step 3)."""
        if self.decided:
            self.model_.update(features, latency_s, groups)
            return self
        if not getattr(self, "source_models_", None):
            self.fit_sources()
        self.unranked_.append((features, np.asarray(latency_s, dtype=np.float64), np.asarray(groups, dtype=object)))
        features = concat_features([f for f, _, _ in self.unranked_])
        latency_s, groups = (np.concatenate([b[i] for b in self.unranked_]) for i in (1, 2))
        accuracy = self._source_accuracy(features, latency_s, groups)
        if all(math.isnan(a) for a in accuracy.values()):
            return self  # nothing to rank yet: keep the source models
        self.unranked_ = []
        return self._choose(features, latency_s, groups, accuracy)

    def predict_with_spread(self, features: Features) -> tuple[np.ndarray, np.ndarray]:
        if self.decided:
            if hasattr(self.model_, "predict_with_spread"):
                return self.model_.predict_with_spread(features)
            return self.model_.predict(features), np.zeros(len(features))
        if not getattr(self, "source_models_", None):
            raise CostlabError("measured warm start: call fit_sources() before predicting")
        scores = np.stack([standardized(m.predict(features), self.source_scales_[f])
                           for f, m in self.source_models_.items()])
        return scores.mean(axis=0), scores.std(axis=0)

    def predict(self, features: Features) -> np.ndarray:
        return self.predict_with_spread(features)[0]

    def save(self, path: str | Path) -> None:
        """The chosen model and ``measured_choice.json``; refuses before the choice is made."""
        if not self.decided:
            raise CostlabError("measured warm start: nothing measured yet, so no model was chosen to save")
        path = Path(path)
        self.model_.save(path)
        choice = {"chosen_family": self.chosen_, "probe_samples": self.n_probe_, "pairwise_accuracy": self.accuracy_,
                  "family_rows": {f: len(s.latency_s) for f, s in sorted(self.sources.items())}}
        (path / CHOICE_FILE).write_text(json.dumps(choice, indent=1))

    @classmethod
    def load(cls, path: str | Path) -> CostModel:
        """The chosen model, as trained (the source models are not saved)."""
        from costlab.models._common import load_model

        return load_model(path)
