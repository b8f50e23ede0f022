"""An example costlab plug-in: ridge regression on dense features, written against the bare contract.

It uses only costlab's public pieces (CostModel, check_schema, Features, concat_features),
not the private template of the builtin models, to show what the contract asks for.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features import Features, FeatureSchema, concat_features
from costlab.models import FAILED_LATENCY_S, CostModel, check_schema

__all__ = ["ExampleLinearModel"]


class ExampleLinearModel(CostModel):
    """Ridge regression of the normalized throughput (min latency / latency per group, failures 0).

    Parameters:
        alpha: the L2 penalty on standardized features.
    """

    name = "example-linear"
    default_features = "per_store"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def check_params(self) -> None:
        """Called when a config naming this model loads, before any tuning."""
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or self.alpha < 0:
            raise CostlabError(f"{self.name}: alpha must be a number >= 0 (value: {self.alpha!r})")

    # -- training -------------------------------------------------------------------------
    @staticmethod
    def _target(latency_s: np.ndarray, groups: np.ndarray) -> np.ndarray:
        lat = np.asarray(latency_s, dtype=np.float64)
        ok = np.isfinite(lat) & (lat > 0) & (lat < FAILED_LATENCY_S)
        y = np.zeros(lat.size)
        for g in np.unique(groups):
            m = (groups == g) & ok
            if m.any():
                y[m] = lat[m].min() / lat[m]
        return y

    def fit(self, features: Features, latency_s, groups) -> "ExampleLinearModel":
        if features.kind != "dense":
            raise CostlabError(f"{self.name} needs dense features, got {features.kind!r}")
        self.check_params()
        if len(features) == 0:
            raise CostlabError(f"{self.name}: fit needs at least one sample")
        self.schema_ = features.schema
        self.features_ = features
        self.latency_s_ = np.asarray(latency_s, dtype=np.float64)
        self.groups_ = np.asarray([str(g) for g in groups])
        x = features.dense.astype(np.float64)
        self.mean_, std = x.mean(axis=0), x.std(axis=0)
        self.scale_ = np.where(std > 1e-12, std, 1.0)
        z = (x - self.mean_) / self.scale_
        y = self._target(self.latency_s_, self.groups_)
        # least squares: with alpha 0 and fewer samples than features the system is singular
        self.coef_ = np.linalg.lstsq(z.T @ z + self.alpha * np.eye(z.shape[1]), z.T @ (y - y.mean()), rcond=None)[0]
        self.intercept_ = float(y.mean())
        return self

    def update(self, features: Features, latency_s, groups) -> "ExampleLinearModel":
        """Keep everything seen and refit on it (the default strategy)."""
        if not hasattr(self, "coef_"):
            return self.fit(features, latency_s, groups)
        check_schema(self.schema_, features.schema, "<example-linear model>")
        return self.fit(concat_features([self.features_, features]),
                        np.concatenate([self.latency_s_, np.asarray(latency_s, dtype=np.float64)]),
                        np.concatenate([self.groups_, np.asarray([str(g) for g in groups])]))

    def predict(self, features: Features) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise CostlabError(f"{self.name} is not fitted")
        check_schema(self.schema_, features.schema, getattr(self, "path_", "<example-linear model>"))
        z = (features.dense.astype(np.float64) - self.mean_) / self.scale_
        return np.nan_to_num(z @ self.coef_ + self.intercept_, nan=-1e30, posinf=1e30, neginf=-1e30)

    # -- files: JSON for the parameters, .npz (no pickle) for the training data -------------
    def save(self, path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {"model": self.name, "params": self.get_params(), "features": self.schema_.to_dict(),
                 "mean": self.mean_.tolist(), "scale": self.scale_.tolist(), "coef": self.coef_.tolist(),
                 "intercept": self.intercept_}
        (path / "model.json").write_text(json.dumps(state))
        np.savez(path / "data.npz", dense=self.features_.dense, latency_s=self.latency_s_, groups=self.groups_)

    @classmethod
    def load(cls, path) -> "ExampleLinearModel":
        path = Path(path)
        state = json.loads((path / "model.json").read_text())
        if state.get("model") != cls.name:
            raise CostlabError(f"{path}: not an {cls.name} model")
        model = cls(**state["params"])
        model.schema_ = FeatureSchema.from_dict(state["features"])
        model.mean_, model.scale_ = np.asarray(state["mean"]), np.asarray(state["scale"])
        model.coef_, model.intercept_ = np.asarray(state["coef"]), float(state["intercept"])
        with np.load(path / "data.npz", allow_pickle=False) as z:
            model.features_ = Features(model.schema_, dense=z["dense"])
            model.latency_s_, model.groups_ = z["latency_s"], z["groups"]
        model.path_ = str(path)
        return model
