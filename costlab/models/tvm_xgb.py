"""TVM's XGBModel recipe, offline: the reference every costlab model is compared with.

In tuning, the experiment runner plugs TVM's own ``XGBModel`` for the name ``tvm-xgb``;
this class reproduces its training recipe on costlab features so that offline
evaluation and the conformance suite cover the same name.

The recipe (``tvm/s_tir/meta_schedule/cost_model/xgb_model.py``):

- label ``y = min latency / latency`` within the workload group; a failure is 0. (TVM
  gives an all-failed group 1, since its failures are all 1e10; costlab gives 0.)
- TVM's pack-sum objective: squared error with gradient ``(pred - y) * y`` and hessian
  ``y``, i.e. ``reg:squarederror`` with sample weight ``y``. Failures weigh 0, so they
  do not train the model at all (known weakness, kept on purpose).
- ``XGBConfig()``: max_depth 10, gamma 0.001, min_child_weight 0, eta 0.2, seed 43;
  up to 10000 rounds, stopped after 50 rounds without a better training RMSE (over all
  samples, failures included).
- adaptive training: ``update`` retrains only once the data grew by 20% since the last
  training.

Differences: TVM sums per-store-row predictions (pack-sum); costlab's ``per_store``
features are one row per candidate, so the sum has a single term. TVM predicts random
scores until it has 100 samples; this class trains from the first sample (the warm-up
is the adapter's business).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features
from costlab.models._base import MODELS
from costlab.models._common import (
    TrainedModel,
    TrainingData,
    check_choice,
    check_number,
    file_in,
    inf_as_missing,
    normalized_throughput,
)

BOOSTER_FILE = "booster.ubj"
TREE_METHODS = ("auto", "exact", "approx", "hist")


@MODELS.register("tvm-xgb")
class TvmXGBModel(TrainedModel):
    """TVM's XGBoost recipe on dense costlab features (default: ``per_store``).

    Parameters (TVM's ``XGBConfig`` defaults):
        max_depth, gamma, min_child_weight, eta, seed, tree_method: XGBoost parameters.
        n_threads: XGBoost threads (None: XGBoost's default, all cores).
        num_boost_round: the most boosting rounds.
        early_stopping_rounds: stop after this many rounds without a better training RMSE.
        adaptive_training: retrain in ``update`` only once the data grew by 20%.
    """

    name = "tvm-xgb"
    default_features = "per_store"
    feature_kinds = ("dense",)
    expected_failed_checks = {
        "check_failures_rank_last": "TVM weighs each sample by its label, so failures (label 0) do not train it",
    }

    def __init__(self, max_depth: int = 10, gamma: float = 0.001, min_child_weight: float = 0.0,
                 eta: float = 0.2, seed: int = 43, tree_method: str = "auto", n_threads: int | None = None,
                 num_boost_round: int = 10000, early_stopping_rounds: int = 50,
                 adaptive_training: bool = True):
        self.max_depth = max_depth
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.eta = eta
        self.seed = seed
        self.tree_method = tree_method
        self.n_threads = n_threads
        self.num_boost_round = num_boost_round
        self.early_stopping_rounds = early_stopping_rounds
        self.adaptive_training = adaptive_training

    def check_params(self) -> None:
        check_number(self.name, "max_depth", self.max_depth, at_least=0, integer=True)  # 0: no limit
        for param in ("gamma", "min_child_weight"):
            check_number(self.name, param, getattr(self, param), at_least=0)
        check_number(self.name, "eta", self.eta, above=0)
        check_choice(self.name, "tree_method", self.tree_method, TREE_METHODS)
        if self.n_threads is not None:
            check_number(self.name, "n_threads", self.n_threads, at_least=1, integer=True)
        for param in ("num_boost_round", "early_stopping_rounds"):
            check_number(self.name, param, getattr(self, param), at_least=1, integer=True)
        if not isinstance(self.adaptive_training, bool):
            raise CostlabError(f"{self.name}: adaptive_training must be true or false (value: {self.adaptive_training!r})")

    def _xgb_params(self) -> dict:
        params = {"max_depth": self.max_depth, "gamma": self.gamma, "min_child_weight": self.min_child_weight,
                  "eta": self.eta, "seed": self.seed, "tree_method": self.tree_method,
                  "objective": "reg:squarederror", "verbosity": 0}
        if self.n_threads is not None:
            params["nthread"] = self.n_threads
        return params

    def _fit(self, data: TrainingData) -> None:
        import xgboost as xgb

        self.check_params()
        y = normalized_throughput(data.latency_s, data.groups)
        self.last_train_size_ = len(data)
        if not (y > 0).any():  # nothing succeeded: every weight is 0, nothing to learn
            self.booster_ = None
            return
        dtrain = xgb.DMatrix(inf_as_missing(data.features.dense), label=y, weight=y)

        def p_rmse(pred: np.ndarray, _d) -> tuple[str, float]:  # over all samples, as TVM's
            return "p-rmse", float(np.sqrt(np.mean(np.square(pred - y))))

        self.booster_ = xgb.train(
            self._xgb_params(), dtrain, num_boost_round=self.num_boost_round, evals=[(dtrain, "tr")],
            custom_metric=p_rmse, verbose_eval=False,
            callbacks=[xgb.callback.EarlyStopping(rounds=self.early_stopping_rounds, metric_name="p-rmse",
                                                  data_name="tr")],
        )

    def _update(self, data: TrainingData, new: TrainingData) -> None:
        if self.adaptive_training and len(data) - self.last_train_size_ < self.last_train_size_ / 5:
            return
        self._fit(data)

    def _predict(self, features: Features) -> np.ndarray:
        if self.booster_ is None:
            return np.zeros(len(features))
        return self.booster_.inplace_predict(inf_as_missing(features.dense))

    def _save_state(self, path: Path) -> dict:
        if self.booster_ is not None:
            self.booster_.save_model(str(path / BOOSTER_FILE))
        return {"booster": None if self.booster_ is None else BOOSTER_FILE, "last_train_size": self.last_train_size_}

    def _load_state(self, path: Path, state: dict) -> None:
        import xgboost as xgb

        self.last_train_size_ = int(state["last_train_size"])
        self.booster_ = None
        if state["booster"] is not None:
            self.booster_ = xgb.Booster(model_file=str(file_in(path, state["booster"], "booster")))
