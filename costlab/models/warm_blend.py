"""Warm start by blending a pretrained model with a model of the tuned task alone.

The default warm start fine-tunes: the tuned task's measurements are added to the
pretrained model's thousands of training rows and it is refitted, so a pretrained
model that misranks the task keeps misranking it (seen on the ResNet conv2d, online
and in ``experiments/results/replay_levers``). ``WarmBlend`` keeps the pretrained
model as it is and trains a fresh model on the task's own measurements only. It
scores by ranks, so the two models' scales don't matter::

    score = w * rank(online) + (1 - w) * rank(pretrained),   w = n / (n + half_samples)

where ``n`` is the number of the task's samples seen (ranks scaled to 0..1). The
pretrained model leads the first picks; the task's own model takes over as data grows.
Config: ``{name: lgbm, pretrained: DIR, warm: blend, blend_samples: 64}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features
from costlab.models._base import CostModel
from costlab.models._common import _average_ranks

META_FILE = "warm_blend.json"


def ranks_01(scores: np.ndarray) -> np.ndarray:
    """Scores as ranks scaled to 0 (lowest) .. 1 (highest); ties share their mean rank."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size < 2:
        return np.full(scores.shape, 0.5)
    return (_average_ranks(scores) - 1.0) / (scores.size - 1.0)


class WarmBlend(CostModel):
    """A frozen pretrained model blended with an online model of the tuned task.

    Parameters
    ----------
    pretrained: a fitted model (kept as is).
    online: an unfitted model of the same feature family, trained on the task's samples.
    half_samples: task samples at which both models weigh one half.
    """

    name = "warm-blend"

    def __init__(self, pretrained: CostModel, online: CostModel, half_samples: int = 64):
        if half_samples <= 0:
            raise CostlabError(f"warm-blend: half_samples must be positive (value: {half_samples!r})")
        self.pretrained = pretrained
        self.online = online
        self.half_samples = half_samples
        self.n_samples_ = 0

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
        return self

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "WarmBlend":
        if self.n_samples_ == 0:
            return self.fit(features, latency_s, groups)
        self.online.update(features, latency_s, groups)
        self.n_samples_ += len(features)
        return self

    def predict(self, features: Features) -> np.ndarray:
        prior = ranks_01(self.pretrained.predict(features))
        if self.n_samples_ == 0:
            return prior
        w = self.online_weight
        return w * ranks_01(self.online.predict(features)) + (1.0 - w) * prior

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.pretrained.save(path / "pretrained")
        if self.n_samples_:
            self.online.save(path / "online")
        meta = {"model": self.name, "half_samples": self.half_samples, "n_samples": self.n_samples_,
                "pretrained": self.pretrained.name, "online": self.online.name if self.n_samples_ else None,
                "online_model": self.online.name, "online_params": self.online.get_params()}
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
        return model
