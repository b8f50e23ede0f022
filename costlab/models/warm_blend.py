"""Warm start by blending a pretrained model with a model of the tuned task alone.

The default warm start fine-tunes: the tuned task's measurements are added to the
pretrained model's thousands of training rows and it is refitted, so a pretrained
model that misranks the task keeps misranking it (seen on the ResNet conv2d, online
and in ``experiments/results/replay_levers``). ``WarmBlend`` keeps the pretrained
model as it is and trains a fresh model on the task's own measurements only. It
blends standardized scores, so the two models' scales don't matter::

    score = w * z(online) + (1 - w) * z(pretrained),   w = n / (n + half_samples)

where ``n`` is the number of the task's samples seen and ``z`` a model's score minus its
mean over those samples, over their standard deviation. The pretrained model leads the
first picks (its own scores before any sample); the task's own model takes over as data
grows. The standardization depends on the measured samples only, not on the candidates
scored: MetaSchedule keeps the best candidates of all its ``predict`` calls of a search
iteration in one heap, so a score must mean the same in every call (ranks within a call,
as used before 2026-12-06, put the best of a weak first population above better evolved
candidates).
Config: ``{name: lgbm, pretrained: DIR, warm: blend, blend_samples: 64}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features, concat_features
from costlab.models._base import CostModel

META_FILE = "warm_blend.json"


def score_scale(reference_scores: np.ndarray) -> tuple[float, float]:
    """``(mean, standard deviation)`` of a model's scores on reference rows; a deviation of 0
    (or fewer than two finite scores) as 1, so :func:`standardized` only shifts."""
    ref = np.asarray(reference_scores, dtype=np.float64)
    ref = ref[np.isfinite(ref)]
    if ref.size == 0:
        return 0.0, 1.0
    std = float(ref.std()) if ref.size > 1 else 0.0
    return float(ref.mean()), std if std > 0 else 1.0


def standardized(scores: np.ndarray, scale: tuple[float, float]) -> np.ndarray:
    """``(scores - mean) / std`` with the reference ``scale``: the same map in every call."""
    mean, std = scale
    return (np.asarray(scores, dtype=np.float64) - mean) / std


class WarmBlend(CostModel):
    """A frozen pretrained model blended with an online model of the tuned task.

    Parameters
    ----------
    pretrained: a fitted model (kept as is).
    online: an unfitted model of the same feature family, trained on the task's samples.
    half_samples: task samples at which both models weigh one half.
    """

    name = "warm-blend"
    # Before the first fit: no task sample, and each model's scores as they are. Class
    # attributes, so that a new model holds no learned state (the conformance suite checks it).
    n_samples_ = 0
    reference_: Features | None = None  # the task's samples, which set each model's score scale
    scales_ = {"pretrained": (0.0, 1.0), "online": (0.0, 1.0)}
    expected_failed_checks = {
        "check_init_stores_params": "its constructor takes two models; get_params() describes them as JSON, "
                                    "so a model cannot be rebuilt from its params (load() rebuilds it)"}

    def __init__(self, pretrained: CostModel, online: CostModel, half_samples: int = 64):
        if half_samples <= 0:
            raise CostlabError(f"warm-blend: half_samples must be positive (value: {half_samples!r})")
        self.pretrained = pretrained
        self.online = online
        self.half_samples = half_samples

    @property
    def default_features(self) -> str:
        return self.pretrained.default_features

    @property
    def online_weight(self) -> float:
        return self.n_samples_ / (self.n_samples_ + self.half_samples)

    def get_params(self) -> dict:
        return {"pretrained": self.pretrained.get_params(), "online": self.online.get_params(),
                "half_samples": self.half_samples}

    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "WarmBlend":
        self.online.fit(features, latency_s, groups)
        self.n_samples_ = len(features)
        self.reference_ = features
        return self._rescale()

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "WarmBlend":
        if self.n_samples_ == 0:
            return self.fit(features, latency_s, groups)
        self.online.update(features, latency_s, groups)
        self.n_samples_ += len(features)
        self.reference_ = features if self.reference_ is None else concat_features([self.reference_, features])
        return self._rescale()

    def _rescale(self) -> "WarmBlend":
        """Each model's score scale on the task's samples (after each training)."""
        self.scales_ = {"pretrained": score_scale(self.pretrained.predict(self.reference_)),
                        "online": score_scale(self.online.predict(self.reference_))}
        return self

    def predict(self, features: Features) -> np.ndarray:
        prior = self.pretrained.predict(features)
        if self.n_samples_ == 0:
            return np.asarray(prior, dtype=np.float64)
        w = self.online_weight
        return (w * standardized(self.online.predict(features), self.scales_["online"])
                + (1.0 - w) * standardized(prior, self.scales_["pretrained"]))

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.pretrained.save(path / "pretrained")
        if self.n_samples_:
            self.online.save(path / "online")
        meta = {"model": self.name, "half_samples": self.half_samples, "n_samples": self.n_samples_,
                "pretrained": self.pretrained.name, "online": self.online.name if self.n_samples_ else None,
                "online_model": self.online.name, "online_params": self.online.get_params(),
                "score_scales": {k: list(v) for k, v in self.scales_.items()}}
        (path / META_FILE).write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "WarmBlend":
        from costlab.models import get

        path = Path(path)
        try:
            meta = json.loads((path / META_FILE).read_text())
        except (OSError, ValueError) as err:
            raise CostlabError(f"{path}: not a saved warm-blend model ({err})") from None
        pretrained = get(meta["pretrained"]).load(path / "pretrained")
        if meta["online"] is None:  # not trained yet: built again as it was (saved before 2026-12-02: as the pretrained)
            online = get(meta.get("online_model", meta["pretrained"]))(**meta.get("online_params", pretrained.get_params()))
        else:
            online = get(meta["online"]).load(path / "online")
        model = cls(pretrained, online, meta["half_samples"])
        model.n_samples_ = int(meta["n_samples"])
        if model.n_samples_ and getattr(online, "data_", None) is not None:
            model.reference_ = online.data_.features  # the task's samples, as the online model keeps them
        # saved before 2026-12-06 (blended ranks within each call): no scales, raw scores blended
        model.scales_ = {**cls.scales_, **{k: (float(v[0]), float(v[1])) for k, v in meta.get("score_scales", {}).items()}}
        return model
